"""``kb sync``'s reading of what ``git merge`` printed: kb's merge-driver notes, git's
``CONFLICT (…)`` lines, whether a hook refused the merge commit, and the hook's reasons.

These readers match git's English words; :mod:`kb.ops.sync` runs the merge with git's
messages in English (``kb.git.run(..., in_english=True)``), so a translated git
(``LANGUAGE=de``) is read the same.
"""

from __future__ import annotations

import re

#: What git says when it stopped on conflicts (rerere may have resolved every path since).
MERGE_FAILED = "Automatic merge failed"
#: git's own lines around a refused merge commit and kb's merge-driver notes: not the hook's reasons.
_GIT_BOILERPLATE = ("Auto-merging ", "Removing ", "Not committing merge", "hint: ",
                    "Automatic merge went well", "kb merge: ")
#: kb verify's text diagnostic, ``path:line:col: KB123 [severity] message``.
_DIAGNOSTIC = re.compile(r"^\S.*:\d+:\d+: KB\d+ \[(\w+)\] ")
#: kb verify --staged's closing advice: the merge is aborted, there is nothing to commit again.
_COMMIT_AGAIN = "kb: fix the errors above and commit again"


def driver_notes(text: str) -> list[str]:
    """kb's merge-driver lines (``kb merge: …``) in ``git merge``'s output, in order, once each."""
    return list(dict.fromkeys(ln.strip() for ln in text.splitlines()
                              if ln.strip().startswith("kb merge:")))


def git_conflict_lines(text: str) -> list[str]:
    """git's ``CONFLICT (…): …`` lines in ``git merge``'s output, stripped, in order, once each."""
    return list(dict.fromkeys(ln.strip() for ln in text.splitlines()
                              if ln.strip().startswith("CONFLICT (")))


def names(line: str, path: str) -> bool:
    """Whether ``line`` names ``path`` as a whole path (``Cards/q2.md``, not ``q2.md`` in it)."""
    return re.search(r"(?<![\w/.-])" + re.escape(path) + r"(?!\.?[\w/-])", line) is not None


def hook_refused(text: str, unmerged: list[str], merge_head: bool) -> bool:
    """Whether a failed ``git merge`` (its output ``text``) got as far as the merge commit
    and a hook refused it (kb's pre-merge-commit: ``kb verify --staged``): no ``unmerged``
    path, MERGE_HEAD written (``merge_head``), and git not saying the automatic merge
    failed (conflicts rerere resolved leave no unmerged path either)."""
    return not unmerged and merge_head and MERGE_FAILED not in text


def conflict_lines(text: str, unmerged: list[str]) -> list[str]:
    """What to report of a merge stopped on conflicts: kb's drivers' lines, git's own
    ``CONFLICT (…)`` lines (a file added inside a directory the other side renamed, a
    rename against a delete) unless a driver already spoke of their paths, and a bare
    ``<path>: conflict`` only for an ``unmerged`` path no line names; git's whole output
    when it named nothing."""
    out = driver_notes(text)
    said = list(out)
    out += [c for c in git_conflict_lines(text)
            if not any(names(c, f) and any(names(d, f) for d in said) for f in unmerged)]
    out += [f"{f}: conflict" for f in unmerged if not any(names(c, f) for c in out)]
    return out or [text.strip() or "git merge failed"]


def refusal_lines(text: str) -> list[str]:
    """What a hook printed refusing a merge commit, from ``git merge``'s output: git's
    boilerplate and kb's merge-driver notes dropped, and of kb's diagnostics only those
    that refuse (errors not pre-existing: warnings do not stop a commit)."""
    out: list[str] = []
    for raw in text.splitlines():
        ln = raw.strip()
        if not ln or ln.startswith(_GIT_BOILERPLATE) or ln.startswith(_COMMIT_AGAIN):
            continue
        m = _DIAGNOSTIC.match(ln)
        if m and (m.group(1) != "error" or ln.endswith("(pre-existing)")):
            continue
        out.append(ln)
    return out or ["a git hook refused the merge commit and printed nothing"]


__all__ = ["MERGE_FAILED", "conflict_lines", "driver_notes", "git_conflict_lines", "hook_refused",
           "names", "refusal_lines"]
