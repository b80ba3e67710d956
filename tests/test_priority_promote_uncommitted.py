"""``kb priority adjust`` and ``kb promote`` never commit what they computed from an
uncommitted edit of a file they read.

Both compute from the working tree (priorities from the problem cards and direction logs,
or the proposition cards; judge problems from the proposition and problem cards) and
commit only the cards they write: a hand edit they read but do not commit would leave a
commit holding values no commit's cards give. They refuse as ``kb refresh``, ``kb report``
and ``kb dashboard`` do (exit 1, kind ``refused``, HEAD and files unchanged);
``--no-commit`` writes for one commit of all. A file the mode does not read never stops
them; with nothing to change nothing is committed and nothing is refused.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import commit_all, git, invoke, tree_snapshot, write_files

NOW = "1793613600"  # 2026-11-02T10:00:00Z
D1 = "Progress/q2/d1.md"  # the example's direction of q2: 存活率 0.7 -> survival-map gives q2 3


@pytest.fixture
def ex(example_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_NOW", NOW)
    return example_kb


def _hand_edit(root: Path, rel: str, old: str, new: str) -> None:
    f = root / rel
    text = f.read_text(encoding="utf-8")
    assert old in text, text
    f.write_text(text.replace(old, new), encoding="utf-8")


def _files(root: Path) -> dict[str, bytes]:
    return {p: b for p, b in tree_snapshot(root, skip_git=True).items() if not p.startswith(".kb/")}


def _refused(root: Path, *args: str, names: str) -> None:
    """``kb <args>`` exits 1 naming ``names``; HEAD, the index and every file unchanged."""
    head, status, before = git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"), \
        _files(root)
    r = invoke(*args, cwd=root)
    assert r.code == 1, (r.code, r.stdout, r.stderr)
    assert f"{names} has uncommitted changes" in r.stderr, r.stderr
    assert "--no-commit" in r.stderr and "nothing was written" in r.stderr
    r = invoke(*args, "--json", cwd=root)
    assert r.code == 1 and r.json()["error"]["kind"] == "refused"
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == status
    assert _files(root) == before


def _status(root: Path) -> list[str]:
    return sorted(git(root, "-c", "core.quotePath=false", "status", "--porcelain").splitlines())


def _shown(root: Path) -> list[str]:
    return git(root, "-c", "core.quotePath=false", "show", "--name-only", "--format=",
               "HEAD").splitlines()


# -- kb priority adjust ----------------------------------------------------------------------


def test_priority_adjust_refuses_priorities_of_an_uncommitted_direction_log(ex: Path) -> None:
    """survival-map read q2's direction at 0.2 (not committed) and committed q2's 优先级 8
    alone: a commit whose own d1 (0.7) gives 3."""
    _hand_edit(ex, D1, "存活率: 0.7", "存活率: 0.2")
    _refused(ex, "priority", "adjust", "--mode", "survival-map", names=D1)
    head = git(ex, "rev-parse", "HEAD")
    r = invoke("priority", "adjust", "--mode", "survival-map", "--no-commit", cwd=ex)
    assert r.code == 0, r.stderr
    assert git(ex, "rev-parse", "HEAD") == head
    assert "- 优先级: 8\n" in (ex / "Problems/q2.md").read_text(encoding="utf-8")
    commit_all(ex, "d1 at 0.2, its priority")
    r = invoke("priority", "adjust", "--mode", "survival-map", "--dry-run", "--json", cwd=ex)
    assert r.json()["edits"] == []  # the commit holds the inputs of what it holds


def test_priority_adjust_refuses_for_a_card_it_reads_but_does_not_write(ex: Path) -> None:
    """q5 hand-set 已解决 (not committed) is skipped; the commit of q2's change alone would
    leave q5 unadjusted at a commit where it is open."""
    from kb.ops.problems import add_problem

    add_problem(ex, "q5", "Dead ends everywhere.", priority=3)
    write_files(ex, {"Progress/q5/d1.md":
                     "# 研究方向日志｜q5 / d1\n\n- 方向: a\n- 存活率: 0.1；状态: dead-end；轮次: 2\n"})
    commit_all(ex, "q5's direction")
    _hand_edit(ex, "Problems/q5.md", "- 状态: 求解中", "- 状态: 已解决")
    _refused(ex, "priority", "adjust", "--mode", "survival-map", names="Problems/q5.md")
    git(ex, "checkout", "--", "Problems/q5.md")
    r = invoke("priority", "adjust", "--mode", "survival-map", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    assert {c["id"]: c["new"] for c in r.json()["edits"]} == {"q2": 3, "q5": 9}


def test_priority_adjust_refuses_an_uncommitted_edit_of_the_card_it_writes(ex: Path) -> None:
    """q2's own card edited by hand (a line the mode does not read): its commit would carry
    the user's unrelated edit, so it is refused as every card writer refuses it."""
    _hand_edit(ex, "Problems/q2.md", "- 计划: 待调度", "- 计划: read Euclid again")
    head, before = git(ex, "rev-parse", "HEAD"), _files(ex)
    r = invoke("priority", "adjust", "--mode", "survival-map", cwd=ex)
    assert r.code == 1 and "Problems/q2.md has uncommitted changes" in r.stderr, r.stderr
    assert git(ex, "rev-parse", "HEAD") == head and _files(ex) == before


def test_priority_adjust_is_not_stopped_by_files_its_mode_does_not_read(ex: Path) -> None:
    """survival-map reads no proposition card and no progress note; progress-graded no
    problem card or direction log. A file the mode reads still stops it."""
    from kb.ops.propositions import add_proposition

    _hand_edit(ex, "Propos/数论/p1.md", "- 价值/关键性: 0.9", "- 价值/关键性: 0.8")
    write_files(ex, {"Progress/notes.md": "# 研究进展\n\nscratch\n"})
    r = invoke("priority", "adjust", "--mode", "survival-map", cwd=ex)
    assert r.code == 0, r.stderr
    assert git(ex, "show", "--name-only", "--format=", "HEAD") == "Problems/q2.md"
    assert _status(ex) == [" M Propos/数论/p1.md", "?? Progress/notes.md"]
    git(ex, "checkout", "--", "Propos/数论/p1.md")
    add_proposition(ex, "数论", "p7", "Graded.", probability=0.9, priority=1)
    _hand_edit(ex, D1, "存活率: 0.7", "存活率: 0.2")
    _hand_edit(ex, "Problems/q2.md", "- 优先级: 3", "- 优先级: 4")
    r = invoke("priority", "adjust", "--mode", "progress-graded", cwd=ex)
    assert r.code == 0, r.stderr
    assert _shown(ex) == ["Propos/数论/p7.md"]
    assert "- 优先级: 5\n" in (ex / "Propos/数论/p7.md").read_text(encoding="utf-8")
    add_proposition(ex, "数论", "p8", "Also graded.", probability=0.9, priority=1)
    _hand_edit(ex, "Propos/数论/p7.md", "- 概率: 0.9", "- 概率: 0.6")  # read, not written
    _refused(ex, "priority", "adjust", "--mode", "progress-graded", names="Propos/数论/p7.md")


def test_priority_adjust_with_nothing_to_change_commits_nothing_and_refuses_nothing(
        ex: Path) -> None:
    _hand_edit(ex, D1, "存活率: 0.7", "存活率: 0.2")
    head = git(ex, "rev-parse", "HEAD")
    r = invoke("priority", "adjust", "--mode", "deadend-deprioritize", cwd=ex)
    assert r.code == 0 and "no priority changes" in r.stdout, (r.stdout, r.stderr)
    assert git(ex, "rev-parse", "HEAD") == head


# -- kb promote ------------------------------------------------------------------------------


def test_promote_refuses_to_commit_a_judge_problem_of_an_uncommitted_proposition(ex: Path) -> None:
    """p8's 价值/关键性 raised by hand (not committed): the promoted q-promoted-p8 would be
    committed from a proposition no commit holds (at HEAD it is below the threshold)."""
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition

    add_proposition(ex, "数论", "p8", "Low value.", probability=0.4, value=0.5)
    add_entry(ex, "p8", "证明", "A", 0.3, text="Proof text.")
    _hand_edit(ex, "Propos/数论/p8.md", "- 价值/关键性: 0.5", "- 价值/关键性: 0.9")
    _refused(ex, "promote", names="Propos/数论/p8.md")
    assert not (ex / "Problems/q-promoted-p8.md").exists()
    head = git(ex, "rev-parse", "HEAD")
    r = invoke("promote", "--no-commit", cwd=ex)
    assert r.code == 0, r.stderr
    assert git(ex, "rev-parse", "HEAD") == head
    assert (ex / "Problems/q-promoted-p8.md").exists()


def test_promote_refuses_to_copy_an_uncommitted_proof_text(ex: Path) -> None:
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition

    add_proposition(ex, "数论", "p8", "High value.", probability=0.4, value=0.9)
    add_entry(ex, "p8", "证明", "A", 0.3, text="Proof text.")
    _hand_edit(ex, "Propos/数论/p8.md", "Proof text.", "Proof text, half rewritten")
    _refused(ex, "promote", names="Propos/数论/p8.md")


def test_promote_refuses_when_an_uncommitted_problem_card_decides_what_is_promoted(
        ex: Path) -> None:
    """An untracked judge problem of p8 makes promote skip p8: the commit of q-promoted-p7
    alone would hold a promotion its own cards do not give (p8 has no judge there)."""
    from kb.ops.propositions import add_proposition

    add_proposition(ex, "数论", "p7", "High value.", probability=0.4, value=0.9)
    add_proposition(ex, "数论", "p8", "High value too.", probability=0.4, value=0.9)
    r = invoke("problem", "add", "q9", "Judge p8", "--no-commit", cwd=ex)
    assert r.code == 0, r.stderr
    _hand_edit(ex, "Problems/q9.md", "- 来源: 原始", "- 来源: 原始\n- 判断命题: p8")
    _refused(ex, "promote", names="Problems/q9.md")
    commit_all(ex, "q9 judges p8")
    r = invoke("promote", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    assert [m["id"] for m in r.json()["promoted"]] == ["q-promoted-p7"]


def test_promote_is_not_stopped_by_files_it_does_not_read(ex: Path) -> None:
    from kb.ops.propositions import add_proposition

    add_proposition(ex, "数论", "p8", "High value.", probability=0.4, value=0.9)
    _hand_edit(ex, D1, "存活率: 0.7", "存活率: 0.2")
    with (ex / "Methods/m1.md").open("a", encoding="utf-8") as f:
        f.write("\nA note.\n")
    r = invoke("promote", cwd=ex)
    assert r.code == 0, r.stderr
    assert git(ex, "show", "--name-only", "--format=", "HEAD") == "Problems/q-promoted-p8.md"
    assert _status(ex) == [" M Methods/m1.md", f" M {D1}"]


def test_promote_with_nothing_to_promote_refuses_nothing(ex: Path) -> None:
    _hand_edit(ex, "Problems/q2.md", "- 优先级: 0", "- 优先级: 1")
    head = git(ex, "rev-parse", "HEAD")
    r = invoke("promote", cwd=ex)
    assert r.code == 0 and "nothing to promote" in r.stdout + r.stderr, (r.stdout, r.stderr)
    assert git(ex, "rev-parse", "HEAD") == head


# -- MCP ---------------------------------------------------------------------------------------


def test_mcp_tools_surface_the_refusal(ex: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp import Client

    from kb.mcp import build_server

    monkeypatch.chdir(ex)
    _hand_edit(ex, D1, "存活率: 0.7", "存活率: 0.2")
    head = git(ex, "rev-parse", "HEAD")

    async def session() -> list[Any]:
        out = []
        async with Client(build_server(ex)) as c:
            for args in ({}, {"no_commit": True}):
                res = await c.call_tool("priority_adjust", {"mode": "survival-map", **args})
                out.append((res.is_error, json.loads(res.content[0].text)))
        return out

    (err, refused), (ok_err, done) = asyncio.run(session())
    assert err and refused["error"]["kind"] == "refused" and refused["error"]["exit_code"] == 1
    assert f"{D1} has uncommitted changes" in refused["error"]["message"]
    assert not ok_err and done["commit"] is None
    assert git(ex, "rev-parse", "HEAD") == head
