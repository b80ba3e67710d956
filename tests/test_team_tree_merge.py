"""The tree.md merge driver: block-level three-way merge (issue: team work, priority 3)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import commit_all, git, invoke, write_files

BASE = ("# Hypothesis Tree\n\n"
        "## H1: Loading is the bottleneck\nStatus: 进行中\nEvidence: E001\nChildren: H1.1\n\n"
        "Prose about H1.\n\n"
        "### H1.1: JPEG decoding dominates\nStatus: 待验\nEvidence: (empty)\nParent: H1\n\n"
        "## H2: Mixed precision slows convergence\nStatus: 待验\nEvidence: (empty)\n")


def _merge(base: str, ours: str, theirs: str):
    from kb.config import config_from_dict
    from kb.merge.tree import merge_trees

    return merge_trees(base.encode(), ours.encode(), theirs.encode(), config_from_dict(Path("."), {}))


def test_blocks_added_on_both_sides_are_kept_in_id_order() -> None:
    ours = BASE + "\n## H3: Ours\nStatus: 待验\nEvidence: (empty)\n"
    theirs = BASE.replace("Children: H1.1\n", "Children: H1.1, H1.2\n").replace(
        "## H2:", "### H1.2: Theirs child\nStatus: 待验\nEvidence: (empty)\nParent: H1\n\n## H2:") \
        + "\n## H4: Theirs\nStatus: 待验\nEvidence: (empty)\n"
    res = _merge(BASE, ours, theirs)
    assert res.conflicts == []
    text = res.data.decode()
    order = [ln.split(":")[0].strip("# ") for ln in text.splitlines() if ln.startswith("#") and ": " in ln]
    assert order == ["H1", "H1.1", "H1.2", "H2", "H3", "H4"]
    assert "Children: H1.1, H1.2" in text and "Prose about H1." in text


def test_evidence_union_and_one_sided_changes_in_the_same_block() -> None:
    # ours: Evidence gains E002 and the status moves; theirs: Evidence gains E003
    # and the statement is corrected — neighbouring lines, a line merge conflicts.
    ours = BASE.replace("Status: 进行中\nEvidence: E001\n", "Status: 被支持\nEvidence: E001, E002\n")
    theirs = BASE.replace("Evidence: E001\n", "Evidence: E001, E003\n").replace(
        "## H1: Loading is the bottleneck", "## H1: Data loading is the bottleneck")
    res = _merge(BASE, ours, theirs)
    assert res.conflicts == []
    text = res.data.decode()
    assert ("## H1: Data loading is the bottleneck\nStatus: 被支持\nEvidence: E001, E002, E003\n"
            "Children: H1.1\n") in text
    # git's line merge conflicts on the same input
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for name, t in (("o", BASE), ("a", ours), ("b", theirs)):
            Path(d, name).write_text(t, encoding="utf-8")
        proc = subprocess.run(["git", "merge-file", "-p", f"{d}/a", f"{d}/o", f"{d}/b"],
                              capture_output=True)
        assert proc.returncode != 0


def test_contradictory_status_moves_leave_one_conflict() -> None:
    ours = BASE.replace("Status: 待验\nEvidence: (empty)\nParent: H1", "Status: 被支持\nEvidence: (empty)\nParent: H1")
    theirs = BASE.replace("Status: 待验\nEvidence: (empty)\nParent: H1", "Status: 被推翻\nEvidence: (empty)\nParent: H1")
    res = _merge(BASE, ours, theirs)
    assert len(res.conflicts) == 1
    assert "status of H1.1" in res.conflicts[0] and "被支持" in res.conflicts[0] and "被推翻" in res.conflicts[0]
    from kb.config import config_from_dict
    from kb.parse import parse_file

    parsed = parse_file("tree.md", res.data, config_from_dict(Path("."), {}))
    assert [d.code for d in parsed.diagnostics] == ["KB190"]


def test_same_id_added_with_different_statements_is_a_conflict() -> None:
    ours = BASE + "\n## H3: Ours\nStatus: 待验\nEvidence: (empty)\n"
    theirs = BASE + "\n## H3: Theirs\nStatus: 待验\nEvidence: (empty)\n"
    res = _merge(BASE, ours, theirs)
    assert len(res.conflicts) == 1 and "H3 was added on both sides" in res.conflicts[0]
    assert "kb sync" in res.conflicts[0]
    assert "H1.1" in res.data.decode() and "<<<<<<< ours (H3)" in res.data.decode()
    same = _merge(BASE, ours, ours)
    assert same.conflicts == [] and same.data.decode() == ours


def test_unchanged_merge_is_byte_identical_crlf_kept() -> None:
    crlf = BASE.replace("\n", "\r\n")
    res = _merge(crlf, crlf, crlf.replace("Evidence: E001", "Evidence: E001, E002"))
    assert res.conflicts == [] and res.data == crlf.replace("Evidence: E001", "Evidence: E001, E002").encode()


def _kb(tmp_path: Path) -> Path:
    from kb.ops.init import init_kb

    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    init_kb(root)
    write_files(root, {"tree.md": BASE, "experiments/E001.md": (
        "# E001: H1 - Profile\n\n**Hypothesis**: H1 Loading\n**Date**: 2026-11-29\n**Status**: 进行中\n")})
    assert invoke("dashboard", "--no-commit", cwd=root).code in (0, 1)
    commit_all(root, "base")
    return root


def test_git_merge_with_and_without_the_driver(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    git(root, "checkout", "-qb", "side")
    assert invoke("hyp", "status", "H1.1", "进行中", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    assert invoke("hyp", "add", "Main idea", cwd=root).code == 0
    assert invoke("hyp", "edit", "H1", "Data loading is the bottleneck", "--reason", "wording",
                  cwd=root).code == 0
    main_tip = git(root, "rev-parse", "HEAD")
    # 1. "On the server": the drivers unset, git's line merge.
    plain = git(root, "-c", "merge.kb-tree.driver=", "-c", "merge.kb-dashboard.driver=",
                "merge", "--no-edit", "side", check=False)
    status = git(root, "status", "--porcelain")
    if "UU" in status:  # a conflict: kb reports it as such, once per region
        res = invoke("verify", "--json", cwd=root)
        assert {d["code"] for d in res.json()["diagnostics"]} <= {"KB190"}
        git(root, "merge", "--abort")
    else:
        git(root, "reset", "-q", "--hard", main_tip)
    del plain
    # 2. Locally, with kb's drivers (registered by kb init): a clean merge by meaning.
    proc = subprocess.run(["git", "merge", "--no-edit", "side"], cwd=root, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    text = (root / "tree.md").read_text(encoding="utf-8")
    assert "## H1: Data loading is the bottleneck" in text and "## H3: Main idea" in text
    assert "### H1.1: JPEG decoding dominates\nStatus: 进行中" in text
    res = invoke("verify", "--json", cwd=root)
    assert res.code == 0 and res.json()["diagnostics"] == [], res.stdout
    assert invoke("verify", "--range", f"{git(root, 'rev-list', '--max-parents=0', 'HEAD')}..HEAD",
                  cwd=root).code == 0


def test_verify_warns_when_a_named_driver_is_not_registered(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    assert invoke("verify", cwd=root).code == 0
    git(root, "config", "--remove-section", "merge.kb-tree")
    res = invoke("verify", "--json", cwd=root)
    warn = [d for d in res.json()["diagnostics"] if d["code"] == "KB245"]
    assert res.code == 0 and len(warn) == 1
    assert warn[0]["path"] == ".gitattributes" and "kb-tree" in warn[0]["message"]
    assert invoke("hooks", "install", cwd=root).code == 0
    assert not [d for d in invoke("verify", "--json", cwd=root).json()["diagnostics"]
                if d["code"] == "KB245"]
