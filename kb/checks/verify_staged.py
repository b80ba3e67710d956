"""``kb verify --staged``: the pre-commit hook, the staged index vs HEAD.

The staged index (``GIT_INDEX_FILE`` is honoured, so ``git commit -a`` and
``git commit <paths>`` are checked as committed) vs HEAD (empty history when
HEAD is unborn), every KB of the repository. ``git commit --amend``: git
does not tell the hook, so the staged index is compared with HEAD (the
commit being replaced). A merge being committed accepts the
``Kb-Override:`` trailers of the merged commits.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Optional

from kb import git
from kb.checks.changes import diff_commits, diff_staged, raw_changes, retargeted_links, touches_links, undo
from kb.checks.judge import check_snapshots, history_findings, judge_merge
from kb.checks.overrides import merge_heads, merge_overrides, parse_overrides
from kb.checks.report import Report, config_findings, name_findings
from kb.checks.targets import (as_committed, config_at, kb_at, kbs_in_listing, open_index, repo_top,
                               selected_kbs, staged_kbs, unreadable_kb)
from kb.errors import ConfigError


def verify_staged(start: Path, kb_path: Optional[Path] = None,
                  environ: Optional[Mapping[str, str]] = None) -> Report:
    """The pre-commit hook: the staged index vs HEAD, every KB of the repository.

    ``start`` is a folder of the repository, ``kb_path`` limits the check to one
    KB, ``environ`` (default ``os.environ``) gives ``KB_OVERRIDE`` and git's merge
    variables. Returns the :class:`kb.checks.report.Report` (mode ``staged``).

    Raises :class:`kb.errors.EnvironmentError_` outside a git work tree or when git
    or the index fails, :class:`kb.errors.NotAKnowledgeBase` when ``kb_path`` holds
    no KB, :class:`kb.errors.ConfigError` for an unreadable kb.toml of the one KB checked
    (of several, it is a KB003 finding of its own KB).
    """
    from kb.checks.changes import Change
    from kb.checks.facts import Facts
    from kb.checks.registry import load_rules

    load_rules()  # the rules in their order, before one of their modules is imported here
    from kb.checks.record_rules import prime_staged as prime_records
    from kb.checks.trail_rules import prime_staged
    from kb.repo import commit_snapshot, staged_snapshot

    env = os.environ if environ is None else environ
    top, head = _locate(start)
    # the staged index, listed once (the KBs in it and each one's files), and its changes
    # from HEAD, by two git processes running at once
    ls_args = ["ls-files", "-s", "-z"]
    diff_args = ["diff-index", "--cached", "-z", "--raw", "--no-renames", head or git.EMPTY_TREE]
    procs = [git.start(ls_args, top), git.start(diff_args, top)]
    whole = git.finish(procs[0], ls_args)
    diffs = git.finish(procs[1], diff_args)
    found = kbs_in_listing(whole)
    prefixes = selected_kbs(top, kb_path, staged_kbs(top) if found is None else found)
    report = Report(mode="staged")
    if head is None:
        report.notes.append("HEAD has no commit yet: history is empty (first commit)")
    overrides = parse_overrides(env.get("KB_OVERRIDE", ""))
    merging: list[str] = []
    if head is not None:
        overrides.update(merge_overrides(top, env))
        merging = [h for h in merge_heads(top, env) if h != head]
    for prefix in prefixes:
        report.kbs.append(prefix.rstrip("/") or ".")
        try:
            k = kb_at(top, prefix, "")
        except ConfigError as exc:
            stages = _unmerged_stages(whole, f"{prefix}kb.toml")
            if stages:  # kb.toml itself is conflicted: say so, and what to do
                report.findings.append(unmerged_toml_finding(top, prefix, stages, exc))
                continue
            if len(prefixes) == 1:
                raise  # the one KB checked: an environment error, as for any command
            report.findings.append(unreadable_kb(
                top, prefix, exc, ["diff-index", "--cached", head or git.EMPTY_TREE]))
            continue
        if k.prefix and (set(k.prefix) & set("*?[\\") or found is None):
            # git reads the prefix as a pattern: its own listing and changes, as before
            listing = git.run(["ls-files", "-s", "-z", "--", k.prefix], k.top).stdout
            changes = diff_staged(k, head)
        else:
            listing, changes = whole, raw_changes(diffs, k)
        # the staged kb.toml reads the staged files, not the working tree's (HEAD's when
        # kb.toml is not staged: read for the base's rules anyway, no process of its own)
        new_config = _staged_config(k, head, changes)
        k = as_committed(k, new_config)
        with open_index(k) as idx:
            new = staged_snapshot(k, listing)
            if new.unmerged:
                # A stopped merge: HEAD's version stands in for each conflicted file
                # (no change of its own) and KB191 says what to do.
                changes = _unmerged_as_head(new, changes)
                report.findings += unmerged_findings(k, new.unmerged)
            if head is not None and (new.links or new.folder_links or touches_links(changes)):
                # a symlink reads as its target: HEAD's links resolved in HEAD (one the
                # change deletes too), and a link whose target changed is a change of
                # the link (rare: git's own listing); HEAD's folder links judge KB005's
                base = commit_snapshot(k, head)
                changes = changes + retargeted_links(base, new, changes)
            else:
                base = undo(new, changes, k, head)
            new_f = Facts(idx, new, "the staged index")
            base_f = Facts(idx, base, "HEAD" if head else "the empty history", derive_from=new_f)
            # KB241's listing of TRAIL.md and the log files: out of the one just read
            prime_staged(new_f, base_f, listing, changes)
            prime_records(new_f, base_f, listing, changes)  # KB243's, the same way
            change = Change(base_f, new_f, "staged", changes, overrides,
                            base_config=config_at(k, head), new_config=new_config)
            report.findings += config_findings(k, new, base.folder_links) + name_findings(k, listing)
            found = history_findings(change, k, None)
            if merging:
                # Only the allocation order (KB307) is judged against every merged head:
                # the merged commits are not checked here (pre-push and CI check them),
                # so what they bring in is still this merge's to answer for. And a change
                # of a merged head that the merge undoes is found (git merge -s ours).
                found = judge_merge(found, idx, k, None, merging, new, "staged",
                                              overrides, None, diff=lambda p: diff_staged(k, p),
                                              codes={"KB307"}, first=head)
            report.findings += found
            # a merge: an error the merged head holds already came with it (a forge push
            # that broke tree.md upstream must not stop every team member's kb sync)
            heads = [Facts(idx, commit_snapshot(k, h), h[:10]) for h in merging]
            report.findings += check_snapshots(k, new_f, base_f, strict=True,
                                               earlier=lambda: before_head(idx, k, base_f),
                                               base_config=change.config,
                                               new_config=change.new_config, others=heads)
    return report


def _locate(start: Path) -> tuple[Path, Optional[str]]:
    """(work tree top, HEAD's commit or None) in one ``git rev-parse`` that also tells the
    git dir (the merge state is read there); anything unusual (an unborn HEAD, a bare
    repository, no repository) goes the usual way, one question at a time."""
    proc = git.run(["rev-parse", "--show-toplevel", "--git-dir", "--verify", "--quiet", "HEAD^{commit}"],
                   start, check=False)
    lines = proc.stdout.decode("utf-8", "surrogateescape").split("\n")
    if proc.returncode == 0 and len(lines) >= 3 and lines[0] and lines[1] and lines[2]:
        top = Path(lines[0]).resolve()
        gdir = Path(lines[1])
        git.note_git_dir(top, gdir if gdir.is_absolute() else (Path(start) / gdir).resolve())
        return top, lines[2].strip()
    top = repo_top(start)
    return top, git.rev_parse("HEAD", top)


def _unmerged_as_head(new: Any, changes: list[Any]) -> list[Any]:
    """``changes`` without the conflicted paths of the staged snapshot ``new``, each of
    which gets HEAD's version in ``new`` (git's diff lists it as unmerged, its HEAD blob
    as the old side): a conflicted file is judged as unchanged, never as deleted."""
    from kb.parse import classifier

    fmt_of = classifier(new.kb.config)
    out = []
    for c in changes:
        if c.path not in new.unmerged:
            out.append(c)
            continue
        fmt = fmt_of(c.path)
        if c.old and fmt is not None:
            new.files[c.path] = c.old
            new.formats[c.path] = fmt
    return out


def _unmerged_stages(listing: bytes, path: str) -> str:
    """The conflict stages (``"123"``) of repository ``path`` in ``git ls-files -s -z``
    output, "" when it has none (read only when kb.toml cannot be read)."""
    out = ""
    for rec in git.split_z(listing):
        meta, _, p = rec.partition("\t")
        if p == path and meta[-1:] in ("1", "2", "3"):
            out += meta[-1]
    return out


def _stages_named(stages: str) -> str:
    """git's conflict stages (``"123"``) as a message names them: ``1 base, 2 ours, 3 theirs``."""
    names = {"1": "base", "2": "ours", "3": "theirs"}
    return ", ".join(f"{s} {names.get(s, '?')}" for s in sorted(set(stages)))


def unmerged_toml_finding(top: Path, prefix: str, stages: str, exc: Exception) -> Any:
    """KB191 for a kb.toml with unresolved merge conflicts, which cannot be read (``exc``):
    its KB is not checked until the conflict is resolved."""
    from kb.checks.report import Finding
    from kb.merge.markers import operation_in_progress

    held = _stages_named(stages)
    op = operation_in_progress(top)
    how = (f"then {op[2]}" if op and op[0] != "MERGE_HEAD" else
           "then commit the merge; or `git merge --abort`, then `kb sync`")
    return Finding(
        path=f"{prefix}kb.toml", line=1, col=1, code="KB191", severity="error",
        message=f"kb.toml has unresolved merge conflicts (git's conflict stages {held} in the "
        f"index; {exc}): the KB in {prefix.rstrip('/') or '.'} is not checked until they are "
        f"resolved; resolve them and `git add {prefix}kb.toml`, {how}", family="snapshot",
        kb=prefix.rstrip("/") or ".", kb_path="kb.toml", kb_root=str(top / prefix if prefix else top),
        blocking=True)


def unmerged_findings(k: Any, unmerged: Mapping[str, str]) -> list[Any]:
    """KB191, one per path of the KB ``k`` with unmerged index entries (path -> stages):
    the file has unresolved merge conflicts, and what to do about them."""
    from kb.checks.catalogue import effective_severity
    from kb.checks.report import Finding
    from kb.merge.markers import operation_in_progress

    severity = effective_severity("KB191", "error", k.config)
    if severity is None:
        return []
    op = operation_in_progress(k.top)
    out = []
    for rel, stages in sorted(unmerged.items()):
        held = _stages_named(stages)
        repo = f"{k.prefix}{rel}"  # messages name repository paths, as the location does
        if op is not None and op[0] == "MERGE_HEAD":
            what = "a merge (`git merge`, `git pull`)"
            how = (f"resolve them (`kb verify` shows each conflict region), then `git add {repo}` "
                   "and commit; or `git merge --abort`, then `kb sync` (it merges tree.md by "
                   "meaning and renumbers clashing IDs)")
        elif op is None:  # `git stash pop`, `git checkout -m`: no operation to abort
            what = "a conflicted `git stash pop` or `git checkout -m`"
            how = (f"resolve them (`kb verify` shows each conflict region), then `git add {repo}`; "
                   f"or keep HEAD's version: `git restore --source=HEAD --staged --worktree -- {repo}`")
        else:
            what, how = op[1], f"resolve them and `git add {repo}`, then {op[2]}"
        out.append(Finding(
            path=repo, line=1, col=1, code="KB191", severity=severity,
            message=f"{repo} has unresolved merge conflicts from {what}: the index holds git's "
            f"conflict stages ({held}) and no resolved version, so kb checks HEAD's version in "
            f"its place; {how}", family="snapshot", kb=k.prefix.rstrip("/") or ".",
            kb_path=rel, kb_root=str(k.root), blocking=severity == "error"))
    return out


def _staged_config(k: Any, head: Optional[str], changes: list[Any]) -> Any:
    """The staged kb.toml's configuration (see :func:`kb.checks.targets.config_at`): HEAD's
    when the staged index leaves kb.toml as it is (no git process of its own)."""
    if head is not None and not any(c.path == "kb.toml" for c in changes):
        return config_at(k, head)
    return config_at(k, ":")


#: Above this many changed paths between HEAD and the state before it, a search for
#: reusable results costs about what the full check costs.
_EARLIER_MAX_CHANGES = 400


def before_head(idx: Any, k: Any, head_f: Any) -> Optional[Any]:
    """Facts of the commit HEAD pointed at before it last moved (``HEAD@{1}``: the state
    before a pull, a merge or a reset), built from HEAD's without parsing; None when
    there is none, it is far away, or a version it holds is not in the index."""
    from kb.checks.facts import Facts

    head = head_f.snap.rev
    if not head:
        return None
    proc = git.run(["rev-parse", "--verify", "--quiet", "HEAD@{1}^{commit}"], k.top, check=False)
    before = proc.stdout.decode().strip()
    if proc.returncode != 0 or not before or before == head:
        return None
    changes = diff_commits(k, before, head)
    if len(changes) > _EARLIER_MAX_CHANGES or touches_links(changes):
        return None  # far away, or a link only that commit's listing resolves
    snap = undo(head_f.snap, changes, k, before)
    if any(c.old and c.path in snap.files and not idx.has_parse(c.path, c.old) for c in changes):
        return None
    from kb.checks.record_rules import prime_earlier as prime_records
    from kb.checks.trail_rules import prime_earlier

    earlier = Facts(idx, snap, before[:10], ensure=())
    prime_earlier(earlier, head_f, changes)
    prime_records(earlier, head_f, changes)  # KB243's listing, the same way
    return earlier
