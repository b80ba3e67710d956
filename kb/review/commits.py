"""Commits and kb's trailers (``Kb-Op``, ``Kb-Id``, ``Kb-Override``, ``Kb-Renumber``).

kb's write operations end every commit message with trailers (DESIGN.md §3):
``Kb-Op: hyp.add``, ``Kb-Id: H3``, ``Kb-Override: H1 <reason>``, and a
renumbering commit ``Kb-Renumber: H7 -> H9`` (DESIGN.md §9). A commit made by
hand has none; it is still listed, with ``op`` None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from kb import git

_RENUMBER = re.compile(r"^\s*(\S+)\s*(?:->|→)\s*(\S+)\s*$")
_SEP, _END = "\x1f", "\x1e"
_FORMAT = f"%H{_SEP}%P{_SEP}%an{_SEP}%ae{_SEP}%aI{_SEP}%s{_SEP}%(trailers:only,unfold){_END}"


@dataclass
class CommitInfo:
    """One commit and the kb trailers of its message.

    ``time`` is the author date in strict ISO 8601; ``overrides`` maps an ID to
    the reason its ``Kb-Override:`` gives; ``renumbers`` lists ``(old, new)``.
    """

    commit: str
    parents: list[str]
    author: str
    email: str
    time: str
    subject: str
    op: Optional[str] = None
    ids: list[str] = field(default_factory=list)
    overrides: dict[str, str] = field(default_factory=dict)
    renumbers: list[tuple[str, str]] = field(default_factory=list)
    #: Paths (repository-relative) the commit changed against its first parent; filled
    #: only by ``log(..., changes=True)``.
    changed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{commit, parents, author, email, time, subject, op, ids, overrides,
        renumbers: [{from, to}]}``."""
        return {"commit": self.commit, "parents": self.parents, "author": self.author,
                "email": self.email, "time": self.time, "subject": self.subject, "op": self.op,
                "ids": self.ids, "overrides": self.overrides,
                "renumbers": [{"from": a, "to": b} for a, b in self.renumbers]}


def parse_trailers(info: CommitInfo, text: str) -> None:
    """Fill ``info``'s kb fields from ``git log``'s ``%(trailers:only,unfold)`` text."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = key.strip().lower(), value.strip()
        if key == "kb-op" and value:
            info.op = value
        elif key == "kb-id" and value:
            info.ids.extend(v for v in re.split(r"[,\s]+", value) if v)
        elif key == "kb-override" and value:
            first, _, reason = value.partition(" ")
            for oid in first.split(","):
                if oid:
                    info.overrides[oid] = reason.strip()
        elif key == "kb-renumber":
            m = _RENUMBER.match(value)
            if m:
                info.renumbers.append((m.group(1), m.group(2)))


def log(top: Path, args: list[str], paths: Optional[list[str]] = None, *,
        changes: bool = False) -> list[CommitInfo]:
    """``git log <args> [-- paths]`` as CommitInfo records (git's order: newest first).

    ``changes`` also lists each commit's changed paths (against its first parent; a
    root commit against nothing) in the same ``git log`` process.
    Raises :class:`kb.errors.GitError` when git refuses the arguments.
    """
    if not changes:
        cmd = ["log", f"--format={_FORMAT}", *args, "--", *(paths or [])]
        text = git.run(cmd, top).stdout.decode("utf-8", "replace")
        return [i for rec in text.split(_END) if (i := _info(rec.strip("\n"))) is not None]
    cmd = ["log", f"--format={_END}{_FORMAT[:-len(_END)]}", "--raw", "-z", "--no-renames", "--no-abbrev",
           "--root", "--diff-merges=first-parent", *args, "--", *(paths or [])]
    out = []
    for rec in git.run(cmd, top).stdout.split(_END.encode()):
        head, _, raw = rec.partition(b"\0")
        info = _info(head.decode("utf-8", "replace").strip("\n"))
        if info is None:
            continue
        toks = raw.split(b"\0")
        for i in range(len(toks) - 1):
            if toks[i].lstrip(b"\n").startswith(b":"):
                info.changed.append(toks[i + 1].decode("utf-8", "surrogateescape"))
        out.append(info)
    return out


def _info(rec: str) -> Optional[CommitInfo]:
    parts = rec.split(_SEP)
    if len(parts) < 7:
        return None
    sha, parents, name, email, when, subject, trailers = parts[:7]
    info = CommitInfo(commit=sha.strip(), parents=parents.split(), author=name, email=email,
                      time=when, subject=subject)
    parse_trailers(info, trailers)
    return info
