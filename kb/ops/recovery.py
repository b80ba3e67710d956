"""Crash recovery of kb's writes: what a killed :class:`kb.ops.transaction.Transaction` leaves.

A transaction records a journal (:data:`JOURNAL_NAME`, under ``.git/``) before it
writes any file, writes each file through :func:`atomic_write` (a temporary file
named :data:`TMP_PREFIX`… and a rename) and deletes the journal once its commit
landed. A process killed in between leaves the journal, perhaps temporary files,
and perhaps git's ``next-index-*.lock``; the next write (and a read, see
:func:`kb.api.settle_interrupted_write`) calls :func:`recover` under the write lock::

    restored = recover(kb)     # repository paths rolled back; [] when nothing was pending

The journal's shape is the one :func:`read_journal` accepts. This module is below
:mod:`kb.ops.transaction` (which imports it) and imports nothing from it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kb import git, json_input
from kb.errors import RefusedError, os_failure
from kb.fileio import read_regular
from kb.repo import KnowledgeBase

JOURNAL_NAME = "kb-transaction.json"


def refuse_index_lock(kb: KnowledgeBase) -> None:
    """Raise RefusedError when git's ``index.lock`` exists (kb never deletes it)."""
    lock = git.git_dir(kb.top) / "index.lock"
    if lock.exists():
        raise RefusedError(
            f"git's index is locked ({lock} exists): another git process is running, or one "
            "crashed. kb never deletes it; remove it yourself once no git process is running")


def journal_path(kb: KnowledgeBase) -> Path:
    """Where the transaction journal of ``kb``'s work tree lives: ``<git dir>/`` :data:`JOURNAL_NAME`."""
    return git.git_dir(kb.top) / JOURNAL_NAME


def read_journal(jp: Path) -> dict[str, Any] | None:
    """The journal at ``jp`` when it has the shape :meth:`kb.ops.transaction.Transaction._commit` writes
    (``{"head": str|None, "files": {repo path: {"old": str|None, "new": str, ...}}}``),
    else None (torn, not UTF-8 or JSON, edited by hand, unreadable)."""
    try:
        journal = json_input.loads(jp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(journal, dict) or not isinstance(journal.get("files", {}), dict):
        return None
    journal.setdefault("files", {})
    if not isinstance(journal.get("head"), (str, type(None))):
        return None
    for path, rec in journal["files"].items():
        if not (isinstance(path, str) and isinstance(rec, dict) and isinstance(rec.get("new"), str)
                and isinstance(rec.get("old"), (str, type(None)))):
            return None
    return journal


def recover(kb: KnowledgeBase) -> list[str]:
    """Roll back a transaction that was killed between writing and committing.

    For each file in the journal whose working-tree content is still what the
    dead transaction wrote, the old content is restored (a new file is
    removed) and its index entry put back (HEAD's entry; a new file leaves
    the index). When the dead transaction's commit landed (HEAD moved) but
    the index was not updated yet, the index entries of its paths that still
    hold the old blobs are set to HEAD's (git would otherwise show them as
    staged reversals, and a plain ``git commit`` would undo kb's commit).
    ``next-index-*.lock`` files left by killed git processes are removed.
    Returns the repository paths restored. Call with the write lock held
    (Transaction does).

    Raises RefusedError, keeping the journal for the next command, when
    git's ``index.lock`` exists or a git command fails: the journal is
    deleted only once everything is restored.
    """
    remove_index_litter(kb.top)
    jp = journal_path(kb)
    if not jp.exists():
        _remove_tmp_litter(kb, [])
        return []
    journal = read_journal(jp)
    if journal is None:
        # The journal is written before any file: a torn (or foreign) journal means no file was.
        try:
            jp.unlink(missing_ok=True)
        except OSError as exc:  # a folder in its place, …
            raise os_failure(exc, f"remove the damaged kb journal {jp}", "nothing was written") from None
        _remove_tmp_litter(kb, [])
        return []
    _remove_tmp_litter(kb, [kb.top / p for p in journal["files"]])
    refuse_index_lock(kb)  # before touching anything: the journal stays until this works
    files = journal.get("files", {})
    head = git.rev_parse("HEAD", kb.top)
    if head != journal.get("head") and _landed(kb, files, head):
        # The commit landed (HEAD moved): nothing to undo, perhaps the index to finish.
        _finish_landed(kb, files, head)
        jp.unlink(missing_ok=True)
        return []
    restored = []
    for repo_path, rec in files.items():
        full = kb.top / repo_path
        try:
            cur = git.blob_id(read_regular(full))
        except OSError:
            cur = None
        if cur != rec["new"]:
            continue  # changed since: not ours to touch
        if rec["old"] is None:
            full.unlink(missing_ok=True)
        else:
            data = git.read_blobs([rec["old"]], kb.top).get(rec["old"])
            if data is None:
                raise RefusedError(
                    f"cannot roll back the interrupted kb write of {repo_path}: its old content "
                    f"(blob {rec['old']}) is missing from git's object store; the journal "
                    f"{jp} is kept")
            atomic_write(full, data)
        if rec.get("tracked"):
            args = ["reset", "-q", "--", repo_path]
        else:
            args = ["rm", "-q", "--cached", "--ignore-unmatch", "--", repo_path]
        _git_or_refuse(kb, ["--literal-pathspecs", *args], jp)
        restored.append(repo_path)
    jp.unlink(missing_ok=True)
    return restored


def _git_or_refuse(kb: KnowledgeBase, args: list[str], jp: Path,
                   input: bytes | None = None) -> None:
    """Run a git command of the recovery; RefusedError (journal kept) when it fails."""
    proc = git.run(args, kb.top, write=True, check=False, input=input)
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip()
        sub = next(a for a in args if not a.startswith("-"))
        raise RefusedError(
            f"could not finish recovering an interrupted kb write (git {sub} failed: {why}); "
            f"the journal {jp} is kept and the next kb write tries again")


def _landed(kb: KnowledgeBase, files: dict[str, dict], head: str | None) -> bool:
    """True when HEAD holds what the dead write committed (every path at its new blob).
    HEAD also moves when the user commits something else after the kill: then the
    dead write did not land and is rolled back like any other."""
    if head is None:
        return False
    paths = list(files)
    if not paths:
        return True
    out = git.run(["--literal-pathspecs", "ls-tree", "-z", "--full-tree", head, "--", *paths],
                  kb.top).stdout
    in_head = {e.path: e.oid for e in git.tree_entries(out)}
    return all(in_head.get(p) == rec.get("new") for p, rec in files.items())


def _finish_landed(kb: KnowledgeBase, files: dict[str, dict], head: str | None) -> None:
    """Set the index entries of a landed commit's paths that still hold the
    old blob (or no entry, for a new file) to HEAD's entries."""
    if head is None or not files:
        return
    paths = list(files)
    in_head: dict[str, tuple[str, str]] = {}
    out = git.run(["--literal-pathspecs", "ls-tree", "-z", "--full-tree", head, "--", *paths],
                  kb.top).stdout
    for e in git.tree_entries(out):
        in_head[e.path] = (e.mode, e.oid)
    staged: dict[str, list[str]] = {}
    out = git.run(["--literal-pathspecs", "ls-files", "-s", "-z", "--", *paths], kb.top).stdout
    for rec in git.split_z(out):
        meta, _, p = rec.partition("\t")
        staged.setdefault(p, []).append(meta.split(" ")[1])
    lines = []
    for p, rec in files.items():
        mode_oid = in_head.get(p)
        if mode_oid is None or mode_oid[1] != rec.get("new"):
            continue  # HEAD does not hold what the dead write committed
        have = staged.get(p, [])
        if have == ([rec["old"]] if rec.get("tracked") and rec.get("old") else []):
            lines.append(f"{mode_oid[0]} {mode_oid[1]}\t{p}\0")
    if lines:
        _git_or_refuse(kb, ["update-index", "-z", "--index-info"], journal_path(kb),
                       input="".join(lines).encode("utf-8", "surrogateescape"))


#: Prefix of atomic_write's temporary files.
TMP_PREFIX = ".kb-tmp-"


def _remove_tmp_litter(kb: KnowledgeBase, files: list[Path]) -> None:
    """Delete temporary files of an atomic write killed before its rename, in the
    folders of ``files`` and of the KB's configured paths. Only kb writes them,
    under the write lock the caller holds, so any found now is litter."""
    folders = {f.parent for f in files} | {kb.root}
    for rel in kb.config.paths.values():
        p = kb.root / rel.strip("/")
        folders.add(p if p.suffix != ".md" else p.parent)
    for d in folders:
        try:
            with os.scandir(d) as entries:  # a prefix test per name: folders hold thousands
                litter = [e.path for e in entries if e.name.startswith(TMP_PREFIX)
                          and e.is_file(follow_symlinks=False)]
        except OSError:
            continue
        for f in litter:
            try:
                Path(f).unlink(missing_ok=True)
            except OSError:
                break


def remove_index_litter(top: Path) -> list[Path]:
    """Delete the ``next-index-<pid>.lock`` files of git processes that no longer
    run (a ``git commit --only`` killed mid-way leaves one); the removed paths.

    ``index.lock`` itself is never deleted: kb cannot tell a crashed git from
    one still running on another machine sharing the folder."""
    removed = []
    gd = git.git_dir(top)
    for f in gd.glob("next-index-*.lock"):
        pid = f.name[len("next-index-"):-len(".lock")]
        if pid.isdecimal() and _alive(int(pid)):
            continue
        try:
            f.unlink()
            removed.append(f)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def atomic_write(path: Path, data: bytes) -> None:
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
    import tempfile  # (here: it pulls shutil, random, bz2, lzma; a read never writes)

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=TMP_PREFIX, suffix=path.suffix)
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
