"""Committing a transaction's files: what ``git commit --only -- <paths>`` does.

:class:`kb.ops.transaction.Transaction` calls, under kb's write lock:

1. :func:`read_head` — HEAD, the hooks folder, HEAD's folders on the paths'
   way and the paths' index entries, read once;
2. :func:`check_clean` — refuse a path with uncommitted changes (proven
   clean without ``git status`` when it can be);
3. :func:`commit_paths` — one commit of exactly those paths: through
   ``git commit --only`` when a commit hook would run (hooks see kb's commits
   like any other), else from plumbing (same commit, a fraction of the time);
   HEAD moves by compare-and-swap from the HEAD read in step 1.

docs/DECISIONS.md ("Write transactions") gives the measurements behind the
plumbing path. Paths are repository-relative (the KB may be a subfolder).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from kb import git
from kb.errors import ConflictError, GitError, RefusedError

_COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit")

Entry = tuple[str, str, str]  # ls-tree's (mode, type, id)


@dataclass
class HeadState:
    """What one commit reads of HEAD and the index, once, under the write lock.

    ``commit`` is HEAD's id (None when unborn); ``hooks`` the hooks folder
    (``core.hooksPath`` respected); ``dirs`` HEAD's listing of every folder on
    the paths' way (repository folder, '' for the top -> name -> (mode, type,
    id)); ``index`` the index entries of the paths ((mode, id, stage) each);
    ``stray`` is True when the index listed an entry under another path (the
    path is a folder in the index).
    """

    commit: str | None
    hooks: Path
    dirs: dict[str, dict[str, Entry]]
    index: dict[str, list[tuple[str, str, str]]]
    stray: bool = False

    def entry(self, path: str) -> Entry | None:
        """HEAD's (mode, type, id) of repository path ``path``, or None."""
        folder, _, name = path.rpartition("/")
        return self.dirs.get(folder, {}).get(name)


def read_head(top: Path, paths: list[str]) -> HeadState:
    """HEAD, the hooks folder, HEAD's folders on the way to ``paths`` and their index entries.

    ``ls-files`` reads the index while one ``rev-parse`` resolves HEAD and the
    hooks folder and ``ls-tree`` lists the folders (non-recursive: ``.`` is
    the top, ``dir/`` one folder; ``-t`` shows the folders it descends into).
    Pathspecs are literal: a file named ``:x`` or ``a*`` is that file.
    Raises GitError when git fails.
    """
    ls_args = ["--literal-pathspecs", "ls-files", "-s", "-z", "--", *paths]
    listing = git.start(ls_args, top)
    folders = _folders(paths)
    dirs: dict[str, dict[str, Entry]] = {d: {} for d in folders}
    try:
        proc = git.run(["rev-parse", "--git-path", "hooks", "--verify", "--quiet", "HEAD^{commit}"],
                       top, check=False)
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if not lines:
            msg = proc.stderr.decode("utf-8", "replace").strip()
            raise GitError(f"git rev-parse failed: {msg}", msg)
        hooks = Path(lines[0])
        commit = lines[1].strip() if proc.returncode == 0 and len(lines) > 1 else None
        if commit:
            args = ["--literal-pathspecs", "ls-tree", "-t", "-z", commit, "--", ".",
                    *(d + "/" for d in folders if d)]
            for mode, kind, oid, p in git.tree_entries(git.run(args, top).stdout):
                folder, _, name = p.rpartition("/")
                if folder in dirs:
                    dirs[folder][name] = (mode, kind, oid)
            for d in folders:  # a folder of HEAD was listed (kb rebuilds it from that listing)
                parent, _, name = d.rpartition("/")
                seen = dirs[parent].get(name) if d else None
                if seen is not None and seen[1] == "tree" and not dirs[d] \
                        and seen[2] != git.EMPTY_TREE:
                    raise GitError(f"git ls-tree did not list {d}/ of HEAD", "")
    except BaseException:
        listing.kill()
        listing.communicate()
        raise
    index: dict[str, list[tuple[str, str, str]]] = {p: [] for p in paths}
    stray = False
    for rec in git.split_z(git.finish(listing, ls_args)):
        meta, _, p = rec.partition("\t")
        if p in index:
            mode, oid, stage = meta.split(" ")
            index[p].append((mode, oid, stage))
        else:
            stray = True
    return HeadState(commit, hooks if hooks.is_absolute() else top / hooks, dirs, index, stray)


# -- refusing dirty paths ------------------------------------------------------------------


def check_clean(top: Path, files: Mapping[str, Path], head: HeadState,
                old_ids: Mapping[str, str | None]) -> dict[str, str | None]:
    """Refuse dirty targets; return repo path -> HEAD blob (None when not in HEAD).

    ``files`` maps each repository path to its file on disk, ``old_ids`` to
    the blob id of the bytes there (None: no file). An untracked target
    (e.g. the tree of a KB just made by ``kb init``) is not refused: it is
    committed with the change. Raises RefusedError naming the dirty paths.

    Fast path, without ``git status`` (a tenth of a write on a large
    repository): a target is clean when its only index entry (stage 0) has
    HEAD's mode and blob and the bytes on disk (a regular file whose
    executable bit matches the mode) hash to that blob — then no user work
    can be in it. A target in neither HEAD nor the index is untracked or
    absent. Whatever this cannot prove (a filter such as ``core.autocrlf``
    between the disk and the blob, an intent-to-add entry, a conflict, a real
    change) is judged by ``git status``.
    """
    if head.stray or not all(_proven_clean(p, f, head, old_ids[p]) for p, f in files.items()):
        _refuse_dirty(top, list(files))
    return {p: e[2] if (e := head.entry(p)) is not None else None for p in files}


def _proven_clean(path: str, file: Path, head: HeadState, old_id: str | None) -> bool:
    staged = head.index.get(path, [])
    entry = head.entry(path)
    if not staged and entry is None:
        return True  # untracked or absent: `git status` shows at most `??`
    if entry is None or len(staged) != 1:
        return False
    mode, oid, stage = staged[0]
    if (stage != "0" or entry != (mode, "blob", oid) or mode not in ("100644", "100755")
            or old_id != oid):
        return False
    try:
        st = os.lstat(file)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & stat.S_IXUSR) == (mode == "100755")


def _refuse_dirty(top: Path, paths: list[str]) -> None:
    """The ``git status`` check: refuse when a path has uncommitted changes."""
    proc = git.run(["--literal-pathspecs", "status", "--porcelain=v1", "-z",
                    "--untracked-files=all", "--", *paths], top)
    dirty = []
    recs = list(git.split_z(proc.stdout))
    i = 0
    while i < len(recs):
        rec = recs[i]
        xy, path = rec[:2], rec[3:]
        if xy[0] in "RC":
            i += 1  # the next record is the rename source
        if xy != "??":
            dirty.append(path)
        i += 1
    if dirty:
        verb = "has" if len(dirty) == 1 else "have"
        raise ConflictError(
            f"{', '.join(dirty)} {verb} uncommitted changes; commit or stash them first "
            "(or use --no-commit) — nothing was written")


# -- committing ----------------------------------------------------------------------------


def commit_paths(top: Path, paths: list[str], message: str, head: HeadState,
                 hook_env: Mapping[str, str]) -> str:
    """Commit the files at ``paths`` as they are on disk; the new commit id.

    ``hook_env`` is added to the environment of ``git commit`` (what kb tells
    its hooks: ``KB_OWNER``, ``KB_OP``, ``KB_OVERRIDE``). Raises RefusedError
    when a hook refuses the commit or HEAD moved since :func:`read_head`; the
    caller restores the files.
    """
    if not _commit_hooks(head.hooks):
        return _plumbing_commit(top, paths, message, head)
    new_paths = [p for p in paths if not head.index.get(p)]
    if new_paths:
        git.run(["add", "--", *new_paths], top, write=True, env=hook_env)
    args = ["commit", "-q", "--only", "-F", "-", "--", *paths]
    proc = git.run(args, top, input=message.encode("utf-8"), check=False, write=True, env=hook_env)
    if proc.returncode != 0:
        out = (proc.stderr + proc.stdout).decode("utf-8", "replace").strip()
        if new_paths:
            git.run(["rm", "-q", "--cached", "--ignore-unmatch", "--", *new_paths], top,
                    write=True, check=False)
        raise RefusedError(f"git commit refused the change (nothing was written):\n{out}")
    new_head = git.rev_parse("HEAD", top)
    if new_head == head.commit or new_head is None:
        raise RefusedError("git commit did not create a commit; nothing was written")
    return new_head


def _plumbing_commit(top: Path, paths: list[str], message: str, head: HeadState) -> str:
    """The commit ``git commit --only`` makes, built from plumbing.

    Used when the repository has no commit hooks to run. The new root tree
    is HEAD's with the paths' new blobs (``hash-object -w``, filters applied
    as ``git add`` would): every folder on the paths' way is HEAD's listing of
    it (``head.dirs``) with the written files replaced or added — a file keeps
    HEAD's mode (100755 stays executable; a new file, or a symlink kb replaced
    by a file, is 100644), a folder missing from HEAD is created, every other
    entry (gitlinks included) is kept; an unborn HEAD starts from empty
    folders. Transactions only add or modify files, never delete. kb builds
    the trees bottom-up and one ``hash-object -w -t tree`` writes them (git
    checks their format; the ids must be kb's). HEAD moves by compare-and-swap
    from ``head.commit``; the real index gets exactly those entries, so the
    user's other staged work stays staged.

    Why not the alternatives: ``git commit`` refreshes the whole index (a
    third of a write on a large KB); a temporary index (``read-tree``,
    ``update-index``, ``write-tree``) and ``mktree`` read the index or open
    every entry's object of a rewritten folder (tens of ms for a folder of
    2,000 loose objects).
    """
    out = git.run(["hash-object", "-w", "--", *paths], top, write=True).stdout
    blobs = dict(zip(paths, out.decode("ascii").split()))
    modes = {p: _file_mode(head.entry(p)) for p in paths}
    built: dict[str, str] = {}
    bodies: list[bytes] = []
    for folder in _folders(paths):  # deepest first: a folder names its new subfolders
        entries = dict(head.dirs.get(folder, {}))
        for p in paths:
            d, _, name = p.rpartition("/")
            if d == folder:
                have = entries.get(name)
                if have is not None and have[1] != "blob":
                    raise RefusedError(f"cannot commit {p}: it is a {have[1]} in HEAD — "
                                       "nothing was written")
                entries[name] = (modes[p], "blob", blobs[p])
        for sub, tree_id in built.items():
            d, _, name = sub.rpartition("/")
            if d == folder:
                have = entries.get(name)
                if have is not None and have[1] != "tree":
                    raise RefusedError(f"cannot commit files under {sub}/: it is a "
                                       f"{have[1]} in HEAD — nothing was written")
                entries[name] = ("040000", "tree", tree_id)
        body = git.tree_object((m, o, n) for n, (m, _k, o) in entries.items())
        built[folder] = git.object_id("tree", body, like=blobs[paths[0]])
        bodies.append(body)
    if git.write_objects("tree", bodies, top) != list(built.values()):
        raise GitError("git wrote other trees than kb built; nothing was written", "")
    parent = head.commit
    commit = commit_tree(top, built[""], parent, message)
    subject = message.split("\n", 1)[0]
    proc = git.run(["update-ref", "-m", f"commit: {subject}", "HEAD", commit,
                    parent or "0" * 40], top, write=True, check=False)
    if proc.returncode != 0:
        raise ConflictError("HEAD moved while kb was committing (another commit landed); "
                           "nothing was written — run the command again")
    info = "".join(f"{modes[p]} {blobs[p]}\t{p}\0" for p in paths)
    git.run(["update-index", "-z", "--add", "--index-info"], top, write=True,
            input=info.encode("utf-8", "surrogateescape"))
    # What `git commit` does last: pack loose objects when the repository's
    # gc.auto / maintenance.auto settings say so (in the background, by git's
    # default gc.autoDetach). An agent that only commits through kb would
    # otherwise pile up loose objects and slow every git command.
    git.run(["maintenance", "run", "--auto", "--quiet"], top, write=True, check=False)
    return commit


def commit_tree(top: Path, tree: str, parent: str | None, message: str) -> str:
    """``git commit-tree`` signed as ``git commit`` would sign it (:func:`kb.git.commit_tree`)."""
    return git.commit_tree(top, tree, [parent] if parent else [], message)


def _commit_hooks(hooks: Path) -> bool:
    """True when git would run a commit hook from ``hooks`` (the hooks folder)."""
    return any(os.access(hooks / h, os.X_OK) and (hooks / h).is_file() for h in _COMMIT_HOOKS)


def _folders(paths: list[str]) -> list[str]:
    """Every folder on the way to ``paths`` ('' is the top), deepest first."""
    found = {""}
    for p in paths:
        parts = p.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            found.add("/".join(parts[:i]))
    return sorted(found, key=lambda d: (-(d.count("/") + 1 if d else 0), d))


def _file_mode(entry: Entry | None) -> str:
    """The mode kb commits a written file with: HEAD's 100755 stays, else 100644."""
    return "100755" if entry is not None and entry[:2] == ("100755", "blob") else "100644"
