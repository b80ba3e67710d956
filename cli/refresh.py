"""``kb refresh``: recompute 被依赖 and 等待依赖 from the 依赖 lists."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.output import emit_json, json_option, kb_option, many_cards_write_kwargs, write_options
from kb_cli.problem import emit_result


@click.command("refresh")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when something is out of date.")
@json_option
@kb_option
@write_options
def command(check: bool, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Rebuild every problem's 被依赖 from the problems' 依赖 lists and move problems
    between 求解中 and 等待依赖 by the state of their dependencies. One commit; refused
    (nothing written) while a card whose 依赖 or settled state it reads has uncommitted
    changes: commit that card first, or use --no-commit and commit them together."""
    from kb.ops.refresh import refresh

    write = many_cards_write_kwargs(kw)
    res = refresh(kb_path, check=check, **write)
    if check:
        if as_json:
            emit_json(res.to_json())
        else:
            for ln in res.lines:
                click.echo(ln)
            if not res.lines:
                click.echo("被依赖 and 等待依赖 are up to date", err=True)
        return 1 if res.data["edits"] else 0
    if not res.data["edits"] and not as_json:
        click.echo("被依赖 and 等待依赖 are up to date", err=True)
        return 0
    return emit_result(res, as_json)
