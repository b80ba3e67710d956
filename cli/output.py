"""Shared output helpers and option decorators for every command."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from typing import Any, Callable, Iterable, TypeVar

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


#: The most characters a cell of a human table of many objects shows (``kb ls``,
#: ``kb find``, ``kb verifiers``): a statement or title is rarely past 120, so no cell is
#: cut in normal use, and a hand-edited 200,000-character status cannot flood the
#: terminal. ``--json`` (and ``kb ls --format tsv``) keep every value whole; the help of
#: ``kb ls`` and ``kb find`` states the number.
CELL_MAX = 200


def cell(text: str) -> str:
    """``text`` as a table cell: at most :data:`CELL_MAX` characters, a longer one cut to
    its first ``CELL_MAX - 1`` and an ellipsis (…). Control characters are escaped when
    the line is written (:class:`PrintableStream`), wide characters measured by the table."""
    return text if len(text) <= CELL_MAX else text[: CELL_MAX - 1] + "…"


class PrintableStream:
    """A text stream that writes :func:`printable` text to ``raw`` (human output)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(printable(text) if isinstance(text, str) else text)
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, buffer, …
        return getattr(self.raw, name)


class GuardedStream:
    """Standard output for the commands. A reader that goes away (a broken pipe:
    ``kb … | head``) is no error: the rest of the output is dropped and the command
    ends with its own exit code (``kb verify | head`` still exits 1 on violations).
    Any other failed write (a full disk, a closed descriptor) is an
    :class:`kb.errors.EnvironmentError_`: exit 2, one line, never an internal error."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.gone = False  # the reader went away: what follows goes nowhere

    def _failed(self, exc: OSError) -> None:
        """A write or flush failed: the reader went away (nothing more is written), or
        the environment is at fault (raised)."""
        if isinstance(exc, BrokenPipeError):
            self._drop()
            return
        raise _output_failed(str(exc.strerror or exc))

    def _drop(self) -> None:
        """Point the descriptor at the null device: what is still buffered is flushed
        there at exit, not into a second broken pipe."""
        self.gone = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self.raw.fileno())
            finally:
                os.close(null)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass  # no descriptor of its own (an in-process run): nothing to flush at exit

    def write(self, text: Any) -> int:
        if self.gone:
            if not isinstance(text, str):
                raise TypeError("write() argument must be str")  # as a text stream says
            return len(text)
        if self.raw is None:  # started with standard output closed
            raise _output_failed("standard output is closed")
        try:
            return self.raw.write(text)
        except OSError as exc:
            self._failed(exc)
            return len(text)

    def flush(self) -> None:
        if self.gone or self.raw is None:
            return
        try:
            self.raw.flush()
        except OSError as exc:
            self._failed(exc)

    def isatty(self) -> bool:
        # Asked before anything is written (a table's layout): a closed standard output
        # is no terminal, and the first write then says it is closed.
        return self.raw is not None and not self.gone and self.raw.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, buffer, …
        return getattr(self.raw, name)


#: What this process's write already did (``committed <sha> (paths)``, ``wrote paths
#: (not committed)``), noted by the printers before they print: an output that then cannot
#: be written says it, so that a caller does not retry a write that landed (and duplicate it).
_LANDED: list[str] = []


def note_landed(commit: str | None, paths: Iterable[str], what: str = "") -> None:
    """Note a write that landed (a commit, or files written but not committed), before
    its output is printed. ``what`` replaces the default wording when given."""
    paths = list(paths)
    if what:
        said = what
    elif commit:
        said = f"committed {commit[:12]}" + (f" ({', '.join(paths)})" if paths else "")
    elif paths:
        said = f"wrote {', '.join(paths)} (not committed)"
    else:
        return
    if said not in _LANDED:
        _LANDED.append(said)


def forget_landed() -> None:
    """Start a command with nothing landed (:func:`kb_cli.main.main`)."""
    _LANDED.clear()


def note_sync(data: dict[str, Any]) -> None:
    """Note the commits ``kb sync`` made (its JSON object's fields)."""
    for key, what in (("renumber_commit", "renumbered in"), ("merge_commit", "merged in"),
                      ("dashboard_commit", "regenerated DASHBOARD.md in"),
                      ("trail_commit", "rendered TRAIL.md in")):
        if data.get(key):
            note_landed(None, [], f"{what} {str(data[key])[:12]}")


def _output_failed(why: str) -> Exception:
    """The environment error of an output that cannot be written, saying what this
    process's write already did (so a retry is not blind)."""
    from kb.errors import EnvironmentError_

    if _LANDED:
        return EnvironmentError_(f"{'; '.join(_LANDED)}, but its output could not be "
                                 f"written: {why}")
    return EnvironmentError_(f"cannot write the output: {why}")


class ErrorStream(GuardedStream):
    """Standard error for the commands (``kb … 2>&1 | head``): a reader that goes away,
    or a write that fails, drops what follows, and the command ends with its own exit
    code. There is nowhere left to say that a message was lost."""

    def _failed(self, exc: OSError) -> None:
        self._drop()

    def write(self, text: Any) -> int:
        if self.raw is None:  # started with standard error closed
            return len(text)
        return super().write(text)


def emit_json(data: Any) -> None:
    if isinstance(data, dict) and {"op", "blobs", "commit"} <= data.keys():
        note_landed(data["commit"], [str(p) for p in data.get("paths") or []])  # a write's result
    elif isinstance(data, dict) and {"renumber_commit", "merge_commit"} <= data.keys():
        note_sync(data)  # kb sync's result
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def console() -> Any:
    """A rich console for human tables: no styles, on a terminal too (human output escapes
    every control character, :func:`printable`: a bold header would show as ``\\x1b[1m``),
    and no wrapping when stdout is not a terminal (one row, one line, for grep).

    Every string is printed literally: statements and titles are user text, so rich
    markup (``a[i]`` dropped, ``[/b]`` an error) and emoji codes (``:smile:``) are off."""
    from rich.console import Console

    literal: dict[str, Any] = {"markup": False, "emoji": False, "highlight": False}
    if sys.stdout.isatty():
        return Console(soft_wrap=False, color_system=None, **literal)
    return Console(soft_wrap=True, width=100_000, no_color=True, color_system=None, **literal)


def echo_lines(lines: Iterable[str]) -> None:
    """Print ``lines`` on stdout in one write: a KB's thousands of pre-existing warnings
    (6,000 on the 100,000-file cards corpus) cost ~60 ms as one ``click.echo`` each."""
    text = "\n".join(lines)
    if text:
        click.echo(text)


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
                     help="Who acts (lock owner); default: $KB_OWNER, else git config "
                     "kb.owner, else user.email.")(f)
    f = click.option("--no-commit", is_flag=True,
                     help="Write the files but leave them uncommitted.")(f)
    return f


def write_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    """The library keywords of :func:`write_options` (plus the waiting message), through
    the one :class:`kb.ops.result.WriteOptions`."""
    from kb.ops.result import WriteOptions

    return WriteOptions(no_commit=kw["no_commit"], owner=kw["owner"], expect=kw["expect"],
                        on_wait=print_waiting).kwargs()


def many_cards_write_kwargs(kw: dict[str, Any]) -> dict[str, Any]:
    """:func:`write_kwargs` for commands that write many cards: ``--expect`` names the
    blob of one file, so it is refused there."""
    if kw["expect"] is not None:  # an empty --expect is refused too, never ignored
        from kb.errors import UsageError

        raise UsageError("--expect applies to commands that edit one existing card")
    out = write_kwargs(kw)
    del out["expect"]
    return out


def print_waiting(msg: str) -> None:
    """``on_wait`` callback for transactions: tell the user once what kb waits for."""
    err(f"kb: {msg}")


def print_result(res: Any, as_json: bool) -> int:
    """The one printer of a write result (:class:`kb.ops.result.OpResult`): its
    ``to_json()`` with ``--json``; else its change lines on stdout and what was
    committed or written on stderr. A rolled-back interrupted write is said
    first, on stderr, either way. Returns exit code 0."""
    note_landed(res.commit, res.paths)
    if res.recovered:
        err(f"kb: rolled back an interrupted kb write first: {', '.join(res.recovered)}")
    if as_json:
        emit_json(res.to_json())
        return 0
    for ln in res.changes:
        click.echo(ln)
    if res.commit:
        err(f"committed {res.commit[:12]} ({', '.join(res.paths)})")
    elif res.paths:
        err(f"wrote {', '.join(res.paths)} (not committed)")
    return 0
