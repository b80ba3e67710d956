"""The hypothesis-tree write operations (issue 4; seed hypothesis-tree.md).

Real git repositories in tmp (pinned identity and dates, conftest), no mocks.
Every commit the operations make is checked with ``kb verify --rev`` when that
command is registered.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SOURCE_PATH, commit_all, git, invoke, kb_script, tree_snapshot, write_files
from kb.errors import RefusedError, StaleError, UsageError
from kb.ops import experiments as ex
from kb.ops import hypotheses as tr


# -- helpers ------------------------------------------------------------------------------

def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD")


def n_commits(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


def text(root: Path, rel: str = "tree.md") -> str:
    return (root / rel).read_text(encoding="utf-8")


def assert_verifies(root: Path, rev: str = "HEAD") -> None:
    """Every commit kb makes passes `kb verify --rev`."""
    res = invoke("verify", "--rev", rev, cwd=root)
    assert res.code == 0, (res.stdout, res.stderr)


def assert_index_is_exact(root: Path) -> None:
    """The parse kb stored for the tree it wrote equals a full parse of that file."""
    from kb import git as kgit
    from kb.index import Index
    from kb.index_rows import links_of
    from kb.parse import parse_file
    from kb.repo import open_kb

    k = open_kb(root)
    data = (root / "tree.md").read_bytes()
    blob = kgit.blob_id(data)
    full = parse_file("tree.md", data, k.config, "tree")
    with Index(k) as idx:
        assert idx.has_parse("tree.md", blob)
        got = [(r.id, r.line, json.loads(r.data)) for r in idx.rows_of("tree.md", blob)]
        diags = sorted((d.line, d.code, d.message, d.fix.line if d.fix else None)
                       for d in idx.diagnostics_of("tree.md", blob))
        links = sorted(idx.db.execute("SELECT src, dst, kind FROM links WHERE path=? AND blob=?",
                                      ("tree.md", blob)).fetchall())
    assert got == [(o.id, o.line, json.loads(o.to_json())) for o in full.objects]
    assert diags == sorted((d.line, d.code, d.message, d.fix.line if d.fix else None)
                           for d in full.diagnostics)
    assert links == sorted(x for o in full.objects for x in links_of(o))


def block(root: Path, hid: str) -> list[str]:
    """The heading and anchor lines of ``hid`` in tree.md."""
    lines = text(root).splitlines()
    for i, ln in enumerate(lines):
        if ln.lstrip("#").startswith(f" {hid}:"):
            out = [ln]
            for nxt in lines[i + 1:]:
                if not nxt.strip():
                    break
                out.append(nxt)
            return out
    raise AssertionError(f"{hid} not in tree.md")


def message(root: Path, rev: str = "HEAD") -> str:
    return git(root, "log", "-1", "--format=%B", rev)


def changed_paths(root: Path, rev: str = "HEAD") -> list[str]:
    return sorted(git(root, "show", "--name-only", "--format=", rev).split())


def unchanged(root: Path):
    """Context: assert that nothing in the work tree, the index or HEAD changes."""
    class _C:
        def __enter__(self):
            self.files = tree_snapshot(root, skip_git=True)
            self.files = {k: v for k, v in self.files.items() if not k.startswith(".kb/")}
            self.head = head(root)
            self.status = git(root, "status", "--porcelain")
            return self

        def __exit__(self, *exc):
            after = {k: v for k, v in tree_snapshot(root, skip_git=True).items()
                     if not k.startswith(".kb/")}
            assert after == self.files
            assert head(root) == self.head
            assert git(root, "status", "--porcelain") == self.status
            return False
    return _C()


# -- the seed's worked flow ----------------------------------------------------------------

def test_seed_flow_end_to_end(tree_kb: Path) -> None:
    root = tree_kb
    base = n_commits(root)
    r1 = tr.add_hypothesis(root, "Data loading is the training bottleneck")
    assert r1.id == "H1" and r1.commit and r1.paths == ["tree.md", "DASHBOARD.md"]
    r2 = tr.add_hypothesis(root, "Decoding JPEGs dominates loading time", parent="H1")
    r3 = tr.add_hypothesis(root, "Disk reads dominate loading time", parent="H1")
    assert (r2.id, r3.id) == ("H1.1", "H1.2")
    assert block(root, "H1") == ["## H1: Data loading is the training bottleneck", "Status: 待验",
                                 "Evidence: (empty)", "Children: H1.1, H1.2"]
    assert block(root, "H1.2") == ["### H1.2: Disk reads dominate loading time", "Status: 待验",
                                   "Evidence: (empty)", "Parent: H1"]
    dash0 = text(root, "DASHBOARD.md")
    assert "**Active**: 3 hypotheses | **Closed**: 0" in dash0

    e = ex.new_experiment(root, "H1.1", "Profile the decode step", goal="Find the hot spot")
    assert e.id == "E001" and e.paths == ["experiments/E001.md", "tree.md", "DASHBOARD.md"]
    assert block(root, "H1.1")[1] == "Status: 进行中"
    exp = text(root, "experiments/E001.md")
    assert exp.startswith("# E001: H1.1 - Profile the decode step\n\n"
                          "**Hypothesis**: H1.1 Decoding JPEGs dominates loading time\n"
                          "**Date**: 2026-11-29\n**Status**: 进行中\n")
    assert "**目标**: Find the hot spot\n" in exp

    lg = ex.log(root, "E001", "2026-11-29 10:00 ran the profiler 3 times")
    assert lg.paths == ["experiments/E001.md"]
    assert "## 执行记录\n\n2026-11-29 10:00 ran the profiler 3 times\n\n## 结果" in text(root, "experiments/E001.md")

    res = ex.record_result(root, "E001", "71% of the step in decode", "支持", "decode dominates")
    assert "H1.1 → 被支持 (Evidence: E001)" in res.changes
    assert block(root, "H1.1") == ["### H1.1: Decoding JPEGs dominates loading time",
                                   "Status: 被支持", "Evidence: E001", "Parent: H1"]
    exp = text(root, "experiments/E001.md")
    assert "**Status**: 已完成" in exp
    assert "## 结果\n\n**数据**: 71% of the step in decode\n**结论**: 支持 — decode dominates\n\n## 影响" in exp
    dash = text(root, "DASHBOARD.md")
    assert "**Active**: 2 hypotheses | **Closed**: 1 | **Last**: 2026-11-29" in dash
    assert "- H1.1:" not in dash.split("## Active Hypotheses")[1].split("##")[0]

    assert n_commits(root) == base + 6
    msg = message(root)
    assert "Kb-Op: exp.result" in msg and "Kb-Id: E001" in msg and "Kb-Id: H1.1" in msg
    for rev in range(6):
        assert_verifies(root, f"HEAD~{rev}")
    assert_index_is_exact(root)
    assert git(root, "status", "--porcelain") == ""


def test_refuting_result_after_a_supporting_one(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "Mixed precision slows convergence")
    ex.new_experiment(root, "H1", "Compare fp32 and bf16 loss curves")
    ex.record_result(root, "E001", "bf16 converges 3% slower", "supports", "slower in bf16")
    assert block(root, "H1")[1:3] == ["Status: 被支持", "Evidence: E001"]
    ex.new_experiment(root, "H1", "Repeat with loss scaling fixed")
    assert block(root, "H1")[1] == "Status: 被支持"  # only 待验 moves to 进行中
    res = ex.record_result(root, "E002", "identical curves", "推翻", "the slowdown was a bug")
    assert block(root, "H1")[1:3] == ["Status: 被推翻", "Evidence: E001, E002"]
    assert "H1 → 被推翻 (Evidence: E001, E002)" in res.changes
    # a later supporting result cannot un-refute it (any refutation wins)
    ex.new_experiment(root, "H1", "Third run")
    res = ex.record_result(root, "E003", "slower again", "支持", "noise")
    assert block(root, "H1")[1:3] == ["Status: 被推翻", "Evidence: E001, E002, E003"]
    assert any(c.startswith("H1 stays 被推翻") for c in res.changes)
    for rev in range(6):
        assert_verifies(root, f"HEAD~{rev}")


def test_inconclusive_leaves_it_in_progress(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "Warmup length matters")
    ex.new_experiment(root, "H1", "Sweep warmup")
    res = ex.record_result(root, "E001", "no clear trend", "不确定", "too noisy")
    assert block(root, "H1")[1:3] == ["Status: 进行中", "Evidence: E001"]
    assert "H1 stays 进行中 (Evidence: E001)" in res.changes
    assert "**结论**: 不确定 — too noisy" in text(root, "experiments/E001.md")
    assert_verifies(root)


def test_grandchild_heading_level_and_placement(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "Top")
    tr.add_hypothesis(root, "Child one", parent="H1")
    tr.add_hypothesis(root, "Second top")
    tr.add_hypothesis(root, "Child two", parent="H1")
    g = tr.add_hypothesis(root, "Grandchild", parent="H1.1")
    assert g.id == "H1.1.1"
    assert block(root, "H1.1.1")[0] == "#### H1.1.1: Grandchild"
    assert block(root, "H1.1.1")[-1] == "Parent: H1.1"
    assert "Children: H1.1.1" in block(root, "H1.1")
    order = [ln.split(":")[0].lstrip("# ") for ln in text(root).splitlines() if ln.startswith("#") and ":" in ln]
    # a child goes after its parent's last descendant; a top-level one at the end
    assert order == ["H1", "H1.1", "H1.1.1", "H1.2", "H2"]
    assert "\n\n\n" not in text(root)  # one blank line between blocks
    assert_index_is_exact(root)
    assert_verifies(root)


def test_unknown_parent_is_refused_and_nothing_written(tree_kb: Path) -> None:
    tr.add_hypothesis(tree_kb, "Top")
    with unchanged(tree_kb):
        with pytest.raises(RefusedError, match=r"unknown hypothesis 'H9'.*top-level: H1"):
            tr.add_hypothesis(tree_kb, "Orphan", parent="H9")


@pytest.mark.parametrize("bad, match", [
    ("", "the statement is empty"),
    ("   ", "the statement is empty"),
    ("two\nlines", "spans several lines"),
    ("carriage\rreturn", "spans several lines"),
])
def test_bad_statements_refused(tree_kb: Path, bad: str, match: str) -> None:
    with unchanged(tree_kb):
        with pytest.raises(UsageError, match=match):
            tr.add_hypothesis(tree_kb, bad)


def test_hand_corrupted_tree_is_refused(tree_kb: Path) -> None:
    root = tree_kb
    write_files(root, {"tree.md": "# Hypothesis Tree\n\n## H1: Bold anchors\n**Status**: 待验\n"
                                  "Evidence: (empty)\n"})
    commit_all(root, "hand edit")
    with unchanged(root):
        with pytest.raises(RefusedError, match=r"tree.md already has 1 format error.*KB111"):
            tr.add_hypothesis(root, "Another")
        with pytest.raises(RefusedError, match="already has"):
            tr.set_status(root, "H1", "进行中")


def test_ids_are_never_reused(tree_kb: Path) -> None:
    root = tree_kb
    for s in ("one", "two", "three"):
        tr.add_hypothesis(root, s)
    tr.add_hypothesis(root, "child", parent="H1")
    tr.add_hypothesis(root, "child 2", parent="H1")
    # someone deletes H3 and H1.2 by hand and commits
    t = text(root)
    t = t.replace("\n## H3: three\nStatus: 待验\nEvidence: (empty)\n", "")
    t = t.replace("\n### H1.2: child 2\nStatus: 待验\nEvidence: (empty)\nParent: H1\n", "")
    t = t.replace("Children: H1.1, H1.2", "Children: H1.1")
    (root / "tree.md").write_text(t, encoding="utf-8")
    commit_all(root, "remove H3 and H1.2 by hand")
    assert tr.add_hypothesis(root, "four").id == "H4"
    assert tr.add_hypothesis(root, "child 3", parent="H1").id == "H1.3"


def test_history_cache_follows_head(tree_kb: Path) -> None:
    """IDs are those of HEAD's history: after a reset the cache answers for the old
    HEAD (an ID only an abandoned commit used is free again), and it extends itself
    over commits made without kb."""
    root = tree_kb
    tr.add_hypothesis(root, "one")
    tr.add_hypothesis(root, "two")
    git(root, "reset", "-q", "--hard", "HEAD~1")
    assert tr.add_hypothesis(root, "two again").id == "H2"
    t = text(root).replace("\n## H2: two again\nStatus: 待验\nEvidence: (empty)\n", "")
    (root / "tree.md").write_text(t, encoding="utf-8")
    commit_all(root, "drop H2 by hand")  # a commit the cache has not seen
    assert tr.add_hypothesis(root, "three").id == "H3"
    cache = json.loads((root / ".kb" / "history-ids.json").read_text(encoding="utf-8"))
    assert cache["heads"][head(root)]["ids"] == ["H1", "H2", "H3"]


def test_child_number_is_max_plus_one(tree_kb: Path) -> None:
    root = tree_kb
    write_files(root, {"tree.md": "# Hypothesis Tree\n\n## H1: a\nStatus: 待验\nEvidence: (empty)\n"
                                  "Children: H1.1, H1.3\n\n### H1.1: b\nStatus: 待验\nEvidence: (empty)\n"
                                  "Parent: H1\n\n### H1.3: c\nStatus: 待验\nEvidence: (empty)\nParent: H1\n"})
    commit_all(root, "hand-made tree")
    r = tr.add_hypothesis(root, "d", parent="H1")
    assert r.id == "H1.4"
    assert block(root, "H1")[-1] == "Children: H1.1, H1.3, H1.4"
    assert text(root).endswith("Parent: H1\n\n### H1.4: d\nStatus: 待验\nEvidence: (empty)\nParent: H1\n")


def test_a_child_the_children_line_names_already_is_not_named_twice(tree_kb: Path) -> None:
    """``Children: H1.1`` written by hand before H1.1 was: the child kb adds is H1.1, and
    the line stays as it is (it was ``Children: H1.1, H1.1``, an error in kb's own commit)."""
    root = tree_kb
    write_files(root, {"tree.md": "# Hypothesis Tree\n\n## H1: a\nStatus: 待验\nEvidence: (empty)\n"
                                  "Children: H1.1\n"})
    commit_all(root, "hand-made tree")
    r = tr.add_hypothesis(root, "b", parent="H1")
    assert r.id == "H1.1" and "H1 Children: H1.1" in r.changes
    assert block(root, "H1")[-1] == "Children: H1.1"
    assert invoke("verify", cwd=root).code == 0
    # a Children line naming an ID twice is said so
    t = text(root).replace("Children: H1.1", "Children: H1.1, H1.1")
    (root / "tree.md").write_text(t, encoding="utf-8")
    r = invoke("verify", "--json", cwd=root)
    assert r.code == 1 and any(d["code"] == "KB204" and "names H1.1 twice" in d["message"]
                               for d in r.json()["diagnostics"]), r.stdout


def test_untouched_bytes_survive_crlf_and_bom(tree_kb: Path) -> None:
    root = tree_kb
    original = ("\ufeff# Hypothesis Tree\r\n\r\n"
                "## H1: 数据加载是瓶颈\r\n状态: 待验\r\nEvidence: (empty)\r\nOwner: ana\r\n\r\n"
                "Free prose, kept as is.   \r\n\r\n"
                "```text\r\n## H9: not a hypothesis (inside a fence)\r\n```\r\n\r\n"
                "## H2: second\r\nStatus: 待验\r\nEvidence: (empty)").encode("utf-8")
    (root / "tree.md").write_bytes(original)
    commit_all(root, "CRLF + BOM tree")
    tr.add_hypothesis(root, "child", parent="H1")
    tr.set_status(root, "H2", "in-progress")
    tr.add_hypothesis(root, "third")
    new = (root / "tree.md").read_bytes()
    want = ("\ufeff# Hypothesis Tree\r\n\r\n"
            "## H1: 数据加载是瓶颈\r\n状态: 待验\r\nEvidence: (empty)\r\nChildren: H1.1\r\nOwner: ana\r\n\r\n"
            "Free prose, kept as is.   \r\n\r\n"
            "```text\r\n## H9: not a hypothesis (inside a fence)\r\n```\r\n\r\n"
            "### H1.1: child\r\nStatus: 待验\r\nEvidence: (empty)\r\nParent: H1\r\n\r\n"
            "## H2: second\r\nStatus: 进行中\r\nEvidence: (empty)\r\n\r\n"
            "## H3: third\r\nStatus: 待验\r\nEvidence: (empty)\r\n").encode("utf-8")
    assert new == want
    assert_index_is_exact(root)
    assert_verifies(root)


# -- status, edit, evidence -------------------------------------------------------------------

def test_status_moves_and_overrides(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "A")
    r = tr.set_status(root, "H1", "in-progress")  # English word in, KB's own word out
    assert block(root, "H1")[1] == "Status: 进行中" and r.changes[0] == "H1 → 进行中"
    with unchanged(root):
        with pytest.raises(RefusedError, match=r"H1 has no Evidence"):
            tr.set_status(root, "H1", "supported")
        with pytest.raises(UsageError, match=r"unknown hypothesis status 'maybe'; accepted: "
                                               r"待验\|untested, 进行中\|in-progress"):
            tr.set_status(root, "H1", "maybe")
        with pytest.raises(RefusedError, match=r"进行中 → 待验 is not an allowed status move.*--force"):
            tr.set_status(root, "H1", "待验")
        with pytest.raises(UsageError, match="--force needs --reason"):
            tr.set_status(root, "H1", "待验", force=True)
    noop = tr.set_status(root, "H1", "进行中")
    assert noop.commit is None and "nothing to do" in noop.changes[0]
    forced = tr.set_status(root, "H1", "untested", force=True, reason="started by mistake")
    assert block(root, "H1")[1] == "Status: 待验"
    assert "Kb-Override: H1 started by mistake" in message(root)
    assert forced.details["forced"] is True
    assert_verifies(root)


def test_edit_statement_records_override(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "Disk reads dominate")
    tr.add_hypothesis(root, "child", parent="H1")
    with unchanged(root):
        with pytest.raises(UsageError, match="needs --reason"):
            tr.edit_statement(root, "H1", "Disk reads dominate loading", "")
        with pytest.raises(UsageError, match="spans several lines"):
            tr.edit_statement(root, "H1", "a\nb", "typo")
    r = tr.edit_statement(root, "H1", "Disk reads dominate loading time", "clarify")
    assert block(root, "H1")[0] == "## H1: Disk reads dominate loading time"
    msg = message(root)
    assert "Kb-Op: hyp.edit" in msg and "Kb-Override: H1 clarify" in msg
    assert r.details["previous"] == "Disk reads dominate"
    assert_index_is_exact(root)
    assert_verifies(root)


def test_evidence_is_append_only(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "A")
    tr.add_hypothesis(root, "B")
    ex.new_experiment(root, "H2", "for B")
    with unchanged(root):
        with pytest.raises(RefusedError, match=r"unknown experiment 'E009' \(experiments: E001\)"):
            tr.add_evidence(root, "H1", "E009")
    r = tr.add_evidence(root, "H1", "E1")  # E1 finds E001
    assert block(root, "H1")[2] == "Evidence: E001" and r.details["evidence"] == ["E001"]
    again = tr.add_evidence(root, "H1", "E001")
    assert again.commit is None and "already" in again.changes[0]
    assert_verifies(root)


# -- transaction properties ---------------------------------------------------------------------

def test_expect_compare_and_swap(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "A")
    blob = git(root, "rev-parse", "HEAD:tree.md")
    tr.add_hypothesis(root, "B")  # someone else wrote since
    with unchanged(root):
        with pytest.raises(StaleError, match="changed since it was read"):
            tr.add_hypothesis(root, "C", expect=blob)
        with pytest.raises(UsageError, match="blob id"):
            tr.add_hypothesis(root, "C", expect="nope")
        for empty in ("", "  ", {"tree.md": ""}):  # never read as "no check"
            with pytest.raises(UsageError, match="--expect is empty"):
                tr.add_hypothesis(root, "C", expect=empty)
    fresh = git(root, "rev-parse", "HEAD:tree.md")
    assert tr.add_hypothesis(root, "C", expect=fresh).id == "H3"


def test_no_commit_leaves_files_unstaged(tree_kb: Path) -> None:
    root = tree_kb
    before = head(root)
    r = tr.add_hypothesis(root, "A", no_commit=True)
    assert r.commit is None and r.paths == ["tree.md", "DASHBOARD.md"]
    assert head(root) == before
    assert sorted(git(root, "status", "--porcelain").splitlines()) == [" M DASHBOARD.md", " M tree.md"]
    assert "## H1: A" in text(root)
    # again, on top of the uncommitted change
    tr.add_hypothesis(root, "B", no_commit=True)
    assert "## H2: B" in text(root)


def test_dirty_target_refused(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "A")
    with open(root / "tree.md", "a", encoding="utf-8") as f:
        f.write("\nA note being written.\n")
    with unchanged(root):
        with pytest.raises(RefusedError, match="tree.md has uncommitted changes"):
            tr.add_hypothesis(root, "B")


def test_other_staged_and_unstaged_work_untouched(tree_kb: Path) -> None:
    root = tree_kb
    write_files(root, {"notes/a.md": "a\n", "notes/b.md": "b\n"})
    commit_all(root, "notes")
    write_files(root, {"notes/a.md": "a staged\n", "notes/b.md": "b unstaged\n", "new.txt": "new\n"})
    git(root, "add", "notes/a.md", "new.txt")
    tr.add_hypothesis(root, "A")
    assert changed_paths(root) == ["DASHBOARD.md", "tree.md"]
    status = sorted(git(root, "status", "--porcelain").splitlines())
    assert status == sorted(["A  new.txt", "M  notes/a.md", " M notes/b.md"])
    assert git(root, "diff", "--cached", "--", "notes/a.md").endswith("+a staged")
    assert (root / "notes/b.md").read_text() == "b unstaged\n"


def test_statement_that_cannot_be_a_heading_is_refused(tree_kb: Path) -> None:
    with unchanged(tree_kb):
        with pytest.raises(RefusedError):
            tr.add_hypothesis(tree_kb, "x", parent="H1")  # no H1 yet


def test_depth_limit(tree_kb: Path) -> None:
    root = tree_kb
    parent = None
    for i in range(5):
        parent = tr.add_hypothesis(root, f"level {i}", parent=parent).id
    assert parent == "H1.1.1.1.1" and block(root, parent)[0].startswith("###### ")
    with unchanged(root):
        with pytest.raises(RefusedError, match="headings stop at ######"):
            tr.add_hypothesis(root, "too deep", parent=parent)


# -- the region parse stands for a full parse -----------------------------------------------------

def test_spliced_index_equals_full_parse_random_edits(tree_kb: Path) -> None:
    """Random adds / status moves / evidence on a tree with prose, fences and stray
    headings: after every operation the index entry kb stored for the new tree
    (spliced from the old parse plus a region parse) equals a full parse."""
    root = tree_kb
    body = ["# Hypothesis Tree", "", "Intro prose.", ""]
    for i in range(1, 5):
        body += [f"## H{i}: top {i}", "Status: 待验", "Evidence: (empty)", "", f"prose {i}", ""]
        if i % 2:
            body += ["```", f"## H{i + 10}: fenced, not a hypothesis", "```", ""]
        body += ["### Notes", "not a declaration", ""]
    (root / "tree.md").write_text("\n".join(body) + "\n", encoding="utf-8")
    commit_all(root, "seeded tree")
    rng = random.Random(4)
    ids = ["H1", "H2", "H3", "H4"]
    ex.new_experiment(root, "H1", "first")
    for step in range(14):
        op = rng.choice(["child", "child", "top", "status", "evidence"])
        if op == "child":
            p = rng.choice([i for i in ids if i.count(".") < 3])
            ids.append(tr.add_hypothesis(root, f"child {step}", parent=p).id)
        elif op == "top":
            ids.append(tr.add_hypothesis(root, f"top {step}").id)
        elif op == "status":
            tr.set_status(root, rng.choice(ids), "进行中")
        else:
            tr.add_evidence(root, rng.choice(ids), "E001")
        assert_index_is_exact(root)
    assert_verifies(root)


# -- crash, concurrency --------------------------------------------------------------------------

def _script_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SOURCE_PATH)
    env.update(extra)
    return env


def _crash_at_commit() -> list[str]:
    """``kb`` killed (SIGKILL) after writing its files, instead of committing them
    (injected by tests/kb_faults.py: kb has no crash switch of its own)."""
    return [sys.executable, str(Path(__file__).resolve().parent / "kb_faults.py"), "commit", "--"]


def test_crash_between_write_and_commit_is_recovered(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "A")
    committed = {p: (root / p).read_bytes() for p in ("tree.md", "DASHBOARD.md")}
    before = head(root)
    proc = subprocess.run([*_crash_at_commit(), "hyp", "add", "B"], cwd=root, capture_output=True,
                          env=_script_env(), timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert head(root) == before
    assert b"## H2: B" in (root / "tree.md").read_bytes()  # written, not committed
    assert (Path(git(root, "rev-parse", "--absolute-git-dir")) / "kb-transaction.json").exists()
    # the next write detects the dead transaction, rolls it back, then does its own work
    res = invoke("hyp", "add", "C", "--json", cwd=root)
    assert res.code == 0, res.stderr
    assert "rolled back an interrupted kb write" in res.stderr
    data = res.json()
    assert data["id"] == "H2" and data["recovered"] == ["tree.md", "DASHBOARD.md"]
    t = text(root)
    assert "## H2: C" in t and ": B\n" not in t
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "rev-parse", "HEAD~1") == before  # B never landed
    assert committed["tree.md"] in (root / "tree.md").read_bytes()
    assert_verifies(root)


def test_crash_then_read_only_check_then_recovery_keeps_worktree(tree_kb: Path) -> None:
    """After a crash the rolled-back files equal the last commit exactly."""
    root = tree_kb
    tr.add_hypothesis(root, "A")
    ex.new_experiment(root, "H1", "run")
    snap = {p: (root / p).read_bytes() for p in ("tree.md", "DASHBOARD.md", "experiments/E001.md")}
    proc = subprocess.run([*_crash_at_commit(), "exp", "new", "--hyp", "H1", "another"], cwd=root,
                          capture_output=True, env=_script_env(), timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert (root / "experiments/E002.md").exists()
    from kb.ops.transaction import Transaction
    from kb.repo import open_kb

    with Transaction(open_kb(root), "test.recover") as tx:
        # same date, H1 already 进行中: the dead write touched only the new file
        assert tx.recovered == ["experiments/E002.md"]
    assert not (root / "experiments/E002.md").exists()
    assert {p: (root / p).read_bytes() for p in snap} == snap
    assert git(root, "status", "--porcelain") == ""


def test_two_concurrent_adds_get_different_ids(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "A")
    base = n_commits(root)
    procs = [subprocess.Popen([kb_script(), "hyp", "add", f"racer {i}", "--json"], cwd=root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_script_env())
             for i in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1] for o in outs]
    ids = sorted(json.loads(o[0])["id"] for o in outs)
    assert ids == ["H2", "H3"]
    assert n_commits(root) == base + 2
    t = text(root)
    assert t.count("## H2: racer") == 1 and t.count("## H3: racer") == 1
    assert git(root, "status", "--porcelain") == ""
    assert_verifies(root, "HEAD")
    assert_verifies(root, "HEAD~1")


def test_commits_pass_through_the_installed_hooks(tree_kb: Path) -> None:
    """kb's own commits go through the repository's hooks like any other commit."""
    root = tree_kb
    assert invoke("hooks", "install", "--no-pre-push", cwd=root).code == 0
    hook = Path(git(root, "rev-parse", "--absolute-git-dir")) / "hooks" / "pre-commit"
    marker = root.parent / "hook-ran"
    assert hook.exists()
    chained = hook.with_name("pre-commit.kb-chained")
    chained.write_text(f"#!/bin/sh\necho $KB_OP >> '{marker}'\n")
    chained.chmod(0o755)
    res = subprocess.run([kb_script(), "hyp", "add", "hooked", "--json"], cwd=root,
                         capture_output=True, env=_script_env(), timeout=60)
    assert res.returncode == 0, res.stderr
    assert marker.read_text().split() == ["hyp.add"]
    assert "## H1: hooked" in text(root) and git(root, "status", "--porcelain") == ""


def test_library_accepts_a_path_inside_the_kb(tree_kb: Path) -> None:
    (tree_kb / "sub").mkdir()
    assert tr.add_hypothesis(tree_kb / "sub", "from a sub folder").id == "H1"


def test_kb_in_a_subfolder_of_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import git_init
    from kb.ops.init import init_kb

    monkeypatch.setenv("KB_TODAY", "2026-11-29")
    repo = git_init(tmp_path / "repo")
    write_files(repo, {"README.md": "top\n"})
    init_kb(repo / "research", layout="research")
    commit_all(repo, "init")
    k = repo / "research"
    tr.add_hypothesis(k, "A")
    e = ex.new_experiment(k, "H1", "try")
    assert e.paths == ["research/.research/experiments/E001.md", "research/.research/tree.md",
                       "research/.research/DASHBOARD.md"]
    ex.record_result(k, "E001", "d", "支持", "r")
    assert "Status: 被支持" in (k / ".research/tree.md").read_text(encoding="utf-8")
    assert git(repo, "status", "--porcelain") == ""
    assert_verifies(k)


def test_a_tree_write_hashes_each_version_of_tree_md_once(tree_kb: Path, monkeypatch) -> None:
    """The operation, its index writes and the commit share one blob id per text
    (Transaction.blob_id): `kb hyp add` hashes the new tree.md once, and the old one
    once more only in the index refresh (git reports a file written a moment ago as
    stat-dirty, so the working-tree snapshot hashes it itself)."""
    from kb import git as kbgit

    tr.add_hypothesis(tree_kb, "first")
    tree = (tree_kb / "tree.md").read_bytes()
    calls: list[bytes] = []
    blob_id = kbgit.blob_id

    def counting(data: bytes) -> str:
        calls.append(data)
        return blob_id(data)

    monkeypatch.setattr(kbgit, "blob_id", counting)
    tr.add_hypothesis(tree_kb, "second")
    trees = [d for d in calls if d.startswith(tree[:40])]
    assert sorted(trees, key=len) == [tree, tree, (tree_kb / "tree.md").read_bytes()]
