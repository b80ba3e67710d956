"""``kb propo``: create proposition cards."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.output import json_option, kb_option, write_kwargs, write_options
from kb_cli.problem import emit_result, split_ids


@click.group("propo")
def command() -> None:
    """Proposition cards (Propos/<category>/<id>.md)."""


@command.command("add")
@click.argument("category", required=False)
@click.argument("pid", metavar="ID", required=False)
@click.argument("statement", required=False)
@click.option("--title", default=None, help="Title (default: the statement's first line).")
@click.option("--prob", "prob", default="0.5", show_default=True,
              help="概率: a number strictly between 0 and 1.")
@click.option("--value", default="0.5", show_default=True, help="价值/关键性 in [0,1].")
@click.option("--depends", multiple=True, metavar="IDS",
              help="Problems or propositions it depends on (comma-separated; repeatable).")
@click.option("--priority", default="1", show_default=True, help="An integer or never.")
@click.option("--source-problem", default=None, help="来源问题: the problem it came from.")
@click.option("--direction", "source_direction", default=None, help="来源方向: the direction.")
@click.option("--new-category", is_flag=True, help="Create CATEGORY if it does not exist yet.")
@json_option
@kb_option
@write_options
def add(category: str | None, pid: str | None, statement: str | None, title: str | None,
        prob: str, value: str, depends: tuple[str, ...], priority: str,
        source_problem: str | None, source_direction: str | None, new_category: bool,
        as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Create proposition ID in CATEGORY with STATEMENT (状态 未定论). CATEGORY must
    exist unless --new-category."""
    from kb.errors import UsageError
    from kb.ops.propositions import add_proposition

    if pid is None or statement is None:
        from kb.ops.propositions import categories

        cats = categories(kb_path)
        raise UsageError("kb propo add needs CATEGORY ID STATEMENT; categories: "
                        + (", ".join(cats) or "none yet (pass --new-category)"))
    res = add_proposition(kb_path, category or "", pid, statement, title=title, probability=prob,
                          value=value, depends=split_ids(depends), priority=priority,
                          source_problem=source_problem, source_direction=source_direction,
                          new_category=new_category, **write_kwargs(kw))
    return emit_result(res, as_json)
