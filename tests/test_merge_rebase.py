"""kb's regenerating drivers under ``git pull --rebase``: DASHBOARD.md is regenerated for
each replayed commit from HEAD and the commit being replayed (git names it only in
``rebase-merge/done``), so the rebased branch keeps a fresh dashboard and no pick of
kb's is dropped as empty. (TRAIL.md's case: tests/test_sync_trail.py.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import git, invoke, make_team


def _ok(kb: Path, *args: str) -> None:
    r = invoke(*args, cwd=kb)
    assert r.code == 0, r.stderr + r.stdout


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Two clones sharing a bare server, both holding H1 and H2, kb's hooks in ``b``."""
    t = make_team(tmp_path, monkeypatch)
    a, b = t["a"], t["b"]
    _ok(a, "hyp", "add", "Alice's hypothesis")
    _ok(a, "hyp", "add", "Bob's hypothesis")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    assert invoke("hooks", "install", cwd=b).code == 0
    return t


def test_pull_rebase_regenerates_the_dashboard_for_each_pick(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    _ok(a, "hyp", "status", "H1", "进行中")  # tree.md + DASHBOARD.md, one commit
    git(a, "push", "-q", "origin", "main")
    _ok(b, "hyp", "status", "H2", "进行中")
    proc = subprocess.run(["git", "pull", "--rebase", "origin", "main"], cwd=b, capture_output=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert git(b, "status", "--porcelain") == ""
    assert git(b, "rev-list", "--count", "origin/main..HEAD") == "1"
    assert len(git(b, "rev-list", "--parents", "-n", "1", "HEAD").split()) == 2  # linear
    tree = (b / "tree.md").read_text(encoding="utf-8")
    assert tree.count("Status: 进行中") == 2
    check = invoke("dashboard", "--check", cwd=b)
    assert check.code == 0, check.stdout + check.stderr
