"""``kb verifiers``: each verifier's accuracy against outcomes that settled later."""

from __future__ import annotations

import click

from kb_cli.output import cell, emit_json, json_option, kb_option


@click.command("verifiers")
@json_option
@kb_option
def command(as_json: bool, kb_path: str | None) -> int:
    """Accuracy of every verifier, derived from Logs/Verification/*.json: the share of its
    votes on targets that later settled (final verdict 0 or 1) that agreed with the outcome
    (≥ 0.5 agrees with 1, ≤ 0.5 with 0); 0.5 without history. A record that is not JSON or
    not a valid record is left out, and named on stderr (kb verify warns of it, KB243)."""
    from kb.views.verification import accuracy_report

    rows, bad = accuracy_report(kb_path)
    if bad:
        # stderr, one line: stdout (the table, --json) keeps its format
        n = len(bad)
        click.echo(f"kb: {n} verification record{'' if n == 1 else 's'} left out (not valid "
                   "records; kb verify warns, KB243): "
                   + " | ".join(f"{b.path}: {b.why}" for b in bad), err=True)
    if as_json:
        from kb.contract import verifiers_data

        emit_json(verifiers_data(rows))
        return 0
    if not rows:
        click.echo("(no verification records)", err=True)
        return 0
    names = [cell(a.verifier) for a in rows]  # a hand-edited record's name pads no row long
    width = max(len("verifier"), *map(len, names))
    click.echo(f"{'verifier':<{width}}  accuracy  agreed/counted  votes")
    for a, name in zip(rows, names):
        click.echo(f"{name:<{width}}  {a.rate:8.3f}  {a.agreed:>6}/{a.counted:<7}  {a.votes:>5}")
    return 0
