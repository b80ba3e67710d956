"""Lock status and pruning (``kb lock status``, ``kb lock prune``; DESIGN.md §5).

:func:`status` explains every lock (holder, lease left, grace, whether the file
changed since the claim) and an interrupted release; :func:`prune` deletes the
expired locks. Both read the remote's locks first when given one: an unknown
remote raises :class:`kb.errors.UsageError`, a remote that fails or stays silent
past ``KB_GIT_TIMEOUT`` :class:`kb.errors.GitError`.
"""

from __future__ import annotations

from pathlib import Path

from kb import git
from kb.errors import GitError
from kb.locks import (
    PROJECT_REF, Lock, Settings, check_remote, clock, fetch_locks, fetched_ref, push, read_locks,
    ref_transaction, worktree_blob,
)
from kb.ops.git_state import head_entries, read_interrupted
from kb.ops.lock_common import LockState, StatusReport, lock_settings
from kb.repo import KnowledgeBase


def _state(top: Path, lk: Lock, now: int, grace: int,
           head_blobs: dict[str, str | None]) -> LockState:
    left = lk.remaining(now)
    expired = lk.expired(now, grace)
    in_grace = left < 0 and not expired
    notes: list[str] = []
    modified = uncommitted = None
    if lk.scope == "file" and lk.path:
        wt = worktree_blob(top, lk.path)
        modified = wt != lk.blob
        uncommitted = wt != head_blobs.get(lk.path)
    if not lk.readable:
        notes.append("unreadable lock commit: `kb lock prune` or `kb lock steal` frees it")
    elif expired:
        notes.append("expired: a claim takes it over, `kb lock prune` deletes it")
    elif in_grace:
        notes.append(f"lease over; others may take it over after the {grace}s grace margin")
    if uncommitted:
        notes.append("uncommitted edits in the working tree: the holder's `kb lock release` "
                     "commits them")
    return LockState(lk, expired, in_grace, left, modified, notes)


def _fresh(kb: KnowledgeBase, remote: str | None) -> tuple[Path, Settings, int]:
    """The work tree's top, the lock settings and the time, with ``remote``'s locks
    fetched first (pruned: a deleted remote lock is gone here too)."""
    top = kb.top
    if remote:
        check_remote(top, remote)
        fetch_locks(top, remote)
    return top, lock_settings(kb), clock()


def status(kb: KnowledgeBase, remote: str | None = None) -> StatusReport:
    """Every lock (with ``remote``: the remote's, fetched fresh with pruning), explained
    at the current time (:func:`kb.locks.clock`), as a :class:`StatusReport`. A remote
    that cannot be read (down, silent past ``KB_GIT_TIMEOUT``) gives its locks as last
    fetched, ``stale`` saying why: status is what a user asks for when writes are refused.
    An unknown remote raises :class:`kb.errors.UsageError` (checked before the fetch)."""
    stale = None
    try:
        top, s, now = _fresh(kb, remote)
    except GitError as e:
        stale = " ".join(str(e).split())  # git's lines as one
        top, s, now = kb.top, lock_settings(kb), clock()
    locks = read_locks(top, remote=remote)
    files = sorted((lk for lk in locks.values() if lk.ref != PROJECT_REF),
                   key=lambda lk: (lk.path or "", lk.ref))
    proj = locks.get(PROJECT_REF)
    interrupted = read_interrupted(top)
    paths = [lk.path for lk in files if lk.path]
    head = git.rev_parse("HEAD", top) if paths else None
    head_blobs = {p: e[1] for p, e in head_entries(top, head, paths).items()} if head else {}
    return StatusReport(now=now, grace=s.grace,
                        locks=[_state(top, lk, now, s.grace, head_blobs) for lk in files],
                        project=_state(top, proj, now, s.grace, head_blobs) if proj else None,
                        interrupted=interrupted, remote=remote, stale=stale)


def prune(kb: KnowledgeBase, remote: str | None = None) -> list[Lock]:
    """Delete every expired lock (grace included), each with a compare-and-swap;
    returns the locks deleted (one that changed meanwhile is kept)."""
    top, s, now = _fresh(kb, remote)
    expired = [lk for lk in read_locks(top, remote=remote).values() if lk.expired(now, s.grace)]
    done: list[Lock] = []
    if not expired:
        return done
    if remote:
        res = push(top, remote, [f":{lk.ref}" for lk in expired],
                   {lk.ref: lk.commit for lk in expired}, atomic=False)
        for lk in expired:
            if lk.ref in res.refs and res.refs[lk.ref][0] != "!":
                ref_transaction(top, [("delete", fetched_ref(lk.ref, remote), None)],
                                f"kb lock prune (copy of {remote}'s)")
                done.append(lk)
        return done
    for lk in expired:
        ok, _ = ref_transaction(top, [("delete", lk.ref, lk.commit)], "kb lock prune")
        if ok:
            done.append(lk)
    return done




__all__ = ["status", "prune"]
