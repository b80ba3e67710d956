"""``kb brief``: the state brief a planning agent reads."""

from __future__ import annotations

import json

import click

from kb_cli.output import json_option, kb_option


@click.command("brief")
@click.option("--max-chars", type=int, default=None, metavar="N",
              help="Keep the output within N characters (least urgent items are left out).")
@json_option
@kb_option
def command(max_chars: int | None, as_json: bool, kb_path: str | None) -> int:
    """Open problems with dependencies and priorities, verifiable entries, settled results,
    undecided propositions and the methods available."""
    from kb.errors import UsageError
    from kb.views.brief import brief_data, brief_text, fit_brief

    if max_chars is not None and max_chars < 1:
        raise UsageError(f"--max-chars {max_chars} must be a positive number of characters")
    data, _dropped = fit_brief(brief_data(kb_path), max_chars, as_json)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return 0
    text = "\n".join(brief_text(data))
    if "omitted" in data:
        text += "\n\n（省略：" + "，".join(f"{k} {v}" for k, v in data["omitted"].items()) + "；" \
                "加大 --max-chars 可看到全部）"
    if max_chars is not None and len(text) + 1 > max_chars:
        text = text[: max(0, max_chars - 2)] + "…"
    click.echo(text)
    return 0
