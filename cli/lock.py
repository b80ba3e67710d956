"""``kb lock``: write locks as git refs (claim, release, status, renew, steal, prune)."""

from __future__ import annotations

from typing import Any

import click

from kb.repo import resolve_kb
from kb_cli.output import emit_json, err, json_option, kb_option, note_landed


def with_remote(kb_path: str | None, remote: str | None) -> tuple[Any, str | None]:
    """The KB and the remote to act on: --remote, else the configured lock remote
    (``[locks] remote`` / ``git config kb.lockRemote``), else None (this clone)."""
    from kb.remote_locks import lock_remote

    k = resolve_kb(kb_path)
    return k, remote or lock_remote(k.top, k.config)


def owner_option(f: Any) -> Any:
    return click.option("--owner", default=None,
                        help="Who holds the lock; default: $KB_OWNER, else git config "
                        "kb.owner, else user.email.")(f)


def ttl_option(f: Any) -> Any:
    return click.option("--ttl", default=None, metavar="DURATION",
                        help="Lease length: 90s, 30m, 2h, 1h30m (default: [locks] ttl, else 30m).")(f)


def remote_option(f: Any) -> Any:
    return click.option("--remote", default=None, metavar="REMOTE",
                        help="Lock on this shared remote (e.g. origin) instead of this clone only.")(f)


def print_acquired(res: Any, verb: str, as_json: bool) -> None:
    from kb.locks import format_duration, iso

    for a in res.locks:  # said should the output fail: the lock is held (a retry is not blind)
        note_landed(None, [], f"{verb} {a.path if a.scope == 'file' else 'the project'} for "
                              f"{a.owner} until {iso(a.expires)}")
    if as_json:
        emit_json(res.as_dict())
        return
    for a in res.locks:
        what = a.path if a.scope == "file" else "project"
        extra = ""
        if a.previous is not None and a.how != "renewed":
            extra = f" (took over from {a.previous.owner}: {a.how})"
        click.echo(f"{verb} {what} for {a.owner} until {iso(a.expires)} "
                   f"({format_duration(a.expires - res.now)}){extra}")
    if res.behind:
        name = (res.branch or "").removeprefix("refs/heads/")
        err(f"kb: {res.remote}/{name} has {res.behind} commit(s) you lack: "
            f"pull before editing (git pull --rebase {res.remote})")


@click.group("lock")
def command() -> None:
    """Write locks as git refs: one agent edits a file at a time (DESIGN §5).

    A lock is refs/kb/locks/<sha1(path)> pointing at a commit that records the
    path, the owner, the expiry and the file's blob id; with --remote it lives
    on a shared remote (a plain git server is the only coordinator).
    """


@command.command("claim")
@click.argument("paths", nargs=-1, required=True)
@owner_option
@ttl_option
@remote_option
@json_option
@kb_option
def claim_cmd(paths: tuple[str, ...], owner: str | None, ttl: str | None, remote: str | None,
              as_json: bool, kb_path: str | None) -> int:
    """Lock PATHS (all or none). Refused with the holder's name while someone else
    holds one; an expired lease is taken over."""
    from kb.ops.lock_claim import claim

    k, remote = with_remote(kb_path, remote)
    res = claim(k, list(paths), owner=owner, ttl=ttl, remote=remote)
    print_acquired(res, "locked", as_json)
    return 0


@command.command("release")
@click.argument("paths", nargs=-1)
@owner_option
@click.option("-m", "--message", default=None, help="Subject of the release commit.")
@click.option("--all", "all_held", is_flag=True, help="Release every file lock the owner holds.")
@click.option("--no-verify", is_flag=True, help="Do not run the pre-commit hook on the commit.")
@remote_option
@json_option
@kb_option
def release_cmd(paths: tuple[str, ...], owner: str | None, message: str | None, all_held: bool,
                no_verify: bool, remote: str | None, as_json: bool, kb_path: str | None) -> int:
    """Commit the changes of PATHS on the current branch and delete their locks,
    in one atomic git transaction (both or neither)."""
    from kb.errors import UsageError
    from kb.ops.lock_release import release

    if not paths and not all_held:
        raise UsageError("name the PATHS to release, or pass --all")
    if paths and all_held:
        raise UsageError("give PATHS or --all, not both")
    k, remote = with_remote(kb_path, remote)
    res = release(k, list(paths), owner=owner, message=message, remote=remote,
                  all_held=all_held, verify=not no_verify)
    note_landed(res.commit, res.committed)  # said should the output fail (a retry is not blind)
    if res.released:
        note_landed(None, [], f"released {', '.join(res.released)}")
    if as_json:
        emit_json(res.op_result(resolve_kb(kb_path).top).to_json())
    else:
        if res.commit:
            click.echo(f"committed {res.commit[:12]} on {res.branch.removeprefix('refs/heads/')}"
                       f" ({', '.join(res.committed)})" + (f", pushed to {res.remote}" if res.remote else ""))
        for p in res.released:
            click.echo(f"released {p}")
        if not res.released:
            err("kb: no locks held by that owner")
    for w in res.warnings:
        err(f"kb: warning: {w}")
    return 0


@command.command("status")
@remote_option
@json_option
@kb_option
def status_cmd(remote: str | None, as_json: bool, kb_path: str | None) -> int:
    """Every lock: path, owner, expiry, whether expired (with --remote: the
    remote's locks, fetched fresh with pruning)."""
    from kb.locks import format_duration, iso
    from kb.ops.lock_status import status

    k, remote = with_remote(kb_path, remote)
    rep = status(k, remote=remote)
    source = rep.source
    if as_json:
        emit_json(rep.as_dict())
        return 0
    err(f"kb: {'warning: ' if rep.stale else ''}locks from {source}" + ("" if remote else
        " — set [locks] remote in kb.toml (or git config kb.lockRemote) to share them"))
    states = list(rep.locks) + ([rep.project] if rep.project else [])
    if not states:
        # "no locks on dead" read as the remote's answer when it could not be read at all
        click.echo("no locks" + ("" if not remote else f" known of {remote} (as last fetched: "
                                 "it could not be read now)" if rep.stale else f" on {remote}"))
    for st in states:
        lk = st.lock
        what = lk.path if lk.scope == "file" else "[project]"
        if st.remaining >= 0:
            when = f"until {iso(lk.expires)} ({format_duration(st.remaining)} left)"
        elif st.expired:
            when = f"EXPIRED {format_duration(st.remaining)} ago"
        else:
            when = f"lease over {format_duration(st.remaining)} ago (grace)"
        click.echo(f"{what}\t{lk.owner}\t{when}\t{lk.commit[:12]}\t{source.split(' (')[0]}")
        for n in st.notes:
            click.echo(f"    {n}")
    if rep.interrupted:
        j = rep.interrupted
        click.echo(f"interrupted release: commit {str(j.get('commit'))[:12]} of "
                   f"{', '.join(j.get('paths', []))}; the next `kb lock release` (or claim) "
                   "finishes the index update")
    return 0


@command.command("renew")
@click.argument("paths", nargs=-1, required=True)
@owner_option
@ttl_option
@remote_option
@json_option
@kb_option
def renew_cmd(paths: tuple[str, ...], owner: str | None, ttl: str | None, remote: str | None,
              as_json: bool, kb_path: str | None) -> int:
    """Extend your own leases on PATHS (holder only)."""
    from kb.ops.lock_claim import renew

    k, remote = with_remote(kb_path, remote)
    res = renew(k, list(paths), owner=owner, ttl=ttl, remote=remote)
    print_acquired(res, "renewed", as_json)
    return 0


@command.command("steal")
@click.argument("paths", nargs=-1, required=True)
@click.option("--reason", required=True, help="Why (recorded in the lock commit).")
@owner_option
@ttl_option
@remote_option
@json_option
@kb_option
def steal_cmd(paths: tuple[str, ...], reason: str, owner: str | None, ttl: str | None,
              remote: str | None, as_json: bool, kb_path: str | None) -> int:
    """Take PATHS over: after the lease expired (grace included), or at any time
    for an owner listed in [locks] leads."""
    from kb.ops.lock_claim import steal

    k, remote = with_remote(kb_path, remote)
    res = steal(k, list(paths), reason, owner=owner, ttl=ttl, remote=remote)
    print_acquired(res, "stole", as_json)
    return 0


@command.command("prune")
@remote_option
@json_option
@kb_option
def prune_cmd(remote: str | None, as_json: bool, kb_path: str | None) -> int:
    """Delete every expired lock (each with a compare-and-swap)."""
    from kb.ops.lock_status import prune

    k, remote = with_remote(kb_path, remote)
    done = prune(k, remote=remote)
    if as_json:
        emit_json({"pruned": [lk.as_dict() for lk in done], "remote": remote})
        return 0
    for lk in done:
        click.echo(f"pruned {lk.path or '[project]'} ({lk.owner})")
    if not done:
        err("no expired locks")
    return 0
