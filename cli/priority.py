"""``kb priority adjust``: recompute priorities with Vibe Math's formulas."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.output import json_option, kb_option, many_cards_write_kwargs, write_options
from kb_cli.problem import emit_result


@click.group("priority")
def command() -> None:
    """Priorities of problems and propositions."""


@command.command("adjust")
@click.option("--mode", required=True,
              help="deadend-deprioritize, survival-map (problems) or progress-graded (propositions).")
@click.option("--dry-run", is_flag=True, help="Print the changes, write nothing.")
@json_option
@kb_option
@write_options
def adjust(mode: str, dry_run: bool, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """deadend-deprioritize: all directions dead-end and priority < 10 → 10;
    survival-map: round(clamp(10 − 10·max survival, 0, 10)); progress-graded:
    round(clamp(10 − 10·(1.2·|概率 − 0.5| + 0.08·min(5, proofs + refutations)), 0, 10)).
    One commit; refused (nothing written) while a card or direction log the mode reads
    (problem cards and Progress/ direction logs, or proposition cards) has uncommitted
    changes: commit it first, or use --no-commit and commit them together."""
    from kb.ops.priority import priority_adjust

    write = many_cards_write_kwargs(kw)
    res = priority_adjust(kb_path, mode, dry_run=dry_run, **write)
    return emit_result(res, as_json)
