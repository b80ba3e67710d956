"""``kb log ID``: the history of one object."""

from __future__ import annotations

from typing import Optional

import click

from kb.render.card import fmt_number
from kb_cli.output import emit_json, json_option, kb_option


@click.command("log")
@click.argument("obj_id", metavar="ID")
@click.option("--rev", default="HEAD", show_default=True, help="Read the history reachable from this commit.")
@json_option
@kb_option
def command(obj_id: str, rev: str, as_json: bool, kb_path: Optional[str]) -> int:
    """The history of one object, oldest first: every commit that changed it, kb's
    operation, who, when, its status and the fields that changed (a hypothesis's
    status timeline; a problem's entries and verdicts), following renumberings
    (Kb-Renumber). Exit 1 when no object has this ID."""
    from kb.repo import open_kb
    from kb.review.log import object_log

    k = open_kb(kb_path)
    d = object_log(k, obj_id, rev)
    if as_json:
        emit_json(d)
        return 0
    click.echo(f"{d['id']}  ({d['kind']})  {d['path']}"
               + (f"  (earlier: {', '.join(d['aliases'])})" if d["aliases"] else ""))
    for e in d["entries"]:
        click.echo(f"{e['commit'][:10]}  {e['time'][:19]}  {e['author']}  {e['op'] or '(by hand)'}"
                   f"  {_CHANGE.get(e['change'], e['change'])}"
                   + (f" as {e['id']}" if e["id"] != d["id"] else ""))
        for f, ch in e["changes"].items():
            if e["change"] in ("created", "boundary"):
                click.echo(f"    {f}: {_show(ch['to'])}")
            else:
                click.echo(f"    {f}: {_show(ch['from'])} → {_show(ch['to'])}")
        if e.get("override"):
            click.echo(f"    override: {e['override']}")
        for v in e.get("verdict") or []:
            votes = ", ".join(f"{x['verifier']} {_show(x['result'])}" for x in v["votes"])
            click.echo(f"    verdict {v['r']}: {_show(v['verdict'])} ({votes}; {v.get('how') or v['mode']})")
    for w in d.get("warnings") or []:
        click.echo(f"warning: {w['code']} {w['message']}", err=True)
    return 0


#: How the text output names an entry's change (the JSON keeps the word).
_CHANGE = {"boundary": "boundary (shallow clone: the history before this commit is not fetched)"}


def _show(v: object) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    if isinstance(v, float):
        return fmt_number(v)     # 1 and 0.9, as kb diff and the card's anchor print them
    return "—" if v is None else str(v)
