"""Evidence merged by the tree.md driver keeps our order and appends what only their side
added; the merge judgement (pre-merge-commit hook, ``kb verify --staged``, ranges) counts
only lost items of an append-only list, in every mode alike.

The tester's case: B merged A's ``E001`` onto its own ``E002`` (``Evidence: E002, E001``),
then pulled A again; the driver rewrote the list as the base's items first
(``E001, E002``), which the hook refused as KB303 "reordered" while ranges accepted it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import git, invoke, make_team


def _ok(*args: str, cwd: Path) -> None:
    res = invoke(*args, cwd=cwd)
    assert res.code == 0, (args, res.stdout, res.stderr)


def _pull(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "pull", "--no-rebase", "--no-edit", "-q"], cwd=root,
                          capture_output=True)


def _evidence(root: Path) -> str:
    text = (root / "tree.md").read_text(encoding="utf-8")
    return next(ln for ln in text.splitlines() if ln.startswith("Evidence:"))


def _verify(root: Path, *args: str) -> tuple[int, list[dict]]:
    res = invoke("verify", "--json", *args, cwd=root)
    data = json.loads(res.stdout)
    return res.code, data["diagnostics"]


def _second_pull(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The reproduction up to B's second pull (not run): H1, E001 and E002 on both
    clones; A appended E001 and pushed; B appended E002 and merged A's push
    (``Evidence: E002, E001``); A added H2 and pushed."""
    team = make_team(tmp_path, monkeypatch)
    a, b = team["a"], team["b"]
    _ok("hooks", "install", cwd=a)
    _ok("hyp", "add", "A claim", cwd=a)
    _ok("exp", "new", "--hyp", "H1", "First measure", "--goal", "g", cwd=a)
    _ok("exp", "new", "--hyp", "H1", "Second measure", "--goal", "g", cwd=a)
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    _ok("hooks", "install", cwd=b)
    _ok("hyp", "evidence", "H1", "E001", cwd=a)
    git(a, "push", "-q", "origin", "main")
    _ok("hyp", "evidence", "H1", "E002", cwd=b)
    first = _pull(b)
    assert first.returncode == 0, first.stderr.decode()
    assert _evidence(b) == "Evidence: E002, E001"
    _ok("hyp", "add", "A second", cwd=a)
    git(a, "push", "-q", "origin", "main")
    return team


def test_driver_keeps_our_order_and_appends_theirs() -> None:
    from kb.config import config_from_dict
    from kb.merge.tree import merge_trees

    head = "# Hypothesis Tree\n\n## H1: A claim\nStatus: 待验\nEvidence: {}\n"
    base, ours, theirs = (head.format(e) for e in ("E001", "E002, E001", "E001, E004, E003"))
    res = merge_trees(base.encode(), ours.encode(), theirs.encode(),
                      config_from_dict(Path("."), {}))
    assert res.conflicts == []
    assert "Evidence: E002, E001, E004, E003\n" in res.data.decode()
    # what one side removed of the base stays removed; both sides' additions once
    base, ours, theirs = (head.format(e) for e in ("E001, E002", "E002, E005", "E001, E002, E005"))
    res = merge_trees(base.encode(), ours.encode(), theirs.encode(),
                      config_from_dict(Path("."), {}))
    assert "Evidence: E002, E005\n" in res.data.decode()


def test_second_pull_commits_with_the_hook_and_every_mode_agrees(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team = _second_pull(tmp_path, monkeypatch)
    a, b = team["a"], team["b"]
    start = git(b, "rev-parse", "origin/main")
    pulled = _pull(b)
    assert pulled.returncode == 0, (pulled.stdout + pulled.stderr).decode()
    assert len(git(b, "rev-list", "--parents", "-n", "1", "HEAD").split()) == 3  # a merge
    assert _evidence(b) == "Evidence: E002, E001"
    assert "## H2: A second" in (b / "tree.md").read_text(encoding="utf-8")
    for args in (["--rev", "HEAD"], ["--range", f"{start}..HEAD", "--against", start]):
        code, diags = _verify(b, *args)
        assert code == 0, (args, diags)
    pushed = subprocess.run(["git", "push", "-q", "origin", "main"], cwd=b, capture_output=True)
    assert pushed.returncode == 0, pushed.stderr.decode()
    git(a, "pull", "-q", "--ff-only")
    assert _evidence(a) == "Evidence: E002, E001"


def _stopped_merge_staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, evidence: str) -> Path:
    """B's second pull stopped before its commit (``--no-commit``), the driver's
    ``Evidence: E002, E001`` (our order) replaced by ``evidence`` and staged: clone B."""
    b = _second_pull(tmp_path, monkeypatch)["b"]
    git(b, "fetch", "-q")
    git(b, "merge", "-q", "--no-commit", "origin/main")
    assert _evidence(b) == "Evidence: E002, E001"  # the driver kept our order
    tree = b / "tree.md"
    tree.write_text(tree.read_text(encoding="utf-8").replace("Evidence: E002, E001", evidence),
                    encoding="utf-8")
    git(b, "add", "tree.md")
    return b


def test_a_merge_reordering_one_sides_evidence_is_judged_on_lost_items_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A merge result that holds every item in another order (an older driver's, or one
    written by hand) passes the staged judgement as it passes a range; one that drops
    an item is refused in both."""
    b = _stopped_merge_staging(tmp_path, monkeypatch, "Evidence: E001, E002")
    code, diags = _verify(b, "--staged")
    assert code == 0, diags
    assert not any(d["code"] == "KB303" and d["blocking"] for d in diags), diags
    code, diags = _verify(b)  # the working tree, the merge still stopped
    assert code == 0, diags
    done = subprocess.run(["git", "commit", "-q", "--no-edit"], cwd=b, capture_output=True)
    assert done.returncode == 0, (done.stdout + done.stderr).decode()  # pre-merge-commit passed it
    code, diags = _verify(b, "--rev", "HEAD")
    assert code == 0, diags


def test_a_merge_losing_our_evidence_is_still_refused_staged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    b = _stopped_merge_staging(tmp_path, monkeypatch, "Evidence: E001")
    code, diags = _verify(b, "--staged")
    assert code == 1 and any(d["code"] == "KB303" and "E002" in d["message"] and d["blocking"]
                             for d in diags), diags


def test_kb_sync_merges_the_second_pull(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team = _second_pull(tmp_path, monkeypatch)
    b = team["b"]
    res = invoke("sync", "--json", cwd=b)
    data = json.loads(res.stdout)
    assert res.code == 0 and data["merge"] == "merged", (res.stdout, res.stderr)
    assert data["conflicts"] == [] and data["findings"] == []
    assert _evidence(b) == "Evidence: E002, E001"
