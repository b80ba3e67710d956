"""Renumber a branch's colliding IDs with every reference (the heart of ``kb sync``).

Given the collisions of :mod:`kb.merge.collide`, :func:`plan` picks new IDs
above everything either side holds (hypotheses at the same level under the
same parent, descendants following their renamed ancestor; experiments
``E<max+1>``; cards the next number of their prefix), and :func:`rewrite`
applies the map to every KB file the branch added or changed since the
merge-base — headings, Parent/Children/Evidence, experiment titles and
``**Hypothesis**`` lines, ``依赖``/``被依赖``, entry references, prose — and
renames files named by an ID (``experiments/E002.md``, ``Problems/q3.md``,
``Progress/q3/…``). Files the branch did not touch cannot refer to an ID it
created, and are left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Optional

from kb.merge.collide import Collision

_NUM = re.compile(r"^(.*?)(\d+)$")


@dataclass
class Plan:
    """``ids``: old ID -> new ID (every kind, descendants included), in the order
    they were decided; ``kinds``: old ID -> kind."""

    ids: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)

    def trailers(self) -> list[str]:
        """``Kb-Renumber: H7 -> H9`` values (without the key)."""
        return [f"{a} -> {b}" for a, b in self.ids.items()]


def _depth(hid: str) -> int:
    return hid.count(".")


def next_child(parent: Optional[str], taken: set[str], like: str) -> str:
    """The next free hypothesis ID at one level (``H<n>`` or ``<parent>.<n>``): one
    above every ID of ``taken`` at that level with the name of ``like`` (``H`` of
    ``H7``). ``kb sync`` renumbers with it; KB307 suggests it."""
    m = _NUM.match(like.rsplit(".", 1)[-1])
    stem = m.group(1) if m else "H"
    prefix = (parent + ".") if parent else ""
    nums = []
    for t in taken:
        if parent is None and "." in t:
            continue
        if parent is not None and not (t.startswith(prefix) and "." not in t[len(prefix):]):
            continue
        mm = _NUM.match(t[len(prefix):] if parent else t)
        if mm and mm.group(1) == stem:
            nums.append(int(mm.group(2)))
    return f"{prefix}{stem}{max(nums, default=0) + 1}"


def next_experiment(taken: set[str], like: str) -> str:
    """The next free experiment ID: one above every ``E<n>`` of ``taken``, as wide as
    ``like`` (``E0002``: four digits; three at least)."""
    nums = [int(m.group(1)) for t in taken if (m := re.fullmatch(r"E(\d+)", t))]
    width = max(3, len(like) - 1)
    return f"E{max(nums, default=0) + 1:0{width}d}"


def plan(collisions: list[Collision], branch_hyps: list[str], taken: dict[str, set[str]]) -> Plan:
    """Decide new IDs.

    ``branch_hyps``: hypothesis IDs the branch added (descendants of a renamed
    one move with it); ``taken``: kind group (``hypothesis``, ``experiment``,
    ``card``) -> every ID either side holds. New IDs are added to ``taken``.
    """
    p = Plan()
    hyp = sorted((c for c in collisions if c.kind == "hypothesis"), key=lambda c: (_depth(c.id), c.id))
    for c in hyp:
        if c.id in p.ids:
            continue
        parent = c.id.rsplit(".", 1)[0] if "." in c.id else None
        if parent is not None and parent in p.ids:
            continue  # moves with its renamed ancestor below
        new = next_child(parent, taken["hypothesis"], c.id)
        taken["hypothesis"].add(new)
        p.ids[c.id] = new
        p.kinds[c.id] = "hypothesis"
        for d in sorted((h for h in branch_hyps if h.startswith(c.id + ".")), key=_depth):
            nd = new + d[len(c.id):]
            taken["hypothesis"].add(nd)
            p.ids[d] = nd
            p.kinds[d] = "hypothesis"
    for c in sorted((c for c in collisions if c.kind == "experiment"), key=lambda c: c.id):
        new = next_experiment(taken["experiment"], c.id)
        taken["experiment"].add(new)
        p.ids[c.id] = new
        p.kinds[c.id] = "experiment"
    for c in sorted((c for c in collisions if c.kind not in ("hypothesis", "experiment")), key=lambda c: c.id):
        m = _NUM.match(c.id)
        if m:
            nums = [int(mm.group(2)) for t in taken["card"]
                    if (mm := _NUM.match(t)) and mm.group(1) == m.group(1)]
            new = f"{m.group(1)}{max(nums, default=0) + 1}"
        else:
            n = 2
            while f"{c.id}-{n}" in taken["card"]:
                n += 1
            new = f"{c.id}-{n}"
        taken["card"].add(new)
        p.ids[c.id] = new
        p.kinds[c.id] = c.kind
    return p


def id_pattern(ids: list[str]) -> "re.Pattern[str]":
    """One regex matching any of ``ids`` as a whole token (``H7`` never inside
    ``H7.1``, ``H17`` or ``xH7``)."""
    alts = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    return re.compile(rf"(?<![\w.-])(?:{alts})(?![\w-]|\.\d)")


def rewrite_text(text: str, p: Plan) -> str:
    """``text`` with every token of ``p.ids`` replaced by its new ID."""
    if not p.ids:
        return text
    return id_pattern(list(p.ids)).sub(lambda m: p.ids[m.group(0)], text)


def rename_path(rel: str, p: Plan) -> str:
    """A KB-relative path with a component named by a renumbered experiment or
    card (``E002.md``, ``q3.md``, ``q3/``) renamed."""
    parts = rel.split("/")
    out = []
    for i, part in enumerate(parts):
        stem, dot, ext = part.partition(".") if i == len(parts) - 1 else (part, "", "")
        old = stem if dot else part
        if old in p.ids and p.kinds.get(old) != "hypothesis":
            out.append(p.ids[old] + (dot + ext if dot else ""))
        else:
            out.append(part)
    return "/".join(out)


def rewrite(paths: list[str], read: Callable[[str], Optional[bytes]], p: Plan) -> dict[str, Optional[bytes]]:
    """New contents for the KB-relative ``paths`` (the branch's added/changed
    files): path -> bytes, and ``None`` for an old path that was renamed away.
    Non-UTF-8 files are left as they are."""
    out: dict[str, Optional[bytes]] = {}
    for rel in paths:
        data = read(rel)
        if data is None or not rel.endswith(".md"):
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        new_text = rewrite_text(text, p)
        new_rel = rename_path(rel, p)
        if new_rel != rel:
            out[rel] = None
            out[new_rel] = new_text.encode("utf-8")
        elif new_text != text:
            out[rel] = new_text.encode("utf-8")
    return out
