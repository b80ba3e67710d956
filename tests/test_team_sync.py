"""`kb sync`: renumber colliding IDs with every reference, merge, verify (issue: team work)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import commit_all, git, invoke, tree_snapshot


def files(root: Path) -> dict[str, bytes]:
    """Every file but kb's caches (.kb/, the marker check's note in .git) — they may
    learn things on any run."""
    return {k: v for k, v in tree_snapshot(root).items()
            if not k.startswith((".kb", ".git/kb-markers-clean"))}


def _ok(*args: str, cwd: Path) -> None:
    res = invoke(*args, cwd=cwd)
    assert res.code == 0, (args, res.stderr)


def test_sync_renumbers_every_reference_and_merges(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    _ok("hyp", "add", "A idea", cwd=a)
    _ok("exp", "new", "--hyp", "H1", "A measures", cwd=a)
    _ok("problem", "add", "q1", "A problem", cwd=a)
    git(a, "push", "-q", "origin", "main")
    # b works from the old main and allocates the same IDs.
    _ok("hyp", "add", "B idea", cwd=b)
    _ok("hyp", "add", "B child", "--parent", "H1", cwd=b)
    _ok("exp", "new", "--hyp", "H1.1", "B measures", cwd=b)
    _ok("hyp", "evidence", "H1.1", "E001", cwd=b)
    _ok("problem", "add", "q1", "B problem", cwd=b)
    _ok("problem", "add", "q2", "B second problem", "--depends", "q1", cwd=b)
    root = git(b, "rev-list", "--max-parents=0", "HEAD")
    git(b, "fetch", "-q")
    # The collision is visible to CI before any repair.
    res = invoke("verify", "--range", "origin/main..HEAD", "--against", "origin/main", "--json", cwd=b)
    assert res.code == 1 and {d["code"] for d in res.json()["diagnostics"] if d["blocking"]} == {"KB350"}

    before = files(b)
    res = invoke("sync", "--dry-run", cwd=b)
    assert res.code == 0, res.stderr
    assert res.stdout.splitlines() == ["H1 -> H2", "H1.1 -> H2.1", "E001 -> E002", "q1 -> q3"]
    assert files(b) == before  # dry run changes nothing

    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, json.dumps(data, ensure_ascii=False)[:3000]
    assert data["renumbered"]["H1"] == "H2" and data["renumbered"]["H1.1"] == "H2.1"
    assert data["renumbered"]["E001"] == "E002"
    # q2 is taken on b itself: the renumbered q1 becomes q3.
    assert data["renumbered"]["q1"] == "q3"
    assert data["merge"] == "merged"
    msg = git(b, "log", "-1", "--format=%B", data["renumber_commit"])
    assert "Kb-Renumber: H1 -> H2" in msg and "Kb-Renumber: E001 -> E002" in msg
    # kb diff shows the renumbering to a reviewer (the trailers are the shared format).
    rc = data["renumber_commit"]
    diff = invoke("diff", f"{rc}~1..{rc}", "--json", cwd=b)
    assert diff.code == 0, diff.stderr
    assert {"from": "H1", "to": "H2"} in [{k: r[k] for k in ("from", "to")}
                                          for r in diff.json()["renumberings"]]

    tree = (b / "tree.md").read_text(encoding="utf-8")
    assert "## H1: A idea" in tree and "## H2: B idea" in tree
    assert "### H2.1: B child" in tree and "Parent: H2" in tree and "Children: H2.1" in tree
    assert "### H2.1: B child\nStatus: 进行中\nEvidence: E002\n" in tree
    e2 = (b / "experiments" / "E002.md").read_text(encoding="utf-8")
    assert e2.startswith("# E002: H2.1 - B measures") and "**Hypothesis**: H2.1" in e2
    assert (b / "experiments" / "E001.md").read_text(encoding="utf-8").startswith("# E001: H1 - A measures")
    q3 = (b / "Problems" / "q3.md").read_text(encoding="utf-8")
    assert "- ID: q3" in q3 and "B problem" in q3
    assert "q3" in (b / "Problems" / "q2.md").read_text(encoding="utf-8")  # 依赖 follows
    assert "A problem" in (b / "Problems" / "q1.md").read_text(encoding="utf-8")
    # The result verifies: working tree, the whole history, and against the target.
    res = invoke("verify", "--json", cwd=b)
    assert res.code == 0 and not [d for d in res.json()["diagnostics"] if d["severity"] == "error"]
    res = invoke("verify", "--range", f"{root}..HEAD", "--json", cwd=b)
    assert res.code == 0, res.stdout
    res = invoke("verify", "--range", "origin/main..HEAD", "--against", "origin/main", cwd=b)
    assert res.code == 0, res.stdout + res.stderr
    git(b, "fsck", "--no-progress")
    git(b, "push", "-q", "origin", "HEAD:main")
    # a pulls: a fast-forward, no duplicate IDs anywhere.
    git(a, "pull", "-q", "--ff-only")
    assert invoke("verify", cwd=a).code == 0


def test_sync_refuses_a_dirty_tree_and_changes_nothing(team: dict[str, Path]) -> None:
    b = team["b"]
    (b / "tree.md").write_text((b / "tree.md").read_text(encoding="utf-8") + "\nnote\n", encoding="utf-8")
    before = files(b)
    head = git(b, "rev-parse", "HEAD")
    res = invoke("sync", cwd=b)
    assert res.code == 1 and "uncommitted changes" in res.stderr and "tree.md" in res.stderr
    assert files(b) == before and git(b, "rev-parse", "HEAD") == head


def test_sync_without_collisions_just_merges(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    _ok("hyp", "add", "A idea", cwd=a)
    git(a, "push", "-q", "origin", "main")
    _ok("problem", "add", "q7", "B problem", cwd=b)
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0 and data["renumbered"] == {} and data["merge"] == "merged", data
    assert data["drivers"]["kb-tree"] == "registered"
    assert "## H1: A idea" in (b / "tree.md").read_text(encoding="utf-8")


def test_sync_names_the_drivers_in_gitattributes(team: dict[str, Path]) -> None:
    b = _older_kb(team)
    res = invoke("sync", "--json", cwd=b)
    assert res.code == 0, res.stdout + res.stderr
    text = (b / ".gitattributes").read_text(encoding="utf-8")
    assert "tree.md merge=kb-tree" in text and text.startswith("DASHBOARD.md merge=kb-dashboard\n")
    assert git(b, "status", "--porcelain") == ""
    assert "Kb-Op: sync.attributes" in git(b, "log", "-1", "--format=%B", "--", ".gitattributes")


def test_sync_names_the_drivers_and_renumbers_in_one_run(team: dict[str, Path]) -> None:
    """An older KB (no driver lines) and an ID taken on both sides: kb sync commits the
    driver lines, then renumbers on top of that commit and merges. It stopped with
    "HEAD moved while kb sync was planning (nothing was written)" after writing one."""
    a, b = team["a"], team["b"]
    (a / ".gitattributes").write_text("DASHBOARD.md merge=kb-dashboard\n", encoding="utf-8")
    commit_all(a, "an older KB: only the dashboard driver")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    _ok("problem", "add", "q1", "A problem", cwd=a)
    git(a, "push", "-q", "origin", "main")
    _ok("problem", "add", "q1", "B problem", cwd=b)
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, res.stdout + res.stderr
    assert data["renumbered"] == {"q1": "q2"}, data
    assert data["merge"] == "merged"
    subjects = git(b, "log", "--first-parent", "-3", "--format=%s").splitlines()
    assert subjects[1].startswith("kb sync: renumber q1 -> q2")
    assert subjects[2] == "kb sync: name kb's merge drivers in .gitattributes"


def test_sync_stops_on_a_contradiction_and_leaves_no_half_merge(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    _ok("hyp", "add", "Shared idea", cwd=a)
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    _ok("hyp", "status", "H1", "进行中", cwd=a)
    _ok("hyp", "status", "H1", "进行中", cwd=b)
    (a / "tree.md").write_text((a / "tree.md").read_text(encoding="utf-8").replace(
        "Status: 进行中", "Status: 被推翻"), encoding="utf-8")
    (b / "tree.md").write_text((b / "tree.md").read_text(encoding="utf-8").replace(
        "Status: 进行中", "Status: 被支持"), encoding="utf-8")
    for clone in (a, b):
        git(clone, "commit", "-q", "--no-verify", "-am", "close H1")
    git(a, "push", "-q", "origin", "main")
    head = git(b, "rev-parse", "HEAD")
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 1 and data["merge"] == "conflict"
    assert any("status of H1 was changed differently on both sides" in c for c in data["conflicts"])
    assert git(b, "rev-parse", "HEAD") == head and git(b, "status", "--porcelain") == ""
    assert not (b / ".git" / "MERGE_HEAD").exists()
    # in text: no renumber commit was made, so none is mentioned
    res = invoke("sync", cwd=b)
    assert res.code == 1 and "the merge was aborted (your branch is as it was);" in res.stderr
    assert "renumber" not in res.stderr


def test_sync_of_a_pushed_branch_syncs_with_the_default_branch(team: dict[str, Path]) -> None:
    """A branch pushed with -u tracks its own copy on the server; `kb sync` with no
    argument still repairs against the remote's default branch (what CI checks)."""
    a, b = team["a"], team["b"]
    _ok("hyp", "add", "A idea", cwd=a)
    git(a, "push", "-q", "origin", "main")
    git(b, "checkout", "-q", "-b", "feature")
    _ok("hyp", "add", "B idea", cwd=b)
    git(b, "push", "-q", "-u", "origin", "feature")
    res = invoke("sync", "--json", cwd=b)
    assert res.code == 0, res.stdout + res.stderr
    data = res.json()
    assert data["upstream"] == "origin/main" and data["renumbered"] == {"H1": "H2"}
    tree = (b / "tree.md").read_text(encoding="utf-8")
    assert "## H1: A idea" in tree and "## H2: B idea" in tree


def test_sync_renumbers_an_experiment_on_the_same_hypothesis(team: dict[str, Path]) -> None:
    """Both clones add E001 on the hypothesis they share: the titles differ, so they
    are two experiments and b's becomes E002 (the collision used to pass unseen,
    since an experiment has no statement and only its hypothesis was compared)."""
    a, b = team["a"], team["b"]
    _ok("hyp", "add", "Shared idea", cwd=a)
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    _ok("exp", "new", "--hyp", "H1", "A measures", cwd=a)
    git(a, "push", "-q", "origin", "main")
    _ok("exp", "new", "--hyp", "H1", "B measures", cwd=b)
    git(b, "fetch", "-q")
    res = invoke("verify", "--range", "origin/main..HEAD", "--against", "origin/main", "--json", cwd=b)
    assert res.code == 1 and [d["code"] for d in res.json()["diagnostics"] if d["blocking"]] == ["KB350"]
    res = invoke("sync", "--json", cwd=b)
    assert res.code == 0, res.stdout + res.stderr
    assert res.json()["renumbered"] == {"E001": "E002"}
    assert (b / "experiments" / "E001.md").read_text(encoding="utf-8").startswith("# E001: H1 - A measures")
    assert (b / "experiments" / "E002.md").read_text(encoding="utf-8").startswith("# E002: H1 - B measures")
    assert "Status: 进行中" in (b / "tree.md").read_text(encoding="utf-8")
    assert invoke("verify", "--range", "origin/main..HEAD", "--against", "origin/main", cwd=b).code == 0


def test_an_id_sync_renumbered_to_is_never_handed_out_again(team: dict[str, Path]) -> None:
    """`kb sync` writes `Kb-Renumber: H1 -> H2`, not `Kb-Id: H2`: the allocator reads
    both, so H2 withdrawn later is not allocated again (IDs are never reused)."""
    a, b = team["a"], team["b"]
    _ok("hyp", "add", "B idea", cwd=b)
    _ok("hyp", "add", "A idea", cwd=a)
    git(a, "push", "-q", "origin", "main")
    git(b, "fetch", "-q")
    res = invoke("sync", "--json", cwd=b)
    assert res.code == 0 and res.json()["renumbered"] == {"H1": "H2"}, res.stderr
    tree = (b / "tree.md").read_text(encoding="utf-8")
    at = tree.index("## H2: B idea")
    (b / "tree.md").write_text(tree[:at].rstrip("\n") + "\n", encoding="utf-8")
    commit_all(b, "withdraw H2\n\nKb-Override: H2 withdrawn")
    res = invoke("hyp", "add", "C idea", cwd=b)
    assert res.code == 0, res.stderr
    assert "## H3: C idea" in (b / "tree.md").read_text(encoding="utf-8")


def _older_kb(team: dict[str, Path]) -> Path:
    """`b` up to date with a main whose .gitattributes names only the dashboard driver."""
    a, b = team["a"], team["b"]
    (a / ".gitattributes").write_text("DASHBOARD.md merge=kb-dashboard\n", encoding="utf-8")
    commit_all(a, "an older KB: only the dashboard driver")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    return b


def test_sync_reports_the_gitattributes_commit_in_json(team: dict[str, Path]) -> None:
    """The driver lines' commit moved HEAD while the merge was "up to date": it is reported
    (it was not: an agent could not tell HEAD moved)."""
    b = _older_kb(team)
    before = git(b, "rev-parse", "HEAD").strip()
    data = invoke("sync", "--json", cwd=b).json()
    head = git(b, "rev-parse", "HEAD").strip()
    assert head != before and data["merge"] == "up to date", data
    assert data["attributes_commit"] == head and data["renumber_commit"] is None, data
    again = invoke("sync", "--json", cwd=b).json()
    assert again["attributes_commit"] is None, again


def test_sync_says_it_named_the_drivers_in_gitattributes(team: dict[str, Path]) -> None:
    b = _older_kb(team)
    res = invoke("sync", cwd=b)
    assert res.code == 0, res.stderr
    head = git(b, "rev-parse", "HEAD").strip()
    assert (f"kb sync: .gitattributes now names kb's merge drivers (commit {head[:12]})"
            in res.stderr.splitlines()), res.stderr


def cards_moved_while_b_adds(a: Path, b: Path, name: str) -> str:
    """A moves Problems/ to Cards/ and pushes; B (which had pulled A's card q1) adds
    ``Problems/<name>`` and commits: B's HEAD, which a sync then conflicts from."""
    _ok("problem", "add", "q1", "A problem", cwd=a)
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    git(a, "mv", "Problems", "Cards")
    git(a, "commit", "-q", "-m", "move the cards")
    git(a, "push", "-q", "origin", "main")
    (b / "Problems" / name).write_text("# q2\n", encoding="utf-8")
    commit_all(b, "B adds a card")
    return git(b, "rev-parse", "HEAD").strip()


def test_a_conflict_in_a_renamed_directory_keeps_gits_explanation(team: dict[str, Path]) -> None:
    """A moves Problems/ to Cards/, B adds Problems/q2.md: git's CONFLICT (file location)
    line, which says where the file should perhaps go, is reported once for the path
    (it was only "Cards/q2.md: conflict")."""
    a, b = team["a"], team["b"]
    head = cards_moved_while_b_adds(a, b, "q2.md")
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 1 and data["merge"] == "conflict", data
    assert len(data["conflicts"]) == 1, data
    line = data["conflicts"][0]
    assert line.startswith("CONFLICT (file location): Problems/q2.md added in "), line
    assert line.endswith("suggesting it should perhaps be moved to Cards/q2.md."), line
    assert git(b, "rev-parse", "HEAD").strip() == head and git(b, "status", "--porcelain") == ""
    text = invoke("sync", cwd=b)
    assert f"kb sync: {line}" in text.stderr.splitlines(), text.stderr
    assert "Cards/q2.md: conflict" not in text.stderr


def test_sync_calls_a_fast_forward_to_a_merge_commit_a_fast_forward(team: dict[str, Path]) -> None:
    """The upstream's tip is a merge commit and b has nothing of its own: git fast-forwards,
    and kb sync says so (it read the parents of the new HEAD, the upstream's merge, and
    called it "merged")."""
    a, b = team["a"], team["b"]
    git(a, "checkout", "-qb", "side")
    (a / "side.txt").write_text("side\n", encoding="utf-8")
    commit_all(a, "side note")
    git(a, "checkout", "-q", "main")
    (a / "main.txt").write_text("main\n", encoding="utf-8")
    commit_all(a, "main note")
    git(a, "merge", "-q", "--no-edit", "--no-ff", "side")
    git(a, "push", "-q", "origin", "main")
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, res.stdout + res.stderr
    tip = git(a, "rev-parse", "HEAD")
    assert data["merge"] == "fast-forward" and data["merge_commit"] == tip, data
    assert git(b, "rev-parse", "HEAD") == tip
