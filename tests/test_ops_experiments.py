"""Experiment write operations (issue 4): new, log, update, result."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import commit_all, git, write_files
from kb.errors import RefusedError, UsageError
from kb.ops import experiments as ex
from kb.ops import hypotheses as tr
from test_ops_tree import assert_verifies, block, message, text, unchanged


@pytest.fixture
def one_hyp(tree_kb: Path) -> Path:
    tr.add_hypothesis(tree_kb, "Disk reads dominate loading time")
    return tree_kb


def test_new_experiment_from_the_template(one_hyp: Path) -> None:
    root = one_hyp
    r = ex.new_experiment(root, "H1", "Measure read throughput", date="2026-11-30")
    assert r.id == "E001" and r.details["date"] == "2026-11-30"
    assert text(root, "experiments/E001.md") == (
        "# E001: H1 - Measure read throughput\n\n"
        "**Hypothesis**: H1 Disk reads dominate loading time\n"
        "**Date**: 2026-11-30\n**Status**: 进行中\n\n"
        "## 实验设计\n\n**目标**: [待补充]\n**方法**: [待补充]\n**预期**: [待补充]\n\n"
        "## 执行记录\n\n[待补充]\n\n## 结果\n\n[待实验完成后填写]\n\n## 影响\n\n[待结果出来后分析]\n")
    assert r.changes[:2] == ["created experiments/E001.md (E001 for H1: Measure read throughput)",
                             "H1 → 进行中"]
    msg = message(root)
    assert "Kb-Op: exp.new" in msg and "Kb-Id: E001" in msg and "Kb-Id: H1" in msg
    assert "**Last**: 2026-11-30" in text(root, "DASHBOARD.md")
    assert ex.new_experiment(root, "H1", "again").id == "E002"
    assert_verifies(root, "HEAD~1")
    assert_verifies(root)


def test_bad_inputs_write_nothing(one_hyp: Path) -> None:
    root = one_hyp
    ex.new_experiment(root, "H1", "run")
    with unchanged(root):
        with pytest.raises(RefusedError, match=r"unknown hypothesis 'H7'"):
            ex.new_experiment(root, "H7", "x")
        with pytest.raises(UsageError, match="the action is empty"):
            ex.new_experiment(root, "H1", " ")
        with pytest.raises(UsageError, match="invalid date '2026-13-01'"):
            ex.new_experiment(root, "H1", "x", date="2026-13-01")
        with pytest.raises(UsageError, match=r"unknown conclusion 'maybe'; accepted: "
                                               r"支持\|supports, 推翻\|refutes, 不确定\|inconclusive"):
            ex.record_result(root, "E001", "d", "maybe", "r")
        with pytest.raises(RefusedError, match=r"unknown experiment 'E042' \(experiments: E001\)"):
            ex.record_result(root, "E042", "d", "支持", "r")
        with pytest.raises(UsageError, match="the reason"):
            ex.record_result(root, "E001", "d", "支持", "")
        with pytest.raises(UsageError, match=r"unknown design field 'budget'; accepted: 目标\|goal"):
            ex.update_section(root, "E001", "budget", "x")
        with pytest.raises(RefusedError, match="holds a heading line"):
            ex.log(root, "E001", "ok\n## 结果\nsneaky")
        with pytest.raises(RefusedError, match="structure of E001"):
            ex.log(root, "E001", "```\nan unclosed fence swallows the sections")


def test_log_fills_the_placeholder_then_appends(one_hyp: Path) -> None:
    root = one_hyp
    ex.new_experiment(root, "H1", "run")
    r = ex.log(root, "E001", "first entry")
    assert r.details["how"] == "filled"
    ex.log(root, "E001", "second entry\nwith two lines")
    body = text(root, "experiments/E001.md")
    assert "## 执行记录\n\nfirst entry\n\nsecond entry\nwith two lines\n\n## 结果" in body
    assert "[待补充]\n\n## 结果" not in body
    assert_verifies(root)


def test_headings_inside_code_are_not_sections(one_hyp: Path) -> None:
    root = one_hyp
    ex.new_experiment(root, "H1", "run")
    p = root / "experiments/E001.md"
    p.write_text(p.read_text(encoding="utf-8").replace(
        "## 执行记录\n\n[待补充]\n", "## 执行记录\n\n```text\n## 结果\n[待实验完成后填写]\n```\n"),
        encoding="utf-8")
    commit_all(root, "a fenced log")
    ex.record_result(root, "E001", "d", "支持", "r")
    body = p.read_text(encoding="utf-8")
    assert "```text\n## 结果\n[待实验完成后填写]\n```\n\n## 结果\n\n**数据**: d\n" in body
    ex.log(root, "E001", "after")
    assert "[待实验完成后填写]\n```\n\nafter\n\n## 结果" in p.read_text(encoding="utf-8")
    assert_verifies(root)


def test_update_design_fields_in_either_language(one_hyp: Path) -> None:
    root = one_hyp
    ex.new_experiment(root, "H1", "run", goal="Know the read rate")
    ex.update_section(root, "E001", "方法", "dd with iflag=direct, 3 runs")
    r = ex.update_section(root, "E001", "expected", "under 500 MB/s if H1 holds")
    assert r.details["previous"] == "[待补充]"
    body = text(root, "experiments/E001.md")
    assert ("**目标**: Know the read rate\n**方法**: dd with iflag=direct, 3 runs\n"
            "**预期**: under 500 MB/s if H1 holds\n") in body
    noop = ex.update_section(root, "E001", "goal", "Know the read rate")
    assert noop.commit is None
    assert "Kb-Op: exp.update" in message(root)
    assert_verifies(root)


def test_missing_design_field_is_added_in_order(one_hyp: Path) -> None:
    root = one_hyp
    ex.new_experiment(root, "H1", "run")
    p = root / "experiments/E001.md"
    p.write_text(p.read_text(encoding="utf-8").replace("**方法**: [待补充]\n", ""), encoding="utf-8")
    commit_all(root, "hand edit")
    ex.update_section(root, "E001", "method", "strace")
    assert "**目标**: [待补充]\n**方法**: strace\n**预期**: [待补充]\n" in p.read_text(encoding="utf-8")


def test_result_is_recorded_once(one_hyp: Path) -> None:
    root = one_hyp
    ex.new_experiment(root, "H1", "run")
    ex.record_result(root, "E001", "410 MB/s cold", "refutes", "CPU-bound even when cold")
    body = text(root, "experiments/E001.md")
    assert "**结论**: 推翻 — CPU-bound even when cold" in body and "**Status**: 已完成" in body
    assert block(root, "H1")[1:3] == ["Status: 被推翻", "Evidence: E001"]
    with unchanged(root):
        with pytest.raises(RefusedError, match="already has a result"):
            ex.record_result(root, "E001", "d", "支持", "r")
    assert_verifies(root)


def test_result_with_notes_already_in_the_result_section(one_hyp: Path) -> None:
    root = one_hyp
    ex.new_experiment(root, "H1", "run")
    p = root / "experiments/E001.md"
    p.write_text(p.read_text(encoding="utf-8").replace("[待实验完成后填写]", "Raw numbers in run.csv."),
                 encoding="utf-8")
    commit_all(root, "notes in 结果")
    ex.record_result(root, "E001", "d", "支持", "r")
    assert ("## 结果\n\nRaw numbers in run.csv.\n\n**数据**: d\n**结论**: 支持 — r\n\n## 影响"
            in p.read_text(encoding="utf-8"))


def test_experiment_of_a_missing_hypothesis_is_refused(one_hyp: Path) -> None:
    root = one_hyp
    write_files(root, {"experiments/E001.md": "# E001: H9 - orphan\n\n**Hypothesis**: H9 gone\n"
                                              "**Date**: 2026-01-01\n**Status**: 进行中\n\n## 结果\n\n"
                                              "[待实验完成后填写]\n"})
    commit_all(root, "orphan experiment")
    with unchanged(root):
        with pytest.raises(RefusedError, match=r"unknown hypothesis 'H9'"):
            ex.record_result(root, "E001", "d", "支持", "r")


def test_ids_keep_the_corpus_width_and_skip_deleted_files(one_hyp: Path) -> None:
    root = one_hyp
    body = ("# {id}: H1 - old\n\n**Hypothesis**: H1 Disk reads dominate loading time\n"
            "**Date**: 2025-01-0{d}\n**Status**: 进行中\n")
    write_files(root, {f"experiments/E000{i}.md": body.format(id=f"E000{i}", d=i) for i in (1, 2, 3)})
    commit_all(root, "4-digit experiments")
    git(root, "rm", "-q", "experiments/E0003.md")
    git(root, "commit", "-q", "-m", "drop E0003")
    r = ex.new_experiment(root, "H1", "next")
    assert r.id == "E0004" and (root / "experiments/E0004.md").exists()
    assert ex.next_experiment_id(["E001", "E0002"]) == "E0003"
    assert ex.next_experiment_id([]) == "E001"
    assert ex.next_experiment_id(["E999"]) == "E1000"


def test_english_locale_writes_english_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import git_init
    from kb.ops.init import init_kb

    monkeypatch.setenv("KB_TODAY", "2026-11-29")
    root = git_init(tmp_path / "en")
    init_kb(root, locale="en")
    commit_all(root, "init")
    tr.add_hypothesis(root, "A")
    ex.new_experiment(root, "H1", "run")
    assert block(root, "H1")[1] == "Status: in-progress"
    ex.record_result(root, "E001", "d", "支持", "r")  # Chinese word in, English out
    body = text(root, "experiments/E001.md")
    assert "**Status**: completed" in body and "**结论**: supports — r" in body
    assert block(root, "H1")[1] == "Status: supported"
    assert "(in-progress)" not in text(root, "DASHBOARD.md")
    assert_verifies(root)
