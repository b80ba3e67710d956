"""Git state every kb write checks first: git's own ref locks, the current branch,
and the journal of a lock release interrupted between its commit and its index update.

Shared by :class:`kb.ops.transaction.Transaction` (every write) and
:func:`kb.ops.lock_release.release`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kb import git, json_input
from kb.errors import RefusedError, os_failure

RELEASE_JOURNAL = "kb-lock-release.json"


def current_branch(top: Path) -> str | None:
    """``refs/heads/<b>`` HEAD points at, or None when detached."""
    proc = git.run(["symbolic-ref", "-q", "HEAD"], top, check=False)
    ref = proc.stdout.decode("utf-8", "surrogateescape").strip()
    return ref if proc.returncode == 0 and ref.startswith("refs/heads/") else None


def git_ref_locks(git_dir: Path, common_dir: Path, wait: float = 1.0) -> None:
    """Refuse while git's own ref lock files stay (``HEAD.lock``, ``packed-refs.lock``,
    ``refs/heads/…/*.lock``): a git killed in the middle of a ref update leaves them,
    and every update of the branch fails until they are removed. A running git
    holds them for milliseconds (another clone's lock claim, a user's commit), so
    kb waits up to ``wait`` seconds first. Like ``index.lock``, kb never deletes
    them (it cannot tell a crashed git from a running one). Lock refs
    (``refs/kb/locks``) are not looked at: claims race on them by design.
    Raises RefusedError naming them."""
    def present() -> list[Path]:
        found = [p for p in (git_dir / "HEAD.lock", common_dir / "packed-refs.lock") if p.exists()]
        heads = common_dir / "refs" / "heads"
        if heads.is_dir():
            found += sorted(heads.rglob("*.lock"))[:5]
        return found

    deadline = time.monotonic() + wait
    found = present()
    while found and time.monotonic() < deadline:
        time.sleep(0.05)
        found = present()
    if found:
        raise RefusedError(
            f"git's ref lock {'files exist' if len(found) > 1 else 'file exists'} "
            f"({', '.join(str(p) for p in found)}): another git process is updating refs, or one "
            "crashed. kb never deletes them; remove them yourself once no git process is running "
            "— nothing was changed")



def head_entries(top: Path, head: str | None, paths: list[str]) -> dict[str, tuple[str, str]]:
    """``{path: (mode, blob id)}`` of ``paths`` in commit ``head`` ({} without a head)."""
    if head is None:
        return {}
    proc = git.run(["ls-tree", "-z", "--full-tree", head, "--", *paths], top)
    return {e.path: (e.mode, e.oid) for e in git.tree_entries(proc.stdout)}



def uncommitted(top: Path, paths: list[str]) -> list[str]:
    """Repository paths under ``paths`` (literal pathspecs) that differ from HEAD: modified,
    staged, untracked, removed (``git status``, renames as a removal and an addition)."""
    proc = git.run(["--literal-pathspecs", "status", "--porcelain=v1", "-z", "--no-renames",
                    "--untracked-files=all", "--", *paths], top)
    return [rec[3:] for rec in git.split_z(proc.stdout) if rec]


#: The ``[paths]`` folder of each card format (:func:`kb.parse.classify`).
_FOLDER_OF = {"problem": "problems", "proposition": "propositions", "method": "methods",
              "verified": "verified", "direction": "progress", "progress": "progress"}


def uncommitted_files(k: Any, formats: Any, records: str | None = None) -> list[str]:
    """Repository paths of KB ``k``'s files of ``formats`` (:func:`kb.parse.classify`, keys
    of :data:`_FOLDER_OF`), and of the ``.json`` files of the KB-relative folder
    ``records`` when given, that differ from HEAD: modified, staged, new, removed, moved
    (one ``git status`` over their folders). Another file there (a scratch note) is not
    one. The inputs of ``kb report``, ``kb priority adjust`` and ``kb promote``."""
    from kb.parse import classify

    want = set(formats)
    folders = {k.config.paths[_FOLDER_OF[f]].strip("/") for f in want}
    if records is not None:
        folders.add(records)
    specs = sorted(k.repo_path(d) if d not in ("", ".") else k.prefix.rstrip("/") or "."
                   for d in folders)
    out = []
    for path in uncommitted(k.top, specs):
        rel = k.rel(path)
        if rel is None:
            continue
        folder, _, name = rel.rpartition("/")
        if classify(rel, k.config) in want or (folder == records and name.endswith(".json")):
            out.append(path)
    return out


def refuse_uncommitted(dirty: list[str], what: str) -> None:
    """RefusedError when ``dirty`` (the inputs of a generated ``what``: ``dashboard``,
    ``report``) is not empty: committed, it would describe a state no commit holds."""
    if dirty:
        raise RefusedError(
            f"{', '.join(dirty[:5])} {'has' if len(dirty) == 1 else 'have'} uncommitted changes: a "
            f"committed {what} would describe a state no commit holds; commit them first (or use "
            "--no-commit) — nothing was written")


def read_interrupted(top: Path, git_dir: Path | None = None) -> dict[str, Any] | None:
    """The journal of a release killed between its commit and the index update."""
    try:
        jp = (git_dir or git.git_dir(top)) / RELEASE_JOURNAL
        j = json_input.loads(jp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    # The shape lock release writes; anything else (torn, edited by hand) is no journal.
    if not (isinstance(j, dict) and isinstance(j.get("branch", ""), str)
            and isinstance(j.get("commit"), (str, type(None)))
            and isinstance(j.get("parent"), (str, type(None)))
            and isinstance(j.get("paths", []), list)
            and all(isinstance(p, str) for p in j.get("paths", []))):
        return None
    return j


def finish_interrupted(top: Path, jp: Path) -> None:
    """Bring the index entries of an interrupted release up to date (if still stale).

    Raises RefusedError (from :func:`kb.errors.os_failure`) when the damaged journal cannot be
    removed (a folder in its place).
    """
    if not jp.exists():
        return
    j = read_interrupted(top, jp.parent)
    if j is None:
        try:
            jp.unlink(missing_ok=True)
        except OSError as exc:  # a folder in its place, …
            raise os_failure(exc, f"remove the damaged kb journal {jp}", "nothing was written") from None
        return
    branch_tip = git.rev_parse(j.get("branch", ""), top)
    commit = j.get("commit")
    landed = branch_tip is not None and commit and git.run(
        ["merge-base", "--is-ancestor", commit, branch_tip], top, check=False).returncode == 0
    if landed and git.rev_parse("HEAD", top) == branch_tip:
        paths = j.get("paths", [])
        parent = head_entries(top, j.get("parent"), paths) if j.get("parent") else {}
        proc = git.run(["ls-files", "-s", "-z", "--", *paths], top)
        staged = {}
        for rec in git.split_z(proc.stdout):
            meta, _, p = rec.partition("\t")
            mode, oid, _stage = meta.split(" ")
            staged[p] = (mode, oid)
        stale = [p for p in paths if staged.get(p) == parent.get(p)]
        if stale and not reset_index(top, stale):
            return  # git's index is locked: the journal stays for the next command
    jp.unlink(missing_ok=True)


def finish_interrupted_release(top: Path) -> None:
    """Finish a lock release killed between its commit and its index update
    (every kb write calls this first; the index entries of the released paths
    are set to HEAD's when they still hold the old blobs)."""
    jp = git.git_dir(top) / RELEASE_JOURNAL
    if jp.exists():
        finish_interrupted(top, jp)


def index_write(top: Path, args: list[str], input: bytes | None = None) -> bool:
    """Run a git command that writes the real index, retried while another git
    process holds the index lock. False when it could not."""
    for i in range(20):
        proc = git.run(args, top, check=False, write=True, input=input, in_english=True)
        if proc.returncode == 0:
            return True
        if b"index.lock" not in proc.stderr:
            return False
        time.sleep(0.05 * (i + 1))
    return False


def set_index(top: Path, entries: str) -> bool:
    """Set the real index entries of the released paths to the committed blobs
    (``git update-index --index-info``: exactly those paths, the user's other
    staged work untouched)."""
    return index_write(top, ["update-index", "--index-info"],
                        entries.encode("utf-8", "surrogateescape"))


def reset_index(top: Path, paths: list[str]) -> bool:
    """``git reset -q -- paths`` (index entries := HEAD's)."""
    return index_write(top, ["reset", "-q", "--", *paths])



__all__ = ["RELEASE_JOURNAL", "current_branch", "git_ref_locks", "head_entries", "read_interrupted",
           "finish_interrupted", "finish_interrupted_release", "index_write", "set_index",
           "reset_index"]
