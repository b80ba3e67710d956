"""Shared output helpers and option decorators for every command."""

from __future__ import annotations

import json
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


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def err(msg: str) -> None:
    """A message for people: stderr, so stdout stays clean for --json."""
    click.echo(msg, err=True)


def fmt_diag(d: Any) -> str:
    return f"{d.path}:{d.line}:{d.col}: {d.code} [{d.severity}] {d.message}"
