"""``kb ls``: list objects of one kind."""

from __future__ import annotations

import re

import click

from kb.vocab import display_status
from kb_cli.output import cell, emit_json, json_option, kb_option

KINDS = ["hypotheses", "experiments", "problems", "propositions", "methods", "verified",
         "directions", "records"]


def _columns(row, locale: str) -> list[str]:
    status = display_status(row.kind, row.status, locale)
    if row.kind == "hypothesis":
        return [row.id, status, row.title]  # a hypothesis's title is its statement
    f = row.fields()
    if row.kind == "experiment":
        return [row.id, status, f.get("hypothesis") or "", f.get("conclusion") or "", row.title]
    if row.kind == "problem":
        pr = f.get("priority")
        return [row.id, status, "" if pr is None else str(pr), row.title]
    if row.kind == "proposition":
        p = f.get("probability")
        return [row.id, status, "" if p is None else f"{p:g}", f.get("category") or "", row.title]
    return [row.id, status, row.title]


HEADERS = {
    "hypothesis": ["ID", "Status", "Statement"],
    "experiment": ["ID", "Status", "Hypothesis", "Conclusion", "Action"],
    "problem": ["ID", "Status", "Priority", "Title"],
    "proposition": ["ID", "Status", "Probability", "Category", "Title"],
}


#: Above this many rows the table is printed as plain aligned lines (the last
#: column unwrapped): rich measures and wraps every cell, about 0.4 ms a row,
#: 40 s for a tree of 100,000 hypotheses, 0.3 s for 700 rows.
RICH_MAX_ROWS = 200


# East Asian wide and full-width blocks (Hangul Jamo, CJK, Hangul, compatibility forms,
# full-width forms): two terminal columns each.
_WIDE = re.compile("[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff"
                   "\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60"
                   "\uffe0-\uffe6\U00020000-\U0003fffd]")


def _width(text: str) -> int:
    """Terminal columns of ``text``: East Asian wide and full-width characters take two."""
    if text.isascii():
        return len(text)
    return len(text) + len(_WIDE.findall(text))


def _plain_table(title: str | None, headers: list[str], cells: list[list[str]]) -> None:
    """Print ``cells`` under ``headers``: each cell bounded (:func:`kb_cli.output.cell`),
    columns padded to their widest cell, two spaces apart, the last one unpadded (one
    line per row, easy to grep)."""
    table = [headers, *cells]
    last = len(headers) - 1
    known: dict[str, int] = {}  # statuses repeat: measure each text once
    padded = []
    for i in range(last):  # column by column: a list comprehension each
        col = [cell(row[i]) for row in table]
        if "".join(col).isascii():  # IDs: one character, one column
            w = max(map(len, col)) + 2
            padded.append([c.ljust(w) for c in col])
            continue
        for c in set(col):
            known[c] = _width(c)
        w = max(known[c] for c in col) + 2
        padded.append([c + " " * (w - known[c]) for c in col])
    out = [title] if title else []
    out += ["".join(parts).rstrip() for parts in zip(*padded, [cell(row[last]) for row in table])]
    click.echo("\n".join(out))


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
    with probability. A table cell past 200 characters is cut, ending in …;
    --format tsv and --json keep every value whole."""
    from kb.api import list_objects

    # A hypothesis row shows only ID, status and statement (its title): the object
    # JSON is not read unless --json prints it.
    k, rows = list_objects(kind, status, kb_path, with_data=as_json or kind != "hypotheses")
    locale = k.config.locale
    if as_json:
        from kb.contract import ls_data

        emit_json(ls_data(kind, status, rows, locale))
        return 0
    if not rows:
        click.echo("(none)", err=True)
        return 0
    if fmt == "tsv":
        for r in rows:
            cells = [r.kind, *_columns(r, locale)]
            click.echo("\t".join(" ".join(c.split()) for c in cells))
        return 0
    groups: dict[str, list] = {}
    for r in rows:
        groups.setdefault(r.kind, []).append(r)
    if len(rows) > RICH_MAX_ROWS:
        for kind_name, group in groups.items():
            if kind_name == "hypothesis":
                # 100,000 rows: each status word looked up once, not once a row.
                words: dict[str, str] = {}
                for r in group:
                    if r.status not in words:
                        words[r.status] = display_status(r.kind, r.status, locale)
                cells = [[r.id, words[r.status], r.title] for r in group]
            else:
                cells = [_columns(r, locale) for r in group]
            _plain_table(None if kind else kind_name, HEADERS.get(kind_name, ["ID", "Status", "Title"]),
                         cells)
        return 0
    from rich.table import Table

    from kb_cli.output import console as make_console

    # No styles: human output escapes every control character (kb_cli.output.printable),
    # so rich must not emit its own.
    console = make_console()
    for kind_name, group in groups.items():
        table = Table(title=None if kind else kind_name, show_edge=False, box=None, pad_edge=False)
        for h in HEADERS.get(kind_name, ["ID", "Status", "Title"]):
            table.add_column(h, overflow="fold")
        for r in group:
            table.add_row(*map(cell, _columns(r, locale)))
        console.print(table)
    return 0
