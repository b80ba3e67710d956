"""``kb ls``: list objects of one kind."""

from __future__ import annotations

import click

from kb_cli.output import emit_json, json_option, kb_option

KINDS = ["hypotheses", "experiments", "problems", "propositions", "methods", "verified",
         "directions", "records"]


def _display_status(row, locale: str) -> str:
    from kb.vocab import EXPERIMENT_STATUS, HYPOTHESIS_STATUS

    if row.kind == "hypothesis":
        return HYPOTHESIS_STATUS.word(row.status, locale)
    if row.kind == "experiment":
        return EXPERIMENT_STATUS.word(row.status, locale)
    return row.status


def _columns(row, locale: str) -> list[str]:
    f = row.fields()
    status = _display_status(row, locale)
    if row.kind == "hypothesis":
        return [row.id, status, f.get("statement", "")]
    if row.kind == "experiment":
        return [row.id, status, f.get("hypothesis") or "", f.get("conclusion") or "", row.title]
    if row.kind == "problem":
        return [row.id, status, str(f.get("priority", "")), row.title]
    if row.kind == "proposition":
        p = f.get("probability")
        return [row.id, status, "" if p is None else f"{p:g}", f.get("category", ""), row.title]
    return [row.id, status, row.title]


HEADERS = {
    "hypothesis": ["ID", "Status", "Statement"],
    "experiment": ["ID", "Status", "Hypothesis", "Conclusion", "Action"],
    "problem": ["ID", "Status", "Priority", "Title"],
    "proposition": ["ID", "Status", "Probability", "Category", "Title"],
}


@click.command("ls")
@click.argument("kind", required=False, metavar="[KIND]", type=click.Choice(KINDS))
@click.option("--status", help="Only objects with this status (either language for hypotheses).")
@click.option("--format", "fmt", type=click.Choice(["table", "tsv"]), default="table",
              show_default=True, help="tsv: one object per line, KIND<TAB>the table's columns, "
              "no header (tabs and line breaks in values become spaces).")
@json_option
@kb_option
def command(kind: str | None, status: str | None, fmt: str, as_json: bool,
            kb_path: str | None) -> int:
    """List objects of KIND (hypotheses, experiments, problems, propositions,
    methods, verified, directions, records; all kinds when omitted): hypotheses
    with status and statement, problems by priority (never last), propositions
    with probability."""
    from kb.api import list_objects

    k, rows = list_objects(kind, status, kb_path)
    locale = k.config.locale
    if as_json:
        out = []
        for r in rows:
            f = r.fields()
            f.pop("anchor_lines", None)
            f["status"] = _display_status(r, locale)
            f["blob"] = r.blob
            out.append(f)
        emit_json(out)
        return 0
    if not rows:
        click.echo("(none)", err=True)
        return 0
    if fmt == "tsv":
        for r in rows:
            cells = [r.kind, *_columns(r, locale)]
            click.echo("\t".join(" ".join(c.split()) for c in cells))
        return 0
    from rich.table import Table

    from kb_cli.output import console as make_console

    groups: dict[str, list] = {}
    for r in rows:
        groups.setdefault(r.kind, []).append(r)
    console = make_console()
    for kind_name, group in groups.items():
        table = Table(title=None if kind else kind_name, show_edge=False, box=None, pad_edge=False)
        for h in HEADERS.get(kind_name, ["ID", "Status", "Title"]):
            table.add_column(h, overflow="fold")
        for r in group:
            table.add_row(*_columns(r, locale))
        console.print(table)
    return 0
