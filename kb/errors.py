"""kb's exception types and its one vocabulary of error kinds.

Bad *content* is never an exception: parsers and rules return
:class:`kb.model.Diagnostic` values. Exceptions are for refused operations,
usage mistakes and environment failures (git missing, not a KB), and for bugs.
No third-party exception escapes the public API.

Every error has a ``kind`` (snake_case, the ``kind`` of the JSON error object
``{"error": {"message", "exit_code", "kind"}}``) and the CLI's ``exit_code``;
:data:`ERROR_KINDS` is the whole vocabulary:

============== ==== =========================================================
kind           exit meaning
============== ==== =========================================================
usage          2    a bad argument value, a malformed target, an out-of-range
                    number, an unknown status word
environment    2    git missing, not a KB, an unreadable ``kb.toml``, a git
                    command that failed
internal       3    a bug in kb (please report it)
refused        1    the operation breaks a rule of the record; nothing written
not_found      1    the named ID, file or lock does not exist
conflict       1    the target exists already, is dirty, or the branch moved
locked         1    another owner holds a lock on the target
stale          1    ``--expect``: the file changed since the caller read it
============== ==== =========================================================
"""

from __future__ import annotations

#: kind -> (exit code, one-line meaning). The documented vocabulary.
ERROR_KINDS: dict[str, tuple[int, str]] = {
    "usage": (2, "a bad argument value, a malformed target, an out-of-range number, an unknown word"),
    "environment": (2, "git missing, not a KB, an unreadable kb.toml, a git command that failed"),
    "internal": (3, "a bug in kb; please report it"),
    "refused": (1, "the operation breaks a rule of the record; nothing was written"),
    "not_found": (1, "the named ID, file or lock does not exist"),
    "conflict": (1, "the target already exists, has uncommitted changes, or the branch moved"),
    "locked": (1, "another owner holds a lock on the target"),
    "stale": (1, "--expect: the file changed since the caller read it"),
}


class KbError(Exception):
    """Base class of every error kb raises on purpose.

    ``kind`` is one key of :data:`ERROR_KINDS`; ``exit_code`` is what the CLI
    exits with (1 refused, 2 usage or environment, 3 internal).
    """

    kind = "environment"
    exit_code = 2


class UsageError(KbError):
    """The caller asked for something that does not make sense (exit 2)."""

    kind = "usage"
    exit_code = 2


class EnvironmentError_(KbError):
    """The environment is not usable: git missing, not a repository, … (exit 2)."""

    kind = "environment"
    exit_code = 2


class NotAKnowledgeBase(EnvironmentError_):
    """No ``kb.toml`` in the current directory or any parent."""


class GitError(EnvironmentError_):
    """A git command failed; ``stderr`` holds git's own message."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


class ConfigError(EnvironmentError_):
    """``kb.toml`` cannot be read or has a value of the wrong type (exit 2). ``line``
    and ``col``: the 1-based line (and column) of kb.toml it is about, 0 when unknown
    (the message names them too: ``kb.toml:3: …``, ``kb.toml:3:14: …``)."""

    def __init__(self, message: str, line: int = 0, col: int = 0) -> None:
        super().__init__(message)
        self.line = line
        self.col = col

    def named(self, name: str) -> "ConfigError":
        """This error with the file its message names (``kb.toml…``) called ``name``
        (``sub/kb.toml``: another KB of the repository, or the file as seen from the
        current folder); another message gets ``name:`` in front."""
        msg = str(self)
        msg = name + msg[len("kb.toml"):] if msg.startswith("kb.toml") else f"{name}: {msg}"
        return ConfigError(msg, self.line, self.col)


class InternalError(KbError):
    """A bug: something kb's own invariants say cannot happen (exit 3)."""

    kind = "internal"
    exit_code = 3


class RefusedError(KbError):
    """An operation was refused; nothing was written (exit 1)."""

    kind = "refused"
    exit_code = 1


class NotFoundError(RefusedError):
    """The named ID, file or lock does not exist (exit 1, kind ``not_found``)."""

    kind = "not_found"


class ConflictError(RefusedError):
    """The target exists already, has uncommitted changes, or HEAD moved (exit 1)."""

    kind = "conflict"


class LockedError(RefusedError):
    """Another owner holds a lock on the target (exit 1, kind ``locked``)."""

    kind = "locked"


class StaleError(RefusedError):
    """``--expect`` named a blob the file no longer has (exit 1, kind ``stale``)."""

    kind = "stale"


class SpecialFileError(OSError):
    """A FIFO, socket or device where kb reads or writes a file (:func:`kb.repo.read_regular`):
    an OSError, so that code reading a file handles it as it handles an unreadable one,
    never waiting on it (reading a FIFO waits for a writer forever). :func:`os_failure`
    makes it a refusal."""


def refused_resource(exc: BaseException) -> "EnvironmentError_ | None":
    """The environment error for ``exc`` when it is the system refusing a new process
    or thread (``fork``/``exec`` failing with EAGAIN or ENOMEM under a process limit,
    ``can't start new thread``): not a bug of kb, and nothing was changed. None for
    any other exception."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.EAGAIN, errno.ENOMEM):
        why = exc.strerror or str(exc)
    elif isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        why = str(exc)
    else:
        return None
    return EnvironmentError_(
        f"the system refused a new process or thread ({why}): too many processes for this "
        "user, or too little memory; run the command again, or raise the limit (ulimit -u)")


def error_kind(exc: BaseException) -> tuple[str, int]:
    """``(kind, exit_code)`` of any exception: a :class:`KbError`'s own (a refused new
    process or thread: :func:`refused_resource`), else ``internal`` 3."""
    exc = refused_resource(exc) or exc
    if isinstance(exc, KbError):
        return exc.kind, exc.exit_code
    return "internal", 3


def error_object(exc: BaseException) -> dict[str, dict[str, object]]:
    """The JSON error object ``{"error": {"message", "exit_code", "kind"}}`` of ``exc``."""
    exc = refused_resource(exc) or exc
    kind, code = error_kind(exc)
    msg = str(exc) if isinstance(exc, KbError) else f"internal error: {type(exc).__name__}: {exc}"
    return {"error": {"message": msg, "exit_code": code, "kind": kind}}


def os_failure(exc: OSError, doing: str, then: str = "") -> KbError:
    """A kb error for the :class:`OSError` ``exc`` raised while ``doing`` (e.g. ``"write
    tree.md"``), to raise in place of it (``raise os_failure(exc, ...) from None``).

    The message names the file, git's-style reason and what to do; ``then`` is added
    at the end (e.g. ``"nothing was written"``). A missing file is ``not_found`` (1);
    a directory where a file belongs, or a file where a folder belongs, is ``refused``
    (1); everything else (permissions, a full disk, a read-only file system) is
    ``environment`` (2), since the request itself is sound.
    """
    import errno
    import os

    reason = exc.strerror or str(exc)
    name = str(exc.filename) if exc.filename else ""
    if any(mark in os.path.basename(name) for mark in (".tmp", "kb-tmp")):
        name = f"in the folder {os.path.dirname(name) or '.'}"  # a temporary file: its folder refused
    where = f" ({name})" if name and name not in doing else ""
    tail = f" — {then}" if then else ""
    if isinstance(exc, FileNotFoundError):
        return NotFoundError(f"cannot {doing}: {reason}{where}{tail}")
    if isinstance(exc, (IsADirectoryError, NotADirectoryError, SpecialFileError)):
        return RefusedError(f"cannot {doing}: {reason}{where}; move it out of the way{tail}")
    if isinstance(exc, PermissionError) or exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        fix = "give your user read and write permission on it (or run kb as its owner)"
    elif exc.errno in (errno.ENOSPC, errno.EDQUOT):
        fix = "free some disk space"
    else:
        fix = "check the file system"
    return EnvironmentError_(f"cannot {doing}: {reason}{where}; {fix}, then run the command again{tail}")


__all__ = ["ERROR_KINDS", "KbError", "UsageError", "EnvironmentError_", "NotAKnowledgeBase",
           "GitError", "ConfigError", "InternalError", "RefusedError", "NotFoundError",
           "ConflictError", "LockedError", "StaleError", "error_kind", "error_object", "os_failure",
           "refused_resource"]
