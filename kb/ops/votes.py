"""Verifier votes and reasons as a person or agent gives them (``kb verdict``'s input).

The verdict rule itself is :mod:`kb.ops.verdict`; this module only turns the
command line's ``NAME=RESULT`` / ``NAME=TEXT`` values and a reasons file into
plain data, so the CLI and the MCP server read them the same way.
"""

from __future__ import annotations

from typing import Iterable

from kb import json_input
from kb.errors import UsageError
from kb.ops.card_input import read_text_arg


def parse_votes(values: Iterable[str]) -> list[tuple[str, str]]:
    """``NAME=RESULT`` strings -> ``[(name, result text)]`` in order.

    Raises :class:`kb.errors.UsageError` (exit 2) for a malformed vote;
    the result text is checked by :func:`kb.ops.verdict.record_verdict`.
    """
    out = []
    for v in values:
        name, sep, x = v.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"vote {v!r} is not NAME=RESULT; write e.g. --vote v1=0.9 (RESULT in [0,1])")
        out.append((name.strip(), x.strip()))
    return out


def read_reasons(values: Iterable[str], reason_file: str | None) -> dict[str, str]:
    """Verifier reasons: ``NAME=TEXT`` strings and a reasons file -> ``{name: reason}``.

    The file (UTF-8) is a JSON object ``{name: reason}``, a JSON list of
    ``{"verifier", "reason"}`` objects, or ``NAME: reason`` lines (indented or
    unnamed lines continue the previous reason). ``values`` win over the file.
    Raises :class:`kb.errors.UsageError` for a malformed value or file.
    """
    out: dict[str, str] = {}
    if reason_file is not None:
        text = read_text_arg(None, reason_file, "reason file", required=False)
        data = None
        if text.lstrip().startswith(("{", "[")):
            try:
                data = json_input.loads(text)
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
