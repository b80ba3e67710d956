"""The commit step of the write transaction (kb.ops.transaction, kb.ops.commit).

Real git repositories in tmp (pinned identity and dates, conftest), no mocks.
kb commits from plumbing when no commit hook is installed: its commit must
hold the tree ``git commit --only`` makes, leave the user's other work where
it was, and refuse every dirty target exactly as ``git status`` judges it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Mapping

import pytest

from conftest import commit_all, git, git_init, tree_snapshot, write_files
from kb import git as kbgit
from kb.errors import RefusedError
from kb.ops import commit as commit_mod
from kb.ops import recovery
from kb.ops import transaction as txm
from kb.ops.transaction import Transaction
from kb.repo import open_kb

GITLINK = "0123456789abcdef0123456789abcdef01234567"  # a submodule's commit (not in this repo)
MESSAGE = "kb test.write\n\nKb-Op: test.write\n"


# -- helpers ------------------------------------------------------------------------------

def kb_repo(tmp_path: Path, *, subdir: str = "research", commit: bool = True,
            files: Mapping[str, str] | None = None) -> tuple[Path, Path]:
    """A repository with a KB in ``subdir``: a README, a gitlink at the top and one
    beside the KB's notes, a note, an executable file. Returns (repo, kb root)."""
    repo = git_init(tmp_path / "repo")
    kb_root = repo / subdir if subdir else repo
    pre = f"{subdir}/" if subdir else ""
    write_files(repo, {"README.md": "top\n", "other.txt": "other\n",
                       f"{pre}kb.toml": "[kb]\n", f"{pre}notes/a.md": "a\n",
                       f"{pre}tools/run.md": "#!/bin/sh\necho run\n", **(files or {})})
    os.chmod(kb_root / "tools/run.md", 0o755)
    if commit:
        commit_all(repo, "base")
        git(repo, "update-index", "--add", "--cacheinfo", f"160000,{GITLINK},sub")
        git(repo, "update-index", "--add", "--cacheinfo", f"160000,{GITLINK},{pre}notes/mod")
        git(repo, "commit", "-q", "-m", "submodules")
        for d in ("sub", f"{pre}notes/mod"):  # not checked out: an empty folder
            (repo / d).mkdir()
        assert git(repo, "status", "--porcelain") == ""
    return repo, kb_root


def tx_write(kb_root: Path, writes: Mapping[str, bytes], **kw: object) -> Transaction:
    with Transaction(open_kb(kb_root), "test.write", **kw) as tx:  # type: ignore[arg-type]
        for rel, data in writes.items():
            tx.write(rel, data)
    return tx


def git_commit_only(repo: Path, prefix: str, writes: Mapping[str, bytes]) -> None:
    """What kb's hook path does: write, ``git add`` the new paths, ``git commit --only``."""
    paths = [prefix + r for r in writes]
    tracked = set(git(repo, "--literal-pathspecs", "ls-files", "-z", "--", *paths)
                  .split("\0")) - {""}
    for rel, data in writes.items():
        (repo / prefix / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / prefix / rel).write_bytes(data)
    new = [p for p in paths if p not in tracked]
    if new:
        git(repo, "--literal-pathspecs", "add", "--", *new)
    git(repo, "--literal-pathspecs", "commit", "-q", "--only", "-F", "-", "--", *paths,
        input=MESSAGE.encode())


def twin(repo: Path) -> Path:
    """An exact copy of ``repo`` (work tree, index, objects)."""
    dest = repo.parent / (repo.name + "-twin")
    shutil.copytree(repo, dest, symlinks=True)
    return dest


def state(repo: Path) -> dict[str, object]:
    """Everything a refused transaction must leave as it was."""
    return {"files": tree_snapshot(repo, skip_git=True),
            "head": git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False),
            "index": git(repo, "ls-files", "-s", "--debug"),
            # GIT_OPTIONAL_LOCKS=0: `git status` would otherwise refresh the index's
            # stat data itself (racily clean entries), and the next reading would differ.
            "status": git(repo, "status", "--porcelain=v1", "--untracked-files=all",
                          env={"GIT_OPTIONAL_LOCKS": "0"}),
            "journal": (Path(git(repo, "rev-parse", "--absolute-git-dir"))
                        / recovery.JOURNAL_NAME).exists()}


def spy_git(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the git commands kb runs (the real git still runs them), as one string each."""
    seen: list[str] = []
    run, start = kbgit.run, kbgit.start

    def spy_run(args, cwd, **kw):  # type: ignore[no-untyped-def]
        seen.append(" ".join(args))
        return run(args, cwd, **kw)

    def spy_start(args, cwd, **kw):  # type: ignore[no-untyped-def]
        seen.append(" ".join(args))
        return start(args, cwd, **kw)

    monkeypatch.setattr(kbgit, "run", spy_run)
    monkeypatch.setattr(kbgit, "start", spy_start)
    return seen


# -- the commit equals `git commit --only` ------------------------------------------------

WRITES = {
    "notes/a.md": b"a, edited\n",                       # modified, beside a gitlink
    "notes/b.md": b"b, new\n",                          # new file in an existing folder
    "tools/run.md": b"#!/bin/sh\necho run faster\n",    # 100755 stays 100755
    "new/deeper/x.md": b"x, in folders HEAD lacks\n",  # new nested folders
    "untracked.md": b"was untracked, now committed\n",  # exists untracked on disk
}


@pytest.mark.parametrize("subdir", ["research", ""])
def test_commit_equals_git_commit_only(tmp_path: Path, subdir: str) -> None:
    repo, kb_root = kb_repo(tmp_path, subdir=subdir)
    pre = f"{subdir}/" if subdir else ""
    write_files(repo, {"other.txt": "other, staged\n", "README.md": "top, unstaged\n",
                       f"{pre}untracked.md": "untracked\n"})
    git(repo, "add", "other.txt")
    other = twin(repo)

    tx = tx_write(kb_root, WRITES)
    git_commit_only(other, pre, WRITES)

    assert tx.result is not None and tx.result.commit == git(repo, "rev-parse", "HEAD")
    assert git(repo, "rev-parse", "HEAD^{tree}") == git(other, "rev-parse", "HEAD^{tree}")
    assert git(repo, "rev-parse", "HEAD~1") == git(other, "rev-parse", "HEAD~1")
    # the real index gets exactly the committed entries: the same index as git's
    assert git(repo, "ls-files", "-s") == git(other, "ls-files", "-s")
    assert git(repo, "status", "--porcelain") == git(other, "status", "--porcelain")
    assert tree_snapshot(repo, skip_git=True) == tree_snapshot(other, skip_git=True)
    # what the tree holds, spelled out
    tree = git(repo, "ls-tree", "-r", "HEAD")
    assert f"100755 blob {kbgit.blob_id(WRITES['tools/run.md'])}\t{pre}tools/run.md" in tree
    assert f"160000 commit {GITLINK}\tsub" in tree
    assert f"160000 commit {GITLINK}\t{pre}notes/mod" in tree
    assert f"\t{pre}new/deeper/x.md" in tree
    # the user's staged change stays staged and out of the commit; the unstaged one too
    assert git(repo, "diff", "--cached", "--name-only") == "other.txt"
    assert git(repo, "show", "HEAD:other.txt") == "other"
    assert sorted(git(repo, "status", "--porcelain").splitlines()) == [" M README.md",
                                                                       "M  other.txt"]


def test_first_commit_of_an_unborn_branch(tmp_path: Path) -> None:
    repo, kb_root = kb_repo(tmp_path, commit=False)
    write_files(repo, {"other.txt": "staged\n"})
    git(repo, "add", "other.txt")
    other = twin(repo)
    writes = {"notes/a.md": b"first\n", "new/x.md": b"x\n"}
    tx = tx_write(kb_root, writes)
    git_commit_only(other, "research/", writes)
    assert tx.result is not None and tx.result.commit == git(repo, "rev-parse", "HEAD")
    assert git(repo, "rev-list", "--count", "HEAD") == "1"
    assert git(repo, "rev-parse", "HEAD^{tree}") == git(other, "rev-parse", "HEAD^{tree}")
    assert git(repo, "ls-tree", "-r", "--name-only", "HEAD").split() == [
        "research/new/x.md", "research/notes/a.md"]
    assert git(repo, "ls-files", "-s") == git(other, "ls-files", "-s")
    assert git(repo, "diff", "--cached", "--name-only") == "other.txt"


def test_clean_commit_takes_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No `git status`, HEAD resolved once, no temporary index."""
    repo, kb_root = kb_repo(tmp_path)
    seen = spy_git(monkeypatch)
    tx_write(kb_root, {"notes/a.md": b"edited\n", "new/x.md": b"x\n"})
    commands = [c.split(" ")[c.startswith("--literal-pathspecs")] for c in seen]
    assert "status" not in commands
    assert len([c for c in seen if c.startswith("rev-parse") and "HEAD" in c]) == 1
    assert "read-tree" not in commands and "write-tree" not in commands
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("subdir", ["research", ""])
def test_many_folders_and_names_that_sort_around_a_folder(tmp_path: Path, subdir: str) -> None:
    """git sorts a folder as if its name ended with '/': 'a-b/' < 'a.md' < 'a/' < 'a0'.
    Names that look like pathspec magic or globs are the files they name."""
    pre = f"{subdir}/" if subdir else ""
    existing = {"x/a.md": "1\n", "x/a0": "2\n", "x/a/b.md": "3\n", "x/a-b/c.md": "4\n",
                ":x/keep.md": "5\n", "x*/keep.md": "6\n", "xy/keep.md": "7\n"}
    repo, kb_root = kb_repo(tmp_path, subdir=subdir,
                            files={pre + k: v for k, v in existing.items()})
    other = twin(repo)
    writes = {"x/a/b.md": b"3'\n", "x/a-b/new.md": b"n\n", "x/a/c/d/e.md": b"e\n",
              "x/ä ö.md": "umlaut\n".encode("utf-8"), ":x/new.md": b"colon\n",
              "x*/keep.md": b"star\n"}
    tx_write(kb_root, writes)
    git_commit_only(other, pre, writes)
    assert git(repo, "rev-parse", "HEAD^{tree}") == git(other, "rev-parse", "HEAD^{tree}")
    git(repo, "fsck", "--no-dangling", "--strict")
    names = git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    assert {pre + ":x/keep.md", pre + ":x/new.md", pre + "xy/keep.md"} <= set(names)
    assert git(repo, "status", "--porcelain") == ""


def test_clean_crlf_file_under_autocrlf_is_accepted(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Disk bytes (CRLF) differ from the blob (LF): the fast path defers to `git status`."""
    repo = git_init(tmp_path / "repo")
    git(repo, "config", "core.autocrlf", "true")
    write_files(repo, {"kb.toml": "[kb]\n", "notes/a.md": "one\r\ntwo\r\n"})
    commit_all(repo, "base")
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "show", "HEAD:notes/a.md") == "one\ntwo"  # stored with LF
    other = twin(repo)
    seen = spy_git(monkeypatch)
    writes = {"notes/a.md": b"one\r\ntwo\r\nthree\r\n"}
    tx = tx_write(repo, writes)
    assert any(" status " in f" {c} " for c in seen)
    git_commit_only(other, "", writes)
    assert tx.result is not None and tx.result.commit is not None
    assert git(repo, "rev-parse", "HEAD^{tree}") == git(other, "rev-parse", "HEAD^{tree}")
    assert git(repo, "show", "HEAD:notes/a.md") == "one\ntwo\nthree"
    assert git(repo, "status", "--porcelain") == ""


# -- dirty targets are refused with nothing written -----------------------------------------

def _staged(repo: Path) -> None:
    write_files(repo, {"research/notes/a.md": "a, staged\n"})
    git(repo, "add", "research/notes/a.md")


def _unstaged(repo: Path) -> None:
    write_files(repo, {"research/notes/a.md": "a, unstaged\n"})


def _staged_then_reverted(repo: Path) -> None:  # disk equals HEAD, the index does not
    _staged(repo)
    write_files(repo, {"research/notes/a.md": "a\n"})


def _mode_only(repo: Path) -> None:  # same bytes, now executable (core.fileMode)
    os.chmod(repo / "research/notes/a.md", 0o755)


def _staged_deletion(repo: Path) -> None:
    git(repo, "rm", "-q", "--cached", "research/notes/a.md")


def _intent_to_add(repo: Path) -> None:
    write_files(repo, {"research/notes/a.md": "a\n", "research/notes/new.md": "new\n"})
    git(repo, "add", "-N", "research/notes/new.md")


def _conflict(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "theirs")
    write_files(repo, {"research/notes/a.md": "a, theirs\n"})
    commit_all(repo, "theirs")
    git(repo, "checkout", "-q", "main")
    write_files(repo, {"research/notes/a.md": "a, ours\n"})
    commit_all(repo, "ours")
    git(repo, "merge", "-q", "theirs", check=False)
    assert "UU research/notes/a.md" in git(repo, "status", "--porcelain")


DIRTY = {"staged": _staged, "unstaged": _unstaged, "staged-then-reverted": _staged_then_reverted,
         "mode-only": _mode_only, "staged-deletion": _staged_deletion,
         "intent-to-add": _intent_to_add, "conflict": _conflict}


@pytest.mark.parametrize("case", sorted(DIRTY))
def test_dirty_target_is_refused_and_nothing_written(tmp_path: Path, case: str) -> None:
    repo, kb_root = kb_repo(tmp_path)
    DIRTY[case](repo)
    target = "notes/new.md" if case == "intent-to-add" else "notes/a.md"
    before = state(repo)
    # A conflict is refused earlier: no kb write while a merge is in progress (team work).
    match = ("a merge is in progress" if case == "conflict" else
             f"research/{target} has uncommitted changes; commit or stash them first")
    with pytest.raises(RefusedError, match=match):
        tx_write(kb_root, {target: b"kb's edit\n", "notes/fresh.md": b"fresh\n"})
    assert state(repo) == before


def test_dirty_target_is_written_with_no_commit(tmp_path: Path) -> None:
    repo, kb_root = kb_repo(tmp_path)
    _staged(repo)
    head = git(repo, "rev-parse", "HEAD")
    tx = tx_write(kb_root, {"notes/a.md": b"kb's edit\n"}, no_commit=True)
    assert tx.result is not None and tx.result.commit is None
    assert (kb_root / "notes/a.md").read_bytes() == b"kb's edit\n"
    assert git(repo, "rev-parse", "HEAD") == head


def test_head_moving_during_the_commit_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """update-ref swaps from the HEAD read under the lock: a commit landing in between wins."""
    repo, kb_root = kb_repo(tmp_path)
    read_head = commit_mod.read_head

    def then_someone_commits(top, paths):  # type: ignore[no-untyped-def]
        head = read_head(top, paths)
        git(repo, "commit", "-q", "--allow-empty", "-m", "meanwhile")
        return head

    monkeypatch.setattr(commit_mod, "read_head", then_someone_commits)
    before = state(repo)
    with pytest.raises(RefusedError, match="HEAD moved while kb was committing"):
        tx_write(kb_root, {"notes/a.md": b"kb's edit\n", "notes/x.md": b"x\n"})
    after = state(repo)
    assert git(repo, "log", "-1", "--format=%s") == "meanwhile"
    assert {k: after[k] for k in ("files", "index", "status", "journal")} == \
        {k: before[k] for k in ("files", "index", "status", "journal")}


def test_file_where_head_has_a_file_as_folder_is_refused(tmp_path: Path) -> None:
    """HEAD has research/data as a file the user deleted: kb does not commit data/x.md over it."""
    repo, kb_root = kb_repo(tmp_path, files={"research/data": "a file\n"})
    (kb_root / "data").unlink()
    head = git(repo, "rev-parse", "HEAD")
    index = git(repo, "ls-files", "-s")
    with pytest.raises(RefusedError, match="research/data/: it is a blob in HEAD"):
        tx_write(kb_root, {"data/x.md": b"x\n"})
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "ls-files", "-s") == index
    assert not (kb_root / "data/x.md").exists()
    assert not (Path(git(repo, "rev-parse", "--absolute-git-dir")) / recovery.JOURNAL_NAME).exists()


def test_journal_records_each_blob_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The journal names HEAD and each file's old and new blob, each hashed once per commit."""
    big = "line of a large tree\n" * 100_000
    repo, kb_root = kb_repo(tmp_path, files={"research/notes/big.md": big})
    new = big.encode() + b"one more line\n"
    calls: list[int] = []
    blob_id = kbgit.blob_id

    def counting(data: bytes) -> str:
        if len(data) >= len(big):
            calls.append(len(data))
        return blob_id(data)

    monkeypatch.setattr(kbgit, "blob_id", counting)
    seen: dict[str, object] = {}
    atomic_write = txm.atomic_write
    journal = Path(git(repo, "rev-parse", "--absolute-git-dir")) / recovery.JOURNAL_NAME

    def peek(path: Path, data: bytes) -> None:  # the journal exists while files are written
        seen.update(json.loads(journal.read_text()))
        atomic_write(path, data)

    monkeypatch.setattr(txm, "atomic_write", peek)
    head = git(repo, "rev-parse", "HEAD")
    tx_write(kb_root, {"notes/big.md": new}, known_errors={"0" * 40: []})  # format_guard looks up
    assert sorted(calls) == [len(big), len(new)]
    assert seen["head"] == head
    assert seen["files"] == {"research/notes/big.md": {
        "old": blob_id(big.encode()), "tracked": True, "new": blob_id(new)}}
    assert not journal.exists()


def test_written_files_get_the_permissions_open_would_give(tmp_path: Path) -> None:
    """A new file is 0o666 less the umask (not mkstemp's 0o600); an existing one keeps its mode."""
    repo, kb_root = kb_repo(tmp_path)
    os.chmod(kb_root / "notes/a.md", 0o640)
    git(repo, "commit", "-q", "--allow-empty", "-m", "mode")
    old = os.umask(0o027)
    try:
        tx_write(kb_root, {"notes/new.md": b"new\n", "notes/a.md": b"a, edited\n"})
    finally:
        os.umask(old)
    assert (kb_root / "notes/new.md").stat().st_mode & 0o777 == 0o640
    assert (kb_root / "notes/a.md").stat().st_mode & 0o777 == 0o640
    assert (kb_root / "tools/run.md").stat().st_mode & 0o777 == 0o755
    assert git(repo, "status", "--porcelain") == ""


def test_plumbing_commit_runs_gits_auto_maintenance(tmp_path: Path) -> None:
    """Like `git commit`, a kb commit packs loose objects when gc.auto says so (here at
    once: threshold 1, not detached); with gc.auto=0 nothing is packed."""
    repo, kb_root = kb_repo(tmp_path)
    # git estimates the loose objects from the folder objects/17: give it three.
    blobs = [b for b in (b"blob %d\n" % i for i in range(20_000))
             if kbgit.blob_id(b).startswith("17")][:3]
    for b in blobs:
        git(repo, "hash-object", "-w", "--stdin", input=b)
    git(repo, "config", "gc.auto", "0")
    tx_write(kb_root, {"notes/a.md": b"a, edited\n"})
    assert "packs: 0" in git(repo, "count-objects", "-v")
    git(repo, "config", "gc.auto", "1")
    git(repo, "config", "gc.autoDetach", "false")
    tx_write(kb_root, {"notes/a.md": b"a, edited again\n"})
    counts = dict(line.split(": ") for line in git(repo, "count-objects", "-v").splitlines())
    # Everything reachable is packed; only the three unreachable blobs stay loose.
    assert int(counts["packs"]) >= 1 and int(counts["count"]) == len(blobs)
    assert git(repo, "status", "--porcelain") == ""

    assert git(repo, "fsck", "--strict", "--no-dangling") == ""
