"""`kb sync`'s merge across a ``[paths]`` move one side made (kb.toml ``tree = "hyp.md"``,
``experiments = "exps"``, with ``git mv``).

git follows a moved file only as far as its rename detection does: a moved tree.md that
both sides then edited is past git's 50 % similarity after two or three ``kb hyp add`` in
a young KB, and git stops on a modify/delete conflict (``tree.md deleted in … and modified
in HEAD``); an experiment the other side added under the old folder is a *file location*
conflict under git's default ``merge.directoryRenames=conflict``. kb knows both sides'
kb.toml, so neither needs a person: :func:`merge_options` lets git carry files added under a
moved folder along with it, and :func:`carry_tree_move` merges the tree itself, by kb's
tree merge, at the place the moving side's kb.toml names. Cost: the kb.toml of the merge
base, HEAD and the upstream read (three blobs), only when a merge is run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from kb import git


def _layouts(k: Any, head: str, target: str, base: str) -> Optional[tuple[Any, Any, Any]]:
    """The ``[paths]`` of the merge base, HEAD and ``target`` (their kb.toml), or None when a
    side has none to read or all three agree (no move: git's defaults stand)."""
    from kb.checks.targets import config_at

    cfgs = [config_at(k, rev) if rev else None for rev in (base, head, target)]
    if any(c is None for c in cfgs):
        return None
    paths = [c.paths for c in cfgs]
    if paths[0] == paths[1] == paths[2]:
        return None
    return paths[0], paths[1], paths[2]


def merge_options(k: Any, head: str, target: str, base: str) -> list[str]:
    """git options for the merge of ``target`` into ``head``: ``-c
    merge.directoryRenames=true`` when a side's kb.toml moved a ``[paths]`` folder (a file
    the other side added under the old folder goes to the new one, where that kb.toml
    reads it), else none."""
    layouts = _layouts(k, head, target, base) if base else None
    return ["-c", "merge.directoryRenames=true"] if layouts is not None else []


def carry_tree_move(k: Any, head: str, target: str, base: str, unmerged: list[str]) -> Optional[str]:
    """Resolve a merge git stopped on the tree alone, when one side's kb.toml moved
    ``[paths] tree`` (its file moved with it) and the other edited the file at the old
    place: kb's tree merge of (the base's, ours, theirs), each read where its own kb.toml
    puts the tree, written at the new place and staged, the old place removed. Returns the
    new place (KB-relative) when resolved, None when this is not that case or kb's merge
    leaves a conflict (the caller aborts as for any conflict)."""
    from kb.merge.tree import Unmergeable, merge_trees

    layouts = _layouts(k, head, target, base) if base else None
    if layouts is None:
        return None
    was, ours, theirs = (p["tree"] for p in layouts)
    if (ours != was) == (theirs != was):
        return None  # neither side or both moved the tree
    new = ours if ours != was else theirs
    if set(unmerged) - {k.prefix + was, k.prefix + new}:
        return None  # other conflicts: a person's to resolve
    specs = [f"{base}:{k.prefix}{was}", f"{head}:{k.prefix}{ours}", f"{target}:{k.prefix}{theirs}"]
    blobs = git.read_blobs(specs, k.top)
    if specs[1] not in blobs or specs[2] not in blobs:
        return None
    try:
        res = merge_trees(blobs.get(specs[0], b""), blobs[specs[1]], blobs[specs[2]], k.config, new)
    except Unmergeable:
        return None
    if res.conflicts:
        return None
    dest = k.root / new
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(res.data)
    git.run(["rm", "-q", "--cached", "--ignore-unmatch", "--", f":(literal){k.prefix}{was}"], k.top, write=True)
    old = k.root / was
    if old.is_file() or old.is_symlink():
        old.unlink()
    git.run(["add", "--", f":(literal){k.prefix}{new}"], k.top, write=True)
    return new


def conclude(top: Path) -> "tuple[bool, str]":
    """Commit the merge in progress with git's prepared message (the hooks run, as for any
    commit); ``(committed, what git and the hooks printed)``."""
    proc = git.run(["commit", "--no-edit"], top, write=True, check=False,
                   env={"GIT_TERMINAL_PROMPT": "0"}, in_english=True)
    return proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace")
