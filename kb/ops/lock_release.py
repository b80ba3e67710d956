"""Release file locks: commit the locked paths' changes and delete their lock refs,
atomically (``kb lock release``; DESIGN.md §5).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection

from kb import git
from kb.errors import ConflictError, GitError, RefusedError, os_failure
from kb.fileio import read_regular
from kb.locks import (
    LockHeld, LockLost, NotLocked, Settings, check_remote, clock, fetch_locks, fetched_ref,
    push, read_locks, ref_transaction, resolve_owner,
)
from kb.checks.fix import regenerate_dashboard
from kb.ops.commit import commit_tree
from kb.remote_locks import blocking_locks
from kb.ops.git_state import (
    RELEASE_JOURNAL, current_branch, finish_interrupted, git_ref_locks, head_entries, set_index,
)
from kb.ops.lock_common import ATTEMPTS, LockTarget, ReleaseResult, file_targets, lock_settings
from kb.ops.recovery import JOURNAL_NAME, recover, remove_index_litter
from kb.ops.transaction import FormatGuardError, acquire_write_lock, release_write_lock
from kb.parse import classify, parse_file
from kb.repo import KnowledgeBase, outside_links, outside_where


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



def _machine_lock(gp: _GitPaths, timeout: float = 120.0) -> Any:
    """kb's write lock in git's common directory (the one every write transaction takes)."""
    return acquire_write_lock(gp.common_dir, "lock.release", None, timeout)



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
    if _no_git_hook(top):
        return  # git older than 2.36 has no `git hook run`
    raise _HookRefused((proc.stderr + proc.stdout).decode("utf-8", "replace").strip())


def _no_git_hook(top: Path) -> bool:
    """Whether this git has no ``git hook`` (older than 2.36). Asked in English (kb reads
    git's words) once a hook run failed: the hook itself runs in the user's language."""
    proc = git.run(["hook", "-h"], top, check=False, in_english=True)
    return b"is not a git command" in proc.stderr + proc.stdout


class _HookRefused(RefusedError):
    """The pre-commit hook refused the release commit; ``text`` is what it said. The
    release says whose the locks are then (:func:`_hook_refusal`): one stolen meanwhile
    is the usual cause, and "the lock is still yours" was then wrong."""

    def __init__(self, text: str) -> None:
        super().__init__(f"the pre-commit hook refused the release commit (nothing was "
                         f"changed):\n{text}")
        self.text = text


def _hook_refusal(top: Path, tg: list[LockTarget], owner: str, s: Settings,
                  remote: str | None, text: str) -> RefusedError:
    """The refusal of a release whose commit the pre-commit hook refused, saying who holds
    each lock now (the remote's locks fetched afresh): still the owner's, or taken over by
    someone else, or gone. Nothing was changed either way."""
    where = f" on {remote}" if remote else ""
    try:
        if remote:
            fetch_locks(top, remote)
        cur = read_locks(top, [t.ref for t in tg], remote)
    except GitError:  # the remote cannot be read now: say nothing about whose they are
        return RefusedError(f"the pre-commit hook refused the release commit (nothing was "
                            f"changed; whose the locks are{where} could not be read):\n{text}")
    now = clock()
    lost, holder = [], None
    for t in tg:
        c = cur.get(t.ref)
        if c is None:
            lost.append(f"{t.path} is no longer locked{where} (pruned after expiry?)")
        elif c.owner != owner:
            holder = holder or c
            lost.append(f"{t.path} is now locked{where} by {c.describe(now, s.grace)}, not by "
                        f"{owner}")
    if lost:
        msg = (f"the pre-commit hook refused the release commit (nothing was changed; "
               f"{'; '.join(lost)}: the working tree is as it was, your edits included):\n{text}")
        # kind ``locked`` when another owner holds one now, else ``conflict`` (a lock gone)
        return LockHeld(msg, holder) if holder is not None else LockLost(msg)
    return RefusedError(f"the pre-commit hook refused the release commit (nothing was changed; "
                        f"the lock is still yours):\n{text}")


def _derived_paths(kb: KnowledgeBase, paths: list[str], owner: str, s: Any, now: int) -> list[str]:
    """Generated files that must travel with ``paths``: the KB's DASHBOARD.md when a
    released path is its tree or an experiment (kb's write commands refresh the
    dashboard with them) and it is released too or not locked by someone else; it
    is rendered afresh. Without it a release would commit a tree whose committed
    dashboard is stale."""
    cfg = kb.config.paths
    tree = kb.repo_path(cfg["tree"])
    exps = kb.repo_path(cfg["experiments"].strip("/")) + "/"
    dash = kb.repo_path(cfg["dashboard"])
    if not any(p == tree or p.startswith(exps) for p in paths):
        return []
    if dash not in paths and blocking_locks(kb.top, [dash], owner, s, now):
        return []
    return [dash]  # unchanged content simply drops out of the commit


def _build_commit(kb: KnowledgeBase, paths: list[str], head: str | None, owner: str,
                  message: str | None, lock_commits: list[str], hook: Path | None,
                  derived: Collection[str] = (),
                  ) -> tuple[str | None, list[str], str]:
    """The commit of ``paths``' working-tree content on ``head`` (None when nothing
    changed), the paths it changes, and their ``--index-info`` lines. ``derived`` paths
    (a dashboard rendered for the release) travel only with a change of another path:
    with nothing changed a release only deletes its lock (DESIGN §5)."""
    top = kb.top
    before = head_entries(top, head, paths)
    after = _worktree_entries(top, paths)
    changed = [p for p in paths if before.get(p) != after.get(p)]
    if not [p for p in changed if p not in derived]:
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
            raise RefusedError(f"{p} is a symlink to {target}, outside "
                               f"{outside_where(kb, target)}: kb does not commit it — nothing "
                               "was changed, your locks are kept")
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

    Raises NotLocked (not_found), LockHeld (locked), RefusedError (detached HEAD, the remote
    refused, verification failed), ConflictError (the branch kept moving or lacks the remote's
    commits), EnvironmentError_ (git, a read-only work tree); the locks are kept then.
    """
    top = kb.top
    owner = resolve_owner(top, owner)
    if remote:
        check_remote(top, remote)
    targets = None if all_held else file_targets(kb, list(paths or []), cwd)
    s = lock_settings(kb)
    gp = _git_paths(top)
    journal = gp.git_dir / RELEASE_JOURNAL
    hook = gp.pre_commit if verify else None
    held = _machine_lock(gp)
    dash_before: tuple[Path, bytes | None] | None = None
    done = False
    try:
        remove_index_litter(top)
        if (gp.git_dir / JOURNAL_NAME).exists():
            recover(kb)  # a write transaction killed before its commit: roll it back first
        finish_interrupted(top, journal)
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
        for _attempt in range(ATTEMPTS):
            remote_tip = None
            if remote and _attempt > 0:
                remote_tip = _sync_remote(top, remote, branch)
                synced = True
            now = clock()
            if targets is None:
                mine = [lk for lk in read_locks(top, remote=remote).values()
                        if lk.scope == "file" and lk.owner == owner and lk.path]
                tg = [LockTarget(lk.ref, "file", lk.path) for lk in mine]
                if not tg:
                    if remote and not synced:
                        continue
                    return ReleaseResult(owner, [], [], None, branch, [], remote)
            else:
                tg = targets
            locks = read_locks(top, [t.ref for t in tg], remote)
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
            derived = _derived_paths(kb, rps, owner, s, now)
            if derived and dash_before is None:
                dash_before = _refresh_dashboard(kb)
            extra = [p for p in derived if p not in rps]  # the dashboard may be locked too
            rps += extra
            lock_commits = [locks[t.ref].commit for t in tg]
            head = git.rev_parse("HEAD", top)
            try:
                commit, changed, entries = _build_commit(kb, rps, head, owner, message,
                                                         lock_commits, hook, derived=extra)
            except _HookRefused as exc:  # say whose the locks are now (not "still yours")
                raise _hook_refusal(top, tg, owner, s, remote, exc.text) from None
            if commit is None and dash_before is not None:
                # nothing released changed: the dashboard rendered for it goes back as it was
                _restore(kb, dash_before)
                dash_before = None
            # changes to the locked paths committed by hand (or by a kb write) and not
            # pushed yet go with the release: the next holder must find them on the remote
            unpushed = None if commit or not remote else _unpushed(top, remote, branch, head, rps)
            if remote and (commit or unpushed) and remote_tip and remote_tip != head and git.run(
                    ["merge-base", "--is-ancestor", remote_tip, head or remote_tip], top,
                    check=False).returncode != 0:
                # (retrying could never push: the branch lacks the remote's commits)
                raise ConflictError(
                    f"{remote}/{branch[len('refs/heads/'):]} has commits your branch lacks: pull "
                    f"them first (git pull --rebase --autostash {remote}), then release again "
                    "— your locks are kept, nothing was changed")
            if commit:
                journal.write_text(json.dumps(
                    {"branch": branch, "commit": commit, "parent": head, "paths": changed,
                     "pid": os.getpid()}), encoding="utf-8")
            if remote:
                tip = commit or unpushed
                specs = ([f"{tip}:{branch}"] if tip else []) + [f":{t.ref}" for t in tg]
                res = push(top, remote, specs, {t.ref: locks[t.ref].commit for t in tg},
                           atomic=True, verify=tip is not None, owner=owner)
                if not res.ok:
                    journal.unlink(missing_ok=True)
                    if any("stale info" in (res.rejected(t.ref) or "") for t in tg):
                        fetch_locks(top, remote)
                        _raise_if_lost(top, tg, owner, now, s, remote)
                        continue
                    if _hard_rejection(res):
                        summary = "; ".join(f"{r}: {x[1]}" for r, x in res.refs.items()
                                            if x[0] == "!")
                        raise RefusedError(f"{remote} refused the release (nothing was changed, "
                                           f"your locks are kept): {summary}\n{res.message}".strip())
                    continue  # the branch or a lock moved on the remote: sync and look again
                ops: list[tuple] = [("delete", fetched_ref(t.ref, remote), None) for t in tg]
                name = branch[len("refs/heads/"):]
                if commit:
                    ops += [("update", branch, commit, head or "0" * 40),
                            ("update", f"refs/remotes/{remote}/{name}", commit, None)]
                elif unpushed:
                    ops += [("update", f"refs/remotes/{remote}/{name}", unpushed, None)]
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
                if set_index(top, entries):
                    journal.unlink(missing_ok=True)
                else:
                    warnings.append("committed, but the index entries of "
                                    f"{', '.join(changed)} could not be updated (git's index is "
                                    "locked); `kb lock release --all` updates them later")
            done = True
            return ReleaseResult(owner, [t.path for t in tg if t.path], changed, commit, branch,
                                 lock_commits, remote, warnings)
        raise ConflictError(f"could not release after {ATTEMPTS} tries: the branch kept moving; "
                           "your locks are kept, try again")
    finally:
        if dash_before is not None and not done:
            _restore(kb, dash_before)  # a refused release leaves the files as they were
        release_write_lock(held)


def _refresh_dashboard(kb: KnowledgeBase) -> tuple[Path, bytes | None]:
    """Render DASHBOARD.md from the working tree being released (kb's writes keep it
    fresh; a release commits it with the tree); returns the bytes to restore."""
    path = kb.root / kb.config.paths["dashboard"]
    try:
        old = read_regular(path)
    except OSError:
        old = None
    try:
        regenerate_dashboard(kb.root)
    except OSError as exc:  # a read-only work tree, an unreadable DASHBOARD.md, …
        raise os_failure(exc, f"refresh {kb.prefix}{kb.config.paths['dashboard']}",
                         "nothing was released") from None
    return path, old


def _restore(kb: KnowledgeBase, saved: tuple[Path, bytes | None]) -> None:
    path, old = saved
    try:
        if old is not None and read_regular(path) != old:
            path.write_bytes(old)
    except OSError:
        pass  # best effort, as every rollback: the release's own error is the one to report


def _unpushed(top: Path, remote: str, branch: str, head: str | None,
              paths: list[str]) -> str | None:
    """``head`` when it holds commits touching ``paths`` that ``remote``'s copy of
    ``branch`` (as last fetched) lacks; else None."""
    if not head or not paths:
        return None
    known = git.rev_parse(f"refs/remotes/{remote}/{branch[len('refs/heads/'):]}", top)
    if known == head:
        return None
    span = [head, "--not", known] if known else [head]
    touched = git.out(["rev-list", "-n", "1", *span, "--", *paths], top)
    return head if touched else None


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


def _raise_if_lost(top: Path, tg: list[LockTarget], owner: str, now: int, s: Settings,
                   remote: str | None = None) -> None:
    cur = read_locks(top, [t.ref for t in tg], remote)
    for t in tg:
        c = cur.get(t.ref)
        if c is None or c.owner != owner:
            who = f"taken over by {c.describe(now, s.grace)}" if c else "deleted (pruned after expiry?)"
            raise LockLost(f"your lock on {t.path} was {who} while you released it; nothing "
                           "was committed and the working tree is as it was, your edits included")



__all__ = ["release"]
