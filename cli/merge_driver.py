"""``kb merge-driver KIND %O %A %B %P``: the git merge drivers kb registers.

git calls it (``merge.kb-tree.driver``, ``merge.kb-dashboard.driver``, ``merge.kb-trail.driver``,
``merge.kb-report.driver``, ``merge.kb-card.driver``); people do not. Exit 0 merged (a side kept is one line on
stderr saying what to run), 1 conflict left (each contradiction is one line on stderr),
2 usage. Also runnable as ``python -m kb_cli.merge_driver``, which is what the registered
command uses (no ``kb`` on PATH needed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kb_cli.output import err


@click.command("merge-driver")
@click.argument("kind", type=click.Choice(["tree", "dashboard", "trail", "report", "card"]))
@click.argument("base", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("ours", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("theirs", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("path", type=click.Path(readable=False))  # git's %P: bytes, maybe not UTF-8
def command(kind: str, base: Path, ours: Path, theirs: Path, path: str) -> int:
    """Git merge driver (git calls it): tree.md block by block, DASHBOARD.md and TRAIL.md
    regenerated, the report (kb report) kept from our side, a problem card's 被依赖
    merged from both sides."""
    from kb.merge.run import run_driver

    code, messages = run_driver(kind, base, ours, theirs, path, Path.cwd())
    for m in messages:
        err(f"kb merge: {m}")
    return code


if __name__ == "__main__":  # the registered driver: python -m kb_cli.merge_driver …
    from kb_cli.main import main

    sys.exit(main(["merge-driver", *sys.argv[1:]]))
