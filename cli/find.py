"""``kb find``: search IDs, titles and statements."""

from __future__ import annotations

import click

from kb.numbers import quoted
from kb_cli.output import cell, emit_json, json_option, kb_option


@click.command("find")
@click.argument("text")
@json_option
@kb_option
def command(text: str, as_json: bool, kb_path: str | None) -> int:
    """Find objects whose ID, title or statement contains TEXT (case-insensitive). A value
    past 200 characters is cut, ending in …; --json keeps every value whole."""
    from kb.api import find_objects

    _, rows = find_objects(text, kb_path)
    if as_json:
        from kb.contract import find_data

        emit_json(find_data(text, rows))
        return 0
    for r in rows:
        click.echo("\t".join(map(cell, (r.id, r.kind, r.status, r.title, f"{r.path}:{r.line}"))))
    if not rows:
        click.echo(f"no object matches {quoted(text, limit=120)}", err=True)
    return 0
