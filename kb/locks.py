"""Write locks as git refs and commits (DESIGN.md §5): the core.

A lock on a file is the ref ``refs/kb/locks/<sha1(path)>`` (``path`` is the
repository-relative path, ``/``-separated, UTF-8) pointing at a *lock
commit*: a parentless commit of the empty tree, on no branch, whose message
records what the lock is::

    kb lock: experiments/E001.md

    Kb-Lock-Scope: file
    Kb-Lock-Path: experiments/E001.md
    Kb-Lock-Owner: alice
    Kb-Lock-Claimed: 2026-11-29T16:16:40Z
    Kb-Lock-Expires: 2026-11-29T16:46:40Z
    Kb-Lock-Expires-Epoch: 1795970800
    Kb-Lock-Blob: 3b18e512dba79e4c8300dd08aeb37f8e728b8dad
    Kb-Lock-Previous: <lock commit replaced> (expired|renewed|stolen)   [optional]
    Kb-Lock-Reason: <why it was stolen>                                [optional]

``Kb-Lock-Blob`` is the blob id of the file in the working tree at claim time
(``none`` when the file did not exist). The project-wide lease of Vibe Math
is the same thing on ``refs/kb/project-lock`` with ``Kb-Lock-Scope: project``
and no path.

Every change of a lock ref is a compare-and-swap: creation with an old value
of "absent" (``git update-ref`` / ``create``, or ``push --force-with-lease=
<ref>:``), replacement and deletion with the value read. Expiry allows a grace
margin for clock skew between machines: a lease whose ``Expires-Epoch`` is
``E`` can be taken over by someone else only when their clock reads more than
``E + grace``.

With a remote, the remote's ``refs/kb/locks/*`` is the truth; it is fetched (with
``--prune``) into ``refs/kb/remote-locks/<remote>/``, never into this clone's own
``refs/kb/locks/*``: a KB shared through a remote should name it as its lock remote
(or use ``--remote`` for every lock command).

This module holds the pieces: time, validation, reading locks, making lock
commits, local ref transactions and pushes with leases. The checks writers
and hooks run (which may read a configured lock remote) are in
:mod:`kb.remote_locks`; the use cases are in ``kb.ops.lock_claim`` (claim,
renew, steal, prune, project lock), ``kb.ops.lock_release`` and
``kb.ops.lock_status``. The library never prints.

Test-only environment variables (documented in docs, never needed in use):

- ``KB_NOW``: the current time (kb.clock: epoch seconds or ISO) (clock-skew and expiry tests);

Fault-injection tests kill kb from outside (at the git command a step runs);
the library carries no crash switch.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from kb import git
from kb.errors import ConflictError, GitError, LockedError, NotFoundError, UsageError
from kb.text import CONTROL_CHARS, check_length, visible

from kb.durations import (DEFAULT_GRACE, DEFAULT_TTL, DURATION_SETTINGS,  # noqa: F401 (re-exported)
                          OFFLINE_POLICIES, format_duration, parse_duration, setting_duration)
from kb.lock_names import LOCKS_NS, lock_ref  # noqa: F401 (re-exported)
PROJECT_REF = "refs/kb/project-lock"
ZERO_OID = "0" * 40

#: Characters an owner, reason, remote or path may not hold (kb.text.CONTROL_CHARS).
_CONTROL = CONTROL_CHARS


# -- errors ------------------------------------------------------------------


class LockHeld(LockedError):
    """The target is locked by someone else (exit 1, kind ``locked``). ``lock`` is the holder's lock."""

    def __init__(self, message: str, lock: "Lock") -> None:
        super().__init__(message)
        self.lock = lock


class NotLocked(NotFoundError):
    """Release/renew of a path that is not locked, or not by the caller (exit 1, ``not_found``)."""


class LockLost(ConflictError):
    """The caller's lock changed under it (stolen or expired and taken): nothing committed."""


# -- time and test hooks -------------------------------------------------------


def clock() -> int:
    """Now, as integer epoch seconds; ``KB_NOW`` overrides it (tests only)."""
    from kb import clock as _clock

    return _clock.epoch()


def iso(epoch: int) -> str:
    """Epoch seconds ``epoch`` as ISO 8601 UTC (``2026-01-02T03:04:05Z``)."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- settings and identity -------------------------------------------------------

@dataclass(frozen=True)
class Settings:
    """``[locks]`` of kb.toml: default TTL, grace margin (seconds) and leads."""

    ttl: int = DEFAULT_TTL
    grace: int = DEFAULT_GRACE
    leads: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, locks: dict[str, Any] | None) -> "Settings":
        """The settings of kb.toml's ``[locks]`` table (``ttl``, ``grace`` durations;
        ``leads``).

        Raises UsageError naming the key when a duration does not parse.
        """
        locks = locks or {}
        ttl = setting_duration(locks, "ttl")
        grace = setting_duration(locks, "grace")
        leads = tuple(str(x) for x in locks.get("leads", []) or [])
        return cls(ttl=ttl, grace=grace, leads=leads)


def validate_owner(owner: str) -> str:
    """An owner is a non-empty single line without control characters.

    Raises UsageError when empty, longer than 200 characters or holding a control character.
    """
    if owner is None or not visible(owner):  # only U+200B, U+FEFF, …: as empty as ""
        raise UsageError("the owner is empty: pass --owner NAME "
                         "(or set KB_OWNER, or `git config kb.owner NAME`)")
    if _CONTROL.search(owner):
        raise UsageError(f"the owner {owner!r} contains a newline, a Unicode line or paragraph separator or a "
                         "control character")
    if len(owner) > 200:
        raise UsageError("the owner is longer than 200 characters")
    return owner.strip()


def validate_text(text: str, what: str) -> str:
    """``text`` stripped; UsageError (naming ``what``) when empty, longer than
    :data:`kb.text.LINE_MAX` characters (a reason is one line of a lock's record and of
    its commit's message) or holding a newline or control character.
    """
    if text is None or not visible(text):  # only U+200B, U+FEFF, …: as empty as ""
        raise UsageError(f"{what} is empty")
    check_length(text.strip(), what)
    if _CONTROL.search(text):
        raise UsageError(f"{what} {text!r} contains a newline, a Unicode line or paragraph separator or a "
                         "control character")
    return text.strip()


def default_owner(top: Path) -> str | None:
    """``KB_OWNER`` from the environment, else ``git config kb.owner``, else
    ``git config user.email``, else None (kb's own commands set ``KB_OWNER`` for the
    hooks they run, so a command and its hooks name the same owner)."""
    if os.environ.get("KB_OWNER"):
        return os.environ["KB_OWNER"]
    if git.in_config_scope():  # one `git config --list` for the whole request
        return ((git.config("kb.owner", top) or "").strip()
                or (git.config("user.email", top) or "").strip() or None)
    proc = git.run(["config", "--get-regexp", r"^(kb\.owner|user\.email)$"], top, check=False)
    found: dict[str, str] = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition(" ")
        found[key.lower()] = value.strip()   # system, global, local…: the last one wins
    return found.get("kb.owner") or found.get("user.email") or None


def resolve_owner(top: Path, owner: str | None) -> str:
    """The explicit owner (validated), else :func:`default_owner`; UsageError when none.

    Raises UsageError when no owner is given or configured, or it is invalid.
    """
    if owner is not None:
        return validate_owner(owner)
    found = default_owner(top)
    if not found:
        raise UsageError("no owner: pass --owner NAME, set KB_OWNER, or set "
                         "`git config kb.owner NAME` (or user.email)")
    return validate_owner(found)


# -- paths -------------------------------------------------------------------------


def repo_paths(kb: Any, paths: Iterable[str], cwd: Path | None = None) -> list[str]:
    """Validate PATH arguments (relative to ``cwd``) and return repository-relative paths.

    Refused (UsageError, exit 2): an empty path, control characters, a ``..``
    component, a path outside the KB, a folder, anything inside ``.git``.

    Raises UsageError for an empty path, ``..``, the KB folder itself, a folder, ``.git`` or a
    path outside the KB.
    """
    base = Path(cwd) if cwd else Path.cwd()
    out: list[str] = []
    for raw in paths:
        if not raw or _CONTROL.search(raw):
            raise UsageError(f"bad path {raw!r}: empty or containing a control character")
        if ".." in raw.replace("\\", "/").split("/"):
            raise UsageError(f"{raw}: a path with '..' is not accepted; name the file inside the KB")
        p = Path(raw)
        full = p if p.is_absolute() else base / p
        full = Path(os.path.normpath(full))
        try:
            full = full.parent.resolve() / full.name
        except OSError:
            pass
        try:
            rel_root = full.relative_to(kb.root)
        except ValueError:
            raise UsageError(f"{raw} is outside the knowledge base {kb.root}") from None
        if rel_root.as_posix() in ("", "."):
            raise UsageError(f"{raw} is the KB folder itself; locks are per file")
        if ".git" in rel_root.parts:
            raise UsageError(f"{raw} is inside .git")
        if full.is_dir() and not full.is_symlink():
            raise UsageError(f"{raw} is a folder; locks are per file")
        rp = full.relative_to(kb.top).as_posix()
        if rp not in out:
            out.append(rp)
    if not out:
        raise UsageError("no path given")
    return out


# -- lock values -----------------------------------------------------------------


@dataclass(frozen=True)
class Lock:
    """One lock as its commit records it. ``path`` is None for the project lock."""

    ref: str
    commit: str
    scope: str
    path: str | None
    owner: str
    expires: int
    claimed: str = ""
    blob: str | None = None
    previous: str | None = None
    reason: str | None = None
    readable: bool = True

    def expired(self, now: int, grace: int) -> bool:
        """True when someone else may take it over: ``now > expires + grace``."""
        return now > self.expires + grace

    def remaining(self, now: int) -> int:
        """Seconds of lease left by ``now`` (negative once past the expiry)."""
        return self.expires - now

    @property
    def label(self) -> str:
        """The locked path, or ``the project lock``."""
        return self.path if self.scope == "file" and self.path else "the project lock"

    def describe(self, now: int, grace: int) -> str:
        """``alice until 2026-…Z (29m50s left)`` or ``alice, expired 3m ago``."""
        left = self.remaining(now)
        if left >= 0:
            return f"{self.owner} until {iso(self.expires)} ({format_duration(left)} left)"
        if not self.expired(now, grace):
            return (f"{self.owner}, lease ended {format_duration(left)} ago "
                    f"(free after the {grace}s grace, in {format_duration(self.expires + grace - now)})")
        return f"{self.owner}, expired {format_duration(left)} ago"

    def as_dict(self, now: int | None = None, grace: int | None = None) -> dict[str, Any]:
        """The lock as JSON-ready data: times as ISO 8601 with an ``_epoch`` twin; with ``now``
        and
        ``grace`` (epoch seconds, seconds) also ``remaining``, ``expired`` and ``in_grace``.
        """
        d = asdict(self)
        # One naming for agents: times are ISO 8601 with an ``_epoch`` twin.
        d["expires"] = iso(self.expires)
        d["expires_epoch"] = self.expires
        if now is not None and grace is not None:
            d["remaining"] = self.remaining(now)
            d["expired"] = self.expired(now, grace)
            d["in_grace"] = self.remaining(now) < 0 and not self.expired(now, grace)
        return d


def parse_lock(ref: str, commit: str, message: str) -> Lock:
    """Read a lock commit's message; an unreadable one is a Lock with ``readable=False``
    (owner ``?``, already expired) so that status shows it and prune/steal can free it."""
    fields: dict[str, str] = {}
    # By "\n" only: str.splitlines() would also break at U+2028 and friends
    # inside a value, letting an owner name forge the fields after it.
    for line in message.split("\n"):
        line = line.removesuffix("\r")
        if line.startswith("Kb-Lock-"):
            key, sep, value = line.partition(":")
            if sep:  # "Key: value": only the one separating space goes (a path may end in one)
                fields.setdefault(key[len("Kb-Lock-"):].lower(),
                                  value[1:] if value.startswith(" ") else value)
    scope = fields.get("scope") or ("project" if ref == PROJECT_REF else "file")
    try:
        expires = int(fields["expires-epoch"])
        owner = fields["owner"]
        ok = bool(owner)
    except (KeyError, ValueError):
        expires, owner, ok = 0, fields.get("owner") or "?", False
    blob = fields.get("blob")
    prev = fields.get("previous")
    return Lock(ref=ref, commit=commit, scope=scope, path=fields.get("path"), owner=owner,
                expires=expires, claimed=fields.get("claimed", ""),
                blob=None if blob in (None, "none") else blob,
                previous=prev.split()[0] if prev else None, reason=fields.get("reason"),
                readable=ok)


_REF_FORMAT = ("%(refname)%00%(objectname)%00%(objecttype)%00"
               "%(if:equals=commit)%(objecttype)%(then)%(contents)%(end)%00")


def lock_refs(top: Path, patterns: list[str]) -> Iterator[tuple[str, str, str]]:
    """``(ref, commit, message)`` of every ref matching ``patterns`` (one ``git
    for-each-ref``; the message is empty when the ref is not a commit)."""
    if not patterns:
        return
    proc = git.run(["for-each-ref", f"--format={_REF_FORMAT}", *patterns], top)
    parts = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    for i in range(0, len(parts) - 3, 4):
        ref = parts[i].lstrip("\n")
        if ref:
            yield ref, parts[i + 1], parts[i + 3] if parts[i + 2] == "commit" else ""


def read_locks(top: Path, refs: Iterable[str] | None = None,
               remote: str | None = None) -> dict[str, Lock]:
    """Every lock ref (or only ``refs``) -> :class:`Lock`, in one ``git for-each-ref``:
    this clone's own locks, or (``remote``) the remote's as :func:`fetch_locks` last
    fetched them, keyed by their refs on the remote (``refs/kb/locks/<h>``)."""
    if remote is not None:
        ns = remote_namespace(remote)
        want = None if refs is None else set(refs)
        out: dict[str, Lock] = {}
        for ref, commit, msg in lock_refs(top, [f"{ns}locks", f"{ns}project-lock"]):
            canon = PROJECT_REF if ref == f"{ns}project-lock" else "refs/kb/" + ref[len(ns):]
            if want is None or canon in want:
                out[canon] = parse_lock(canon, commit, msg)
        return out
    patterns = list(refs) if refs is not None else [LOCKS_NS.rstrip("/"), PROJECT_REF]
    return {ref: parse_lock(ref, commit, msg) for ref, commit, msg in lock_refs(top, patterns)
            if ref == PROJECT_REF or ref.startswith(LOCKS_NS)}


#: Where a remote's locks are fetched: ``refs/kb/remote-locks/<remote>/``, never this
#: clone's own ``refs/kb/locks/`` (a copy there would block this clone's writes after
#: the holder released it, and pruning it would delete this clone's own locks).
REMOTE_LOCKS_NS = "refs/kb/remote-locks/"


def remote_namespace(remote: str) -> str:
    """Where ``remote``'s lock refs are fetched: ``refs/kb/remote-locks/<remote>/``."""
    return f"{REMOTE_LOCKS_NS}{remote}/"


def fetched_ref(ref: str, remote: str) -> str:
    """The local copy of the remote's lock ref ``ref`` (``refs/kb/locks/<h>`` or the project
    lock) in :func:`remote_namespace`."""
    ns = remote_namespace(remote)
    return ns + "project-lock" if ref == PROJECT_REF else ns + ref[len("refs/kb/"):]


def lock_message(*, scope: str, path: str | None, owner: str, now: int, expires: int,
                 blob: str | None, previous: str | None = None, how: str | None = None,
                 reason: str | None = None) -> str:
    """The commit message of a lock commit: a subject and the ``Kb-Lock-*`` trailers (times ISO
    8601).
    """
    subject = f"kb lock: {path}" if scope == "file" else "kb project lock"
    lines = [f"Kb-Lock-Scope: {scope}"]
    if path is not None:
        lines.append(f"Kb-Lock-Path: {path}")
    lines += [f"Kb-Lock-Owner: {owner}", f"Kb-Lock-Claimed: {iso(now)}",
              f"Kb-Lock-Expires: {iso(expires)}", f"Kb-Lock-Expires-Epoch: {expires}"]
    if scope == "file":
        lines.append(f"Kb-Lock-Blob: {blob or 'none'}")
    if previous:
        lines.append(f"Kb-Lock-Previous: {previous} ({how or 'replaced'})")
    if reason:
        lines.append(f"Kb-Lock-Reason: {reason}")
    return subject + "\n\n" + "\n".join(lines) + "\n"


def make_lock_commit(top: Path, message: str, owner: str, now: int) -> str:
    """Write the lock commit (empty tree, no parent) and return its id."""
    ident = re.sub(r"[<>]", "", owner) or "kb"
    env = {"GIT_AUTHOR_NAME": ident, "GIT_AUTHOR_EMAIL": "kb-lock",
           "GIT_COMMITTER_NAME": ident, "GIT_COMMITTER_EMAIL": "kb-lock",
           "GIT_AUTHOR_DATE": f"{now} +0000", "GIT_COMMITTER_DATE": f"{now} +0000"}
    # The empty tree is written, not only named: `git fsck` reports a commit
    # whose tree is missing from the store, even the empty one.
    git.write_objects("tree", [b""], top)
    # Signed whenever the user's `git commit` would be (commit.gpgSign), else refused
    # with git's reason: a lock record is a commit like any other (issue #11).
    return git.commit_tree(top, git.EMPTY_TREE, (), message, env=env)


def worktree_blob(top: Path, repo_path: str) -> str | None:
    """Blob id of the working-tree file (as read, no filters), None when absent."""
    full = top / repo_path
    try:
        if full.is_symlink():
            return git.blob_id(os.readlink(full).encode("utf-8", "surrogateescape"))
        return git.blob_id(full.read_bytes())
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


# -- local ref transactions --------------------------------------------------------


def ref_transaction(top: Path, ops: list[tuple], message: str = "kb lock") -> tuple[bool, str]:
    """Apply ref updates atomically with ``git update-ref --stdin`` (start/prepare/commit).

    ``ops`` items: ``("create", ref, new)``, ``("update", ref, new, old)`` (``old``
    None: no check), ``("delete", ref, old)``. Returns (True, "") or (False,
    git's message) when an expected old value did not hold (nothing changed).

    Raises GitError when git refuses the update (a ref moved), ValueError for an unknown op (a
    bug).
    """
    lines = ["start"]
    for op in ops:
        if op[0] == "create":
            lines.append(f"create {op[1]} {op[2]}")
        elif op[0] == "update":
            lines.append(f"update {op[1]} {op[2]}" + (f" {op[3]}" if op[3] else ""))
        elif op[0] == "delete":
            lines.append(f"delete {op[1]}" + (f" {op[2]}" if op[2] else ""))
        else:  # pragma: no cover - programming error
            raise ValueError(op)
    lines += ["prepare", "commit", ""]
    proc = git.run(["update-ref", "-m", message, "--stdin"], top,
                   input="\n".join(lines).encode("utf-8"), check=False, write=True)
    if proc.returncode == 0:
        return True, ""
    return False, proc.stderr.decode("utf-8", "replace").strip()


# -- remotes ------------------------------------------------------------------------


def check_remote(top: Path, remote: str) -> None:
    """UsageError unless ``remote`` is a configured remote name.

    Raises UsageError for a malformed or unknown remote name.
    """
    if not remote or _CONTROL.search(remote) or remote.startswith("-"):
        raise UsageError(f"bad remote name {remote!r}")
    proc = git.run(["remote", "get-url", remote], top, check=False)
    if proc.returncode != 0:
        known = git.out(["remote"], top).split()
        raise UsageError(f"no remote named {remote!r}"
                         + (f" (remotes: {', '.join(known)})" if known else " (no remotes configured)"))


@dataclass
class PushResult:
    """The outcome of ``git push --porcelain``: ``ok``, remote ref -> (flag, summary), git's
    message.
    """

    ok: bool
    refs: dict[str, tuple[str, str]]   # remote ref -> (flag, summary)
    message: str

    def rejected(self, ref: str) -> str | None:
        """git's reason when ``ref`` was rejected (flag ``!``), else None."""
        flag, summary = self.refs.get(ref, ("?", ""))
        return summary if flag == "!" else None


def push(top: Path, remote: str, refspecs: list[str], leases: dict[str, str | None],
         *, atomic: bool, verify: bool = False, owner: str | None = None) -> PushResult:
    """``git push --porcelain [--atomic] remote refspecs --force-with-lease=ref:old``.

    ``leases`` maps a remote ref to the value it must have (None: must be absent).
    ``owner`` is who pushes, passed to the pre-push hook as ``KB_OWNER`` (a release
    as ``--owner alice`` must not be refused by alice's own locks). Never raises for
    a rejection: the caller reads :class:`PushResult`.
    """
    args = ["push", "--porcelain", "--no-progress"]
    if atomic:
        args.append("--atomic")
    if not verify:
        args.append("--no-verify")
    args += [f"--force-with-lease={ref}:{old or ''}" for ref, old in leases.items()]
    args += [remote, *refspecs]
    # git's messages in English: a caller reads words in them (kb.ops.lock_release); the
    # pre-push hook inherits that, kb's own speaks English anyway.
    proc = git.run(args, top, check=False, write=True,
                   env={"KB_OWNER": owner} if owner else None, in_english=True)
    refs: dict[str, tuple[str, str]] = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        bits = line.split("\t")
        if len(bits) >= 3 and len(bits[0]) == 1:
            dst = bits[1].rpartition(":")[2]
            refs[dst] = (bits[0], bits[2])
    msg = proc.stderr.decode("utf-8", "replace").strip()
    if proc.returncode != 0 and not refs:
        # No per-ref report: the remote could not be reached at all.
        raise GitError(f"git push to {remote} failed: {msg}", msg)
    ok = proc.returncode == 0 and all(f != "!" for f, _ in refs.values())
    return PushResult(ok=ok, refs=refs, message=msg)


def fetch_locks(top: Path, remote: str, extra: Iterable[str] = ()) -> None:
    """Copy the remote's locks into :func:`remote_namespace`, with pruning (one ``git
    fetch``; ``extra`` refspecs fetched with them). Raises GitError when the fetch fails,
    git's message in English (a caller reads it: a branch the remote lacks)."""
    ns = remote_namespace(remote)
    args = ["fetch", "--prune", "--no-tags", "--no-write-fetch-head", "--quiet", remote,
            f"+{LOCKS_NS}*:{ns}locks/*", f"+{PROJECT_REF}*:{ns}project-lock*", *extra]
    git.run(args, top, write=True, in_english=True)


__all__ = [
    "DURATION_SETTINGS", "LOCKS_NS", "OFFLINE_POLICIES", "PROJECT_REF", "Lock", "LockHeld", "LockLost", "NotLocked", "Settings",
    "REMOTE_LOCKS_NS", "check_remote", "clock",
    "default_owner", "fetch_locks", "fetched_ref", "remote_namespace", "format_duration", "iso", "lock_message", "lock_ref", "lock_refs",
    "make_lock_commit", "parse_duration", "parse_lock", "push", "read_locks",
    "ref_transaction", "repo_paths", "resolve_owner", "setting_duration", "validate_owner", "validate_text",
    "worktree_blob",
]
