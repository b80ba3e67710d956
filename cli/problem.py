"""``kb problem``: create problem cards and edit their status, plan and priority."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.output import json_option, print_result, kb_option, write_kwargs, write_options


def emit_result(res: Any, as_json: bool) -> int:
    """Print what a card operation did (the one write printer, :func:`kb_cli.output.print_result`)."""
    return print_result(res, as_json)


def split_ids(values: tuple[str, ...] | list[str] | None) -> list[str]:
    """``--depends q2,p3 --depends p4`` -> ``["q2", "p3", "p4"]`` (commas, full-width too)."""
    out: list[str] = []
    for v in values or ():
        for part in v.replace("，", ",").split(","):
            if part.strip():
                out.append(part.strip())
    return out


@click.group("problem")
def command() -> None:
    """Problem cards (Problems/<id>.md): add, status, plan, priority."""


@command.command("add")
@click.argument("qid", metavar="ID")
@click.argument("statement")
@click.option("--title", default=None, help="Title (default: the statement's first line).")
@click.option("--priority", default="1", show_default=True,
              help="An integer (smaller runs first) or never.")
@click.option("--depends", multiple=True, metavar="IDS",
              help="Problems or propositions it depends on (comma-separated; repeatable).")
@click.option("--source", default="原始", show_default=True, help="原始, 后生 or promote.")
@click.option("--motivation", default=None,
              help="## 来源与动机: how and why it arose (generated problems).")
@click.option("--plan", default="待调度", show_default=True, help="- 计划: the next step.")
@json_option
@kb_option
@write_options
def add(qid: str, statement: str, title: str | None, priority: str, depends: tuple[str, ...],
        source: str, motivation: str | None, plan: str, as_json: bool, kb_path: str | None,
        **kw: Any) -> int:
    """Create problem ID with STATEMENT (状态 求解中, or 等待依赖 while a dependency is
    unsettled); updates the dependencies' 被依赖; one commit."""
    from kb.ops.problems import add_problem

    res = add_problem(kb_path, qid, statement, title=title, priority=priority,
                      depends=split_ids(depends), source=source, motivation=motivation, plan=plan,
                      **write_kwargs(kw))
    return emit_result(res, as_json)


@command.command("status")
@click.argument("qid", metavar="ID")
@click.argument("status", metavar="STATUS")
@json_option
@kb_option
@write_options
def status(qid: str, status: str, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Set the 状态 of problem ID: 原始, 求解中, 等待依赖 or 死路 (已解决 comes from
    `kb verdict`)."""
    from kb.ops.problems import set_problem_status

    res = set_problem_status(kb_path, qid, status, **write_kwargs(kw))
    return emit_result(res, as_json)


@command.command("plan")
@click.argument("qid", metavar="ID")
@click.argument("plan", metavar="NEXT_STEP")
@json_option
@kb_option
@write_options
def plan_cmd(qid: str, plan: str, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Set the 计划 (next step, one line) of problem ID."""
    from kb.ops.problems import set_plan

    res = set_plan(kb_path, qid, plan, **write_kwargs(kw))
    return emit_result(res, as_json)


@command.command("priority")
@click.argument("obj_id", metavar="ID")
@click.argument("priority", metavar="N|never")
@json_option
@kb_option
@write_options
def priority_cmd(obj_id: str, priority: str, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Set the 优先级 of a problem or proposition (an integer, smaller first, or never)."""
    from kb.ops.problems import set_priority

    res = set_priority(kb_path, obj_id, priority, **write_kwargs(kw))
    return emit_result(res, as_json)


__all__ = ["command", "emit_result", "split_ids"]
