"""Judging a change: its snapshot findings and its history findings.

:func:`check_snapshots` marks the errors a change introduces as blocking
(the others as pre-existing); :func:`history_findings` runs the history
rules; :func:`judge_merge` keeps, of a merge's findings, those it
earns against every parent, and those about what it undid of one parent's change or
wrote with a value neither parent has.
"""

from __future__ import annotations

import dataclasses
import json
import re
from contextlib import contextmanager
from typing import Any, Iterator, Optional

from kb.checks.changes import diff_commits
from kb.checks.report import Finding, findings
from kb.checks.results import history_diagnostics, snapshot_diagnostics, split_introduced


def check_snapshots(k: Any, new_f: Any, base_f: Optional[Any], strict: bool,
                    earlier: Optional[Any] = None,
                    file_scope: Optional[set[str]] = None,
                    raw: Optional[list] = None, base_config: Any = None,
                    new_config: Any = None, others: Any = ()) -> list[Finding]:
    """Snapshot findings of ``new_f``; with ``strict``, only errors absent from
    ``base_f`` block (the others are marked pre-existing), and from each of ``others``
    (a merge's other parents, as Facts: an error a merge brings in from the branch it
    merges was that branch's, not the merge's). ``file_scope`` limits
    the per-file rules (both sides) to those paths; ``raw`` gives ``new_f``'s results
    computed already (see :func:`snapshot_diagnostics`). ``base_config`` and
    ``new_config`` are the base's and the change's own kb.toml: when the change moves a
    ``[paths]`` key, the base's errors are those of the base read with its own ``[paths]``
    (both sides are read through the change's, which no longer reads what the move hides:
    the errors that follow from that would pass as pre-existing)."""
    diags = snapshot_diagnostics(new_f, base_f, earlier, file_scope=file_scope, raw=raw)
    if not strict:
        return findings(diags, k, "snapshot", all_errors_block=True)
    errors = [d for d in diags if d.severity == "error"]
    if not errors:
        return findings(diags, k, "snapshot")
    base = _base_diagnostics(base_f, file_scope, base_config, new_config, new_f)
    for other in others:
        base = base + snapshot_diagnostics(other, file_scope=file_scope)
    introduced, pre = split_introduced(diags, base)
    return findings(diags, k, "snapshot", blocking={id(d) for d in introduced},
                    pre={id(d) for d in pre})


def _base_diagnostics(base_f: Optional[Any], file_scope: Optional[set[str]], base_config: Any,
                      new_config: Any, new_f: Any = None) -> list:
    """The snapshot diagnostics a change's errors are judged against (see
    :func:`check_snapshots`): ``base_f``'s, or, when the change moves a ``[paths]`` key,
    those of ``base_f``'s commit read with the ``[paths]`` of its own kb.toml
    (``base_config``; every other setting as ``base_f`` was read), each at the path
    its file has in ``new_f`` when the move carried the file there (:func:`_carried`)."""
    from kb.checks.unread_records import moved_keys, own_reading

    if base_f is None:
        return []
    keys = moved_keys(base_config, new_config)
    if keys:  # (rare: a comparison of two dicts otherwise)
        with own_reading(base_f, base_config.paths) as own:
            if own is not None:
                found = snapshot_diagnostics(own, file_scope=file_scope)
                moves = [(base_config.paths[k], new_config.paths[k]) for k in keys
                         if k in base_config.paths and k in new_config.paths]
                return found if new_f is None else _carried(found, own.files, new_f.files, moves)
    return snapshot_diagnostics(base_f, file_scope=file_scope)


def _carried(found: list, base_files: dict[str, str], new_files: dict[str, str],
             moves: list[tuple[str, str]] = ()) -> list:  # type: ignore[assignment]
    """``found`` (base diagnostics) with the path of each file the change carried along set
    to its new path: an error the file had before the move is the same error after. A file
    is carried when the change moved it unchanged (``git mv tree.md research/tree.md``: the
    blob gone from one path, at one new path), or when it sat where a moved ``[paths]``
    key pointed (``moves``: (old value, new value) pairs) and now sits where that key
    points, edited or not (gone from the old path, new at the new one)."""
    gone = {b: p for p, b in base_files.items() if p not in new_files}
    if not gone:
        return found
    came: dict[str, list[str]] = {}
    for p, b in new_files.items():
        if b in gone and p not in base_files:
            came.setdefault(b, []).append(p)
    moved = {gone[b]: ps[0] for b, ps in came.items() if len(ps) == 1}
    for was, now in moves:
        for p in gone.values():
            if p in moved:
                continue
            q = now if p == was else \
                f"{now}/{p[len(was) + 1:]}" if p.startswith(was + "/") else None
            if q is not None and q in new_files and q not in base_files:
                moved[p] = q
    if not moved:
        return found
    # kb's rules give NamedTuples (_replace), others kb.model values (replace)
    return [(d._replace(path=moved[d.path]) if hasattr(d, "_replace") else d.replace(path=moved[d.path]))
            if d.path in moved else d for d in found]


def history_findings(change: Any, k: Any, commit: Optional[str]) -> list[Finding]:
    """Findings of the history rules on ``change`` (a :class:`kb.checks.changes.Change`
    of KB ``k``; ``commit`` the new commit or None), each side read as its own kb.toml's
    ``[paths]`` reads it (:func:`read_as_own`); every error blocks."""
    with read_as_own(change) as own:
        return findings(history_diagnostics(own), k, "history", commit=commit,
                        all_errors_block=True)


@contextmanager
def read_as_own(change: Any) -> Iterator[Any]:
    """Yield ``change`` with each side read as its own kb.toml's ``[paths]`` reads it
    (``change.config``, the base's; ``change.new_config``, the change's:
    :meth:`kb.checks.changes.Change.read_as_own`): a change that moves a key is judged
    against its base read where the base's files were, and a range's earlier commit, read
    through the tip's kb.toml, as its own reads it when a later commit moved a key.
    ``change`` itself when both sides are read so already (the usual case: two dicts
    compared); else what the other layout reads is parsed, for the block's duration."""
    from contextlib import ExitStack

    from kb.checks.unread_records import own_reading

    fresh = change.through_new is None
    base_off = fresh and change.base.snap.rev is not None and \
        change.base.config.paths != change.config.paths
    new_off = fresh and change.new.snap.rev is not None and \
        change.new.config.paths != change.new_config.paths
    if not (base_off or new_off):
        yield change
        return
    with ExitStack() as stack:
        base = stack.enter_context(own_reading(change.base, change.config.paths)) \
            if base_off else change.base
        new = stack.enter_context(own_reading(change.new, change.new_config.paths)) \
            if new_off else change.new
        yield change if base is None or new is None else change.read_as_own(base, new)


_ID_TOKEN = re.compile(r"[A-Za-z][\w.-]*\d[\w.-]*")


def finding_key(f: Finding) -> tuple[str, str, str]:
    """What a history finding is about: code, path and the first ID-like word of
    its message (messages name their base snapshot, which differs per parent)."""
    m = _ID_TOKEN.search(f.message)
    return f.code, f.path, m.group(0) if m else ""


#: History codes about one object (its ID first in the message), with the Light field a
#: merge that undid a parent's change gives back as the merge base had it (None: whether
#: the object is there at all).
_OBJECT_FIELD = {"KB301": None, "KB302": "statement", "KB303": "evidence_json",
                 "KB306": "status"}
#: History codes about one file, judged on its blob id (KB308 is judged on the recorded
#: result, :func:`kb.checks.history_rules.recorded_parts`; KB311 on the entry and its text).
_FILE_CODES = ("KB304", "KB310")


def judge_merge(found: list[Finding], idx: Any, k: Any, commit: Optional[str],
                others: list[str], new: Any, mode: str, overrides: dict[str, str],
                origin_f: Any, diff: Any = None, removed_before: Any = None,
                codes: Optional[set[str]] = None, first: Optional[str] = None
                ) -> list[Finding]:
    """The history findings of a merge commit (``found``: judged against its first
    parent ``first``; ``others``: the other parents).

    A finding is kept when the merge earns it against every parent: what a merge
    takes over from one parent is that parent's change, checked on its own path (a
    renumbered branch merged with its target passes). And a finding against any one
    parent is kept when the merge *undid* that parent's change: the object or file is
    back as the merge base had it (an experiment the parent added, gone; Evidence it
    appended, dropped; a status it moved, moved back; a Verified card or a verification
    record it wrote, changed), which neither side did on its own path -- ``git merge -s
    ours``, or a conflict resolved by taking one side's whole file, threw the other
    side's record away and passed. So is one whose subject the merge wrote with a value
    no parent has (a conflict resolved with a third conclusion). ``codes``, when given,
    limits the first test to those codes (the others are kept as found). And a card two
    parents each added under one ID, of which the merge kept one side's file, is KB350
    (:func:`kb.merge.collide.lost_at_merge`).
    """
    base = _merge_base(k, [first, *others]) if first else None
    out = _judged(found, idx, k, commit, others, new, mode, overrides, origin_f, diff,
                  removed_before, codes, first, base)
    if base is not None:
        # a card both sides added, of which the merge kept one side's file: no history
        # rule sees the other's go (against its own parent the card was only edited)
        from kb.merge.collide import lost_at_merge

        label = commit[:10] if commit else "the staged index"
        out += findings(lost_at_merge(idx, k, [h for h in (first, *others) if h], base, new,
                                      label, overrides), k, "history", commit=commit,
                        all_errors_block=True)
    return out


def _judged(found: list[Finding], idx: Any, k: Any, commit: Optional[str], others: list[str],
            new: Any, mode: str, overrides: dict[str, str], origin_f: Any, diff: Any,
            removed_before: Any, codes: Optional[set[str]], first: Optional[str],
            base: Optional[str]) -> list[Finding]:
    """:func:`judge_merge`'s judgement of ``found`` (``base``: the parents' merge base)."""
    from kb.checks.changes import Change
    from kb.checks.facts import Facts
    from kb.checks.targets import config_at
    from kb.repo import commit_snapshot

    keep = {finding_key(f) for f in found}
    label = commit[:10] if commit else "the staged index"
    new_f = None
    against: list[tuple[str, list[Finding]]] = []
    for p in others:
        changes = diff(p) if diff is not None else diff_commits(k, p, commit)
        if not changes:  # the merge is this parent's tree: nothing is earned against it
            keep = set()
            continue
        touched = [ch.path for ch in changes]
        if new_f is None:
            new_f = Facts(idx, new, label, ensure=touched)
        old_f = Facts(idx, commit_snapshot(k, p), p[:10], ensure=touched)
        # each side read with its own kb.toml: a parent from before a [paths] move whose
        # records the merge no longer reads (left where the old setting put them) is KB301
        change = Change(old_f, new_f, mode, changes, overrides, commit=commit, origin=origin_f,
                        removed_before=removed_before, base_config=config_at(k, p),
                        new_config=config_at(k, commit) if commit else None)
        theirs = history_findings(change, k, commit)
        against.append((p, theirs))
        keep &= {finding_key(f) for f in theirs}
    # Kept as found, outside ``codes`` (the staged index and the working tree judge only
    # KB307 against every head) -- but not KB303: an append-only list a merge is judged on
    # lost items alone in every mode (below), or the hook refuses a merge that holds every
    # item of both sides, just not in the first parent's order, which a range accepts.
    passed = {finding_key(f) for f in found if codes is not None and f.code not in codes
              and f.code == "KB303" and finding_key(f) not in keep}
    # An accepted finding (info: an override named its ID) is judged as its error would
    # be: a merge inherits the overrides of the commits it brings in, so a change the
    # merge takes over from a parent would otherwise show as "accepted" at the merge.
    out = [f for f in found if finding_key(f) not in passed and (
        finding_key(f) in keep or (codes is not None and f.code not in codes))]
    if base is None:
        return out + [f for f in found if finding_key(f) in passed]
    seen = {finding_key(f) for f in out}
    # (finding, the parent it was judged against: None for the first)
    undone = [(f, None) for f in found if finding_key(f) not in seen]
    undone += [(f, p) for p, fs in against for f in fs if finding_key(f) not in seen]
    if not undone:
        return out
    paths = sorted({f.kb_path for f, _p in undone})
    if new_f is None:
        new_f = Facts(idx, new, label, ensure=paths)
    base_f = Facts(idx, commit_snapshot(k, base), base[:10], ensure=paths)
    heads = [h for h in (first, *others) if h]
    parents_f = [Facts(idx, commit_snapshot(k, h), h[:10], ensure=paths) for h in heads]
    new_rev = commit if commit else ""
    for f, parent in undone:
        key = finding_key(f)
        if key in seen:
            continue
        subject = _Subject(f, key[2], k)
        if not subject.judged:
            if key in passed:
                seen.add(key)
                out.append(f)
            continue
        ours, was = subject.of(new_f, new_rev), subject.of(base_f, base)
        side = parent or first
        had = subject.of(parents_f[heads.index(side)], side) if side in heads else None
        lost = _dropped(f.code, was, ours, had) if side in heads else ()
        if key in passed:
            # Kept as found unless it only reordered: the merge lacks none of the items
            # the first parent has (what it lacks of them is this merge's to answer for).
            if any(i not in _items(ours) for i in _items(had)):
                seen.add(key)
                out.append(f)
            continue
        if f.code == "KB303" and not lost:
            # An append-only list merged from two sides that both appended holds both
            # sides' items in some order (kb's driver: ours, then what only theirs added):
            # against the other side it reads as "reordered", which no merge can avoid.
            # Only a lost item counts.
            continue
        if ours == was and f.code == "KB301" and "is no longer read" in f.message:
            why = (f"the merge holds it where its kb.toml no longer reads it, as {side[:10]} "
                   "did not")
        elif ours == was:
            why = f"the merge undid that change: it is as the merge base {base[:10]} had it"
        elif lost:
            # Both sides appended, the merge took one side's list: the other's items are gone.
            why = f"the merge dropped what {side[:10]} appended since the merge base: {', '.join(lost)}"
        elif all(ours != subject.of(s, h) for s, h in zip(parents_f, heads)):
            why = "the merge wrote it: neither side has it so"
        elif _absent(was) and not _absent(had) and not _absent(ours) and ours != had:
            # Both sides added it (the merge base has none), each its own: the merge kept
            # one, and the other's record is gone, unseen by either side's path.
            fix = "renumber one side before merging (`kb sync`)"
            if _light(base_f, f.kb_path, subject.oid) is not None:
                # one object both sides wrote (each recorded E003's result): no new ID, so
                # nothing for kb sync to renumber
                fix = (f"{subject.oid} was at the merge base already: merge by hand keeping what "
                       "both wrote" + (", or record one side's result as a new experiment "
                                       "(`kb exp new`)" if f.code == "KB308" else ""))
            why = (f"both sides added it since the merge base {base[:10]} and the merge kept "
                   f"another's: {side[:10]}'s is gone; {fix}")
        else:
            continue
        seen.add(key)
        message = f.message
        if parent is not None:  # what to restore is that parent's file, not HEAD's
            message = message.replace("--source=HEAD ", f"--source={parent[:10]} ")
        out.append(dataclasses.replace(f, message=f"{message} ({why})"))
    return out


def _absent(subject: Any) -> bool:
    """Whether a :class:`_Subject` read found nothing (no file, no object)."""
    return subject is None or subject is False


def _dropped(code: str, base: Any, merged: Any, side: Any) -> tuple[str, ...]:
    """For an append-only list (KB303, Evidence as JSON): the items ``side`` added since
    the merge ``base`` that the ``merged`` list lacks; () for any other code."""
    if code != "KB303":
        return ()
    have = set(_items(merged))
    before = set(_items(base))
    return tuple(i for i in _items(side) if i not in before and i not in have)


def _items(evidence_json: Any) -> list[str]:
    """The IDs of an Evidence JSON array ([] for none, or an object absent: False/None)."""
    if not isinstance(evidence_json, str) or not evidence_json:
        return []
    try:
        items = json.loads(evidence_json)
    except ValueError:
        return []
    return [str(i) for i in items] if isinstance(items, list) else []


def _merge_base(k: Any, heads: list[Optional[str]]) -> Optional[str]:
    """The best common ancestor of ``heads`` (an octopus merge's too), or None."""
    from kb import git

    proc = git.run(["merge-base", "--octopus", *[h for h in heads if h]], k.top, check=False)
    out = proc.stdout.decode().strip()
    return out or None


#: A KB311 message's entry: ``… settled entry 解法 1 was …`` (kind, number).
_SETTLED_ENTRY = re.compile(r"settled entry (\S+) (\d+) ")


class _Subject:
    """What history finding ``f`` (about object ``oid``) is about, read on a side of a
    merge: a file's blob id (KB304, KB310), an experiment's recorded result (KB308), an
    object's field (KB301: whether it is there) or a card's entry (KB311: its title,
    probability, status and text); ``judged``
    False for codes a merge is not judged on this way (KB307: the allocation order)."""

    def __init__(self, f: Finding, oid: str, k: Any) -> None:
        self.f, self.oid, self.k = f, oid, k
        self.entry = _SETTLED_ENTRY.search(f.message) if f.code == "KB311" else None
        self.judged = f.code in _FILE_CODES or (bool(oid) and (f.code in _OBJECT_FIELD
                                                               or f.code == "KB308"
                                                               or self.entry is not None))

    def of(self, side: Any, rev: str) -> Any:
        """The subject in snapshot ``side`` (its Facts) of revision ``rev`` (``""``: the
        staged index)."""
        path = self.f.kb_path
        if self.f.code in _FILE_CODES:
            # the blob as the snapshot lists it (a working tree's too); a file kb does not
            # parse (a verification record) as git has it
            return side.files.get(path) if path in side.files else _blob(self.k, rev, path)
        if self.entry is not None:
            return _entry(side, path, self.oid, self.entry.group(1), int(self.entry.group(2)))
        if self.f.code == "KB308":
            from kb.checks.history_rules import recorded_parts

            return recorded_parts(side, path, self.oid)
        light = _light(side, path, self.oid)
        field = _OBJECT_FIELD[self.f.code]
        if light is None or field is None:
            return light is not None
        return getattr(light, field)


def _light(side: Any, path: str, oid: str) -> Any:
    """The first object ``oid`` of ``path`` in snapshot ``side`` (its Light), or None."""
    if path not in side.files:
        return None
    return next((r for r in side.light(path) if r.id == oid), None)


def _entry(side: Any, path: str, oid: str, kind: str, number: int) -> Any:
    """Entry ``kind number`` of card ``oid`` at ``path`` in snapshot ``side``: its
    (title, probability, status), or None."""
    if path not in side.files:
        return None
    for r in side.records(path):
        if r.id == oid:
            for e in r.entries or ():
                if (e.kind, e.number) == (kind, number):
                    from kb.checks.history_rules import entry_text

                    return e.title, e.probability, e.status, entry_text(side, path, oid, e.line)
    return None


def _blob(k: Any, rev: str, path: str) -> Optional[str]:
    """The blob id of KB path ``path`` at commit ``rev`` (``""``: the staged index), or None."""
    from kb import git

    proc = git.run(["rev-parse", "-q", "--verify", f"{rev}:{k.repo_path(path)}"], k.top,
                   check=False)
    return proc.stdout.decode().strip() or None
