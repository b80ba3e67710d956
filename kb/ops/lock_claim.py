"""Claim, renew and steal file locks; take and give back the project lock (``kb lock``,
``kb project lock|unlock``; DESIGN.md §5).

Claims, renewals and steals never touch the index or the working tree: they
make a lock commit and compare-and-swap one ref per path (all the paths of
one command in one ref transaction, or one ``git push --atomic``), so they
need no machine-wide lock. Each returns an :class:`kb.ops.lock_common.AcquireResult`
(``project_unlock`` a :class:`kb.ops.lock_common.ReleaseResult`). A lock held by
someone else raises :class:`kb.locks.LockHeld` (exit 1, kind ``locked``),
renewing a free one :class:`kb.locks.NotLocked`, losing every compare-and-swap
try :class:`kb.errors.ConflictError`, a bad TTL or owner :class:`kb.errors.UsageError`.
"""

from __future__ import annotations

import os
from pathlib import Path

from kb import git
from kb.chars import HIDDEN_CHARS
from kb.errors import ConflictError, UsageError
from kb.locks import (
    PROJECT_REF, Lock, LockHeld, NotLocked, Settings, check_remote, clock, fetch_locks,
    fetched_ref, lock_message, make_lock_commit, push, read_locks, ref_transaction, resolve_owner,
    validate_text, worktree_blob,
)
from kb.ops.git_state import current_branch
from kb.ops.lock_common import (
    ATTEMPTS, PROJECT_TARGET, Acquired, AcquireResult, LockTarget, ReleaseResult, file_targets,
    lease_seconds, lock_settings, refuse_held,
)
from kb.repo import KnowledgeBase


def _decide(mode: str, t: LockTarget, cur: Lock | None, owner: str, s: Settings, now: int,
            ) -> tuple[str, Lock | None]:
    """What to do with one target: ``new`` / ``expired`` / ``renewed`` / ``stolen``.
    Raises the refusal."""
    if cur is None:
        if mode == "renew":
            raise NotLocked(f"{t.path or 'the project lock'} is not locked; nothing to renew "
                            "(claim it instead)")
        return "new", None
    if cur.owner == owner and cur.readable:
        return "renewed", cur
    if mode == "renew":
        raise LockHeld(f"{cur.label} is locked by {cur.describe(now, s.grace)}, not by {owner}; "
                       "only the holder renews", cur)
    if cur.expired(now, s.grace):
        return ("stolen" if mode == "steal" else "expired"), cur
    if mode == "steal":
        if owner in s.leads:
            return "stolen", cur
        raise LockHeld(f"{cur.label} is locked by {cur.describe(now, s.grace)}; stealing needs "
                       "the lease to be over (grace included) or an owner listed in [locks] leads "
                       "of kb.toml — nothing was changed", cur)
    raise refuse_held(cur, now, s.grace)


def _acquire(kb: KnowledgeBase, targets: list[LockTarget], owner: str, mode: str, ttl: int,
             remote: str | None, reason: str | None = None) -> AcquireResult:
    top = kb.top
    s = lock_settings(kb)
    refs = [t.ref for t in targets]
    # With a remote the first try is optimistic (push "create if absent"); the
    # remote's answer, fetched on rejection, decides the next tries.
    known: dict[str, Lock | None] | None = None
    last_error = ""
    if remote and mode == "claim":
        known = {r: None for r in refs}
    for _attempt in range(ATTEMPTS):
        now = clock()
        if known is None:
            if remote:
                fetch_locks(top, remote)
            cur = read_locks(top, refs, remote)
            known = {r: cur.get(r) for r in refs}
        plan: list[tuple[LockTarget, str, Lock | None]] = []
        refusals: list[Exception] = []
        for t in targets:
            try:
                how, prev = _decide(mode, t, known[t.ref], owner, s, now)
                plan.append((t, how, prev))
            except (LockHeld, NotLocked) as exc:
                refusals.append(exc)
        if refusals:
            if len(refusals) == 1:
                raise refusals[0]
            msg = "; ".join(str(e).replace("; nothing was changed", "").replace(
                " — nothing was changed", "") for e in refusals) + "; nothing was changed"
            first = refusals[0]
            if isinstance(first, LockHeld):
                raise LockHeld(msg, first.lock)
            raise NotLocked(msg)
        expires = now + ttl
        made: list[Acquired] = []
        for t, how, prev in plan:
            blob = worktree_blob(top, t.path) if t.scope == "file" and t.path else None
            msg = lock_message(scope=t.scope, path=t.path, owner=owner, now=now, expires=expires,
                               blob=blob, previous=prev.commit if prev else None,
                               how=how if prev else None,
                               reason=reason if how == "stolen" else None)
            commit = make_lock_commit(top, msg, owner, now)
            made.append(Acquired(t.ref, t.scope, t.path, commit, owner, expires, how, prev))
        if remote:
            res = push(top, remote, [f"{a.commit}:{a.ref}" for a in made],
                       {a.ref: (a.previous.commit if a.previous else None) for a in made},
                       atomic=True)
            if not res.ok:
                last = "; ".join(f"{r}: {x[1]}" for r, x in res.refs.items() if x[0] == "!")
                last_error = f"{last} {res.message}".strip()
                known = None
                continue
            ok, _ = ref_transaction(top, [("update", fetched_ref(a.ref, remote), a.commit, None)
                                          for a in made], f"kb lock {mode} (copy of {remote}'s)")
        else:
            ops: list[tuple] = [("update", a.ref, a.commit, a.previous.commit) if a.previous
                                else ("create", a.ref, a.commit) for a in made]
            ok, _ = ref_transaction(top, ops, f"kb lock {mode} by {owner}")
            if not ok:
                known = None
                continue
        result = AcquireResult(owner=owner, now=now, locks=made, remote=remote)
        if remote:
            result.branch, result.behind = _remote_behind(top, remote)
        return result
    raise ConflictError(f"could not {mode} after {ATTEMPTS} tries: the locks kept changing "
                       f"under contention; try again {('(' + last_error + ')') if last_error else ''}"
                       .strip())


def _remote_behind(top: Path, remote: str) -> tuple[str | None, int | None]:
    """Fetch the current branch from ``remote``; how many commits HEAD lacks."""
    branch = current_branch(top)
    if branch is None:
        return None, None
    name = branch[len("refs/heads/"):]
    proc = git.run(["fetch", "--no-tags", "--quiet", "--no-write-fetch-head", remote,
                    f"+{branch}:refs/remotes/{remote}/{name}"], top, check=False, write=True)
    if proc.returncode != 0:
        return branch, None
    if git.rev_parse("HEAD", top) is None:
        return branch, None
    n = git.out(["rev-list", "--count", f"HEAD..refs/remotes/{remote}/{name}"], top)
    return branch, int(n or 0)


def claim(kb: KnowledgeBase, paths: list[str], owner: str | None = None,
          ttl: str | int | None = None, remote: str | None = None,
          cwd: Path | None = None) -> AcquireResult:
    """Lock ``paths`` for ``owner`` (all or none). Refused with the holder's name and
    remaining lease when someone else holds one; an expired lease is taken over by
    compare-and-swap; the caller's own lease is extended.

    Returns the locks taken. Raises UsageError (a bad path, owner or TTL), LockHeld (locked)
    when another owner holds a live lease, EnvironmentError_ (git, or the lock remote
    unreachable within its timeout).
    """
    owner = resolve_owner(kb.top, owner)
    ttl_s = lease_seconds(kb, ttl)
    if remote:
        check_remote(kb.top, remote)
    targets = file_targets(kb, paths, cwd)
    _check_spelling(kb, [t.path for t in targets if t.path is not None])
    return _acquire(kb, targets, owner, "claim", ttl_s, remote)


def _spelt(path: str) -> str:
    """``path`` as a reader sees it: no blanks at its ends, no character that shows nothing,
    letter case folded."""
    return HIDDEN_CHARS.sub("", path).strip().casefold()


def _check_spelling(kb: KnowledgeBase, paths: list[str]) -> None:
    """Refuse (UsageError) a path to lock that is a tracked file's path but for blanks at
    its ends, characters that show nothing or letter case (``"tree.md "``, ``TREE.md``,
    ``tree.md\u200b``): the lock would protect nothing while its owner believes the file
    locked. A path of no file at all is a file about to be written (a new card), and is
    locked as given. Cost: one ``git ls-files`` only when a path names no file on disk."""
    absent = [p for p in paths if not os.path.lexists(kb.top / p)]
    if not absent:
        return
    proc = git.run(["ls-files", "-z"], kb.top, check=False)
    tracked = {_spelt(t): t for t in git.split_z(proc.stdout)} if proc.returncode == 0 else {}
    for p in absent:
        near = tracked.get(_spelt(p))
        if near is not None and near != p:
            raise UsageError(f"no file is at {p!r}; did you mean {near!r}? (a lock on a path of no "
                             "file protects nothing) — nothing was locked")


def renew(kb: KnowledgeBase, paths: list[str], owner: str | None = None,
          ttl: str | int | None = None, remote: str | None = None,
          cwd: Path | None = None) -> AcquireResult:
    """Extend the caller's own leases on ``paths`` (holder only, compare-and-swap).

    Returns the locks renewed. Raises UsageError, NotLocked (not_found) for a path not locked by
    the caller, LockHeld (locked), EnvironmentError_ (git, or the lock remote unreachable within
    its timeout).
    """
    owner = resolve_owner(kb.top, owner)
    ttl_s = lease_seconds(kb, ttl)
    if remote:
        check_remote(kb.top, remote)
    return _acquire(kb, file_targets(kb, paths, cwd), owner, "renew", ttl_s, remote)


def steal(kb: KnowledgeBase, paths: list[str], reason: str, owner: str | None = None,
          ttl: str | int | None = None, remote: str | None = None,
          cwd: Path | None = None) -> AcquireResult:
    """Take ``paths`` over: allowed once the lease is over (grace included), at any
    time for an owner listed in ``[locks] leads``. The reason is recorded.

    Returns the locks taken. Raises UsageError (no reason, a bad path), LockHeld (locked) while
    the lease runs and the caller is no lead, EnvironmentError_ (git, or the lock remote
    unreachable within its timeout).
    """
    owner = resolve_owner(kb.top, owner)
    reason = validate_text(reason, "the reason")
    ttl_s = lease_seconds(kb, ttl)
    if remote:
        check_remote(kb.top, remote)
    return _acquire(kb, file_targets(kb, paths, cwd), owner, "steal", ttl_s, remote, reason)


def project_lock(kb: KnowledgeBase, owner: str | None = None, ttl: str | int | None = None,
                 remote: str | None = None, steal_reason: str | None = None) -> AcquireResult:
    """Take (or, for the holder, renew) the project-wide lease ``refs/kb/project-lock``.
    ``steal_reason`` overrides another session's lease under the steal rules.

    Returns the lock taken. Raises UsageError, LockHeld (locked) while another session's lease
    runs, EnvironmentError_ (git, or the lock remote unreachable within its timeout).
    """
    owner = resolve_owner(kb.top, owner)
    ttl_s = lease_seconds(kb, ttl)
    if remote:
        check_remote(kb.top, remote)
    if steal_reason is not None:
        reason = validate_text(steal_reason, "the reason")
        return _acquire(kb, [PROJECT_TARGET], owner, "steal", ttl_s, remote, reason)
    return _acquire(kb, [PROJECT_TARGET], owner, "claim", ttl_s, remote)


def project_unlock(kb: KnowledgeBase, owner: str | None = None,
                   remote: str | None = None) -> ReleaseResult:
    """Give the project lease back (holder only).

    Raises NotLocked (not_found) when the project is not locked, LockHeld (locked) when another
    owner holds it, ConflictError when the lock kept changing.
    """
    owner = resolve_owner(kb.top, owner)
    if remote:
        check_remote(kb.top, remote)
    top = kb.top
    s = lock_settings(kb)
    for _attempt in range(ATTEMPTS):
        if remote:
            fetch_locks(top, remote)
        cur = read_locks(top, [PROJECT_REF], remote).get(PROJECT_REF)
        now = clock()
        if cur is None:
            raise NotLocked("the project is not locked; nothing to unlock")
        if cur.owner != owner:
            raise LockHeld(f"the project lock is held by {cur.describe(now, s.grace)}, not by "
                           f"{owner}; nothing was changed", cur)
        if remote:
            res = push(top, remote, [f":{PROJECT_REF}"], {PROJECT_REF: cur.commit}, atomic=True)
            if not res.ok:
                continue
            ref_transaction(top, [("delete", fetched_ref(PROJECT_REF, remote), None)],
                            f"kb project unlock (copy of {remote}'s)")
        else:
            ok, _ = ref_transaction(top, [("delete", PROJECT_REF, cur.commit)], "kb project unlock")
            if not ok:
                continue
        return ReleaseResult(owner=owner, released=["project"], committed=[], commit=None,
                             branch=None, lock_commits=[cur.commit], remote=remote)
    raise ConflictError("could not unlock: the project lock kept changing; try again")



__all__ = ["claim", "renew", "steal", "project_lock", "project_unlock"]
