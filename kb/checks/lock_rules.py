"""History rule KB380: a staged change to a path locked by another owner
(DESIGN.md §4 and §5). Staged mode only — the pre-commit hook — because past
lock state is not known in CI.

The committing owner is ``KB_OWNER`` (kb's own commands pass the ``--owner``
they act for, so a holder's release is never refused by its own lock), else
``git config kb.owner``, else ``git config user.email``. Expired locks
(grace included) do not refuse anything: a claim would take them over.
"""

from __future__ import annotations

import os

from kb.checks.diagnostics import diag
from kb.checks.changes import Change
from kb.checks.registry import history_rule


@history_rule("KB380", modes=("staged",))
def locked_by_another_owner(c: Change) -> list:
    """KB380: the change touches a path whose write lock someone else holds."""
    from kb.errors import KbError
    from kb.lock_names import lock_ref, lock_remote

    by_ref = {lock_ref(c.kb.repo_path(x.path)): x.path for x in c.changes}
    if not by_ref:
        return []
    top = c.kb.top
    remote = lock_remote(top, c.config)
    if remote is None and not _any_ref(top, list(by_ref)):
        return []  # no lock on a changed path in this clone: nothing else to read
    from kb.locks import Settings, clock, default_owner
    from kb.remote_locks import blocking_locks

    owner = os.environ.get("KB_OWNER") or default_owner(top) or ""
    try:
        settings = Settings.from_config(getattr(c.config, "locks", {}))
    except KbError:
        settings = Settings()
    now = clock()
    paths = [c.kb.repo_path(p) for p in by_ref.values()]
    try:  # with a lock remote, the remote's locks (fetched now) decide
        held = blocking_locks(top, paths, owner, settings, now,
                              config=c.config if remote is not None else None)
    except KbError as exc:  # lock remote unreachable and [locks] offline = "refuse"
        return [diag(next(iter(by_ref.values())), 1, "KB380", str(exc))]
    return [diag(by_ref[lk.ref], 1, "KB380",
                 f"{lk.path or by_ref[lk.ref]} is locked by {lk.describe(now, settings.grace)}; "
                 f"this commit (as {owner or 'no owner'}) changes it — wait for the holder's "
                 "release, or claim it once the lease is over (kb lock status)")
            for lk in held]


def _any_ref(top, refs: list) -> bool:
    """Whether one of the lock refs ``refs`` names an object, asked through the process's
    ``git cat-file --batch`` (the one that reads the snapshot's blobs: no git process of
    its own). A ref of the form ``refs/kb/locks/<sha1>`` resolves to itself first; when
    one does, the locks are read as before (``git for-each-ref``)."""
    from kb import git

    return bool(git.read_blobs(refs, top))
