"""Renumber a branch's colliding IDs with every reference (the heart of ``kb sync``).

Given the collisions of :mod:`kb.merge.collide`, :func:`plan` picks new IDs
above everything either side holds (hypotheses at the same level under the
same parent, descendants following their renamed ancestor; experiments
``E<max+1>``; cards the next number of their prefix), and :func:`rewrite`
applies the map to every KB file the branch added or changed since the
merge-base — headings, Parent/Children/Evidence, experiment titles and
``**Hypothesis**`` lines, ``依赖``/``被依赖``, entry references, prose: the lines the
branch wrote (:func:`rewrite_added`) — and renames files named by an ID
(``experiments/E002.md``, ``Problems/q3.md``, ``Progress/q3/…``). Files and lines the
branch did not write cannot refer to an ID it created, and are left alone.

A renumbered card's verification records (``<records>/r-q3-s1_<time>.json``)
follow it: the record ID in the file name and in the fields naming the target
(``"r"``, Vibe Math's ``{"rId": …}``) is renumbered — :func:`rename_record`,
:func:`rewrite_record` — and references to a record in prose
(``r-q3-s1_<time>.json``) with it. Votes, reasons and the transcript stay as the
verifiers wrote them. The history rules accept exactly this rewrite under the
commit's ``Kb-Renumber:`` trailers (KB310, :func:`renamed_record`).

An entry number two branches both added to one card (:mod:`kb.merge.entry_collide`) is
renumbered as ``q2#解法1 -> q2#解法3`` (:func:`plan_entries`): its heading in its card
(:func:`renumber_headings`), every way prose names it (``q2#解法1``, ``q2#s1``,
``r-q2-s1``) and its records' names and target fields, under the same trailers.

The exploration graph's log follows too: in a log file the branch added
(``.explore-tree/ops/…/<batch>.jsonl``, none the upstream holds) each node's
``refs`` (an ``add``'s ``node.refs``, a ``set``'s ``fields.refs``) are renumbered —
:func:`rewrite_trail_log`; the lines name their operations as before (same ids,
clocks, times), and titles, summaries and digests stay as written, as a record's
reasons do. TRAIL.md is the log's render, not prose: it is left to the render
(the refs it does not show; the merge's driver renders it again), never rewritten
token by token. A log file the upstream holds too is not the branch's to change:
:func:`refs_left` lists the refs in it that still name a renumbered ID, which sync
reports.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, NamedTuple, Optional, Union

from kb import json_input
from kb.merge.collide import Collision
from kb.numbers import small_int
from kb.research.verdict import ENTRY_SHORT
from kb.trail.files import TRAIL_FILE
from kb.trail.log import OPS_DIR

# (prefix, the trailing digits): the prefix up to the last non-digit, greedy (a lazy
# prefix before `\d+$` was quadratic on a long run of digits that does not end the ID)
_NUM = re.compile(r"^(.*\D|)(\d+)$")


#: An entry in a renumbering (``q2#解法1``, :func:`kb.merge.entry_collide.entry_key`).
ENTRY_KEY = re.compile(r"^(?P<card>[^#\s]+)#(?P<kind>解法|证明|证伪)(?P<n>\d+)$")


@dataclass
class Plan:
    """``ids``: old ID -> new ID (every kind, descendants included; an entry as
    ``q2#解法1 -> q2#解法3``), in the order they were decided; ``kinds``: old ID -> kind
    (``entry`` for an entry); ``entry_paths``: an entry's old key -> the branch's card file
    (KB path) whose heading is renumbered."""

    ids: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    entry_paths: dict[str, str] = field(default_factory=dict)

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
        if mm and mm.group(1) == stem and (n := small_int(mm.group(2))) is not None:
            nums.append(n)
    return f"{prefix}{stem}{max(nums, default=0) + 1}"


def next_experiment(taken: set[str], like: str) -> str:
    """The next free experiment ID: one above every ``E<n>`` of ``taken``, as wide as
    ``like`` (``E0002``: four digits; three at least)."""
    nums = [n for t in taken
            if (m := re.fullmatch(r"E(\d+)", t)) and (n := small_int(m.group(1))) is not None]
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
            nums = [n for t in taken["card"] if (mm := _NUM.match(t)) and mm.group(1) == m.group(1)
                    and (n := small_int(mm.group(2))) is not None]
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


def plan_entries(p: Plan, moves: list[Any]) -> Plan:
    """Add to ``p`` the new numbers of the branch's added entries
    (:class:`kb.merge.entry_collide.EntryMoves`): one after another above every number
    that stays, in the branch's order (``解法 2, 3`` with the target's ``解法 2`` become
    ``解法 3, 4``). A new number may be another entry's old one: every renumbering of a
    plan is applied at once (one pass of a regex, one map)."""
    for m in moves:
        start = max(m.kept, default=0) + 1
        for i, n in enumerate(m.numbers):
            if start + i == n:
                continue
            old = f"{m.card}#{m.kind}{n}"
            p.ids[old] = f"{m.card}#{m.kind}{start + i}"
            p.kinds[old] = "entry"
            p.entry_paths[old] = m.path
    return p


def entry_renames(ids: Mapping[str, str]) -> dict[tuple[str, str, int], int]:
    """(card, kind, old number) -> new number of the entries among ``ids`` (a plan's, or
    the ``Kb-Renumber:`` trailers' old -> new)."""
    out = {}
    for a, b in ids.items():
        ma, mb = ENTRY_KEY.match(a), ENTRY_KEY.match(b)
        if ma and mb and ma.group("card", "kind") == mb.group("card", "kind"):
            na, nb = small_int(ma.group("n")), small_int(mb.group("n"))
            if na is not None and nb is not None:
                out[(ma.group("card"), ma.group("kind"), na)] = nb
    return out


def _entry_tokens(ids: Mapping[str, str]) -> dict[str, str]:
    """Each way an entry of ``ids`` is named -> the same name renumbered: its target
    (``q2#解法1``), its short target (``q2#s1``) and its record ID (``r-q2-s1``)."""
    out = {}
    for (card, kind, n), m in entry_renames(ids).items():
        short = ENTRY_SHORT[kind]
        out[f"{card}#{kind}{n}"] = f"{card}#{kind}{m}"
        out[f"{card}#{short}{n}"] = f"{card}#{short}{m}"
        out[f"r-{card}-{short}{n}"] = f"r-{card}-{short}{m}"
    return out


def _token_pattern(tokens: Mapping[str, str]) -> "re.Pattern[str]":
    """Any of ``tokens`` as a whole token (also before a record file's ``_<time>``)."""
    alts = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
    return re.compile(rf"(?<![\w.-])(?:{alts})(?=_|(?![\w-]|\.\d))")


_ENTRY_HEAD = re.compile(r"^(?P<head>###[ \t]+(?P<kind>解法|证明|证伪)[ \t]*)(?P<n>\d+)")


def renumber_headings(text: str, card: str, ids: Mapping[str, str]) -> str:
    """Card ``card``'s text with the headings of its renumbered entries (``### 解法 1｜…``
    -> ``### 解法 3｜…``) renumbered; lines in code are left, as the card parser reads them."""
    from kb.parse.card import entry_heading
    from kb.text import compute_mask

    renames = {(k, n): m for (c, k, n), m in entry_renames(ids).items() if c == card}
    if not renames or "###" not in text:
        return text
    lines = text.split("\n")
    mask = compute_mask([ln.rstrip("\r") for ln in lines])
    for i, ln in enumerate(lines):
        # the entries the card parser reads (a malformed heading, KB122, is none)
        got = entry_heading(ln.rstrip("\r")) if ln.startswith("###") and not mask[i] else None
        new = renames.get(got) if got is not None else None
        m = _ENTRY_HEAD.match(ln) if new is not None else None
        if m is not None:
            lines[i] = m.group("head") + str(new) + ln[m.end():]
    return "\n".join(lines)


def id_pattern(ids: list[str]) -> "re.Pattern[str]":
    """One regex matching any of ``ids`` as a whole token (``H7`` never inside
    ``H7.1``, ``H17`` or ``xH7``)."""
    alts = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    return re.compile(rf"(?<![\w.-])(?:{alts})(?![\w-]|\.\d)")


def rewrite_text(text: str, p: Plan) -> str:
    """``text`` with every token of ``p.ids`` replaced by its new ID, and every record
    ID of a renumbered card (``r-q3-s1``, also in a record's file name) with it; a
    renumbered entry is followed as its target, short target and record ID
    (``q2#解法1``, ``q2#s1``, ``r-q2-s1``)."""
    return rewriter(p)(text)


def rewriter(p: Plan) -> Callable[[str], str]:
    """:func:`rewrite_text` for plan ``p`` as one function (its patterns built once: a
    file is rewritten line by line, :func:`rewrite_added`)."""
    if not p.ids:
        return lambda text: text
    subs: list[Callable[[str], str]] = []
    plain = {a: b for a, b in p.ids.items() if not ENTRY_KEY.match(a)}
    if plain:
        pat = id_pattern(list(plain))
        subs.append(lambda t: pat.sub(lambda m: plain[m.group(0)], t))
    tokens = _entry_tokens(p.ids)
    if tokens:
        tok = _token_pattern(tokens)
        subs.append(lambda t: tok.sub(lambda m: tokens[m.group(0)], t))
    cards = _card_ids(p)
    if cards:
        rid = rid_pattern(list(cards))
        subs.append(lambda t: rid.sub(lambda m: f"r-{cards[m.group('id')]}{m.group('rest')}", t))

    def run(text: str) -> str:
        for sub in subs:
            text = sub(text)
        return text

    return run


def rewrite_added(text: str, before: Optional[str], p: Plan) -> str:
    """``text`` with :func:`rewrite_text` applied to the lines the branch wrote: those not
    in ``before`` (the file at the merge base; None: the branch added the file), each
    line of ``before`` sparing one equal line. A line the branch did not write stays as it
    was: one naming ``q1#解法1`` before either side added an entry 1 meant neither
    side's, and a hypothesis's statement is the history rules' to keep (KB302)."""
    run = rewriter(p)
    if before is None:
        return run(text)
    from collections import Counter

    spare = Counter(before.split("\n"))
    out = []
    for line in text.split("\n"):
        if spare[line] > 0:
            spare[line] -= 1
            out.append(line)
        else:
            out.append(run(line))
    return "\n".join(out)


def _card_ids(p: Union[Plan, Mapping[str, str]]) -> dict[str, str]:
    """old -> new of the renumbered IDs that can own verification records (not
    hypotheses or experiments; a bare map, as the history rules read the trailers,
    is taken whole: its record IDs name cards anyway)."""
    if isinstance(p, Plan):
        return {a: b for a, b in p.ids.items()
                if p.kinds.get(a) not in ("hypothesis", "experiment", "entry")}
    return {a: b for a, b in p.items() if not ENTRY_KEY.match(a)}


def _record_ids(p: Plan) -> dict[str, str]:
    """old -> new of the renumbered IDs a record may follow: cards' and entries'."""
    return {a: b for a, b in p.ids.items() if p.kinds.get(a) not in ("hypothesis", "experiment")}


def rid_pattern(ids: list[str]) -> "re.Pattern[str]":
    """One regex matching a record ID of any of ``ids`` as a whole token (``r-q3``,
    ``r-q3-s1``, ``r-p2-pf1``, ``r-p2-rf1``, also before a record file's ``_<time>``):
    group ``id`` the object's ID, ``rest`` the entry suffix (may be empty)."""
    alts = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    return re.compile(rf"(?<![\w.-])r-(?P<id>{alts})(?P<rest>(?:-(?:s|pf|rf)\d+)?)"
                      rf"(?=_|(?![\w-]|\.\d))")


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


#: The fields of a verification record that name its target (kb writes ``r``; Vibe
#: Math writes ``r`` as ``{"rId": …}``; ``target`` and ``id`` if a writer adds them).
_TARGET_FIELDS = ("r", "target", "id")


def _ids(p: Union[Plan, Mapping[str, str]]) -> Mapping[str, str]:
    return p.ids if isinstance(p, Plan) else p


def _renamed_value(value: Any, cards: Mapping[str, str], entries: Mapping[str, str]) -> Any:
    """A target-naming value with a renumbered card's ID replaced: a record ID
    (``r-q3-s1``), the bare ID (``q3``) or a target (``q3#解法1``); a renumbered entry's
    target or record ID (``entries``: :func:`_entry_tokens`) whole; in a mapping (Vibe
    Math's ``{"rId": …}``), each such value. Anything else as it was."""
    if isinstance(value, dict):
        return {k: _renamed_value(v, cards, entries) if isinstance(v, str) else v
                for k, v in value.items()}
    if not isinstance(value, str):
        return value
    if value in entries:
        return entries[value]
    m = rid_pattern(list(cards)).fullmatch(value) if cards else None
    if m:
        return f"r-{cards[m.group('id')]}{m.group('rest')}"
    head, hash_, tail = value.partition("#")
    return cards[head] + hash_ + tail if head in cards else value


def _renamed_name(name: str, p: Union[Plan, Mapping[str, str]]) -> Optional[tuple[str, str]]:
    """(the record file name ``name`` with its record ID renumbered, the old ID it follows:
    a card's, or an entry's ``q2#解法1``); None when its record ID is not renumbered."""
    cards = _card_ids(p)
    m = rid_pattern(list(cards)).match(name) if cards else None
    if m is not None:
        return f"r-{cards[m.group('id')]}{m.group('rest')}{name[m.end():]}", m.group("id")
    rids = {a: b for a, b in _entry_tokens(_ids(p)).items() if a.startswith("r-")}
    m = _token_pattern(rids).match(name) if rids else None
    if m is None:
        return None
    return rids[m.group(0)] + name[m.end():], _entry_of(m.group(0))


def _entry_of(token: str) -> str:
    """The entry key (``q2#解法1``) an :func:`_entry_tokens` name stands for
    (``q2#解法1``, ``q2#s1``, ``r-q2-s1``)."""
    if token.startswith("r-") and "#" not in token:
        card, _dash, kind_n = token[2:].rpartition("-")
    else:
        card, _hash, kind_n = token.partition("#")
    short = kind_n.rstrip("0123456789")
    kind = next((k for k, v in ENTRY_SHORT.items() if v == short), short)
    return f"{card}#{kind}{kind_n[len(short):]}"


def rename_record(rel: str, p: Union[Plan, Mapping[str, str]]) -> str:
    """A record's KB path with its file name's record ID renumbered
    (``…/r-q3-s1_20270115T080000-2.json`` -> ``…/r-q9-s1_20270115T080000-2.json``; an
    entry's: ``r-q2-s1_…`` -> ``r-q2-s3_…``); ``rel`` itself when the name holds no
    renumbered card's or entry's record ID."""
    folder, slash, name = rel.rpartition("/")
    renamed = _renamed_name(name, p)
    return rel if renamed is None else f"{folder}{slash}{renamed[0]}"


def rewrite_record(data: bytes, p: Union[Plan, Mapping[str, str]]) -> bytes:
    """A record's bytes with the fields naming its target (:data:`_TARGET_FIELDS`)
    renumbered; written as ``kb verdict`` writes a record (indented JSON, UTF-8, a final
    newline). ``data`` itself when no field names a renumbered card or entry, or when it
    is not a JSON object (kb reads no such record: nothing in it to follow)."""
    cards, entries = _card_ids(p), _entry_tokens(_ids(p))
    try:
        obj = json_input.loads(data.decode("utf-8")) if cards or entries else None
    except (UnicodeDecodeError, ValueError):
        return data
    if not isinstance(obj, dict):
        return data
    changed = False
    for key in _TARGET_FIELDS:
        if key in obj:
            new = _renamed_value(obj[key], cards, entries)
            changed = changed or new != obj[key]
            obj[key] = new
    if not changed:
        return data
    return (json.dumps(obj, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


class MovedRecord(NamedTuple):
    """What the renumbering makes of one record: its new KB path and bytes, and the
    old ID of the card (or entry: ``q2#解法1``) it follows."""

    path: str
    data: bytes
    owner: str


def renamed_record(rel: str, data: bytes, renames: Mapping[str, str]) -> Optional[MovedRecord]:
    """What ``kb sync``'s renumbering under ``renames`` (old ID -> new ID, the
    ``Kb-Renumber:`` trailers) makes of the record ``rel`` holding ``data``; None when
    it leaves the record as it is. What KB310 accepts in its place."""
    new_rel, new_data = rename_record(rel, renames), rewrite_record(data, renames)
    if (new_rel, new_data) == (rel, data):
        return None
    renamed = _renamed_name(rel.rpartition("/")[2], renames)
    if renamed is not None:
        return MovedRecord(new_rel, new_data, renamed[1])
    cards = _card_ids(renames)
    text = data.decode("utf-8", "replace")
    owner = next((a for a in sorted(cards, key=len, reverse=True) if rid_pattern([a]).search(text)), "")
    if not owner:  # a record named otherwise, whose target is a renumbered entry
        m = _token_pattern(_entry_tokens(renames)).search(text) if entry_renames(renames) else None
        owner = _entry_of(m.group(0)) if m else ""
    return MovedRecord(new_rel, new_data, owner)


def is_trail_log(rel: str) -> bool:
    """Whether a KB-relative path is a file of the exploration graph's log
    (``.explore-tree/ops/<month>/<batch>.jsonl``)."""
    return rel.startswith(OPS_DIR + "/") and rel.endswith(".jsonl") and rel.count("/") == 3


def _op_refs(op: Any) -> Optional[list[Any]]:
    """The ``refs`` list an operation writes (``add``: ``node.refs``; ``set``:
    ``fields.refs``), or None."""
    if not isinstance(op, dict) or op.get("op") not in ("add", "set"):
        return None
    holder = op.get("node" if op["op"] == "add" else "fields")
    refs = holder.get("refs") if isinstance(holder, dict) else None
    return refs if isinstance(refs, list) else None


def _log_lines(data: bytes) -> list[tuple[bytes, Any]]:
    """A log file's lines (without their newline) with the parsed operation, or None
    for a line that is not one (kept byte for byte)."""
    out = []
    for raw in data.split(b"\n"):
        try:
            op = json.loads(raw) if raw.strip() else None
        except (ValueError, RecursionError):
            op = None
        out.append((raw, op))
    return out


def rewrite_trail_log(data: bytes, p: Plan) -> bytes:
    """A log file's bytes with each node's ``refs`` renumbered (every string of an
    ``add``'s ``node.refs`` and a ``set``'s ``fields.refs``, as :func:`rewrite_text`
    does prose: ``H1``, ``experiments/E002.md``, a record's name). An operation
    changed is written again as :func:`kb.trail.log.encode_batch` writes one (sorted
    keys, compact, UTF-8); every other line, and ``data`` when no ref changes, as it
    was."""
    if not p.ids:
        return data
    lines = _log_lines(data)
    changed = False
    out = []
    for raw, op in lines:
        refs = _op_refs(op)
        new = [rewrite_text(r, p) if isinstance(r, str) else r for r in refs] if refs else refs
        if new == refs:
            out.append(raw)
            continue
        (op["node"] if op["op"] == "add" else op["fields"])["refs"] = new
        out.append(json.dumps(op, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
                   .encode("utf-8"))
        changed = True
    return b"\n".join(out) if changed else data


class TrailRef(NamedTuple):
    """A node's refs naming a renumbered ID, as an operation of a log file the upstream
    holds too wrote them: the node, the log file, the ref as written, the old ID it
    names and the branch's object's new ID."""

    node: str
    path: str
    ref: str
    old: str
    new: str


def refs_left(logs: Mapping[str, bytes], shared: set[str], p: Plan) -> list[TrailRef]:
    """The refs to a renumbered ID that the renumbering leaves in place: ``logs`` are the
    log files the branch added (KB path -> bytes), ``shared`` those of them the upstream
    holds too (their bytes are not the branch's to change). For each node, the last
    operation of ``logs`` writing its refs (replay order: ``lc``, then the operation id)
    counts: a ref of it in a shared file naming a renumbered ID (a whole token, as
    :func:`rewrite_text` finds it) is one entry; a later ref the branch wrote itself
    (renumbered with the branch's file) replaces it."""
    if not p.ids:
        return []
    last: dict[str, tuple[tuple[int, str], str, list[Any]]] = {}
    for rel in sorted(logs):
        for _raw, op in _log_lines(logs[rel]):
            refs = _op_refs(op)
            if refs is None:
                continue
            nid = op["node"].get("id") if op["op"] == "add" else op.get("node")
            if not isinstance(nid, str):
                continue
            order = (op["lc"] if isinstance(op.get("lc"), int) else 0, str(op.get("id")))
            if nid not in last or last[nid][0] <= order:
                last[nid] = (order, rel, refs)
    pat = id_pattern(list(p.ids))
    out: list[TrailRef] = []
    for nid, (_order, rel, refs) in sorted(last.items()):
        if rel not in shared:
            continue
        for r in refs:
            m = pat.search(r) if isinstance(r, str) else None
            if m:
                out.append(TrailRef(nid, rel, r, m.group(0), p.ids[m.group(0)]))
    return out


def rewrite(paths: list[str], read: Callable[[str], Optional[bytes]], p: Plan,
            records: Optional[str] = None,
            before: Optional[Callable[[str], Optional[bytes]]] = None) -> dict[str, Optional[bytes]]:
    """New contents for the KB-relative ``paths`` (the branch's added/changed
    files): path -> bytes, and ``None`` for an old path that was renamed away.
    ``records`` is the verification records' folder (``Logs/Verification/``): its
    ``.json`` files follow their card or entry (:func:`renamed_record`); a renumbered
    entry's card has its heading renumbered (:func:`renumber_headings`); the exploration
    graph's log files have their refs renumbered (:func:`rewrite_trail_log`);
    TRAIL.md, its render, is left alone. Non-UTF-8 files are left as they are.
    ``before`` reads a file at the merge base: in a Markdown file the branch changed only
    the lines it wrote are rewritten (:func:`rewrite_added`)."""
    out: dict[str, Optional[bytes]] = {}
    for rel in paths:
        if rel == TRAIL_FILE:
            continue  # the log's render: the refs it does not show, its titles stay as written
        data = read(rel)
        if data is None:
            continue
        if records and rel.startswith(records) and rel.endswith(".json"):
            moved = renamed_record(rel, data, _record_ids(p))
            if moved is not None:
                _put(out, rel, moved.path, moved.data)
            continue
        if is_trail_log(rel):
            new = rewrite_trail_log(data, p)
            if new != data:
                out[rel] = new
            continue
        if not rel.endswith(".md"):
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        was = before(rel) if before is not None else None
        new_text = rewrite_added(text, was.decode("utf-8", "surrogateescape") if was is not None
                                 else None, p)
        # the renumbered entries' own card: their headings (every card's once: at once)
        for card in dict.fromkeys(k.partition("#")[0] for k, at in p.entry_paths.items() if at == rel):
            new_text = renumber_headings(new_text, card, p.ids)
        _put(out, rel, rename_path(rel, p), new_text.encode("utf-8"), changed=new_text != text)
    return out


def _put(out: dict[str, Optional[bytes]], rel: str, new_rel: str, data: bytes,
         changed: bool = True) -> None:
    """Record ``rel``'s new version at ``new_rel`` (``rel`` removed when renamed)."""
    if new_rel != rel:
        out[rel] = None
        out[new_rel] = data
    elif changed:
        out[rel] = data
