"""Judging a change: its snapshot findings and its history findings.

:func:`check_snapshots` marks the errors a change introduces as blocking
(the others as pre-existing); :func:`history_findings` runs the history
rules; :func:`judged_by_all_parents` keeps, of a merge's findings, those it
earns against every parent.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from kb.checks.changes import diff_commits
from kb.checks.report import Finding, findings
from kb.checks.results import history_diagnostics, snapshot_diagnostics, split_introduced


def check_snapshots(k: Any, new_f: Any, base_f: Optional[Any], strict: bool,
                    earlier: Optional[Any] = None,
                    file_scope: Optional[set[str]] = None,
                    raw: Optional[list] = None) -> list[Finding]:
    """Snapshot findings of ``new_f``; with ``strict``, only errors absent from
    ``base_f`` block (the others are marked pre-existing). ``file_scope`` limits
    the per-file rules (both sides) to those paths; ``raw`` gives ``new_f``'s results
    computed already (see :func:`snapshot_diagnostics`)."""
    diags = snapshot_diagnostics(new_f, base_f, earlier, file_scope=file_scope, raw=raw)
    if not strict:
        return findings(diags, k, "snapshot", all_errors_block=True)
    errors = [d for d in diags if d.severity == "error"]
    if not errors:
        return findings(diags, k, "snapshot")
    base = snapshot_diagnostics(base_f, file_scope=file_scope) if base_f is not None else []
    introduced, pre = split_introduced(diags, base)
    return findings(diags, k, "snapshot", blocking={id(d) for d in introduced},
                    pre={id(d) for d in pre})


def history_findings(change: Any, k: Any, commit: Optional[str]) -> list[Finding]:
    """Findings of the history rules on ``change`` (a :class:`kb.checks.changes.Change`
    of KB ``k``; ``commit`` the new commit or None); every error blocks."""
    return findings(history_diagnostics(change), k, "history", commit=commit,
                    all_errors_block=True)


_ID_TOKEN = re.compile(r"[A-Za-z][\w.-]*\d[\w.-]*")


def _finding_key(f: Finding) -> tuple[str, str, str]:
    """What a history finding is about: code, path and the first ID-like word of
    its message (messages name their base snapshot, which differs per parent)."""
    m = _ID_TOKEN.search(f.message)
    return f.code, f.path, m.group(0) if m else ""


def judged_by_all_parents(found: list[Finding], idx: Any, k: Any, commit: Optional[str],
                          others: list[str], new: Any, mode: str, overrides: dict[str, str],
                          origin_f: Any, diff: Any = None, removed_before: Any = None,
                          codes: Optional[set[str]] = None) -> list[Finding]:
    """Keep the findings of a merge commit (judged against its first parent)
    that it also earns against every other parent: what a merge takes over
    from one of its parents is that parent's change, checked on its own path
    (issue: team work — a renumbered branch merged with its target passes)."""
    from kb.checks.changes import Change
    from kb.checks.facts import Facts
    from kb.repo import commit_snapshot

    keep = {_finding_key(f) for f in found}
    new_f = None
    for p in others:
        changes = diff(p) if diff is not None else diff_commits(k, p, commit)
        if not changes:
            return []
        touched = [ch.path for ch in changes]
        if new_f is None:
            new_f = Facts(idx, new, commit[:10] if commit else "the staged index", ensure=touched)
        old_f = Facts(idx, commit_snapshot(k, p), p[:10], ensure=touched)
        change = Change(old_f, new_f, mode, changes, overrides, commit=commit, origin=origin_f,
                        removed_before=removed_before)
        keep &= {_finding_key(f) for f in history_findings(change, k, commit)}
    return [f for f in found if _finding_key(f) in keep or f.severity == "info"
            or (codes is not None and f.code not in codes)]
