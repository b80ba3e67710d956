"""The ``kb`` entry point: a click group that loads each command module lazily."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import PurePath
from typing import Any

import click

import kb
from kb.errors import KbError, UsageError, refused_resource

#: command name -> module under kb_cli holding ``command``. Later issues add rows.
COMMANDS: dict[str, str] = {
    "init": "init",
    "index": "index",
    "ls": "ls",
    "show": "show",
    "find": "find",
    "hyp": "hyp",
    "exp": "exp",
    "dashboard": "dashboard",
    "problem": "problem",
    "propo": "propo",
    "method": "method",
    "entry": "entry",
    "verdict": "verdict",
    "verifiers": "verifiers",
    "promote": "promote",
    "priority": "priority",
    "refresh": "refresh",
    "report": "report",
    "brief": "brief",
    "lock": "lock",
    "project": "project",
    "verify": "verify",
    "rules": "rules",
    "hooks": "hooks",
    "ci": "ci",
    "merge-driver": "merge_driver",
    "sync": "sync",
    "serve": "serve",
    "diff": "diff",
    "log": "log",
    "schema": "schema",
    "prime": "prime",
    "mcp": "mcp",
    "trail": "trail",
    "gen": "gen",
    "lit": "lit",
}


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs (fast startup)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        mod = COMMANDS.get(name)
        if mod is None:
            return None
        return importlib.import_module(f"{__package__}.{mod}").command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(kb.__version__, "--version", prog_name="kb", message="%(prog)s %(version)s")
@click.option("-C", "directory", metavar="DIR", default=None,
              # A path (bytes that need not be UTF-8, _refuse_arguments_not_utf8); no
              # checks of click's: os.chdir below says what is wrong with it.
              type=click.Path(readable=False),
              help="Run as if kb was started in DIR (like git -C).")
def cli(directory: str | None) -> None:
    """kb — a git-backed Markdown knowledge base for research.

    Reads the anchor lines of tree.md, experiments and Vibe Math cards, keeps an
    index in .kb/, and (with its hooks) enforces the rules of the research record.
    """
    if directory is not None:
        try:
            os.chdir(directory)
        except OSError as exc:
            raise UsageError(f"-C {directory}: {exc.strerror or exc}") from None
    if click.get_current_context().invoked_subcommand in READS_THAT_RECOVER:
        from kb.api import settle_interrupted_write
        from kb.index import note

        said = settle_interrupted_write()
        if said:
            note(said)


#: Read commands that first recover a write killed mid-way (writes do it under their lock).
READS_THAT_RECOVER = frozenset({"ls", "show", "verify", "index", "find"})


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 clean, 1 violations, 2 usage/env, 3 bug).

    An error is one line on stderr; with ``--json`` it is also the JSON object
    ``{"error": {"message", "exit_code", "kind"}}`` on stdout, for agents.
    """
    from kb_cli.output import ErrorStream, GuardedStream, forget_landed

    forget_landed()  # an in-process caller's earlier command landed nothing of this one
    args = sys.argv[1:] if argv is None else argv
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = GuardedStream(out), ErrorStream(err)
    if "--json" not in args:
        # Human output never carries a terminal escape from a file's text raw.
        from kb_cli.output import PrintableStream

        sys.stdout, sys.stderr = PrintableStream(sys.stdout), PrintableStream(sys.stderr)
    try:
        code = _main(args, argv)
        sys.stdout.flush()  # what is left for the reader: its errors are the command's
        return code
    except KbError as exc:  # the output could not be written at the end
        click.echo(f"kb: {exc}", err=True)
        return exc.exit_code
    finally:
        _print_notes()
        sys.stdout, sys.stderr = out, err


def _print_notes() -> None:
    """The library's notes for the user (an unusable cache, …), once each, on stderr."""
    if "kb.index" not in sys.modules:
        return  # nothing can have queued a note (and importing sqlite3 here costs a view ~4 ms)
    from kb.index import take_notes

    for message in take_notes():
        click.echo(message, err=True)


def _main(args: list[str], argv: list[str] | None) -> int:
    try:
        _refuse_arguments_not_utf8(args)
        rv: Any = cli.main(args=argv, prog_name="kb", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return _json_error(args, exc.format_message(), 2, "usage")
    except click.Abort:
        click.echo("kb: aborted", err=True)
        return _json_error(args, "aborted", 2, "environment")
    except KbError as exc:
        click.echo(f"kb: {exc}", err=True)
        return _json_error(args, str(exc), exc.exit_code, exc.kind)
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: a short message, never a traceback for users
        refused = refused_resource(exc)
        if refused is not None:  # not a bug: the system's limits
            click.echo(f"kb: {refused}", err=True)
            return _json_error(args, str(refused), refused.exit_code, refused.kind)
        msg = f"internal error: {type(exc).__name__}: {exc}"
        click.echo(f"kb: {msg} (set KB_DEBUG=1 for the traceback; please report it)", err=True)
        if _debug():
            raise
        return _json_error(args, msg, 3, "internal")
    return int(rv or 0)


def _refuse_arguments_not_utf8(args: list[str]) -> None:
    """Raise UsageError for an argument whose bytes are not UTF-8, before any command runs
    (nothing read, recovered or written).

    Python hands such bytes (a shell's ``$'\\xff'``) over as lone surrogates, which no
    text kb writes -- a file, a commit message, JSON -- can hold: every command failed
    somewhere inside with an internal error. A path is bytes, not text (kb keeps such
    names with ``surrogateescape``), so the value of a ``click.Path`` parameter (-C,
    --kb, kb init's folder, …) is let through.
    """
    bad = [(i, a) for i, a in enumerate(args) if not _is_utf8(a)]
    if not bad:
        return
    paths = _path_values(args)
    for i, arg in bad:
        # A path, or an option with its path attached (--kb=DIR, -CDIR); each value lets
        # one argument through (`kb -C DIR show DIR`: the ID is text).
        given = next((p for p in paths if p in (arg, str(PurePath(arg)))
                      or (arg.startswith("-") and arg.endswith(p))), None)
        if given is not None:
            paths.remove(given)
            continue
        try:
            raw = os.fsencode(arg)  # the bytes given
        except UnicodeEncodeError:  # a surrogate no decoding made (an in-process caller's)
            raw = arg.encode("utf-8", "backslashreplace")
        shown = raw.decode("utf-8", "backslashreplace")
        raise UsageError(f"argument {i + 1} '{shown}' is not valid UTF-8; kb reads text "
                         "arguments as UTF-8 (only a path may hold other bytes)")


def _is_utf8(arg: str) -> bool:
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: bytes the locale could not decode
        return False
    return True


def _path_values(args: list[str]) -> list[str]:
    """The values the command line gives ``click.Path`` parameters, found by a parse that
    runs nothing (click's resilient parsing: no callback, no conversion error), from
    ``kb`` down to the command named (``kb hyp add``)."""
    out: list[str] = []
    try:
        ctx = cli.make_context("kb", list(args), resilient_parsing=True)
        while True:
            for param in ctx.command.params:
                if isinstance(param.type, click.Path):
                    value = ctx.params.get(param.name or "")
                    for v in value if isinstance(value, (tuple, list)) else [value]:
                        if v is not None:
                            out.append(os.fspath(v))
            if not isinstance(ctx.command, click.Group):
                return out
            # What follows the group's own options (click 8.2 made protected_args private).
            protected = getattr(ctx, "_protected_args", None)
            if protected is None:
                protected = ctx.protected_args
            rest = [*protected, *ctx.args]
            name, cmd, sub_args = ctx.command.resolve_command(ctx, rest) if rest else (None, None, [])
            if cmd is None:
                return out
            ctx = cmd.make_context(name, sub_args, parent=ctx, resilient_parsing=True)
    except click.ClickException:  # no such command: no path of its to let through
        return out


def _json_error(args: list[str], message: str, code: int, kind: str) -> int:
    """Also print the error as JSON on stdout when the command was asked for JSON
    (``--json``, ``--format json`` or ``--format=json``)."""
    if _asks_json(args):
        from kb_cli.output import emit_json

        try:
            emit_json({"error": {"message": message, "exit_code": code, "kind": kind}})
        except KbError:
            pass  # standard output is what failed: stderr has said so
    return code


def _asks_json(args: list[str]) -> bool:
    """Whether the command line asks for JSON on stdout."""
    if "--json" in args or "--format=json" in args:
        return True
    return any(a == "--format" and b == "json" for a, b in zip(args, args[1:]))


def _debug() -> bool:
    return bool(os.environ.get("KB_DEBUG"))


def run() -> None:  # pragma: no cover - console script shim
    import gc

    # A kb process is short-lived and builds large acyclic batches (100,000 index
    # rows): the default collector, triggered every 700 allocations, spends up to
    # half of such a command re-scanning them. Reference counting frees them anyway.
    gc.set_threshold(100_000, 50, 1000)
    code = main()
    # On its way out Python collects once more over every tracked object (the
    # imported modules and whatever the command built): frozen, they are skipped.
    # Files and the index are closed by then; atexit handlers and the flush of
    # stdout still run. ~5% of a cold index at 1,000 files (docs/DECISIONS.md).
    gc.freeze()
    sys.exit(code)
