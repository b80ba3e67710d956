"""``kb prime``: the session-start context for an agent (≤ 8,000 characters)."""

from __future__ import annotations

import click

from kb_cli.output import emit_json, json_option, kb_option


@click.command("prime")
@click.option("--since", default=None, metavar="COMMIT",
              help="Also list the commits and paths changed after COMMIT.")
@json_option
@kb_option
def command(since: str | None, as_json: bool, kb_path: str | None) -> int:
    """Print what an agent needs at the start of a session: the KB's layout and rules in
    brief, active hypotheses, open problems by priority, held locks, and what changed
    since a commit. The MCP server serves the same text (resource kb://prime)."""
    from kb import git
    from kb.prime import prime_text
    from kb.repo import open_kb
    from pathlib import Path

    k = open_kb(Path(kb_path) if kb_path else None)
    text = prime_text(k, since)
    if as_json:
        emit_json({"text": text, "head": git.rev_parse("HEAD", k.top)})
    else:
        click.echo(text, nl=False)
    return 0
