"""Crash recovery around git's index (issue 11).

kb is killed (SIGKILL, injected from outside by ``kb_faults.py``) at the git
command of each step; the next kb command must leave the repository as if
the write never happened, or as if it had fully happened — never a staged
reversal, never a staged file of a write that was rolled back, never litter.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, invoke, run_script, source_env

FAULTS = Path(__file__).resolve().parent / "kb_faults.py"


def killed(root: Path, spec: str, *args: str) -> subprocess.CompletedProcess:
    env = source_env()
    proc = subprocess.run([sys.executable, str(FAULTS), spec, "--", *args], cwd=root,
                          capture_output=True, env=env, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    return proc


def git_dir(root: Path) -> Path:
    return Path(git(root, "rev-parse", "--absolute-git-dir"))


def with_commit_hook(root: Path) -> None:
    """An executable commit hook: kb then commits through `git commit --only`."""
    hook = git_dir(root) / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)


def test_rollback_waits_for_index_lock_and_keeps_its_journal(tree_kb: Path) -> None:
    """A write killed after `git add` staged its new card: recovery refuses while
    index.lock exists (journal kept), then restores the index too."""
    root = tree_kb
    assert invoke("hyp", "add", "A", cwd=root).code == 0
    with_commit_hook(root)
    head = git(root, "rev-parse", "HEAD")
    killed(root, "before:commit", "exp", "new", "--hyp", "H1", "a run")
    assert "experiments/E001.md" in git(root, "diff", "--cached", "--name-only")
    lock = git_dir(root) / "index.lock"
    lock.write_bytes(b"")  # the git commit that was killed with kb
    journal = git_dir(root) / "kb-transaction.json"
    r = invoke("exp", "new", "--hyp", "H1", "another run", cwd=root)
    assert r.code == 1 and "index.lock" in r.stderr, r.stderr
    assert journal.exists()  # nothing restored yet: the journal stays
    lock.unlink()
    r = invoke("exp", "new", "--hyp", "H1", "another run", "--json", cwd=root)
    assert r.code == 0, r.stderr
    assert "experiments/E001.md" in r.json()["recovered"]
    assert not journal.exists()
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "rev-parse", "HEAD~1") == head
    # the killed write left nothing a plain `git commit` could pick up
    assert git(root, "show", "--stat", "--format=", "HEAD").count("E001.md") == 1
    assert "another run" in (root / "experiments/E001.md").read_text(encoding="utf-8")


def test_kill_between_update_ref_and_update_index_is_repaired(tree_kb: Path) -> None:
    root = tree_kb
    head = git(root, "rev-parse", "HEAD")
    killed(root, "before:update-index", "hyp", "add", "B")
    assert git(root, "rev-parse", "HEAD~1") == head  # the commit landed
    assert git(root, "status", "--porcelain").startswith("MM")  # a staged reversal
    r = invoke("hyp", "add", "C", cwd=root)
    assert r.code == 0, r.stderr
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "diff", "HEAD~1", "HEAD", "--stat").count("tree.md") == 1
    text = (root / "tree.md").read_text(encoding="utf-8")
    assert ": B\n" in text and ": C\n" in text


def test_kill_in_a_lock_release_is_repaired_by_the_next_write(tree_kb: Path) -> None:
    root = tree_kb
    r = invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=root)
    assert r.code == 0, r.stderr
    with (root / "tree.md").open("a", encoding="utf-8") as fh:
        fh.write("\n## H9: Released by hand\nStatus: 待验证\n")
    killed(root, "after:update-ref", "lock", "release", "tree.md", "--owner", "alice",
           "--no-verify")
    assert git(root, "status", "--porcelain").startswith("M")
    r = invoke("hyp", "add", "Next", cwd=root)
    assert r.code == 0, r.stderr
    assert git(root, "status", "--porcelain") == ""
    assert "H9: Released by hand" in git(root, "show", "HEAD:tree.md")


def test_no_next_index_litter_survives_the_next_command(tree_kb: Path) -> None:
    root = tree_kb
    gd = git_dir(root)
    # A git commit killed from its own hook leaves its temporary index (and index.lock).
    hook = gd / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\nkill -9 $PPID\n")
    hook.chmod(0o755)
    r = invoke("hyp", "add", "A", cwd=root)
    assert r.code == 1
    assert list(gd.glob("next-index-*.lock"))
    hook.unlink()
    (gd / "index.lock").unlink(missing_ok=True)  # the user's part: kb never deletes it
    (gd / "next-index-999999999.lock").write_bytes(b"")  # a dead pid
    r = invoke("hyp", "add", "A", cwd=root)
    assert r.code == 0, r.stderr
    assert not list(gd.glob("next-index-*.lock"))
    assert git(root, "status", "--porcelain") == ""


def test_fsck_is_clean_while_a_lock_exists(tree_kb: Path) -> None:
    root = tree_kb
    git(root, "gc", "-q", "--prune=now")
    r = invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=root)
    assert r.code == 0, r.stderr
    proc = subprocess.run(["git", "fsck", "--full", "--strict"], cwd=root, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"missing" not in proc.stdout + proc.stderr


SIGNER = """#!/bin/sh
# A stand-in for gpg: reads the payload, reports a signature, prints a fixed one.
cat >/dev/null
printf '[GNUPG:] KEY_CONSIDERED K 0\\n[GNUPG:] BEGIN_SIGNING\\n[GNUPG:] SIG_CREATED D 1 8 00 1 K\\n' >&2
printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nZmFrZQ==\\n-----END PGP SIGNATURE-----\\n'
"""


@pytest.mark.parametrize("signer", ["works", "fails"])
def test_commits_are_signed_when_git_would_sign_them(tree_kb: Path, tmp_path: Path,
                                                     signer: str) -> None:
    root = tree_kb
    prog = tmp_path / "signer"
    prog.write_text(SIGNER if signer == "works" else "#!/bin/sh\necho 'no secret key' >&2\nexit 2\n")
    prog.chmod(0o755)
    git(root, "config", "gpg.program", str(prog))
    git(root, "config", "commit.gpgSign", "true")
    head = git(root, "rev-parse", "HEAD")
    before = (root / "tree.md").read_bytes()
    r = invoke("hyp", "add", "Signed", cwd=root)
    if signer == "fails":
        assert r.code == 1 and "sign" in r.stderr.lower(), r.stderr
        assert git(root, "rev-parse", "HEAD") == head
        assert (root / "tree.md").read_bytes() == before
        assert git(root, "status", "--porcelain") == ""
        return
    assert r.code == 0, r.stderr
    assert "gpgsig " in git(root, "cat-file", "commit", "HEAD")
    # lock release commits too
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=root).code == 0
    with (root / "tree.md").open("a", encoding="utf-8") as fh:
        fh.write("\n## H9: Released\nStatus: 待验证\n")
    r = invoke("lock", "release", "tree.md", "--owner", "alice", "--no-verify", cwd=root)
    assert r.code == 0, r.stderr
    assert "gpgsig " in git(root, "cat-file", "commit", "HEAD")


def test_git_ref_lock_files_are_named_not_retried(tree_kb: Path) -> None:
    """A git killed while updating refs leaves HEAD.lock / packed-refs.lock: kb says so
    (never 'the branch kept moving'), changes nothing, and works once they are gone."""
    root = tree_kb
    assert invoke("hyp", "add", "A", cwd=root).code == 0
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=root).code == 0
    with (root / "tree.md").open("a", encoding="utf-8") as fh:
        fh.write("\n## H2: By hand\nStatus: 待验\n")
    head = git(root, "rev-parse", "HEAD")
    for name in ("HEAD.lock", "packed-refs.lock"):
        lock = git_dir(root) / name
        lock.write_bytes(b"")
        r = invoke("lock", "release", "tree.md", "--owner", "alice", "--no-verify", cwd=root)
        assert r.code == 1 and name in r.stderr, r.stderr
        r = invoke("hyp", "add", "B", "--no-commit", cwd=root)
        assert r.code == 1 and name in r.stderr, r.stderr
        assert git(root, "rev-parse", "HEAD") == head
        lock.unlink()
    r = invoke("lock", "release", "tree.md", "--owner", "alice", "--no-verify", cwd=root)
    assert r.code == 0, r.stderr


def test_temporary_files_of_a_killed_write_are_removed(tree_kb: Path) -> None:
    root = tree_kb
    (root / ".kb-tmp-abc123.md").write_text("half a tree\n")
    (root / "experiments").mkdir(exist_ok=True)
    (root / "experiments" / ".kb-tmp-def456.md").write_text("half an experiment\n")
    r = invoke("hyp", "add", "A", cwd=root)
    assert r.code == 0, r.stderr
    assert not list(root.rglob(".kb-tmp-*"))
    assert git(root, "status", "--porcelain") == ""
