"""The operation log: one immutable file per recording under ``.explore-tree/ops/``.

Why this layout (issue 15, DESIGN.md §9): two branches that both record must
merge with a plain ``git merge`` and no driver. A shared append-only journal
conflicts on every such merge (both sides append at the same place); files
that are only ever *added*, each under a name no other writer can pick,
never do. So every recording kb makes is one new file::

    .explore-tree/ops/2026-12/20261201T072213Z-3f9a1c0e5b2d.jsonl

named by its batch id (UTC time of the recording + 48 random bits) and holding
one JSON object per line, one per operation::

    {"v": 1, "id": "20261201T072213Z-3f9a1c0e5b2d-0000", "lc": 17,
     "at": "2026-12-01T07:22:13Z", "actor": "alice", "op": "add", "node": {...}}

An operation's ``id`` is its batch id plus its position; ``lc`` a logical
clock (one more than the largest in the log its writer replayed). Sorting by
``(lc, id)`` is the replay order: causal on each branch, the same on every
machine whatever order the files were listed or merged in. A file is
written once and never changed; an operation id seen twice counts once.

Reading never raises for bad content: a line that is not a JSON object with
``v``, ``id`` and ``op`` (a torn write, a hand edit, a conflict marker) is a
:class:`kb.trail.model.LogProblem` naming the file and line, and is skipped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from kb import json_input
from kb.trail.model import SCHEMA_VERSION, LogProblem

#: The log folder, relative to the KB root.
LOG_DIR = ".explore-tree"
OPS_DIR = LOG_DIR + "/ops"


def new_batch_id(at: str) -> str:
    """A collision-free batch id for a recording at ISO time ``at``: ``YYYYMMDDTHHMMSSZ-<12 hex>``."""
    import secrets  # here: only a recording needs it (every view imports this module)

    stamp = at.replace("-", "").replace(":", "")
    return f"{stamp}-{secrets.token_hex(6)}"


def batch_rel(batch: str) -> str:
    """KB-relative path of the log file for ``batch`` (a folder per month)."""
    return f"{OPS_DIR}/{batch[:4]}-{batch[4:6]}/{batch}.jsonl"


def encode_batch(batch: str, at: str, actor: str, ops: list[dict[str, Any]], lc: int = 0) -> bytes:
    """The bytes of a log file: each op stamped with ``v``, ``id``, ``at``, ``actor`` and
    the recording's logical clock ``lc`` (see :func:`kb.trail.replay.sort_key`).

    Keys are sorted and non-ASCII written as itself, so a recording's file
    reads well in a pull request's diff.
    """
    lines = []
    for i, op in enumerate(ops):
        rec = {"v": SCHEMA_VERSION, "id": f"{batch}-{i:04d}", "lc": lc, "at": at, "actor": actor}
        rec.update(op)
        lines.append(json.dumps(rec, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
    return ("\n".join(lines) + "\n").encode("utf-8")


@dataclass(frozen=True)
class LogFile:
    """One log file on disk: KB-relative ``rel``, its size and mtime (ns) for the cache key."""

    rel: str
    size: int
    mtime: int


def symlinked(root: Path) -> str | None:
    """``.explore-tree`` or ``.explore-tree/ops`` when it is a symbolic link (kb neither reads
    nor writes through one: it could lead out of the work tree), else None."""
    for rel in (LOG_DIR, OPS_DIR):
        if (root / rel).is_symlink():
            return rel
    return None


def list_files(root: Path) -> list[LogFile]:
    """Every ``*.jsonl`` under ``<root>/.explore-tree/ops`` (one folder level), sorted by path;
    none when the folder is a symbolic link (see :func:`symlinked`)."""
    base = root / OPS_DIR
    out: list[LogFile] = []
    if symlinked(root):
        return out
    try:
        months = list(os.scandir(base))
    except (FileNotFoundError, NotADirectoryError):
        return out
    for month in months:
        if not month.is_dir(follow_symlinks=False):
            continue
        with os.scandir(month.path) as it:
            for e in it:
                if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    out.append(LogFile(f"{OPS_DIR}/{month.name}/{e.name}", st.st_size,
                                       st.st_mtime_ns))
    out.sort(key=lambda f: f.rel)
    return out


def _read(path: str | Path) -> bytes:
    """The bytes of ``path`` through one file descriptor (no pathlib/io layers: a cold
    replay reads thousands of small files)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        chunks = []
        while True:  # bounded: each read returns at least one byte until the end
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _stamp(ops: list[Any], datas: list[tuple[str, bytes]], lines: list[int]) -> bool:
    """Give each parsed operation its ``_src`` (file, line) while checking it is well
    formed (one pass, the check inlined); False at the first one that is not."""
    i = 0
    v = SCHEMA_VERSION
    for (rel, _data), n in zip(datas, lines):
        for j in range(1, n + 1):
            op = ops[i]
            if not (type(op) is dict and type(op.get("id")) is str and type(op.get("op")) is str
                    and type(op.get("v")) is int and op["v"] <= v
                    and type(op.get("at", "")) is str and type(op.get("actor", "")) is str):
                return False
            op["_src"] = (rel, j)
            i += 1
    return True


def read_files(root: Path, rels: list[str], problems: list[LogProblem]) -> list[dict[str, Any]]:
    """The well-formed operations of the log files ``rels`` (KB-relative), in file order;
    bad lines and unreadable files go to ``problems`` (see :func:`parse_files`)."""
    datas: list[tuple[str, bytes]] = []
    base = str(root)
    for rel in rels:
        try:
            datas.append((rel, _read(os.path.join(base, rel))))
        except OSError as exc:
            problems.append(LogProblem(rel, 0, f"cannot read the log file: {exc.strerror or exc}"))
    return parse_files(datas, problems)


def parse_files(datas: list[tuple[str, bytes]], problems: list[LogProblem]) -> list[dict[str, Any]]:
    """The well-formed operations of log files given as ``(KB-relative path, bytes)``, in
    order; bad lines go to ``problems``.

    Fast path: when every file is clean JSON lines, the whole log is parsed by one
    ``json.loads`` call over one array built from the bytes (not one call per file
    or line) and checked with plain type tests; anything else reads file by file
    (:func:`read_bytes`), which names the bad line.
    """
    lines: list[int] = []
    buf = bytearray(b"[")  # the log as one JSON array
    for _rel, data in datas:
        if data[-1:] != b"\n" or data[:1] == b"\n" or b"\n\n" in data:
            break  # empty, torn or with blank lines: read file by file
        lines.append(data.count(b"\n"))
        buf += data.replace(b"\n", b",")
    else:
        if datas:
            buf[-1:] = b"]"  # the last line's comma
            try:
                ops = json_input.loads(buf)
            except (ValueError, UnicodeDecodeError):
                ops = None
            del buf
            if ops is not None and len(ops) == sum(lines) and _stamp(ops, datas, lines):
                return ops
    out: list[dict[str, Any]] = []
    for rel, data in datas:
        out.extend(read_bytes(rel, data, problems))
    return out


def read_bytes(rel: str, data: bytes, problems: list[LogProblem]) -> Iterator[dict[str, Any]]:
    """The well-formed operations in the bytes ``data`` of log file ``rel``."""
    body = data.rstrip(b"\n")
    if body and data.endswith(b"\n") and b"\n\n" not in body:
        # Fast path: the whole file as one JSON array (one parser call per file, not per
        # line); any problem falls back to the line-by-line reading that reports it.
        try:
            ops = json_input.loads(b"[" + body.replace(b"\n", b",") + b"]")
        except (ValueError, RecursionError):
            ops = None
        if ops is not None and len(ops) == body.count(b"\n") + 1 and all(
                type(op) is dict and type(op.get("id")) is str and type(op.get("op")) is str
                and type(op.get("v")) is int and op["v"] <= SCHEMA_VERSION
                and type(op.get("at", "")) is str and type(op.get("actor", "")) is str
                for op in ops):
            for i, op in enumerate(ops):
                op["_src"] = (rel, i + 1)
            yield from ops
            return
    lines = data.split(b"\n")
    last = len(lines) - 1
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            op = json_input.loads(raw)
        except UnicodeDecodeError:
            problems.append(LogProblem(rel, i + 1, "corrupt entry: not UTF-8; skipped"))
            continue
        except json.JSONDecodeError as exc:
            what = ("torn entry (the line ends without a newline and is not JSON)"
                    if i == last else f"corrupt entry: not JSON ({exc.msg})")
            problems.append(LogProblem(rel, i + 1, what + "; skipped"))
            continue
        except (ValueError, RecursionError):  # a number too long for int(), nesting too deep
            problems.append(LogProblem(rel, i + 1, "corrupt entry: a number or a nesting kb "
                                                   "cannot read; skipped"))
            continue
        if (not isinstance(op, dict) or not isinstance(op.get("id"), str)
                or not isinstance(op.get("op"), str) or not isinstance(op.get("v"), int)):
            problems.append(LogProblem(rel, i + 1, "corrupt entry: not an operation "
                                                   "(needs v, id and op); skipped"))
            continue
        if op["v"] > SCHEMA_VERSION:
            problems.append(LogProblem(rel, i + 1, f"operation schema v{op['v']} is newer than "
                                                   f"this kb reads (v{SCHEMA_VERSION}); skipped"))
            continue
        if not isinstance(op.get("at", ""), str) or not isinstance(op.get("actor", ""), str):
            # (`"at": 5` ended every trail view with exit 3 where the time is shown)
            problems.append(LogProblem(rel, i + 1, "corrupt entry: its 'at' and 'actor' are "
                                                   "text; skipped"))
            continue
        op["_src"] = (rel, i + 1)
        yield op
