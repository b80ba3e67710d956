"""TRAIL.md (``kb trail render``) never stops a merge: kb's ``kb-trail`` driver renders it
again from the merged exploration log, as ``kb-dashboard`` does DASHBOARD.md.

The case a tester saw: two clones of one KB sharing a bare server repository both
recorded and ran ``kb trail render`` (each a commit) on diverging histories; ``kb sync`` in
one of them then stopped on a TRAIL.md merge conflict. Here both sides render after a
shared render (both changed TRAIL.md) or render for the first time (both added it), and
the merge is ``kb sync``, a plain ``git pull`` with kb's hooks installed, or ``git merge``
in a KB kept in a subfolder. Each time the merge is clean and its TRAIL.md is what
``kb trail render`` gives for the merged log (both sides' nodes), in the merge commit.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, make_team
from trail_support import ok

#: ``.gitattributes`` as ``kb init`` wrote it before kb knew TRAIL.md's driver.
OLDER_ATTRIBUTES = "DASHBOARD.md merge=kb-dashboard\ntree.md merge=kb-tree\n"


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """:func:`conftest.make_team` with kb's clock pinned (``KB_NOW``) for trail times."""
    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    return make_team(tmp_path, monkeypatch)


def _topic(clone: Path, title: str, parent: str | None) -> None:
    """Record a topic (one commit) and render TRAIL.md (one commit)."""
    ok(clone, "add", "--kind", "topic", "--title", title, *(["--parent", parent] if parent else []))
    ok(clone, "render")


def _diverge(a: Path, b: Path, shared_render: bool) -> None:
    """Both clones record and render on histories that part after a shared goal; ``a``
    pushes. ``shared_render``: the goal was rendered before they parted (both then change
    TRAIL.md); else neither had it (both add it)."""
    goal = ok(a, "add", "--kind", "goal", "--title", "Shared goal")["ids"][0]
    if shared_render:
        ok(a, "render")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    _topic(a, "Alice topic", goal)
    git(a, "push", "-q", "origin", "main")
    _topic(b, "Bob topic", goal)


def _assert_merged_trail(root: Path) -> None:
    """A clean merge commit whose TRAIL.md is the render of the merged log."""
    assert git(root, "status", "--porcelain") == ""
    assert len(git(root, "rev-list", "--parents", "-n", "1", "HEAD").split()) == 3
    text = (root / "TRAIL.md").read_text(encoding="utf-8")
    assert "<<<<<<<" not in text and "Alice topic" in text and "Bob topic" in text
    check = invoke("trail", "render", "--check", cwd=root)
    assert check.code == 0, check.stderr
    res = invoke("verify", "--rev", "HEAD", "--json", cwd=root)
    assert "KB241" not in {d["code"] for d in res.json()["diagnostics"]}, res.stdout


@pytest.mark.parametrize("shared_render", [True, False], ids=["both-changed", "both-added"])
def test_sync_merges_trail_rendered_on_both_sides(team: dict[str, Path], shared_render: bool) -> None:
    a, b = team["a"], team["b"]
    _diverge(a, b, shared_render)
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, json.dumps(data)[:3000] + res.stderr
    assert data["merge"] == "merged" and data["conflicts"] == []
    assert data["drivers"]["kb-trail"] == "registered"
    _assert_merged_trail(b)
    assert git(b, "show", "HEAD:TRAIL.md") == (b / "TRAIL.md").read_text(encoding="utf-8").rstrip("\n")


def test_sync_of_an_older_kb_names_the_trail_driver_and_merges(team: dict[str, Path]) -> None:
    """A KB made before the trail driver: kb sync commits its ``.gitattributes`` line first."""
    a, b = team["a"], team["b"]
    (a / ".gitattributes").write_text(OLDER_ATTRIBUTES, encoding="utf-8")
    commit_all(a, "an older KB: no TRAIL.md driver")
    _diverge(a, b, shared_render=True)
    res = invoke("sync", "--json", cwd=b)
    assert res.code == 0, res.stdout + res.stderr
    assert "TRAIL.md merge=kb-trail" in (b / ".gitattributes").read_text(encoding="utf-8")
    _assert_merged_trail(b)


def test_git_pull_with_kb_hooks_merges_trail(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    assert invoke("hooks", "install", cwd=b).code == 0
    _diverge(a, b, shared_render=True)
    proc = subprocess.run(["git", "pull", "--no-rebase", "--no-edit", "origin", "main"], cwd=b,
                          capture_output=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace")
    _assert_merged_trail(b)


@pytest.mark.parametrize("shared_render", [True, False], ids=["both-changed", "both-added"])
def test_git_pull_rebase_with_kb_hooks_renders_trail_for_each_pick(team: dict[str, Path],
                                                                    shared_render: bool) -> None:
    """``git pull --rebase``: the driver reads the commit the rebase replays from
    ``rebase-merge/done`` (git names it nowhere else), so our rendered TRAIL.md is the
    render of the upstream's log plus our nodes, not the upstream's render kept."""
    a, b = team["a"], team["b"]
    assert invoke("hooks", "install", cwd=b).code == 0
    _diverge(a, b, shared_render)
    ours = git(b, "rev-list", "--count", "origin/main..HEAD")
    proc = subprocess.run(["git", "pull", "--rebase", "origin", "main"], cwd=b, capture_output=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert git(b, "status", "--porcelain") == ""
    assert git(b, "rev-list", "--count", "origin/main..HEAD") == ours  # no pick dropped as empty
    assert len(git(b, "rev-list", "--parents", "-n", "1", "HEAD").split()) == 2  # linear
    text = (b / "TRAIL.md").read_text(encoding="utf-8")
    assert "<<<<<<<" not in text and "Alice topic" in text and "Bob topic" in text
    check = invoke("trail", "render", "--check", cwd=b)
    assert check.code == 0, check.stderr


def test_git_merge_of_a_kb_in_a_subfolder_merges_trail(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver finds the KB (and its log) under the path git gives it."""
    from kb.ops.init import init_kb

    monkeypatch.setenv("KB_TODAY", "2026-11-29")
    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    top = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(top))
    kb = top / "lab"
    init_kb(kb)
    commit_all(top, "kb init")
    goal = ok(kb, "add", "--kind", "goal", "--title", "Shared goal")["ids"][0]
    ok(kb, "render")
    git(top, "checkout", "-qb", "side")
    _topic(kb, "Alice topic", goal)
    git(top, "checkout", "-q", "main")
    _topic(kb, "Bob topic", goal)
    proc = subprocess.run(["git", "merge", "--no-edit", "side"], cwd=top, capture_output=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace")
    _assert_merged_trail(kb)


# -- TRAIL.md the same blob on both sides (git never calls the driver) ---------------------
#
# Both clones record nodes the rendering does not show (notes) or set one node's status,
# and render: their TRAIL.md is one blob, git takes it without kb's driver, and the merge's
# TRAIL.md counts one side's operations. ``kb sync`` renders it again (one ``trail.render``
# commit, ``trail_commit``) when our side kept it rendered; a TRAIL.md already stale on our
# side before the merge is left as it was (rendering is the explicit command's, DESIGN §8).


def _same_blob_diverge(a: Path, b: Path, how: str) -> None:
    """A shared rendered goal; each clone records (``how``: notes, or a status set on the
    goal) and renders; ``a`` pushes. Both TRAIL.md are then the same blob."""
    goal = ok(a, "add", "--kind", "goal", "--title", "Shared goal")["ids"][0]
    ok(a, "render")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    for clone, who, status in ((a, "Alice", "done"), (b, "Bob", "abandoned")):
        if how == "note":
            ok(clone, "add", "--kind", "note", "--title", f"{who} note", "--parent", goal)
        else:
            ok(clone, "set", goal, "--status", status)
        ok(clone, "render")
    git(a, "push", "-q", "origin", "main")
    assert git(a, "rev-parse", "HEAD:TRAIL.md") == git(b, "rev-parse", "HEAD:TRAIL.md")


@pytest.mark.parametrize("how", ["note", "set"])
def test_sync_renders_trail_the_merge_left_stale(team: dict[str, Path], how: str) -> None:
    a, b = team["a"], team["b"]
    _same_blob_diverge(a, b, how)
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, json.dumps(data)[:3000] + res.stderr
    assert data["merge"] == "merged" and data["conflicts"] == [] and data["ok"]
    assert data["trail_commit"] == git(b, "rev-parse", "HEAD")
    assert git(b, "rev-parse", "HEAD^") == data["merge_commit"]
    assert "Kb-Op: trail.render" in git(b, "log", "-1", "--format=%B")
    assert git(b, "show", "--name-only", "--format=", "HEAD") == "TRAIL.md"
    assert git(b, "status", "--porcelain") == ""
    check = invoke("trail", "render", "--check", cwd=b)
    assert check.code == 0, check.stderr
    res = invoke("verify", "--rev", "HEAD", "--json", cwd=b)
    assert "KB241" not in {d["code"] for d in res.json()["diagnostics"]}, res.stdout
    human = invoke("sync", cwd=b)  # up to date now: no second render
    assert human.code == 0 and "TRAIL.md" not in human.stderr, human.stderr


def test_sync_reports_the_trail_commit(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    _same_blob_diverge(a, b, "note")
    res = invoke("sync", cwd=b)
    assert res.code == 0, res.stderr
    head = git(b, "rev-parse", "HEAD")
    assert f"kb sync: TRAIL.md rendered again in {head[:12]}" in res.stderr


def test_sync_leaves_a_trail_stale_before_the_merge(team: dict[str, Path]) -> None:
    """Our side recorded without rendering: TRAIL.md was stale already, and stays so."""
    a, b = team["a"], team["b"]
    _same_blob_diverge(a, b, "note")
    ok(b, "add", "--kind", "note", "--title", "Bob's unrendered note")
    before = git(b, "rev-parse", "HEAD:TRAIL.md")
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, json.dumps(data)[:3000] + res.stderr
    assert data["merge"] == "merged" and data["trail_commit"] is None
    assert git(b, "rev-parse", "HEAD") == data["merge_commit"]
    assert git(b, "rev-parse", "HEAD:TRAIL.md") == before
    assert invoke("trail", "render", "--check", cwd=b).code == 1
