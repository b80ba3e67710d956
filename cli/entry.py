"""``kb entry``: add solution, proof and refutation entries to cards."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.output import json_option, kb_option, write_kwargs, write_options
from kb_cli.problem import emit_result


@click.group("entry")
def command() -> None:
    """Entry lines '### 解法|证明|证伪 N｜title｜概率x｜状态y' of problems and propositions."""


@command.command("add")
@click.argument("obj_id", metavar="ID")
@click.option("--kind", required=True, help="解法 (a problem), 证明 or 证伪 (a proposition).")
@click.option("--title", required=True, help="The entry's title (one line).")
@click.option("--prob", "prob", default="0.5", show_default=True,
              help="Its probability, strictly between 0 and 1 (only a verdict sets 0 or 1).")
@click.option("--text", default=None, help="The entry's text.")
@click.option("--text-file", default=None, metavar="FILE", help="A UTF-8 file holding the text.")
@json_option
@kb_option
@write_options
def add(obj_id: str, kind: str, title: str, prob: str, text: str | None, text_file: str | None,
        as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Append an entry (状态 未定论) to problem or proposition ID; one commit."""
    from kb.ops.entries import add_entry

    res = add_entry(kb_path, obj_id, kind, title, prob, text=text, text_file=text_file,
                    **write_kwargs(kw))
    return emit_result(res, as_json)
