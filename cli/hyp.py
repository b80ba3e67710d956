"""``kb hyp``: add hypotheses, move their status, correct statements, add evidence."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.output import json_option, kb_option, print_result, write_kwargs, write_options


def report(res: Any, as_json: bool) -> int:
    """Print an OpResult through the one write printer (:func:`kb_cli.output.print_result`)."""
    return print_result(res, as_json)


@click.group("hyp")
def command() -> None:
    """Hypotheses in tree.md: add, status, edit, evidence (each one commit)."""


@command.command("add")
@click.argument("statement")
@click.option("--parent", metavar="ID", default=None, help="Add it as a child of this hypothesis.")
@write_options
@json_option
@kb_option
def add(statement: str, parent: str | None, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Add a hypothesis (Status 待验) with the next free ID: H<n>, or <parent>.<n>."""
    from kb.ops.hypotheses import add_hypothesis

    return report(add_hypothesis(kb_path, statement, parent, **write_kwargs(kw)), as_json)


@command.command("status")
@click.argument("hid", metavar="ID")
@click.argument("status")
@click.option("--force", is_flag=True, help="Allow a move the rules forbid (needs --reason).")
@click.option("--reason", default=None, help="Why (recorded as the Kb-Override trailer).")
@write_options
@json_option
@kb_option
def status(hid: str, status: str, force: bool, reason: str | None, as_json: bool,
           kb_path: str | None, **kw: Any) -> int:
    """Move hypothesis ID to STATUS (待验 进行中 被支持 被推翻, or untested in-progress
    supported refuted)."""
    from kb.ops.hypotheses import set_status

    return report(set_status(kb_path, hid, status, force, reason, **write_kwargs(kw)), as_json)


@command.command("edit")
@click.argument("hid", metavar="ID")
@click.argument("statement")
@click.option("--reason", required=True, help="Why (recorded as the Kb-Override trailer).")
@write_options
@json_option
@kb_option
def edit(hid: str, statement: str, reason: str, as_json: bool, kb_path: str | None,
         **kw: Any) -> int:
    """Correct the statement of hypothesis ID (an override, with its reason)."""
    from kb.ops.hypotheses import edit_statement

    return report(edit_statement(kb_path, hid, statement, reason, **write_kwargs(kw)), as_json)


@command.command("evidence")
@click.argument("hid", metavar="ID")
@click.argument("eid", metavar="EXPERIMENT")
@write_options
@json_option
@kb_option
def evidence(hid: str, eid: str, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Append EXPERIMENT to the Evidence of hypothesis ID (append only)."""
    from kb.ops.hypotheses import add_evidence

    return report(add_evidence(kb_path, hid, eid, **write_kwargs(kw)), as_json)
