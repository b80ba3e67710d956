"""kb verify rules for research cards (issue 5): each fires with the right path and line,
and is silent on valid input (the example KB, and cards kb itself writes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write_files

CARD_CODES = {"KB209", "KB212", "KB213", "KB214", "KB215", "KB216", "KB217", "KB218", "KB220", "KB221", "KB260"}


def problem(qid: str, *, status: str = "求解中", depends: str = "[]", depended_by: str = "[]",
            id_anchor: str | None = None, entries: str = "（暂无解法候选）", prio: str = "1") -> str:
    return (f"# 问题｜{qid}\n- 标题: {qid}\n- ID: {id_anchor or qid}\n- 类型: 问题\n- 状态: {status}\n"
            f"- 优先级: {prio}\n- 依赖: {depends}\n- 被依赖: {depended_by}\n- 来源: 原始\n- 计划: \n\n"
            f"## 陈述\nS.\n\n## 解法候选\n{entries}\n")


def proposition(pid: str, *, prob: str = "0.5", status: str = "未定论", value: str = "0.5",
                depends: str = "[]") -> str:
    return (f"# 命题｜{pid}\n- 标题: {pid}\n- ID: {pid}\n- 类型: 命题\n- 状态: {status}\n- 概率: {prob}\n"
            f"- 优先级: 1\n- 依赖: {depends}\n- 价值/关键性: {value}\n\n## 陈述\nS.\n\n"
            "## 证明尝试\n（暂无证明尝试）\n\n## 证伪尝试\n（暂无证伪尝试）\n")


def method(mid: str, *, claims: str = "[]", parents: str = "[]", subs: str = "[]",
           related: str = "[]") -> str:
    return (f"# 方法｜{mid}\n- 标题: {mid}\n- ID: {mid}\n- 类型: 方法\n- 状态: 经验\n- 可信断言: {claims}\n"
            f"- 上级体系: {parents}\n- 子方法: {subs}\n- 相关: {related}\n- 适用场景: \n\n"
            "## 核心内容\nC.\n\n## 应用记录\n（暂无应用记录）\n\n## 改进历史\n（暂无改进记录）\n")


def verified(obj_id: str, kind: str = "命题") -> str:
    return (f"# 已验证｜{obj_id}\n- ID: {obj_id}\n- 类型: {kind}\n- 结论: 真\n- 概率: 1\n"
            f"- 分类: 数论\n- 来源: \n- 时间: 2026-01-01 00:00:00\n\n## 陈述\nS.\n\n## 可信内容\n【证明 #1】x\n")


def findings(root: Path) -> list[tuple[str, int, str]]:
    from kb.checks.verify_worktree import verify_worktree

    report = verify_worktree(root)
    return sorted((f.path, f.line, f.code) for f in report.findings if f.code in CARD_CODES)


def test_rules_silent_on_example_kb(example_kb: Path) -> None:
    assert findings(example_kb) == []


def test_rules_silent_on_cards_kb_writes(example_kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kb.ops.entries import add_entry
    from kb.ops.methods import add_method
    from kb.ops.problems import add_problem
    from kb.ops.propositions import add_proposition
    from kb.ops.verdict import record_verdict

    monkeypatch.setenv("KB_NOW", "1793613600")
    add_problem(example_kb, "q5", "x", depends=["q2", "p1"])
    add_entry(example_kb, "q5", "解法", "s", 0.5, text="t")
    add_proposition(example_kb, "数论", "p5", "c", depends=["q5"])
    add_method(example_kb, "m2", "sys", type="理论体系")
    add_method(example_kb, "m3", "sub", parent="m2")
    record_verdict(example_kb, "q5#解法1", {"a": 1, "b": 1})
    record_verdict(example_kb, "p5", {"a": 0, "b": 0.1})
    assert findings(example_kb) == []


def test_unsafe_ids_fire_with_path_and_line(kb_with) -> None:
    root = kb_with({
        "Problems/q1.md": problem("q1", depends='["../q2"]'),
        "Problems/a..b.md": problem("a..b"),
        "Propos/数论/p1.md": proposition("p1").replace("- 价值/关键性: 0.5",
                                                     "- 来源问题: q\\x\n- 价值/关键性: 0.5"),
        "Methods/m1.md": method("m1", related='["x\\u0007y"]'),
    })
    got = [x for x in findings(root) if x[2] == "KB260"]
    assert got == [("Methods/m1.md", 9, "KB260"), ("Problems/a..b.md", 1, "KB260"),
                   ("Problems/a..b.md", 3, "KB260"), ("Problems/q1.md", 7, "KB260"),
                   ("Propos/数论/p1.md", 9, "KB260")]


def test_id_anchor_and_probability(kb_with) -> None:
    root = kb_with({
        "Problems/q1.md": problem("q1", id_anchor="q9"),
        "Problems/q2.md": problem("q2", entries="### 解法 1｜s｜概率1.5｜状态未定论\nx"),
        "Propos/数论/p1.md": proposition("p1", prob="-0.2", value="2"),
    })
    assert findings(root) == [("Problems/q1.md", 3, "KB209"), ("Problems/q2.md", 16, "KB218"),
                              ("Propos/数论/p1.md", 6, "KB218"), ("Propos/数论/p1.md", 9, "KB218")]


def test_dependencies_missing_and_cycle(kb_with) -> None:
    root = kb_with({
        "Problems/q1.md": problem("q1", depends='["q2"]', depended_by='["q2"]', status="等待依赖"),
        "Problems/q2.md": problem("q2", depends='["q1","p404"]', depended_by='["q1"]',
                                  status="等待依赖"),
    })
    got = findings(root)
    assert ("Problems/q2.md", 7, "KB212") in got
    assert ("Problems/q1.md", 7, "KB213") in got
    assert [x for x in got if x[2] in ("KB212", "KB213")] == [("Problems/q1.md", 7, "KB213"),
                                                             ("Problems/q2.md", 7, "KB212")]


def test_claims_and_method_hierarchy(kb_with) -> None:
    root = kb_with({
        "Propos/数论/p1.md": proposition("p1"),
        "Methods/m1.md": method("m1", claims='["p1"]', subs='["m2"]'),
        "Methods/m2.md": method("m2"),
        "Methods/m3.md": method("m3", parents='["m1"]'),
    })
    assert findings(root) == [("Methods/m1.md", 6, "KB214"), ("Methods/m1.md", 8, "KB215"),
                              ("Methods/m3.md", 7, "KB215")]


def test_verified_cards_and_settled_objects(kb_with) -> None:
    root = kb_with({
        "Propos/数论/p1.md": proposition("p1"),                                   # not settled
        "Verified/命题/p1.md": verified("p1"),
        "Propos/数论/p2.md": proposition("p2", prob="1", status="已验证·真"),     # no card
        "Problems/q1.md": problem("q1", status="已解决", prio="never",
                                  entries="### 解法 1｜s｜概率1｜状态已验\nx"),          # no card
        "Verified/问题/q9.md": verified("q9", "问题"),                            # no object
    })
    assert findings(root) == [("Problems/q1.md", 1, "KB217"), ("Propos/数论/p2.md", 1, "KB217"),
                              ("Verified/命题/p1.md", 1, "KB221"), ("Verified/问题/q9.md", 1, "KB221")]


def test_kb260_in_catalogue() -> None:
    from kb.checks.catalogue import BY_CODE
    from kb.checks.registry import FILE_RULES, load_rules

    load_rules()
    assert BY_CODE["KB260"].severity == "error" and BY_CODE["KB260"].family == "snapshot"
    assert any("KB260" in r.codes for r in FILE_RULES)


def _codes(root: Path, codes: set[str]) -> list[tuple[str, int, str]]:
    from kb.checks.verify_worktree import verify_worktree

    return sorted((f.path, f.line, f.code) for f in verify_worktree(root).findings if f.code in codes)


def test_closed_vocabularies_of_cards_and_calendar_dates(kb_with, example_kb: Path) -> None:
    """KB205 for a problem's 来源 and a method's 类型 outside their vocabularies (DESIGN
    §2.4), KB131 for an experiment date that is no day of the calendar; silent on every
    word of the vocabularies, on 29 February of a leap year and on the example KB."""
    exp = ("# E001: H1 - x\n\n**Hypothesis**: H1 x\n**Date**: {}\n**Status**: 进行中\n\n"
           "## 实验设计\nd\n")
    tree = "# Hypothesis Tree\n\n## H1: x\nStatus: 进行中\nEvidence: E001\n"
    bad = kb_with({
        "Problems/q1.md": problem("q1").replace("- 来源: 原始", "- 来源: 外星"),
        "Methods/m1.md": method("m1").replace("- 类型: 方法", "- 类型: 魔法"),
        "tree.md": tree, "experiments/E001.md": exp.format("2026-13-45"),
        "experiments/E002.md": exp.format("2026-02-29").replace("E001", "E002"),
        "experiments/E003.md": exp.format("２０２６-01-01").replace("E001", "E003"),
        "experiments/E004.md": exp.format("2026-01-0١").replace("E001", "E004"),
        "experiments/E005.md": exp.format("0000-01-01").replace("E001", "E005"),
    })
    assert _codes(bad, {"KB205", "KB131"}) == [
        ("Methods/m1.md", 4, "KB205"), ("Problems/q1.md", 9, "KB205"),
        *[(f"experiments/E00{i}.md", 4, "KB131") for i in range(1, 6)]]
    files = {"tree.md": tree, "experiments/E001.md": exp.format("2024-02-29")}
    for i, word in enumerate(("原始", "后生", "promote")):
        files[f"Problems/q{i + 1}.md"] = problem(f"q{i + 1}").replace("- 来源: 原始", f"- 来源: {word}")
    for i, word in enumerate(("理论体系", "框架", "工具", "方法", "思想", "范式", "技巧")):
        files[f"Methods/m{i + 1}.md"] = method(f"m{i + 1}").replace("- 类型: 方法", f"- 类型: {word}")
    assert _codes(kb_with(files), {"KB205", "KB131"}) == []
    assert _codes(example_kb, {"KB205", "KB131"}) == []


def test_numbers_are_read_in_ascii_digits_only(kb_with) -> None:
    """A probability, value or priority written with full-width digits (０.５, ３) or with
    Python's digit separator (0_5) is an error with its line, not read as a number
    (``float`` and ``int`` take them; the record's other readers do not)."""
    card = proposition("p1", prob="０.５", value="0_5").replace("- 优先级: 1", "- 优先级: ３")
    root = kb_with({"Propos/数论/p1.md": card})
    assert _codes(root, {"KB124", "KB125"}) == [
        ("Propos/数论/p1.md", 6, "KB124"), ("Propos/数论/p1.md", 7, "KB125"),
        ("Propos/数论/p1.md", 9, "KB124")]
    ok = kb_with({"Propos/数论/p1.md": proposition("p1", prob="0.5", value="5e-1")})
    assert _codes(ok, {"KB124", "KB125"}) == []
