"""What the lock use cases share: their result types, targets and settings.

The use cases are :mod:`kb.ops.lock_claim` (claim, renew, steal, the project
lock), :mod:`kb.ops.lock_release` and :mod:`kb.ops.lock_status` (status,
prune); the ref and commit formats are in :mod:`kb.locks` (DESIGN.md §5).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kb import git
from kb.config import tomllib
from kb.errors import UsageError
from kb.locks import PROJECT_REF, Lock, LockHeld, Settings, iso, lock_ref, parse_duration, repo_paths
from kb.ops.result import OpResult
from kb.repo import KnowledgeBase

#: Compare-and-swap tries of a claim, renew, steal or release under contention.
ATTEMPTS = 8

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
        """The JSON object of ``kb lock claim|renew|steal --json`` for this lock."""
        return {"ref": self.ref, "scope": self.scope, "path": self.path, "commit": self.commit,
                "owner": self.owner, "expires": iso(self.expires), "expires_epoch": self.expires,
                "how": self.how,
                "previous": ({"commit": self.previous.commit, "owner": self.previous.owner}
                             if self.previous else None)}


@dataclass
class AcquireResult:
    """What a claim, renew, steal or project lock did: the locks now held, the time, and
    for remote claims how far HEAD is behind the remote branch."""

    owner: str
    now: int
    locks: list[Acquired]
    remote: str | None = None
    branch: str | None = None
    behind: int | None = None   # commits of the remote branch HEAD lacks (remote claims)

    def as_dict(self) -> dict[str, Any]:
        """The JSON object of ``kb lock claim|renew|steal --json``."""
        return {"owner": self.owner, "now": iso(self.now), "now_epoch": self.now, "remote": self.remote,
                "locks": [a.as_dict() for a in self.locks], "branch": self.branch,
                "behind": self.behind}


@dataclass
class ReleaseResult:
    """What a release (or a project unlock) did: the locks given back, the commit made."""

    owner: str
    released: list[str]                 # paths (or "project") whose lock ref was deleted
    committed: list[str]                # paths whose changes the commit holds
    commit: str | None                  # None: nothing changed, only the refs were deleted
    branch: str | None
    lock_commits: list[str]
    remote: str | None = None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The operation fields of ``kb lock release --json``."""
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
            blobs = {e.path: e.oid for e in git.tree_entries(out)}
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
        """The lock's JSON object in ``kb lock status --json``."""
        d = self.lock.as_dict()
        d.update(expired=self.expired, in_grace=self.in_grace, remaining=self.remaining,
                 modified_since_claim=self.modified, notes=self.notes)
        return d


@dataclass
class StatusReport:
    """``kb lock status``: every lock explained, the project lock, an interrupted release."""

    now: int
    grace: int
    locks: list[LockState]
    project: LockState | None
    interrupted: dict[str, Any] | None
    remote: str | None = None
    #: Why the remote could not be read (its locks as last fetched are shown), else None.
    stale: str | None = None

    @property
    def source(self) -> str:
        """Where the locks came from: ``this clone``, ``remote <name> (fetched now)``, or
        ``remote <name> (as last fetched: …)`` when the remote could not be read."""
        if not self.remote:
            return "this clone"
        return f"remote {self.remote} " + (f"(as last fetched: {self.stale})" if self.stale
                                            else "(fetched now)")

    def as_dict(self) -> dict[str, Any]:
        """The JSON object of ``kb lock status --json`` (every front end prints this one)."""
        return {"now": iso(self.now), "now_epoch": self.now, "grace": self.grace,
                "remote": self.remote, "locks": [s.as_dict() for s in self.locks],
                "project": self.project.as_dict() if self.project else None,
                "interrupted_release": self.interrupted, "source": self.source,
                "stale": self.stale}


# -- helpers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LockTarget:
    """What one lock ref guards: a file (``path``) or the whole project."""

    ref: str
    scope: str
    path: str | None


def file_targets(kb: KnowledgeBase, paths: list[str], cwd: Path | None) -> list[LockTarget]:
    """One :class:`LockTarget` per path (resolved against ``cwd`` by
    :func:`kb.locks.repo_paths`: UsageError for an empty, ``..``, outside or folder path)."""
    return [LockTarget(lock_ref(p), "file", p) for p in repo_paths(kb, paths, cwd)]


PROJECT_TARGET = LockTarget(PROJECT_REF, "project", None)


def lock_settings(kb: KnowledgeBase) -> Settings:
    """``[locks]`` of kb.toml; ``leads`` from the committed kb.toml only (HEAD's):
    an uncommitted edit grants no one the right to steal a running lease."""
    return replace(Settings.from_config(kb.config.locks), leads=committed_leads(kb))


def committed_leads(kb: KnowledgeBase) -> tuple[str, ...]:
    """``[locks] leads`` of HEAD's kb.toml (none when there is no commit or no file)."""
    proc = git.run(["cat-file", "blob", f"HEAD:{kb.prefix}kb.toml"], kb.top, check=False)
    if proc.returncode != 0:
        return ()
    try:
        locks = tomllib.loads(proc.stdout.decode("utf-8")).get("locks", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return ()
    leads = locks.get("leads", []) if isinstance(locks, dict) else []
    return tuple(str(x) for x in leads) if isinstance(leads, list) else ()


def lease_seconds(kb: KnowledgeBase, ttl: str | int | None) -> int:
    """The lease in seconds: ``ttl`` (seconds, or ``30m``/``2h``), else ``[locks] ttl``.
    UsageError for a zero or malformed TTL.

    Raises UsageError for a TTL that does not parse or is 0.
    """
    if ttl is None:
        return lock_settings(kb).ttl
    if isinstance(ttl, int):
        if ttl <= 0:
            raise UsageError("the TTL must be longer than 0s")
        return ttl
    return parse_duration(ttl)


def refuse_held(lk: Lock, now: int, grace: int, what: str = "") -> LockHeld:
    """The :class:`kb.locks.LockHeld` error for a lock someone else holds."""
    return LockHeld(f"{lk.label} is locked by {lk.describe(now, grace)}{what}; nothing was changed",
                    lk)



__all__ = ["ATTEMPTS", "Acquired", "AcquireResult", "ReleaseResult", "LockState", "StatusReport",
           "LockTarget", "file_targets", "PROJECT_TARGET", "lock_settings", "committed_leads",
           "lease_seconds", "refuse_held"]
