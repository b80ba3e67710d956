"""Shared locks: with a lock remote, the remote's lock refs are the truth.

A KB names its lock remote in ``kb.toml`` (``[locks] remote = "origin"``) or a
clone in git config (``kb.lockRemote``, which wins). Then:

- ``kb lock`` commands act on the remote (as ``--remote`` does);
- every kb write (the transaction) and the pre-commit hook (KB380) and the
  pre-push hook read the remote's locks, fetched with one bounded ``git
  fetch`` into a namespace of their own, ``refs/kb/remote-locks/<remote>/``
  (where ``kb lock … --remote`` fetches them too; the clone's own
  ``refs/kb/locks/*`` are not read then, and a plain ``git fetch`` is never
  assumed to bring them);
- when the remote cannot be reached, the message says so and ``[locks]
  offline`` decides: ``refuse`` (the default: nothing is written) or ``warn``
  (the write goes ahead, unchecked, with a warning).

The same fetch brings the remote's ``HEAD`` (its default branch) into the
namespace, so a write that allocates an ID can warn when the remote already
holds it (:func:`taken_upstream`). Without a lock remote nothing here touches
the network. The library never prints: warnings go to a ``notify`` callback.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from kb import git
from kb.errors import RefusedError
from kb.lock_names import lock_remote  # noqa: F401 (re-exported)
from kb.locks import (
    OFFLINE_POLICIES,
    REMOTE_LOCKS_NS, Lock, LockHeld, Settings, clock, default_owner, lock_ref, read_locks,
    remote_namespace,
)

NS = REMOTE_LOCKS_NS
DEFAULT_TIMEOUT = 10.0
Notify = Optional[Callable[[str], None]]


def offline_policy(config: Any, top: Optional[Path] = None) -> str:
    """``refuse`` (default) or ``warn``: what a write does when the remote is
    unreachable (git config ``kb.lockOffline``, else ``[locks] offline``)."""
    if top is not None:
        value = (git.config("kb.lockOffline", top) or "").strip()
        if value in OFFLINE_POLICIES:
            return value
    locks = getattr(config, "locks", None) or {}
    value = str(locks.get("offline", "refuse")) if isinstance(locks, dict) else "refuse"
    return value if value in OFFLINE_POLICIES else "refuse"


def namespace(remote: str) -> str:
    """Where the remote's lock refs are fetched: ``refs/kb/remote-locks/<remote>/``."""
    return remote_namespace(remote)


def refspecs(remote: str) -> list[str]:
    """The fetch refspecs of the lock namespace (locks, project lock, default branch)."""
    ns = namespace(remote)
    return [f"+refs/kb/locks/*:{ns}locks/*", f"+refs/kb/project-lock*:{ns}project-lock*",
            f"+HEAD:{ns}HEAD"]


def ensure_refspecs(top: Path, remote: str) -> bool:
    """Add the lock refspecs to ``remote.<remote>.fetch`` (so ``git fetch`` keeps the
    namespace fresh too). True if the config changed."""
    proc = git.run(["config", "--get-all", f"remote.{remote}.fetch"], top, check=False)
    have = set(proc.stdout.decode("utf-8", "replace").split())
    changed = False
    for spec in refspecs(remote)[:2]:
        if spec not in have:
            git.run(["config", "--add", f"remote.{remote}.fetch", spec], top, write=True)
            changed = True
    return changed


def fetch(top: Path, remote: str, timeout: float = DEFAULT_TIMEOUT) -> Optional[str]:
    """Fetch the remote's locks into :func:`namespace` (pruned; bounded by
    ``timeout`` seconds). Returns None on success, else why it failed."""
    # git's messages in English: its reason is read (:func:`_fetch_failure`).
    env = git.english({**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND":
                       os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o ConnectTimeout=5")})
    args = ["git", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--prune", remote]
    why: Optional[str] = None
    try:
        for specs in (refspecs(remote), refspecs(remote)[:2]):  # an empty remote has no HEAD
            proc = subprocess.run(args + specs, cwd=top, capture_output=True, timeout=timeout, env=env)
            if proc.returncode == 0:
                why = None
                break
            why = _fetch_failure(proc.stderr.decode("utf-8", "replace"), remote)
            if "HEAD" not in why:
                break
    except subprocess.TimeoutExpired:
        why = f"no answer within {timeout:.0f}s"
    return why


def _fetch_failure(stderr: str, remote: str) -> str:
    """git's reason in one line: its first ``fatal:``/``error:`` line (the last line
    is often the tail of a hint: "and the repository exists."), with the line it ends
    on a colon to introduce (git://: "unable to connect to HOST:" then the errno)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for i, ln in enumerate(lines):
        if ln.startswith(("fatal:", "error:")):
            why = ln.split(":", 1)[1].strip()
            if why.endswith(":") and i + 1 < len(lines) \
                    and not lines[i + 1].startswith(("fatal:", "error:", "hint:")):
                why += " " + lines[i + 1]
            if "does not appear to be a git repository" in why:
                why += f" (no git remote named {remote!r} here? see `git remote -v`)"
            return why
    return lines[-1] if lines else "git fetch failed"


def read(top: Path, remote: str, refs: Optional[Iterable[str]] = None) -> dict[str, Any]:
    """The fetched remote locks as ``{canonical ref: Lock}`` (``refs/kb/locks/<h>``)."""
    return read_locks(top, refs, remote)


@dataclass
class LockView:
    """The locks a check should obey and where they came from."""

    locks: dict[str, Any]
    source: str          # "this clone" | "remote origin"
    offline: Optional[str] = None   # why the remote could not be read (warn policy)


def effective_locks(top: Path, config: Any, refs: Optional[Iterable[str]] = None,
                    notify: Notify = None) -> LockView:
    """Locks from the lock remote when one is configured, else the clone's own.

    Raises RefusedError when the remote is unreachable and the policy is
    ``refuse``; with ``warn`` returns no locks and tells ``notify``.
    """

    remote = lock_remote(top, config)
    if remote is None:
        return LockView(read_locks(top, refs), "this clone")
    why = fetch(top, remote)
    if why is not None:
        policy = offline_policy(config, top)
        # The remote's URL as configured: git's reason may name only the host (a git:// URL
        # gives "unable to connect to 127.0.0.1:", its port gone), so say where kb looked.
        url = git.config(f"remote.{remote}.url", top)
        at = f" at {url}" if url and url != remote else ""
        msg = (f"cannot read the locks of the lock remote {remote}{at} ({why}); "
               f"[locks] offline = {policy}")
        if policy == "refuse":
            # Said for a write and for the hook alike: refused, and how to go on -- per
            # clone first (kb.toml's setting is shared and committed).
            raise RefusedError(msg + " — refused (retry when the remote answers, or go on without "
                               "the shared locks: `git config kb.lockOffline warn` in this "
                               "clone, [locks] offline = \"warn\" in kb.toml for everyone)")
        if notify is not None:
            notify("warning: " + msg + " — writing without checking the shared locks")
        return LockView({}, f"remote {remote}", offline=why)
    return LockView(read(top, remote, refs), f"remote {remote}")


def taken_upstream(top: Path, config: Any, kb_prefix: str, ids: list[str],
                   fetched: bool = False) -> list[str]:
    """Of ``ids`` about to be allocated, those the lock remote's default branch
    (fetched with the locks; ``fetched``: already fetched by this operation)
    already declares. Empty without a lock remote."""
    remote = lock_remote(top, config)
    if remote is None or not ids:
        return []
    if not fetched and fetch(top, remote) is not None:
        return []
    head = git.rev_parse(f"{namespace(remote)}HEAD", top)
    if head is None:
        return []
    want = set(ids)
    theirs = _declared(top, head, config, kb_prefix, want)
    here = git.rev_parse("HEAD", top)
    ours = _declared(top, here, config, kb_prefix, want) if here else set()
    # Only IDs this write allocates (absent here) and the remote already has.
    return [i for i in ids if i in theirs and i not in ours]


def _declared(top: Path, rev: str, config: Any, kb_prefix: str, want: set[str]) -> set[str]:
    """Which of ``want`` the KB declares at commit ``rev`` (tree.md and the files
    named by an ID only: a bounded read)."""
    from kb.parse import classify, parse_file

    out: set[str] = set()
    names = git.run(["ls-tree", "-r", "-z", "--name-only", rev, "--", kb_prefix or "."], top,
                    check=False).stdout
    for rp in git.split_z(names):
        rel = rp[len(kb_prefix):] if kb_prefix and rp.startswith(kb_prefix) else rp
        fmt = classify(rel, config)
        if fmt is None:
            continue
        stem = rel.rsplit("/", 1)[-1][:-3]
        if fmt != "tree" and stem not in want:
            continue
        data = git.run(["cat-file", "blob", f"{rev}:{rp}"], top, check=False).stdout
        out |= {o.id for o in parse_file(rel, data, config, fmt=fmt).objects if o.id in want}
    return out


def pushed_lock_conflicts(top: Path, ranges: list[tuple[Optional[str], str]],
                          owner: Optional[str]) -> list[str]:
    """For the pre-push hook: paths the pushed commits change that another owner
    holds on the lock remote (fetched now). One message per path; an
    unreachable remote with the refuse policy is one message too. Empty for a
    KB without a lock remote."""
    return [msg for _path, msg in pushed_lock_holds(top, ranges, owner)]


def pushed_lock_holds(top: Path, ranges: list[tuple[Optional[str], str]],
                      owner: Optional[str]) -> list[tuple[Optional[str], str]]:
    """:func:`pushed_lock_conflicts` as (repository path, message) pairs; the path is
    None for a message about the lock remote itself (unreachable, refused)."""
    from kb.errors import KbError
    from kb.repo import find_all_kbs, open_kb

    out: list[tuple[Optional[str], str]] = []
    changed: set[str] = set()
    for base, tip in ranges:
        rng = [base, tip] if base else [git.EMPTY_TREE, tip]
        changed |= set(git.split_z(git.run(["diff", "--name-only", "-z", *rng], top).stdout))
    if not changed:
        return out
    for prefix in find_all_kbs(top):
        try:
            k = open_kb(top / prefix if prefix else top)
        except KbError:
            continue
        remote = lock_remote(top, k.config)
        if remote is None:
            continue
        paths = sorted(p for p in changed if p.startswith(k.prefix))
        try:
            settings = Settings.from_config(getattr(k.config, "locks", {}))
            now = clock()
            held = blocking_locks(top, paths, owner, settings, now, config=k.config)
        except KbError as exc:
            out.append((None, str(exc)))
            continue
        for lk in held:
            out.append((lk.path, f"{lk.path} is locked on {remote} by "
                        f"{lk.describe(now, settings.grace)}; this push (as {owner or 'no owner'}) "
                        "changes it — wait for the release"))
    return out

# -- checks used by writers and the hook (a configured lock remote decides) -----------


def blocking_locks(top: Path, paths: Iterable[str], owner: str | None,
                   settings: Settings | None = None, now: int | None = None,
                   config: Any = None, notify: Any = None) -> list[Lock]:
    """Locks on repository paths ``paths`` held by someone other than ``owner``
    and not expired (grace included).

    With ``config`` (the KB's), a configured lock remote is the truth: its
    locks are fetched and read instead of this clone's refs
    (:func:`effective_locks`; RefusedError when unreachable and the offline
    policy is refuse; ``notify`` hears the warning otherwise).
    """
    refs = {lock_ref(p): p for p in paths}
    if not refs:
        return []
    settings = settings or Settings()
    now = clock() if now is None else now
    if config is not None:
        locks = effective_locks(top, config, refs, notify).locks
    else:
        locks = read_locks(top, refs)
    return [lk for lk in locks.values()
            if lk.owner != (owner or "") and not lk.expired(now, settings.grace)]


def check_unlocked(kb: Any, paths: Iterable[str], owner: str | None, notify: Any = None) -> None:
    """Raise :class:`LockHeld` when one of ``paths`` (repository-relative) is locked
    by someone else. ``owner`` None: ``KB_OWNER``, else ``git config kb.owner``, else
    ``user.email`` (:func:`kb.locks.default_owner`).
    With a lock remote the remote's locks decide (see :func:`blocking_locks`)."""
    paths = list(paths)
    if not paths:
        return
    if owner is None:
        owner = default_owner(kb.top)
    settings = Settings.from_config(getattr(kb.config, "locks", {}))
    now = clock()
    held = blocking_locks(kb.top, paths, owner, settings, now, config=kb.config, notify=notify)
    if held:
        lk = held[0]
        more = f" (and {len(held) - 1} more locked path(s))" if len(held) > 1 else ""
        raise LockHeld(f"{lk.label} is locked by {lk.describe(now, settings.grace)}{more}; "
                       f"nothing was written (acting as {owner or 'no owner'}; pass --owner "
                       "if you hold the lock)", lk)
