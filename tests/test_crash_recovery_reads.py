"""Read commands after a killed write (issue 11): ``kb ls``, ``kb show``, ``kb verify`` and
``kb index`` first recover what the dead transaction left (as the next write would), say so
once on stderr, and answer from the recovered state; when recovery cannot run they say so and
answer from the working tree as it is. kb is killed with SIGKILL from outside (kb_faults.py)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, invoke
from test_crash_recovery import git_dir, killed


def hyp_ids(root: Path) -> list[str]:
    r = invoke("ls", "hypotheses", "--json", cwd=root)
    assert r.code == 0, r.stderr
    return [h["id"] for h in r.json()["objects"]]


def test_kb_ls_rolls_back_a_write_killed_before_its_commit(tree_kb: Path) -> None:
    root = tree_kb
    assert invoke("hyp", "add", "A", cwd=root).code == 0
    head = git(root, "rev-parse", "HEAD")
    killed(root, "commit", "hyp", "add", "B")  # files written, journal on disk, no commit
    journal = git_dir(root) / "kb-transaction.json"
    assert journal.exists() and ": B" in (root / "tree.md").read_text(encoding="utf-8")
    r = invoke("ls", "hypotheses", "--json", cwd=root)
    assert r.code == 0, r.stderr
    assert [h["id"] for h in r.json()["objects"]] == ["H1"]  # B was never committed: not listed
    assert r.stderr.count("rolled back an interrupted kb write") == 1 and "tree.md" in r.stderr
    assert not journal.exists()
    assert git(root, "status", "--porcelain") == "" and git(root, "rev-parse", "HEAD") == head
    again = invoke("ls", "hypotheses", cwd=root)
    assert again.code == 0 and "interrupted" not in again.stderr  # said once, not every time


def test_kb_show_and_verify_recover_too(tree_kb: Path) -> None:
    root = tree_kb
    assert invoke("hyp", "add", "A", cwd=root).code == 0
    killed(root, "commit", "hyp", "add", "B")
    r = invoke("show", "H2", cwd=root)
    assert r.code == 1 and "rolled back" in r.stderr  # H2 does not exist
    killed(root, "commit", "hyp", "add", "C")
    r = invoke("verify", cwd=root)
    assert r.code == 0, r.stdout + r.stderr
    assert "rolled back" in r.stderr and git(root, "status", "--porcelain") == ""


def test_kb_ls_repairs_the_index_of_a_commit_that_landed(tree_kb: Path) -> None:
    """Killed between update-ref and update-index: the commit is in; git's index showed a
    staged reversal (MM). `kb ls` repairs it and lists the committed hypothesis."""
    root = tree_kb
    killed(root, "before:update-index", "hyp", "add", "B")
    assert git(root, "status", "--porcelain").startswith("MM")
    r = invoke("ls", "hypotheses", "--json", cwd=root)
    assert r.code == 0 and [h["id"] for h in r.json()["objects"]] == ["H1"]
    assert "commit had landed" in r.stderr
    assert git(root, "status", "--porcelain") == ""


def test_recovery_blocked_by_index_lock_is_said_once_and_the_read_answers(tree_kb: Path) -> None:
    root = tree_kb
    killed(root, "commit", "hyp", "add", "B")
    lock = git_dir(root) / "index.lock"
    lock.write_bytes(b"")
    journal = git_dir(root) / "kb-transaction.json"
    try:
        r = invoke("ls", "hypotheses", "--json", cwd=root)
        assert r.code == 0
        assert [h["id"] for h in r.json()["objects"]] == ["H1"]  # the working tree as it is
        assert r.stderr.count("an interrupted kb write") == 1 and "index.lock" in r.stderr
        assert journal.exists()  # kept for a later recovery
    finally:
        lock.unlink()
    assert hyp_ids(root) == []  # recovered now: B (never committed) is gone
    assert not journal.exists()


def test_a_live_writers_journal_is_left_alone(tree_kb: Path) -> None:
    """A journal while the write lock is held belongs to a writer still running."""
    from kb.ops.transaction import acquire_write_lock, release_write_lock

    root = tree_kb
    journal = git_dir(root) / "kb-transaction.json"
    journal.write_text(json.dumps({"head": git(root, "rev-parse", "HEAD"), "files": {}}))
    lk = acquire_write_lock(git_dir(root), "test")  # no linked worktree: the common dir
    try:
        r = invoke("ls", "hypotheses", cwd=root)
        assert r.code == 0 and "interrupted" not in r.stderr
        assert journal.exists()
    finally:
        release_write_lock(lk)
    r = invoke("ls", "hypotheses", cwd=root)
    assert r.code == 0 and not journal.exists()


def test_inside_a_git_hook_nothing_is_touched(tree_kb: Path, monkeypatch) -> None:
    root = tree_kb
    killed(root, "commit", "hyp", "add", "B")
    monkeypatch.setenv("GIT_INDEX_FILE", str(git_dir(root) / "index"))
    r = invoke("ls", "hypotheses", cwd=root)
    assert r.code == 0 and "an interrupted kb write" in r.stderr
    assert (git_dir(root) / "kb-transaction.json").exists()


def test_kb_writes_through_hooks_say_nothing_about_their_own_journal(tree_kb: Path) -> None:
    """kb's own commit runs the pre-commit hook (`kb verify --staged`) while its journal
    exists: the hook sees the write lock held and says nothing."""
    root = tree_kb
    r = invoke("hooks", "install", cwd=root)
    assert r.code == 0, r.stderr
    r = invoke("hyp", "add", "Through the hook", cwd=root)
    assert r.code == 0, r.stderr
    assert "interrupted" not in r.stderr
    assert git(root, "status", "--porcelain") == ""


def test_plain_git_commit_hook_after_a_kill_says_so(tree_kb: Path) -> None:
    """A user's plain `git commit` after a killed write: the pre-commit hook (GIT_INDEX_FILE
    set, git holding the index) touches nothing and says an interrupted write is pending."""
    import subprocess

    from conftest import source_env

    root = tree_kb
    assert invoke("hooks", "install", cwd=root).code == 0
    killed(root, "commit", "hyp", "add", "B")
    (root / "notes.txt").write_text("unrelated\n")
    git(root, "add", "notes.txt")
    proc = subprocess.run(["git", "commit", "-q", "-m", "notes", "--", "notes.txt"], cwd=root,
                          capture_output=True, env=source_env(), timeout=120)
    err = proc.stderr.decode()
    assert "an interrupted kb write" in err, err
    assert (git_dir(root) / "kb-transaction.json").exists()
    assert hyp_ids(root) == []  # the next read outside git recovers it


def test_a_read_removes_next_index_litter_of_dead_git(tree_kb: Path) -> None:
    """A killed `git commit --only` leaves next-index-<pid>.lock; the next kb command, a read
    included, removes it when that process is dead (a live one's is kept)."""
    import os

    root = tree_kb
    dead = git_dir(root) / "next-index-999999999.lock"
    dead.write_bytes(b"")
    live = git_dir(root) / f"next-index-{os.getpid()}.lock"
    live.write_bytes(b"")
    try:
        r = invoke("ls", cwd=root)
        assert r.code == 0
        assert not dead.exists() and live.exists()
    finally:
        live.unlink(missing_ok=True)
