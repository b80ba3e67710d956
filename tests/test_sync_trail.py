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


# -- Both sides record what the rendering does not show --------------------------------
#
# Both clones record nodes the rendering does not show (notes) or set one node's status,
# and render. Before 0.1.17 their TRAIL.md was one blob: git took it without kb's driver
# (the merge's TRAIL.md counted one side's operations) and a rebase dropped the render
# pick as already applied. TRAIL.md now names the last operation it renders, so the two
# renders differ, git calls the driver, and the merge (or each rebased pick) renders the
# merged log; kb sync needs no extra render commit.


def _unshown_diverge(a: Path, b: Path, how: str) -> None:
    """A shared rendered goal; each clone records (``how``: notes, or a status set on the
    goal) and renders; ``a`` pushes. The renders differ only in the last operation."""
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
    assert git(a, "rev-parse", "HEAD:TRAIL.md") != git(b, "rev-parse", "HEAD:TRAIL.md")


def _assert_fresh(root: Path) -> None:
    assert git(root, "status", "--porcelain") == ""
    check = invoke("trail", "render", "--check", cwd=root)
    assert check.code == 0, check.stderr
    res = invoke("verify", "--rev", "HEAD", "--json", cwd=root)
    assert "KB241" not in {d["code"] for d in res.json()["diagnostics"]}, res.stdout


@pytest.mark.parametrize("how", ["note", "set"])
def test_sync_merges_renders_of_what_the_rendering_does_not_show(team: dict[str, Path],
                                                                 how: str) -> None:
    a, b = team["a"], team["b"]
    _unshown_diverge(a, b, how)
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, json.dumps(data)[:3000] + res.stderr
    assert data["merge"] == "merged" and data["conflicts"] == [] and data["ok"]
    assert data["trail_commit"] is None and git(b, "rev-parse", "HEAD") == data["merge_commit"]
    _assert_fresh(b)


@pytest.mark.parametrize("pull", [["--no-rebase", "--no-edit"], ["--rebase"]],
                         ids=["merge", "rebase"])
def test_git_pull_merges_renders_of_what_the_rendering_does_not_show(team: dict[str, Path],
                                                                     pull: list[str]) -> None:
    """The tester's case: with plain `git pull` TRAIL.md stayed stale, with `--rebase` the
    render pick was dropped ("skipped previously applied commit")."""
    a, b = team["a"], team["b"]
    assert invoke("hooks", "install", cwd=b).code == 0
    _unshown_diverge(a, b, "note")
    ours = git(b, "rev-list", "--count", "origin/main..HEAD")
    proc = subprocess.run(["git", "pull", *pull, "origin", "main"], cwd=b, capture_output=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace")
    if "--rebase" in pull:
        assert git(b, "rev-list", "--count", "origin/main..HEAD") == ours  # no pick dropped
    _assert_fresh(b)


def test_the_driver_renders_the_merged_log_when_our_side_was_stale(team: dict[str, Path]) -> None:
    """Our side recorded without rendering: the renders differ, so git calls the driver,
    which renders the merged log (both sides' operations): fresh, no extra commit."""
    a, b = team["a"], team["b"]
    _unshown_diverge(a, b, "note")
    ok(b, "add", "--kind", "note", "--title", "Bob's unrendered note")
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, json.dumps(data)[:3000] + res.stderr
    assert data["merge"] == "merged" and data["trail_commit"] is None
    assert git(b, "rev-parse", "HEAD") == data["merge_commit"]
    _assert_fresh(b)


@pytest.mark.parametrize("how", ["sync", "pull"])
def test_three_clones_whose_logs_end_alike_merge_a_fresh_trail(team: dict[str, Path],
                                                               how: str) -> None:
    """Three clones: a and b each record a note, c records two and pushes a render first;
    a and b merge c's work (the driver renders their logs, which both end with c's last
    operation and count as many operations). Before 0.1.19 a's and b's TRAIL.md were then
    one blob over different logs, and git took it when b merged a: stale (kb sync rendered
    it again in a commit of its own). The header's log digest tells the two renders apart,
    so git calls the driver and the merge itself renders the merged log, with `kb sync`
    and with a plain `git pull` alike."""
    a, b, remote = team["a"], team["b"], team["remote"]
    goal = ok(a, "add", "--kind", "goal", "--title", "Shared goal")["ids"][0]
    ok(a, "render")
    git(a, "push", "-q", "origin", "main")
    c = remote.parent / "c"
    git(remote.parent, "clone", "-q", str(remote), str(c))
    assert invoke("hooks", "install", cwd=c).code == 0
    for clone in (a, b):
        assert invoke("hooks", "install", cwd=clone).code == 0
        git(clone, "pull", "-q", "--ff-only")
    for clone, who in ((a, "Alice"), (b, "Bob")):
        ok(clone, "add", "--kind", "note", "--title", f"{who} note", "--parent", goal)
        ok(clone, "render")
    for title in ("Carol note", "Carol's second note"):
        ok(c, "add", "--kind", "note", "--title", title, "--parent", goal)
    ok(c, "render")
    git(c, "push", "-q", "origin", "main")
    for clone in (a, b):
        git(clone, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
        assert invoke("trail", "render", "--check", cwd=clone).code == 0
    lines = [git(x, "show", "HEAD:TRAIL.md").splitlines()[4] for x in (a, b)]
    assert lines[0] != lines[1] and lines[0].split(";")[0] == lines[1].split(";")[0], lines
    git(a, "push", "-q", "origin", "main")
    if how == "sync":
        res = invoke("sync", "--json", cwd=b)
        data = res.json()
        assert res.code == 0, json.dumps(data)[:3000] + res.stderr
        assert data["merge"] == "merged" and data["trail_commit"] is None
        assert git(b, "rev-parse", "HEAD") == data["merge_commit"]
    else:
        proc = subprocess.run(["git", "pull", "-q", "--no-rebase", "--no-edit", "origin", "main"],
                              cwd=b, capture_output=True)
        assert proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace")
    _assert_fresh(b)
