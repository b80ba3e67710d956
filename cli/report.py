"""``kb report``: write Logs/报告.md, a readable report of the project."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.output import emit_json, json_option, kb_option, many_cards_write_kwargs, write_options
from kb_cli.problem import emit_result


@click.command("report")
@click.option("--date", default=None, help="The date to print in the report (default: KB_NOW, "
              "else none: the report depends only on the KB).")
@click.option("--stdout", "to_stdout", is_flag=True, help="Print the report; write nothing.")
@json_option
@kb_option
@write_options
def command(date: str | None, to_stdout: bool, as_json: bool, kb_path: str | None,
            **kw: Any) -> int:
    """Write Logs/报告.md: problems by state, settled results with links to their Verified
    cards, open propositions by probability and value, methods and their applications,
    recent verdicts. One commit (none when it is up to date)."""
    from kb.ops.report import report
    from kb.views.report import report_date, report_text

    write = many_cards_write_kwargs(kw)
    if to_stdout:
        path, text = report_text(kb_path, report_date(date))
        if as_json:
            emit_json({"path": path, "text": text})
        else:
            click.echo(text, nl=False)
        return 0
    res = report(kb_path, date, **write)
    return emit_result(res, as_json)
