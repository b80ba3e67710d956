"""What ``kb merge-driver`` does when git calls it (``%O %A %B %P``).

git runs a merge driver from the top of the work tree with three temporary
files — the common ancestor ``%O``, ours ``%A`` (the result is written
there) and theirs ``%B`` — and the path ``%P`` being merged. Exit 0 means
merged; anything else leaves the file conflicted (with what was written to
``%A``). :func:`run_driver` returns ``(exit code, messages)``; it never prints.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Optional

from kb import git
from kb.config import Config

#: In-progress state files naming the commit being merged in, in git's precedence.
THEIRS_HEADS = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD")


def _kb_for(top: Path, repo_path: str) -> tuple[Optional[Path], Config]:
    """The KB folder holding ``repo_path`` and its config (defaults when none)."""
    from kb.config import config_from_dict, load_config
    from kb.errors import KbError

    d = (top / repo_path).parent
    while True:
        if (d / "kb.toml").is_file():
            try:
                return d, load_config(d)
            except KbError:
                break
        if d == top or d.parent == d:
            break
        d = d.parent
    return None, config_from_dict(top, {})


def line_merge(ours: Path, base: Path, theirs: Path) -> int:
    """git's own line merge into ``ours`` (the fallback); its exit code (0 clean)."""
    proc = subprocess.run(["git", "merge-file", "-L", "ours", "-L", "base", "-L", "theirs",
                           str(ours), str(base), str(theirs)], capture_output=True)
    return 0 if proc.returncode == 0 else 1


def run_driver(kind: str, base: Path, ours: Path, theirs: Path, repo_path: str,
               cwd: Path) -> tuple[int, list[str]]:
    """Merge ``repo_path`` as driver ``kind`` (``tree`` | ``dashboard`` | ``trail`` |
    ``report`` | ``card``).

    Returns ``(0, [])`` when merged, ``(1, messages)`` for a conflict left in ``ours``,
    ``(2, [why])`` for an unknown kind or a file git gave that cannot be read or
    written (no permission, a full disk): git then leaves the path conflicted.
    """
    try:
        return _run_driver(kind, base, ours, theirs, repo_path, cwd)
    except OSError as exc:
        from kb.errors import os_failure

        return 2, [str(os_failure(exc, f"merge {repo_path}", "git leaves it conflicted"))]


def _run_driver(kind: str, base: Path, ours: Path, theirs: Path, repo_path: str,
                cwd: Path) -> tuple[int, list[str]]:
    top = git.toplevel(cwd) or cwd
    root, config = _kb_for(top, repo_path)
    if kind == "tree":
        return _tree(base, ours, theirs, repo_path, config)
    if kind == "dashboard":
        return _dashboard(top, root, base, ours, theirs, repo_path, config)
    if kind == "trail":
        return _trail(top, root, base, ours, theirs, repo_path)
    if kind == "report":
        return _report(top, root, base, ours, theirs, repo_path, config)
    if kind == "card":
        return _card(base, ours, theirs, repo_path, top)
    return 2, [f"unknown merge driver kind {kind!r} (tree, dashboard, trail, report or card)"]


def _tree(base: Path, ours: Path, theirs: Path, repo_path: str, config: Config) -> tuple[int, list[str]]:
    from kb.merge.tree import Unmergeable, merge_trees

    try:
        res = merge_trees(base.read_bytes(), ours.read_bytes(), theirs.read_bytes(), config, repo_path)
    except Unmergeable as exc:
        rc = line_merge(ours, base, theirs)
        return rc, [f"{repo_path}: merged line by line ({exc})"] + (
            [f"{repo_path}: conflict left for you to resolve"] if rc else [])
    ours.write_bytes(res.data)
    if res.conflicts:
        return 1, [f"{repo_path}: {c}" for c in res.conflicts]
    return 0, []


def _card(base: Path, ours: Path, theirs: Path, repo_path: str, top: Path) -> tuple[int, list[str]]:
    """A problem card: its ``被依赖`` line settled from both sides
    (:func:`kb.merge.card.settle_derived`), then git's line merge of the rest; when that
    conflicts, the entries each side added kept whole (:func:`kb.merge.card.merge_entries`:
    ``kb sync`` numbered ours above theirs)."""
    from kb.merge.card import conflict_regions, merge_entries, settle_derived

    versions = [base.read_bytes(), ours.read_bytes(), theirs.read_bytes()]
    settled = settle_derived(*versions)
    if settled is not None:
        # git's temporary files are ours to rewrite: %A receives the result anyway.
        for f, data in zip((base, ours, theirs), settled):
            f.write_bytes(data)
        versions = list(settled)
    rc = line_merge(ours, base, theirs)
    if not rc:
        return 0, []
    kept = merge_entries(*versions)
    if kept.data is not None:
        ours.write_bytes(kept.data)
        if not kept.conflicted:
            return 0, []
    clash = kept.clash
    where = "; ".join(conflict_regions(ours.read_bytes())) or "conflict markers"
    msg = (f"{repo_path}: both sides changed the same lines ({where}); resolve the conflict "
           "markers there (ours first, then theirs)")
    if clash:
        msg += (f"; both sides added {', '.join(clash)} with other text: `{_abort(top)}`, "
                "then `kb sync` renumbers this side's entry and what names it")
    elif kept.conflicted:
        msg += " (the entries both sides added are kept, outside the markers)"
    return rc, [msg]


def _abort(top: Path) -> str:
    """How to abort the git operation running this driver: a rebase or a cherry-pick names
    its state file while it merges; a merge writes MERGE_HEAD only after the files."""
    from kb.merge.markers import operation_in_progress

    op = operation_in_progress(top)
    if op is not None and op[0].startswith("rebase"):
        return "git rebase --abort"
    if op is not None and op[0] in ("CHERRY_PICK_HEAD", "REVERT_HEAD"):
        return f"git {'cherry-pick' if op[0] == 'CHERRY_PICK_HEAD' else 'revert'} --abort"
    return "git merge --abort"


def _rev_bytes(top: Path, rev: str, path: str) -> Optional[bytes]:
    proc = git.run(["cat-file", "blob", f"{rev}:{path}"], top, check=False)
    return proc.stdout if proc.returncode == 0 else None


def _theirs_and_base(top: Path) -> Optional[tuple[str, str]]:
    """(commit being merged in, merge base): ``git merge`` names the commit in a
    ``GITHEAD_<sha>`` variable for its strategies (MERGE_HEAD is written only
    after the files are merged); a rebase names the commit it replays in its
    ``done`` list (:func:`_rebase_pick`); a cherry-pick or revert left in progress by
    an earlier conflict has its state file."""
    import os

    heads = [k[len("GITHEAD_"):] for k in os.environ if k.startswith("GITHEAD_")]
    if len(heads) == 1 and git.rev_parse(heads[0], top):
        mb = git.run(["merge-base", "HEAD", heads[0]], top, check=False)
        base = mb.stdout.decode().strip()
        return (heads[0], base) if base else None
    gd = git.git_dir(top)
    picked = _rebase_pick(gd / "rebase-merge" / "done", top)
    if picked is not None:
        return picked
    for name in THEIRS_HEADS:
        f = gd / name
        if f.is_file():
            try:
                theirs = f.read_text(encoding="utf-8").split()[0]
            except (OSError, ValueError, IndexError):  # unreadable, not text, empty
                continue
            if name == "MERGE_HEAD":
                mb = git.run(["merge-base", "HEAD", theirs], top, check=False)
                base = mb.stdout.decode().strip()
            else:
                base = git.rev_parse(f"{theirs}^", top) or ""
            return (theirs, base) if base else None
    return None


#: The commands of a rebase's todo list that replay one commit (long and short forms).
_PICKS = frozenset(("pick", "p", "reword", "r", "edit", "e", "squash", "s", "fixup", "f"))


def _rebase_pick(done: Path, top: Path) -> Optional[tuple[str, str]]:
    """(commit being replayed, its parent) during a rebase (``git pull --rebase``,
    ``git rebase``): the sequencer has moved the command it runs to the end of
    ``rebase-merge/done`` when it calls the drivers (a cherry-pick's base is the picked
    commit's parent). None when no rebase runs or its last command picks no commit."""
    try:
        lines = done.read_text(encoding="utf-8").splitlines() if done.is_file() else []
    except (OSError, ValueError):  # unreadable, not text: as when no rebase runs
        return None
    words = lines[-1].split() if lines else []
    if len(words) < 2 or words[0] not in _PICKS:
        return None
    if words[1] in ("-C", "-c") and len(words) > 2:  # `fixup -C <commit>`
        words = words[1:]
    theirs = git.rev_parse(words[1], top)
    base = git.rev_parse(f"{words[1]}^", top) if theirs else None
    return (theirs, base) if theirs and base else None


def _dashboard(top: Path, root: Optional[Path], base: Path, ours: Path, theirs: Path,
               repo_path: str, config: Config) -> tuple[int, list[str]]:
    """Regenerate DASHBOARD.md from what the merged tree and experiments will be.

    The tree is merged in memory with the tree driver's rules from the three
    commits (HEAD, the commit being merged, their merge base); experiments are
    taken from the side that changed them; ``## Next Steps`` from the side that
    changed it. When that cannot be worked out (no commit being merged, the
    tree itself conflicts), our side is kept and ``kb verify`` reports it
    stale until ``kb dashboard`` runs.
    """
    from kb.merge.tree import Unmergeable, merge_trees
    from kb.parse import parse_file
    from kb.render.dashboard import render_dashboard

    keep = (0, [f"{repo_path}: kept our side; run `kb dashboard` after the merge"])
    pair = _theirs_and_base(top)
    if pair is None or root is None:
        return keep
    their_rev, base_rev = pair
    prefix = _prefix(top, root)
    tree_path = prefix + config.paths["tree"]
    trees = [_rev_bytes(top, r, tree_path) for r in (base_rev, "HEAD", their_rev)]
    if trees[1] is None or trees[2] is None:
        return keep
    try:
        merged = merge_trees(trees[0] or b"", trees[1], trees[2], config, config.paths["tree"])
    except Unmergeable:
        return keep
    if merged.conflicts:
        return keep
    hyps = [o for o in parse_file(config.paths["tree"], merged.data, config, fmt="tree").objects
            if o.kind == "hypothesis"]
    exps = _merged_experiments(top, prefix + config.paths["experiments"].strip("/") + "/",
                               base_rev, their_rev, config, prefix)
    steps, newline, bom = _next_steps(base.read_bytes(), ours.read_bytes(), theirs.read_bytes(),
                                      config.paths["dashboard"])
    text = render_dashboard(hyps, exps, steps, config.locale, newline)
    ours.write_bytes((("\ufeff" if bom else "") + text).encode("utf-8"))
    return 0, []


def _prefix(top: Path, root: Path) -> str:
    """The KB folder ``root`` as a path prefix in the repository (``""`` at its top)."""
    if root.resolve() == top.resolve():
        return ""
    return root.resolve().relative_to(top.resolve()).as_posix() + "/"


def _trail(top: Path, root: Optional[Path], base: Path, ours: Path, theirs: Path,
           repo_path: str) -> tuple[int, list[str]]:
    """Render TRAIL.md from the exploration log the merge will hold.

    The log's files are only ever added, each under a name no other writer picks
    (:mod:`kb.trail.log`), so git merges the log without conflict: it is the files of
    the two commits, each taken from the side that changed it (:func:`_merged_listing`).
    When the commit being merged cannot be told, our side is kept (``kb verify`` reports
    it stale, KB241, until ``kb trail render``); a TRAIL.md that is not a KB's own (no
    ``kb.toml`` above it, or not at the KB root) is git's to merge line by line.
    """
    from kb.trail.files import TRAIL_FILE
    from kb.trail.log import OPS_DIR
    from kb.trail.render import file_bytes, render
    from kb.trail.replay import replay_blobs

    prefix = _prefix(top, root) if root is not None else None
    if prefix is None or repo_path != prefix + TRAIL_FILE:
        return line_merge(ours, base, theirs), []
    pair = _theirs_and_base(top)
    if pair is None:
        return 0, [f"{repo_path}: kept our side; run `kb trail render` after the merge"]
    chosen = _merged_listing(top, prefix + OPS_DIR + "/", pair[1], pair[0])
    blobs = git.read_blobs(list(set(chosen.values())), top)
    logs = {path[len(prefix):]: blobs[blob] for path, blob in chosen.items()
            if path.endswith(".jsonl") and blob in blobs}
    ours.write_bytes(file_bytes(render(replay_blobs(logs)), ours.read_bytes()))
    return 0, []


def _report(top: Path, root: Optional[Path], base: Path, ours: Path, theirs: Path,
            repo_path: str, config: Config) -> tuple[int, list[str]]:
    """Keep our side of the project report (``kb report``), with a hint to refresh it.

    The report is built from the whole KB (cards, verification records) and carries a
    date: a driver cannot rebuild it mid-merge, and it is a view (nothing is lost). Our
    bytes are already in ``ours``. A file that is not a KB's own report (no ``kb.toml``
    above it, or not at ``<logs>/报告.md`` of its KB) is git's to merge line by line.
    """
    from kb.merge.drivers import report_path

    if root is None or repo_path != _prefix(top, root) + report_path(config.paths["logs"]):
        return line_merge(ours, base, theirs), []
    return 0, [f"{repo_path}: kept our side (both sides changed it); run `kb report` to refresh it"]


def _listing(top: Path, rev: str, folder: str) -> dict[str, str]:
    data = git.run(["ls-tree", "-r", "-z", rev, "--", folder], top, check=False).stdout
    return {e.path: e.oid for e in git.tree_entries(data)}


def _merged_listing(top: Path, folder: str, base_rev: str, their_rev: str) -> dict[str, str]:
    """Path -> blob of the files under ``folder`` that the merge of HEAD and ``their_rev``
    will hold: each file from the side that changed it since ``base_rev`` (ours when both
    did: git reports that conflict itself). A file removed on our side only is left out,
    one removed on theirs only is kept (unlike git; the log's files are never removed)."""
    b, o, t = (_listing(top, r, folder) for r in (base_rev, "HEAD", their_rev))
    chosen: dict[str, str] = {}
    for path in sorted(set(o) | set(t)):
        ob, tb, bb = o.get(path), t.get(path), b.get(path)
        pick = ob if (tb is None or tb == bb) else (tb if (ob is None or ob == bb) else ob)
        if pick is not None:
            chosen[path] = pick
    return chosen


def _merged_experiments(top: Path, folder: str, base_rev: str, their_rev: str, config: Config,
                        prefix: str) -> list:
    from kb.parse import parse_file

    chosen = _merged_listing(top, folder, base_rev, their_rev)
    blobs = git.read_blobs(list(set(chosen.values())), top)
    exps = []
    for path, blob in sorted(chosen.items()):
        rel = path[len(prefix):]
        if not rel.endswith(".md") or blob not in blobs:
            continue
        exps.extend(x for x in parse_file(rel, blobs[blob], config, fmt="experiment").objects
                    if x.kind == "experiment")
    return exps


def _next_steps(base: bytes, ours: bytes, theirs: bytes, rel: str) -> tuple[Optional[list[str]], str, bool]:
    from kb.parse.dashboard import next_steps
    from kb.text import DecodeError, SourceText, decode

    def read(data: bytes) -> tuple[Optional[list[str]], str, bool]:
        try:
            text, bom = decode(data, rel)
        except DecodeError:
            return None, "\n", False
        src = SourceText.from_text(text, rel, bom)
        return next_steps(src), src.newline, bom

    b, o, t = read(base), read(ours), read(theirs)
    steps = t[0] if o[0] == b[0] else o[0]
    return steps, o[1], o[2]
