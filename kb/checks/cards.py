"""Card rules (DESIGN.md §4 and the research-cards issue): problem, proposition,
method and Verified cards.

Per card file (:class:`kb.checks.facts.FileFacts`): KB209 the ``- ID:`` anchor
equals the file name, KB218 probabilities in [0, 1], KB220 the anchors of the card's
state (状态; 概率, 结论) and a title are there, KB223 each entry has a title, KB260 (error) an unsafe ID
anywhere in a card — the object's own ID (its file name), the ``- ID:`` anchor,
the IDs of the list anchors (依赖, 被依赖, 可信断言, 上级体系, 子方法, 相关) and
of 来源问题 / 来源方向 / 判断命题 / 来源命题 (and a Verified card's 来源).
Unsafe: a path separator (``/`` or ``\\``), ``..``, or a control character
(VIBEMATH-V3.md "Safe IDs"; kb refuses such IDs instead of rewriting them).

Across cards (:class:`kb.checks.facts.Facts`): KB215 method hierarchy (上级体系
⇄ 子方法), KB216 被依赖 is the reverse of 依赖, KB217 and KB221 Verified cards. Card
references to missing IDs (KB212, KB214) and dependency cycles (KB213) are in
:mod:`kb.checks.id_rules`.

Rules are plain functions returning :class:`kb.model.Diagnostic` values.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from kb.checks.diagnostics import diag
from kb.checks.facts import FileFacts, Facts, Obj
from kb.checks.id_rules import anchor_line
from kb.checks.registry import file_rule, snapshot_rule
from kb.research import dependencies
from kb.chars import hidden_char
from kb.text import control_char, visible

_CARDS = ("problem", "proposition", "method", "verified")
#: list anchor -> field of the object.
_LISTS = {"依赖": "depends", "被依赖": "depended_by", "可信断言": "claims", "上级体系": "parents",
          "子方法": "submethods", "相关": "related"}
_SINGLE = ("ID", "来源问题", "来源方向", "判断命题", "来源命题")


def _diag(path: str, line: int, message: str) -> Any:
    from kb.checks.catalogue import BY_CODE
    from kb.model import Diagnostic

    sev = BY_CODE["KB260"].severity if "KB260" in BY_CODE else "error"
    return Diagnostic(path=path, line=max(line, 0), code="KB260", severity=sev, message=message)


def _show(value: str) -> str:
    return repr(value)


@file_rule("KB260")
def unsafe_ids(f: Any) -> list:
    """KB260: no path separator, ``..`` or control character in any card ID."""
    from kb.text import unsafe_id_reason

    out = []
    for o in f.objects:
        kind = getattr(o, "kind", None)
        if kind not in _CARDS:
            continue
        path = o.path
        lines = getattr(o, "anchor_lines", None) or {}
        anchors = getattr(o, "anchors", None) or {}
        line0 = getattr(o, "line", 0) or 0
        why = unsafe_id_reason(o.id)
        if why:
            out.append(_diag(path, line0, f"the ID {_show(o.id)} (the file name) {why}; rename the "
                                          "file to a safe ID (letters, digits, CJK, '-', '_')"))
        singles = list(_SINGLE) + (["来源"] if kind == "verified" else [])
        for key in singles:
            v = anchors.get(key)
            if v is None or not v.strip():
                continue
            why = unsafe_id_reason(v.strip())
            if why:
                out.append(_diag(path, lines.get(key, line0),
                                 f"{key} {_show(v.strip())} of {o.id} {why}; write a safe ID"))
        for key, fld in _LISTS.items():
            for item in getattr(o, fld, None) or ():
                if not isinstance(item, str):
                    continue
                why = unsafe_id_reason(item)
                if why:
                    out.append(_diag(path, lines.get(key, line0),
                                     f"{key} of {o.id} names {_show(item)}, which {why}; write a "
                                     "safe ID"))
    return out


@file_rule("KB209", "KB218")
def card_rules(f: FileFacts) -> list:
    """KB209: a card's ``- ID:`` equals its file name; KB218: probabilities in [0,1]."""
    out = []
    for o in f.objects:
        if o.kind not in ("problem", "proposition", "method", "verified"):
            continue
        lines = o.anchor_lines or {}
        anchor_id = (o.anchors or {}).get("ID")
        if anchor_id is not None and anchor_id.strip() and anchor_id.strip() != o.id:
            out.append(diag(o.path, lines.get("ID", o.line), "KB209",
                            f"'- ID: {anchor_id.strip()}' disagrees with the file name: the ID of "
                            f"{PurePosixPath(o.path).name} is {o.id}"))
        for key, attr in (("概率", "probability"), ("价值/关键性", "value")):
            x = o.get(attr)
            if isinstance(x, (int, float)) and not 0 <= x <= 1:
                out.append(diag(o.path, lines.get(key, o.line), "KB218",
                                f"{key} of {o.id} is {x}, outside [0,1] (kb never clamps it)"))
        for e in o.entries or []:
            x = e.probability
            if isinstance(x, (int, float)) and not 0 <= x <= 1:
                out.append(diag(o.path, e.line, "KB218",
                                f"entry probability {x} is outside [0,1] (kb never clamps it; "
                                "Vibe Math would read it as settled)"))
    return out


#: Per card format: the header anchors that hold its state, as (anchor, the field kb
#: reads from it, also the frontmatter key that may give it: DESIGN.md §2.5).
#: VIBEMATH-V3.md lists the anchors each card is written with; these are the ones
#: without which kb has no state for the card. The others are redundant or have a
#: value when absent: ``ID`` is the file name, ``类型`` the folder's (a method's is 方法
#: by default), ``优先级`` 1, ``依赖``/``被依赖`` [], ``价值/关键性`` 0.5; no rule reads
#: ``来源``, ``计划``, ``分类`` or ``时间`` as the card's state.
_STATE_ANCHORS = {
    "problem": (("状态", "status"),),
    "proposition": (("状态", "status"), ("概率", "probability")),
    "method": (("状态", "status"),),
    "verified": (("结论", "conclusion"), ("概率", "probability")),
}


@file_rule("KB220")
def missing_state(f: FileFacts) -> list:
    """KB220: a card has the header anchors of its state (:data:`_STATE_ANCHORS`) and a
    title (its ``- 标题:`` or its H1's); reported at the card's H1 line. A card holding
    only its H1, or no anchor at all, was indexed with an empty status and no word.
    An anchor that is there with an empty or unknown value is not this rule's (KB205,
    KB124 judge values)."""
    out = []
    for o in f.objects:
        keys = _STATE_ANCHORS.get(o.kind)
        if keys is None or "\r" in (o.title or ""):
            continue  # (a CR in the title: the file was read as one line, KB100 says why)
        anchors, fm = o.anchors or {}, o.frontmatter or {}
        missing = [(key, what) for key, what in keys if key not in anchors and what not in fm]
        # a title of characters that show nothing (U+200B) is none (kb.text.visible)
        untitled = not visible(o.title or "") and "title" not in fm
        if not missing and not untitled:
            continue
        parts = []
        if missing:
            lines = " or ".join(f"'- {key}:'" for key, _ in missing)
            parts.append(f"no {lines} line in its header (kb reads no "
                         f"{' and no '.join(what for _, what in missing)})")
        if untitled:
            parts.append("no title (neither '- 标题:' nor the H1 gives one)")
        out.append(diag(o.path, o.line, "KB220",
                        f"{o.kind} card {o.id} has {' and '.join(parts)}; write the header "
                        "anchors under the H1, as VIBEMATH-V3.md lists them"))
    return out


@file_rule("KB223")
def untitled_entries(f: FileFacts) -> list:
    """KB223: a card's entry heading gives its entry a title (``### 解法 1｜<title>｜…``): text
    with a character that shows (:func:`kb.text.visible`) and no control or bidirectional
    character (:func:`kb.text.control_char`), as ``kb entry add`` requires.
    Typed by hand, ``### 解法 1｜｜概率0.3｜状态未定论`` was read as an entry nobody can tell
    from another on the dashboard, in ``kb verdict``'s output or a review, and passed."""
    out = []
    for o in f.objects:
        for e in getattr(o, "entries", None) or ():
            bad = control_char(e.title)
            if visible(e.title) and bad is None:
                continue
            if bad is not None:  # a bidirectional override: the title reads as another
                what = f"holds the control or invisible character {bad}"
            else:
                hidden = hidden_char(e.title)
                what = f"shows nothing (it holds only {hidden})" if hidden else "is empty"
            out.append(diag(o.path, e.line, "KB223",
                            f"{o.id}'s entry {e.kind} {e.number}: its title {what}; write one "
                            f"between the first two '｜' ('### {e.kind} {e.number}｜<title>｜…')"))
    return out


@snapshot_rule("KB215", reads="refs")
def method_hierarchy(s: Facts) -> list:
    """KB215: 上级体系 and 子方法 name each other."""
    parents: set[tuple[str, str]] = set()   # (child, parent) from the child's 上级体系
    subs: set[tuple[str, str]] = set()      # (child, parent) from the parent's 子方法
    where: dict[str, str] = {}
    for path, src, dst, kind in s.links():
        if kind == "parent_method":
            parents.add((src, dst))
            where.setdefault(src, path)
        elif kind == "submethod":
            subs.add((dst, src))
            where.setdefault(src, path)
    if not parents and not subs:
        return []
    methods = s.ids("method")
    out = []
    # each direction: the (child, parent) pairs only one side names, the anchor that
    # names them (on the child: 上级体系, on the parent: 子方法) and the other one
    for missing, here, there in ((parents - subs, "上级体系", "子方法"),
                                 (subs - parents, "子方法", "上级体系")):
        for child, parent in sorted(missing):
            holder, named = (child, parent) if here == "上级体系" else (parent, child)
            path = where[holder]
            if named not in methods:
                msg = f"{here} of {holder} names {named}, which is not a method"
            else:
                msg = (f"{holder} names {named} in {here}, but {there} of {named} does not name "
                       f"{holder}; add it there")
            out.append(diag(path, anchor_line(s, path, holder, here), "KB215", msg))
    return out


@snapshot_rule("KB216", reads="fixes")
def depended_by(s: Facts) -> list:
    """KB216: a problem's 被依赖 is the reverse of the problems' 依赖 lists."""
    problems = {r.id: r for r in s.of_kind("problem")}
    if not problems:
        return []
    depends: dict[str, list[str]] = {pid: [] for pid in problems}
    declared: dict[str, set[str]] = {}
    for path, src, dst, kind in s.links():
        if kind == "depends" and src in problems and problems[src].path == path:
            depends[src].append(dst)
        elif kind == "depended_by" and src in problems:
            declared.setdefault(src, set()).add(dst)
    derived = dependencies.reverse_dependencies(depends)
    out = []
    differ = [pid for pid in problems if set(derived[pid]) != declared.get(pid, set())]
    from kb.parse.common import dump_list

    differ.sort(key=dependencies.natural_key)
    lines_of = {pid: anchor_line(s, problems[pid].path, pid, "被依赖") for pid in differ}
    # The fix texts' files in one read (hand-kept KBs carry hundreds of these warnings).
    texts = s.read_many(problems[pid].path for pid in differ
                        if lines_of[pid] and lines_of[pid] != problems[pid].line)
    for pid in differ:
        row = problems[pid]
        want = derived[pid]
        ln = lines_of[pid]
        fix = None
        if ln and ln != row.line:
            data = texts.get(row.path)
            if data is not None:
                lines = data.decode("utf-8", "replace").lstrip("\ufeff").split("\n")
                if ln <= len(lines):
                    old = lines[ln - 1].rstrip("\r")
                    prefix = old.split(":", 1)[0] if ":" in old else old.split("：", 1)[0]
                    fix = (ln, old, f"{prefix}: {dump_list(want)}")
            out.append(diag(row.path, ln, "KB216",
                            f"被依赖 of {pid} should be {dump_list(want)} (the problems whose 依赖 "
                            "names it); kb verify --fix writes it", fix=fix))
        else:
            out.append(diag(row.path, row.line, "KB216",
                            f"{pid} has no 被依赖 line; the problems depending on it are "
                            f"{dump_list(want)}"))
    return out


@snapshot_rule("KB217", "KB221", reads="rows")
def verified_cards(s: Facts) -> list:
    """KB221: every Verified card has its settled object (an error: a card kb did not write,
    immutable once committed, made `kb verdict` refuse the real verdict for good); KB217:
    every settled object its card (a warning: `kb verdict` writes the card when it settles)."""
    vpath = s.config.paths["verified"].strip("/")
    cards: dict[tuple[str, str], Obj] = {}
    for r in s.of_kind("verified"):
        folder = r.path[len(vpath) + 1:].split("/", 1)[0] if r.path.startswith(vpath + "/") else ""
        cards[(folder, r.id)] = r
    settled = {("命题", r.id): r for r in s.of_kind("proposition") if r.status in ("已验证·真", "已验证·假")}
    settled.update({("问题", r.id): r for r in s.of_kind("problem") if r.status == "已解决"})
    if not cards and not settled:
        return []
    objects = {(("命题" if r.kind == "proposition" else "问题"), r.id): r
               for r in s.of_kind("proposition", "problem")}
    out = []
    for key, card in sorted(cards.items()):
        if key in settled:
            continue
        obj = objects.get(key)
        why = "does not exist" if obj is None else f"is not settled (状态 {obj.status})"
        out.append(diag(card.path, card.line, "KB221",
                        f"Verified card {card.id}: its {'proposition' if key[0] == '命题' else 'problem'} "
                        f"{why}; kb writes this card when a verdict settles it (kb verdict) — "
                        f"remove the card (once committed, in a commit with the trailer "
                        f"`Kb-Override: {card.id} <reason>`, and the same text in KB_OVERRIDE "
                        "for the hook: files under Verified/ stay as committed, KB304)"))
    for key, obj in sorted(settled.items()):
        if key not in cards:
            out.append(diag(obj.path, obj.line, "KB217",
                            f"{obj.id} is {obj.status} but has no Verified card "
                            f"({s.kb.prefix}{vpath}/{key[0]}/{obj.id}.md)"))
    return out
