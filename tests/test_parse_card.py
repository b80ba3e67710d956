"""Card parsing (kb/parse/card.py): a tester's two faults of 0.1.19.

- Nesting. A list anchor of 1,000 nested ``[`` (``- 依赖: [[[[…``) ended the parse in
  RecursionError inside ``json.loads``: the whole card was KB199 at line 1 and none of
  its objects were read. Such a value is KB121 at its line now, and the card is read; a
  frontmatter nested past 64 levels is KB102 at the line where the too-deep list opens
  (it was line 2 whatever the line); headings, entry titles and prose are free text and
  say nothing.
- The H1. A card whose H1 is some other heading (``# x``) had no word (KB140 said only
  that an H1 was missing); it is KB140 at the H1's line now, and the card is still
  read by its anchor lines.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import commit_all, config_for, run_script, write_files
from kb.parse import parse_file
from kb.parse.common import parse_list
from kb.parse.light import light_card
from kb.merge.card import settle_derived

DEEP = "[" * 1000

CARD = ("# 问题｜T\n- 标题: T\n- ID: q1\n- 状态: 求解中\n- 优先级: 0\n"
        "- 依赖: {depends}\n- 被依赖: []\n- 来源: 原始\n\n## 陈述\n{prose}\n\n## 解法候选\n"
        "### 解法 1｜{title}｜概率0.5｜状态未定论\nbody\n")


def card(depends: str = "[]", prose: str = "S.", title: str = "a") -> str:
    return CARD.format(depends=depends, prose=prose, title=title)


def parse(path: str, text: str):
    return parse_file(path, text.encode("utf-8"), config_for(Path("/kb")))


def coded(res, code: str) -> list:
    return [d for d in res.diagnostics if d.code == code]


# -- nesting: one line is bad, the card is read ----------------------------------------

#: (path, text, the diagnostic expected as (code, line), or None for none at all).
NESTED = {
    "list anchor": ("Problems/q1.md", card(depends=DEEP), ("KB121", 6)),
    "list anchor, closed": ("Problems/q1.md", card(depends=DEEP + "]" * 1000), ("KB121", 6)),
    "list anchor after an item": ("Problems/q1.md", card(depends='["q2",' + DEEP), ("KB121", 6)),
    "wiki-link brackets": ("Problems/q1.md", card(depends="[[" * 500 + "q2]]"), ("KB121", 6)),
    "mappings in a list anchor": ("Problems/q1.md", card(depends="[" + '{"a":' * 1000),
                                  ("KB121", 6)),
    "method list anchor": ("Methods/q1.md", "# 方法｜T\n- 状态: 经验\n- 类型: 方法\n- 相关: "
                           + DEEP + "\n\n## 核心内容\nC.\n", ("KB121", 4)),
    "frontmatter, line 4": ("Problems/q1.md", "---\na: b\nc: d\ne: " + DEEP + "\n---\n"
                            + card(), ("KB102", 4)),
    "frontmatter, mappings": ("Problems/q1.md", "---\na: b\ne: " + "{a: " * 1000 + "\n---\n"
                              + card(), ("KB102", 3)),
    "frontmatter, block lists": ("Problems/q1.md", "---\na: b\ne:\n  " + "- " * 1000 + "x\n---\n"
                                 + card(), ("KB102", 4)),
    "frontmatter, indents": ("Problems/q1.md", "---\na: b\n" + "".join(" " * i + "k:\n" for i in
                             range(1000)) + " " * 1000 + "k: v\n---\n" + card(), ("KB102", 67)),
    "H1 title": ("Problems/q1.md", card().replace("# 问题｜T", "# 问题｜" + DEEP), None),
    "section heading": ("Problems/q1.md", card(prose="## " + DEEP), None),
    "entry title": ("Problems/q1.md", card(title=DEEP), None),
    "prose": ("Problems/q1.md",
              card(prose=DEEP + "\n" + "> " * 1000 + "x\n" + "- " * 1000 + "y"), None),
}


@pytest.mark.parametrize("place", list(NESTED))
def test_nesting_is_said_at_its_line_and_the_card_is_read(place: str) -> None:
    path, text, want = NESTED[place]
    res = parse(path, text)
    assert not coded(res, "KB199"), res.diagnostics
    [obj] = res.objects
    assert obj.id == "q1" and obj.status in ("求解中", "经验"), obj
    if path.startswith("Problems/"):
        assert [e.number for e in obj.entries] == [1]
        assert obj.anchors["来源"] == "原始" and obj.priority == 0
    got = [(d.code, d.line) for d in res.diagnostics]
    if want is None:
        assert got == [], res.diagnostics
        return
    assert got == [want], res.diagnostics
    [d] = res.diagnostics
    assert "nested too deeply" in d.message and len(d.message) < 400, d.message


def test_a_frontmatter_may_nest_64_levels() -> None:
    """The bound of a frontmatter's nesting: the mapping and 63 lists in it are read, a
    64th list is KB102 at its line and column (the frontmatter then reads as empty)."""
    ok = parse("Problems/q1.md", "---\nx: " + "[" * 63 + "]" * 63 + "\n---\n" + card())
    assert ok.diagnostics == () and ok.objects[0].frontmatter
    bad = parse("Problems/q1.md", "---\nx: " + "[" * 64 + "]" * 64 + "\n---\n" + card())
    [d] = bad.diagnostics
    assert (d.code, d.line, d.col) == ("KB102", 2, 67) and "64 levels" in d.message, d
    assert bad.objects[0].frontmatter == {} and bad.objects[0].status == "求解中"


def test_a_deep_list_anchor_is_an_error_for_every_reader() -> None:
    """parse_list is also read by the light reading of a range check (kb.parse.light) and
    the card merge driver (kb.merge.card): neither raises; the first defers to the full
    parse, the second leaves the line to git's merge."""
    items, [d] = parse_list(DEEP, "Problems/q1.md", 6, "- 依赖: " + DEEP, "依赖")
    assert items == () and d.code == "KB121" and "(1,000 characters)" in d.message
    data = card(depends=DEEP).encode()
    assert light_card("Problems/q1.md", "0" * 40, data, "problem") is None
    base = card().encode()
    ours = card().replace("- 被依赖: []", '- 被依赖: ["q5"]').encode()
    theirs = card().replace("- 被依赖: []", "- 被依赖: " + DEEP).encode()
    assert settle_derived(base, ours, theirs) is None


def test_a_kb_of_deep_cards_is_indexed_and_verified(make_kb) -> None:
    """In a child process (a hang or a RecursionError ends there, not in the test run):
    `kb index`, `kb verify` and a range check read every card, say KB121 at each deep
    line, never KB199, never exit 3."""
    files = {"Problems/q1.md": card(depends=DEEP),
             "Problems/q2.md": card(depends="[[" * 500).replace("q1", "q2"),
             "Problems/q3.md": "---\na: b\nc: " + DEEP + "\n---\n"
                               + card().replace("q1", "q3"),
             "Methods/m1.md": "# 方法｜T\n- 状态: 经验\n- 类型: 方法\n- 相关: " + DEEP + "\n"}
    kb = make_kb(files, commit=True)
    env = {"KB_TODAY": "2026-11-29"}
    for args in (("index",), ("verify",)):
        try:
            res = run_script(*args, cwd=kb, env=env, timeout=120)
        except subprocess.TimeoutExpired:  # pragma: no cover - the fault itself
            pytest.fail(f"kb {args[0]} did not read the deep cards within 120 s")
        out = res.stdout + res.stderr
        assert res.code == 1 and "KB199" not in out and "Traceback" not in out, out[:3000]
        for where in ("Problems/q1.md:6:1: KB121", "Problems/q2.md:6:1: KB121",
                      "Problems/q3.md:3:67: KB102", "Methods/m1.md:4:1: KB121"):
            assert where in res.stdout, res.stdout[:3000]
        if args == ("index",):
            assert "3 problems, 1 method" in res.stderr, res.stderr
    write_files(kb, {"Problems/q1.md": card(depends=DEEP, prose="S2.")})
    commit_all(kb, "touch q1")
    res = run_script("verify", "--range", "HEAD~1..HEAD", cwd=kb, env=env, timeout=120)
    out = res.stdout + res.stderr
    assert res.code in (0, 1) and "KB199" not in out and "Traceback" not in out, out[:3000]


# -- KB140: an H1 that is some other heading -----------------------------------------


@pytest.mark.parametrize("front, line", [("", 1), ("---\ntags: [a]\n---\n\n", 5)])
def test_a_card_whose_h1_is_another_heading_is_told_its_h1(front: str, line: int) -> None:
    res = parse("Problems/q1.md", front + card().replace("# 问题｜T", "# x"))
    [d] = coded(res, "KB140")
    assert (d.line, d.severity) == (line, "warning"), d
    assert "'# x'" in d.message and "'# 问题｜<title>'" in d.message, d.message
    [obj] = res.objects  # still read by its anchor lines
    assert (obj.id, obj.title, obj.status, len(obj.entries)) == ("q1", "T", "求解中", 1)
    assert [d.code for d in res.diagnostics] == ["KB140"], res.diagnostics


@pytest.mark.parametrize("path, text", [
    ("Problems/q1.md", card()),
    ("Propos/c/q1.md", "# 命题｜T\n- 状态: 未定论\n- 概率: 0.5\n\n## 陈述\nS.\n"),
    ("Methods/q1.md", "# 方法｜T\n- 状态: 经验\n- 类型: 方法\n"),
    ("Progress/q1/d1.md", "# 研究方向日志｜q1 / d1\n\n- 存活率: 0.7；状态: active\n"),
])
def test_a_card_with_its_h1_gets_no_kb140(path: str, text: str) -> None:
    assert coded(parse(path, text), "KB140") == []


def test_a_problem_h1_with_another_kind_word_stays_kb141() -> None:
    res = parse("Problems/q1.md", card().replace("# 问题｜T", "# 命题｜T"))
    assert [d.code for d in res.diagnostics] == ["KB141"], res.diagnostics


@pytest.mark.parametrize("h1", ["# x", "# 研究方向日志｜q1", "# 问题｜q1 / d1"])
def test_a_direction_log_whose_h1_is_another_heading_is_told_the_logs_h1(h1: str) -> None:
    res = parse("Progress/q1/d1.md", h1 + "\n\n- 存活率: 0.7；状态: active\n")
    [d] = coded(res, "KB140")
    assert (d.line, d.severity) == (1, "warning"), d
    assert "'# 研究方向日志｜<problem> / <direction>'" in d.message
    assert "<title>" not in d.message
    assert res.objects[0].status == "active"
