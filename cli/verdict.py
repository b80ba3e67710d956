"""``kb verdict``: record a verification verdict and write it back."""

from __future__ import annotations

from typing import Any

import json

import click

from kb_cli.output import json_option, kb_option, write_kwargs, write_options
from kb_cli.problem import emit_result


def parse_votes(values: tuple[str, ...]) -> list[tuple[str, str]]:
    from kb.errors import UsageError

    out = []
    for v in values:
        name, sep, x = v.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"vote {v!r} is not NAME=RESULT; write e.g. --vote v1=0.9 (RESULT in [0,1])")
        out.append((name.strip(), x.strip()))
    return out


def read_reasons(values: tuple[str, ...], reason_file: str | None) -> dict[str, str]:
    """``--reason v1=TEXT`` and ``--reason-file F`` (a JSON object, or ``NAME: TEXT`` lines)."""
    from kb.errors import UsageError
    from kb.ops.cards import read_text_arg

    out: dict[str, str] = {}
    if reason_file is not None:
        text = read_text_arg(None, reason_file, "reason file", required=False)
        data = None
        if text.lstrip().startswith(("{", "[")):
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise UsageError(f"reason file {reason_file!r} is not valid JSON: {exc}") from None
        if isinstance(data, dict):
            out.update({str(k): str(v) for k, v in data.items()})
        elif isinstance(data, list):
            for it in data:
                if isinstance(it, dict) and "verifier" in it:
                    out[str(it["verifier"])] = str(it.get("reason", ""))
        else:
            cur = None
            for ln in text.split("\n"):
                name, sep, rest = ln.partition(":")
                if sep and name.strip() and " " not in name.strip() and not ln.startswith(" "):
                    cur = name.strip()
                    out[cur] = rest.strip()
                elif cur is not None:
                    out[cur] = (out[cur] + "\n" + ln).strip("\n")
                elif ln.strip():
                    raise UsageError(f"reason file {reason_file!r}: write 'NAME: reason' lines or a "
                                    "JSON object {\"v1\": \"reason\"}")
    for v in values:
        name, sep, text = v.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"reason {v!r} is not NAME=TEXT; write e.g. --reason v1='step 3 fails'")
        out[name.strip()] = text
    return out


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
    from kb.ops.cards import read_text_arg
    from kb.ops.verdict import record_verdict

    transcript = None
    if transcript_file is not None:
        transcript = read_text_arg(None, transcript_file, "transcript", required=False)
    res = record_verdict(kb_path, target, parse_votes(votes), read_reasons(reasons, reason_file),
                         mode, transcript=transcript, **write_kwargs(kw))
    return emit_result(res, as_json)

