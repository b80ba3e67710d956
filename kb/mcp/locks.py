"""MCP tools of the write locks (git refs): ``kb lock claim|renew|release|steal|prune|status``.

``paths`` are relative to the KB folder; ``owner`` defaults to ``KB_OWNER``, else git
config ``kb.owner``, else ``user.email``; ``remote`` locks on a shared remote, by default
the configured lock remote (``[locks] remote`` / ``git config kb.lockRemote``), as
``kb lock …`` does; ``project_lock`` / ``project_unlock`` take ``remote`` as given,
as ``kb project lock|unlock`` do."""

from typing import Optional

from kb.mcp.registry import Registry
from kb.repo import KnowledgeBase


def _remote(kb: KnowledgeBase, remote: Optional[str]) -> Optional[str]:
    """``remote``, else the configured lock remote, else None (this clone's locks). Without
    it a claim made here would stay in this clone while teammates' writes read the remote."""
    from kb.lock_names import lock_remote

    return remote or lock_remote(kb.top, kb.config)


def lock_claim(kb: KnowledgeBase, paths: list[str], owner: Optional[str] = None,
               ttl: Optional[str] = None, remote: Optional[str] = None) -> object:
    """Tool ``lock_claim``: lock ``paths`` (KB-relative) for ``owner``, all or none; ``ttl``
    like ``30m``.

    Returns the claim's result (the locks taken). Raises UsageError (a bad path or ttl),
    LockedError (held by another owner) or EnvironmentError_ (git, the lock remote).
    """
    from kb.ops.lock_claim import claim

    return claim(kb, paths, owner=owner, ttl=ttl, remote=_remote(kb, remote), cwd=kb.root)


def lock_renew(kb: KnowledgeBase, paths: list[str], owner: Optional[str] = None,
               ttl: Optional[str] = None, remote: Optional[str] = None) -> object:
    """Tool ``lock_renew``: extend ``owner``'s own leases on ``paths`` by ``ttl``.

    Returns the renewed locks. Raises UsageError, NotFoundError (no such lock) or LockedError.
    """
    from kb.ops.lock_claim import renew

    return renew(kb, paths, owner=owner, ttl=ttl, remote=_remote(kb, remote), cwd=kb.root)


def lock_steal(kb: KnowledgeBase, paths: list[str], reason: str, owner: Optional[str] = None,
               ttl: Optional[str] = None, remote: Optional[str] = None) -> object:
    """Tool ``lock_steal``: take ``paths`` over from their holder, recording ``reason``.

    Returns the locks taken. Raises UsageError, RefusedError (the lease has not expired and
    the owner is no lead) or EnvironmentError_.
    """
    from kb.ops.lock_claim import steal

    return steal(kb, paths, reason, owner=owner, ttl=ttl, remote=_remote(kb, remote),
                 cwd=kb.root)


def lock_release(kb: KnowledgeBase, paths: Optional[list[str]] = None, owner: Optional[str] = None,
                 message: Optional[str] = None, all: bool = False, no_verify: bool = False,
                 remote: Optional[str] = None) -> object:
    """Tool ``lock_release``: commit the changes of ``paths`` (or ``all`` held) and drop the
    locks.

    Returns the release's ``OpResult``. Raises UsageError (neither or both of ``paths`` and
    ``all``), NotFoundError, LockedError, RefusedError (verification failed) or
    EnvironmentError_.
    """
    from kb.errors import UsageError
    from kb.ops.lock_release import release

    if not paths and not all:
        raise UsageError("name the paths to release, or pass all")
    if paths and all:
        raise UsageError("give paths or all, not both")
    res = release(kb, list(paths or []), owner=owner, message=message,
                  remote=_remote(kb, remote), all_held=all, verify=not no_verify, cwd=kb.root)
    return res.op_result(kb.top)


def lock_prune(kb: KnowledgeBase, remote: Optional[str] = None) -> object:
    """Tool ``lock_prune``: delete every expired lock; ``{pruned: [lock dicts], remote}``.

    Raises EnvironmentError_ when git or the lock remote fails.
    """
    from kb.ops.lock_status import prune

    remote = _remote(kb, remote)
    return {"pruned": [lk.as_dict() for lk in prune(kb, remote=remote)], "remote": remote}


def lock_status(kb: KnowledgeBase, remote: Optional[str] = None) -> object:
    """Tool ``lock_status``: every lock with owner, expiry and whether it expired.

    Raises EnvironmentError_ when git or the lock remote fails.
    """
    from kb.ops.lock_status import status

    return status(kb, remote=_remote(kb, remote))


def project_lock(kb: KnowledgeBase, owner: Optional[str] = None, ttl: Optional[str] = None,
                 steal: Optional[str] = None, remote: Optional[str] = None) -> object:
    """Tool ``project_lock``: take the whole-KB lock for ``owner`` (``steal`` gives a reason to
    take it over).

    Returns the lock taken. Raises LockedError, UsageError or EnvironmentError_.
    """
    from kb.ops.lock_claim import project_lock as take

    return take(kb, owner=owner, ttl=ttl, remote=_remote(kb, remote), steal_reason=steal)


def project_unlock(kb: KnowledgeBase, owner: Optional[str] = None,
                   remote: Optional[str] = None) -> object:
    """Tool ``project_unlock``: give back the whole-KB lock; returns an ``OpResult``.

    Raises NotFoundError (not held), LockedError (held by another) or EnvironmentError_.
    """
    from kb.ops.lock_claim import project_unlock as give

    return give(kb, owner=owner, remote=_remote(kb, remote)).op_result(kb.top)


def sync(kb: KnowledgeBase, upstream: Optional[str] = None, dry_run: bool = False,
         fetch: bool = True) -> object:
    """Tool ``sync``: ``kb sync [UPSTREAM]`` (fetch unless ``fetch`` is False; renumber the IDs
    this branch added that the upstream holds, merge with kb's drivers, verify); what
    ``kb sync --json`` prints, ``ok`` false on a conflict, a refused merge or a finding left.

    Raises ConflictError (a dirty work tree, a merge in progress), UsageError (no upstream)
    or EnvironmentError_ (the fetch failed)."""
    from kb.ops.sync import sync as run

    return run(kb.root, upstream, dry_run=dry_run, fetch=fetch).to_json()


def register(reg: Registry) -> None:
    """Register this module's tools on ``reg`` (names, descriptions, read/write annotations)."""
    reg.write("lock_claim", lock_claim, "kb lock claim: lock `paths` for `owner` (all or none); "
              "refused with kind locked while someone else holds one.", op_result=False)
    reg.write("lock_renew", lock_renew, "kb lock renew: extend your own leases on `paths`.",
              idempotent=True, op_result=False)
    reg.write("lock_steal", lock_steal, "kb lock steal: take `paths` over after the lease "
              "expired (or as a lead), with a `reason`.", destructive=True,
              op_result=False)
    reg.write("lock_release", lock_release, "kb lock release: commit the changes of `paths` (or "
              "all) and delete their locks in one atomic git transaction.", destructive=True)
    reg.write("lock_prune", lock_prune, "kb lock prune: delete every expired lock.",
              destructive=True, idempotent=True, op_result=False)
    reg.write("sync", sync, "kb sync: bring this branch up to date with `upstream` (default: "
              "its upstream): renumber the IDs both took (the fix for KB350), merge with kb's "
              "merge drivers, verify; `dry_run` only lists the renumbering.", destructive=True,
              open_world=True, op_result=False)
    reg.read("lock_status", lock_status, "kb lock status: every lock with owner, expiry "
             "(ISO and _epoch) and whether it expired.")
    reg.write("project_lock", project_lock, "kb project lock: take (or renew) the project-wide "
              "lease of one scheduling session; `steal` (a reason) takes another's over.",
              idempotent=True, op_result=False)
    reg.write("project_unlock", project_unlock, "kb project unlock: give the project lease back "
              "(holder only).", destructive=True)
