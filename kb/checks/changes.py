"""What changed between two snapshots of a KB, read from git (``git diff-*``).

Changes are :class:`kb.checks.facts.RawChange` values (KB-relative path, old
and new blob ids); :func:`patch_files` applies them to a ``{path: blob}``
map, so a snapshot is derived from a neighbour without listing a tree.
Errors: :class:`kb.errors.GitError` when git fails.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

from kb import git

ZERO = "0" * 40


def raw_changes(data: bytes, kb: Any) -> list[Any]:
    """Parse ``git diff-* --raw -z`` output into RawChanges of ``kb`` (KB-relative)."""
    from kb.checks.facts import RawChange

    parts = data.split(b"\0")
    out = []
    i = 0
    while i < len(parts) - 1:
        meta = parts[i].decode()
        if not meta.startswith(":"):
            i += 1
            continue
        fields = meta[1:].split()
        status = fields[4]
        n = 2 if status[:1] in ("R", "C") else 1
        paths = [parts[i + 1 + j].decode("utf-8", "surrogateescape") for j in range(n)]
        i += 1 + n
        old, new = fields[2], fields[3]
        rel = kb.rel(paths[-1])
        if rel is None:
            continue
        out.append(RawChange(rel, None if old == ZERO or fields[0] == "000000" else old,
                             None if status == "D" or fields[1] == "000000" else (new if new != ZERO else "")))
    return out


def diff_commits(kb: Any, old: Optional[str], new: str) -> list[Any]:
    """Changed paths of ``kb`` between two commits (``old`` None: the empty tree)."""
    spec = ["--", kb.prefix] if kb.prefix else []
    proc = git.run(["diff-tree", "-r", "-z", "--raw", "--no-renames", old or git.EMPTY_TREE, new, *spec],
                   kb.top)
    return raw_changes(proc.stdout, kb)


def diff_many(kb: Any, pairs: list[tuple[str, Optional[str]]]) -> dict[str, list[Any]]:
    """Changed paths of ``kb`` for many (commit, first parent or None) pairs, in one
    ``git diff-tree --stdin`` call: commit -> changes (absent: nothing changed)."""
    if not pairs:
        return {}
    spec = ["--", kb.prefix] if kb.prefix else []
    data = "".join(f"{c} {p}\n" if p else f"{c}\n" for c, p in pairs).encode()
    proc = git.run(["diff-tree", "-r", "-z", "--raw", "--no-renames", "--root", "--stdin", *spec],
                   kb.top, input=data)
    out: dict[str, list[Any]] = {}
    chunks: dict[str, list[bytes]] = {}
    cur: Optional[list[bytes]] = None
    parts = proc.stdout.split(b"\0")
    i = 0
    while i < len(parts):
        tok = parts[i]
        if tok.startswith(b":"):
            if cur is not None:
                status = tok.split()[-1][:1]
                n = 2 if status in (b"R", b"C") else 1
                cur.extend(parts[i:i + 1 + n])
                i += 1 + n
                continue
        elif len(tok.strip()) >= 40 and re.fullmatch(rb"[0-9a-f]{40,64}", tok.strip()):
            cur = chunks.setdefault(tok.strip().decode(), [])
        i += 1
    for c, toks in chunks.items():
        out[c] = raw_changes(b"\0".join(toks) + b"\0", kb)
    return out


def diff_staged(kb: Any, head: Optional[str]) -> list[Any]:
    """Changed paths of ``kb`` between HEAD (or nothing) and the staged index."""
    spec = ["--", kb.prefix] if kb.prefix else []
    proc = git.run(["diff-index", "--cached", "-z", "--raw", "--no-renames",
                    head or git.EMPTY_TREE, *spec], kb.top)
    return raw_changes(proc.stdout, kb)


def worktree_verified(kb: Any, head: Optional[str]) -> list[Any]:
    """Changes under Verified/ between HEAD and the working tree, on blob ids.

    ``git diff-index`` says which files may differ; a file whose stat info
    changed is re-hashed by ``git hash-object`` with git's own filters
    (``core.autocrlf``), so CRLF bytes in the working tree of an untouched
    file are not a modification (case WIN-01).
    """
    from kb.checks.facts import RawChange

    if head is None:
        return []
    folder = kb.config.paths["verified"].strip("/")
    spec = kb.prefix + (folder + "/" if folder not in ("", ".") else "")
    proc = git.run(["diff-index", "-z", "--raw", "--no-renames", head, "--", spec or "."], kb.top)
    changes = raw_changes(proc.stdout, kb)
    dirty = [c for c in changes if c.old and c.new == ""]
    out = [c for c in changes if c.new != ""]
    if dirty:
        paths = "\n".join(kb.prefix + c.path for c in dirty) + "\n"
        hashed = git.run(["hash-object", "--stdin-paths"], kb.top,
                         input=paths.encode("utf-8", "surrogateescape")).stdout.decode().split()
        for c, h in zip(dirty, hashed):
            if h != c.old:
                out.append(RawChange(c.path, c.old, h))
    return out


def patch_files(files: dict[str, str], formats: dict[str, str], changes: Iterable[Any], kb: Any,
           forward: bool) -> tuple[dict[str, str], dict[str, str]]:
    """Apply ``changes`` to a {path: blob} map (``forward``: old -> new, else new -> old)."""
    from kb.parse import classify

    files, formats = dict(files), dict(formats)
    for c in changes:
        want = c.new if forward else c.old
        if not want:
            files.pop(c.path, None)
            formats.pop(c.path, None)
            continue
        fmt = formats.get(c.path) or classify(c.path, kb.config)
        if fmt is None:
            continue
        files[c.path] = want
        formats[c.path] = fmt
    return files, formats
