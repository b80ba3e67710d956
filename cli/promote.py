"""``kb promote``: high-value undecided propositions become judge problems."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.output import json_option, kb_option, many_cards_write_kwargs, write_options
from kb_cli.problem import emit_result


@click.command("promote")
@click.option("--threshold", default="0.7", show_default=True,
              help="Promote propositions whose 价值/关键性 reaches this value.")
@json_option
@kb_option
@write_options
def command(threshold: str, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Turn every undecided proposition (概率 not 0/1, priority not never) with
    价值/关键性 ≥ THRESHOLD and no judge problem into problem q-promoted-…, its proofs and
    refutations copied as 解法 entries. One commit; refused (nothing written) while a
    proposition or problem card has uncommitted changes: commit it first, or use
    --no-commit and commit them together."""
    from kb.ops.promote import promote

    write = many_cards_write_kwargs(kw)
    res = promote(kb_path, threshold, **write)
    return emit_result(res, as_json)
