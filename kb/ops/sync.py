"""``kb sync [UPSTREAM]``: bring a branch up to date with its target, IDs repaired.

1. refuse on a dirty work tree, an unfinished merge/rebase or conflict markers;
2. register kb's merge drivers in this clone (git config, ``.gitattributes``);
3. fetch the upstream (one bounded ``git fetch``; a local branch needs none);
4. find the IDs this branch added that the upstream holds with other content
   (:mod:`kb.merge.collide`), renumber them with every reference
   (:mod:`kb.merge.renumber`) in one commit with ``Kb-Renumber: H7 -> H9``
   trailers (the history rules accept them); a renumbered card's verification
   records that the branch added (none the upstream holds) are renamed and
   rewritten with it, as its Verified card is, and so are the refs of the
   exploration graph's nodes in the log files the branch added (none the upstream
   holds; a ref in one the upstream holds too is left and reported, ``refs_left``);
5. merge the upstream (``git merge``, kb's drivers doing tree.md, DASHBOARD.md
   and TRAIL.md, and keeping our side of ``kb report``'s report: a generated file never
   conflicts; what a driver says of a clean merge, ``kb merge: …`` on git's output, is
   kept in ``notes``); on a conflict the merge is aborted, the renumber commit kept,
   and each conflict reported; a merge commit a hook refused (every path merged,
   kb's pre-merge-commit hook finding a rule broken) is ``refused``, aborted the
   same way, with the hook's reasons reported instead (there is nothing to resolve);
   git's output is read by :mod:`kb.ops.sync_output`, the merge run with git's
   messages in English (:func:`kb.git.english`);
6. regenerate DASHBOARD.md when stale (a ``kb dashboard`` commit); render TRAIL.md
   again (a ``trail.render`` commit) when a merge commit left it stale against the
   merged exploration log while it was fresh on this side before (git calls no
   driver when both sides hold the same TRAIL.md blob, e.g. both recorded notes the
   rendering does not show; one already stale here is left, DESIGN §8); and verify
   the result (``kb verify --range UPSTREAM..HEAD``).

``dry_run`` stops after step 4's plan and changes nothing. The renumber commit
is built from plumbing under kb's write lock: the new tree is written with a
temporary index, the work tree moves to it with ``git read-tree -m -u`` (which
refuses to overwrite local changes), and HEAD moves by compare-and-swap; if
that fails the work tree is moved back. A branch already pushed for review is
repaired by this new commit — no history is rewritten.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from kb import git
from kb.errors import ConflictError, EnvironmentError_, GitError, RefusedError, UsageError
from kb.fileio import read_regular
from kb.ops.sync_output import (  # noqa: F401 - the readers stay importable from here
    conflict_lines, driver_notes, git_conflict_lines, hook_refused, names, refusal_lines)

FETCH_TIMEOUT = 120.0


@dataclass
class SyncResult:
    """What ``kb sync`` did (or, with ``dry_run``, would do).

    ``renumbered`` old ID -> new ID; ``merge`` is ``up to date`` |
    ``fast-forward`` | ``merged`` | ``conflict`` | ``refused`` (a hook refused the
    merge commit) | ``not run``; ``conflicts`` per conflicting path what kb's driver or
    git said of it (``CONFLICT (file location): …``), else ``<path>: conflict``, or for
    ``refused`` the hook's reasons (its kb diagnostics); ``attributes_commit`` the
    commit naming kb's merge drivers in ``.gitattributes`` (None: it named them);
    ``notes`` what kb's merge drivers said of a clean merge (``kb merge: Logs/报告.md:
    kept our side …``: a generated file to refresh); ``refs_left`` the exploration graph's refs naming a
    renumbered ID in log files the upstream holds too, left as they are (``node``,
    ``path``, ``ref``, ``old``: the ID, the upstream's object after the merge, ``new``:
    the branch's object's ID now); ``findings`` the blocking findings of the final
    verify (as dicts).
    """

    upstream: str
    upstream_commit: str
    dry_run: bool = False
    fetched: bool = False
    drivers: dict[str, str] = field(default_factory=dict)
    attributes_changed: bool = False
    attributes_commit: Optional[str] = None
    collisions: list[dict[str, Any]] = field(default_factory=list)
    renumbered: dict[str, str] = field(default_factory=dict)
    renumber_commit: Optional[str] = None
    refs_left: list[dict[str, str]] = field(default_factory=list)
    merge: str = "not run"
    merge_commit: Optional[str] = None
    conflicts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dashboard_commit: Optional[str] = None
    trail_commit: Optional[str] = None
    findings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the sync ended with no conflict, no refused merge and no finding."""
        return not self.conflicts and not self.findings

    def to_json(self) -> dict[str, Any]:
        """The JSON object of ``kb sync --json``."""
        return {"upstream": self.upstream, "upstream_commit": self.upstream_commit,
                "dry_run": self.dry_run, "fetched": self.fetched, "drivers": self.drivers,
                "attributes_commit": self.attributes_commit,
                "collisions": self.collisions, "renumbered": self.renumbered,
                "renumber_commit": self.renumber_commit, "refs_left": self.refs_left,
                "merge": self.merge, "merge_commit": self.merge_commit,
                "conflicts": self.conflicts, "notes": self.notes,
                "dashboard_commit": self.dashboard_commit, "trail_commit": self.trail_commit,
                "findings": self.findings, "ok": self.ok}


def _remotes(top: Path) -> list[str]:
    return git.out(["remote"], top).split()


def _fetch(top: Path, remote: str, timeout: float = FETCH_TIMEOUT) -> None:
    try:
        proc = subprocess.run(["git", "fetch", "--quiet", remote], cwd=top, capture_output=True,
                              timeout=timeout, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except subprocess.TimeoutExpired:
        raise EnvironmentError_(f"git fetch {remote} did not answer within {timeout:.0f}s; "
                                "nothing was changed") from None
    if proc.returncode != 0:
        raise EnvironmentError_(f"git fetch {remote} failed: "
                                f"{proc.stderr.decode('utf-8', 'replace').strip()}; nothing was changed")


def resolve_upstream(top: Path, upstream: Optional[str], fetch: bool = True) -> tuple[str, str, bool]:
    """``(name, commit, fetched)`` of the branch to sync with.

    ``upstream``: a remote (its default branch), ``remote/branch``, or a local
    ref; None: the current branch's upstream (but the remote's default branch
    when that upstream is the branch's own pushed copy), else origin's default branch.

    Raises UsageError when the name is no branch or commit, or no upstream can be told;
    EnvironmentError_ when the fetch fails.
    """
    remotes = _remotes(top)
    name = upstream
    remote: Optional[str] = None
    if name is None:
        proc = git.run(["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}"], top, check=False)
        tracked = proc.stdout.decode().strip() if proc.returncode == 0 else ""
        here = git.run(["rev-parse", "--abbrev-ref", "HEAD"], top, check=False).stdout.decode().strip()
        own_copy = "/" in tracked and tracked.split("/", 1)[0] in remotes \
            and tracked.split("/", 1)[1] == here
        if own_copy:
            # A branch pushed with -u tracks its own copy on the server, which is not
            # what it is merged into: sync with that remote's default branch.
            name = tracked.split("/", 1)[0]
        elif tracked:
            name = tracked
        elif "origin" in remotes:
            name = "origin"
        else:
            raise UsageError("no upstream: name one (`kb sync origin/main`), or set the branch's "
                             "upstream (`git branch -u origin/main`)")
    if name in remotes:
        remote = name
    elif "/" in name and name.split("/", 1)[0] in remotes:
        remote = name.split("/", 1)[0]
    fetched = False
    if remote is not None and fetch:
        _fetch(top, remote)
        fetched = True
    if name == remote:
        ref = git.remote_default(top, remote)
        if ref is None:
            raise UsageError(f"cannot tell the default branch of {remote}; name it "
                             f"(`kb sync {remote}/main`)")
        name = ref.removeprefix("refs/remotes/")
    commit = git.rev_parse(name, top)
    if commit is None:
        raise UsageError(f"{name!r} is not a branch or commit here")
    return name, commit, fetched


def _dirty(top: Path) -> list[str]:
    out = git.run(["status", "--porcelain=v1", "-z", "--untracked-files=no"], top).stdout
    return [rec[3:] for rec in git.split_z(out) if len(rec) > 3]


def sync(start: Path, upstream: Optional[str] = None, *, dry_run: bool = False,
         fetch: bool = True, on_wait: Any = None) -> SyncResult:
    """Run ``kb sync`` for the KB containing ``start``; see the module docstring.

    Raises RefusedError (exit 1: dirty tree, merge in progress, a renumbered
    file that would not parse), UsageError (no upstream) and
    EnvironmentError_ (fetch failed or timed out).
    """
    from kb.merge.markers import cache_path, refuse_if_conflicted
    from kb.repo import open_kb

    k = open_kb(start)
    top = k.top
    refuse_if_conflicted(top, "", "kb sync changes", cache=cache_path(top, ""))
    dirty = _dirty(top)
    if dirty and not dry_run:
        raise ConflictError(f"the work tree has uncommitted changes ({', '.join(dirty[:5])}"
                           f"{', …' if len(dirty) > 5 else ''}); commit or stash them first — "
                           "kb sync changed nothing")
    name, target, fetched = resolve_upstream(top, upstream, fetch)
    res = SyncResult(upstream=name, upstream_commit=target, dry_run=dry_run, fetched=fetched)
    head = git.rev_parse("HEAD", top)
    if head is None:
        raise RefusedError("this branch has no commit yet; nothing to sync")
    if not dry_run:
        from kb.merge.drivers import register

        res.drivers = register(top)
        res.attributes_commit = _attributes(k, target, on_wait)
        res.attributes_changed = res.attributes_commit is not None
        if res.attributes_changed:  # committed: the renumbering goes on top of it
            head = git.rev_parse("HEAD", top) or head
    mb = git.run(["merge-base", head, target], top, check=False).stdout.decode().strip() or None
    plan = _plan(k, head, target, mb, name, res)
    if dry_run:
        if plan is not None and plan.ids:
            _renumbered(k, head, mb, target, plan, res)  # refused as the real run would be
        return res
    # Before the merge: does this side keep TRAIL.md rendered? Asked (a replay of the log)
    # only when a merge commit can come of it: neither side holds the other.
    trail_fresh = mb not in (head, target) and _trail_fresh(k)
    if plan is not None and plan.ids:
        res.renumber_commit = _renumber_commit(k, head, mb, target, plan, name, res, on_wait)
    _merge(k, target, name, res)
    if res.conflicts:
        return res
    _dashboard(k, res, on_wait)
    if trail_fresh and res.merge == "merged":
        _trail(k, res, on_wait)
    _verify(k, target, res)
    return res


def _attributes(k: Any, target: str, on_wait: Any) -> Optional[str]:
    """Commit the driver lines the KB's ``.gitattributes`` lacks for its own layout and
    upstream ``target``'s (one transaction); the commit, or None when it named them all
    already."""
    from kb.checks.targets import config_at
    from kb.merge.drivers import attribute_lines, card_folders
    from kb.ops.transaction import Transaction

    path = k.root / ".gitattributes"
    try:
        old = read_regular(path) if path.exists() else b""
    except OSError as exc:
        from kb.errors import os_failure

        raise os_failure(exc, f"read {k.prefix}.gitattributes", "nothing was merged") from None
    have = {ln.strip() for ln in old.decode("utf-8", "replace").splitlines()}
    # this side's layout, and the upstream's when its kb.toml moved a file (tree.md ->
    # hyp.md): git merges the renamed file at the upstream's path, by that path's driver
    theirs = config_at(k, target)
    lines: list[str] = []
    for cfg in (k.config, theirs) if theirs is not None else (k.config,):
        lines += [ln for ln in attribute_lines(cfg.paths["tree"], cfg.paths["dashboard"], cfg.paths["logs"],
                                               **card_folders(cfg.paths)) if ln not in lines]
    missing = [ln for ln in lines if ln not in have]
    if not missing:
        return None
    sep = b"" if old.endswith(b"\n") or not old else b"\n"
    new = old + sep + ("\n".join(missing) + "\n").encode("utf-8")
    with Transaction(k, "sync.attributes", summary="kb sync: name kb's merge drivers in .gitattributes",
                     on_wait=on_wait) as tx:
        tx.write(".gitattributes", new)
    return tx.result.commit if tx.result is not None else None


def _plan(k: Any, head: str, target: str, mb: Optional[str], name: str, res: SyncResult) -> Any:
    from contextlib import ExitStack

    from kb.checks.targets import open_index
    from kb.checks.unread_records import commit_facts
    from kb.merge.collide import find_collisions, lights
    from kb.merge.entry_collide import entry_moves, find_entry_collisions
    from kb.merge.renumber import Plan, plan, plan_entries

    if mb == target:
        return None  # the upstream is already in this branch
    # each side as its own kb.toml places its files (upstream moved tree.md to hyp.md:
    # its hypotheses are there, and collide with the branch's in tree.md)
    with open_index(k) as idx, ExitStack() as stack:
        tip_f = stack.enter_context(commit_facts(idx, k, head, head[:10]))
        tgt_f = stack.enter_context(commit_facts(idx, k, target, name))
        base_f = stack.enter_context(commit_facts(idx, k, mb, mb[:10])) if mb else None
        found = find_collisions(tip_f, base_f, tgt_f)
        res.collisions = [{"id": c.id, "kind": c.kind, "ours": f"{k.prefix}{c.ours.path}:{c.ours.line}",
                           "theirs": f"{k.prefix}{c.theirs.path}:{c.theirs.line}"} for c in found]
        entries = find_entry_collisions(tip_f, base_f, tgt_f)
        res.collisions += [{"id": c.key, "kind": "entry", "ours": f"{k.prefix}{c.path}:{c.line}",
                            "theirs": f"{k.prefix}{c.their_path}:{c.their_line}"} for c in entries]
        if not found and not entries:
            return None
        moves = entry_moves(tip_f, base_f, tgt_f, entries) if entries and base_f is not None else []
        tip_l, tgt_l = lights(tip_f), lights(tgt_f)
        base_ids = {key for key in lights(base_f)} if base_f is not None else set()
        taken: dict[str, set[str]] = {"hypothesis": set(), "experiment": set(), "card": set()}
        for (ns, oid), x in list(tip_l.items()) + list(tgt_l.items()):
            group = x.kind if x.kind in ("hypothesis", "experiment") else "card"
            taken[group].add(oid)
        branch_hyps = [x.id for key, x in tip_l.items() if x.kind == "hypothesis" and key not in base_ids]
    p = plan(found, branch_hyps, taken) if found else Plan()
    plan_entries(p, moves)
    res.renumbered = dict(p.ids)
    return p


def _renumbered(k: Any, head: str, mb: Optional[str], target: str, p: Any,
                res: SyncResult) -> dict[str, Optional[bytes]]:
    """The files the renumbering writes (KB path -> bytes, None: removed), each Markdown file
    through the format guard (a card it would leave with a format error is refused, exit 1,
    before anything is written: the dry run says so too); the exploration graph's refs it
    leaves go to ``res.refs_left``."""
    from kb.checks.changes import records_prefix
    from kb.merge.renumber import is_trail_log, refs_left, rewrite
    from kb.ops.transaction import format_guard

    rng = [mb, head] if mb else [git.EMPTY_TREE, head]
    changed = [k.rel(x) for x in git.split_z(git.run(
        ["diff", "--name-only", "-z", "--no-renames", "--diff-filter=AM", *rng, "--",
         k.prefix or "."], k.top).stdout)]
    changed = [c for c in changed if c is not None]
    records = records_prefix(k.config)
    logs = [c for c in changed if is_trail_log(c)]
    # Records and the exploration graph's log files are append-only: one the upstream
    # holds too is not the branch's to rewrite.
    shared = _held_by(k, target, [c for c in changed if c.startswith(records)] + logs)
    blobs = _blobs(k, head, changed)
    left = refs_left({rel: blobs[rel] for rel in logs if rel in blobs}, shared, p)
    res.refs_left = [{"node": x.node, "path": k.prefix + x.path, "ref": x.ref, "old": x.old,
                      "new": x.new} for x in left]
    changed = [c for c in changed if c not in shared]
    # the merge base's Markdown: only the lines the branch wrote are renumbered
    base_md = _blobs(k, mb, [c for c in changed if c.endswith(".md")]) if mb else {}
    files = rewrite(changed, blobs.get, p, records=records, before=base_md.get)
    for rel, data in files.items():
        if data is not None and rel.endswith(".md"):  # records are JSON: no format to guard
            format_guard(k, rel, blobs.get(rel), data)
    return files


def _renumber_commit(k: Any, head: str, mb: Optional[str], target: str, p: Any, name: str,
                     res: SyncResult, on_wait: Any) -> str:
    """The one renumber commit (see the module docstring for its guarantees)."""
    from kb.ops.transaction import acquire_write_lock, release_write_lock

    files = _renumbered(k, head, mb, target, p, res)
    trailers = "\n".join(f"Kb-Renumber: {t}" for t in p.trailers())
    pairs = ", ".join(f"{a} -> {b}" for a, b in p.ids.items())
    message = (f"kb sync: renumber {pairs} (taken on {name})\n\nKb-Op: sync.renumber\n{trailers}\n")
    lock = acquire_write_lock(git.common_dir(k.top), "sync", on_wait)
    try:
        if git.rev_parse("HEAD", k.top) != head:
            raise ConflictError("HEAD moved while kb sync was planning; run it again (nothing was written)")
        tree = _tree_with(k, head, files)
        commit = git.commit_tree(k.top, tree, [head], message)  # signed as git would sign
        # kb's plumbing commits leave stat data stale; read-tree -m wants it fresh.
        git.run(["update-index", "-q", "--refresh"], k.top, write=True, check=False)
        git.run(["read-tree", "-m", "-u", head, commit], k.top, write=True)
        proc = git.run(["update-ref", "-m", "kb sync: renumber", "HEAD", commit, head], k.top,
                       write=True, check=False)
        if proc.returncode != 0:
            git.run(["read-tree", "-m", "-u", commit, head], k.top, write=True, check=False)
            raise ConflictError("HEAD moved while kb sync was committing; nothing was changed — "
                               "run it again")
    finally:
        release_write_lock(lock)
    return commit


def _held_by(k: Any, commit: str, rels: list[str]) -> set[str]:
    """Those of the KB-relative ``rels`` that ``commit``'s tree holds."""
    if not rels:
        return set()
    out = git.run(["ls-tree", "-z", "--name-only", commit, "--", *(k.prefix + r for r in rels)],
                  k.top).stdout
    return {r for r in (k.rel(x) for x in git.split_z(out)) if r is not None}


def _blobs(k: Any, commit: str, rels: list[str]) -> dict[str, bytes]:
    """The bytes of those of the KB-relative ``rels`` that ``commit`` holds as files
    (one ``ls-tree``, one batch read)."""
    if not rels:
        return {}
    out = git.run(["ls-tree", "-r", "-z", commit, "--", *(k.prefix + r for r in rels)],
                  k.top).stdout
    ids: dict[str, str] = {}
    for e in git.tree_entries(out):
        rel = k.rel(e.path)
        if e.type == "blob" and rel is not None:
            ids[rel] = e.oid
    data = git.read_blobs(ids.values(), k.top)
    return {rel: data[b] for rel, b in ids.items() if b in data}


def _tree_with(k: Any, head: str, files: dict[str, Optional[bytes]]) -> str:
    """HEAD's tree with ``files`` written (None: removed), through a temporary index."""
    with tempfile.TemporaryDirectory(prefix="kb-sync-") as d:
        env = {"GIT_INDEX_FILE": str(Path(d) / "index")}
        git.run(["read-tree", head], k.top, write=True, env=env)
        info = []
        for rel, data in sorted(files.items()):
            path = k.prefix + rel
            if data is None:
                info.append(f"0 {'0' * 40}\t{path}\0")
                continue
            blob = git.out(["hash-object", "-w", "--stdin", f"--path={path}"], k.top, write=True,
                           input=data)
            info.append(f"100644 {blob}\t{path}\0")
        git.run(["update-index", "-z", "--index-info"], k.top, write=True, env=env,
                input="".join(info).encode("utf-8", "surrogateescape"))
        return git.out(["write-tree"], k.top, write=True, env=env)


def _merge(k: Any, target: str, name: str, res: SyncResult) -> None:
    head = git.rev_parse("HEAD", k.top)
    base = git.run(["merge-base", head or "", target], k.top, check=False).stdout.decode().strip()
    if base == target:
        res.merge = "up to date"
        return
    # Its output is read (kb.ops.sync_output): git's messages in English, whatever the
    # user's language; the hooks and merge drivers it runs inherit that.
    from kb.ops.sync_moves import carry_tree_move, conclude, merge_options

    # (a [paths] move of a side: files the other added under the old folder follow it)
    opts = merge_options(k, head or "", target, base)
    proc = git.run([*opts, "merge", "--no-edit", "-m", f"Merge {name} (kb sync)", target], k.top,
                   write=True, check=False, env={"GIT_TERMINAL_PROMPT": "0"}, in_english=True)
    text = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    if proc.returncode != 0 and opts and git.rev_parse("MERGE_HEAD", k.top) is not None:
        from kb.merge.markers import unmerged_paths

        # git lost the moved tree (past its rename detection): kb merges it where it went
        moved = carry_tree_move(k, head or "", target, base, unmerged_paths(k.top))
        if moved is not None:
            done, said = conclude(k.top)
            text += said
            if done:
                res.notes.append(f"kb sync: {k.prefix}{moved} merged hypothesis by hypothesis "
                                 "across the [paths] tree move")
                res.merge, res.merge_commit = "merged", git.rev_parse("HEAD", k.top)
                return
    if proc.returncode == 0:
        # What kb's drivers said of the files they merged (a report kept from our side: run
        # `kb report`) is for the user, as a plain `git merge` shows it.
        res.notes = driver_notes(text)
        new = git.rev_parse("HEAD", k.top)
        # A fast-forward moved HEAD to the upstream's commit (which may itself be a merge:
        # its parents say nothing of what this merge did); a merge made a commit of its own.
        res.merge = "fast-forward" if base == head and new == git.rev_parse(target, k.top) \
            else "merged"
        res.merge_commit = new
        return
    from kb.merge.markers import unmerged_paths

    files = unmerged_paths(k.top)
    if hook_refused(text, files, git.rev_parse("MERGE_HEAD", k.top) is not None):
        res.merge = "refused"  # every path merged: nothing to resolve, the hook's reasons
        res.conflicts = refusal_lines(text)
    else:
        res.merge = "conflict"
        res.conflicts = conflict_lines(text, files)
    # `git merge --abort` (reset --merge): the index and work tree back at HEAD, which the
    # clean-tree check made safe; without MERGE_HEAD (git stopped before merging) a no-op.
    git.run(["merge", "--abort"], k.top, write=True, check=False)
    if git.rev_parse("MERGE_HEAD", k.top) is not None:
        res.conflicts.append("git merge --abort left the merge in progress; run it yourself")


def _dashboard(k: Any, res: SyncResult, on_wait: Any) -> None:
    from kb.ops.dashboard import is_stale, refresh_dashboard
    from kb.repo import open_kb

    k2 = open_kb(k.root)
    try:
        stale = is_stale(k2)
    except RefusedError as exc:
        # A file the dashboard reads has format errors (a forge merge that kept two `## H7:`
        # headings): the sync's merge stands, only the dashboard waits. Said as what is
        # left to do, not as the dashboard's refusal alone (which read as if sync had failed).
        res.notes.append(f"kb sync: the merge stands, but DASHBOARD.md was not regenerated: {exc}; "
                         "fix the file (`kb verify` lists its errors: an ID declared twice is "
                         "renumbered by hand), then run `kb dashboard`")
        return
    if stale:
        out = refresh_dashboard(k2, on_wait=on_wait)
        res.dashboard_commit = getattr(out, "commit", None)
    # the dashboard is current now: the merge driver's "run `kb dashboard` after the merge"
    # is done already
    said = f"kb merge: {k.prefix}{k2.config.paths['dashboard']}:"
    res.notes = [n for n in res.notes if not n.startswith(said)]


def _trail_fresh(k: Any) -> bool:
    """Whether TRAIL.md exists and is what ``kb trail render`` gives for the log in the
    work tree (``kb trail render --check`` clean); an unreadable one counts as stale."""
    from kb.trail.files import TRAIL_FILE
    from kb.trail.render import is_stale
    from kb.trail.replay import load

    path = k.root / TRAIL_FILE
    try:
        have = read_regular(path) if path.is_file() else None
    except OSError:
        return False
    return have is not None and is_stale(load(k), have) is None


def _trail(k: Any, res: SyncResult, on_wait: Any) -> None:
    """Render TRAIL.md from the merged log when stale (one ``trail.render`` transaction,
    as ``kb trail render`` writes it)."""
    from kb.ops.transaction import Transaction
    from kb.repo import open_kb
    from kb.trail.files import TRAIL_FILE
    from kb.trail.render import file_bytes, render
    from kb.trail.replay import load

    k2 = open_kb(k.root)
    if _trail_fresh(k2) or not (k2.root / TRAIL_FILE).is_file():
        return
    with Transaction(k2, "trail.render", summary="kb sync: render TRAIL.md from the merged log",
                     on_wait=on_wait) as tx:
        old = tx.read(TRAIL_FILE)
        data = file_bytes(render(load(k2)), old)
        if old is not None and data != old:
            tx.write(TRAIL_FILE, data)
    if tx.result is not None and tx.result.paths:
        res.trail_commit = tx.result.commit


def _verify(k: Any, target: str, res: SyncResult) -> None:
    from kb.checks.verify_range import verify_commit_range

    try:
        report = verify_commit_range(k.root, target, "HEAD", k.root)
    except GitError as exc:  # pragma: no cover - environment
        res.findings = [{"message": str(exc)}]
        return
    res.findings = [f.as_dict() for f in report.blocking]
