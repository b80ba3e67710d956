"""``kb exp``: create experiments, log to them, fill design fields, record results."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.hyp import report
from kb_cli.output import json_option, kb_option, write_kwargs, write_options


@click.group("exp")
def command() -> None:
    """Experiments: new, log, update, result (each one commit)."""


@command.command("new")
@click.argument("action")
@click.option("--hyp", "hid", required=True, metavar="ID", help="The hypothesis it tests.")
@click.option("--goal", default=None, help="The 目标 design field (default: [待补充]).")
@click.option("--date", default=None, metavar="YYYY-MM-DD",
              help="The **Date** (default: $KB_TODAY, else today).")
@write_options
@json_option
@kb_option
def new(action: str, hid: str, goal: str | None, date: str | None, as_json: bool,
        kb_path: str | None, **kw: Any) -> int:
    """Create experiments/E<next>.md for --hyp ID with the short ACTION; moves the
    hypothesis from 待验 to 进行中."""
    from kb.ops.experiments import new_experiment

    return report(new_experiment(kb_path, hid, action, goal, date=date, **write_kwargs(kw)), as_json)


@command.command("log")
@click.argument("eid", metavar="ID")
@click.argument("text")
@write_options
@json_option
@kb_option
def log(eid: str, text: str, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Append TEXT to the 执行记录 section of experiment ID."""
    from kb.ops.experiments import log as do_log

    return report(do_log(kb_path, eid, text, **write_kwargs(kw)), as_json)


@command.command("update")
@click.argument("eid", metavar="ID")
@click.argument("text")
@click.option("--section", required=True, metavar="FIELD",
              help="目标|方法|预期 (or goal|method|expected).")
@write_options
@json_option
@kb_option
def update(eid: str, text: str, section: str, as_json: bool, kb_path: str | None,
           **kw: Any) -> int:
    """Fill a design field (目标 / 方法 / 预期) of experiment ID with TEXT."""
    from kb.ops.experiments import update_section

    return report(update_section(kb_path, eid, section, text, **write_kwargs(kw)), as_json)


@command.command("result")
@click.argument("eid", metavar="ID")
@click.option("--data", required=True, help="The measurements / observations (one line).")
@click.option("--conclusion", required=True, metavar="WORD",
              help="支持|推翻|不确定 (or supports|refutes|inconclusive).")
@click.option("--reason", required=True, help="Why the data lead to the conclusion (one line).")
@write_options
@json_option
@kb_option
def result(eid: str, data: str, conclusion: str, reason: str, as_json: bool,
           kb_path: str | None, **kw: Any) -> int:
    """Record the result of experiment ID: fills 结果, sets it 已完成, adds it to its
    hypothesis's Evidence and updates the hypothesis status."""
    from kb.ops.experiments import record_result

    return report(record_result(kb_path, eid, data, conclusion, reason, **write_kwargs(kw)), as_json)
