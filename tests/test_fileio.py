"""kb.fileio: a FIFO, a socket or a folder where kb reads a file is refused at once, never
waited on. Before, `mkfifo Problems/q1.md` made kb problem add (and the MCP server running
it), kb ls, kb verify and kb dashboard wait for a writer forever. The commands run in
subprocesses with a timeout: a hang fails the test instead of the suite."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from conftest import git, run_script, tree_snapshot
from kb.errors import SpecialFileError
from kb.fileio import read_regular

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")


def test_read_regular_reads_files_and_refuses_the_rest(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_bytes(b"x\r\n\xff")
    assert read_regular(tmp_path / "a.md") == b"x\r\n\xff"
    os.mkfifo(tmp_path / "fifo.md")
    with pytest.raises(SpecialFileError, match="FIFO"):
        read_regular(tmp_path / "fifo.md")  # at once: nobody writes to it
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s.md"))
        with pytest.raises(OSError):
            read_regular(tmp_path / "s.md")
    finally:
        sock.close()
    (tmp_path / "d.md").mkdir()
    with pytest.raises(IsADirectoryError):
        read_regular(tmp_path / "d.md")
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "gone.md")


@pytest.mark.parametrize("target", ["tree.md", "DASHBOARD.md", "Problems/q1.md", "TRAIL.md"])
def test_a_fifo_in_a_files_place_never_hangs_a_command(tree_kb: Path, target: str) -> None:
    """Reads answer (the FIFO is no file: a tracked file in its place reads as gone), and
    writes are refused or go on without it; nothing waits, nothing ends in exit 3."""
    root = tree_kb
    for args in (["hyp", "add", "x"], ["problem", "add", "q1", "s"],
                 ["trail", "add", "--kind", "goal", "--title", "G"], ["trail", "render"]):
        r = run_script(*args, cwd=root, timeout=60)
        assert r.code == 0, (args, r.stderr)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "more", "--no-verify", "--allow-empty")
    (root / target).unlink()
    os.mkfifo(root / target)
    for args in (["ls", "hypotheses"], ["show", "H1"], ["verify"], ["verify", "--fix"],
                 ["index"], ["diff"], ["find", "x"], ["brief"], ["dashboard", "--no-commit"],
                 ["hyp", "add", "y", "--no-commit"], ["problem", "add", "q9", "s", "--no-commit"],
                 ["trail", "tree"]):
        r = run_script(*args, cwd=root, timeout=30)  # a hang raises TimeoutExpired
        assert r.code in (0, 1, 2), (args, r.code, r.stderr)
        assert "Traceback" not in r.stderr, (args, r.stderr)
    assert (root / target).is_fifo()


def _files(root: Path) -> dict[str, bytes]:
    """The KB's files (not git's, not kb's cache in .kb/, which a refused write may fill)."""
    return {p: b for p, b in tree_snapshot(root, skip_git=True).items() if not p.startswith(".kb")}


def test_a_write_to_a_fifo_is_refused_and_writes_nothing(tree_kb: Path) -> None:
    root = tree_kb
    (root / "Problems").mkdir(exist_ok=True)
    os.mkfifo(root / "Problems" / "q1.md")
    head = git(root, "rev-parse", "HEAD")
    before = _files(root)
    r = run_script("problem", "add", "q1", "statement", cwd=root, timeout=30)
    assert r.code == 1, r.stderr
    assert "Problems/q1.md" in r.stderr and "FIFO" in r.stderr and "nothing was written" in r.stderr
    assert git(root, "rev-parse", "HEAD") == head
    assert _files(root) == before


def test_verify_fix_leaves_the_dashboard_when_tree_md_is_a_fifo(tree_kb: Path) -> None:
    """A FIFO in tree.md's place reads as no tree: `kb verify --fix` regenerated DASHBOARD.md
    from it (every hypothesis gone from the dashboard) while it exited 1. It says why it
    leaves the dashboard, and leaves it."""
    root = tree_kb
    assert run_script("hyp", "add", "a", cwd=root).code == 0
    before = (root / "DASHBOARD.md").read_bytes()
    (root / "tree.md").unlink()
    os.mkfifo(root / "tree.md")
    r = run_script("verify", "--fix", cwd=root, timeout=30)
    assert r.code == 1 and "tree.md is not a regular file" in r.stderr, r.stderr
    assert (root / "DASHBOARD.md").read_bytes() == before
