"""`kb verify --range A..B --against REF` and merge commits judged against all parents."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, invoke


def _verify(root: Path, *args: str) -> tuple[int, list[dict]]:
    res = invoke("verify", "--json", *args, cwd=root)
    data = json.loads(res.stdout)
    return res.code, data["diagnostics"]


def test_collision_with_the_target_is_an_error_naming_both(tree_kb: Path) -> None:
    root = tree_kb
    start = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "-b", "feature")
    assert invoke("hyp", "add", "Feature idea", cwd=root).code == 0
    assert invoke("exp", "new", "--hyp", "H1", "Measure feature", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    assert invoke("hyp", "add", "Main idea", cwd=root).code == 0
    # Each passes on its own (the defect the issue reports) ...
    code, diags = _verify(root, "--range", f"{start}..feature")
    assert code == 0, diags
    # ... and --against names the collision with the target, at both places.
    code, diags = _verify(root, "--range", f"{start}..feature", "--against", "main")
    assert code == 1
    hits = [d for d in diags if d["code"] == "KB350"]
    assert len(hits) == 1, diags
    msg = hits[0]["message"]
    assert "H1" in msg and "Feature idea" in msg and "Main idea" in msg and "main" in msg
    assert "kb sync" in msg
    assert hits[0]["path"] == "tree.md"
    # E001 exists only on the branch: no collision for it.
    assert not any("E001" in d["message"] for d in hits)


def test_same_content_on_both_sides_is_no_collision(tree_kb: Path) -> None:
    root = tree_kb
    start = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "-b", "feature")
    assert invoke("hyp", "add", "Shared idea", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    git(root, "cherry-pick", "feature")
    code, diags = _verify(root, "--range", f"{start}..feature", "--against", "main")
    assert code == 0, diags


def test_against_needs_range(tree_kb: Path) -> None:
    res = invoke("verify", "--against", "main", cwd=tree_kb)
    assert res.code == 2 and "--range" in res.stderr
    res = invoke("verify", "--range", "HEAD..HEAD", "--against", "nope", cwd=tree_kb)
    assert res.code == 2 and "nope" in res.stderr


def test_merge_commit_is_judged_against_all_parents(tree_kb: Path) -> None:
    """main gains E001 while the branch made E002 (allocated after E001 was
    seen... or renumbered): merging main into the branch brings E001, which is
    below E002 — not a reused ID, since the other parent already had it."""
    root = tree_kb
    assert invoke("hyp", "add", "Base idea", cwd=root).code == 0
    start = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "-b", "feature")
    (root / "experiments").mkdir(exist_ok=True)
    assert invoke("exp", "new", "--hyp", "H1", "First on main", cwd=root).code == 0
    git(root, "branch", "-f", "tmp-main", "HEAD")
    git(root, "reset", "-q", "--hard", start)
    # The branch renumbered its own experiment to E002 (as kb sync would).
    assert invoke("exp", "new", "--hyp", "H1", "Branch one", cwd=root).code == 0
    git(root, "mv", "experiments/E001.md", "experiments/E002.md")
    text = (root / "experiments/E002.md").read_text(encoding="utf-8").replace("E001", "E002", 1)
    (root / "experiments/E002.md").write_text(text, encoding="utf-8")
    tree = (root / "tree.md").read_text(encoding="utf-8").replace("E001", "E002")
    (root / "tree.md").write_text(tree, encoding="utf-8")
    git(root, "commit", "-q", "-am", "renumber", "--no-verify")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--ff-only", "tmp-main")
    git(root, "checkout", "-q", "feature")
    proc = git(root, "merge", "--no-edit", "main", check=False)
    # tree.md conflicts without a driver (both changed H1's block): resolve by hand.
    if "<<<<<<<" in (root / "tree.md").read_text(encoding="utf-8"):
        resolved = tree.replace("Evidence: E002", "Evidence: E002, E001")
        (root / "tree.md").write_text(resolved, encoding="utf-8")
        git(root, "checkout", "--ours", "DASHBOARD.md")
        git(root, "add", "-A")
        git(root, "commit", "-q", "--no-edit", "--no-verify")
    assert len(git(root, "rev-parse", "HEAD^@").split()) == 2, proc
    code, diags = _verify(root, "--range", f"{start}..feature")
    assert not [d for d in diags if d["code"] == "KB307"], diags
    # The same E001 committed directly (not through a merge) would be reused.
    code, diags = _verify(root, "--range", f"{start}..feature", "--against", "main")
    assert not [d for d in diags if d["code"] == "KB350"], diags


def test_experiment_collision_names_each_side_once_with_its_title(tree_kb: Path) -> None:
    root = tree_kb
    assert invoke("hyp", "add", "Base idea", cwd=root).code == 0
    start = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "-b", "feature")
    assert invoke("exp", "new", "--hyp", "H1", "Measure on the branch", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    assert invoke("exp", "new", "--hyp", "H1", "Measure on main", cwd=root).code == 0
    code, diags = _verify(root, "--range", f"{start}..feature", "--against", "main")
    hits = [d for d in diags if d["code"] == "KB350"]
    assert code == 1 and len(hits) == 1, diags
    msg = hits[0]["message"]
    assert msg.startswith("experiment E001 is added by this branch"), msg
    # one path per side (the old message repeated it in place of a title)
    assert msg.count("experiments/E001.md") == 2, msg
    assert "Measure on the branch" in msg and "Measure on main" in msg, msg
