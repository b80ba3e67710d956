"""What a ``[paths]`` move may not hide, and which kb.toml reads a change.

A fresh tester found two holes. A commit that moved ``paths.tree`` (``git mv`` + the setting +
``Kb-Override: paths.tree``) passed every hook and the range check with a statement replaced,
Evidence shortened and a status reversed in the moved file: both sides were read through the
new kb.toml, so the base held no hypothesis and every one looked new. And the pre-commit
hook, the range check and ``kb diff`` read ``[paths]`` from the kb.toml on disk, so an
unstaged ``tree = "nothing.md"`` switched off every rule of tree.md. Real repositories; the
hooks' checks run as the hooks run them (``kb verify --staged`` / ``--range``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, invoke
from test_verify_support import TREE, codes, experiment, find, make_repo, verify_json

EDITED = (TREE.replace("## H2: Mixed precision slows convergence", "## H2: A different claim")
          .replace("Evidence: E001\n", "Evidence: (empty)\n"))


@pytest.fixture
def repo(make_kb) -> Path:
    return make_repo(make_kb, {"tree.md": TREE,
                               "experiments/E001.md": experiment("E001", conclusion="支持")},
                     dashboard=False)


def _set_paths(root: Path, **paths: str) -> None:
    lines = "".join(f'{k} = "{v}"\n' for k, v in paths.items())
    (root / "kb.toml").write_text("[kb]\n\n[paths]\n" + lines, encoding="utf-8")


def _commit(root: Path, message: str, *overrides: str) -> None:
    trailers = "".join(f"\nKb-Override: {o}" for o in overrides)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", f"{message}\n{trailers}")


def _errors(data) -> list[str]:
    return sorted(set(codes(data, severity="error")))


def test_a_moved_tree_is_judged_against_what_it_held(repo, monkeypatch) -> None:
    git(repo, "mv", "tree.md", "tree2.md")
    _set_paths(repo, tree="tree2.md")
    git(repo, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", "paths.tree reorg")
    rc, data = verify_json(repo, "--staged")
    assert rc == 0 and _errors(data) == [], data  # the move alone loses nothing
    (repo / "tree2.md").write_text(EDITED, encoding="utf-8")
    git(repo, "add", "-A")
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and {"KB302", "KB303"} <= set(_errors(data)), data
    assert [d["path"] for d in find(data, "KB302")] == ["tree2.md"]
    _commit(repo, "move and edit", "paths.tree reorg")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and {"KB302", "KB303"} <= set(_errors(data)), data
    assert "KB301" not in _errors(data) and "KB307" not in _errors(data), data


def test_a_moved_experiment_keeps_its_recorded_result(repo, monkeypatch) -> None:
    git(repo, "mv", "experiments", "exps")
    _set_paths(repo, experiments="exps")
    exp = repo / "exps" / "E001.md"
    exp.write_text(exp.read_text(encoding="utf-8").replace("**结论**: 支持", "**结论**: 推翻"),
                   encoding="utf-8")
    git(repo, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", "paths.experiments reorg")
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and _errors(data) == ["KB308"], data
    assert [d["path"] for d in find(data, "KB308")] == ["exps/E001.md"]
    _commit(repo, "move and rewrite", "paths.experiments reorg")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    # the move carried the file under its own name: no KB305 "renamed"
    assert rc == 1 and _errors(data) == ["KB308"], data


def test_an_earlier_commit_of_a_range_is_read_with_its_own_paths(repo) -> None:
    """A range reads its commits through the tip's kb.toml: an Evidence shortened in
    tree.md, then the tree moved by a later commit, was on neither side of its commit."""
    (repo / "tree.md").write_text(TREE.replace("Evidence: E001\n", "Evidence: (empty)\n"),
                                  encoding="utf-8")
    _commit(repo, "shorten")
    git(repo, "mv", "tree.md", "tree2.md")
    _set_paths(repo, tree="tree2.md")
    _commit(repo, "move", "paths.tree reorg")
    shortened = git(repo, "rev-parse", "HEAD~1")
    rc, data = verify_json(repo, "--range", "HEAD~2..HEAD")
    (d,) = find(data, "KB303")
    assert rc == 1 and d["commit"] == shortened and d["path"] == "tree.md", data


def test_an_unstaged_kb_toml_does_not_switch_off_the_rules(repo) -> None:
    (repo / "tree.md").write_text(TREE.replace("Evidence: E001\n", "Evidence: (empty)\n"),
                                  encoding="utf-8")
    git(repo, "add", "tree.md")
    _set_paths(repo, tree="nothing.md")  # on disk only: not staged
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and _errors(data) == ["KB303"], data
    git(repo, "commit", "-q", "--no-verify", "-m", "shorten")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and _errors(data) == ["KB303"], data
    res = invoke("diff", "HEAD~1..HEAD", "--json", cwd=repo)
    assert [(x["id"], x["removed"]) for x in res.json()["hypotheses"]["evidence"]] == \
        [("H1", ["E001"])], res.stdout


def test_kb_diff_reads_each_side_with_its_own_paths(repo) -> None:
    """The same range gave "removed H1, H1.1, H2" from main and "added" from the branch."""
    git(repo, "checkout", "-q", "-b", "moved")
    git(repo, "mv", "tree.md", "tree2.md")
    _set_paths(repo, tree="tree2.md")
    (repo / "tree2.md").write_text(EDITED, encoding="utf-8")
    _commit(repo, "move and edit", "paths.tree reorg")
    seen = []
    for branch in ("main", "moved"):
        git(repo, "checkout", "-q", branch)
        res = invoke("diff", "main..moved", "--json", cwd=repo)
        h = res.json()["hypotheses"]
        assert h["added"] == [] and h["removed"] == [], (branch, h)
        assert [(x["id"], x["removed"]) for x in h["evidence"]] == [("H1", ["E001"])], (branch, h)
        seen.append(h)
    assert seen[0] == seen[1]


def test_a_moved_card_settled_by_hand_needs_its_record(make_kb, monkeypatch) -> None:
    """KB312 skipped every card a move carried ("one changed on the way is KB304's", which
    covers Verified/ only): an entry set to 概率1｜状态已验 in a moved problem passed."""
    from test_verify_support import problem

    card = problem("q1") + "### 解法 1｜A｜概率0.3｜状态未定论\nAn argument.\n"
    repo = make_repo(make_kb, {"tree.md": TREE, "Problems/q1.md": card}, dashboard=False)
    git(repo, "mv", "Problems", "Probs")
    _set_paths(repo, problems="Probs")
    (repo / "Probs" / "q1.md").write_text(card.replace("概率0.3｜状态未定论", "概率1｜状态已验"),
                                          encoding="utf-8")
    git(repo, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", "paths.problems reorg")
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and _errors(data) == ["KB312"], data
    _commit(repo, "move and settle", "paths.problems reorg")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and _errors(data) == ["KB312"], data


def test_an_id_removed_before_a_move_is_not_reused_after_it(repo) -> None:
    """The range remembered what each commit removed through the tip's kb.toml: a removal
    in tree.md, then a move of the tree that declares the ID again, passed `--range`."""
    (repo / "tree.md").write_text(TREE.replace(
        "\n## H2: Mixed precision slows convergence\nStatus: 待验\nEvidence: (empty)\n", ""),
        encoding="utf-8")
    _commit(repo, "drop H2", "H2 a duplicate")
    git(repo, "mv", "tree.md", "tree2.md")
    _set_paths(repo, tree="tree2.md")
    (repo / "tree2.md").write_text((repo / "tree2.md").read_text(encoding="utf-8")
                                   + "\n## H2: Something else entirely\nStatus: 待验\n"
                                   "Evidence: (empty)\n", encoding="utf-8")
    _commit(repo, "move and reuse", "paths.tree reorg")
    rc, data = verify_json(repo, "--range", "HEAD~2..HEAD")
    (d,) = find(data, "KB307")
    assert rc == 1 and d["path"] == "tree2.md" and "H2" in d["message"], data
    rc, data = verify_json(repo, "--rev", "HEAD")
    assert rc == 1 and "KB307" in _errors(data), data


def test_the_working_tree_check_and_diff_read_head_where_its_files_were(repo, monkeypatch) -> None:
    """`kb verify` and `kb diff` of an uncommitted move listed only the files the working
    tree's kb.toml reads: tree.md, gone, was on neither side, and the edits passed."""
    git(repo, "mv", "tree.md", "tree2.md")
    _set_paths(repo, tree="tree2.md")
    monkeypatch.setenv("KB_OVERRIDE", "paths.tree reorg")
    rc, data = verify_json(repo)
    assert rc == 0 and _errors(data) == [], data
    res = invoke("diff", "--json", cwd=repo)
    assert res.json()["hypotheses"]["added"] == [], res.stdout
    (repo / "tree2.md").write_text(EDITED, encoding="utf-8")
    rc, data = verify_json(repo)
    assert rc == 1 and {"KB302", "KB303"} <= set(_errors(data)), data
    h = invoke("diff", "--json", cwd=repo).json()["hypotheses"]
    assert h["added"] == [] and [x["id"] for x in h["corrected"]] == ["H2"], h


def test_a_hypothesis_removed_from_the_moved_tree_is_a_removal(repo, monkeypatch) -> None:
    """Not "no longer read: kb.toml moves paths.tree … was deleted": the move carried the
    file, and the hypothesis was taken out of it."""
    git(repo, "mv", "tree.md", "tree2.md")
    _set_paths(repo, tree="tree2.md")
    (repo / "tree2.md").write_text(TREE.replace(
        "\n## H2: Mixed precision slows convergence\nStatus: 待验\nEvidence: (empty)\n", ""),
        encoding="utf-8")
    git(repo, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", "paths.tree reorg")
    rc, data = verify_json(repo, "--staged")
    (d,) = find(data, "KB301")
    assert rc == 1 and d["message"].startswith("hypothesis H2 was removed;"), d


def test_kb_diff_of_a_moved_experiment_says_what_changed_in_it(repo) -> None:
    """A pure move listed every experiment as "edited (text only)"; a recorded result's
    section edited read as "text only" too, moved or not."""
    git(repo, "mv", "experiments", "exps")
    _set_paths(repo, experiments="exps")
    _commit(repo, "move", "paths.experiments reorg")
    assert invoke("diff", "HEAD~1..HEAD", "--json", cwd=repo).json()["experiments"]["edited"] == []
    exp = repo / "exps" / "E001.md"
    exp.write_text(exp.read_text(encoding="utf-8").replace(
        "**结论**: 支持", "**数据**: 3 runs\n**结论**: 支持"), encoding="utf-8")
    _commit(repo, "rewrite the result")
    for spec in ("HEAD~1..HEAD", "HEAD~2..HEAD"):  # edited in place; moved and edited
        edited = invoke("diff", spec, "--json", cwd=repo).json()["experiments"]["edited"]
        assert [(e["id"], e["sections"]) for e in edited] == [("E001", ["结果"])], (spec, edited)


def test_kb_diff_of_the_working_tree_reads_the_edited_files(repo) -> None:
    """The working tree's blobs are hashed, not written to git's objects: the diff could not
    read them, and every edited section of an experiment read as "text only"."""
    assert invoke("diff", "--json", cwd=repo).code == 0  # (the index built and refreshed)
    exp = repo / "experiments" / "E001.md"
    exp.write_text(exp.read_text(encoding="utf-8").replace(
        "**结论**: 支持", "**数据**: 3 runs\n**结论**: 支持"), encoding="utf-8")
    edited = invoke("diff", "--json", cwd=repo).json()["experiments"]["edited"]
    assert [(e["id"], e["sections"]) for e in edited] == [("E001", ["结果"])], edited
