"""Lock use cases (DESIGN.md §5): claim, release, status, renew, steal, prune,
and the project lock. The ref and commit formats are in :mod:`kb.locks`.

Claims, renewals and steals never touch the index or the working tree: they
make a lock commit and compare-and-swap one ref per path (all the paths of
one command in one ref transaction, or one ``git push --atomic``), so they
need no machine-wide lock.

A release builds the commit of the locked paths' working-tree content on
the current branch through a temporary index (``GIT_INDEX_FILE``: HEAD plus
those paths), runs the pre-commit hook on it (``git hook run``, with
``KB_OWNER``), and applies the branch update and the deletion of the lock
refs in one ``git update-ref --stdin`` transaction, each with its expected
old value: both happen or neither. With a remote the same two updates are one
``git push --atomic`` with a lease on each lock's value. Then the real
index entries of exactly those paths are set to the new commit's
(``git reset -q -- paths``), leaving the user's other staged work alone. A
release runs under kb's write lock in git's common directory (the one every
write transaction takes), so releases on one machine never race each other
for the branch or the index.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb import git
from kb.errors import ConflictError, GitError, RefusedError, UsageError
from kb.ops.result import OpResult
from kb.locks import (
    LOCKS_NS, PROJECT_REF, Lock, LockHeld, LockLost, NotLocked, Settings, blocking_locks,
    check_remote, clock,
    fetch_locks, iso, lock_message, lock_ref, make_lock_commit, parse_duration,
    push, read_locks, ref_transaction, repo_paths, resolve_owner, validate_text, worktree_blob,
)
from kb.repo import KnowledgeBase

RELEASE_JOURNAL = "kb-lock-release.json"
_ATTEMPTS = 8


# -- results ------------------------------------------------------------------------


@dataclass
class Acquired:
    """One lock a claim, renew or steal now holds.

    ``how``: ``new`` (was free), ``expired`` (took over an expired lease),
    ``renewed`` (the caller's own lease, extended), ``stolen``.
    """

    ref: str
    scope: str
    path: str | None
    commit: str
    owner: str
    expires: int
    how: str
    previous: Lock | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "scope": self.scope, "path": self.path, "commit": self.commit,
                "owner": self.owner, "expires": iso(self.expires), "expires_epoch": self.expires,
                "how": self.how,
                "previous": ({"commit": self.previous.commit, "owner": self.previous.owner}
                             if self.previous else None)}


@dataclass
class AcquireResult:
    owner: str
    now: int
    locks: list[Acquired]
    remote: str | None = None
    branch: str | None = None
    behind: int | None = None   # commits of the remote branch HEAD lacks (remote claims)

    def as_dict(self) -> dict[str, Any]:
        return {"owner": self.owner, "now": iso(self.now), "now_epoch": self.now, "remote": self.remote,
                "locks": [a.as_dict() for a in self.locks], "branch": self.branch,
                "behind": self.behind}


@dataclass
class ReleaseResult:
    owner: str
    released: list[str]                 # paths (or "project") whose lock ref was deleted
    committed: list[str]                # paths whose changes the commit holds
    commit: str | None                  # None: nothing changed, only the refs were deleted
    branch: str | None
    lock_commits: list[str]
    remote: str | None = None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"owner": self.owner, "released": self.released, "committed": self.committed,
                "commit": self.commit, "branch": self.branch, "lock_commits": self.lock_commits,
                "remote": self.remote, "warnings": self.warnings}

    def op_result(self, top: Path) -> OpResult:
        """This release as the one write result (:class:`kb.ops.result.OpResult`):
        ``paths`` the committed paths, ``blobs`` their blob ids in the new commit
        (read from the git repository at ``top``), ``changes`` one line per
        released lock, the fields of :meth:`as_dict` after them."""
        blobs: dict[str, str] = {}
        if self.commit and self.committed:
            out = git.run(["ls-tree", "-z", self.commit, "--", *self.committed], top).stdout
            for rec in out.decode("utf-8", "surrogateescape").split("\0"):
                if "\t" in rec:
                    meta, path = rec.split("\t", 1)
                    blobs[path] = meta.split()[2]
        return OpResult(op="lock.release", ids=[], paths=list(self.committed), blobs=blobs,
                        commit=self.commit, changes=[f"released {p}" for p in self.released],
                        details=self.as_dict())


@dataclass
class LockState:
    """A lock as ``kb lock status`` explains it."""

    lock: Lock
    expired: bool
    in_grace: bool
    remaining: int
    modified: bool | None     # working tree differs from the blob at claim (file locks)
    notes: list[str]

    def as_dict(self) -> dict[str, Any]:
        d = self.lock.as_dict()
        d.update(expired=self.expired, in_grace=self.in_grace, remaining=self.remaining,
                 modified_since_claim=self.modified, notes=self.notes)
        return d


@dataclass
class StatusReport:
    now: int
    grace: int
    locks: list[LockState]
    project: LockState | None
    interrupted: dict[str, Any] | None
    remote: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"now": iso(self.now), "now_epoch": self.now, "grace": self.grace,
                "remote": self.remote, "locks": [s.as_dict() for s in self.locks],
                "project": self.project.as_dict() if self.project else None,
                "interrupted_release": self.interrupted}


# -- helpers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    ref: str
    scope: str
    path: str | None


def _file_targets(kb: KnowledgeBase, paths: list[str], cwd: Path | None) -> list[_Target]:
    return [_Target(lock_ref(p), "file", p) for p in repo_paths(kb, paths, cwd)]


_PROJECT = _Target(PROJECT_REF, "project", None)


def _settings(kb: KnowledgeBase) -> Settings:
    """``[locks]`` of kb.toml; ``leads`` from the committed kb.toml only (HEAD's):
    an uncommitted edit grants no one the right to steal a running lease."""
    from dataclasses import replace

    return replace(Settings.from_config(kb.config.locks), leads=_committed_leads(kb))


def _committed_leads(kb: KnowledgeBase) -> tuple[str, ...]:
    """``[locks] leads`` of HEAD's kb.toml (none when there is no commit or no file)."""
    from kb.config import tomllib

    proc = git.run(["cat-file", "blob", f"HEAD:{kb.prefix}kb.toml"], kb.top, check=False)
    if proc.returncode != 0:
        return ()
    try:
        locks = tomllib.loads(proc.stdout.decode("utf-8")).get("locks", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return ()
    leads = locks.get("leads", []) if isinstance(locks, dict) else []
    return tuple(str(x) for x in leads) if isinstance(leads, list) else ()


def _ttl(kb: KnowledgeBase, ttl: str | int | None) -> int:
    if ttl is None:
        return _settings(kb).ttl
    if isinstance(ttl, int):
        if ttl <= 0:
            raise UsageError("the TTL must be longer than 0s")
        return ttl
    return parse_duration(ttl)


def current_branch(top: Path) -> str | None:
    """``refs/heads/<b>`` HEAD points at, or None when detached."""
    proc = git.run(["symbolic-ref", "-q", "HEAD"], top, check=False)
    ref = proc.stdout.decode("utf-8", "surrogateescape").strip()
    return ref if proc.returncode == 0 and ref.startswith("refs/heads/") else None


def _refuse_held(lk: Lock, now: int, grace: int, what: str = "") -> LockHeld:
    return LockHeld(f"{lk.label} is locked by {lk.describe(now, grace)}{what}; nothing was changed",
                    lk)


# -- claim / renew / steal --------------------------------------------------------------------


def _decide(mode: str, t: _Target, cur: Lock | None, owner: str, s: Settings, now: int,
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
    raise _refuse_held(cur, now, s.grace)


def _acquire(kb: KnowledgeBase, targets: list[_Target], owner: str, mode: str, ttl: int,
             remote: str | None, reason: str | None = None) -> AcquireResult:
    top = kb.top
    s = _settings(kb)
    refs = [t.ref for t in targets]
    # With a remote the first try is optimistic (push "create if absent"); the
    # remote's answer, fetched on rejection, decides the next tries.
    known: dict[str, Lock | None] | None = None
    last_error = ""
    if remote and mode == "claim":
        known = {r: None for r in refs}
    for _attempt in range(_ATTEMPTS):
        now = clock()
        if known is None:
            if remote:
                fetch_locks(top, remote)
            cur = read_locks(top, refs)
            known = {r: cur.get(r) for r in refs}
        plan: list[tuple[_Target, str, Lock | None]] = []
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
            ok, _ = ref_transaction(top, [("update", a.ref, a.commit, None) for a in made],
                                    f"kb lock {mode} (mirror of {remote})")
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
    raise ConflictError(f"could not {mode} after {_ATTEMPTS} tries: the locks kept changing "
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
    compare-and-swap; the caller's own lease is extended."""
    owner = resolve_owner(kb.top, owner)
    ttl_s = _ttl(kb, ttl)
    if remote:
        check_remote(kb.top, remote)
    return _acquire(kb, _file_targets(kb, paths, cwd), owner, "claim", ttl_s, remote)


def renew(kb: KnowledgeBase, paths: list[str], owner: str | None = None,
          ttl: str | int | None = None, remote: str | None = None,
          cwd: Path | None = None) -> AcquireResult:
    """Extend the caller's own leases on ``paths`` (holder only, compare-and-swap)."""
    owner = resolve_owner(kb.top, owner)
    ttl_s = _ttl(kb, ttl)
    if remote:
        check_remote(kb.top, remote)
    return _acquire(kb, _file_targets(kb, paths, cwd), owner, "renew", ttl_s, remote)


def steal(kb: KnowledgeBase, paths: list[str], reason: str, owner: str | None = None,
          ttl: str | int | None = None, remote: str | None = None,
          cwd: Path | None = None) -> AcquireResult:
    """Take ``paths`` over: allowed once the lease is over (grace included), at any
    time for an owner listed in ``[locks] leads``. The reason is recorded."""
    owner = resolve_owner(kb.top, owner)
    reason = validate_text(reason, "the reason")
    ttl_s = _ttl(kb, ttl)
    if remote:
        check_remote(kb.top, remote)
    return _acquire(kb, _file_targets(kb, paths, cwd), owner, "steal", ttl_s, remote, reason)


def project_lock(kb: KnowledgeBase, owner: str | None = None, ttl: str | int | None = None,
                 remote: str | None = None, steal_reason: str | None = None) -> AcquireResult:
    """Take (or, for the holder, renew) the project-wide lease ``refs/kb/project-lock``.
    ``steal_reason`` overrides another session's lease under the steal rules."""
    owner = resolve_owner(kb.top, owner)
    ttl_s = _ttl(kb, ttl)
    if remote:
        check_remote(kb.top, remote)
    if steal_reason is not None:
        reason = validate_text(steal_reason, "the reason")
        return _acquire(kb, [_PROJECT], owner, "steal", ttl_s, remote, reason)
    return _acquire(kb, [_PROJECT], owner, "claim", ttl_s, remote)


def project_unlock(kb: KnowledgeBase, owner: str | None = None,
                   remote: str | None = None) -> ReleaseResult:
    """Give the project lease back (holder only)."""
    owner = resolve_owner(kb.top, owner)
    if remote:
        check_remote(kb.top, remote)
    top = kb.top
    s = _settings(kb)
    for _attempt in range(_ATTEMPTS):
        if remote:
            fetch_locks(top, remote)
        cur = read_locks(top, [PROJECT_REF]).get(PROJECT_REF)
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
            ref_transaction(top, [("delete", PROJECT_REF, None)], "kb project unlock (mirror)")
        else:
            ok, _ = ref_transaction(top, [("delete", PROJECT_REF, cur.commit)], "kb project unlock")
            if not ok:
                continue
        return ReleaseResult(owner=owner, released=["project"], committed=[], commit=None,
                             branch=None, lock_commits=[cur.commit], remote=remote)
    raise ConflictError("could not unlock: the project lock kept changing; try again")


# -- release ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _GitPaths:
    git_dir: Path
    common_dir: Path
    pre_commit: Path


def _git_paths(top: Path) -> _GitPaths:
    """git dir, common dir and the pre-commit hook's path (honours core.hooksPath), in one call."""
    lines = git.out(["rev-parse", "--git-dir", "--git-common-dir", "--git-path",
                     "hooks/pre-commit"], top).splitlines()
    return _GitPaths(*[(top / x).resolve() if not Path(x).is_absolute() else Path(x)
                       for x in lines[:3]])


def _index_lock(gp: _GitPaths, wait: float = 0.5) -> None:
    """Refuse while git's ``index.lock`` exists (after ``wait`` seconds, for a git
    process that is just finishing). Called with kb's machine lock held, so the
    lock is not another kb release's."""
    lock = gp.git_dir / "index.lock"
    deadline = time.monotonic() + wait
    while lock.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    if lock.exists():
        raise RefusedError(
            f"git's index is locked ({lock} exists): another git process is running, or one "
            "crashed. kb never deletes it; remove it yourself once no git process is running "
            "— nothing was changed")


def git_ref_locks(git_dir: Path, common_dir: Path, wait: float = 1.0) -> None:
    """Refuse while git's own ref lock files stay (``HEAD.lock``, ``packed-refs.lock``,
    ``refs/heads/…/*.lock``): a git killed in the middle of a ref update leaves them,
    and every update of the branch fails until they are removed. A running git
    holds them for milliseconds (another clone's lock claim, a user's commit), so
    kb waits up to ``wait`` seconds first. Like ``index.lock``, kb never deletes
    them (it cannot tell a crashed git from a running one). Lock refs
    (``refs/kb/locks``) are not looked at: claims race on them by design.
    Raises RefusedError naming them."""
    def present() -> list[Path]:
        found = [p for p in (git_dir / "HEAD.lock", common_dir / "packed-refs.lock") if p.exists()]
        heads = common_dir / "refs" / "heads"
        if heads.is_dir():
            found += sorted(heads.rglob("*.lock"))[:5]
        return found

    deadline = time.monotonic() + wait
    found = present()
    while found and time.monotonic() < deadline:
        time.sleep(0.05)
        found = present()
    if found:
        raise RefusedError(
            f"git's ref lock {'files exist' if len(found) > 1 else 'file exists'} "
            f"({', '.join(str(p) for p in found)}): another git process is updating refs, or one "
            "crashed. kb never deletes them; remove them yourself once no git process is running "
            "— nothing was changed")


def _machine_lock(gp: _GitPaths, timeout: float = 120.0) -> Any:
    """kb's write lock in git's common directory (the one every write transaction takes)."""
    from kb.ops.transaction import acquire_write_lock

    return acquire_write_lock(gp.common_dir, "lock.release", None, timeout)


def _head_entries(top: Path, head: str | None, paths: list[str]) -> dict[str, tuple[str, str]]:
    if head is None:
        return {}
    proc = git.run(["ls-tree", "-z", "--full-tree", head, "--", *paths], top)
    out = {}
    for rec in git.split_z(proc.stdout):
        meta, _, p = rec.partition("\t")
        mode, _typ, oid = meta.split(" ")
        out[p] = (mode, oid)
    return out


def _worktree_entries(top: Path, paths: list[str]) -> dict[str, tuple[str, str]]:
    """mode and blob id (written to the object store, clean filters applied) of each
    path present in the working tree."""
    out: dict[str, tuple[str, str]] = {}
    regular: list[str] = []
    for p in paths:
        full = top / p
        if full.is_symlink():
            target = os.readlink(full).encode("utf-8", "surrogateescape")
            oid = git.out(["hash-object", "-w", "--stdin", "--no-filters"], top, input=target,
                          write=True)
            out[p] = ("120000", oid)
        elif full.is_file():
            regular.append(p)
    if regular:
        proc = git.run(["hash-object", "-w", "--stdin-paths"], top,
                       input="".join(p + "\n" for p in regular).encode("utf-8", "surrogateescape"),
                       write=True)
        for p, oid in zip(regular, proc.stdout.decode().split()):
            mode = "100755" if os.stat(top / p).st_mode & 0o100 else "100644"
            out[p] = (mode, oid)
    return out


def _run_pre_commit(top: Path, hook: Path, env: dict[str, str]) -> None:
    if not os.access(hook, os.X_OK):
        return  # no hook (git ignores a hook file that is not executable)
    proc = git.run(["hook", "run", "--ignore-missing", "pre-commit"], top, check=False,
                   write=True, env=env)
    if proc.returncode == 0:
        return
    text = (proc.stderr + proc.stdout).decode("utf-8", "replace").strip()
    if "is not a git command" in text:
        return  # git older than 2.36 has no `git hook run`
    raise RefusedError(f"the pre-commit hook refused the release commit (nothing was changed; "
                       f"the lock is still yours):\n{text}")


def _derived_paths(kb: KnowledgeBase, paths: list[str], owner: str, s: Any, now: int) -> list[str]:
    """Generated files that must travel with ``paths``: the KB's DASHBOARD.md when a
    released path is its tree or an experiment (kb's write commands refresh the
    dashboard with them) and it is not locked by someone else. Without it a
    release would commit a tree whose committed dashboard is stale."""
    cfg = kb.config.paths
    tree = kb.repo_path(cfg["tree"])
    exps = kb.repo_path(cfg["experiments"].strip("/")) + "/"
    dash = kb.repo_path(cfg["dashboard"])
    if dash in paths or not any(p == tree or p.startswith(exps) for p in paths):
        return []
    if blocking_locks(kb.top, [dash], owner, s, now):
        return []
    return [dash]  # unchanged content simply drops out of the commit


def _build_commit(kb: KnowledgeBase, paths: list[str], head: str | None, owner: str,
                  message: str | None, lock_commits: list[str], hook: Path | None,
                  ) -> tuple[str | None, list[str], str]:
    """The commit of ``paths``' working-tree content on ``head`` (None when nothing
    changed), the paths it changes, and their ``--index-info`` lines."""
    top = kb.top
    before = _head_entries(top, head, paths)
    after = _worktree_entries(top, paths)
    changed = [p for p in paths if before.get(p) != after.get(p)]
    if not changed:
        return None, [], ""
    _guard_release(kb, before, after, changed)
    lines = []
    for p in changed:
        if p in after:
            mode, oid = after[p]
            lines.append(f"{mode} {oid}\t{p}")
        else:
            lines.append(f"0 {'0' * 40}\t{p}")
    subject = message.strip() if message and message.strip() else \
        "kb lock release: " + ", ".join(kb.rel(p) or p for p in changed)
    trailers = ["Kb-Op: lock.release", f"Kb-Owner: {owner}"] + [f"Kb-Lock: {c}" for c in lock_commits]
    full_msg = subject + "\n\n" + "\n".join(trailers) + "\n"
    with tempfile.TemporaryDirectory(prefix="kb-release-") as d:
        env = {"GIT_INDEX_FILE": str(Path(d) / "index")}
        if head:
            git.run(["read-tree", head], top, write=True, env=env)
        else:
            git.run(["read-tree", "--empty"], top, write=True, env=env)
        git.run(["update-index", "--index-info"], top, write=True, env=env,
                input=("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
        tree = git.out(["write-tree"], top, write=True, env=env)
        if hook is not None:
            _run_pre_commit(top, hook, {**env, "KB_OWNER": owner, "KB_OP": "lock.release"})
    from kb.ops.commit import commit_tree

    commit = commit_tree(top, tree, head, full_msg)
    return commit, changed, "\n".join(lines) + "\n"


def _guard_release(kb: KnowledgeBase, before: dict[str, tuple[str, str]],
                   after: dict[str, tuple[str, str]], changed: list[str]) -> None:
    """The format guard of a release commit (what a transaction's commit passes).

    Each changed KB file is parsed as committed (the blob written to the
    store) and as in HEAD: the release is refused (FormatGuardError, nothing
    changed, the locks kept) when the new version has an error diagnostic, or
    an ID declared more than once, that HEAD's version did not have. A file
    that was already broken in HEAD may be released as long as it gets no
    worse (the holder may be fixing it).
    """
    from kb.ops.transaction import FormatGuardError
    from kb.parse import classify, parse_file
    from kb.repo import outside_links

    def problems(rel: str, oid: str | None) -> tuple[set[tuple[str, str]], list[Any]]:
        if oid is None:
            return set(), []
        data = git.read_blobs([oid], kb.top).get(oid, b"")
        res = parse_file(rel, data, kb.config)
        errs = [d for d in res.diagnostics if d.severity == "error"]
        ids: dict[str, int] = {}
        for o in res.objects:
            ids[o.id] = ids.get(o.id, 0) + 1
        keys = {(d.code, d.message) for d in errs} | {("dup", i) for i, n in ids.items() if n > 1}
        return keys, errs

    for p in changed:
        rel = kb.rel(p)
        if rel is None or p not in after or classify(rel, kb.config) is None:
            continue
        for q, target in outside_links(kb, [rel]).items():
            raise RefusedError(f"{p} is a symlink to {target}, outside the work tree: kb does not "
                               "commit it — nothing was changed, your locks are kept")
        new_keys, new_errs = problems(rel, after[p][1])
        old_keys, _ = problems(rel, before[p][1] if p in before else None)
        added = new_keys - old_keys
        if added:
            dups = sorted(i for c, i in added if c == "dup")
            first = next((d.format() for d in new_errs if (d.code, d.message) in added),
                         f"{dups[0] if dups else '?'} is declared more than once")
            raise FormatGuardError(
                f"the release would commit format errors in {p} ({first}); fix them first "
                "(kb index lists them) — nothing was changed, your locks are kept", new_errs)


def read_interrupted(top: Path, git_dir: Path | None = None) -> dict[str, Any] | None:
    """The journal of a release killed between its commit and the index update."""
    try:
        jp = (git_dir or git.git_dir(top)) / RELEASE_JOURNAL
        return json.loads(jp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _finish_interrupted(top: Path, jp: Path) -> None:
    """Bring the index entries of an interrupted release up to date (if still stale)."""
    if not jp.exists():
        return
    j = read_interrupted(top, jp.parent)
    if j is None:
        jp.unlink(missing_ok=True)
        return
    branch_tip = git.rev_parse(j.get("branch", ""), top)
    commit = j.get("commit")
    landed = branch_tip is not None and commit and git.run(
        ["merge-base", "--is-ancestor", commit, branch_tip], top, check=False).returncode == 0
    if landed and git.rev_parse("HEAD", top) == branch_tip:
        paths = j.get("paths", [])
        parent = _head_entries(top, j.get("parent"), paths) if j.get("parent") else {}
        proc = git.run(["ls-files", "-s", "-z", "--", *paths], top)
        staged = {}
        for rec in git.split_z(proc.stdout):
            meta, _, p = rec.partition("\t")
            mode, oid, _stage = meta.split(" ")
            staged[p] = (mode, oid)
        stale = [p for p in paths if staged.get(p) == parent.get(p)]
        if stale and not _reset_index(top, stale):
            return  # git's index is locked: the journal stays for the next command
    jp.unlink(missing_ok=True)


def finish_interrupted_release(top: Path) -> None:
    """Finish a lock release killed between its commit and its index update
    (every kb write calls this first; the index entries of the released paths
    are set to HEAD's when they still hold the old blobs)."""
    jp = git.git_dir(top) / RELEASE_JOURNAL
    if jp.exists():
        _finish_interrupted(top, jp)


def _index_write(top: Path, args: list[str], input: bytes | None = None) -> bool:
    """Run a git command that writes the real index, retried while another git
    process holds the index lock. False when it could not."""
    for i in range(20):
        proc = git.run(args, top, check=False, write=True, input=input)
        if proc.returncode == 0:
            return True
        if b"index.lock" not in proc.stderr:
            return False
        time.sleep(0.05 * (i + 1))
    return False


def _set_index(top: Path, entries: str) -> bool:
    """Set the real index entries of the released paths to the committed blobs
    (``git update-index --index-info``: exactly those paths, the user's other
    staged work untouched)."""
    return _index_write(top, ["update-index", "--index-info"],
                        entries.encode("utf-8", "surrogateescape"))


def _reset_index(top: Path, paths: list[str]) -> bool:
    """``git reset -q -- paths`` (index entries := HEAD's)."""
    return _index_write(top, ["reset", "-q", "--", *paths])


def _sync_remote(top: Path, remote: str, branch: str) -> str | None:
    """Fetch the remote's locks (mirror, pruned) and branch; the remote branch tip."""
    name = branch[len("refs/heads/"):]
    tracking = f"refs/remotes/{remote}/{name}"
    try:
        fetch_locks(top, remote, [f"+{branch}:{tracking}"])
    except GitError as exc:
        if "couldn't find remote ref" not in exc.stderr:
            raise
        fetch_locks(top, remote)
        return None
    return git.rev_parse(tracking, top)


def release(kb: KnowledgeBase, paths: list[str] | None = None, owner: str | None = None,
            message: str | None = None, remote: str | None = None, all_held: bool = False,
            verify: bool = True, cwd: Path | None = None) -> ReleaseResult:
    """Commit the locked paths' changes and delete their lock refs, atomically.

    ``all_held``: every file lock the owner holds. Refused (nothing changed) when
    a path is not locked, or locked by someone else; :class:`LockLost` when a
    lock changed while the commit was being built. ``verify=False`` skips the
    pre-commit hook.
    """
    from kb.ops.transaction import JOURNAL_NAME, _release as tx_unlock, recover, remove_index_litter

    top = kb.top
    owner = resolve_owner(top, owner)
    if remote:
        check_remote(top, remote)
    targets = None if all_held else _file_targets(kb, list(paths or []), cwd)
    s = _settings(kb)
    gp = _git_paths(top)
    journal = gp.git_dir / RELEASE_JOURNAL
    hook = gp.pre_commit if verify else None
    held = _machine_lock(gp)
    try:
        remove_index_litter(top)
        if (gp.git_dir / JOURNAL_NAME).exists():
            recover(kb)  # a write transaction killed before its commit: roll it back first
        _finish_interrupted(top, journal)
        _index_lock(gp)
        git_ref_locks(gp.git_dir, gp.common_dir)
        branch = current_branch(top)
        if branch is None:
            raise RefusedError("HEAD is detached: check out a branch before releasing "
                               "(the locks are kept)")
        warnings: list[str] = []
        # With a remote the first try trusts the local mirror of the locks: the
        # push's leases (lock values) and fast-forward rule (branch) make the
        # remote refuse a stale view, and only then do we fetch and look again.
        synced = False
        for _attempt in range(_ATTEMPTS):
            remote_tip = None
            if remote and _attempt > 0:
                remote_tip = _sync_remote(top, remote, branch)
                synced = True
            now = clock()
            if targets is None:
                mine = [lk for lk in read_locks(top).values()
                        if lk.scope == "file" and lk.owner == owner and lk.path]
                tg = [_Target(lk.ref, "file", lk.path) for lk in mine]
                if not tg:
                    if remote and not synced:
                        continue
                    return ReleaseResult(owner, [], [], None, branch, [], remote)
            else:
                tg = targets
            locks = read_locks(top, [t.ref for t in tg])
            if remote and not synced and any(
                    locks.get(t.ref) is None or locks[t.ref].owner != owner for t in tg):
                continue  # the mirror may be stale: fetch before refusing
            for t in tg:
                lk = locks.get(t.ref)
                where = f" on {remote}" if remote else ""
                if lk is None:
                    raise NotLocked(f"{t.path} is not locked{where}; nothing to release "
                                    "(nothing was changed)")
                if lk.owner != owner:
                    raise LockHeld(f"{t.path} is locked by {lk.describe(now, s.grace)}, not by "
                                   f"{owner}; only the holder releases — nothing was changed", lk)
            rps = [t.path for t in tg if t.path]
            rps += _derived_paths(kb, rps, owner, s, now)
            lock_commits = [locks[t.ref].commit for t in tg]
            head = git.rev_parse("HEAD", top)
            commit, changed, entries = _build_commit(kb, rps, head, owner, message, lock_commits,
                                                     hook)
            if remote and commit and remote_tip and remote_tip != head and git.run(
                    ["merge-base", "--is-ancestor", remote_tip, head or remote_tip], top,
                    check=False).returncode != 0:
                raise ConflictError(
                    f"{remote}/{branch[len('refs/heads/'):]} has commits your branch lacks: pull "
                    f"them first (git pull --rebase --autostash {remote}), then release again "
                    "— your locks are kept, nothing was changed")
            if commit:
                journal.write_text(json.dumps(
                    {"branch": branch, "commit": commit, "parent": head, "paths": changed,
                     "pid": os.getpid()}), encoding="utf-8")
            if remote:
                specs = ([f"{commit}:{branch}"] if commit else []) + [f":{t.ref}" for t in tg]
                res = push(top, remote, specs, {t.ref: locks[t.ref].commit for t in tg},
                           atomic=True, verify=commit is not None)
                if not res.ok:
                    journal.unlink(missing_ok=True)
                    if any("stale info" in (res.rejected(t.ref) or "") for t in tg):
                        fetch_locks(top, remote)
                        _raise_if_lost(top, tg, owner, now, s)
                        continue
                    if _hard_rejection(res):
                        summary = "; ".join(f"{r}: {x[1]}" for r, x in res.refs.items()
                                            if x[0] == "!")
                        raise RefusedError(f"{remote} refused the release (nothing was changed, "
                                           f"your locks are kept): {summary}\n{res.message}".strip())
                    continue  # the branch or a lock moved on the remote: sync and look again
                ops: list[tuple] = [("delete", t.ref, None) for t in tg]
                if commit:
                    name = branch[len("refs/heads/"):]
                    ops += [("update", branch, commit, head or "0" * 40),
                            ("update", f"refs/remotes/{remote}/{name}", commit, None)]
                ok, why = ref_transaction(top, ops, f"kb lock release (pushed to {remote})")
                if not ok:
                    warnings.append(f"pushed {commit} to {remote}, but the local branch moved "
                                    f"meanwhile ({why}); run `git pull --rebase`")
            else:
                ops = [("delete", t.ref, locks[t.ref].commit) for t in tg]
                if commit:
                    ops.insert(0, ("update", branch, commit, head or "0" * 40))
                ok, _ = ref_transaction(top, ops, f"kb lock release by {owner}")
                if not ok:
                    journal.unlink(missing_ok=True)
                    _raise_if_lost(top, tg, owner, now, s)
                    continue  # the branch moved: build again on the new HEAD
            if commit:
                if _set_index(top, entries):
                    journal.unlink(missing_ok=True)
                else:
                    warnings.append("committed, but the index entries of "
                                    f"{', '.join(changed)} could not be updated (git's index is "
                                    "locked); `kb lock release --all` updates them later")
            return ReleaseResult(owner, rps, changed, commit, branch, lock_commits, remote,
                                 warnings)
        raise ConflictError(f"could not release after {_ATTEMPTS} tries: the branch kept moving; "
                           "your locks are kept, try again")
    finally:
        tx_unlock(held)


#: Words of a push rejection that say "someone else updated that ref first" (a
#: race to retry after a fetch), as opposed to a refusal by the server's policy.
_RACE_WORDS = ("stale info", "non-fast-forward", "fetch first", "atomic", "cannot lock ref",
               "failed to lock", "failed to update ref", "but expected", "incorrect old value",
               "reference already exists")


def _hard_rejection(res: Any) -> bool:
    text = " ".join(x[1] for x in res.refs.values() if x[0] == "!") + " " + res.message
    rejected = [x[1] for x in res.refs.values() if x[0] == "!"]
    if any(w in text for w in ("hook declined", "denied", "deny", "not allowed")):
        return True
    return not all(any(w in r or w in res.message for w in _RACE_WORDS) for r in rejected)


def _raise_if_lost(top: Path, tg: list[_Target], owner: str, now: int, s: Settings) -> None:
    cur = read_locks(top, [t.ref for t in tg])
    for t in tg:
        c = cur.get(t.ref)
        if c is None or c.owner != owner:
            who = f"taken over by {c.describe(now, s.grace)}" if c else "deleted (pruned after expiry?)"
            raise LockLost(f"your lock on {t.path} was {who} while you released it; nothing "
                           "was committed and your edits are still in the working tree")


# -- status / prune ------------------------------------------------------------------------------


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


def status(kb: KnowledgeBase, remote: str | None = None) -> StatusReport:
    """Every lock (with ``remote``: the remote's, fetched fresh with pruning)."""
    top = kb.top
    if remote:
        check_remote(top, remote)
        fetch_locks(top, remote)
    s = _settings(kb)
    now = clock()
    locks = read_locks(top)
    files = sorted((lk for lk in locks.values() if lk.ref != PROJECT_REF),
                   key=lambda lk: (lk.path or "", lk.ref))
    proj = locks.get(PROJECT_REF)
    interrupted = read_interrupted(top)
    paths = [lk.path for lk in files if lk.path]
    head = git.rev_parse("HEAD", top) if paths else None
    head_blobs = {p: e[1] for p, e in _head_entries(top, head, paths).items()} if head else {}
    return StatusReport(now=now, grace=s.grace,
                        locks=[_state(top, lk, now, s.grace, head_blobs) for lk in files],
                        project=_state(top, proj, now, s.grace, head_blobs) if proj else None,
                        interrupted=interrupted, remote=remote)


def prune(kb: KnowledgeBase, remote: str | None = None) -> list[Lock]:
    """Delete every expired lock (grace included), each with a compare-and-swap."""
    top = kb.top
    if remote:
        check_remote(top, remote)
        fetch_locks(top, remote)
    s = _settings(kb)
    now = clock()
    expired = [lk for lk in read_locks(top).values() if lk.expired(now, s.grace)]
    done: list[Lock] = []
    if not expired:
        return done
    if remote:
        res = push(top, remote, [f":{lk.ref}" for lk in expired],
                   {lk.ref: lk.commit for lk in expired}, atomic=False)
        for lk in expired:
            if lk.ref in res.refs and res.refs[lk.ref][0] != "!":
                ref_transaction(top, [("delete", lk.ref, None)], "kb lock prune (mirror)")
                done.append(lk)
        return done
    for lk in expired:
        ok, _ = ref_transaction(top, [("delete", lk.ref, lk.commit)], "kb lock prune")
        if ok:
            done.append(lk)
    return done


__all__ = ["Acquired", "AcquireResult", "ReleaseResult", "LockState", "StatusReport",
           "claim", "renew", "steal", "release", "status", "prune", "project_lock",
           "project_unlock", "current_branch", "read_interrupted", "LOCKS_NS"]
