"""Shared output helpers and option decorators for every command."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Callable, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def json_option(f: F) -> F:
    """``--json``: only JSON on stdout (UTF-8, non-ASCII as itself)."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")(f)


def kb_option(f: F) -> F:
    """``--kb PATH``: act on the KB containing PATH instead of the current directory."""
    return click.option("--kb", "kb_path", type=click.Path(file_okay=False, path_type=str),
                        default=None, help="The KB folder (default: found from the current directory).")(f)


#: What a terminal may act on instead of printing: C0 controls but tab and
#: newline, DEL, C1 controls (8-bit CSI/OSC), Unicode line and paragraph
#: separators and the bidirectional overrides that reorder what is shown.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f"
                          "\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every terminal control or escape character shown as ``\\xNN`` /
    ``\\uNNNN`` (a title can never recolour, retitle or clear the user's terminal)."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class PrintableStream:
    """A text stream that writes :func:`printable` text to ``raw`` (human output)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(printable(text) if isinstance(text, str) else text)
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, buffer, …
        return getattr(self.raw, name)


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def err(msg: str) -> None:
    """A message for people: stderr, so stdout stays clean for --json."""
    click.echo(msg, err=True)


def fmt_diag(d: Any) -> str:
    return f"{d.path}:{d.line}:{d.col}: {d.code} [{d.severity}] {d.message}"


def write_options(f: F) -> F:
    """Options every write command shares: --no-commit, --owner, --expect."""
    f = click.option("--expect", "expect", default=None, metavar="BLOB",
                     help="Refuse unless the target file still has this blob id (compare-and-swap).")(f)
    f = click.option("--owner", default=None,
                     help="Who acts (lock owner); default: git config kb.owner, else user.email.")(f)
    f = click.option("--no-commit", is_flag=True,
                     help="Write the files but leave them uncommitted.")(f)
    return f


def write_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    """The library keywords of :func:`write_options` (plus the waiting message)."""
    return {"no_commit": kw["no_commit"], "owner": kw["owner"], "expect": kw["expect"],
            "on_wait": print_waiting}


def many_cards_write_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    """:func:`write_kwargs` for commands that write many cards: ``--expect`` names the
    blob of one file, so it is refused there."""
    if kw["expect"]:
        from kb.ops.cards import CardError

        raise CardError("--expect applies to commands that edit one existing card")
    out = write_kwargs(kw)
    del out["expect"]
    return out


def print_waiting(msg: str) -> None:
    """``on_wait`` callback for transactions: tell the user once what kb waits for."""
    err(f"kb: {msg}")


def report_tx(result: Any, lines: list[str], as_json: bool, extra: dict[str, Any] | None = None) -> None:
    """Print what a write command did: ``lines`` for people, or JSON."""
    if as_json:
        data = {"op": result.op, "ids": result.ids, "paths": result.paths, "commit": result.commit}
        data.update(extra or {})
        emit_json(data)
        return
    for ln in lines:
        click.echo(ln)
    if result.commit:
        err(f"committed {result.commit[:12]} ({', '.join(result.paths)})")
    elif result.paths:
        err(f"wrote {', '.join(result.paths)} (not committed)")
