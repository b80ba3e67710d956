"""Project-wide card operations (issue 5): promote, priority adjust, refresh, report, brief."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, write_files

NOW = "1793613600"  # 2026-11-02T10:00:00Z


@pytest.fixture
def ex(example_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_NOW", NOW)
    return example_kb


def test_promote_copies_entries_and_sets_anchors(ex: Path) -> None:
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition
    from kb.ops.promote import promote
    from kb.research.priority import promoted_id

    assert promoted_id("p-3f2a9c01abcdef") == "q-promoted-2a9c01abcdef"  # last 12
    assert promoted_id("命题_Goldbach-42") == "q-promoted-Goldbach-42"
    add_proposition(ex, "数论", "p7", "Low value.", probability=0.5, value=0.69)
    add_proposition(ex, "数论", "p8", "High value.", title="High", probability=0.4, value=0.7)
    add_entry(ex, "p8", "证明", "A｜B", 0.3, text="Proof text.")
    add_entry(ex, "p8", "证伪", "C", 0.2, text="Counter text.")
    r = invoke("promote", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    assert [m["id"] for m in r.json()["promoted"]] == ["q-promoted-p8"]  # p1/p2 settled, p7 low
    text = (ex / "Problems/q-promoted-p8.md").read_text(encoding="utf-8")
    assert text == """# 问题｜判断命题：High
- 标题: 判断命题：High
- ID: q-promoted-p8
- 类型: 问题
- 状态: 求解中
- 优先级: 1
- 依赖: []
- 被依赖: []
- 来源: promote
- 判断命题: p8
- 来源命题: p8
- 计划: 证明或证伪源命题 p8（解法列表中的【证明】/【证伪】条目即原命题的证明/证伪材料，验证结果会回写源命题）。

## 陈述
判断下述命题是否成立：High value.

## 来源与动机
由命题 p8（价值/关键性=0.7）自动晋升，目标：证明或证伪该命题；验证结果回写源命题。

## 解法候选
### 解法 1｜【证明】A\\｜B｜概率0.3｜状态未定论
【证明】Proof text.

### 解法 2｜【证伪】C｜概率0.2｜状态未定论
【证伪】Counter text.
"""
    r = promote(ex, 0.5)
    assert [m["id"] for m in r.data["promoted"]] == ["q-promoted-p7"]


def test_priority_adjust_formulas(ex: Path) -> None:
    from kb.ops.entries import add_entry
    from kb.ops.problems import add_problem
    from kb.ops.propositions import add_proposition
    from kb.research.priority import js_round

    assert js_round(2.5) == 3 and js_round(3.5) == 4 and js_round(0.49) == 0
    add_problem(ex, "q5", "Dead ends everywhere.", priority=3)
    add_problem(ex, "q6", "Already deprioritized.", priority=12)
    write_files(ex, {
        "Progress/q5/d1.md": "# 研究方向日志｜q5 / d1\n\n- 方向: a\n- 存活率: 0.1；状态: dead-end；轮次: 2\n",
        "Progress/q5/d2.md": "# 研究方向日志｜q5 / d2\n\n- 方向: b\n- 存活率: 0.25；状态: dead-end；轮次: 1\n",
        "Progress/q6/d1.md": "# 研究方向日志｜q6 / d1\n\n- 方向: c\n- 存活率: 0.05；状态: dead-end；轮次: 1\n",
    })
    commit_all(ex, "directions")
    r = invoke("priority", "adjust", "--mode", "deadend-deprioritize", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    assert r.json()["edits"] == [{"id": "q5", "kind": "problem", "old": 3, "new": 10}]
    # survival-map: q2 (d1 at 0.7) -> round(10 - 7) = 3; q5 (0.25) -> round(7.5) = 8; q6 -> round(9.5) = 10
    r = invoke("priority", "adjust", "--mode", "survival-map", "--json", cwd=ex)
    got = {c["id"]: (c["old"], c["new"]) for c in r.json()["edits"]}
    assert got == {"q2": (0, 3), "q5": (10, 8), "q6": (12, 10)}
    assert "- 优先级: 3\n" in (ex / "Problems/q2.md").read_text(encoding="utf-8")
    # progress-graded: |0.9 - 0.5| = 0.4, two entries -> 1.2·0.4 + 0.16 = 0.64 -> round(3.6) = 4
    add_proposition(ex, "数论", "p7", "Graded.", probability=0.9, priority=1)
    add_entry(ex, "p7", "证明", "a", 0.5, text="x")
    add_entry(ex, "p7", "证伪", "b", 0.5, text="y")
    add_proposition(ex, "数论", "p8", "Never.", probability=0.5, priority="never")
    r = invoke("priority", "adjust", "--mode", "progress-graded", "--dry-run", "--json", cwd=ex)
    assert r.json()["edits"] == [{"id": "p7", "kind": "proposition", "old": 1, "new": 4}]
    old = git(ex, "rev-parse", "HEAD")
    assert git(ex, "rev-parse", "HEAD") == old  # dry run
    r = invoke("priority", "adjust", "--mode", "progress-graded", cwd=ex)
    assert r.code == 0 and "- 优先级: 4\n" in (ex / "Propos/数论/p7.md").read_text(encoding="utf-8")
    assert "Kb-Op: priority.adjust" in git(ex, "log", "-1", "--format=%B")


def test_refresh_recomputes_depended_by_and_waiting(ex: Path) -> None:
    from kb.ops.problems import add_problem

    add_problem(ex, "q5", "x", depends=["q2"])
    add_problem(ex, "q6", "y")
    # hand edits leave the derived fields stale
    q6 = ex / "Problems/q6.md"
    q6.write_text(q6.read_text(encoding="utf-8").replace("- 依赖: []", '- 依赖: ["q5","p1"]'),
                  encoding="utf-8")
    q2 = ex / "Problems/q2.md"
    q2.write_text(q2.read_text(encoding="utf-8").replace('- 被依赖: ["q5"]', "- 被依赖: []"),
                  encoding="utf-8")
    commit_all(ex, "hand edits")
    r = invoke("refresh", "--check", "--json", cwd=ex)
    assert r.code == 1
    changes = {(c["id"], c["key"]): c["new"] for c in r.json()["edits"]}
    assert changes == {("q2", "被依赖"): '["q5"]', ("q5", "被依赖"): '["q6"]', ("q6", "状态"): "等待依赖"}
    old = git(ex, "rev-parse", "HEAD")
    r = invoke("refresh", cwd=ex)
    assert r.code == 0 and git(ex, "rev-parse", "HEAD~1") == old
    assert "- 状态: 等待依赖\n" in q6.read_text(encoding="utf-8")
    assert invoke("refresh", "--check", cwd=ex).code == 0
    r = invoke("refresh", cwd=ex)
    assert r.code == 0 and git(ex, "rev-parse", "HEAD~1") == old  # nothing to do: no commit


def test_report_is_deterministic_and_links_verified_cards(ex: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KB_NOW")
    a = invoke("report", "--stdout", cwd=ex)
    b = invoke("report", "--stdout", cwd=ex)
    assert a.code == 0 and a.stdout == b.stdout
    text = a.stdout
    assert text.startswith("# 项目报告｜examples\n\n## 总览\n")
    assert "- **q1** Irrationality of √2 — 问题已解决：[Verified/问题/q1.md](../Verified/问题/q1.md)" in text
    assert "[Verified/命题/p2.md](../Verified/命题/p2.md)" in text
    assert "### 求解中（1）\n\n- **q2** Infinitude of primes — 优先级 0；解法 2 条（最高概率 0.9）；依赖 p1" in text
    assert "- **m1** Infinite descent / minimal counterexample（方法，含已验证断言）— 应用 1 次：q1/d1" in text
    assert "`r-p2-pf1` → 0（v1=0，v2=0）" in text
    r = invoke("report", "--date", "2026-11-05", "--json", cwd=ex)
    assert r.code == 0 and r.json()["paths"] == ["Logs/报告.md"]
    assert "生成于 2026-11-05（kb report）" in (ex / "Logs/报告.md").read_text(encoding="utf-8")
    head = git(ex, "rev-parse", "HEAD")
    assert invoke("report", "--date", "2026-11-05", cwd=ex).code == 0
    assert git(ex, "rev-parse", "HEAD") == head  # unchanged: no commit
    assert invoke("report", "--date", "someday", cwd=ex).code == 2  # a malformed date is a usage mistake


def test_report_says_it_is_up_to_date_when_nothing_changed(ex: Path) -> None:
    r = invoke("report", "--date", "2026-11-05", cwd=ex)
    assert r.code == 0 and r.stdout == "wrote Logs/报告.md\n" and "committed" in r.stderr
    head = git(ex, "rev-parse", "HEAD")
    r = invoke("report", "--date", "2026-11-05", cwd=ex)
    assert r.code == 0 and git(ex, "rev-parse", "HEAD") == head
    assert r.stdout == "Logs/报告.md is up to date (nothing to do)\n" and "wrote" not in r.stderr
    r = invoke("report", "--date", "2026-11-05", "--json", cwd=ex)
    data = r.json()
    assert r.code == 0 and data["commit"] is None and data["paths"] == []
    assert data["changed"] is False
    assert data["changes"] == ["Logs/报告.md is up to date (nothing to do)"]


def test_brief_json_text_and_max_chars(ex: Path) -> None:
    r = invoke("brief", "--json", cwd=ex)
    assert r.code == 0
    data = r.json()
    assert [q["id"] for q in data["open_problems"]] == ["q2"]
    q2 = data["open_problems"][0]
    assert q2["depends"] == ["p1"] and q2["ready"] and q2["priority"] == 0
    assert [v["target"] for v in data["verify_candidates"]] == ["q2#解法1", "q2#解法2"]
    assert {s["id"] for s in data["settled"]} == {"q1", "p1", "p2"}
    assert all(s["card"] for s in data["settled"])
    assert [m["id"] for m in data["methods"]] == ["m1"]
    text = invoke("brief", cwd=ex).stdout
    assert "- q2｜Infinitude of primes｜求解中｜优先级 0" in text and "q2#解法1（r-q2-s1）" in text
    short = invoke("brief", "--max-chars", "400", cwd=ex)
    assert short.code == 0 and len(short.stdout) <= 401
    small = invoke("brief", "--json", "--max-chars", "1200", cwd=ex)
    assert len(small.stdout) <= 1201 and "omitted" in json.loads(small.stdout)
    assert invoke("brief", "--max-chars", "0", cwd=ex).code == 2  # an out-of-range number is a usage mistake


def test_progress_graded_judges_written_decimals_and_mirrors_alike(ex: Path) -> None:
    """|0.675 − 0.5| and |0.325 − 0.5| are both 0.175: with three entries the score is
    0.45 and 10 − 4.5 = 5.5 rounds up to 6 for both (binary floats gave 5 for 0.675)."""
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition

    for pid, prob in (("p7", 0.675), ("p8", 0.325)):
        add_proposition(ex, "数论", pid, "Graded.", probability=prob, priority=1)
        for kind in ("证明", "证明", "证伪"):
            add_entry(ex, pid, kind, "a", 0.5, text="x")
    r = invoke("priority", "adjust", "--mode", "progress-graded", "--dry-run", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    assert r.json()["edits"] == [{"id": "p7", "kind": "proposition", "old": 1, "new": 6},
                                 {"id": "p8", "kind": "proposition", "old": 1, "new": 6}]


def test_priority_adjust_never_scores_a_value_outside_0_1(ex: Path) -> None:
    """A 概率 of 1.5 (KB218) or a 存活率 of 1.5 is not clamped into a score: skipped, with why."""
    from kb.ops.problems import add_problem

    write_files(ex, {"Propos/数论/p7.md": """# 命题｜bad
- 标题: bad
- ID: p7
- 类型: 命题
- 状态: 未定论
- 概率: 1.5
- 优先级: 1
- 依赖: []
- 价值/关键性: 0.5

## 陈述
x

## 证明尝试

## 证伪尝试
"""})
    add_problem(ex, "q5", "Odd survival.", priority=3)
    write_files(ex, {"Progress/q5/d1.md": "# 研究方向日志｜q5 / d1\n\n- 方向: a\n- 存活率: 1.5；状态: active；轮次: 2\n"})
    commit_all(ex, "out-of-range values")
    r = invoke("priority", "adjust", "--mode", "progress-graded", "--dry-run", "--json", cwd=ex)
    assert r.code == 0 and r.json()["edits"] == [], r.stdout + r.stderr  # was p7: 1 -> 0
    r = invoke("priority", "adjust", "--mode", "survival-map", "--dry-run", "--json", cwd=ex)
    assert r.code == 0 and "q5" not in [c["id"] for c in r.json()["edits"]]  # was q5: 3 -> 0
    # the notes of what was left out, and why
    from kb.research.priority import priority_skips, priority_targets
    from kb.views.brief import load_view

    _k, view = load_view(ex)
    assert [(i, kd) for i, kd, _why in priority_skips(view, "progress-graded")] == [("p7", "proposition")]
    why = priority_skips(view, "progress-graded")[0][2]
    assert "1.5" in why and "Propos/数论/p7.md" in why and "outside [0,1]" in why
    assert [(i, kd) for i, kd, _why in priority_skips(view, "survival-map")] == [("q5", "problem")]
    assert priority_skips(view, "deadend-deprioritize") == []
    assert "p7" not in [c[0] for c in priority_targets(view, "progress-graded")]
