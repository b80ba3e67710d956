"""``kb verify --rev`` and ``--range``: commits, each vs its first parent (CI, pre-push).

Every commit of ``A..B`` is checked against its first parent (history
rules), then the final snapshot (snapshot rules; errors already present
where the range started are pre-existing). This catches ``--no-verify``
commits and IDs allocated twice on parallel branches at their merge. When
``A`` is not an ancestor of ``B`` a note says so; when ``B`` replaces ``A`` (one
branch's old and new tip: a force push, a rebase, a reset; ``rewrite``, which
the push hooks set) the change from ``A`` to ``B`` is judged as one as well.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from contextlib import contextmanager
from dataclasses import astuple
from pathlib import Path
from typing import Any, Iterator, Optional

from kb import git, index_results
from kb.checks.changes import diff_commits, diff_many, patch_files, retargeted_links, touches_links
from kb.checks.diagnostics import LightDiagnostic as _D
from kb.checks.facts import known_history, light_versions
from kb.checks import file_results
from kb.checks.judge import (check_snapshots, finding_key, history_findings, judge_merge,
                             read_as_own)
from kb.checks.overrides import trailers
from kb.checks.report import Finding, Report, config_findings, findings
from kb.checks.results import (FILE_PART, prepare_cache, scoped_parts, scoped_stored,
                               store_scoped)
from kb.checks.targets import (as_committed, config_at, kb_at, open_index, parents_of, repo_top, selected_kbs,
                               shallow_commits, shallow_note, unreadable_kb)
from kb.errors import ConfigError, EnvironmentError_, GitError, UsageError
from kb.index_rows import gc_paused


def verify_rev(start: Path, rev: str, kb_path: Optional[Path] = None) -> Report:
    """One commit vs its first parent (CI).

    Returns the :class:`kb.checks.report.Report` (mode ``rev``). Raises
    :class:`kb.errors.UsageError` when ``rev`` names no commit, and as
    :func:`verify_commit_range`.
    """
    top = repo_top(start)
    sha = git.rev_parse(rev, top)
    if sha is None:
        raise UsageError(f"{rev!r} is not a commit")
    parents = parents_of(top, sha)
    return _verify_commits(top, [(sha, parents)], sha, parents[0] if parents else None, kb_path,
                           mode="rev", trailer_spec=["-1", sha])


def verify_range(start: Path, spec: str, kb_path: Optional[Path] = None) -> Report:
    """Every commit of ``A..B`` (each vs its first parent) plus the final snapshot.

    ``spec`` is ``A..B`` (``B`` defaults to HEAD). Returns the report (mode
    ``range``); raises :class:`kb.errors.UsageError` for another spec, and as
    :func:`verify_commit_range`.
    """
    if "..." in spec or ".." not in spec:
        raise UsageError(f"--range takes A..B (two commits), not {spec!r}")
    a, _, b = spec.partition("..")
    return verify_commit_range(start, a or None, b or "HEAD", kb_path, allow_root=False)


def verify_commit_range(start: Path, a: Optional[str], b: str, kb_path: Optional[Path] = None,
                        allow_root: bool = True, against: Optional[str] = None,
                        rewrite: bool = False) -> Report:
    """``a..b`` (``a`` None: every commit reachable from ``b``, from the root).

    ``against`` names the branch the range is meant to merge into: IDs the range
    adds (``b`` against its merge-base with ``against``) that ``against`` already
    holds with other content are KB350 errors (:mod:`kb.merge.collide`).
    When ``a`` is not an ancestor of ``b`` a note says so. With ``rewrite`` (``b`` replaces
    ``a``: one branch's old and new tip, what the push hooks check) the change from ``a``'s
    tip to ``b``'s is judged as one by the history rules too: what a force push, a rebase
    or a reset removed or changed of ``a``'s history. Without it, ``a..b`` may be a branch
    and the target it forked from, which moved on (``kb verify --range origin/main..HEAD``):
    nothing ``a`` holds and ``b`` lacks is a removal, so only each commit is judged.
    Returns the :class:`kb.checks.report.Report` (mode ``range``, ``commits`` the
    number checked). Raises :class:`kb.errors.UsageError` when ``a``, ``b`` or
    ``against`` names no commit (or ``a`` is None without ``allow_root``),
    :class:`kb.errors.EnvironmentError_` when git or the index fails, or when ``a``
    is missing from a shallow clone.
    """
    top = repo_top(start)
    tip = git.rev_parse(b, top)
    if tip is None:
        raise UsageError(f"{b!r} is not a commit")
    target = None
    if against is not None:
        target = git.rev_parse(against, top)
        if target is None:
            raise UsageError(f"--against {against!r} is not a commit here (fetch it first, e.g. "
                             "`git fetch origin`)")
    base = None
    if a is not None:
        base = git.rev_parse(a, top)
        if base is None:
            if shallow_commits(top):  # history missing, as for a merge parent at the edge
                raise EnvironmentError_(
                    f"{a!r} is not a commit here (this is a shallow clone: fetch full history "
                    "with `git fetch --unshallow`, or fetch-depth: 0 in actions/checkout)")
            raise UsageError(f"{a!r} is not a commit here (fetch it first, e.g. `git fetch origin`)")
    elif not allow_root:
        raise UsageError("--range needs A..B")
    spec = [f"{base}..{tip}"] if base else [tip]
    # merge-base(A, B) is A exactly when A is an ancestor of B (None: unrelated histories)
    found_base: list[Optional[str]] = []

    def merge_base() -> Optional[str]:
        if base is None:
            return None
        mb = git.run(["merge-base", base, tip], top, check=False)
        found_base.append(mb.stdout.decode().strip() or None if mb.returncode == 0 else None)
        return mb.stdout.decode().strip() or base if mb.returncode == 0 else base

    from kb.parallel import concurrently

    try:
        lines, origin = concurrently(
            lambda: git.out(["rev-list", "--reverse", "--topo-order", "--parents", *spec], top),
            merge_base)
    except GitError as exc:
        raise EnvironmentError_(f"cannot list the commits of the range: {exc.stderr}") from None
    commits = [(ln.split()[0], ln.split()[1:]) for ln in lines.splitlines() if ln.strip()]
    # The collector paused for the check: what it reads and keeps (the light rows, the
    # held versions: ~10^6 objects, no cycle) was scanned again by each collection,
    # ~25 ms of this process at 7.5k files. It runs again when the check ends.
    with gc_paused():
        report = _verify_commits(top, commits, tip, origin, kb_path, mode="range",
                                 trailer_spec=spec)
    if base is not None and found_base[:1] != [base]:
        _not_an_ancestor(top, report, a or base, base, b, tip, found_base[0] if found_base else None,
                         kb_path, against, rewrite)
    if target is not None:
        _against(top, report, tip, target, against or target, kb_path)
    return report


def _not_an_ancestor(top: Path, report: Report, a: str, base: str, b: str, tip: str,
                     mb: Optional[str], kb_path: Optional[Path], against: Optional[str],
                     rewrite: bool) -> None:
    """A range ``a..b`` whose start ``base`` is not an ancestor of its end ``tip`` (``mb``:
    their merge base, None for unrelated histories): said in a note, and with ``rewrite``
    (and no ``against``) judged as a rewrite of ``a``'s history (:func:`_rewritten`): a
    force push, a rebase or a reset replaces ``base`` by ``tip``, and the commits it adds,
    each against its parent, do not show what the replacement removes or changes."""
    def name(rev: str, sha: str) -> str:
        return sha[:10] if rev.startswith(sha[:7]) else f"{rev} ({sha[:10]})"

    start, end = name(a, base), name(b, tip)
    if mb is None and shallow_commits(top):  # the history joining them may be cut off here
        why = (f"kb cannot tell whether {start} is an ancestor of {end}: this is a shallow clone "
               "(fetch full history with `git fetch --unshallow`, or fetch-depth: 0 in "
               "actions/checkout)")
        report.notes.append(why)
        report.env_error = report.env_error or why
        return
    since = f"their merge base {mb[:10]}" if mb else "the root (the histories share no commit)"
    if against is not None:
        report.notes.append(
            f"{start} is not an ancestor of {end}: {end} is judged from {since}, as a branch "
            f"that merges into {against} (--against)")
        return
    if not rewrite:
        report.notes.append(
            f"{start} is not an ancestor of {end}: each commit of the range is judged against "
            f"its parent, the tip from {since}; when {end} replaces {start} (a force push, a "
            f"rebase, a reset) pass --rewrite to judge what that removed or changed of its "
            f"history; for a branch that merges into {start}, pass --against {a}")
        return
    report.notes.append(
        f"{start} is not an ancestor of {end}: history was rewritten (a force push, a rebase "
        f"or a reset); besides each commit against its parent, the change from the old tip "
        f"{base[:10]} to the new tip {tip[:10]} is judged as one")
    _rewritten(top, report, base, tip, kb_path)


def _rewritten(top: Path, report: Report, base: str, tip: str, kb_path: Optional[Path]) -> None:
    """The history rules on the change from ``base`` (the old tip) to ``tip`` (the new one)
    as one :class:`kb.checks.changes.Change`, for every KB of either side, into
    ``report``: what a rewrite removed or changed of the old history (a Verified card
    amended where it was added, experiments dropped by a reset) breaks the rules as it
    would in one commit. The ``Kb-Override:`` trailers of the commits of ``base..tip``
    accept a change, as in a commit; a finding the commit-by-commit check made already
    is not repeated."""
    from kb.checks.changes import Change
    from kb.checks.facts import Facts
    from kb.repo import commit_snapshot, empty_snapshot, find_all_kbs

    overrides: dict[str, str] = {}
    for found in trailers(top, [f"{base}..{tip}"]).values():
        overrides.update(found)
    at_tip = set(find_all_kbs(top, tip))
    seen = {finding_key(f) for f in report.findings if f.family == "history"}
    note = f" (history rewritten: judged as one change from the old tip {base[:10]} to {tip[:10]})"
    for prefix in selected_kbs(top, kb_path, sorted(at_tip | set(find_all_kbs(top, base)))):
        try:
            rev = tip if prefix in at_tip else base
            k = kb_at(top, prefix, rev)
            k = as_committed(k, config_at(k, rev))
        except (GitError, ConfigError):
            continue  # its kb.toml unreadable (KB003 says so at the tip)
        changes = diff_commits(k, base, tip)
        if not changes:
            continue
        with open_index(k) as idx:
            old = commit_snapshot(k, base)
            new = commit_snapshot(k, tip) if prefix in at_tip else empty_snapshot(k)
            changes = changes + retargeted_links(old, new, changes)
            touched = [c.path for c in changes]
            change = Change(Facts(idx, old, base[:10], ensure=touched),
                            Facts(idx, new, tip[:10], ensure=touched), "range", changes,
                            overrides, commit=tip, base_config=config_at(k, base),
                            new_config=config_at(k, tip))
            for f in history_findings(change, k, tip):
                if finding_key(f) in seen:
                    continue
                seen.add(finding_key(f))
                report.findings.append(dataclasses.replace(f, message=f.message + note))


def _against(top: Path, report: Report, tip: str, target: str, label: str,
             kb_path: Optional[Path]) -> None:
    """Add the KB350 collisions of ``tip`` with ``target`` to ``report``: IDs, and entry
    numbers both added to one card."""
    from contextlib import ExitStack

    from kb.checks.facts import Facts
    from kb.checks.unread_records import commit_facts
    from kb.merge.collide import collision_diagnostics, find_collisions
    from kb.merge.entry_collide import entry_collision_diagnostics, find_entry_collisions
    from kb.repo import commit_snapshot, find_all_kbs

    mb = git.run(["merge-base", tip, target], top, check=False)
    base = mb.stdout.decode().strip() if mb.returncode == 0 else ""
    for prefix in selected_kbs(top, kb_path, sorted(set(find_all_kbs(top, tip)))):
        try:
            k = kb_at(top, prefix, tip)
            k = as_committed(k, config_at(k, tip))
        except (GitError, ConfigError):
            continue  # deleted at the tip, or its kb.toml unreadable (KB003 says so)
        # each side as its own kb.toml places its files (the target moved tree.md to
        # hyp.md: its hypotheses are there)
        with open_index(k) as idx, ExitStack() as stack:
            tip_f = Facts(idx, commit_snapshot(k, tip), tip[:10])
            target_f = stack.enter_context(commit_facts(idx, k, target, label))
            base_f = stack.enter_context(commit_facts(idx, k, base, base[:10])) if base else None
            diags = collision_diagnostics(find_collisions(tip_f, base_f, target_f), label)
            diags += entry_collision_diagnostics(find_entry_collisions(tip_f, base_f, target_f), label)
            report.findings += findings([_D.of(d) for d in diags], k, "history", commit=tip,
                                        all_errors_block=True)


def _verify_commits(top: Path, commits: list[tuple[str, list[str]]], tip: str,
                    origin: Optional[str], kb_path: Optional[Path], mode: str,
                    trailer_spec: list[str]) -> Report:
    """History rules for each commit (vs its first parent), then snapshot rules on
    ``tip`` with pre-existing errors judged against ``origin`` (None: empty)."""
    from kb.parallel import concurrently
    from kb.repo import commit_snapshot, find_all_kbs

    report = Report(mode=mode, commits=len(commits))
    shas = [c for c, _ in commits]
    merges = [(c, parents) for c, parents in commits if len(parents) > 1]

    def after_origin_commits() -> Optional[set[str]]:
        # The "existed before the range" check (KB307) applies to commits made on
        # top of the origin; a branch commit made in parallel (merged with its
        # target later, e.g. by kb sync) never saw the origin's IDs.
        if not (origin and shas):
            return None
        anc = git.run(["rev-list", "--ancestry-path", f"{origin}..{tip}"], top, check=False)
        return set(anc.stdout.decode().split()) if anc.returncode == 0 else None

    # Listings that need only the range: their git processes run at once, while this
    # thread imports what the check runs.
    _, shallow, at_tip, at_origin, ovs, merge_trailers, after_origin = concurrently(
        _preload,
        lambda: shallow_commits(top),
        lambda: find_all_kbs(top, tip),
        lambda: find_all_kbs(top, origin) if origin else [],
        lambda: trailers(top, trailer_spec) if shas else {},
        lambda: [trailers(top, [f"{parents[0]}..{c}"]) for c, parents in merges],
        after_origin_commits)
    prefixes = selected_kbs(top, kb_path, sorted(set(at_tip) | set(at_origin)))
    merge_ovs: dict[str, dict[str, str]] = {}
    for (c, _), found in zip(merges, merge_trailers):
        acc: dict[str, str] = {}
        for ov in found.values():
            acc.update(ov)
        merge_ovs[c] = acc
    bad = [c for c, parents in commits if c in shallow]
    for c in bad:
        report.notes.append(shallow_note(c))
    if bad:
        report.env_error = shallow_note(bad[0])
    children = Counter(p[0] for _, p in commits if p)
    for prefix in prefixes:
        try:
            # the tip's kb.toml reads the range, not the working tree's (unstaged edits)
            k = kb_at(top, prefix, tip)
            k = as_committed(k, config_at(k, tip))
        except GitError:
            continue  # the KB does not exist at the tip (deleted): nothing to read its config from
        except ConfigError as exc:
            if len(prefixes) == 1:
                raise  # the one KB checked: an environment error, as for any command
            report.kbs.append(prefix.rstrip("/") or ".")
            report.findings.append(unreadable_kb(
                top, prefix, exc, ["diff", origin, tip] if origin else None))
            continue
        report.kbs.append(prefix.rstrip("/") or ".")
        with open_index(k) as idx:
            pairs = [(c, parents[0] if parents else None) for c, parents in commits
                     if c not in shallow]
            tip_snap, diffs, ch = concurrently(
                lambda: commit_snapshot(k, tip),
                lambda: diff_many(k, pairs),
                lambda: diff_commits(k, origin, tip) if origin else None)
            snaps = _linked_snapshots(k, commits, diffs, tip, tip_snap, shallow)
            if snaps is not None and ch is not None:
                snaps[origin] = snaps.get(origin) or commit_snapshot(k, origin)
                ch = ch + retargeted_links(snaps[origin], tip_snap, ch)
            scope = _rule_scope(ch)
            history: dict[tuple[str, str], list[tuple]] = {}
            light = _prefetch(idx, k, tip_snap, [diffs.get(c, []) for c, _ in commits], scope,
                              history)
            with light_versions(idx, light), known_history(idx, history):
                _check_kb(report, idx, k, commits, diffs, tip, tip_snap, origin, ch, scope, shallow,
                          children, ovs, merge_ovs, mode, after_origin, snaps)
    return report


def _linked_snapshots(k: Any, commits: list[tuple[str, list[str]]], diffs: dict[str, Any],
                      tip: str, tip_snap: Any, shallow: Any) -> Optional[dict[str, Any]]:
    """When symlinks are in play (at the tip, or changed by a commit of the range): every
    commit's snapshot read from git, links resolved in that commit, and each commit's
    changes extended by the links whose target it changed (:func:`retargeted_links`).
    None otherwise: the snapshots are patched from the diffs (no link to resolve)."""
    from kb.repo import commit_snapshot, empty_snapshot

    if not tip_snap.links and not any(touches_links(cs) for cs in diffs.values()):
        return None
    snaps: dict[str, Any] = {tip: tip_snap}
    for c, parents in commits:
        if c in shallow:
            continue
        parent = parents[0] if parents else None
        for rev in (c, parent):
            if rev is not None and rev not in snaps:
                snaps[rev] = commit_snapshot(k, rev)
        old = snaps[parent] if parent is not None else empty_snapshot(k)
        diffs[c] = diffs.get(c, []) + retargeted_links(old, snaps[c], diffs.get(c, []))
    return snaps


def _check_kb(report: Report, idx: Any, k: Any, commits: list[tuple[str, list[str]]],
              diffs: dict[str, Any], tip: str, tip_snap: Any, origin: Optional[str], ch: Any,
              scope: Optional[set[str]], shallow: set[str], children: Counter,
              ovs: dict[str, dict[str, str]], merge_ovs: dict[str, dict[str, str]], mode: str,
              after_origin: Optional[set[str]],
              snaps: Optional[dict[str, Any]] = None) -> None:
    """The history findings of every commit and the snapshot findings of the tip, for
    KB ``k`` (its file versions parsed, derived or light: :func:`_prefetch`), into
    ``report``. ``snaps`` (:func:`_linked_snapshots`): every commit's snapshot, read
    instead of patched from the diffs."""
    from kb.checks.changes import Change
    from kb.checks.facts import Facts
    from kb.repo import Snapshot

    tip_f = Facts(idx, tip_snap, tip[:10])
    origin_f = None
    maps: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
    if origin and snaps is not None:
        origin_f = Facts(idx, snaps[origin], origin[:10], derive_from=tip_f)
    elif origin:
        ofiles, ofmts = patch_files(tip_snap.files, tip_snap.formats, ch, k, forward=False)
        origin_f = Facts(idx, Snapshot(kb=k, kind="commit", files=ofiles, formats=ofmts,
                                       rev=origin), origin[:10], derive_from=tip_f)
        # the parent of the range's first commits: patched from the tip, not listed by git
        maps[origin] = (ofiles, ofmts)
    left = dict(children)

    def history() -> list[Finding]:
        """The history findings of every commit, in commit order, with the origin read as
        its own kb.toml's ``[paths]`` reads it (what it held is what KB307 remembers: read
        through a tip that moved a key, its records were not there)."""
        from kb.checks.unread_records import own_layout

        if origin_f is None:
            return commits_history(None)
        with own_layout(origin_f) as own:
            return commits_history(own)

    def commits_history(origin_f: Any) -> list[Finding]:
        from kb.checks.history_rules import removed_ids
        from kb.checks.id_history import gone_before

        out: list[Finding] = []
        # commit -> the objects removed in it or its ancestors within the range
        # (KB307: an ID removed on the way never comes back, whatever the origin held).
        # A commit that removes nothing shares its parent's map.
        gone: dict[str, dict[tuple[str, str], str]] = {}
        # What the history up to the origin used and the origin no longer holds: an ID
        # removed on the target branch before the range began never comes back either.
        earlier = gone_before(k, origin, origin_f) if origin and origin_f is not None else {}
        for c, parents in commits:
            parent = parents[0] if parents else None
            inherited = [gone[p] for p in parents if p in gone]
            if not inherited:  # a first commit of the range: its parent is the origin's side
                inherited = [earlier]
            before = inherited[0] if len(inherited) == 1 else \
                {key: label for g in inherited for key, label in g.items()}
            gone[c] = before
            if c in shallow:
                out.append(Finding(
                    path=k.prefix + "kb.toml", line=0, col=1, code="KB390", severity="error",
                    message=shallow_note(c), family="history", kb=k.prefix.rstrip("/") or ".",
                    commit=c, blocking=True))
                continue
            changes = diffs.get(c, [])
            if snaps is None:
                nfiles, nfmts, pfiles, pfmts = _patched(k, c, parent, tip, tip_snap, changes, maps,
                                                        left)
            if not changes and len(parents) < 2:
                continue  # (a merge that is one parent's tree may undo the other's changes)
            touched = [ch.path for ch in changes]
            if snaps is not None:  # the snapshots read, with their links
                new = snaps[c]
                old = snaps[parent] if parent else Snapshot(kb=k, kind="commit", files={},
                                                            formats={})
            else:
                new = Snapshot(kb=k, kind="commit", files=nfiles, formats=nfmts, rev=c)
                old = Snapshot(kb=k, kind="commit", files=pfiles, formats=pfmts, rev=parent)
            new_f = tip_f if c == tip else Facts(idx, new, c[:10], ensure=touched)
            old_f = Facts(idx, old, parent[:10] if parent else "the empty history", ensure=touched)
            overrides = dict(ovs.get(c, {}))
            overrides.update(merge_ovs.get(c, {}))
            seen_origin = origin_f if after_origin is None or c in after_origin else None
            change = Change(old_f, new_f, mode, changes, overrides, commit=c, origin=seen_origin,
                            base_config=config_at(k, parent), new_config=config_at(k, c),
                            removed_before=before)
            # each side as its own kb.toml reads it (a later commit's [paths] move: the tip's
            # reads neither), for the findings and for what the commit removed alike
            with read_as_own(change) as own:
                found = history_findings(own, k, c)
                removed = removed_ids(own)
            if len(parents) > 1:
                found = judge_merge(found, idx, k, c, parents[1:], new, mode,
                                              overrides, origin_f, removed_before=before,
                                              first=parent)
            out += found
            if removed:
                gone[c] = {**before, **removed}
        return out

    if origin_f is not None and scope is not None and scoped_stored(tip_f, scope) is None:
        # The tip's snapshot rules shared out: those of _HERE run here after the
        # history rules, the others in the child (both halves then take about as long).
        theirs, (found, ours) = _at_once(
            idx, lambda: {name: [(o, tuple(d)) for o, d in part] for name, part in
                          scoped_parts(tip_f, scope, without=_HERE).items()},
            lambda: (history(), scoped_parts(tip_f, scope, parts=set(_HERE))))
        theirs = {name: [(o, _D(*d)) for o, d in part] for name, part in theirs.items()}
        raw = store_scoped(tip_f, scope, {**theirs, **ours})
        tip_found = check_snapshots(k, tip_f, origin_f, strict=True, file_scope=scope, raw=raw)
    else:
        # The origin's and the tip's own kb.toml when the range changes it: a [paths] move
        # judges the origin as its own reads it (check_snapshots); read here, not in the child.
        layouts = ((config_at(k, origin), config_at(k, tip)) if origin and ch is not None
                   and any(c.path == "kb.toml" for c in ch) else (None, None))

        def snapshot() -> list[tuple]:
            """The tip's snapshot findings (judged against the origin), as tuples."""
            base_f = origin_f if origin_f is not None else _empty_facts(idx, k)
            return [astuple(f) for f in check_snapshots(k, tip_f, base_f, strict=True,
                                                        file_scope=scope,
                                                        base_config=layouts[0],
                                                        new_config=layouts[1])]

        rows, found = _at_once(idx, snapshot, history)
        tip_found = [Finding(*r) for r in rows]
    report.findings += found
    report.findings += config_findings(k, tip_snap, _origin_folder_links(k, tip_snap, origin))
    report.findings += tip_found
    if scope is not None:
        skipped = sum(1 for p in tip_snap.files if p not in scope)
        if skipped:
            report.notes.append(
                f"{k.prefix.rstrip('/') + ': ' if k.prefix else ''}{skipped} file(s) untouched "
                "by the range not re-checked by the per-file rules (their findings predate the "
                "range)")


def _origin_folder_links(k: Any, tip_snap: Any, origin: Optional[str]) -> dict[str, str]:
    """The origin's symlinks at folders of the layout (KB005's base: one the origin holds
    as it is does not block), listed only when the tip holds one (none: no git process)."""
    if not (tip_snap.folder_links and origin):
        return {}
    from kb.repo import commit_snapshot

    return commit_snapshot(k, origin).folder_links


#: The parts of the tip's snapshot check (:func:`kb.checks.results.scoped_parts`) that a
#: range check runs in this process after the history rules, while a forked child
#: runs the others (:func:`_at_once`): the parse and per-file results and the rule on
#: file names, the parts that do not read every object and link of the snapshot. The
#: others took about 60 ms longer than the history rules of the benchmark's ranges.
_HERE = (FILE_PART, "kb.checks.id_rules.unportable_paths")


def _at_once(idx: Any, there: Any, here: Any) -> tuple[Any, Any]:
    """``(there(), here())``: ``there()`` computed by a forked child while this process
    computes ``here()`` (most of a range's snapshot rules on its tip there, its history
    rules here: once every version is parsed, derived or read light, both only read
    the index, and each is a core's worth of work that ran after the other while the
    other core idled; issue 18). ``there()`` returns what :mod:`marshal` sends back.
    The index's connection is closed across the fork and each process opens its own
    (:meth:`kb.index.Index.suspend`). Without fork, with an in-memory index or with
    one core, this process computes both, in turn."""
    from kb.parallel import Workers, can_fork, cpu_workers

    if idx.memory or not can_fork() or cpu_workers() < 2:
        first = there()
        return first, here()

    def child(_: Any) -> Any:
        idx.resume()  # the child's own connection
        return there()

    idx.suspend()
    resumed = False
    try:
        with Workers(child, [None], 2, hold=1) as workers:
            idx.resume()
            resumed = True
            mine = workers.meanwhile(here)
            rows = next(iter(workers))
    finally:
        if not resumed:  # the fork failed
            idx.resume()
    return rows, mine


def _patched(k: Any, c: str, parent: Optional[str], tip: str, tip_snap: Any, changes: list[Any],
             maps: dict[str, tuple[dict[str, str], dict[str, str]]],
             left: dict[str, int]) -> tuple[dict[str, str], dict[str, str], dict[str, str], dict[str, str]]:
    """Commit ``c``'s and its parent's {path: blob} and formats, patched from the diffs
    along the range (``maps`` keeps a commit's map while ``left`` children still need it)."""
    from kb.repo import commit_snapshot

    if parent in maps:
        pfiles, pfmts = maps[parent]
        nfiles, nfmts = patch_files(pfiles, pfmts, changes, k, forward=True)
    elif c == tip:
        nfiles, nfmts = tip_snap.files, tip_snap.formats
    else:
        snap = commit_snapshot(k, c)
        nfiles, nfmts = snap.files, snap.formats
    if left.get(c):
        maps[c] = (nfiles, nfmts)
    if parent in maps:
        left[parent] -= 1
        pfiles, pfmts = maps[parent] if left[parent] > 0 else maps.pop(parent)
    else:
        pfiles, pfmts = patch_files(nfiles, nfmts, changes, k, forward=False)
    return nfiles, nfmts, pfiles, pfmts

def _rule_scope(ch: Optional[list[Any]]) -> Optional[set[str]]:
    """The paths whose per-file rules a range check runs: those that differ between
    the range's origin and its tip (``ch``). None (every file) without an origin or when
    the range changes ``kb.toml``. Per-file results depend only on the config and the
    file's path and blob, so an untouched file's are the origin's: pre-existing."""
    if ch is None:
        return None
    paths = {c.path for c in ch}
    return None if "kb.toml" in paths else paths


def _prefetch(idx: Any, k: Any, tip: Any, diffs: list[list[Any]],
              scope: Optional[set[str]] = None,
              history: Optional[dict[tuple[str, str], list[tuple]]] = None
              ) -> dict[tuple[str, str], Any]:
    """Parse every file version a range check reads before the commits are walked: the
    tip's files and both sides of every change (``diffs``: the commits' changes, oldest
    first). A CI clone starts with no cache; one commit at a time, the parent parsed
    them serially, tree.md from scratch each time. Here the versions are parsed in one
    pass (in parallel), except the tree versions that follow an earlier one: those are
    derived from it (:mod:`kb.checks.tree_versions`), one after the other, in this
    process while forked workers read the untouched cards and experiments light and a
    forked child runs the per-file rules of the tree versions parsed in full. The index holds the
    derived versions in memory (:meth:`kb.index.Index.put_derived`); their light rows
    join those returned.

    The tip's cards that the range leaves untouched (outside ``scope``) and that the
    index has not parsed are read light (:func:`kb.parse.light.light_read`: IDs,
    statuses, lines, links), when their full parse provably says no more than that
    to the cross-file rules; returns those light rows, ``{(path, blob): rows}``, for
    :class:`kb.checks.facts.light_versions`. ``history``, when given, receives the
    history rows of the tree versions known along the chain (for
    :class:`kb.checks.facts.known_history`)."""
    from kb.parse import classify

    steps: dict[str, list[tuple[str, str]]] = {}  # tree path -> (old, new) of its changes
    items = []
    for changes in diffs:
        for ch in changes:
            fmt = tip.formats.get(ch.path) or classify(ch.path, k.config)
            if fmt is None:
                continue
            if ch.old_link or ch.new_link:
                # a symlink's blob is its text, never parsed: the snapshots judge it
                # (kb.repo.resolve_links), and their files are parsed below
                continue
            if fmt == "tree" and ch.old and ch.new:
                steps.setdefault(ch.path, []).append((ch.old, ch.new))
                continue
            items += [(ch.path, b, fmt) for b in (ch.old, ch.new) if b]
    # Of each tree.md's versions one is parsed in full (the tip's when the range holds
    # it, with its per-file rules), the others derived
    # from a neighbour (a version one change away) that is parsed or derived already.
    roots: dict[str, str] = {}
    derived: set[tuple[str, str]] = set()
    for path, pairs in steps.items():
        versions = list(dict.fromkeys(b for pair in pairs for b in pair))
        root = tip.files.get(path) if tip.files.get(path) in versions else versions[0]
        roots[path] = root
        derived |= {(path, b) for b in versions if b != root}
    cands = _light_candidates(idx, tip, scope, {(p, b) for p, b, _ in items} | derived)
    read = _checkout_reader(k, tip.files)
    # The per-file rules run in the parse workers, for the files the range changed
    # (``scope``; None: every file): an untouched file's results are its origin's.
    rules = file_results.rule_rows if prepare_cache(idx) else None

    # Parsed in full whatever the light reading gives: both sides of the range's
    # changes and the tip's files that are not read light (but the derived versions).
    light_keys = {(p, b) for p, b, _ in cands}
    full = [it for it in items if (it[0], it[1]) not in derived]
    full += [(p, b, tip.formats[p]) for p, b in tip.files.items()
             if (p, b) not in derived and (p, b) not in light_keys]
    checked: dict[tuple[str, str], list[tuple]] = {}

    def tree_chain(alone: bool) -> None:
        """Each tree file's root version parsed in full, then the others derived from
        it (held by the index: their light rows go to ``held``), then the versions
        parsed in full whatever the light reading gives: in this process while the
        workers read light (``alone``: there are none). The per-file rules of the
        roots the range changed (as Index.ensure_versions runs them, on what it
        parses) run meanwhile in a child forked after their parse: a tree of thousands
        of hypotheses costs more to check than to parse, and deriving does not need
        them (:func:`_tree_roots`)."""
        todo = [(path, root, "tree") for path, root in roots.items()
                if not idx.has_parse(path, root)]
        ruled = [] if rules is None else [(p, b) for p, b, _ in todo if scope is None or p in scope]
        with _tree_roots(idx, k, todo, ruled, read, checked, fork=not alone) as stored:
            if derived:
                _derive_tree_versions(idx, k, steps, roots, history, read, held, stored)
            idx.ensure_versions(full, file_rules=rules, read=read, rule_paths=scope,
                                parallel=alone)

    held: dict[tuple[str, str], Any] = {}
    light = _read_light(k, cands, during=tree_chain)
    light.update(held)
    if checked:
        index_results.store_file_results(idx, list(checked),
                                         [row for rows in checked.values() for row in rows])
    # the cards a full parse must tell about (light_card returned None)
    idx.ensure_versions([(p, b, tip.formats[p]) for p, b in tip.files.items()
                         if (p, b) in light_keys and (p, b) not in light],
                        file_rules=rules, read=read, rule_paths=scope)
    return light


@contextmanager
def _tree_roots(idx: Any, k: Any, todo: list[tuple[str, str, str]], ruled: list[tuple[str, str]],
                read: Any, checked: dict[tuple[str, str], list[tuple]], fork: bool
                ) -> Iterator[dict[tuple[str, str], Any]]:
    """Parse and store the tree versions ``todo`` (``(path, blob, fmt)``, read with
    ``read``: :func:`_checkout_reader`; a version it lacks is skipped), and yield what
    was stored, ``{(path, blob): (rows, heads)}`` (``rows``:
    :func:`kb.index_rows.result_rows`; ``heads``: the ``(line, level)`` of its
    hypotheses, in line order); the per-file
    rule rows of those of ``ruled`` (``(path, blob)``) go to ``checked`` by the end of
    the block, computed by a child forked after the parse (``fork``, when the system
    can) while the block runs, else here. The child inherits the parses: the rules
    read their objects' records (:func:`_root_rules`), as a worker parsing the
    version again would, at the cost of a parse less."""
    from contextlib import ExitStack

    from kb.index_rows import parse_version
    from kb.parallel import Workers, can_fork, cpu_workers

    data = read(todo) if todo else {}
    parsed = {(p, b): (parse_version(k.config, p, fmt, data[b]), data[b])
              for p, b, fmt in todo if b in data}
    ruled = [key for key in ruled if key in parsed]
    with ExitStack() as stack:
        pool = None
        if ruled and fork and cpu_workers() > 1 and can_fork():
            pool = stack.enter_context(Workers(lambda key: _root_rules(k, key, parsed), ruled, 2,
                                               hold=len(ruled)))
        stored = {(p, b): (rows, sorted((o.line, o.level or 0) for o in res.objects
                                        if o.kind == "hypothesis"))
                  for (p, b), (res, _) in parsed.items()
                  if (rows := idx.put(p, b, res)) is not None}
        if pool is not None:
            parsed.clear()  # the child has its own copy: the parses need not outlive the storing
        yield stored
        checked.update(zip(ruled, pool) if pool is not None else
                       ((key, _root_rules(k, key, parsed)) for key in ruled))


def _root_rules(k: Any, key: tuple[str, str], parsed: dict[tuple[str, str], Any]) -> list[tuple]:
    """The per-file rule rows of the tree version ``key`` (``(path, blob)``) from its
    parse (``parsed[key]``: the ParseResult and the bytes): the rows
    :meth:`kb.index.Index.ensure_versions`' rules give
    (:func:`kb.checks.file_results.parsed_rule_rows`), none written."""
    res, data = parsed[key]
    return file_results.parsed_rule_rows(k.config, key[0], key[1], res, data)


def _preload() -> None:
    """Import what the forked workers of :func:`_prefetch` run, once here rather than in
    each of them (the check needs it all afterwards anyway): the parsers and the rules.
    :func:`_verify_commits` calls it while the range's git listings wait on git."""
    import kb.parse.card  # noqa: F401
    import kb.parse.experiment  # noqa: F401
    import kb.parse.frontmatter  # noqa: F401
    import kb.parse.light  # noqa: F401
    import kb.parse.tree  # noqa: F401
    from kb.checks.registry import load_rules

    load_rules()


def _derive_tree_versions(idx: Any, k: Any, steps: dict[str, list[tuple[str, str]]],
                          roots: dict[str, str],
                          history: Optional[dict[tuple[str, str], list[tuple]]] = None,
                          read: Any = None,
                          light: Optional[dict[tuple[str, str], Any]] = None,
                          stored: Optional[dict[tuple[str, str], Any]] = None) -> None:
    """Store (or hold: ``light``) the parse of every version of each tree file in
    ``steps`` (its changes, ``(old, new)`` blob pairs) but its root (``roots``, parsed
    already): each derived from a neighbour already stored or held
    (:func:`kb.checks.tree_versions.splice_tree_version`), breadth first from the root;
    a version that cannot be derived is parsed in full.
    The history rows of the root and of each version derived from a version whose rows
    are known go to ``history`` (``{(path, blob): rows}``), when given. ``read``, when
    given, reads the versions (:func:`_checkout_reader`).

    ``light``, when given, receives the light rows (:class:`kb.checks.facts.light_versions`:
    objects and links, no anchor lines) of the versions derived from the root along
    the chain: those the index holds in memory (:meth:`kb.index.Index.put_derived`)
    instead of storing them, unless a reader needs their rows.

    ``stored``, when given, holds what was just stored of versions parsed in full
    (``{(path, blob): (rows, heads)}``, :func:`_tree_roots`): what the chain knows of
    those is taken from it rather than read back by SQL."""
    from kb.checks.tree_versions import splice_tree_version
    from kb.index_facts import history_rows, light_rows_of, version_links, version_objects

    want = list(dict.fromkeys((path, b, "tree") for path, pairs in steps.items() for pair in pairs
                              for b in pair))
    # the tip's version from the checkout when it is there (no object inflated)
    blobs = read(want) if read is not None else git.read_blobs([b for _, b, _ in want], k.top)
    lines: dict[str, Any] = {}  # each version's lines, split once along the chain
    for path, pairs in steps.items():
        near: dict[str, list[str]] = {}
        for old, new in pairs:
            near.setdefault(old, []).append(new)
            near.setdefault(new, []).append(old)
        done = {roots[path]}
        queue = [roots[path]]
        memo: dict[str, dict] = {}

        def parsed(blob: str) -> None:
            """What the chain knows of a version parsed in full (stored)."""
            if not idx.has_parse(path, blob) or idx.derived(path, blob):
                return
            memo[blob] = {}
            if history is not None:
                memo[blob]["history"] = history_rows(idx, path, blob)
            rows = None
            if stored and (path, blob) in stored:  # just stored: no SQL reads it back
                rows, memo[blob]["heads"] = stored[(path, blob)]
            if light is not None:  # the versions derived from it are held, not stored
                if rows is not None:
                    memo[blob]["objects"], memo[blob]["links"] = light_rows_of(rows)
                else:
                    memo[blob]["objects"] = version_objects(idx, path, blob)
                    memo[blob]["links"] = [(path, *x) for x in version_links(idx, path, blob)]

        parsed(roots[path])
        while queue:  # breadth first from the version parsed in full
            cur = queue.pop(0)
            for nxt in near[cur]:
                if nxt in done:
                    continue
                done.add(nxt)
                queue.append(nxt)
                if idx.has_parse(path, nxt):
                    continue
                ok = cur in blobs and nxt in blobs and idx.has_parse(path, cur) and \
                    splice_tree_version(k, idx, path, cur, blobs[cur], nxt, blobs[nxt], lines,
                                        memo)
                for b in [b for b in lines if b not in (cur, nxt)]:
                    del lines[b]  # two versions held at a time, as before
                if ok:
                    continue
                idx.ensure_versions([(path, nxt, "tree")])
                parsed(nxt)
        if history is not None:
            history.update(((path, b), m["history"]) for b, m in memo.items() if "history" in m)
        if light is not None:
            light.update(((path, b), (m["objects"], m["links"], None)) for b, m in memo.items()
                         if "objects" in m and idx.derived(path, b))


def _light_candidates(idx: Any, tip: Any, scope: Optional[set[str]],
                      other: set[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """``(path, blob, fmt)`` of the tip's cards outside ``scope`` (none when ``scope`` is
    None: every file is checked in full) that no commit of the range changes (``other``:
    the versions parsed for the history rules) and that the index has not parsed."""
    from kb.index_facts import SnapshotTable
    from kb.parse.light import LIGHT_READ_FORMATS

    if scope is None:
        return []
    fmts = tip.formats
    want = {p: b for p, b in tip.files.items()
            if p not in scope and fmts.get(p) in LIGHT_READ_FORMATS and (p, b) not in other
            and p not in tip.unread}
    if not want:
        return []
    unparsed = SnapshotTable(idx, want).unparsed()
    return [(p, want[p], fmts[p]) for p in sorted(unparsed)]


#: Cards read light per task of :func:`_read_light`'s workers.
LIGHT_CHUNK = 250


def _read_light(k: Any, cands: list[tuple[str, str, str]], during: Any = None
                ) -> dict[tuple[str, str], Any]:
    """Light rows (:func:`kb.parse.light.light_read`) of the ``(path, blob, fmt)`` cards
    and experiments ``cands`` that read light, ``{(path, blob): rows}`` (the others are
    left out: the caller parses them in full), each read and parsed by the worker that
    takes it.

    ``during(alone)``, when given, runs in this process while forked workers read
    (:class:`kb.parallel.Workers`, handed their next chunk as they return one; the
    chunks left when ``during`` ends are read here too), or before the reading when
    there are no workers (``alone`` True). The bytes come from the checkout when the
    file there is the wanted blob, else from git."""
    from kb.parallel import Workers, can_fork, cpu_workers

    chunks = [cands[i:i + LIGHT_CHUNK] for i in range(0, len(cands), LIGHT_CHUNK)]
    out: dict[tuple[str, str], Any] = {}
    unread: list[tuple[str, str, str]] = []
    root = Path(k.root)  # once: a Path per file cost a tenth of the reading

    # A child more than the other cores would only slow ``during()`` down.
    workers = cpu_workers()
    if len(chunks) > 1 and workers > 1 and can_fork():
        with Workers(lambda items: _light_chunk(root, items), chunks, workers,
                     window=len(chunks), hold=2) as pool:
            if during is not None:
                pool.meanwhile(lambda: during(False))
            for got, missing in pool:
                out.update(got)
                unread += missing
    else:
        if during is not None:
            during(True)
        for items in chunks:
            got, missing = _light_chunk(root, items)
            out.update(got)
            unread += missing
    if unread:  # not in the checkout: from git
        from kb.parse.light import light_read

        data = git.read_blobs([b for _, b, _ in unread], k.top)
        for p, b, fmt in unread:
            res = light_read(p, b, data[b], fmt) if b in data else None
            if res is not None:
                out[(p, b)] = res
    return out


def _light_chunk(base: Path, items: list[tuple[str, str, str]]) -> tuple[dict, list]:
    """Worker: the light rows of the cards the checkout under ``base`` holds, and the
    cards it does not hold (another blob there, or none)."""
    from kb.checks.facts import checkout_bytes
    from kb.parse.light import light_read

    got: dict[tuple[str, str], Any] = {}
    missing = []
    for p, b, fmt in items:
        data = checkout_bytes(base, p, b)
        if data is None:
            missing.append((p, b, fmt))
            continue
        res = light_read(p, b, data, fmt)
        if res is not None:
            got[(p, b)] = res
    return got, missing


def _checkout_reader(k: Any, tip_files: dict[str, str]) -> Any:
    """A blob reader for :meth:`kb.index.Index.ensure_versions` that takes the tip's file
    versions from the work tree when the file there holds the wanted blob
    (:func:`kb.checks.facts.checkout_bytes`: a CI checkout of the tip, no object
    inflated), the rest from git.

    Returns ``read(items) -> {blob: bytes}`` for ``(path, blob, fmt)`` items.
    """
    from kb.checks.facts import checkout_bytes

    def read(items: list[tuple[str, str, str]]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        rest = []
        for path, blob, _ in items:
            data = checkout_bytes(k.root, path, blob) if tip_files.get(path) == blob else None
            if data is None:
                rest.append(blob)
            else:
                out[blob] = data
        if rest:
            out.update(git.read_blobs(rest, k.top))
        return out

    return read


def _empty_facts(idx: Any, k: Any) -> Any:
    from kb.checks.facts import Facts
    from kb.repo import empty_snapshot

    return Facts(idx, empty_snapshot(k), "the empty history", ensure=())
