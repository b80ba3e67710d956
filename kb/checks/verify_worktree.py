"""``kb verify`` (no option): the working tree of one KB vs HEAD; every error fails."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Optional

from kb import git
from kb.checks.changes import verified_prefix, worktree_kept
from kb.checks.diagnostics import LightDiagnostic as _D
from kb.checks.judge import check_snapshots, history_findings, judge_merge
from kb.checks.overrides import merge_heads, parse_overrides
from kb.checks.report import Finding, Report, config_findings, findings, name_findings
from kb.checks.targets import config_at, open_index, with_own_layout


def verify_worktree(start: Path, kb_path: Optional[Path] = None,
                    environ: Optional[Mapping[str, str]] = None) -> Report:
    """``kb verify``: the working tree of one KB vs HEAD; every error fails.

    ``start`` is a folder of the KB (or ``kb_path`` names it); ``environ``
    (default ``os.environ``) gives ``KB_OVERRIDE``. Returns the
    :class:`kb.checks.report.Report` (mode ``worktree``).

    Raises :class:`kb.errors.EnvironmentError_` outside a git work tree or when git
    or the index fails, :class:`kb.errors.NotAKnowledgeBase` when ``kb_path`` holds
    no KB, :class:`kb.errors.ConfigError` for an unreadable kb.toml.
    """
    from kb.checks.changes import Change, RawChange
    from kb.checks.facts import Facts
    from kb.repo import commit_snapshot, empty_snapshot, open_kb

    env = os.environ if environ is None else environ
    k = open_kb(kb_path or start)
    report = Report(mode="worktree", kbs=[k.prefix.rstrip("/") or "."])
    with open_index(k) as idx:
        idx.refresh(check=True)  # verify reads everything: check every cached parse too
        new = idx.worktree()
        new_f = Facts(idx, new, "the working tree", ensure=())
        head = git.rev_parse("HEAD", k.top)
        base = commit_snapshot(k, head) if head else empty_snapshot(k)
        base_f = Facts(idx, base, "HEAD", derive_from=new_f)
        base_config = config_at(k, head)
        # the files kept as committed come from worktree_kept (on blob ids, in the folders
        # of both kb.toml versions), not from the snapshots
        kept = tuple({verified_prefix(cfg) for cfg in (k.config, base_config) if cfg is not None})
        # the files HEAD's own kb.toml reads too, when the working tree's moved a [paths]
        # key: the history rules read HEAD where its files were (judge.read_as_own), and
        # the change must list them (tree.md, gone, beside tree2.md, new)
        # (one still on disk was left behind, not deleted: kb.checks.unread_records)
        head_files = with_own_layout(k, head, base_config, base.files,
                                     keep=lambda p: not os.path.lexists(k.root / p)) \
            if head else base.files
        changes = [RawChange(p, head_files.get(p), new.files.get(p))
                   for p in sorted(set(new.files) | set(head_files))
                   if head_files.get(p) != new.files.get(p) and not p.startswith(kept)]
        changes += worktree_kept(k, head, base_config)
        overrides = parse_overrides(env.get("KB_OVERRIDE", ""))
        change = Change(base_f, new_f, "worktree", changes, overrides,
                        base_config=base_config, new_config=k.config)
        report.findings += config_findings(k, new)
        # (a name that is not UTF-8, tracked or not: read by no snapshot, said here)
        listing = git.run(["ls-files", "-z", "--cached", "--others", "--exclude-standard",
                           "--", k.prefix or "."], k.top).stdout
        report.findings += name_findings(k, listing)
        report.findings += check_snapshots(k, new_f, base_f, strict=False)
        found = history_findings(change, k, None)
        merging = [h for h in merge_heads(k.top, env) if h != head] if head else []
        if merging:
            # A stopped merge: the allocation order (KB307) is judged against every merged
            # head, as the pre-merge-commit hook does (the incoming side's E005 is no
            # reason to renumber it against ours), and a merged head's change the
            # working tree undoes is found.
            def diff_to(rev: str) -> list:
                snap = commit_snapshot(k, rev)
                return [RawChange(p, snap.files.get(p), new.files.get(p))
                        for p in sorted(set(new.files) | set(snap.files))
                        if snap.files.get(p) != new.files.get(p)]

            found = judge_merge(found, idx, k, None, merging, new, "worktree",
                                          overrides, None, diff=diff_to, codes={"KB307"},
                                          first=head)
        report.findings += found
    report.findings += _driver_findings(k)
    if head is None:
        report.notes.append("HEAD has no commit yet: history is empty")
    return report


def _driver_findings(k: Any) -> list[Finding]:
    """KB245: ``.gitattributes`` names a kb merge driver this clone has not
    registered (git would merge that file line by line; issue: team work)."""
    from kb.checks.catalogue import effective_severity
    from kb.merge.drivers import missing_drivers

    sev = effective_severity("KB245", "warning", k.config)
    if sev is None:
        return []
    import dataclasses
    import posixpath

    out = []
    for m in missing_drivers(k.top, k.root):
        # m.path is KB-relative (a parent folder's file is ../.gitattributes): the location
        # and the message name the repository path (sub/../.gitattributes was neither)
        repo = posixpath.normpath(k.prefix + m.path)
        d = _D(m.path, m.line, 1, "KB245", sev,
               f"{repo} names the merge driver {m.driver}, which this clone has not registered: "
               "git merges the file line by line instead (conflicts kb would avoid); run "
               "`kb hooks install` (or `kb sync`) to register kb's drivers", None)
        out.extend(dataclasses.replace(f, path=repo) for f in findings([d], k, "snapshot"))
    return out + _uncovered_findings(k)


def _uncovered_findings(k: Any) -> list[Finding]:
    """KB246: git gives kb's merge drivers to some of the KB's files but not to one kb.toml
    places now (a ``[paths]`` setting moved past its ``.gitattributes`` line, or the KB was
    made before kb wrote that line: the propositions' card driver, 0.1.24)."""
    from kb.checks.catalogue import effective_severity
    from kb.merge.drivers import card_folders, covered, uncovered

    sev = effective_severity("KB246", "warning", k.config)
    if sev is None:
        return []
    paths = k.config.paths
    lines = covered(paths["tree"], paths["dashboard"], paths["logs"], **card_folders(paths))
    missing = uncovered(k.top, k.prefix, lines)
    if not missing:
        return []
    try:
        have = (k.root / ".gitattributes").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        have = []
    diags = [_D(".gitattributes", _attribute_line(have, c.driver, {x.line for x in lines}), 1, "KB246", sev,
                f"git gives kb's merge drivers to other files of this KB but not to {k.prefix}{c.shown} "
                f"({c.driver}): git merges it line by line (conflicts kb would avoid), as after "
                f"kb.toml's [paths] moved it or in a KB made before kb wrote that line; add "
                f"`{c.line}` to {k.prefix}.gitattributes and commit "
                "it (`kb sync` does both)", None)
            for c in missing]
    return findings(diags, k, "snapshot")


def _attribute_line(have: list[str], driver: str, current: set[str]) -> int:
    """The line of the KB's ``.gitattributes`` (its lines ``have``) where the line for
    ``driver`` belongs: the stale line kb wrote for the old path (the last line ending in
    ``merge=<driver>`` that is none of the lines kb writes now, ``current``), else the
    file's last line (1 when it is empty or missing)."""
    for n in range(len(have), 0, -1):
        fields = have[n - 1].split()
        if fields and not fields[0].startswith("#") and fields[-1] == f"merge={driver}" \
                and have[n - 1].strip() not in current:
            return n
    return max(len(have), 1)
