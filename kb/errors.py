"""kb's exception types.

Bad *content* is never an exception: parsers and rules return
:class:`kb.model.Diagnostic` values. Exceptions are for refused operations,
usage mistakes and environment failures (git missing, not a KB), and for bugs.
No third-party exception escapes the public API.
"""

from __future__ import annotations


class KbError(Exception):
    """Base class of every error kb raises on purpose.

    ``exit_code`` is what the CLI exits with: 1 for a refused operation or a
    rule violation, 2 for a usage or environment error.
    """

    exit_code = 2


class UsageError(KbError):
    """The caller asked for something that does not make sense (exit 2)."""

    exit_code = 2


class EnvironmentError_(KbError):
    """The environment is not usable: git missing, not a repository, … (exit 2)."""

    exit_code = 2


class NotAKnowledgeBase(EnvironmentError_):
    """No ``kb.toml`` in the current directory or any parent."""


class GitError(EnvironmentError_):
    """A git command failed; ``stderr`` holds git's own message."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


class ConfigError(KbError):
    """``kb.toml`` cannot be read or has a value of the wrong type (exit 2)."""

    exit_code = 2


class RefusedError(KbError):
    """An operation was refused; nothing was written (exit 1)."""

    exit_code = 1
