"""``kb method``: method cards, their applications and improvements."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.output import json_option, kb_option, write_kwargs, write_options
from kb_cli.problem import emit_result, split_ids


@click.group("method")
def command() -> None:
    """Method cards (Methods/<id>.md): add, apply, improve."""


@command.command("add")
@click.argument("mid", metavar="ID")
@click.argument("name")
@click.option("--type", "type_", default="方法", show_default=True,
              help="理论体系, 框架, 工具, 方法, 思想, 范式 or 技巧.")
@click.option("--parent", default=None, help="The system (上级体系) it belongs to; both sides are written.")
@click.option("--scenario", default="", help="适用场景 (one line).")
@click.option("--content", default="", help="## 核心内容.")
@click.option("--related", multiple=True, metavar="IDS", help="相关 IDs (comma-separated).")
@json_option
@kb_option
@write_options
def add(mid: str, name: str, type_: str, parent: str | None, scenario: str, content: str,
        related: tuple[str, ...], as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Create method ID called NAME (状态 经验)."""
    from kb.ops.methods import add_method

    res = add_method(kb_path, mid, name, type=type_, parent=parent, scenario=scenario,
                     content=content, related=split_ids(related), **write_kwargs(kw))
    return emit_result(res, as_json)


@command.command("apply")
@click.argument("mid", metavar="ID")
@click.argument("effect")
@click.option("--problem", required=True, help="The problem it was applied to.")
@click.option("--direction", default=None, help="The direction (e.g. d1).")
@json_option
@kb_option
@write_options
def apply(mid: str, effect: str, problem: str, direction: str | None, as_json: bool,
          kb_path: str | None, **kw: Any) -> int:
    """Record an application of method ID: '### 应用 N｜<time>｜问题 <qid> 方向 <dir>' and EFFECT."""
    from kb.ops.methods import apply_method

    res = apply_method(kb_path, mid, problem, effect, direction=direction, **write_kwargs(kw))
    return emit_result(res, as_json)


@command.command("improve")
@click.argument("mid", metavar="ID")
@click.argument("reason")
@click.option("--text", default=None, help="What changed.")
@click.option("--text-file", default=None, metavar="FILE", help="A UTF-8 file holding the text.")
@json_option
@kb_option
@write_options
def improve(mid: str, reason: str, text: str | None, text_file: str | None, as_json: bool,
            kb_path: str | None, **kw: Any) -> int:
    """Record an improvement of method ID: '### vN（REASON）' and the text."""
    from kb.ops.methods import improve_method

    res = improve_method(kb_path, mid, reason, text=text, text_file=text_file,
                         **write_kwargs(kw))
    return emit_result(res, as_json)
