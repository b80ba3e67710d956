"""The write transaction of DESIGN.md §3, shared by every write command.

One operation = one :class:`Transaction`::

    with Transaction(kb, "hyp.add", on_wait=print_waiting) as tx:
        old = tx.read("tree.md")              # bytes at HEAD (the file is clean)
        tx.write("tree.md", new_bytes)        # staged in memory only
        tx.ids.append("H3")
    result = tx.result                        # commit id, paths, message

On leaving the block without an exception the transaction

1. re-parses every new text (format guard): the operation may not add an
   error diagnostic, and a file that already had errors is refused with its
   diagnostics instead of being made worse;
2. writes the files atomically (temp file, fsync, rename), after recording a
   journal under ``.git/`` so that a process killed before the commit is
   rolled back by the next write command (:func:`recover`);
3. commits exactly its own paths (``git commit --only``: the user's other
   staged or unstaged work is never swept in) as one commit whose message
   carries ``Kb-Op:`` / ``Kb-Id:`` (and ``Kb-Override:``) trailers. The
   commit goes through the repository's hooks like any other; kb passes its
   overrides and owner to them in ``KB_OVERRIDE`` / ``KB_OWNER``.

If any step fails, every file is restored and no ref moves. Writers on one
machine are serialised by a file lock in git's common directory (shared by
linked worktrees). It refuses to start when a file it must write has
uncommitted changes (``no_commit=True`` writes the files and leaves them
uncommitted), when git's ``index.lock`` exists (never deleted by kb), or when
``expect`` names a blob id the file no longer has (compare-and-swap).
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from kb import git
from kb.errors import GitError, RefusedError
from kb.repo import KnowledgeBase

if TYPE_CHECKING:  # annotations only
    from kb.model import Diagnostic

LOCK_NAME = "kb-write.lock"
JOURNAL_NAME = "kb-transaction.json"


@dataclass
class TxResult:
    """What a transaction did. ``commit`` is None with ``no_commit`` or no change."""

    op: str
    ids: list[str]
    paths: list[str]
    commit: str | None
    message: str


class FormatGuardError(RefusedError):
    """The new text would add errors, or the file was already corrupt."""

    def __init__(self, message: str, diagnostics: list[Diagnostic]) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


@dataclass
class _Lock:
    path: Path
    info: Path
    lock: object = None


def _acquire(kb: KnowledgeBase, op: str, on_wait: Callable[[str], None] | None,
             timeout: float) -> _Lock:
    return acquire_write_lock(git.common_dir(kb.top), op, on_wait, timeout)


def acquire_write_lock(common: Path, op: str, on_wait: Callable[[str], None] | None = None,
                       timeout: float = 120.0) -> _Lock:
    """Take kb's machine-wide write lock in git's common directory ``common``.

    Every writer (transactions, lock release) serialises on it. ``on_wait``
    is told once who holds it when it is busy. Raises RefusedError after
    ``timeout`` seconds.
    """
    from filelock import FileLock, Timeout

    lk = _Lock(path=common / LOCK_NAME, info=common / (LOCK_NAME + ".info"))
    fl = FileLock(str(lk.path))
    try:
        fl.acquire(timeout=0)
    except Timeout:
        if on_wait is not None:
            try:
                holder = lk.info.read_text(encoding="utf-8").strip()
            except OSError:
                holder = "another kb write"
            on_wait(f"waiting for {holder} (lock {lk.path})")
        try:
            fl.acquire(timeout=timeout)
        except Timeout:
            raise RefusedError(f"timed out after {timeout:.0f}s waiting for the kb write lock "
                               f"{lk.path}") from None
    lk.lock = fl
    try:
        lk.info.write_text(f"pid {os.getpid()} ({op})\n", encoding="utf-8")
    except OSError:
        pass
    return lk


def _release(lk: _Lock) -> None:
    try:
        lk.info.unlink()
    except OSError:
        pass
    lk.lock.release()  # type: ignore[attr-defined]


def _index_lock(kb: KnowledgeBase) -> None:
    lock = git.git_dir(kb.top) / "index.lock"
    if lock.exists():
        raise RefusedError(
            f"git's index is locked ({lock} exists): another git process is running, or one "
            "crashed. kb never deletes it; remove it yourself once no git process is running")


def _journal_path(kb: KnowledgeBase) -> Path:
    return git.git_dir(kb.top) / JOURNAL_NAME


def recover(kb: KnowledgeBase) -> list[str]:
    """Roll back a transaction that was killed between writing and committing.

    For each file in the journal whose working-tree content is still what the
    dead transaction wrote, the old content is restored (a new file is
    removed). Returns the repository paths restored. Call with the write lock
    held (Transaction does).
    """
    jp = _journal_path(kb)
    if not jp.exists():
        return []
    try:
        journal = json.loads(jp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        jp.unlink(missing_ok=True)
        return []
    restored = []
    head = git.rev_parse("HEAD", kb.top)
    if head != journal.get("head"):
        # The commit landed (HEAD moved): nothing to undo.
        jp.unlink(missing_ok=True)
        return []
    for repo_path, rec in journal.get("files", {}).items():
        full = kb.top / repo_path
        try:
            cur = git.blob_id(full.read_bytes())
        except OSError:
            cur = None
        if cur != rec["new"]:
            continue  # changed since: not ours to touch
        if rec["old"] is None:
            full.unlink(missing_ok=True)
        else:
            data = git.read_blobs([rec["old"]], kb.top).get(rec["old"])
            if data is None:
                continue
            _atomic_write(full, data)
        if rec.get("tracked"):
            git.run(["reset", "-q", "--", repo_path], kb.top, write=True, check=False)
        else:
            git.run(["rm", "-q", "--cached", "--ignore-unmatch", "--", repo_path], kb.top,
                    write=True, check=False)
        restored.append(repo_path)
    jp.unlink(missing_ok=True)
    return restored


def _atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` through a temporary file and a rename.

    The file keeps its permissions; a new file gets what ``open()`` would give
    it (0o666 less the umask), not mkstemp's private 0o600.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".kb-tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def format_guard(kb: KnowledgeBase, rel: str, old: bytes | None, new: bytes,
                 known: dict[str, list[Diagnostic]] | None = None, *,
                 old_id: str | None = None, new_id: str | None = None) -> None:
    """Refuse ``new`` when it adds error diagnostics, or when ``old`` already has errors.

    ``known`` maps blob ids to the error diagnostics already known for that
    content (e.g. from the index, or from the operation's own parse of the
    text it built), so that a large file is not parsed again. ``old_id`` and
    ``new_id`` are the blob ids of ``old`` and ``new`` when the caller has
    them (a tree can be megabytes: hash it once).
    """
    from kb.parse import parse_file

    def errors(data: bytes, blob: str | None) -> list[Diagnostic]:
        if known:
            hit = known.get(blob or git.blob_id(data))
            if hit is not None:
                return list(hit)
        return [d for d in parse_file(rel, data, kb.config).diagnostics if d.severity == "error"]

    before = errors(old, old_id) if old is not None else []
    if before:
        raise FormatGuardError(
            f"{kb.prefix}{rel} already has {len(before)} format error(s); fix them first "
            f"(kb index lists them) — nothing was written", before)
    after = errors(new, new_id)
    if after:
        raise FormatGuardError(
            f"the edit of {kb.prefix}{rel} would add format errors ({after[0].format()}); "
            "nothing was written", after)


@dataclass
class Transaction:
    """One write operation; see the module docstring for the protocol.

    ``op`` is the ``Kb-Op`` value (``hyp.add``); ``summary`` the commit
    subject; ``ids`` the ``Kb-Id`` values (append while building);
    ``overrides`` ``(id, reason)`` pairs for ``Kb-Override``; ``expect`` maps
    KB-relative paths to the blob id the caller read (compare-and-swap).
    ``known_errors`` maps blob ids to their known error diagnostics (see
    :func:`format_guard`); ``recovered`` lists the repository paths that
    :func:`recover` restored when the transaction started.
    """

    kb: KnowledgeBase
    op: str
    summary: str = ""
    no_commit: bool = False
    owner: str | None = None
    overrides: list[tuple[str, str]] = field(default_factory=list)
    expect: dict[str, str] = field(default_factory=dict)
    on_wait: Callable[[str], None] | None = None
    lock_timeout: float = 120.0
    ids: list[str] = field(default_factory=list)
    known_errors: dict[str, list[Diagnostic]] = field(default_factory=dict)
    recovered: list[str] = field(default_factory=list)
    result: TxResult | None = None
    _writes: dict[str, bytes] = field(default_factory=dict)
    _lock: _Lock | None = None

    # -- context --------------------------------------------------------------
    def __enter__(self) -> "Transaction":
        if self.owner is not None:
            from kb.locks import validate_owner

            self.owner = validate_owner(self.owner)  # one line, no control characters
        self._lock = _acquire(self.kb, self.op, self.on_wait, self.lock_timeout)
        try:
            self.recovered = recover(self.kb)
            _index_lock(self.kb)
        except BaseException:
            _release(self._lock)
            raise
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                self.result = self._commit()
        finally:
            _release(self._lock)  # type: ignore[arg-type]

    # -- building ---------------------------------------------------------------
    def path(self, rel: str) -> Path:
        return self.kb.root / rel

    def read(self, rel: str) -> bytes | None:
        """Current bytes of KB-relative ``rel`` (pending writes first); None if absent."""
        if rel in self._writes:
            return self._writes[rel]
        try:
            return self.path(rel).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, rel: str, data: bytes) -> None:
        """Stage new bytes for ``rel``; nothing touches the disk before commit."""
        self._writes[rel] = data

    # -- committing ---------------------------------------------------------------
    def _check_clean(self, rels: list[str], head: _Head,
                     old_ids: dict[str, str | None]) -> dict[str, str | None]:
        """Refuse dirty targets; return repo path -> HEAD blob (None when not in HEAD).

        An untracked target (e.g. the tree of a KB just made by ``kb init``)
        is not refused: it is committed with the change.

        Fast path, without ``git status`` (a tenth of a write on a large
        repository): a target is clean when its only index entry (stage 0)
        has HEAD's mode and blob and the bytes on disk (``old_ids``: a regular
        file whose executable bit matches the mode) hash to that blob — then
        no user work can be in it. A target in neither HEAD nor the index is
        untracked or absent, as before. Whatever this cannot prove (a filter
        such as ``core.autocrlf`` between the disk and the blob, an
        intent-to-add entry, a conflict, a real change) is judged by ``git
        status`` exactly as before, with the same message.
        """
        repo_paths = {r: self.kb.repo_path(r) for r in rels}
        if head.stray or not all(self._proven_clean(r, p, head, old_ids[r])
                                 for r, p in repo_paths.items()):
            self._refuse_dirty(list(repo_paths.values()))
        blobs: dict[str, str | None] = {}
        for p in repo_paths.values():
            entry = head.entry(p)
            blobs[p] = entry[2] if entry is not None else None
        return blobs

    def _proven_clean(self, rel: str, path: str, head: _Head, old_id: str | None) -> bool:
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
            st = os.lstat(self.path(rel))
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and bool(st.st_mode & stat.S_IXUSR) == (mode == "100755")

    def _refuse_dirty(self, repo_paths: list[str]) -> None:
        """The ``git status`` check: refuse when a path has uncommitted changes."""
        proc = git.run(["--literal-pathspecs", "status", "--porcelain=v1", "-z",
                        "--untracked-files=all", "--", *repo_paths], self.kb.top)
        dirty = []
        recs = list(git.split_z(proc.stdout))
        i = 0
        while i < len(recs):
            rec = recs[i]
            xy, path = rec[:2], rec[3:]
            if xy[0] in "RC":
                i += 1  # the next record is the rename source
            if xy != "??":
                dirty.append((xy, path))
            i += 1
        if dirty:
            names = ", ".join(p for _, p in dirty)
            raise RefusedError(
                f"{names} has uncommitted changes; commit or stash them first "
                "(or use --no-commit) — nothing was written")

    def _commit(self) -> TxResult:
        kb = self.kb
        rels = [r for r in self._writes]
        olds: dict[str, bytes | None] = {r: self.read_disk(r) for r in rels}
        changed = [r for r in rels if olds[r] != self._writes[r]]
        message = self._message()
        if not changed:
            return TxResult(self.op, list(self.ids), [], None, message)
        from kb.locks import check_unlocked

        paths = [kb.repo_path(r) for r in changed]
        # Write locks (DESIGN §5): refuse a target locked by another owner.
        check_unlocked(kb, paths, self.owner)
        # Blob ids of the old and new bytes, each hashed once (a tree can be megabytes).
        old_ids = {r: None if (old := olds[r]) is None else git.blob_id(old) for r in changed}
        new_ids = {r: git.blob_id(self._writes[r]) for r in changed}
        # HEAD is read once, here, under the write lock; update-ref swaps from it.
        head = None if self.no_commit else _read_head(kb.top, paths)
        head_blobs = self._check_clean(changed, head, old_ids) if head is not None else {}
        for rel, want in self.expect.items():
            # What the caller read is the file on disk (equal to HEAD unless
            # --no-commit let a dirty file through).
            if rel in old_ids:
                have = old_ids[rel]
            else:
                cur = olds[rel] if rel in olds else self.read_disk(rel)
                have = git.blob_id(cur) if cur is not None else None
            if have != want:
                raise RefusedError(
                    f"{kb.prefix}{rel} changed since it was read (expected blob {want}, it is "
                    f"{have}); read it again — nothing was written")
        for rel in changed:
            format_guard(kb, rel, olds[rel], self._writes[rel], self.known_errors,
                         old_id=old_ids[rel], new_id=new_ids[rel])
        stored: dict[str, str | None] = {}
        if head is not None:
            # Old contents for recovery: when a file's bytes are HEAD's blob (no
            # filter in between), that object is in the store already.
            stored = {r: old_ids[r] for r in changed
                      if old_ids[r] is not None and old_ids[r] == head_blobs.get(kb.repo_path(r))}
            stored.update(self._store([r for r in changed
                                       if olds[r] is not None and r not in stored]))
        journal = {
            "op": self.op, "head": head.commit if head is not None else None, "pid": os.getpid(),
            "files": {kb.repo_path(r): {"old": stored.get(r),
                                        "tracked": head_blobs.get(kb.repo_path(r)) is not None,
                                        "new": new_ids[r]} for r in changed},
        }
        jp = _journal_path(kb)
        if not self.no_commit:
            jp.write_text(json.dumps(journal), encoding="utf-8")
        written: list[str] = []
        try:
            for rel in changed:
                _atomic_write(self.path(rel), self._writes[rel])
                written.append(rel)
            if self.no_commit or head is None:
                return TxResult(self.op, list(self.ids), [kb.repo_path(r) for r in changed], None, message)
            if os.environ.get("KB_TEST_CRASH_AFTER_WRITE"):  # tests: die between write and commit
                os.kill(os.getpid(), 9)
            commit = self._git_commit(changed, message, head)
        except BaseException:
            self._rollback(written, olds)
            jp.unlink(missing_ok=True)
            raise
        jp.unlink(missing_ok=True)
        return TxResult(self.op, list(self.ids), [kb.repo_path(r) for r in changed], commit, message)

    def _store(self, rels: list[str]) -> dict[str, str]:
        """Write the current bytes of ``rels`` to git's object store (for recovery)."""
        if not rels:
            return {}
        proc = git.run(["hash-object", "-w", "--no-filters", "--", *[str(self.path(r)) for r in rels]],
                       self.kb.top, write=True)
        return dict(zip(rels, proc.stdout.decode().split()))

    def read_disk(self, rel: str) -> bytes | None:
        try:
            return self.path(rel).read_bytes()
        except FileNotFoundError:
            return None

    def _message(self) -> str:
        subject = self.summary or f"kb {self.op}"
        trailers = [f"Kb-Op: {self.op}"] + [f"Kb-Id: {i}" for i in self.ids]
        trailers += [f"Kb-Override: {i} {r}" for i, r in self.overrides]
        return f"{subject}\n\n" + "\n".join(trailers) + "\n"

    def _git_commit(self, rels: list[str], message: str, head: _Head) -> str:
        kb = self.kb
        paths = [kb.repo_path(r) for r in rels]
        if not _commit_hooks(head.hooks):
            return self._plumbing_commit(paths, message, head)
        new_paths = [p for p in paths if not head.index.get(p)]
        env = {"KB_OWNER": self.owner or "", "KB_OP": self.op}
        if self.overrides:
            env["KB_OVERRIDE"] = "\n".join(f"{i} {r}" for i, r in self.overrides)
        if new_paths:
            git.run(["add", "--", *new_paths], kb.top, write=True, env=env)
        args = ["commit", "-q", "--only", "-F", "-", "--", *paths]
        proc = git.run(args, kb.top, input=message.encode("utf-8"), check=False, write=True, env=env)
        if proc.returncode != 0:
            out = (proc.stderr + proc.stdout).decode("utf-8", "replace").strip()
            if new_paths:
                git.run(["rm", "-q", "--cached", "--ignore-unmatch", "--", *new_paths], kb.top,
                        write=True, check=False)
            raise RefusedError(f"git commit refused the change (nothing was written):\n{out}")
        new_head = git.rev_parse("HEAD", kb.top)
        if new_head == head.commit or new_head is None:
            raise RefusedError("git commit did not create a commit; nothing was written")
        return new_head

    def _plumbing_commit(self, paths: list[str], message: str, head: _Head) -> str:
        """The commit ``git commit --only`` makes, built from plumbing.

        Used when the repository has no commit hooks to run (with hooks, kb
        commits through ``git commit`` so they run as for any commit). The
        new root tree is HEAD's with the paths' new blobs (``hash-object -w``,
        filters applied as ``git add`` would): every folder on the paths' way
        is HEAD's listing of it (``head.dirs``, read once under the write
        lock) with the written files replaced or added — a file keeps HEAD's
        mode (100755 stays executable; a new file, or a symlink kb replaced by
        a file, is 100644), a folder missing from HEAD is created, every other
        entry (gitlinks included) is kept; an unborn HEAD starts from empty
        folders. Transactions only add or modify files, never delete. kb
        builds the trees bottom-up and one ``hash-object -w -t tree`` writes
        them (git checks their format; the ids must be kb's). HEAD moves by
        compare-and-swap from the HEAD read under the lock; the real index
        gets exactly those entries, so the user's other staged work stays
        staged.

        Why not the alternatives: ``git commit`` refreshes the whole index (a
        third of a write on a large KB); a temporary index (``read-tree``,
        ``update-index``, ``write-tree``) and ``mktree`` read the index or
        open every entry's object of a rewritten folder (tens of ms for a
        folder of 2,000 loose objects).
        """
        top = self.kb.top
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
        commit = git.out(["commit-tree", built[""], *(["-p", parent] if parent else []), "-F", "-"],
                         top, write=True, input=message.encode("utf-8"))
        subject = message.split("\n", 1)[0]
        proc = git.run(["update-ref", "-m", f"commit: {subject}", "HEAD", commit,
                        parent or "0" * 40], top, write=True, check=False)
        if proc.returncode != 0:
            raise RefusedError("HEAD moved while kb was committing (another commit landed); "
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

    def _rollback(self, written: list[str], olds: dict[str, bytes | None]) -> None:
        for rel in written:
            old = olds[rel]
            if old is None:
                self.path(rel).unlink(missing_ok=True)
            else:
                _atomic_write(self.path(rel), old)


_COMMIT_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit")


def _commit_hooks(hooks: Path) -> bool:
    """True when git would run a commit hook from ``hooks`` (the hooks folder)."""
    return any(os.access(hooks / h, os.X_OK) and (hooks / h).is_file() for h in _COMMIT_HOOKS)


@dataclass
class _Head:
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
    dirs: dict[str, dict[str, tuple[str, str, str]]]
    index: dict[str, list[tuple[str, str, str]]]
    stray: bool = False

    def entry(self, path: str) -> tuple[str, str, str] | None:
        """HEAD's (mode, type, id) of repository path ``path``, or None."""
        folder, _, name = path.rpartition("/")
        return self.dirs.get(folder, {}).get(name)


def _folders(paths: list[str]) -> list[str]:
    """Every folder on the way to ``paths`` ('' is the top), deepest first."""
    found = {""}
    for p in paths:
        parts = p.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            found.add("/".join(parts[:i]))
    return sorted(found, key=lambda d: (-(d.count("/") + 1 if d else 0), d))


def _file_mode(entry: tuple[str, str, str] | None) -> str:
    """The mode kb commits a written file with: HEAD's 100755 stays, else 100644."""
    return "100755" if entry is not None and entry[:2] == ("100755", "blob") else "100644"


def _read_head(top: Path, paths: list[str]) -> _Head:
    """HEAD, the hooks folder, HEAD's folders on the way to ``paths`` and their index entries.

    ``ls-files`` reads the index while one ``rev-parse`` resolves HEAD and the
    hooks folder and ``ls-tree`` lists the folders (non-recursive: ``.`` is
    the top, ``dir/`` one folder; ``-t`` shows the folders it descends into).
    Pathspecs are literal: a file named ``:x`` or ``a*`` is that file.
    """
    ls_args = ["--literal-pathspecs", "ls-files", "-s", "-z", "--", *paths]
    listing = git.start(ls_args, top)
    folders = _folders(paths)
    dirs: dict[str, dict[str, tuple[str, str, str]]] = {d: {} for d in folders}
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
            for rec in git.split_z(git.run(args, top).stdout):
                meta, _, p = rec.partition("\t")
                mode, kind, oid = meta.split(" ")
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
    return _Head(commit, hooks if hooks.is_absolute() else top / hooks, dirs, index, stray)


def wait_message_printer(echo: Callable[[str], None]) -> Callable[[str], None]:
    """An ``on_wait`` callback that prints once, e.g. to stderr."""
    said = {"done": False}

    def cb(msg: str) -> None:
        if not said["done"]:
            echo(msg)
            said["done"] = True

    return cb


__all__ = ["Transaction", "TxResult", "FormatGuardError", "recover", "format_guard",
           "wait_message_printer"]
