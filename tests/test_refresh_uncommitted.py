"""Derived 被依赖 / 等待依赖 are never committed from another card's uncommitted edit.

``kb refresh`` and the card writers (:mod:`kb.ops.workspace`) compute them from the
working tree; a commit holding values derived from a hand edit it does not hold
contradicts its own cards (KB216). They refuse, as ``kb dashboard`` refuses to commit
a dashboard of uncommitted inputs; ``--no-commit`` writes them for one commit of all.
"""

from __future__ import annotations

from pathlib import Path

from conftest import git, invoke, tree_snapshot


def _kb(tree_kb: Path) -> Path:
    for args in (("q1", "a"), ("q2", "b", "--depends", "q1"), ("q3", "c", "--depends", "q1")):
        r = invoke("problem", "add", *args, cwd=tree_kb)
        assert r.code == 0, r.stderr
    return tree_kb


def _hand_edit(root: Path, qid: str, old: str, new: str) -> None:
    card = root / "Problems" / f"{qid}.md"
    text = card.read_text(encoding="utf-8")
    assert old in text
    card.write_text(text.replace(old, new), encoding="utf-8")


def test_refresh_refuses_to_commit_what_it_derived_from_an_uncommitted_edit(tree_kb: Path) -> None:
    root = _kb(tree_kb)
    _hand_edit(root, "q2", '- 依赖: ["q1"]', '- 依赖: ["q1","q3"]')
    head, before = git(root, "rev-parse", "HEAD"), tree_snapshot(root, skip_git=True)
    r = invoke("refresh", cwd=root)
    assert r.code == 1
    assert "Problems/q2.md (依赖) has uncommitted changes" in r.stderr
    assert "commit that card first" in r.stderr and "--no-commit" in r.stderr
    assert git(root, "rev-parse", "HEAD") == head
    after = tree_snapshot(root, skip_git=True)
    assert {p: b for p, b in after.items() if not p.startswith(".kb/")} == \
        {p: b for p, b in before.items() if not p.startswith(".kb/")}  # nothing written
    r = invoke("refresh", "--json", cwd=root)
    assert r.code == 1 and r.json()["error"]["kind"] == "refused"
    # --no-commit writes the derived field; the user commits the edit and it together
    r = invoke("refresh", "--no-commit", cwd=root)
    assert r.code == 0
    assert '- 被依赖: ["q2"]' in (root / "Problems/q3.md").read_text(encoding="utf-8")
    git(root, "commit", "-qam", "hand edit with its derived fields")
    assert invoke("refresh", "--check", cwd=root).code == 0
    r = invoke("verify", "--json", cwd=root)
    assert not [d for d in r.json()["diagnostics"] if d["code"] == "KB216"]


def test_refresh_commits_when_the_uncommitted_edit_is_not_what_it_reads(tree_kb: Path) -> None:
    root = _kb(tree_kb)
    _hand_edit(root, "q3", '- 被依赖: []', '- 被依赖: ["q2"]')  # stale, committed
    git(root, "commit", "-qam", "stale 被依赖")
    _hand_edit(root, "q2", "- 计划: 待调度", "- 计划: read the literature")  # not read
    r = invoke("refresh", cwd=root)
    assert r.code == 0, r.stderr
    assert git(root, "show", "--name-only", "--format=", "HEAD") == "Problems/q3.md"
    assert git(root, "status", "--porcelain") == " M Problems/q2.md"


def test_card_writers_refuse_derived_fields_of_uncommitted_edits(tree_kb: Path) -> None:
    root = _kb(tree_kb)
    _hand_edit(root, "q2", '- 依赖: ["q1"]', '- 依赖: ["q1","q3"]')
    head = git(root, "rev-parse", "HEAD")
    # q3's 被依赖 would be derived from q2's uncommitted 依赖
    r = invoke("problem", "add", "q4", "d", "--depends", "q3", cwd=root)
    assert r.code == 1 and "Problems/q2.md (依赖) has uncommitted changes" in r.stderr
    assert git(root, "rev-parse", "HEAD") == head and not (root / "Problems/q4.md").exists()
    # q1's 被依赖 does not depend on the edit: the write goes ahead
    r = invoke("problem", "add", "q5", "e", "--depends", "q1", cwd=root)
    assert r.code == 0, r.stderr
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == \
        ["Problems/q1.md", "Problems/q5.md"]
    # a dependency settled by hand: the new problem's 状态 would be derived from it
    _hand_edit(root, "q1", "- 优先级: 1", "- 优先级: never")
    head = git(root, "rev-parse", "HEAD")
    r = invoke("problem", "add", "q6", "f", "--depends", "q1", cwd=root)
    assert r.code == 1 and "Problems/q1.md (settled or not) has uncommitted" in r.stderr
    assert git(root, "rev-parse", "HEAD") == head
    # --no-commit: everything is left for one commit
    r = invoke("problem", "add", "q6", "f", "--depends", "q1", "--no-commit", cwd=root)
    assert r.code == 0
    assert "- 状态: 求解中" in (root / "Problems/q6.md").read_text(encoding="utf-8")


def test_report_refuses_to_commit_a_report_of_an_uncommitted_card(tree_kb: Path) -> None:
    """`kb report` read the working tree and committed the report: a hand-edited title it
    does not commit was in it. It refuses as `kb dashboard` does; `--no-commit` writes it."""
    root = _kb(tree_kb)
    _hand_edit(root, "q2", "- 标题: b", "- 标题: b, retitled")
    head = git(root, "rev-parse", "HEAD")
    r = invoke("report", "--date", "2026-12-03", cwd=root)
    assert r.code == 1 and "Problems/q2.md has uncommitted changes" in r.stderr, r.stderr
    assert git(root, "rev-parse", "HEAD") == head and not (root / "Logs" / "报告.md").exists()
    r = invoke("report", "--date", "2026-12-03", "--no-commit", cwd=root)
    assert r.code == 0, r.stderr
    assert "b, retitled" in (root / "Logs" / "报告.md").read_text(encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "retitle q2, report")
    r = invoke("report", "--date", "2026-12-03", cwd=root)  # its own uncommitted file aside
    assert r.code == 0 and "up to date" in r.stdout + r.stderr, r.stderr


def test_report_is_not_stopped_by_a_scratch_file_in_the_logs_folder(tree_kb: Path) -> None:
    """Only the files the report is built from stop `kb report`: an untracked Logs/scratch.md
    (the report reads no such file) does not; an uncommitted verification record does."""
    root = _kb(tree_kb)
    (root / "Logs").mkdir(exist_ok=True)
    (root / "Logs" / "scratch.md").write_text("# notes\n", encoding="utf-8")
    r = invoke("report", "--date", "2026-12-03", cwd=root)
    assert r.code == 0, r.stderr
    assert "Logs/报告.md" in git(root, "-c", "core.quotePath=false", "show", "--name-only",
                                 "--format=", "HEAD")
    assert "?? Logs/scratch.md" in git(root, "status", "--porcelain")
    (root / "Logs" / "Verification").mkdir(exist_ok=True)
    (root / "Logs" / "Verification" / "r-q2-s1.json").write_text("{}\n", encoding="utf-8")
    head = git(root, "rev-parse", "HEAD")
    r = invoke("report", "--date", "2026-12-04", cwd=root)
    assert r.code == 1 and "Logs/Verification/r-q2-s1.json has uncommitted changes" in r.stderr, \
        r.stderr
    assert git(root, "rev-parse", "HEAD") == head
