"""``Kb-Override:`` and ``Kb-Renumber:``: the changes a commit declares accepted.

``KB_OVERRIDE`` (the environment), commit trailers, and the trailers of the
commits a merge or a cherry-pick being committed brings in.
Errors: :class:`kb.errors.GitError` when git fails.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Optional

from kb import git


def parse_overrides(text: str) -> dict[str, str]:
    """``ID reason`` lines (``KB_OVERRIDE``, trailer values) -> {ID: reason}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.lower().startswith("kb-override:"):
            line = line.split(":", 1)[1].strip()
        if not line:
            continue
        first, _, reason = line.partition(" ")
        for oid in first.split(","):
            if oid:
                out[oid] = reason.strip()
    return out


def trailers(top: Path, revs: list[str]) -> dict[str, dict[str, str]]:
    """commit -> {ID: reason} of its ``Kb-Override:`` trailers, for ``git log revs``.

    A ``Kb-Renumber: H7 -> H9`` trailer (``kb sync``) accepts the change to the
    old ID the same way (``renumbered to H9``).
    """
    proc = git.run(["log", "--format=%H%x1f%(trailers:key=Kb-Override,valueonly)%x1f"
                    "%(trailers:key=Kb-Renumber,valueonly)%x1e", *revs, "--"], top)
    out = {}
    for rec in proc.stdout.decode("utf-8", "replace").split("\x1e"):
        rec = rec.strip("\n")
        if not rec:
            continue
        sha, _, rest = rec.partition("\x1f")
        vals, _, renumbers = rest.partition("\x1f")
        ov = parse_overrides(vals)
        ov.update(parse_renumbers(renumbers))
        out[sha.strip()] = ov
    return out


def parse_renumbers(text: str) -> dict[str, str]:
    """``H7 -> H9`` lines (``Kb-Renumber`` trailer values) -> {old ID: reason}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        old, sep, new = line.strip().partition("->")
        if sep and old.strip() and new.strip():
            out[old.strip()] = f"renumbered to {new.strip()} (Kb-Renumber)"
    return out


_RENUMBERED = re.compile(r"^renumbered to (\S+) \(Kb-Renumber\)$")


def renumbered_to(reason: str) -> Optional[str]:
    """The new ID when ``reason`` (an :func:`trailers` value) is a ``Kb-Renumber:``
    trailer's, else None."""
    m = _RENUMBERED.match(reason)
    return m.group(1) if m else None


def merge_heads(top: Path, env: Mapping[str, str]) -> list[str]:
    """The commits a merge being committed brings in (see :func:`merge_overrides`);
    ``GITHEAD_<sha>`` (set by ``git merge`` for its strategies and hooks) counts too."""
    gdir = git.git_dir(top)
    heads: list[str] = []
    try:
        heads += (gdir / "MERGE_HEAD").read_text().split()
    except OSError:
        pass
    action = env.get("GIT_REFLOG_ACTION", "")
    if not heads and action.startswith("merge "):
        for name in action.split()[1:]:
            if not name.startswith("-"):
                sha = git.rev_parse(name, top)
                if sha:
                    heads.append(sha)
    elif not heads and action.startswith("pull"):
        try:
            for line in (gdir / "FETCH_HEAD").read_text().splitlines():
                parts = line.split("\t")
                if parts and parts[0] and (len(parts) < 2 or "not-for-merge" not in parts[1]):
                    heads.append(parts[0].strip())
        except OSError:
            pass
    if not heads:
        heads = [k[len("GITHEAD_"):] for k in env if k.startswith("GITHEAD_")
                 and git.rev_parse(k[len("GITHEAD_"):], top)]
    return heads


def merge_overrides(top: Path, env: Mapping[str, str]) -> dict[str, str]:
    """Overrides of the commits that a merge (or cherry-pick) being committed brings in.

    A merge concluded by ``git commit`` has ``MERGE_HEAD``; the
    ``pre-merge-commit`` hook of ``git merge`` / ``git pull`` has none yet, so
    the merged commits come from ``GIT_REFLOG_ACTION`` (``merge <names>``) or
    ``FETCH_HEAD`` (``pull``).
    """
    gdir = git.git_dir(top)
    heads = merge_heads(top, env)
    out: dict[str, str] = {}
    for h in heads:
        for ov in trailers(top, [f"HEAD..{h}"]).values():
            out.update(ov)
    try:
        pick = (gdir / "CHERRY_PICK_HEAD").read_text().split()
    except OSError:
        pick = []
    if pick:
        for ov in trailers(top, ["-1", pick[0]]).values():
            out.update(ov)
    return out
