"""``kb show``: one object with its anchors, file and line, entries and links."""

from __future__ import annotations

import click

from kb.errors import NotFoundError
from kb_cli.output import emit_json, err, json_option, kb_option

_SKIP = {"id", "kind", "path", "line", "anchors", "frontmatter", "links_out", "links_in",
         "entries", "applications", "statement", "end_line", "has_children_line", "sections",
         "diagnostics"}

#: Warnings of the object's file printed after it when there are at most this many (more:
#: one line counting them; errors are always printed, each).
WARNINGS_SHOWN = 5


@click.command("show")
@click.argument("obj_id", metavar="ID")
@json_option
@kb_option
def command(obj_id: str, as_json: bool, kb_path: str | None) -> int:
    """Show one object: anchors, file:line, entries (kind, number, title,
    probability, status) and links (parent, children, evidence, dependencies,
    dependants). Parse errors of the object's file (what kb could not read of it, so
    missing above) follow on stderr, and its warnings when few; --json carries them all
    in "diagnostics". Exits 1 when no object has this ID."""
    from kb.api import show_object
    from kb.vocab import EXPERIMENT_STATUS, HYPOTHESIS_STATUS

    k, found = show_object(obj_id, kb_path)
    if not found:
        raise NotFoundError(f"no object with ID {obj_id!r} (try `kb find {obj_id}`)")
    locale = k.config.locale
    for data in found:
        vocab = {"hypothesis": HYPOTHESIS_STATUS, "experiment": EXPERIMENT_STATUS}.get(data["kind"])
        if vocab and data.get("status"):
            data["status"] = vocab.word(data["status"], locale)
    if as_json:
        # Always one object (agents rely on the shape); a duplicated ID lists
        # every declaration in "declarations".
        first = dict(found[0])
        first["declarations"] = [{"kind": d["kind"], "path": d["path"], "line": d["line"]}
                                 for d in found]
        emit_json(first)
        return 0
    # A settled object and its Verified card share the ID by design; only two
    # declarations of the same kind are a duplicate.
    kinds = [data["kind"] for data in found]
    dups = max(kinds.count(k) for k in kinds)
    if dups > 1:
        err(f"{obj_id} is declared {dups} times (a duplicate ID):")
    for data in found:
        click.echo(f"{data['id']}  ({data['kind']})  {data['path']}:{data['line']}")
        if data.get("statement") and data["kind"] in ("hypothesis",):
            click.echo(f"  statement: {data['statement']}")
        for key, value in data.items():
            if key in _SKIP or value in (None, "", [], {}, ()):
                continue
            if isinstance(value, list):
                value = ", ".join(str(v) for v in value)
            click.echo(f"  {key}: {value}")
        if data.get("anchors"):
            click.echo("  anchors:")
            for key, value in data["anchors"].items():
                click.echo(f"    {key}: {value}")
        if data.get("entries"):
            click.echo("  entries:")
            for e in data["entries"]:
                click.echo(f"    {e['kind']} {e['number']}｜{e['title']}｜概率{e['probability']:g}"
                           f"｜状态{e['status']}  (line {e['line']})")
        if data.get("applications"):
            click.echo("  applications:")
            for a in data["applications"]:
                click.echo(f"    应用 {a['number']}｜{a['time']}｜问题 {a['problem']} 方向 {a['direction']}")
        if data.get("links_in"):
            click.echo("  linked from: " + ", ".join(f"{x['from']} ({x['kind']})" for x in data["links_in"]))
        if data.get("statement") and data["kind"] != "hypothesis":
            click.echo("  statement:")
            for ln in data["statement"].splitlines():
                click.echo(f"    {ln}")
    report_diagnostics(found[0].get("diagnostics") or [])
    return 0


def report_diagnostics(diags: list[dict]) -> None:
    """The parse diagnostics of the object's file(s), on stderr: every error (a line kb
    could not read is missing from what was printed), the warnings when at most
    :data:`WARNINGS_SHOWN`, else their number. Nothing when the files read cleanly."""
    errors = [d for d in diags if d["severity"] == "error"]
    others = [d for d in diags if d["severity"] != "error"]
    if errors:
        files = sorted({d["path"] for d in errors})
        err(f"kb: {len(errors)} parse error(s) in {', '.join(files)}: what kb could not read "
            "is missing above")
    for d in errors + (others if len(others) <= WARNINGS_SHOWN else []):
        err(f"kb: {d['path']}:{d['line']}:{d['col']}: {d['code']} [{d['severity']}] {d['message']}")
    if len(others) > WARNINGS_SHOWN:
        err(f"kb: and {len(others)} warning(s) in the same file(s); `kb index` lists them")
