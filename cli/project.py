"""``kb project lock|unlock``: the project-wide lease of Vibe Math on refs/kb/project-lock."""

from __future__ import annotations

import click

from kb_cli.lock import owner_option, print_acquired, remote_option, ttl_option, with_remote
from kb_cli.output import emit_json, json_option, kb_option, note_landed


@click.group("project")
def command() -> None:
    """The project-wide lease (one scheduling session at a time), on refs/kb/project-lock."""


@command.command("lock")
@owner_option
@ttl_option
@click.option("--steal", "steal_reason", default=None, metavar="REASON",
              help="Take another session's lease over (after expiry, or as a lead).")
@remote_option
@json_option
@kb_option
def lock_cmd(owner: str | None, ttl: str | None, steal_reason: str | None, remote: str | None,
             as_json: bool, kb_path: str | None) -> int:
    """Take the project lease; the holder running it again renews it."""
    from kb.ops.lock_claim import project_lock

    k, remote = with_remote(kb_path, remote)  # the configured lock remote, as kb lock does
    res = project_lock(k, owner=owner, ttl=ttl, remote=remote, steal_reason=steal_reason)
    print_acquired(res, "locked", as_json)
    return 0


@command.command("unlock")
@owner_option
@remote_option
@json_option
@kb_option
def unlock_cmd(owner: str | None, remote: str | None, as_json: bool, kb_path: str | None) -> int:
    """Give the project lease back (holder only)."""
    from kb.ops.lock_claim import project_unlock

    k, remote = with_remote(kb_path, remote)
    res = project_unlock(k, owner=owner, remote=remote)
    note_landed(None, [], f"unlocked the project ({res.owner})")  # said should the output fail
    if as_json:
        emit_json(res.op_result(k.top).to_json())
    else:
        click.echo(f"unlocked the project ({res.owner})")
    return 0
