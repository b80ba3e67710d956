"""``kb init``: create a knowledge base."""

from __future__ import annotations

from pathlib import Path

import click

from kb_cli.output import emit_json, err, json_option


@click.command("init")
@click.argument("directory", required=False, default=".", type=click.Path(file_okay=False))
@click.option("--layout", type=click.Choice(["default", "research"]), default="default",
              show_default=True, help="research: the hypothesis-tree skill's .research/ layout.")
@click.option("--locale", type=click.Choice(["zh", "en"]), default="zh", show_default=True,
              help="Language of the status words kb writes.")
@json_option
def command(directory: str, layout: str, locale: str, as_json: bool) -> int:
    """Create a KB in DIRECTORY (default: here): kb.toml, the tree, DASHBOARD.md,
    .gitignore and .gitattributes; runs `git init` if needed. Refuses on an existing KB."""
    from kb.ops.init import init_kb

    res = init_kb(Path(directory), layout, locale)  # type: ignore[arg-type]
    if as_json:
        emit_json({"root": str(res.root), "written": res.written, "appended": res.appended,
                   "git_initialised": res.git_initialised})
        return 0
    if res.git_initialised:
        err(f"initialised an empty git repository in {res.root}")
    for f in res.written:
        click.echo(f"wrote {f}")
    for f in res.appended:
        click.echo(f"updated {f}")
    err("next: `kb index`, then commit the files; `kb hooks install` adds the git hooks")
    return 0
