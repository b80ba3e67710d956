"""KB312: an object settles only with the verification record that settles it.

kb's commands settle a problem (已解决) or a proposition (已验证·真 / 已验证·假) only
through a verdict (``kb verdict``), which writes its record under ``Logs/Verification/``,
the write-back and the Verified card in one commit (VIBEMATH-V3.md "Verification"). A
hand edit of the status line with a copied Verified card passed every other rule: KB221
asks only that a Verified card's object be settled, KB306 only that a settled object stay
so. This rule asks, of every object the change moves into a settled state (a card new in
the change counts as moving from nothing) and of every Verified card it adds, for a
record in the new snapshot that settles that object in that direction (a verdict of
exactly 1 or 0, what settles an entry at 概率 1; a split vote never yields one):

- a proposition true: a verdict of 1 on ``r-<pid>`` (bare) or on a proof ``r-<pid>-pfN``,
  or of 0 on a refutation ``r-<pid>-rfN``; false: the mirror image; or a verdict of 1 / 0
  on a solution ``r-<qid>-sN`` of the problem whose ``判断命题`` (else ``来源命题``) is the
  proposition, a solution titled ``【证伪】`` counting the other way (kb's write-back);
- a problem: a verdict of 1 on one of its solutions ``r-<qid>-sN``; or, for a judge problem
  (``判断命题``), a record that settles its proposition, which the new snapshot holds
  settled (the write-back closes a judge problem whichever way its proposition settles).

An entry the change moves to probability 0 or 1, and a proposition's ``概率`` moved there,
is a settlement too (Vibe Math reads any entry at 1 as settling its object; agents never
write 0 or 1): it asks for the record that puts it there as the write-back does
(:func:`_entry_backed`). A record counts only if a verdict could have written it
(:func:`kb.research.record_faults.record_faults`: one vote per verifier, ``[verdict]
min_votes`` of them, a verdict its results give); the error names a record found that is not.

Cost: nothing unless the change settles something, adds a Verified card (the changed
files' light rows say so) or holds an entry at 0 or 1 in a changed card (its row's JSON;
the base's only then). Then only the record files named for an ID of the change's cards
(``r-<id>…``, as kb and Vibe Math name them) are read: for a commit those the change adds
first, and the commit's listing of the records folder (one ``git ls-tree``) only when they
do not settle it; the staged index's listing is the hook's own, the working tree's the
folder on disk. Contents come through the process's one ``git cat-file`` (or the checkout
when it holds that blob), each read as every other reader reads a record
(:func:`kb.research.verdict.read_record`): a malformed record backs nothing (KB243).

A ``Kb-Override: <ID> <reason>`` naming the object accepts it, as the other history rules
(a Vibe Math project imported without its records). The KB's first commit (a base with
no file of the KB) is not judged: it brings what existed before kb, with no history to
hold a verdict (the other history rules have nothing to compare there either).
"""

from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple, Optional

from kb.checks.history_rules import override_hint
from kb.checks.changes import Change, folder_moves, records_prefix, verified_prefix
from kb.checks.record_rules import record_files
from kb.research.record_faults import min_votes_of, record_faults
from kb.checks.registry import history_rule
from kb.checks.unread_records import moved_keys, moved_records

#: The statuses a verdict settles an object in (KB221 and KB306 read the same).
SETTLED = {"problem": ("已解决",), "proposition": ("已验证·真", "已验证·假")}
#: A Verified card's folder (``Verified/<word>/``) -> the kind of object it settles.
_KIND_OF_FOLDER = {"问题": "problem", "命题": "proposition"}
#: A record ID of a solution: ``r-<qid>-s<N>``.
_SOLUTION = re.compile(r"^r-(?P<id>.+)-s(?P<n>\d+)$")


class _Todo(NamedTuple):
    """One settlement a record must back: the object, the direction (真 / 假), and where
    and how the change made it (the diagnostic's location and subject)."""

    id: str
    kind: str
    toward: str
    path: str
    line: int
    how: str
    verified: bool


class _EntryTodo(NamedTuple):
    """One entry (or a proposition's ``概率`` anchor: ``entry`` "") the change moves to
    probability ``value`` 0 or 1, which a record must back: Vibe Math reads any entry at 1
    as settling its object, and a proposition at 0 or 1 as settled."""

    id: str
    kind: str
    entry: str
    number: int
    title: str
    value: int
    path: str
    line: int
    how: str


class _Judge(NamedTuple):
    """What a problem card says of its proposition: ``判断命题`` (a judge problem), the
    proposition its solutions' verdicts write back to, and its solutions' titles."""

    judges: str
    writes_to: str
    titles: dict[int, str]


@history_rule("KB312")
def settled_by_a_record(c: Change) -> list:
    """KB312: an object the change settles (a problem 已解决, a proposition 已验证·真 /
    已验证·假), and the object of a Verified card it adds, is settled in that direction by
    a verification record of the new snapshot (``kb verdict`` writes both in one commit)."""
    if not c.base.files and not moved_keys(c.config, c.new_config):
        return []  # the KB's first commit: what existed before kb (an import), no history
    cards = c.lights(c.new, ("problem", "proposition"))
    added = c.lights(c.new, ("verified",))
    if not cards and not added:
        return []
    todo = _settlements(c, cards) + _verified_cards(c, added)
    entries = _entry_settlements(c, cards)
    if not todo and not entries:
        return []
    judges = _Judges(c, cards)
    ids = {t.id for t in todo} | {n.id for n in cards.values()}
    ids |= {j.judges for t in todo if t.kind == "problem"
            for j in [judges.of(t.id)] if j is not None and j.judges}
    recs = _Records(c, ids)
    out = []
    refused: set[str] = set()
    for t in todo:
        if _backed(c, recs, judges, t.kind, t.id, t.toward):
            continue
        refused.add(t.id)
        out.append(c.violation(t.id, t.path, t.line, "KB312", _message(c, t, judges, recs)))
    for e in entries:
        # an object refused already: its entries and 概率 went with the same hand edit, and
        # one error an object says what to undo (restoring the status restores them too)
        if e.id in refused or _until(recs, lambda: _entry_backed(c, recs, judges, e)):
            continue
        out.append(c.violation(e.id, e.path, e.line, "KB312", _entry_message(c, e, judges, recs)))
    return out


def _settlements(c: Change, cards: dict) -> list[_Todo]:
    """The problems and propositions of the change's files that it moves into a settled
    state (from another status, or from nowhere: a card new in the change)."""
    base = c.lights(c.base, ("problem", "proposition"))
    moved = moved_records(c)  # a [paths] move carries cards the base read elsewhere
    out = []
    for key, n in cards.items():
        if n.status not in SETTLED[n.kind]:
            continue
        b: Any = base.get(key)
        if b is None or b.kind != n.kind:
            b = next(iter(c.base.find(n.id, (n.kind,))), None)  # moved here from an untouched file
        was = b.status if b is not None else None
        if b is None and ("card", n.id) in moved.carried:
            was = moved.was.get(("card", n.id))  # moved with its [paths] folder
        elif b is None:
            was = ""
        if was in SETTLED[n.kind]:
            continue  # settled before (another settled status is KB306's)
        how = f"状态 {was} -> {n.status}" if was else f"added as {n.status}"
        toward = "假" if n.status == "已验证·假" else "真"
        out.append(_Todo(n.id, n.kind, toward, n.path, n.status_line or n.line, how, False))
    return out


def _verified_cards(c: Change, added: dict) -> list[_Todo]:
    """The Verified cards the change adds (an ID no Verified card of the base declares:
    a card moved elsewhere is KB304's), by the folder that names their kind (KB221's)."""
    if not added:
        return []
    base = c.lights(c.base, ("verified",))
    folder = c.new.config.paths["verified"].strip("/")
    # carried unchanged by a [paths] move of the folder (the base, read through the new
    # kb.toml, lists none of them; one changed on the way is KB304's)
    carried = {dest.path for ch, dest in folder_moves(c, verified_prefix).values()
               if dest.new == ch.old}
    out = []
    for key, v in added.items():
        if key in base or v.path in carried or c.base.find(v.id, ("verified",)):
            continue
        rel = v.path if folder in ("", ".") else \
            v.path[len(folder) + 1:] if v.path.startswith(folder + "/") else ""
        kind = _KIND_OF_FOLDER.get(rel.split("/", 1)[0] if "/" in rel else "")
        if kind is None:
            continue  # in no kind's folder: KB221 reports it
        out.append(_Todo(v.id, kind, v.status, v.path, 1, f"Verified card {v.id} was added", True))
    return out


def _entry_settlements(c: Change, cards: dict) -> list[_EntryTodo]:
    """The entries of the change's problems and propositions it moves to probability 0 or
    1 (from another value, or new: the card or the entry), and the propositions whose
    ``概率`` it moves there.

    Cheap: a card's entries are read (its row's JSON) only for the changed card files, and
    the base's only when the new side holds an entry or a ``概率`` at 0 or 1."""
    if not cards:
        return []
    base = c.lights(c.base, ("problem", "proposition"))
    moved = moved_records(c)
    out: list[_EntryTodo] = []
    for key, n in cards.items():
        rec = _full(c.new, n.path, n.id, n.kind)
        if rec is None:
            continue
        hits = [e for e in rec.entries or () if e.probability in (0.0, 1.0)]
        prob = rec.probability if n.kind == "proposition" else None
        anchor = prob in (0.0, 1.0)
        if not hits and not anchor:
            continue
        b: Any = base.get(key)
        if b is None or b.kind != n.kind:
            b = next(iter(c.base.find(n.id, (n.kind,))), None)
        if b is None and ("card", n.id) in moved.carried:
            # carried by a [paths] move, its old version not read here (the history rules
            # read the base with its own kb.toml: kb.checks.judge.history_findings)
            continue
        old = _full(c.base, b.path, n.id, n.kind) if b is not None else None
        had_num = {(e.kind, e.number, e.probability) for e in (old.entries or ())} if old else set()
        had_title = {(e.kind, e.title, e.probability) for e in (old.entries or ())} if old else set()
        for e in hits:
            if (e.kind, e.number, e.probability) in had_num or \
                    (e.kind, e.title, e.probability) in had_title:
                continue  # there before (renumbered: the same title and value)
            was = next((x.probability for x in (old.entries or ()) if x.kind == e.kind
                        and x.number == e.number), None) if old else None
            v = int(e.probability)
            how = (f"{e.kind} {e.number} 概率{_num(was)} -> 概率{v}" if was is not None
                   else f"{e.kind} {e.number} added at 概率{v}")
            out.append(_EntryTodo(n.id, n.kind, e.kind, e.number, e.title, v, n.path,
                                  e.line or n.line, how))
        if anchor and (old is None or old.probability != prob):
            v = int(prob)
            how = (f"概率 {_num(old.probability)} -> {v}" if old is not None and
                   old.probability is not None else f"added at 概率 {v}")
            line = c.new.anchor_line(n.path, n.id, "概率") or n.line
            out.append(_EntryTodo(n.id, n.kind, "", 0, "", v, n.path, line, how))
    return out


def _full(side: Any, path: str, oid: str, kind: str) -> Any:
    """Object ``oid`` of ``kind`` in ``path`` of snapshot ``side`` with its entries (the
    row's JSON, no model built), or None."""
    return next((r for r in side.records(path) if r.id == oid and r.kind == kind), None)


def _num(x: Any) -> str:
    """A probability as the cards write it (``1``, ``0.6``; ``?`` when absent)."""
    if x is None:
        return "?"
    return str(int(x)) if float(x).is_integer() else repr(float(x))


class _Judges:
    """Problem cards of the new side read in full, once each (their anchors and titles)."""

    def __init__(self, c: Change, cards: dict) -> None:
        self.c = c
        self.cards = cards
        self.seen: dict[str, Optional[_Judge]] = {}

    def of(self, qid: str) -> Optional[_Judge]:
        if qid in self.seen:
            return self.seen[qid]
        light = self.cards.get(("card", qid))
        path = light.path if light is not None and light.kind == "problem" else \
            next((o.path for o in self.c.new.find(qid, ("problem",))), None)
        got = None
        if path is not None:
            for r in self.c.new.records(path):
                if r.id == qid and r.kind == "problem":
                    anchors = r.anchors or {}
                    judges = str(anchors.get("判断命题", "")).strip()
                    writes = judges or str(anchors.get("来源命题", "")).strip()
                    titles = {e.number: e.title for e in r.entries or () if e.kind == "解法"}
                    got = _Judge(judges, writes, titles)
                    break
        self.seen[qid] = got
        return got


class _Records:
    """The records of the new side named for ``ids``: record ID -> the verdicts (1 or 0)
    they hold. Read in two steps for a commit (the change's records, then the listing)."""

    def __init__(self, c: Change, ids: set[str]) -> None:
        self.c = c
        self.folder = records_prefix(c.new_config)
        self.ids = ids
        # votes are counted under the rules the change is judged by (the base's kb.toml)
        self.min_votes = min_votes_of(c.config)
        self.by_r: dict[str, set[int]] = {}
        #: record ID -> (path, why) of each record of verdict 0 or 1 that no verdict could
        #: write (:func:`kb.research.record_faults.record_faults`): it backs nothing, and the
        #: diagnostic says why
        self.invalid: dict[str, list[tuple[str, str]]] = {}
        self.done: set[str] = set()
        self.listed = False
        if c.new.snap.kind == "commit":
            self._read({ch.path: ch.new for ch in c.changes
                        if ch.new and not ch.new_link and self._wanted(ch.path)})
        else:
            self.more()

    def _wanted(self, path: str) -> bool:
        if not path.startswith(self.folder) or not path.endswith(".json"):
            return False
        name = path[len(self.folder):]
        if "/" in name or not name.startswith("r-"):
            return False
        return any(name.startswith(f"r-{i}") for i in self.ids)

    def more(self) -> bool:
        """Read the rest of the listing's wanted records; False when it was read already."""
        if self.listed:
            return False
        self.listed = True
        files = record_files(self.c.new)
        self._read({p: b for p, b in files.items() if p not in self.done and self._wanted(p)})
        return True

    def _read(self, files: dict[str, str]) -> None:
        from kb.research.verdict import VerificationRecord, read_record

        self.done |= set(files)
        if not files:
            return
        data = self.c.new.read_listed(files)  # unreadable: backs nothing (KB243 says so)
        for p in sorted(data):
            rec = read_record(p, data[p])
            if not isinstance(rec, VerificationRecord) or rec.verdict not in (0.0, 1.0):
                continue  # malformed, or a split vote: it settles nothing either way
            faults = record_faults(rec, self.min_votes)
            if faults:  # a hand-written record: a verdict it could not have been
                self.invalid.setdefault(rec.r, []).append((p, "; ".join(faults)))
            else:
                self.by_r.setdefault(rec.r, set()).add(int(rec.verdict))


def _until(recs: _Records, holds: Callable[[], bool]) -> bool:
    """Whether ``holds()`` with the records read so far, else with the whole listing: the
    listing is read only when the change's own records do not back it."""
    while True:
        if holds():
            return True
        if not recs.more():
            return False


def _backed(c: Change, recs: _Records, judges: _Judges, kind: str, oid: str, toward: str) -> bool:
    """Whether a record settles ``oid`` toward ``toward``."""
    if kind == "proposition":
        return _until(recs, lambda: toward in _proposition_ways(recs, judges, oid))
    return toward == "真" and _until(recs, lambda: _problem_solved(c, recs, judges, oid))


def _entry_backed(c: Change, recs: _Records, judges: _Judges, e: _EntryTodo) -> bool:
    """Whether the records read so far put entry ``e`` (or the proposition's ``概率``) at
    its value, as kb's write-back does:

    - its own record (``r-<id>-sN`` / ``-pfN`` / ``-rfN``) of that verdict;
    - a proposition's ``概率``, a proof at 1 or a refutation at 1 (the entries a failed
      proof's or a bare verdict's write-back adds): a record that settles the proposition
      that way (:func:`_proposition_ways`);
    - a proposition's entry: a verdict of that value on a solution ``r-<qid>-sN`` of its
      judge problem on that side (the write-back of a promoted problem's verdict);
    - a judge problem's ``【证明】`` / ``【证伪】`` solution: the proposition holds that entry
      at that value (``kb promote`` copied it; its value was judged where it was made)."""
    if e.kind == "proposition":
        if e.entry == "":
            return ("真" if e.value == 1 else "假") in _proposition_ways(recs, judges, e.id)
        suffix = "pf" if e.entry == "证明" else "rf"
        if e.value in recs.by_r.get(f"r-{e.id}-{suffix}{e.number}", ()):
            return True
        if e.value == 1 and ("真" if e.entry == "证明" else "假") in \
                _proposition_ways(recs, judges, e.id):
            return True
        for r, verdicts in recs.by_r.items():
            sol = _SOLUTION.match(r)
            if sol is None or e.value not in verdicts:
                continue
            j = judges.of(sol.group("id"))
            if j is not None and j.writes_to == e.id:
                title = j.titles.get(int(sol.group("n")), "")
                if ("证伪" if title.startswith("【证伪】") else "证明") == e.entry:
                    return True
        return False
    if e.value in recs.by_r.get(f"r-{e.id}-s{e.number}", ()):
        return True
    j = judges.of(e.id)
    m = re.match(r"^【(证明|证伪)】", e.title)
    if j is None or not j.writes_to or m is None:
        return False
    pid, side, title = j.writes_to, m.group(1), e.title[m.end():]
    light = judges.cards.get(("card", pid))
    path = light.path if light is not None and light.kind == "proposition" else \
        next((o.path for o in c.new.find(pid, ("proposition",))), None)
    p = _full(c.new, path, pid, "proposition") if path is not None else None
    return p is not None and any(x.kind == side and x.title == title and x.probability == e.value
                                 for x in p.entries or ())


def _proposition_ways(recs: _Records, judges: _Judges, pid: str) -> set[str]:
    """The directions (真 / 假) the records settle proposition ``pid`` in."""
    out: set[str] = set()
    pf, rf = f"r-{pid}-pf", f"r-{pid}-rf"
    for r, verdicts in recs.by_r.items():
        flip: Optional[bool] = None
        if r != f"r-{pid}" and _own_record(judges, r):
            continue  # e.g. r-x-pf1: the bare verdict on an object named x-pf1, not x's proof
        if r == f"r-{pid}" or (r.startswith(pf) and r[len(pf):].isdigit()):
            flip = False
        elif r.startswith(rf) and r[len(rf):].isdigit():
            flip = True
        else:
            m = _SOLUTION.match(r)
            if m is not None and m.group("id") != pid:
                j = judges.of(m.group("id"))
                if j is not None and j.writes_to == pid:
                    title = j.titles.get(int(m.group("n")), "")
                    flip = title.startswith("【证伪】")
        if flip is None:
            continue
        for v in verdicts:
            out.add("真" if (v == 1) != flip else "假")
    return out


def _own_record(judges: _Judges, r: str) -> bool:
    """Whether record ID ``r`` is the bare verdict of a proposition or problem whose ID is
    ``r`` less ``r-`` (an ID may end in ``-pf1`` or ``-s2``): then it is no entry's record."""
    return bool(judges.c.new.find(r[2:], ("proposition", "problem")))


def _problem_solved(c: Change, recs: _Records, judges: _Judges, qid: str) -> bool:
    """Whether a record solves problem ``qid``: a verdict of 1 on one of its solutions, or
    (a judge problem) one that settles its proposition, settled in the new snapshot."""
    s = f"r-{qid}-s"
    if any(1 in v for r, v in recs.by_r.items() if r.startswith(s) and r[len(s):].isdigit()
           and not _own_record(judges, r)):
        return True
    j = judges.of(qid)
    if j is None or not j.judges:
        return False
    light = judges.cards.get(("card", j.judges))
    status = light.status if light is not None and light.kind == "proposition" else \
        next((o.status for o in c.new.find(j.judges, ("proposition",))), None)
    if status not in SETTLED["proposition"]:
        return False
    return ("假" if status == "已验证·假" else "真") in _proposition_ways(recs, judges, j.judges)


def _message(c: Change, t: _Todo, judges: _Judges, recs: _Records) -> str:
    """KB312's text for settlement ``t``: what would back it, any record found that is not
    valid, and how to settle it."""
    folder = c.kb.prefix + records_prefix(c.new_config)
    if t.kind == "problem":
        need = f"a verdict of 1 on one of its solutions (r-{t.id}-sN)"
        j = judges.of(t.id)
        if j is not None and j.judges:
            need += f", or one that settles the proposition it judges ({j.judges})"
        how = f"`kb verdict {t.id}#解法N --vote V1=R --vote V2=R`"
    else:
        yes, no = ("1", "0") if t.toward == "真" else ("0", "1")
        need = f"a verdict of {yes} on r-{t.id} or r-{t.id}-pfN, or of {no} on r-{t.id}-rfN"
        how = (f"`kb verdict {t.id}#证明N --vote V1=R --vote V2=R` (#证伪N for a refutation, "
               f"`kb verdict {t.id}` for a proposition without entries; `kb promote` makes a "
               "valuable one a judge problem)")
    subject = f"{t.id}: {t.how}" if not t.verified else \
        f"{t.id}: Verified card {c.kb.prefix}{t.path} was added"
    undo = "remove the card" if t.verified else "restore the status"
    settling = "solving it" if t.kind == "problem" else f"settling it {t.toward}"
    return (f"{subject}, {settling}, but no valid verification record under {folder} "
            f"settles it so ({need}){_invalid_found(c, recs, judges, t.id)}; only a verdict "
            f"settles a {_noun(t.kind)} and writes its Verified card — {undo} and run {how} "
            f"{override_hint(t.id)}")


def _entry_message(c: Change, e: _EntryTodo, judges: _Judges, recs: _Records) -> str:
    """KB312's text for entry (or ``概率``) ``e`` moved to 0 or 1: the record that would put
    it there, any record found that is not valid, and how to get one."""
    folder = c.kb.prefix + records_prefix(c.new_config)
    if e.entry == "":
        need = (f"one that settles it {'真' if e.value == 1 else '假'}, e.g. a verdict of "
                f"{e.value} on r-{e.id}")
        how = f"`kb verdict {e.id}#证明N …` (or `kb verdict {e.id}` without entries)"
        what = f"{e.id}: {e.how}"
    else:
        short = {"解法": "s", "证明": "pf", "证伪": "rf"}[e.entry]
        need = f"a verdict of {e.value} on r-{e.id}-{short}{e.number}"
        how = f"`kb verdict {e.id}#{e.entry}{e.number} --vote V1=R --vote V2=R`"
        what = f"{e.id}: {e.how}"
    return (f"{what}, but no valid verification record under {folder} puts it there "
            f"({need}){_invalid_found(c, recs, judges, e.id)}; probability 0 or 1 is a "
            "verdict's alone (Vibe Math reads an entry at 1 as settling its object, and agents "
            f"never write 0 or 1) — restore the value and run {how} {override_hint(e.id)}")


def _invalid_found(c: Change, recs: _Records, judges: _Judges, oid: str) -> str:
    """``; the record found is not valid (KB243): <path> (<why>)`` for the records of
    verdict 0 or 1 on ``oid`` (its entries, its judge problems' solutions) that no verdict
    could write; "" when there are none."""
    found = []
    for r, bad in sorted(recs.invalid.items()):
        m = _SOLUTION.match(r)
        j = judges.of(m.group("id")) if m is not None and m.group("id") != oid else None
        if r == f"r-{oid}" or r.startswith(f"r-{oid}-") or (j is not None and j.writes_to == oid):
            found += bad
    if not found:
        return ""
    shown = "; ".join(f"{c.kb.prefix}{p} ({why})" for p, why in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    one = len(found) == 1
    return (f"; the record{'' if one else 's'} found {'is' if one else 'are'} not valid "
            f"(KB243): {shown}{more}")


def _noun(kind: str) -> str:
    return "problem" if kind == "problem" else "proposition"


__all__ = ["SETTLED", "settled_by_a_record"]
