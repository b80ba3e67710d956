"""Unresolved merge conflicts and in-progress git operations (issue: team work).

A KB file holding git's conflict markers is reported as *one* diagnostic per
conflicted region (KB190, "unresolved merge conflict, lines 34–48") instead of
the duplicate anchors its two sides would otherwise produce, and no object is
read from it (guessing a side would let ``kb verify --fix`` edit the wrong
one). While a merge, rebase, cherry-pick or revert is in progress, or a KB
file holds markers, every kb write refuses (:func:`refuse_if_conflicted`,
called by the write transaction and by ``kb verify --fix``).
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Optional, Sequence

from kb import git
from kb.errors import ConflictError
from kb.fileio import read_regular

#: git's markers at the default ``conflict-marker-size`` (7), then a space or the end.
_START = re.compile(r"^<{7}(?: |$)")
_BASE = re.compile(r"^\|{7}(?: |$)")
_MID = re.compile(r"^={7}$")
_END = re.compile(r"^>{7}(?: |$)")
#: Cheap pre-check on the whole text: both outer markers at a line start.
_ANY = re.compile(r"^<{7}(?: |\r?$)", re.MULTILINE)

#: in-progress state files under the git dir -> (operation, how to finish or abort).
IN_PROGRESS = (
    ("MERGE_HEAD", "a merge", "resolve the conflicts, `git add` the files and `git commit`, "
                              "or `git merge --abort`"),
    ("rebase-merge", "a rebase", "`git rebase --continue` or `git rebase --abort`"),
    ("rebase-apply", "a rebase (or git am)", "`git rebase --continue` or `git rebase --abort`"),
    ("CHERRY_PICK_HEAD", "a cherry-pick", "`git cherry-pick --continue` or `git cherry-pick --abort`"),
    ("REVERT_HEAD", "a revert", "`git revert --continue` or `git revert --abort`"),
)


def conflict_regions(lines: Sequence[str], masked: Optional[Sequence[bool]] = None) -> list[tuple[int, int]]:
    """1-based ``(first, last)`` line ranges of the conflict regions in ``lines``.

    A region opens at ``<<<<<<<`` and closes at the next ``>>>>>>>`` after a
    ``=======``; an unclosed region runs to the last line. ``masked`` (lines
    inside fenced code, e.g. a note that quotes a conflict) are never an
    opening marker. Lines are without their endings.
    """
    out: list[tuple[int, int]] = []
    start: Optional[int] = None
    mid = False
    for i, ln in enumerate(lines):
        if start is None:
            if _START.match(ln) and not (masked and masked[i]):
                start, mid = i, False
            continue
        if _MID.match(ln):
            mid = True
        elif mid and _END.match(ln):
            out.append((start + 1, i + 1))
            start = None
    if start is not None:
        out.append((start + 1, len(lines)))
    return out


def may_have_conflict(text: str) -> bool:
    """Fast pre-check: could ``text`` hold a conflict region at all?"""
    return "<<<<<<<" in text and _ANY.search(text) is not None


def describe(first: int, last: int) -> str:
    """The diagnostic text of one region."""
    return (f"unresolved merge conflict, lines {first}–{last}: choose the lines to keep and delete "
            "the <<<<<<< ======= >>>>>>> markers (kb reads nothing else from this file until then)")


def operation_in_progress(top: Path) -> Optional[tuple[str, str, str]]:
    """``(state file, operation, how to finish)`` of a git operation in progress, or None."""
    gd = git.git_dir(top)
    for name, what, how in IN_PROGRESS:
        if (gd / name).exists():
            return name, what, how
    return None


def unmerged_paths(top: Path, prefix: str = "") -> list[str]:
    """Repository paths with unmerged index entries (stages 1–3) under ``prefix``."""
    args = ["ls-files", "-u", "-z"]
    if prefix:
        args += ["--", prefix]
    data = git.run(args, top).stdout
    return sorted({e.split("\t", 1)[1] for e in git.split_z(data) if "\t" in e})


def _grep(top: Path, args: list[str]) -> list[str]:
    proc = git.run(["grep", "-l", "-z", "-I", "-F", "-e", "<<<<<<<", *args], top, check=False)
    return list(git.split_z(proc.stdout)) if proc.returncode == 0 else []


def cache_path(top: Path, prefix: str = "") -> Path:
    """Where the last HEAD found free of markers is remembered: a small file in
    the git dir, beside the write transaction's journal (one per KB folder)."""
    import hashlib

    tail = "" if not prefix else "-" + hashlib.sha1(prefix.encode("utf-8")).hexdigest()[:12]
    return git.git_dir(top) / f"kb-markers-clean{tail}"


def _committed_candidates(top: Path, prefix: str, head: str, cache: Optional[Path]) -> list[str]:
    """Files of commit ``head`` under ``prefix`` that may hold markers.

    A HEAD found clean is remembered in ``cache`` (:func:`cache_path`); the next check greps only the files that changed since — kb's own
    commits change one or two — so the cost follows the change, not the size
    of the KB, and no extra process resolves HEAD.
    """
    spec = [f"{prefix}*.md" if prefix else "*.md"]
    clean = None
    if cache is not None:
        try:
            clean = cache.read_text(encoding="utf-8").strip() or None
        except (OSError, ValueError):  # unreadable or not text: grep everything, as without it
            clean = None
    if clean == head:
        return []
    found: list[str] = []
    if clean:
        proc = git.run(["diff-tree", "-r", "-z", "--name-only", "--diff-filter=AM", clean, head,
                        "--", *spec], top, check=False)
        if proc.returncode == 0:
            changed = list(git.split_z(proc.stdout))
            found = _grep(top, [head, "--", *changed]) if changed else []
        else:
            clean = None
    if not clean:
        found = _grep(top, [head, "--", *spec])
    found = [f.split(":", 1)[1] if ":" in f else f for f in found]
    if not found and cache is not None:
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}")
        try:  # atomic: concurrent kb processes may write it at once
            tmp.write_text(head + "\n", encoding="utf-8")
            os.replace(tmp, cache)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
    return found


def note_own_commit(cache: Path, parent: str, commit: str, written: list[bytes]) -> None:
    """After kb committed ``written`` (the new bytes of every file it changed) on
    ``parent`` without hooks: when ``parent`` is the HEAD remembered free of markers
    (:func:`cache_path`) and no written file holds ``<<<<<<<``, ``commit`` is free of
    them too — remember it, so the next write greps nothing (two git processes fewer)."""
    try:
        if cache.read_text(encoding="utf-8").strip() != parent:
            return
    except (OSError, ValueError):
        return
    if any(b"<<<<<<<" in data for data in written):
        return
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}")
    try:
        tmp.write_text(commit + "\n", encoding="utf-8")
        os.replace(tmp, cache)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def marked_files(top: Path, prefix: str = "", head: Optional[str] = None,
                 cache: Optional[Path] = None, worktree: Optional[list[str]] = None) -> list[str]:
    """Tracked ``.md`` files under ``prefix`` whose working-tree text holds a
    conflict region: the files that differ from ``head`` (a commit id; None:
    resolved here) plus ``head``'s own files (incrementally, see
    :func:`_committed_candidates`), confirmed by :func:`conflict_regions`.

    ``worktree``: the paths whose working-tree file differs from the index, just
    listed by the caller (``git diff-files``); then only the index is compared with
    ``head`` (``diff-index --cached``), not every file on disk a second time."""
    from kb.text import compute_mask

    spec = f"{prefix}*.md" if prefix else "*.md"
    if head is None:
        head = git.rev_parse("HEAD", top)
    if head is None:
        candidates = set(_grep(top, ["--", spec]))
    else:
        candidates = set(_committed_candidates(top, prefix, head, cache))
        cached = ["--cached"] if worktree is not None else []
        candidates |= set(git.split_z(git.run(["diff-index", *cached, "-z", "--name-only", head,
                                               "--", spec], top, check=False).stdout))
        candidates |= {p for p in worktree or () if p.startswith(prefix) and p.endswith(".md")}
    out = []
    for rel in sorted(candidates):
        try:
            text = read_regular(top / rel).decode("utf-8", errors="replace")
        except OSError:
            continue
        if not may_have_conflict(text):
            continue
        lines = [ln.rstrip("\r") for ln in text.split("\n")]
        if conflict_regions(lines, compute_mask(lines)):
            out.append(rel)
    return out


def refuse_in_progress(top: Path, action: str = "kb writes") -> None:
    """Raise :class:`ConflictError` (exit 1, kind ``conflict``) while a merge,
    rebase, cherry-pick or revert is in progress; the message says how to get out.
    Reads only the git dir (no process)."""
    state = operation_in_progress(top)
    if state is not None:
        name, what, how = state
        raise ConflictError(f"{what} is in progress ({name} exists): {action} nothing until it is "
                            f"finished — {how}; then run the command again (nothing was written)")


def refuse_marked(top: Path, prefix: str = "", action: str = "kb writes",
                  head: Optional[str] = None, cache: Optional[Path] = None,
                  worktree: Optional[list[str]] = None) -> None:
    """Raise :class:`ConflictError` while a tracked KB file holds conflict markers
    (``worktree``: see :func:`marked_files`)."""
    marked = marked_files(top, prefix, head, cache, worktree)
    if marked:
        raise ConflictError(f"unresolved merge-conflict markers in {', '.join(marked)}: resolve them "
                            f"(kb verify shows the lines; a generated DASHBOARD.md or TRAIL.md can be "
                            f"taken from either side and regenerated by `kb dashboard` or `kb trail "
                            f"render` afterwards) first; {action} "
                            "nothing meanwhile (nothing was written)")


def refuse_if_conflicted(top: Path, prefix: str = "", action: str = "kb writes",
                         cache: Optional[Path] = None) -> None:
    """:func:`refuse_in_progress`, then :func:`refuse_marked` (exit 1, kind ``conflict``)."""
    refuse_in_progress(top, action)
    refuse_marked(top, prefix, action, None, cache)
