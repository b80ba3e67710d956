"""``kb hyp``, ``kb exp`` and ``kb dashboard`` on the command line (issue 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git, invoke, run_script
from test_ops_tree import assert_verifies, block, text, unchanged


def kb(root: Path, *args: str):
    return invoke(*args, cwd=root)


def test_hyp_add_text_and_json_output(tree_kb: Path) -> None:
    r = kb(tree_kb, "hyp", "add", "数据加载是训练瓶颈")
    assert r.code == 0
    assert r.stdout.splitlines()[0] == "added H1 to tree.md (Status: 待验)"
    assert r.stderr.startswith("committed ")
    r = kb(tree_kb, "hyp", "add", "解码 JPEG 占主导", "--parent", "H1", "--json")
    assert r.code == 0
    assert "解码" in r.stdout  # UTF-8 as itself, not \u escapes
    data = json.loads(r.stdout)  # only JSON on stdout
    assert data["id"] == "H1.1" and data["op"] == "hyp.add" and data["status"] == "待验"
    assert data["paths"] == ["tree.md", "DASHBOARD.md"] and len(data["commit"]) == 40
    assert data["commit"] == git(tree_kb, "rev-parse", "HEAD")
    assert data["parent"] == "H1" and data["ids"] == ["H1.1"]


@pytest.mark.parametrize("args, needle, kind", [
    (["hyp", "add", ""], "the statement is empty", "usage"),
    (["hyp", "add", "a\nb"], "spans several lines", "usage"),
    (["hyp", "add", "x", "--parent", "H5"], "unknown hypothesis 'H5'", "not_found"),
    (["hyp", "status", "H1", "done"], "accepted: 待验|untested, 进行中|in-progress, 被支持|supported, 被推翻|refuted",
     "usage"),
    (["hyp", "status", "H9", "进行中"], "unknown hypothesis 'H9'", "not_found"),
    (["hyp", "status", "H1", "待验", "--force"], "--force needs --reason", "usage"),
    (["hyp", "status", "H1", "被支持"], "H1 has no Evidence", "refused"),
    (["hyp", "evidence", "H1", "E404"], "unknown experiment 'E404'", "not_found"),
    (["exp", "new", "--hyp", "H1", ""], "the action is empty", "usage"),
    (["exp", "result", "E404", "--data", "d", "--conclusion", "支持", "--reason", "r"], "unknown experiment",
     "not_found"),
    (["exp", "update", "E404", "x", "--section", "方法"], "unknown experiment", "not_found"),
])
def test_bad_input_is_one_line_nothing_written(tree_kb: Path, args: list, needle: str, kind: str) -> None:
    """Usage mistakes exit 2 (kind usage), refusals 1 (refused, not_found): one line, nothing written."""
    kb(tree_kb, "hyp", "add", "A")
    with unchanged(tree_kb):
        r = kb(tree_kb, *args, "--json")
    code = 2 if kind == "usage" else 1
    assert r.code == code, r.stderr
    assert json.loads(r.stdout)["error"] == {"message": r.stderr[4:-1], "exit_code": code,
                                             "kind": kind}
    assert needle in r.stderr and r.stderr.startswith("kb: ") and r.stderr.count("\n") == 1


def test_bad_conclusion_word(tree_kb: Path) -> None:
    kb(tree_kb, "hyp", "add", "A")
    kb(tree_kb, "exp", "new", "--hyp", "H1", "run")
    with unchanged(tree_kb):
        r = kb(tree_kb, "exp", "result", "E001", "--data", "d", "--conclusion", "yes", "--reason", "r")
    assert r.code == 2  # an unknown word is a usage mistake
    assert r.stderr == ("kb: unknown conclusion 'yes'; accepted: 支持|supports, 推翻|refutes, "
                        "不确定|inconclusive\n")


def test_usage_errors_exit_2(tree_kb: Path) -> None:
    assert kb(tree_kb, "exp", "new", "action only").code == 2  # --hyp is required
    assert kb(tree_kb, "exp", "result", "E001").code == 2
    assert kb(tree_kb, "hyp", "add", "x", "--expect", "zz").code == 2


@pytest.mark.parametrize("value", ["", " ", ","])
def test_empty_expect_is_refused_never_ignored(tree_kb: Path, value: str) -> None:
    # An empty --expect used to turn the compare-and-swap off and write unchecked.
    root = tree_kb
    assert kb(root, "hyp", "add", "A").code == 0
    assert kb(root, "problem", "add", "P1", "solve it").code == 0
    for args in (["hyp", "add", "x"], ["hyp", "status", "H1", "待验"], ["dashboard"],
                 ["problem", "plan", "P1", "later"], ["promote"]):
        with unchanged(root):
            r = kb(root, *args, "--expect", value)
        assert r.code == 2, (args, r.stdout, r.stderr)
        assert "--expect" in r.stderr and ("blob" in r.stderr or "one existing card" in r.stderr)
    r = kb(root, "hyp", "add", "x", "--expect", value)
    assert "--expect is empty: it needs a git blob id" in r.stderr
    assert "`blob` field of `kb show --json`" in r.stderr


def test_full_flow_on_the_command_line(tree_kb: Path) -> None:
    root = tree_kb
    assert kb(root, "hyp", "add", "Data loading is the bottleneck").code == 0
    assert kb(root, "hyp", "add", "Decode dominates", "--parent", "H1").code == 0
    r = kb(root, "exp", "new", "--hyp", "H1.1", "Profile decode", "--goal", "find the hot spot",
           "--date", "2026-11-28")
    assert r.code == 0 and "H1.1 → 进行中" in r.stdout
    assert kb(root, "exp", "log", "E001", "ran it").code == 0
    assert kb(root, "exp", "update", "E001", "py-spy, 3 runs", "--section", "method").code == 0
    r = kb(root, "exp", "result", "E001", "--data", "70%", "--conclusion", "supports",
           "--reason", "decode dominates", "--json")
    data = r.json()
    assert data["hypothesis_status"] == "被支持" and data["evidence"] == ["E001"]
    assert "H1.1 → 被支持 (Evidence: E001)" in data["changes"]
    r = kb(root, "hyp", "evidence", "H1", "E001")
    assert r.code == 0 and r.stdout.startswith("H1 Evidence: E001")
    r = kb(root, "hyp", "status", "H1", "supported")
    assert r.code == 0 and block(root, "H1")[1] == "Status: 被支持"
    r = kb(root, "hyp", "edit", "H1", "Data loading is the main bottleneck", "--reason", "wording")
    assert r.code == 0
    assert "Kb-Override: H1 wording" in git(root, "log", "-1", "--format=%B")
    assert kb(root, "dashboard", "--check").code == 0
    for i in range(9):
        assert_verifies(root, f"HEAD~{i}")


def test_dashboard_command(tree_kb: Path) -> None:
    root = tree_kb
    kb(root, "hyp", "add", "A", "--no-commit")
    assert git(root, "status", "--porcelain") == " M DASHBOARD.md\n M tree.md"
    git(root, "checkout", "--", "DASHBOARD.md")
    r = kb(root, "dashboard", "--check", "--json")
    assert r.code == 1 and r.json() == {"path": "DASHBOARD.md", "stale": True, "exists": True}
    with unchanged(root):
        r = kb(root, "dashboard", "--check")
    assert r.code == 1 and "stale" in r.stderr
    git(root, "add", "tree.md")
    git(root, "commit", "-q", "-m", "tree without its dashboard")
    r = kb(root, "dashboard", "--json")
    assert r.code == 0 and r.json()["paths"] == ["DASHBOARD.md"] and r.json()["changed"] is True
    assert kb(root, "dashboard", "--check").code == 0
    assert git(root, "status", "--porcelain") == ""


def test_expect_on_the_command_line(tree_kb: Path) -> None:
    root = tree_kb
    kb(root, "hyp", "add", "A")
    old = git(root, "rev-parse", "HEAD:tree.md")
    kb(root, "hyp", "add", "B")
    r = kb(root, "hyp", "add", "C", "--expect", old)
    assert r.code == 1 and "changed since it was read" in r.stderr
    r = kb(root, "hyp", "add", "C", "--expect", "tree.md=" + git(root, "rev-parse", "HEAD:tree.md"))
    assert r.code == 0


def test_help_lists_the_commands(tree_kb: Path) -> None:
    r = kb(tree_kb, "--help")
    for name in ("hyp", "exp", "dashboard"):
        assert name in r.stdout
    r = kb(tree_kb, "hyp", "--help")
    for name in ("add", "status", "edit", "evidence"):
        assert name in r.stdout
    r = kb(tree_kb, "exp", "--help")
    for name in ("new", "log", "update", "result"):
        assert name in r.stdout


def test_console_script_whole_process(tree_kb: Path) -> None:
    r = run_script("hyp", "add", "through the installed script", "--json", cwd=tree_kb)
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout)["id"] == "H1"
    assert "## H1: through the installed script" in text(tree_kb)


def test_owner_with_a_newline_is_refused_before_anything_is_written(tree_kb):
    """kb hyp add x --owner $'a\\nb': a one-line usage error, nothing written."""
    head = git(tree_kb, "rev-parse", "HEAD")
    before = (tree_kb / "tree.md").read_bytes()
    r = invoke("hyp", "add", "x", "--owner", "a\nb", cwd=tree_kb)
    assert r.code == 2 and "newline" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert git(tree_kb, "rev-parse", "HEAD") == head
    assert (tree_kb / "tree.md").read_bytes() == before


@pytest.mark.parametrize("bad", ["\x1b[31mred", "bell\x07", "line\u2028sep", "rtl\u202etxt"])
def test_a_statement_with_a_control_or_invisible_character_is_refused(tree_kb, bad) -> None:
    """Terminal escapes, separators and bidi overrides never reach tree.md or a commit."""
    before = (tree_kb / "tree.md").read_bytes()
    r = invoke("hyp", "add", f"statement {bad}", "--json", cwd=tree_kb)
    assert r.code == 2 and r.json()["error"]["kind"] == "usage"
    assert "control or invisible character U+" in r.json()["error"]["message"]
    assert (tree_kb / "tree.md").read_bytes() == before
