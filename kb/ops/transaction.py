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
   rolled back by the next write command (:func:`kb.ops.recovery.recover`);
3. commits exactly its own paths (``git commit --only``: the user's other
   staged or unstaged work is never swept in; :mod:`kb.ops.commit`) as one
   commit whose message carries ``Kb-Op:`` / ``Kb-Id:`` (and
   ``Kb-Override:``) trailers. The commit goes through the repository's hooks
   like any other; kb passes its overrides and owner to them in
   ``KB_OVERRIDE`` / ``KB_OWNER``.

If any step fails, every file is restored and no ref moves. Writers on one
machine are serialised by a file lock in git's common directory (shared by
linked worktrees). It refuses to start when a file it must write has
uncommitted changes (``no_commit=True`` writes the files and leaves them
uncommitted), when git's ``index.lock`` exists (never deleted by kb), or when
``expect`` names a blob id the file no longer has (compare-and-swap).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from kb import git
from kb.errors import LockedError, RefusedError, StaleError, os_failure
from kb.fileio import read_regular
from kb.locks import default_owner
from kb.ops import commit as commit_mod
from kb.ops.git_state import finish_interrupted_release, git_ref_locks
from kb.ops.recovery import atomic_write, journal_path, recover, refuse_index_lock
from kb.ops.result import TxResult
from kb.repo import KnowledgeBase

if TYPE_CHECKING:  # annotations only
    from kb.model import Diagnostic

LOCK_NAME = "kb-write.lock"


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
            except (OSError, ValueError):
                holder = "another kb write"
            on_wait(f"waiting for {holder} (lock {lk.path})")
        try:
            fl.acquire(timeout=timeout)
        except Timeout:
            raise LockedError(f"timed out after {timeout:.0f}s waiting for the kb write lock "
                               f"{lk.path}") from None
        except OSError as exc:
            raise os_failure(exc, f"take kb's write lock {lk.path}", "nothing was written") from None
    except OSError as exc:  # a read-only .git, a lock path that is a folder, …
        raise os_failure(exc, f"take kb's write lock {lk.path}", "nothing was written") from None
    lk.lock = fl
    try:
        lk.info.write_text(f"pid {os.getpid()} ({op})\n", encoding="utf-8")
    except OSError:
        pass
    return lk


def release_write_lock(lk: _Lock) -> None:
    """Give back the write lock :func:`acquire_write_lock` took."""
    try:
        lk.info.unlink()
    except OSError:
        pass
    lk.lock.release()  # type: ignore[attr-defined]


def _portable_new(kb: KnowledgeBase, new_paths: list[str]) -> None:
    """Refuse new files a clone elsewhere could not check out: a name Windows
    reserves, or one that differs from a file already in the repository only in
    case or Unicode normalisation (one file on macOS and Windows)."""
    if not new_paths:
        return
    from kb.repo import colliding, unportable

    for p in new_paths:
        # Reserved names and collisions only: a ':' or '?' in a name is refused by
        # the commands that take names (IDs, categories) and reported by verify.
        why = unportable(p, chars=False)
        if why:
            raise RefusedError(f"cannot create {p}: {why}; choose another ID or category — "
                               "nothing was written")
    folders = sorted({p.rpartition("/")[0] for p in new_paths})
    listed = git.run(["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--",
                      *[f"{d}/" if d else "." for d in folders]], kb.top).stdout
    have = [p for p in git.split_z(listed)]
    for a, b in colliding(have + [p for p in new_paths if p not in have]):
        if a in new_paths or b in new_paths:
            other = a if b in new_paths else b
            raise RefusedError(f"cannot create {b if b in new_paths else a}: it differs from "
                               f"{other} only in case or Unicode normalisation, and macOS and "
                               "Windows would take them for one file — nothing was written")


def format_guard(kb: KnowledgeBase, rel: str, old: bytes | None, new: bytes,
                 known: dict[str, list[Diagnostic]] | None = None, *,
                 old_id: str | None = None, new_id: str | None = None) -> None:
    """Refuse ``new`` when it adds error diagnostics, or when ``old`` already has errors.

    ``known`` maps blob ids to the error diagnostics already known for that
    content (e.g. from the index, or from the operation's own parse of the
    text it built), so that a large file is not parsed again. ``old_id`` and
    ``new_id`` are the blob ids of ``old`` and ``new`` when the caller has
    them (a tree can be megabytes: hash it once).

    Raises FormatGuardError (refused) when the file already has format errors or the edit would
    add some.
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
    #: extra ``(key, value)`` trailers after kb's own (e.g. a generated hypothesis's provenance)
    trailers: list[tuple[str, str]] = field(default_factory=list)
    expect: dict[str, str] = field(default_factory=dict)
    on_wait: Callable[[str], None] | None = None
    lock_timeout: float = 120.0
    ids: list[str] = field(default_factory=list)
    known_errors: dict[str, list[Diagnostic]] = field(default_factory=dict)
    recovered: list[str] = field(default_factory=list)
    result: TxResult | None = None
    _writes: dict[str, bytes] = field(default_factory=dict)
    _lock: _Lock | None = None
    _ids: list[tuple[bytes, str]] = field(default_factory=list)
    _locked_at: float = 0.0  # time.monotonic() when the write lock was taken

    # -- context --------------------------------------------------------------
    def __enter__(self) -> "Transaction":
        if self.owner is not None:
            from kb.locks import validate_owner

            self.owner = validate_owner(self.owner)  # one line, no control characters
        self._lock = _acquire(self.kb, self.op, self.on_wait, self.lock_timeout)
        self._locked_at = time.monotonic()  # what is indexed after this is seen under the lock
        try:
            self.recovered = recover(self.kb)
            refuse_index_lock(self.kb)
            git_ref_locks(git.git_dir(self.kb.top), git.common_dir(self.kb.top))
            finish_interrupted_release(self.kb.top)  # a lock release killed before its index update

            from kb.merge.markers import refuse_in_progress

            # Never write into a half-finished merge (issue: team work).
            refuse_in_progress(self.kb.top)
        except BaseException:
            release_write_lock(self._lock)
            raise
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                self.result = self._commit()
        finally:
            release_write_lock(self._lock)  # type: ignore[arg-type]

    # -- building ---------------------------------------------------------------
    def path(self, rel: str) -> Path:
        """The absolute path of the KB path ``rel``."""
        return self.kb.root / rel

    def read(self, rel: str) -> bytes | None:
        """Current bytes of KB-relative ``rel`` (pending writes first); None if absent.

        Raises RefusedError for a symlink whose target leaves the work tree or a
        path that is a directory, EnvironmentError_ for one that cannot be read
        (no permission); nothing is written."""
        if rel in self._writes:
            return self._writes[rel]
        self._inside(rel)
        if rel.endswith("/"):  # kb.toml's [paths] "tree.md/": pathlib would drop the '/'
            raise RefusedError(f"{self.kb.prefix}{rel} ends in '/': it names a folder, not a "
                               "file, so kb cannot read or write it (set the file's path in "
                               "kb.toml [paths]) — nothing was written")
        try:
            return read_regular(self.path(rel))
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise RefusedError(f"{rel} is a directory, not a file: kb cannot read or write it "
                               f"(move the directory, or set another path in kb.toml [paths])") from None
        except OSError as exc:  # no permission, …: environment (2); see os_failure
            raise os_failure(exc, f"read {self.kb.prefix}{rel}", "nothing was written") from None

    def write(self, rel: str, data: bytes) -> None:
        """Stage new bytes for ``rel``; nothing touches the disk before commit."""
        self._writes[rel] = data

    def blob_id(self, data: bytes) -> str:
        """:func:`kb.git.blob_id` of ``data``, computed once per transaction: the
        operation, its index writes and the commit all need the ids of the same
        texts, and a tree can be megabytes (equal bytes read again match too)."""
        for seen, oid in self._ids:
            if seen is data or (len(seen) == len(data) and seen == data):
                return oid
        oid = git.blob_id(data)
        self._ids.append((data, oid))
        return oid

    # -- committing ---------------------------------------------------------------
    def _commit(self) -> TxResult:
        kb = self.kb
        rels = [r for r in self._writes]
        olds: dict[str, bytes | None] = {r: self.read_disk(r) for r in rels}
        changed = [r for r in rels if olds[r] != self._writes[r]]
        message = self._message()
        if not changed:
            return TxResult(self.op, list(self.ids), [], None, message)
        self._no_links(changed)
        from kb.remote_locks import check_unlocked

        paths = [kb.repo_path(r) for r in changed]
        _portable_new(kb, [p for r, p in zip(changed, paths) if olds[r] is None])
        # Write locks (DESIGN §5): refuse a target locked by another owner.
        check_unlocked(kb, paths, self.owner, notify=self.on_wait)
        if self.ids and self.op.endswith((".add", ".new")):
            from kb.remote_locks import lock_remote, taken_upstream

            if lock_remote(kb.top, kb.config) is not None and self.on_wait is not None:
                # Parallel branches allocate the same IDs; say so before it is merged (team work).
                for oid in taken_upstream(kb.top, kb.config, kb.prefix, list(self.ids), fetched=True):
                    self.on_wait(f"warning: {oid} already exists on the lock remote's default "
                                 "branch; after merging, `kb sync` renumbers this one")
        old_ids = {r: None if (old := olds[r]) is None else self.blob_id(old) for r in changed}
        new_ids = {r: self.blob_id(self._writes[r]) for r in changed}
        # HEAD is read once, here, under the write lock; update-ref swaps from it.
        head = None if self.no_commit else commit_mod.read_head(kb.top, paths)
        from kb.merge.markers import cache_path, refuse_marked
        from kb.repo import worktree_changes_since

        # Nor while conflict markers remain in the KB (issue: team work); HEAD as read above;
        # the files changed on disk as the operation's own indexing (under the lock) listed them.
        refuse_marked(kb.top, kb.prefix, head=head.commit if head is not None else None,
                      cache=cache_path(kb.top, kb.prefix),
                      worktree=worktree_changes_since(kb, self._locked_at))
        head_blobs = {} if head is None else commit_mod.check_clean(
            kb.top, {kb.repo_path(r): self.path(r) for r in changed}, head,
            {kb.repo_path(r): old_ids[r] for r in changed})
        for rel, want in self.expect.items():
            # What the caller read is the file on disk (equal to HEAD unless
            # --no-commit let a dirty file through).
            if rel in old_ids:
                have = old_ids[rel]
            else:
                cur = olds[rel] if rel in olds else self.read_disk(rel)
                have = self.blob_id(cur) if cur is not None else None
            if have != want:
                raise StaleError(
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
        jp = journal_path(kb)
        if not self.no_commit:
            try:
                jp.write_text(json.dumps(journal), encoding="utf-8")
            except OSError as exc:
                with contextlib.suppress(OSError):
                    jp.unlink(missing_ok=True)
                raise os_failure(exc, f"write kb's journal {jp}", "nothing was written") from None
        written: list[str] = []
        try:
            for rel in changed:
                try:
                    atomic_write(self.path(rel), self._writes[rel])
                except OSError as exc:  # a read-only folder or file, a full disk, …
                    raise os_failure(exc, f"write {kb.prefix}{rel}", "nothing was written") from None
                written.append(rel)
            blobs = {kb.repo_path(r): new_ids[r] for r in changed}
            if self.no_commit or head is None:
                return TxResult(self.op, list(self.ids), list(blobs), None, message, blobs)
            # the owner the lock check acted for (--owner, else KB_OWNER, kb.owner,
            # user.email): the hook must judge the commit as that same owner
            hook_env = {"KB_OWNER": self.owner or default_owner(kb.top) or "", "KB_OP": self.op}
            if self.overrides:
                hook_env["KB_OVERRIDE"] = "\n".join(f"{i} {r}" for i, r in self.overrides)
            commit = commit_mod.commit_paths(kb.top, paths, message, head, hook_env)
        except BaseException:
            self._rollback(written, olds)
            jp.unlink(missing_ok=True)
            raise
        jp.unlink(missing_ok=True)
        if head.commit is not None and not commit_mod._commit_hooks(head.hooks):
            from kb.merge.markers import note_own_commit  # the next marker check starts here

            note_own_commit(cache_path(kb.top, kb.prefix), head.commit, commit,
                            [self._writes[r] for r in changed])
        return TxResult(self.op, list(self.ids), list(blobs), commit, message, blobs)

    def _store(self, rels: list[str]) -> dict[str, str]:
        """Write the current bytes of ``rels`` to git's object store (for recovery)."""
        if not rels:
            return {}
        proc = git.run(["hash-object", "-w", "--no-filters", "--", *[str(self.path(r)) for r in rels]],
                       self.kb.top, write=True)
        return dict(zip(rels, proc.stdout.decode().split()))

    def _inside(self, rel: str) -> None:
        from kb.repo import outside_links, outside_where

        for p, target in outside_links(self.kb, [rel]).items():
            raise RefusedError(f"{self.kb.prefix}{p} is a symlink to {target}, outside "
                               f"{outside_where(self.kb, target)}: kb neither reads nor writes "
                               "through it — nothing was written")

    def _no_links(self, rels: list[str]) -> None:
        """Refuse to write ``rels`` when one is a symlink, or lies under a folder that is
        one, inside the KB (one leaving it: :meth:`_inside`). kb writes nothing through a
        link (the file it leads to is another file of the record) and never replaces one
        by a file (the card would silently part from the file the link read): the user
        chooses (:func:`kb.repo.link_on_the_way`)."""
        from kb.repo import link_on_the_way

        for rel in rels:
            link = link_on_the_way(self.kb.root, rel)
            if link is not None:
                target = os.path.realpath(self.path(link))
                raise RefusedError(
                    f"{self.kb.prefix}{link} is a symlink to {target}: kb writes nothing through "
                    "a symlink and does not replace it by a file — nothing was written; replace "
                    "the link by the file or folder it leads to (then run the command again)")

    def read_disk(self, rel: str) -> bytes | None:
        """The bytes of ``rel`` on disk (None when absent), ignoring pending writes."""
        self._inside(rel)
        try:
            return read_regular(self.path(rel))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise os_failure(exc, f"read {self.kb.prefix}{rel}", "nothing was written") from None

    def _message(self) -> str:
        subject = self.summary or f"kb {self.op}"
        trailers = [f"Kb-Op: {self.op}"] + [f"Kb-Id: {i}" for i in self.ids]
        trailers += [f"Kb-Override: {i} {r}" for i, r in self.overrides]
        trailers += [f"{k}: {v}" for k, v in self.trailers]
        return f"{subject}\n\n" + "\n".join(trailers) + "\n"

    def _rollback(self, written: list[str], olds: dict[str, bytes | None]) -> None:
        """Put back the old bytes of ``written`` (best effort: one failure stops no other)."""
        for rel in written:
            old = olds[rel]
            try:
                if old is None:
                    self.path(rel).unlink(missing_ok=True)
                else:
                    atomic_write(self.path(rel), old)
            except OSError:
                continue


def wait_message_printer(echo: Callable[[str], None]) -> Callable[[str], None]:
    """An ``on_wait`` callback that prints once, e.g. to stderr."""
    said = {"done": False}

    def cb(msg: str) -> None:
        if not said["done"]:
            echo(msg)
            said["done"] = True

    return cb


__all__ = ["Transaction", "FormatGuardError", "format_guard", "acquire_write_lock",
           "release_write_lock", "wait_message_printer"]
