"""``kb verdict``: record a verification verdict and write it back."""

from __future__ import annotations

from typing import Any

import click

from kb_cli.output import json_option, kb_option, write_kwargs, write_options
from kb_cli.problem import emit_result


@click.command("verdict")
@click.argument("target")
@click.option("--vote", "votes", multiple=True, metavar="NAME=RESULT",
              help="A verifier's result in [0,1] (at least two).")
@click.option("--reason", "reasons", multiple=True, metavar="NAME=TEXT", help="A verifier's reason.")
@click.option("--reason-file", default=None, metavar="FILE",
              help="Reasons: a JSON object {name: reason} or 'NAME: reason' lines.")
@click.option("--transcript-file", default=None, metavar="FILE",
              help="The debate transcript to keep in the record.")
@click.option("--mode", default=None, help="forced (accuracy-weighted) or flat (0.5) for a split "
              "vote; default [verdict] mode, else forced.")
@json_option
@kb_option
@write_options
def command(target: str, votes: tuple[str, ...], reasons: tuple[str, ...], reason_file: str | None,
            transcript_file: str | None, mode: str | None, as_json: bool, kb_path: str | None,
            **kw: Any) -> int:
    """Verify TARGET — ID#解法N (a solution), ID#证明N / ID#证伪N (a proof or refutation)
    or ID (a bare proposition) — with the verifiers' votes: computes the verdict, writes
    Logs/Verification/<rid>_<time>.json, sets the entry to the verdict (状态已验) and settles
    the object at 1 or 0 (Verified card). One commit."""
    from kb.ops.card_input import read_text_arg
    from kb.ops.verdict import record_verdict
    from kb.ops.votes import parse_votes, read_reasons

    transcript = None
    if transcript_file is not None:
        transcript = read_text_arg(None, transcript_file, "transcript", required=False)
    res = record_verdict(kb_path, target, parse_votes(votes), read_reasons(reasons, reason_file),
                         mode, transcript=transcript, **write_kwargs(kw))
    return emit_result(res, as_json)

