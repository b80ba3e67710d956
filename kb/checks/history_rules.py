"""History rules (KB3xx): a base snapshot -> a new snapshot (DESIGN.md §4).

Every rule looks only at the paths that changed (:attr:`Change.paths`, from
the two snapshots' blob ids), so its cost is proportional to the change,
not to the KB. Content is compared as git stores it (blob ids and the parse
of the committed/staged blob), never as working-tree bytes: line-ending
conversion (``core.autocrlf``) cannot make an untouched file look changed.
One exception: a change that moves a ``[paths]`` key also has the base's files at the
moved places read with the base's kb.toml (:mod:`kb.checks.unread_records`), since the
records it stops reading are on neither side (KB301, KB307).

A change to an ID named by a ``Kb-Override:`` (``KB_OVERRIDE`` for the staged
index; the commit's trailers in CI) is accepted and reported as ``info``.
"""

from __future__ import annotations

import re
from os.path import commonprefix
from pathlib import PurePosixPath
from typing import Any, Callable, Optional

from kb import git
from kb.checks.changes import Change, folder_moves, records_prefix, verified_prefix
from kb.checks.facts import CARD_KINDS, NAMESPACE, Light
from kb.checks.overrides import renumbered_to
from kb.checks.registry import history_rule
from kb.checks.unread_records import Unread, moved_records
from kb.merge.renumber import next_child, next_experiment, renamed_record
from kb.numbers import small_int
from kb.vocab import EXPERIMENT_MOVES, HYPOTHESIS_MOVES, HYPOTHESIS_STATUS, is_legal_move

#: Kinds whose objects are never removed or reassigned.
KINDS = ("hypothesis", "experiment", *CARD_KINDS)
_WORD = {"hypothesis": "hypothesis", "experiment": "experiment", "problem": "problem card",
         "proposition": "proposition card", "method": "method card"}


def _kinds_of(ns: str) -> tuple[str, ...]:
    return tuple(k for k, v in NAMESPACE.items() if v == ns)


def _norm(text: str) -> str:
    return " ".join(text.split())


def _short(text: str, n: int = 70) -> str:
    text = _norm(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def _apart(a: str, b: str, n: int = 50) -> tuple[str, str]:
    """``a`` and ``b`` cut to about ``n`` characters from a little before where they first
    differ (a change late in a long line is shown, not cut off)."""
    start = max(0, len(commonprefix([a, b])) - 15)

    def cut(s: str) -> str:
        return ("…" if start else "") + s[start:start + n] + ("…" if start + n < len(s) else "")

    return cut(a), cut(b)


#: Where an override goes: the pre-commit hook runs before the commit message exists.
_WHERE = "a commit trailer, and the same text in KB_OVERRIDE for the pre-commit hook"


def override_hint(obj_id: str) -> str:
    """How a finding about ``obj_id`` is accepted: the override trailer, and where it goes."""
    return f"(or commit it with `Kb-Override: {obj_id} <reason>`: {_WHERE})"


def _renames(c: Change) -> dict[str, str]:
    """old ID -> new ID of the commit's ``Kb-Renumber:`` trailers (``kb sync``):
    references that follow a renumbered ID are not a change of meaning."""
    out = {}
    for oid, reason in c.overrides.items():
        new = renumbered_to(reason)
        if new is not None:
            out[oid] = new
    return out


@history_rule("KB301", "KB305")
def removed(c: Change) -> list:
    """KB301: nothing is removed, nor left where a ``[paths]`` move no longer reads it;
    KB305: an experiment file keeps its name."""
    base = c.lights(c.base, KINDS)
    new = c.lights(c.new, KINDS)
    at = c.kb.prefix  # messages name repository paths, as the location does
    out = []
    # records a [paths] move left where the new kb.toml reads none; one gone from a file
    # the move carried (tree.md -> tree2.md) was removed, and is said so below
    unread = [u for u in moved_records(c).unread if c.through_new is None or c.now_at(u.path) is None]
    said = {(NAMESPACE[u.kind], u.id) for u in unread}  # (their own message, below)
    for key, b in base.items():
        here = [new[key]] if key in new else c.new.find(b.id, _kinds_of(b.ns))
        if here:
            # (a [paths] move carries a file, name and all: not renamed)
            if b.kind == "experiment" and all(x.path != b.path for x in here) \
                    and all(x.path != c.now_at(b.path) for x in here):
                dest = here[0].path
                out.append(c.violation(
                    b.id, dest, here[0].line, "KB305",
                    f"experiment {b.id} was renamed from {at}{b.path} to {at}{dest}; experiment files "
                    f"keep their name — move it back {override_hint(b.id)}"))
            continue
        if key in said:
            continue
        gone = "" if c.now_at(b.path) is not None else f" ({at}{b.path} was deleted)"
        out.append(c.violation(
            b.id, b.path, b.line, "KB301",
            f"{_WORD[b.kind]} {b.id} was removed{gone}; it was declared at {at}{b.path}:{b.line} "
            f"in {c.base.label}; {_never_removed(c, b.kind)} {override_hint(b.id)}"))
    # records a [paths] move leaves where the new kb.toml reads none: gone as well
    return out + [_unread(c, u) for u in unread]


def _never_removed(c: Change, kind: str) -> str:
    if kind == "hypothesis":
        return ("a hypothesis is never removed: mark it "
                f"{HYPOTHESIS_STATUS.word('被推翻', c.config.locale)} instead")
    return "experiment files are never deleted" if kind == "experiment" else "cards are never deleted"


def _unread(c: Change, u: Unread) -> Any:
    """KB301 for a record kb.toml's new ``[paths]`` no longer reads (covered, as a deletion
    is, by a ``Kb-Override:`` naming its ID; the one naming the key accepts only the move)."""
    at = c.kb.prefix
    where = f"{at}{u.path}, where {c.base.label} declared it at line {u.line},"
    if u.kept:
        what = f"the new paths.{u.key} no longer reads {where.rstrip(',')}"
        fix = (f"move the file to where paths.{u.key} now points (`git mv` in the same commit "
               f"keeps its ID) or set paths.{u.key} back to {u.was!r}")
    else:
        what, fix = f"{where} was deleted", _never_removed(c, u.kind)
    return c.violation(
        u.id, u.path, u.line, "KB301",
        f"{_WORD[u.kind]} {u.id} is no longer read: kb.toml moves paths.{u.key} from {u.was!r} "
        f"to {u.now!r} and {what}; {fix} {override_hint(u.id)}")


@history_rule("KB302")
def reassigned(c: Change) -> list:
    """KB302: an ID keeps its statement (a hypothesis) / its hypothesis (an experiment).
    A statement that names an ID or entry a ``Kb-Renumber:`` renumbered (``kb sync``) keeps
    its claim with the new name: the old statement is renumbered first."""
    base = c.lights(c.base, ("hypothesis", "experiment"))
    new = c.lights(c.new, ("hypothesis", "experiment"))
    renames = _renames(c)
    out = []
    for key, n in new.items():
        b = base.get(key)
        if b is None or (b.statement == n.statement and b.hypothesis == n.hypothesis):
            continue  # (the same statement and hypothesis: nothing below can fire)
        if n.kind == "experiment" and renames.get(b.hypothesis) == n.hypothesis:
            continue  # its hypothesis was renumbered (Kb-Renumber): the same one
        if n.kind == "hypothesis" and renames and \
                _norm(_renumbered(b.statement, renames)) == _norm(n.statement):
            continue  # an ID it names was renumbered (Kb-Renumber): the same claim
        if n.kind == "hypothesis" and _norm(b.statement) != _norm(n.statement):
            out.append(c.violation(
                n.id, n.path, n.line, "KB302",
                f"{n.id} was reassigned: its statement was {_short(b.statement)!r} in "
                f"{c.base.label} and is now {_short(n.statement)!r}; an ID keeps its statement — "
                f"add a new hypothesis, or run `kb hyp edit {n.id} \"…\" --reason R`"))
        elif n.kind == "experiment" and b.hypothesis and n.hypothesis and b.hypothesis != n.hypothesis:
            out.append(c.violation(
                n.id, n.path, n.line, "KB302",
                f"experiment {n.id} was reassigned from hypothesis {b.hypothesis} to {n.hypothesis}; "
                f"open a new experiment for {n.hypothesis} {override_hint(n.id)}"))
    return out


@history_rule("KB303")
def evidence_append_only(c: Change) -> list:
    """KB303: Evidence only grows, at its end."""
    base = c.lights(c.base, ("hypothesis",))
    new = c.lights(c.new, ("hypothesis",))
    renames = _renames(c)
    out = []
    for key, n in new.items():
        b = base.get(key)
        if b is None or b.evidence_json == n.evidence_json or n.evidence[: len(b.evidence)] == b.evidence:
            continue
        if renames and n.evidence[: len(b.evidence)] == tuple(renames.get(e, e) for e in b.evidence):
            continue  # an experiment in it was renumbered (Kb-Renumber)
        lost = [e for e in b.evidence if e not in n.evidence]
        was, now = ", ".join(b.evidence) or "(empty)", ", ".join(n.evidence) or "(empty)"
        if lost:
            what = f"lost {', '.join(lost)}"
        else:
            what = "was reordered"
        keep = list(b.evidence) + [e for e in n.evidence if e not in b.evidence]
        fix = None
        if c.mode == "worktree" and n.evidence_line:
            data = c.new.read(n.path)
            if data is not None:
                lines = data.decode("utf-8", "replace").lstrip("\ufeff").split("\n")
                if n.evidence_line <= len(lines):
                    old = lines[n.evidence_line - 1].rstrip("\r")
                    fix = (n.evidence_line, old, "Evidence: " + ", ".join(keep))
        out.append(c.violation(
            n.id, n.path, n.evidence_line or n.line, "KB303",
            f"Evidence of {n.id} {what} (was: {was}; now: {now}); Evidence is append-only — "
            f"write 'Evidence: {', '.join(keep)}'", fix=fix))
    return out


def _kept_files(c: Change, prefix_of: Callable[[Any], str], code: str, why: str,
                key: str) -> list:
    """``code`` for each file under the folder ``prefix_of(config)`` names that the change
    modified or deleted (decided on blob ids), its message saying ``why`` such files stay
    as committed.

    When kb.toml's ``[paths]`` moves the folder (``key``; KB309 judges the move itself), a
    file found at the same place under the new folder with the same blob id was moved with
    it, not deleted; one whose bytes changed on the way was modified, and is said at its
    new path; one the change leaves at the old place is no longer read, and is said so
    (:func:`_left_behind`)."""
    prefix = prefix_of(c.config)
    moves = folder_moves(c, prefix_of)
    out = _left_behind(c, prefix_of, code, why, key)
    for ch in c.changes:
        if not ch.path.startswith(prefix) or ch.old is None or ch.old == ch.new:
            continue
        path, what, was = ch.path, "deleted" if ch.new is None else "modified", None
        if ch.path in moves:
            dest = moves[ch.path][1]
            if dest.new == ch.old and dest.new_link == ch.old_link:
                continue  # moved with its folder, unchanged
            was = c.kb.prefix + ch.path
            path, what = dest.path, f"modified (moved from {was})"
        repo_path = c.kb.prefix + path
        if c.mode in ("staged", "worktree") and was is not None:
            # HEAD has no file at the new path (git restore would delete it): its bytes
            # are HEAD's at the old one
            how = (f"put HEAD's bytes back at its new place: git show 'HEAD:{was}' > "
                   f"'{repo_path}' && git add -- '{repo_path}'")
        elif c.mode in ("staged", "worktree"):
            how = f"restore it: git restore --source=HEAD --staged --worktree -- '{repo_path}'"
        elif was is not None:
            how = f"restore its bytes from {was} in {c.base.label}"
        else:
            how = f"restore it from {c.base.label}"
        stem = PurePosixPath(path).stem
        if c.mode not in ("staged", "worktree"):
            # a commit (CI, pre-push): it may be the repair of an earlier break (a revert
            # puts back what a --no-verify commit changed, and is a change of its own)
            how += (f"; a commit that repairs an earlier change of it (a revert) says so: "
                    f"`Kb-Override: {stem} <reason>` in its message")
        out.append(c.violation(stem, path, 1, code, f"{repo_path} was {what}; {why} — {how}",
                               renumbered=_renamed_by_renumbering(c, ch, stem)))
    return out


def _left_behind(c: Change, prefix_of: Callable[[Any], str], code: str, why: str,
                 key: str) -> list:
    """``code`` for each file of the base under the folder ``prefix_of`` names that a
    ``[paths]`` move of ``key`` leaves where it was (the change neither deletes nor edits
    it): no rule reads it any more, so a Verified card or a verification record would
    vanish from the record without a word (KB301 says the same of other records). Cost:
    nothing unless the folder moved; then one ``git ls-tree`` of the old folder."""
    old, new = prefix_of(c.config), prefix_of(c.new_config)
    rev = (c.through_new or c.base).snap.rev
    if old == new or not old or rev is None:
        return []
    proc = git.run(["ls-tree", "-r", "-z", rev, "--", f":(literal){c.kb.prefix}{old}"],
                   c.kb.top, check=False)
    touched = {ch.path for ch in c.changes}
    out = []
    for e in git.tree_entries(proc.stdout if proc.returncode == 0 else b""):
        path = c.kb.rel(e.path)
        if path is None or path in touched or (new and path.startswith(new)):
            continue
        repo_path = c.kb.prefix + path
        out.append(c.violation(
            PurePosixPath(path).stem, path, 1, code,
            f"{repo_path} is no longer read: kb.toml moves paths.{key} from "
            f"{c.config.paths.get(key)!r} to {c.new_config.paths.get(key)!r} and the file stays "
            f"at its old place; {why} — move it with the folder (`git mv` in the same commit) "
            f"or set paths.{key} back"))
    return out


def _renamed_by_renumbering(c: Change, ch: Any, stem: str) -> bool:
    """Whether kept file ``ch`` (deleted or modified) is what a ``Kb-Renumber:`` of
    ``stem`` makes of it: removed here, and at the renamed path a new file holding its
    text with the renumbered IDs (``kb sync``'s rename of a Verified card). True when no
    such trailer names ``stem`` (nothing to check)."""
    reason = c.overrides.get(stem)
    if reason is None or renumbered_to(reason) is None:
        return True
    if ch.new is not None:
        return False  # edited in place: no renumbering leaves the old file
    from kb.merge.renumber import Plan, rename_path, rewrite_text

    plan = Plan(ids=_renames(c))
    dest = _change_at(c, rename_path(ch.path, plan))
    if dest is None or dest.old is not None or not dest.new or dest.path == ch.path:
        return False
    old = git.read_blobs([ch.old], c.kb.top).get(ch.old)
    if old is None:
        return False
    want = rewrite_text(old.decode("utf-8", "surrogateescape"), plan)
    return dest.new == git.object_id("blob", want.encode("utf-8", "surrogateescape"), ch.old)


@history_rule("KB304")
def verified_immutable(c: Change) -> list:
    """KB304: a file under Verified/ is never modified or deleted (decided on blob ids)."""
    return _kept_files(c, verified_prefix, "KB304",
                       f"files under {verified_prefix(c.config) or 'Verified/'} are immutable "
                       "once committed", "verified")


@history_rule("KB310")
def records_append_only(c: Change) -> list:
    """KB310: a verification record (``Logs/Verification/*``) is never modified or deleted:
    the records are append-only (DESIGN.md §1); verdicts, the write-back and every
    verifier's accuracy (the weights of later verdicts) are read from them.

    Under ``Kb-Renumber:`` trailers (``kb sync``), a record of a renumbered card that
    is now exactly what the renumbering makes of it (:func:`kb.merge.renumber.renamed_record`:
    file name and target renumbered, nothing else changed) is accepted, as its card's
    Verified card is (KB304)."""
    out = _kept_files(c, records_prefix, "KB310",
                      "verification records are append-only (a new verdict is a new record: "
                      "kb verdict)", "logs")
    renames = _renames(c)
    if not renames or not out:
        return out
    return [_renumbered_record(c, d, renames) for d in out]


@history_rule("KB313")
def trail_log_append_only(c: Change) -> list:
    """KB313: an operation file of the exploration graph's log (``.explore-tree/ops/``: one
    immutable file per recording, :mod:`kb.trail.log`) is never modified or deleted: lines
    may only be appended to it. The log is append-only (DESIGN.md §8): a correction is a
    new recording, and replay reads the graph from every file, so a file edited or removed
    by hand rewrote the graph's history without a word (a goal renamed, a deleted goal's
    children left "unknown parent"). An appended line is the log's own way to grow (a torn
    one is KB242's).

    Under ``Kb-Renumber:`` trailers (``kb sync``), a file that is now exactly what the
    renumbering makes of its nodes' refs (:func:`kb.merge.renumber.rewrite_trail_log`) is
    accepted, as a renamed record is (KB310)."""
    from kb.trail.log import OPS_DIR

    out = _kept_files(c, lambda _cfg: OPS_DIR + "/", "KB313",
                      "the exploration graph's log is append-only (a correction is a new "
                      "recording: kb trail set, move, archive)", "trail")
    if not out:
        return out
    renames = _renames(c)
    return [d for d in out if not _appended(c, d) and not (renames and _renumbered_log(c, d, renames))]


def _change_at(c: Change, path: str) -> Any:
    """The change of ``c`` at ``path`` (a RawChange), or None."""
    return next((x for x in c.changes if x.path == path), None)


def _appended(c: Change, d: Any) -> bool:
    """Whether KB313's diagnostic ``d`` is a log file that only grew: its old bytes are the
    start of its new ones (the new side read from git, or from the work tree, whose bytes
    git does not hold, when they are that blob)."""
    ch = _change_at(c, d.path)
    if ch is None or ch.old is None or ch.new is None or ch.old_link or ch.new_link:
        return False
    got = git.read_blobs([ch.old, ch.new], c.kb.top)
    old, new = got.get(ch.old), got.get(ch.new)
    if new is None:
        from kb.fileio import read_regular

        try:
            new = read_regular(c.kb.root / ch.path)
        except OSError:
            return False
        if git.object_id("blob", new, ch.new) != ch.new:
            return False
    return old is not None and len(new) > len(old) and new.startswith(old)


def _renumbered_log(c: Change, d: Any, renames: dict[str, str]) -> bool:
    """Whether KB313's diagnostic ``d`` is a log file ``kb sync`` renumbered: the new side
    holds exactly what :func:`kb.merge.renumber.rewrite_trail_log` makes of the old."""
    from kb.merge.renumber import Plan, rewrite_trail_log

    ch = _change_at(c, d.path)
    if ch is None or ch.old is None or ch.new is None or ch.old_link or ch.new_link:
        return False
    old = git.read_blobs([ch.old], c.kb.top).get(ch.old)
    if old is None:
        return False
    want = rewrite_trail_log(old, Plan(ids=renames))
    return want != old and ch.new == git.object_id("blob", want, ch.old)


def _renumbered_record(c: Change, d: Any, renames: dict[str, str]) -> Any:
    """KB310's diagnostic ``d`` turned into the ``info`` of an accepted renumbering when
    the new side holds, in the record's place, exactly what ``kb sync`` makes of it
    (compared on blob ids: the snapshots list no records)."""
    by_path = {x.path: x for x in c.changes}
    ch = by_path.get(d.path)
    if ch is None or ch.old is None or ch.old_link or ch.new_link or d.severity != "error":
        return d
    old = git.read_blobs([ch.old], c.kb.top).get(ch.old)
    moved = renamed_record(d.path, old, renames) if old is not None else None
    if moved is None or not moved.owner:
        return d
    dest = by_path.get(moved.path)
    # the rename kb sync writes: a new file (no record overwritten) holding exactly that
    fresh = dest is not None and (dest.old is None or dest is ch) and not dest.new_link
    if not fresh or dest.new != git.object_id("blob", moved.data, ch.old):
        return d
    what = f"entry {moved.owner}'s new number" if "#" in moved.owner else f"{moved.owner}'s new ID"
    return c.violation(moved.owner, d.path, d.line, "KB310",
                       f"{d.path} was renamed to {moved.path} with {what}")


def _status_word(status: str, kind: str, locale: str) -> str:
    return HYPOTHESIS_STATUS.word(status, locale) if kind == "hypothesis" else status


@history_rule("KB306")
def status_moves(c: Change) -> list:
    """KB306: statuses only move forward (vocab.HYPOTHESIS_MOVES / EXPERIMENT_MOVES);
    a settled proposition or a solved problem stays settled."""
    base = c.lights(c.base, KINDS)
    new = c.lights(c.new, KINDS)
    out = []
    for key, n in new.items():
        b = base.get(key)
        if b is None or b.status == n.status:
            continue
        legal = True
        why = ""
        if n.kind == "hypothesis":
            legal = is_legal_move(HYPOTHESIS_MOVES, b.status, n.status)
            why = "a hypothesis never goes back (被推翻 is final; only 被支持 -> 被推翻 reverses)"
        elif n.kind == "experiment":
            legal = is_legal_move(EXPERIMENT_MOVES, b.status, n.status)
            why = "a finished experiment stays 已完成"
        elif n.kind == "proposition" and b.status in ("已验证·真", "已验证·假"):
            legal, why = False, "a verified proposition stays settled"
        elif n.kind == "problem" and b.status == "已解决":
            legal, why = False, "a solved problem stays 已解决"
        if legal:
            continue
        loc = c.config.locale
        old_w, new_w = _status_word(b.status, n.kind, loc), _status_word(n.status, n.kind, loc)
        hint = (f"or `kb hyp status {n.id} {new_w} --force --reason R`" if n.kind == "hypothesis"
                else override_hint(n.id))
        out.append(c.violation(
            n.id, n.path, n.status_line or n.line, "KB306",
            f"{n.id}: status {old_w} -> {new_w} is not allowed ({why}); restore it {hint}"))
    return out


@history_rule("KB311")
def settled_entries_stay(c: Change) -> list:
    """KB311: an entry a verdict settled (``状态已验`` at 概率 0 or 1) keeps its heading
    (title, probability, status) and its text, and stays: the card's settlement and its
    Verified card rest on it, and `kb verdict` refuses to judge it again.

    The heading is compared on the index's rows. The text -- the entry's body, from its
    heading to the next heading of its level or above, as the card parser reads it -- is
    not stored there: it is read from both versions of the changed cards that hold a
    settled entry (:func:`entry_texts`, one batch read a side) and compared with every
    run of white space made one space, so line endings (``core.autocrlf``), a trailing
    newline or a re-wrapped line are no change. IDs a ``Kb-Renumber:`` renumbered are
    renumbered in the old text first (``kb sync`` rewrites them in prose), and an entry
    one renumbered (``q2#解法1 -> q2#解法3``) is looked for under its new number."""
    # the changed files holding a card (light rows): a tree.md's versions are never read whole
    cards = {o.path for o in c.lights(c.base, ("problem", "proposition")).values()}
    todo = []
    for was in c.paths:
        path = c.now_at(was) if was in cards else None  # (a [paths] move carries a card)
        if path is None:
            continue  # (a card file removed: KB301's)
        before = [r for r in c.base.records(was) if r.kind in ("problem", "proposition")]
        if any(_settled(e) for r in before for e in r.entries or ()):
            todo.append((was, path, before))
    if not todo:
        return []
    old_texts = entry_texts(c.base, [w for w, _p, _ in todo])
    new_texts = entry_texts(c.new, [p for _w, p, _ in todo])
    renames = _renames(c)
    from kb.merge.renumber import entry_renames

    moved = entry_renames(renames)  # (card, kind, number) -> number (kb sync's)
    out = []
    for was_at, path, before in todo:
        after = {r.id: r for r in c.new.records(path)}
        for r in before:
            now = after.get(r.id)
            if now is None:
                continue  # the card itself removed: KB301's
            entries = {(e.kind, e.number): e for e in now.entries or ()}
            for e in r.entries or ():
                if not _settled(e):
                    continue
                n = entries.get((e.kind, moved.get((r.id, e.kind, e.number), e.number)))
                was = f"### {e.kind} {e.number}｜{e.title}｜概率{e.probability:g}｜状态{e.status}"
                if n is None:
                    what, line = f"{r.id}'s settled entry {e.kind} {e.number} was removed", now.line
                else:
                    text = _text_change(old_texts.get(was_at, {}).get((r.id, e.line)),
                                        new_texts.get(path, {}).get((now.id, n.line)), n.line,
                                        renames)
                    if (n.title, n.probability, n.status) != (e.title, e.probability, e.status):
                        what, line = (f"{r.id}'s settled entry {e.kind} {e.number} was changed "
                                      f"(it was '{was}')"), n.line
                        if text is not None:
                            what += " and its text changed"
                    elif text is not None:
                        line, detail = text
                        what = (f"{r.id}: the text of settled entry {e.kind} {e.number} changed "
                                f"({detail})")
                    else:
                        continue
                # (a renumbering renames the card's file, and its IDs are renumbered in
                # the old text first: a Kb-Renumber never accepts a settled entry's change)
                out.append(c.violation(
                    r.id, path, line, "KB311",
                    f"{what}; a verdict settled it and it stays as written — restore it "
                    f"{override_hint(r.id)}", renumbered=False))
    return out


def _settled(e: Any) -> bool:
    """Whether entry ``e`` (a record's) is one a verdict settled: 已验 at 概率 0 or 1."""
    return e.status == "已验" and e.probability in (0, 1)


def entry_texts(side: Any, paths: list[str]) -> dict[str, dict[tuple[str, int], str]]:
    """path -> ``{(card ID, entry line): the entry's text}`` of the cards at ``paths`` in
    snapshot ``side`` (its Facts): the bytes read in one batch (the checkout's when they
    are the blob, else the process's one ``git cat-file``) and parsed as the index parses
    them, which stores no entry text."""
    from kb.parse import parse_file

    out: dict[str, dict[tuple[str, int], str]] = {}
    for path, data in side.read_many(paths).items():
        res = parse_file(path, data, side.config, side.formats.get(path))
        out[path] = {(o.id, e.line): e.text for o in res.objects
                     for e in getattr(o, "entries", ()) or ()}
    return out


def entry_text(side: Any, path: str, oid: str, line: int) -> Optional[str]:
    """The text of the entry at ``line`` of card ``oid`` at ``path`` in snapshot ``side``,
    every run of white space made one space, as KB311 compares it (None: not read). A
    merge's KB311 finding is judged on it with the heading (:mod:`kb.checks.judge`)."""
    text = entry_texts(side, [path]).get(path, {}).get((oid, line))
    return None if text is None else _norm(text)


def _renumbered(text: str, renames: dict[str, str]) -> str:
    """``text`` with the IDs of ``Kb-Renumber:`` trailers renumbered, as ``kb sync`` does."""
    from kb.merge.renumber import Plan, rewrite_text

    return rewrite_text(text, Plan(ids=dict(renames)))


def _text_change(old: Optional[str], new: Optional[str], head: int,
                 renames: dict[str, str]) -> Optional[tuple[int, str]]:
    """None when an entry's text ``old`` reads as ``new`` (white space aside; either
    unread: None, nothing to compare), else (the 1-based line of the first difference in
    the new file, what it is). ``head`` is the new heading's line: text line ``k`` is
    file line ``head + 1 + k``."""
    if old is None or new is None:
        return None
    if renames:
        old = _renumbered(old, renames)
    if _norm(old) == _norm(new):
        return None
    a = [x for x in (_norm(t) for t in old.split("\n")) if x]
    b = [(k, x) for k, x in ((k, _norm(t)) for k, t in enumerate(new.split("\n"))) if x]
    for i, (k, x) in enumerate(b):
        if i >= len(a):
            return head + 1 + k, f"line {head + 1 + k} was added: {_short(x)!r}"
        if a[i] != x:
            was, now = _apart(a[i], x)
            return head + 1 + k, f"line {head + 1 + k} was {was!r}, now {now!r}"
    lost = a[len(b)]
    at = head + 1 + b[-1][0] if b else head
    return at, f"{_short(lost)!r} was removed after line {at}"


@history_rule("KB308")
def results_stay(c: Change) -> list:
    """KB308: an experiment's recorded result is never rewritten: its ``## 结果`` section
    through the ``**结论**`` line and the lines continuing it
    (:func:`kb.parse.experiment.recorded_result`) -- the data, the conclusion and its
    reason, as ``kb exp result`` writes them.

    The conclusion is the evidence a hypothesis's status rests on (Evidence is
    append-only); ``kb exp result`` never rewrites one either. A note written after the
    result (a paragraph or anchor of its own), ``## 影响``, the log and the design stay
    free. The text is read from both versions of the changed experiment files that held
    a result (one batch read a side; the index stores only the conclusion's word) and
    compared part by part (:func:`kb.parse.experiment.result_parts`) with every run of
    white space made one space: line endings and a trailing newline are no change. IDs
    a ``Kb-Renumber:`` renumbered are renumbered in the old text first.
    """
    from kb.parse.experiment import recorded_result, result_parts

    base = c.lights(c.base, ("experiment",))
    todo = []
    # each file with where it is now (a [paths] move of the experiments carries it)
    for was, path in sorted((p, q) for p in {b.path for b in base.values()}
                            if (q := c.now_at(p)) is not None):
        recorded = {r.id: r for r in c.base.records(was) if r.kind == "experiment" and r.conclusion}
        if not recorded:
            continue
        for n in c.new.records(path):
            b = recorded.get(n.id)
            if n.kind == "experiment" and b is not None:
                todo.append((was, path, b, n))
    if not todo:
        return []
    old = c.base.read_many(sorted({w for w, _p, _b, _n in todo}))
    new = c.new.read_many(sorted({p for _w, p, _b, _n in todo}))
    renames = _renames(c)
    out = []
    for was, path, b, n in todo:
        was_rows = recorded_result(old.get(was, b""), was, b.conclusion_line)
        if renames:
            was_rows = [(ln, _renumbered(t, renames)) for ln, t in was_rows]
        now_rows = recorded_result(new.get(path, b""), path, n.conclusion_line) \
            if n.conclusion_line else []
        if was_rows:
            changed = _result_changes(result_parts(was_rows), result_parts(now_rows), b, n)
        else:  # the old text unread: its conclusion's word is what is known
            changed = [] if n.conclusion == b.conclusion else [(
                f"its recorded conclusion {b.conclusion} became {n.conclusion or '(none)'}", 0)]
        if not changed:
            continue
        line = next((ln for _w, ln in changed if ln), 0) or n.conclusion_line or n.line
        out.append(c.violation(
            n.id, path, line, "KB308",
            f"{n.id}: {', '.join(w for w, _ln in changed)}; a recorded result stays — restore "
            f"it and record a new experiment {override_hint(n.id)}"))
    return out


def recorded_parts(side: Any, path: str, oid: str) -> Optional[tuple[tuple[str, str], ...]]:
    """The result experiment ``oid`` at ``path`` recorded in snapshot ``side``, as KB308
    compares it (:func:`kb.parse.experiment.result_parts`, without the lines), or None when
    it records none. A merge's KB308 finding is judged on it (:mod:`kb.checks.judge`)."""
    from kb.parse.experiment import recorded_result, result_parts

    if path not in side.files:
        return None
    r = next((r for r in side.records(path) if r.id == oid and r.kind == "experiment"), None)
    if r is None or not r.conclusion:
        return None
    rows = recorded_result(side.read(path) or b"", path, r.conclusion_line)
    return tuple((k, t) for k, t, _ln in result_parts(rows)) or None


#: The name a recorded result's part goes by in KB308's message (another anchor: its key).
_PART = {"数据": "data", "reason": "reason", "": "text"}


def _result_changes(was: list[tuple[str, str, int]], now: list[tuple[str, str, int]], b: Any,
                    n: Any) -> list[tuple[str, int]]:
    """What differs between two recorded results (:func:`kb.parse.experiment.result_parts`),
    the conclusion first: (phrase, its line in the new file or 0)."""
    old = {k: (t, ln) for k, t, ln in was}
    new = {k: (t, ln) for k, t, ln in now}
    if [(k, t) for k, t, _ in was] == [(k, t) for k, t, _ in now]:
        return []
    out = []
    keys = list(dict.fromkeys([*old, *new]))
    for k in sorted(keys, key=lambda k: k != "结论"):
        a, z = old.get(k), new.get(k)
        if a is not None and z is not None and a[0] == z[0]:
            continue
        at = z[1] if z is not None else 0
        if k == "结论":
            out.append((f"its recorded conclusion {b.conclusion} became {n.conclusion or '(none)'}",
                        at))
            continue
        name = _PART.get(k, k)
        what = "the text of its recorded result" if k == "" else f"its recorded {name}"
        if a is None:
            out.append((f"{what} was added ({_short(z[0], 50)!r})", at))
        elif z is None or not z[0]:
            out.append((f"{what} was removed (it was {_short(a[0], 50)!r})", at))
        else:
            was, now = _apart(a[0], z[0])
            out.append((f"{what} changed (was {was!r}, now {now!r})", at))
    return out or [("its recorded result was reordered", 0)]


_NUM = re.compile(r"^(.*?)(\d+)$")


def _highest_siblings(hyps: list[Light], parents: set[Optional[str]]
                      ) -> dict[tuple[Optional[str], str], tuple[int, str]]:
    """``(parent ID or None, name before the number) -> (number, ID)``: the highest
    numbered of each family of sibling hypotheses in ``hyps`` whose parent is in
    ``parents`` (``H3.2`` is ``("H3", "")`` number 2; ties of the number go to the
    greater ID, as ``max`` of the pairs). One pass for every new ID of a change."""
    out: dict[tuple[Optional[str], str], tuple[int, str]] = {}
    for h in hyps:
        parent, dot, last = h.id.rpartition(".")
        key_parent = parent if dot else None
        if key_parent not in parents:
            continue
        m = _NUM.match(last)
        if m is None:
            continue
        key = (key_parent, m.group(1))
        num = small_int(m.group(2))
        if num is None:
            continue  # too long to be an ID number (KB201): kb numbers none after it
        mine = (num, h.id)
        if key not in out or mine > out[key]:
            out[key] = mine
    return out


def _taken(c: Change, tree: str) -> dict[str, set[str]]:
    """Every hypothesis and experiment ID a side of the change or the range's origin
    declares: what a suggested ID must stay clear of (as ``kb sync``'s renumbering)."""
    out: dict[str, set[str]] = {"hypothesis": set(), "experiment": set()}
    for side in (c.base, c.new, c.origin):
        if side is None:
            continue
        if tree in side.files:
            out["hypothesis"].update(h.id for h in side.light(tree) if h.kind == "hypothesis")
        out["experiment"] |= side.kind_ids("experiment")
    return out


@history_rule("KB307")
def ids_never_reused(c: Change) -> list:
    """KB307: a new ID is above every ID that existed before it (never reused), and is
    none that the range's origin held or an earlier commit of the range removed."""
    base = c.lights(c.base, KINDS)
    new = c.lights(c.new, KINDS)
    fresh = [n for key, n in new.items() if key not in base and not c.base.find(n.id, _kinds_of(n.ns))]
    if fresh:
        # a record whose folder kb.toml moved with it is the same record, not a new ID
        carried = moved_records(c).carried
        fresh = [n for n in fresh if (n.ns, n.id) not in carried]
    if not fresh:
        return []
    out = []
    tree = c.config.paths["tree"]
    highest: Optional[dict[tuple[Optional[str], str], tuple[int, str]]] = None
    exp_max: Optional[int] = None
    taken: Optional[dict[str, set[str]]] = None  # declared IDs, and those suggested here
    for n in fresh:
        was = c.removed_before.get((n.ns, n.id))
        if was is None and c.origin is not None and c.origin.find(n.id, _kinds_of(n.ns)):
            was = c.origin.label
        if was is not None:
            out.append(c.violation(
                n.id, n.path, n.line, "KB307",
                f"{n.id} existed before (in {was}) and was removed; IDs are never "
                "reused — give this one the next free ID"))
            continue
        if n.kind == "hypothesis":
            if highest is None:
                parents = {p if dot else None for x in fresh if x.kind == "hypothesis"
                           for p, dot, _ in [x.id.rpartition(".")]}
                highest = _highest_siblings(c.base.light(tree) if tree in c.base.files else [],
                                            parents)
            parent, dot, last = n.id.rpartition(".")
            m = _NUM.match(last)
            if m is None:
                continue
            top = highest.get((parent if dot else None, m.group(1)))
            num = small_int(m.group(2))
            if num is None:
                continue  # too long to be an ID number: KB201 says so
            if top is not None and num <= top[0]:
                top_id = top[1]
                if taken is None:
                    taken = _taken(c, tree)
                nxt = next_child(parent if dot else None, taken["hypothesis"], n.id)
                taken["hypothesis"].add(nxt)
                out.append(c.violation(
                    n.id, n.path, n.line, "KB307",
                    f"{n.id} is new but not above {top_id}, which existed before; IDs are never "
                    f"reused — use {nxt}"))
        elif n.kind == "experiment":
            m = re.fullmatch(r"E(\d+)", n.id)
            num = small_int(m.group(1)) if m else None
            if num is None:
                continue  # not kb-numbered, or too long to be an ID number
            if exp_max is None:
                nums = [small_int(x[1:]) for x in c.base.kind_ids("experiment") if re.fullmatch(r"E\d+", x)]
                exp_max = max((x for x in nums if x is not None), default=0)
            if num <= exp_max:
                width = max(3, len(m.group(1)))
                if taken is None:
                    taken = _taken(c, tree)
                nxt = next_experiment(taken["experiment"], n.id)
                taken["experiment"].add(nxt)
                out.append(c.violation(
                    n.id, n.path, n.line, "KB307",
                    f"experiment {n.id} is new but not above E{exp_max:0{width}d}, the highest "
                    f"experiment ID that existed before; IDs are never reused — use {nxt}"))
    return out


def removed_ids(c: Change) -> dict[tuple[str, str], str]:
    """The ``(namespace, id)`` of every object of :data:`KINDS` the change removes (declared
    in its base, declared nowhere in its new side), mapped to the base's label: what a
    range remembers for KB307 in the commits that descend from this one."""
    base, new = c.lights(c.base, KINDS), c.lights(c.new, KINDS)
    out = {key: c.base.label for key, n in base.items()
           if key not in new and not c.new.find(n.id, _kinds_of(n.ns))}
    # a record a [paths] move stopped reading is gone as a deleted one is (KB301 said so)
    out.update({(NAMESPACE[u.kind], u.id): c.base.label for u in moved_records(c).unread})
    return out


#: Severity order: a move to the right weakens a rule.
_STRENGTH = {"error": 3, "warning": 2, "info": 1, "off": 0}


def _as_written(value: str | tuple[str, ...]) -> str:
    """A kb.toml regex (``H\\d+``) or list of separators as the user wrote it, in backticks."""
    if isinstance(value, str):
        return f"`{value}`"
    return "[" + ", ".join(f"`{v}`" for v in value) + "]"


def _accept(name: str) -> str:
    return f"accept it with Kb-Override: {name} <reason>: {_WHERE}"


@history_rule("KB309")
def rules_weakened(c: Change) -> list:
    """KB309: the change weakens a rule (``[rules] disable``, a lower severity),
    moves a path of the record (``[paths]``) or changes how the record is read
    (``[kb] id_grammar``, ``heading_separators``) in kb.toml. The change is
    judged by its base's configuration anyway; the weakening itself needs a
    ``Kb-Override:`` naming the rule code (``KB304``) or the path key
    (``paths.verified``) to pass."""
    from kb.checks.catalogue import BY_CODE

    old, new = c.config, c.new_config
    if old is None or new is None or old is new:
        return []
    out = []
    # A code kb does not have weakens nothing: KB001 names it (kb.checks.config_rules).
    for code in sorted((set(new.disabled_rules) - set(old.disabled_rules)) & BY_CODE.keys()):
        line = new.code_line(code) or new.line_of("rules", "disable")
        out.append(c.violation(code, "kb.toml", line, "KB309",
                               f"kb.toml disables {code}; a change may not switch off a rule that "
                               f"judges the record ({_accept(code)})"))
    for code in sorted((set(new.severity) | set(old.severity)) & BY_CODE.keys()):
        default = BY_CODE[code].severity
        was = old.severity.get(code, "off" if code in old.disabled_rules else default)
        now = new.severity.get(code, "off" if code in new.disabled_rules else default)
        if code in new.disabled_rules and code not in old.disabled_rules:
            continue  # reported above
        if _STRENGTH.get(now, 3) < _STRENGTH.get(was, 3):
            out.append(c.violation(code, "kb.toml", new.severity_line(code), "KB309",
                                   f"kb.toml lowers {code} from {was} to {now}; a change may not "
                                   f"weaken a rule that judges the record ({_accept(code)})"))
    for key in sorted(set(old.paths) | set(new.paths)):
        if old.paths.get(key) != new.paths.get(key):
            out.append(c.violation(f"paths.{key}", "kb.toml", new.line_of("paths", key), "KB309",
                                   f"kb.toml moves paths.{key} from {old.paths.get(key)!r} to "
                                   f"{new.paths.get(key)!r}; moving a path of the record needs "
                                   f"Kb-Override: paths.{key} <reason> ({_WHERE})"))
    # how the record is read: another ID grammar or separator can unread every hypothesis
    for key, was, now in (("id_grammar", old.id_grammar if old.custom_grammar else None,
                           new.id_grammar if new.custom_grammar else None),
                          ("heading_separators", tuple(old.heading_separators),
                           tuple(new.heading_separators))):
        if was != now:
            # None: no grammar set, kb reads its default one (named so, not "None"); a regex
            # or separator as kb.toml writes it, in backticks (repr would double `H\d+`'s `\`)
            was_s, now_s = ("kb's default" if v is None else _as_written(v) for v in (was, now))
            out.append(c.violation(f"kb.{key}", "kb.toml", new.line_of("kb", key), "KB309",
                                   f"kb.toml changes [kb] {key} from {was_s} to {now_s}: how "
                                   "kb reads the record changes with it (declarations may no "
                                   f"longer be read); it needs Kb-Override: kb.{key} <reason> ({_WHERE})"))
    return out
