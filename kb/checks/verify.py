"""``kb verify``: run the rules over snapshots (DESIGN.md §4).

Modes:

- ``worktree`` — the KB containing the current directory, working tree vs
  HEAD; everything is reported and every error fails.
- ``staged`` — the pre-commit hook: the staged index (``GIT_INDEX_FILE`` is
  honoured, so ``git commit -a`` and ``git commit <paths>`` are checked as
  committed) vs HEAD (empty history when HEAD is unborn), every KB of the
  repository.
- ``rev`` — one commit vs its first parent.
- ``range`` — every commit of ``A..B``, each vs its first parent, plus the
  final snapshot (CI and pre-push; catches ``--no-verify`` commits and IDs
  allocated twice on parallel branches at their merge).

``git commit --amend``: git does not tell the hook, so the staged index is
compared with HEAD (the commit being replaced); what that commit changed was
checked when it was made, and CI checks the amended commit against its parent.
A merge being committed (``pre-merge-commit``, or ``git commit`` with
``MERGE_HEAD``) accepts the ``Kb-Override:`` trailers of the merged commits.

In ``staged``, ``rev`` and ``range`` a run fails on every history violation
and on the snapshot errors the change introduces; errors already present in
the base are listed as pre-existing without failing. Verify is read-only:
it never writes tracked files, the git index or refs, and never takes git's
index lock (it may update the cache under ``.kb/``).

This module chooses the mode (:func:`resolve_mode`) and runs it (:func:`run`);
each mode has its module: :mod:`kb.checks.verify_worktree`,
:mod:`kb.checks.verify_staged`, :mod:`kb.checks.verify_range` (``rev`` and
``range``). They share :mod:`kb.checks.results` (the rules, results cached in
the index), :mod:`kb.checks.judge`, :mod:`kb.checks.changes`,
:mod:`kb.checks.overrides`, :mod:`kb.checks.targets` and
:mod:`kb.checks.report` (:class:`~kb.checks.report.Finding`,
:class:`~kb.checks.report.Report`).
"""

from __future__ import annotations

import dataclasses

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

from kb.checks.facts import reset_run_cache
from kb.checks.report import Report
from kb.checks.verify_range import verify_commit_range, verify_rev
from kb.checks.verify_staged import verify_staged
from kb.checks.verify_worktree import verify_worktree
from kb.errors import UsageError

MODES = ("worktree", "staged", "rev", "range")


@dataclass(frozen=True)
class Mode:
    """A resolved verify mode: ``kind`` in :data:`MODES` and its arguments."""

    kind: str
    rev: Optional[str] = None
    base: Optional[str] = None
    tip: Optional[str] = None
    source: str = "options"
    against: Optional[str] = None
    #: ``--rewrite``: B replaces A (one branch's old and new tip, as a push hook sees them)
    rewrite: bool = False


def resolve_mode(staged: bool = False, rev: Optional[str] = None, range_: Optional[str] = None,
                 environ: Optional[Mapping[str, str]] = None) -> Mode:
    """The mode from the options, else from the pre-commit framework's variables.

    The framework does not expand variables in ``args``, so kb reads them:
    ``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF`` (pre-push) give a range;
    a pre-push of a whole new history (no refs) checks from the root;
    ``PRE_COMMIT_HOOK_STAGE`` (when set) or ``PRE_COMMIT=1`` otherwise mean
    the staged index.
    """
    for opt, value in (("--rev", rev), ("--range", range_)):
        if value is not None and not value.strip():
            # (an unset CI variable: checking the working tree instead would pass unseen)
            raise UsageError(f"{opt} is empty: it names no commit")
    given = sum(1 for x in (staged, rev, range_) if x)
    if given > 1:
        raise UsageError("use one of --staged, --rev and --range")
    if staged:
        return Mode("staged")
    if rev:
        return Mode("rev", rev=rev)
    if range_:
        if "..." in range_ or ".." not in range_:
            raise UsageError(f"--range takes A..B, not {range_!r}")
        a, _, b = range_.partition("..")
        if not a:
            raise UsageError(f"--range takes A..B, not {range_!r}")
        return Mode("range", base=a, tip=b or "HEAD")
    env = os.environ if environ is None else environ
    stage = env.get("PRE_COMMIT_HOOK_STAGE", "")
    frm, to = env.get("PRE_COMMIT_FROM_REF"), env.get("PRE_COMMIT_TO_REF")
    if frm and to and stage not in ("pre-commit", "commit", "pre-merge-commit"):
        # (pre-push: the remote's old tip of the ref and the new one)
        return Mode("range", base=frm, tip=to, source="pre-commit framework", rewrite=True)
    if stage in ("pre-push", "push") or (env.get("PRE_COMMIT") == "1" and env.get("PRE_COMMIT_REMOTE_NAME")
                                         and env.get("PRE_COMMIT_LOCAL_BRANCH")):
        branch = env.get("PRE_COMMIT_LOCAL_BRANCH") or "HEAD"
        return Mode("range", base=None, tip=branch, source="pre-commit framework")
    if stage or env.get("PRE_COMMIT") == "1":
        return Mode("staged", source="pre-commit framework")
    return Mode("worktree")


def with_target(mode: Mode, against: Optional[str] = None, rewrite: bool = False) -> Mode:
    """``mode`` judging its range as a branch that merges into ``against`` (KB350 for the IDs
    both sides took), or, with ``rewrite``, as a rewrite of its base (a force-push).

    Raises UsageError when either is given to a mode that is not a range, or both."""
    if against is None and not rewrite:
        return mode
    if mode.kind != "range":
        raise UsageError("--against and --rewrite work with --range A..B")
    if against is not None and rewrite:
        raise UsageError("use one of --against (a branch merging into A) and --rewrite "
                         "(B replaces A)")
    if against is not None and not against.strip():
        raise UsageError("--against is empty: it names no branch")
    return dataclasses.replace(mode, against=against, rewrite=rewrite)


def run(mode: Mode, start: Optional[Path] = None, kb_path: Optional[Path] = None,
        environ: Optional[Mapping[str, str]] = None) -> Report:
    """Run ``kb verify`` in ``mode`` from folder ``start`` (default: the current one).

    ``kb_path`` limits the run to one KB; ``environ`` (default ``os.environ``) gives
    ``KB_OVERRIDE`` and git's hook variables. Returns the :class:`Report`. Raises
    :class:`kb.errors.UsageError` for a bad mode or revision,
    :class:`kb.errors.EnvironmentError_` outside a git work tree or when git fails.
    """
    reset_run_cache()
    start = Path(start) if start else Path.cwd()
    if mode.kind == "worktree":
        return verify_worktree(start, kb_path, environ)
    if mode.kind == "staged":
        return verify_staged(start, kb_path, environ)
    if mode.kind == "rev":
        return verify_rev(start, mode.rev or "HEAD", kb_path)
    if mode.kind == "range":
        report = verify_commit_range(start, mode.base, mode.tip or "HEAD", kb_path,
                                     allow_root=mode.base is None, against=mode.against,
                                     rewrite=mode.rewrite)
        if mode.source == "pre-commit framework":
            # the framework's pre-push stage refuses what kb's own pre-push hook does:
            # a pushed change to a path another owner holds on the lock remote
            from kb.checks.push import push_lock_findings

            env = os.environ if environ is None else environ
            report.findings += push_lock_findings(start, mode.base, mode.tip or "HEAD",
                                                  env.get("KB_OWNER"))
        return report
    raise UsageError(f"unknown verify mode {mode.kind!r}")
