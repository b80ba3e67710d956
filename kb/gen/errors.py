"""Errors of the generation loop."""

from __future__ import annotations

from kb.errors import RefusedError, UsageError


class GenError(RefusedError):
    """A submission or command was refused (exit 1); nothing in the sandbox changed.

    ``problems`` lists every finding as ``file: $.json.path: what is wrong``.
    """

    kind = "refused"

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        full = message if not problems else message + "\n" + "\n".join(f"  {p}" for p in problems)
        super().__init__(full)
        self.problems = list(problems or [])


class GenConflict(GenError):
    """The run is not where the command expects it: a run exists already, another step is
    due, or the run has stopped (exit 1, kind ``conflict``)."""

    kind = "conflict"


class GenNotFound(GenError):
    """A named file or hypothesis does not exist (exit 1, kind ``not_found``)."""

    kind = "not_found"


class GenNoFile(UsageError):
    """A file named on the command line does not exist (exit 2, kind ``usage``, as every
    other command's missing argument file)."""
