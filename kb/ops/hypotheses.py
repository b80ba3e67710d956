"""Hypotheses: add one, move its status, correct its statement, append evidence
(``kb hyp add|status|edit|evidence``; seed hypothesis-tree.md; DESIGN.md §2.1, §3, §4)::

    from kb.ops.hypotheses import add_hypothesis
    res = add_hypothesis(kb, "Disk reads dominate loading time", parent="H1")
    res.id, res.changes, res.commit        # 'H1.3', ['added H1.3 …'], '9f2c…'

Every operation is one :class:`kb.ops.session.Session` (one transaction, one
commit with ``Kb-Op`` / ``Kb-Id`` / ``Kb-Override`` trailers) and returns an
:class:`kb.ops.result.OpResult`. Bad arguments raise :class:`kb.errors.UsageError`
(exit 2); a refused move or edit :class:`kb.errors.RefusedError` (exit 1); an
unknown hypothesis or experiment :class:`kb.errors.NotFoundError`; a stale
``expect`` :class:`kb.errors.StaleError`; a busy write lock
:class:`kb.errors.LockedError`. Nothing is written then. IDs come from
:mod:`kb.ops.history`, edits are splices (:mod:`kb.ops.tree_edit`).
"""

from __future__ import annotations

from typing import Any, Iterable

from kb.errors import RefusedError, UsageError
from kb.model import Hypothesis
from kb.ops.dashboard import stage_dashboard
from kb.ops.experiment_edit import find_experiment
from kb.ops.history import ids_in_headings, next_hypothesis_id
from kb.ops.result import OpResult
from kb.ops.session import OnWait, Session, expect_map, short
from kb.parse.tree import read_declaration, written_separator
from kb.render.tree import hypothesis_block, id_depth, set_statement
from kb.text import control_char, one_line
from kb.vocab import HYPOTHESIS_MOVES, HYPOTHESIS_STATUS, is_legal_move


def _writable_separator(config: Any, hid: str) -> str:
    """The separator kb writes after ``hid`` in a new heading (the KB's own, so that a KB
    whose ``[kb] heading_separators`` leaves out ``:`` reads it). Raises RefusedError naming
    the setting when such a heading does not read back whatever its statement (a line
    break or another control character in the separator, a grammar that then reads another
    ID): the statement is not the cause."""
    seps = tuple(config.heading_separators)
    sep = written_separator(seps)
    bad = control_char(sep)
    if bad is None and read_declaration(f"{hid}{sep} statement", config.recognise_grammar,
                                        seps) == (hid, "statement"):
        return sep
    why = (f"the separator kb would write after {hid}, {sep!r}, holds {bad}, which no heading "
           "line can hold" if bad else
           f"kb would write the heading `{'#' * (1 + id_depth(hid))} {hid}{sep} <statement>` (the "
           f"separator `{sep}`), which does not read back as {hid} with the KB's ID grammar")
    raise RefusedError(f"kb.toml's [kb] heading_separators: {why}; add `:` to the separators (kb "
                       "writes `:` whenever the KB reads it) or list first one that can follow an "
                       "ID; nothing was written")


def canonical_status(word: str) -> str:
    """Canonical (zh) hypothesis status for a word of either language, else refuse.

    Raises UsageError for an unknown status word.
    """
    canon = HYPOTHESIS_STATUS.canonical(word or "")
    if canon is None:
        raise UsageError(f"unknown hypothesis status {word!r}; accepted: "
                           f"{HYPOTHESIS_STATUS.accepted()}")
    return canon


MAX_LEVEL = 6  # `######`: deeper headings are not Markdown headings


def add_hypothesis(kb: Any, statement: str, parent: str | None = None, *, no_commit: bool = False,
                   owner: str | None = None, expect: Any = None,
                   on_wait: OnWait | None = None, prose: Iterable[str] = (),
                   trailers: Iterable[tuple[str, str]] = ()) -> OpResult:
    """Add a hypothesis (Status 待验, Evidence (empty)) at the top level or under ``parent``.

    The ID is allocated under the write lock (top level ``H<max+1>``, child
    ``<parent>.<max+1>``, never one used before). A child goes at the end of
    its parent's section (after its last descendant), a top-level hypothesis
    at the end of the file; the parent's ``Children:`` line is updated (added
    after ``Evidence:`` when absent). Refuses an empty or multi-line
    statement and an unknown parent.

    ``prose``: paragraph lines written after a blank line below the anchors
    (``kb gen adopt`` records a generated hypothesis's provenance there);
    ``trailers``: extra ``(key, value)`` commit trailers.

    Raises NotFoundError for an unknown parent, RefusedError when the heading would be too deep
    or the statement cannot be a heading; every write also raises LockedError (another owner's
    lock), StaleError (``expect`` no longer matches), ConflictError (the file is dirty or HEAD
    moved) and EnvironmentError_ (git failed, the work tree is not writable); nothing is written
    then.
    """
    statement = one_line(statement, "the statement")
    prose = [one_line(p, "a prose line") for p in prose]
    with Session(kb, "hyp.add", no_commit=no_commit, owner=owner, on_wait=on_wait) as s:
        k = s.kb
        s.tx.trailers.extend((one_line(a, "a trailer key"), one_line(b, "a trailer value"))
                             for a, b in trailers)
        tree = s.tree()
        s.tx.expect = expect_map(k, expect, tree.rel)
        ph = tree.find(parent) if parent is not None else None
        history, _ = s.history()
        hid = next_hypothesis_id(k, tree.ids() | ids_in_headings(tree.doc.lines), ph.id if ph else None,
                                 history)
        depth = hid.count(".") + 1
        if 1 + depth > MAX_LEVEL:
            raise RefusedError(f"{hid} would need a level-{1 + depth} heading; Markdown headings stop "
                               f"at ######, so {ph.id if ph else hid} cannot have children")
        sep = _writable_separator(k.config, hid)
        node = Hypothesis(id=hid, path=tree.rel, line=0, statement=statement, status="待验",
                          level=1 + depth, parent=ph.id if ph else None)
        block = hypothesis_block(node, s.locale, sep) + ([""] + prose if prose else [])
        n_lines = len(tree.doc.lines)
        at = (ph.end_line + 1) if ph else n_lines + 1
        prev_blank = at == 1 or not tree.doc.lines[at - 2].strip()
        lines = ([] if prev_blank else [""]) + block
        if at <= n_lines and tree.doc.lines[at - 1].strip():
            lines.append("")
        if ph:  # first: an inserted Children line may sit at the same place as the block
            tree.append_child(ph, hid)
        tree.splice(at, 0, lines)
        s.tx.ids.append(hid)
        s.tx.summary = f"hyp add {hid}: {short(statement)}"
        tree.finish()
        got = tree.new_hypothesis(hid)
        if got is None or got.statement != statement or got.parent != node.parent:
            raise RefusedError(f"the statement cannot be written as a heading of tree.md "
                               f"({statement!r} does not read back as {hid}); nothing was written")
        dash = stage_dashboard(s)
        word = HYPOTHESIS_STATUS.word("待验", s.locale)
        changes = [f"added {hid} to {k.prefix}{tree.rel} (Status: {word}"
                   + (f", Parent: {ph.id})" if ph else ")")]
        if ph:
            kids = ph.children if hid in ph.children else (*ph.children, hid)
            changes.append(f"{ph.id} Children: {', '.join(kids)}")
        if dash:
            changes.append(f"refreshed {k.prefix}{dash}")
        details = {"statement": statement, "status": word, "parent": ph.id if ph else None,
                   "line": got.line, "path": k.prefix + tree.rel}
    return s.result("hyp.add", hid, changes, details)


def set_status(kb: Any, hid: str, status: str, force: bool = False, reason: str | None = None, *,
               no_commit: bool = False, owner: str | None = None, expect: Any = None,
               on_wait: OnWait | None = None) -> OpResult:
    """Move ``hid`` to ``status`` (either language).

    Moves outside :data:`kb.vocab.HYPOTHESIS_MOVES` need ``force`` and a
    ``reason`` (recorded as ``Kb-Override: <hid> <reason>``). 被支持 / 被推翻
    need evidence. Moving to the status it has is a no-op.

    Raises UsageError for an unknown status or ``force`` without ``reason``, NotFoundError for
    an unknown ID, RefusedError for a move the rules forbid; every write also raises LockedError
    (another owner's lock), StaleError (``expect`` no longer matches), ConflictError (the file
    is dirty or HEAD moved) and EnvironmentError_ (git failed, the work tree is not writable);
    nothing is written then.
    """
    canon = canonical_status(status)
    if force:
        if reason is None or not str(reason).strip():
            raise UsageError("--force needs --reason (it is recorded in the Kb-Override trailer)")
        reason = one_line(reason, "the reason")
    overrides = [(hid.strip(), reason)] if force and reason else []
    with Session(kb, "hyp.status", no_commit=no_commit, owner=owner, on_wait=on_wait,
                 overrides=overrides) as s:
        tree = s.tree()
        s.tx.expect = expect_map(s.kb, expect, tree.rel)
        h = tree.find(hid)
        if overrides:
            s.tx.overrides[:] = [(h.id, reason)]  # type: ignore[list-item]
        old_word = HYPOTHESIS_STATUS.word(h.status, s.locale)
        new_word = HYPOTHESIS_STATUS.word(canon, s.locale)
        if h.status == canon:
            return s.result("hyp.status", h.id, [f"{h.id} is already {new_word} (nothing to do)"],
                            {"status": new_word, "previous": old_word})
        if not force and not is_legal_move(HYPOTHESIS_MOVES, h.status, canon):
            allowed = sorted(HYPOTHESIS_MOVES.get(h.status, ()), key=list(HYPOTHESIS_MOVES).index)
            raise RefusedError(
                f"{h.id}: {old_word} → {new_word} is not an allowed status move (from {old_word}: "
                f"{', '.join(HYPOTHESIS_STATUS.word(w, s.locale) for w in allowed) or 'none'}); "
                "to correct a mistake use --force --reason R")
        if canon in ("被支持", "被推翻") and not h.evidence:
            raise RefusedError(f"{h.id} has no Evidence, and {new_word} needs at least one experiment "
                               f"(`kb exp result`, or `kb hyp evidence {h.id} Exxx` first)")
        tree.set_status(h, canon)
        s.tx.ids.append(h.id)
        s.tx.summary = f"hyp status {h.id}: {old_word} → {new_word}"
        tree.finish()
        dash = stage_dashboard(s)
        changes = [f"{h.id} → {new_word}" + (" (override: " + str(reason) + ")" if overrides else "")]
        if dash:
            changes.append(f"refreshed {s.kb.prefix}{dash}")
    return s.result("hyp.status", h.id, changes,
                    {"status": new_word, "previous": old_word, "forced": bool(overrides)})


def edit_statement(kb: Any, hid: str, statement: str, reason: str, *, no_commit: bool = False,
                   owner: str | None = None, expect: Any = None,
                   on_wait: OnWait | None = None) -> OpResult:
    """Correct the statement of ``hid``; the ``reason`` goes into ``Kb-Override``.

    Raises UsageError without ``reason``, NotFoundError for an unknown ID, RefusedError when the
    statement cannot be a heading; every write also raises LockedError (another owner's lock),
    StaleError (``expect`` no longer matches), ConflictError (the file is dirty or HEAD moved)
    and EnvironmentError_ (git failed, the work tree is not writable); nothing is written then.
    """
    statement = one_line(statement, "the statement")
    if reason is None or not str(reason).strip():
        raise UsageError("editing a statement needs --reason (it is recorded in the Kb-Override trailer)")
    reason = one_line(reason, "the reason")
    with Session(kb, "hyp.edit", no_commit=no_commit, owner=owner, on_wait=on_wait,
                 overrides=[(hid.strip(), reason)]) as s:
        tree = s.tree()
        s.tx.expect = expect_map(s.kb, expect, tree.rel)
        h = tree.find(hid)
        s.tx.overrides[:] = [(h.id, reason)]
        if h.statement == statement:
            return s.result("hyp.edit", h.id, [f"{h.id} already reads so (nothing to do)"],
                            {"statement": statement})
        tree.splice(h.line, 1, [set_statement(tree.line(h.line), h.id, statement,
                                              tuple(s.kb.config.heading_separators))])
        s.tx.ids.append(h.id)
        s.tx.summary = f"hyp edit {h.id}: {short(statement)}"
        tree.finish()
        got = tree.new_hypothesis(h.id)
        if got is None or got.statement != statement:
            raise RefusedError(f"the statement cannot be written as a heading of tree.md "
                               f"({statement!r} does not read back); nothing was written")
        dash = stage_dashboard(s)
        changes = [f"{h.id}: {statement} (override: {reason})"]
        if dash:
            changes.append(f"refreshed {s.kb.prefix}{dash}")
    return s.result("hyp.edit", h.id, changes, {"statement": statement, "previous": h.statement})


def add_evidence(kb: Any, hid: str, eid: str, *, no_commit: bool = False, owner: str | None = None,
                 expect: Any = None, on_wait: OnWait | None = None) -> OpResult:
    """Append experiment ``eid`` (which must exist) to the Evidence of ``hid`` (append only).

    Returns the write's ``OpResult``. Raises NotFoundError for an unknown hypothesis or
    experiment; every write also raises LockedError (another owner's lock), StaleError
    (``expect`` no longer matches), ConflictError (the file is dirty or HEAD moved) and
    EnvironmentError_ (git failed, the work tree is not writable); nothing is written then.
    """
    with Session(kb, "hyp.evidence", no_commit=no_commit, owner=owner, on_wait=on_wait) as s:
        tree = s.tree()
        s.tx.expect = expect_map(s.kb, expect, tree.rel)
        h = tree.find(hid)
        row = find_experiment(s, eid)
        if row.id in h.evidence:
            return s.result("hyp.evidence", h.id,
                            [f"{row.id} is already in the Evidence of {h.id} (nothing to do)"],
                            {"evidence": list(h.evidence)})
        tree.append_evidence(h, row.id)
        evidence = [*h.evidence, row.id]
        s.tx.ids += [h.id, row.id]
        s.tx.summary = f"hyp evidence {h.id} += {row.id}"
        tree.finish()
        dash = stage_dashboard(s)
        changes = [f"{h.id} Evidence: {', '.join(evidence)}"]
        if dash:
            changes.append(f"refreshed {s.kb.prefix}{dash}")
    return s.result("hyp.evidence", h.id, changes, {"evidence": evidence})



__all__ = ["add_hypothesis", "set_status", "edit_statement", "add_evidence", "canonical_status",
           "MAX_LEVEL"]
