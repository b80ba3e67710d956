"""Reading a file of the work tree without ever waiting on it (the lowest layer: the
conflict-marker scan, the snapshots and the write path all read through it).

A FIFO (named pipe) where kb expects a file -- ``mkfifo Problems/q1.md``, a socket, a
device -- made ``Path.read_bytes`` wait for a writer forever: kb verify, kb ls and every
write command hung, and the MCP server with them. :func:`read_regular` opens without
waiting (``O_NONBLOCK``, which a regular file ignores) and refuses anything but a
regular file with :class:`kb.errors.SpecialFileError`, an OSError, so that every caller
handles it as it handles an unreadable file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from kb.errors import SpecialFileError

#: Flags of every read: a FIFO opens at once (and is refused) instead of waiting.
READ_FLAGS = (os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
              | getattr(os, "O_NONBLOCK", 0))


def read_regular(path: Path | str) -> bytes:
    """The bytes of the regular file ``path`` (a symlink followed: callers that must not
    follow one check it first). Raises FileNotFoundError when it is absent,
    IsADirectoryError for a folder, :class:`kb.errors.SpecialFileError` for a FIFO, a
    socket or a device, and OSError for the rest (no permission)."""
    fd = os.open(path, READ_FLAGS)
    try:
        return read_fd(fd, path)
    finally:
        os.close(fd)


def read_fd(fd: int, path: Path | str = "") -> bytes:
    """Every byte of the open file ``fd``: its size from ``fstat``, then one ``read``
    (more while it grows), not the four more system calls of ``open(fd).read()``.
    Raises IsADirectoryError for a folder and :class:`kb.errors.SpecialFileError` for a
    FIFO, a socket or a device (``path`` names it in the error)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        what = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else
                "a socket" if stat.S_ISSOCK(st.st_mode) else "a device")
        raise SpecialFileError(errno.EINVAL, f"it is {what}, not a regular file", str(path))
    size = st.st_size
    data = os.read(fd, size + 1)
    if len(data) == size:
        return data  # the usual case: the whole file, and its end
    chunks = [data]  # it grew or shrank meanwhile (or a short read): read to the end
    while True:
        more = os.read(fd, 1 << 20)
        if not more:
            return b"".join(chunks)
        chunks.append(more)


def special_file(path: Path | str) -> bool:
    """Whether ``path`` is there and is a FIFO, a socket or a device: neither a regular
    file, a folder nor a symlink (git hash-object would wait on a FIFO too)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


__all__ = ["READ_FLAGS", "read_fd", "read_regular", "special_file"]
