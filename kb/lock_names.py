"""The names a lock lives under and where the lock remote is configured: what the
pre-commit hook needs to find out that no changed path is locked, without importing
the lock machinery (:mod:`kb.locks`, :mod:`kb.remote_locks` re-export these)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Optional

from kb import git

LOCKS_NS = "refs/kb/locks/"


def lock_ref(repo_path: str) -> str:
    """``refs/kb/locks/<sha1 of the repository-relative path>``."""
    return LOCKS_NS + hashlib.sha1(repo_path.encode("utf-8", "surrogateescape")).hexdigest()


def lock_remote(top: Path, config: Any) -> Optional[str]:
    """The configured lock remote (git config ``kb.lockRemote``, else ``[locks]
    remote``), or None."""
    value = (git.config("kb.lockRemote", top) or "").strip()
    if value:
        return value
    locks = getattr(config, "locks", None) or {}
    value = locks.get("remote") if isinstance(locks, dict) else None
    return str(value) if value else None
