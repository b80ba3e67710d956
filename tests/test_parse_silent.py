"""Inputs kb used to read silently (an acceptance report: untracked cards in the example
KB's ``Problems/`` that neither ``kb index`` nor ``kb verify`` said a word about).

- KB100: a file whose lines end in CR alone (classic Mac) is one line to kb, in every
  format; an error at line 1 (as KB101 and KB107, the other faults of the bytes).
- KB220: a card without the header anchor that holds its state (状态; a proposition's
  概率, a Verified card's 结论 and 概率) or without any title.
- KB150: a direction log whose ``- 存活率: …；状态: …`` header line is missing or unread.
- KB143: an entry numbered 0 (VIBEMATH-V3: "N is 1-based"); gaps (1, 3) stay quiet.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import config_for, write_files
from kb.parse import iter_parse_file, parse_file
from test_verify_support import find, verify_json


def parse(path: str, text: str):
    return parse_file(path, text.encode("utf-8"), config_for(Path("/kb")))


def coded(res, code: str) -> list:
    return [d for d in res.diagnostics if d.code == code]


# -- KB100: CR-only line ends ------------------------------------------------------

DIRECTION = ("# 研究方向日志｜q1 / d1\n\n- 方向: t\n{survival}- 方法: m\n\n"
             "### 第 1 轮｜a｜2026-01-01 00:00:00\nx\n")

FILES = [
    ("Problems/q1.md", "# 问题｜T\n- 标题: T\n- ID: q1\n- 状态: 求解中\n\n## 陈述\nS.\n\n## 解法候选\n"
                       "### 解法 1｜a｜概率0.5｜状态未定论\nx\n"),
    ("Propos/c/p1.md", "# 命题｜T\n- 状态: 未定论\n- 概率: 0.5\n\n## 陈述\nS.\n"),
    ("Methods/m1.md", "# 方法｜T\n- 状态: 经验\n\n## 核心内容\nC.\n"),
    ("Verified/命题/p1.md", "# 已验证｜T\n- ID: p1\n- 结论: 真\n- 概率: 1\n\n## 陈述\nS.\n"),
    ("tree.md", "# Hypothesis Tree\n\n## H1: a\nStatus: 待验\nEvidence: (empty)\n"),
    ("experiments/E001.md", "# E001: H1 - act\n\n**Hypothesis**: H1\n**Date**: 2026-01-02\n"
                            "**Status**: 进行中\n"),
    ("Progress/q1/d1.md", DIRECTION.format(survival="- 存活率: 0.6；状态: active；轮次: 2\n")),
    ("DASHBOARD.md", "# Dashboard\n\n## Next Steps\n\n- x\n"),
]


@pytest.mark.parametrize("path,text", FILES)
def test_cr_only_line_ends_are_an_error_at_line_1_in_every_format(path, text):
    """Lines ended by CR alone: kb splits at LF, so the file was one line (a card indexed
    with an empty status and the whole file as its title, no diagnostic). KB100 says so
    at line 1, in every format kb reads; LF and CRLF files stay quiet."""
    res = parse(path, text.replace("\n", "\r"))
    [d] = coded(res, "KB100")
    assert (d.path, d.line, d.severity) == (path, 1, "error")
    assert "CR alone" in d.message and "LF" in d.message
    assert [x.code for x in res.diagnostics] == ["KB100"]  # no KB126, KB150: KB100 explains
    # "nothing in it is read", as it says: no object holds the whole file as its title
    # (`kb show H1` printed the file as H1's statement)
    assert res.objects == ()
    for ends in ("\n", "\r\n"):
        assert parse(path, text.replace("\n", ends)).diagnostics == ()


def test_cr_only_tree_is_reported_when_read_in_parts():
    """tree.md is read by iter_parse_file (the index's path for a big tree): KB100 too."""
    text = FILES[4][1].replace("\n", "\r")
    gen = iter_parse_file("tree.md", text.encode(), config_for(Path("/kb")))
    yielded = []
    try:
        while True:
            yielded.append(next(gen))
    except StopIteration as stop:
        res = stop.value
    assert [(d.code, d.line) for d in res.diagnostics] == [("KB100", 1)]
    assert yielded == []  # nothing read, nothing stored in parts before the error


@pytest.mark.parametrize("text", [
    "# 问题｜T\r\n- 状态: 求解中\r\n\r\n## 陈述\r\na\rb\r\n",   # CRLF with a stray CR inside a line
    "# 问题｜T\n- 状态: 求解中\n\n## 陈述\na\rb\n",             # LF with a stray CR
    "# 问题｜T\n- 状态: 求解中\n\n## 陈述\na\rb\r",             # a CR at the end, an LF before
])
def test_a_stray_cr_in_a_file_with_line_feeds_is_kb100_at_its_line(text):
    """A CR alone inside a file that has LF line ends joins the lines it ends into one
    (an acceptance test found header anchors lost that way without a word): KB100 at its
    line, as for a file of CR line ends alone (line 1)."""
    assert [d.line for d in coded(parse("Problems/q1.md", text), "KB100")] == [5]


# -- KB220: a card without its state or title ----------------------------------------


def kb220(root: Path) -> list[tuple[str, int, str]]:
    rc, data = verify_json(root)
    return sorted((d["path"], d["line"], d["severity"]) for d in find(data, "KB220"))


def test_a_card_without_its_state_or_title_is_an_error_at_its_h1(kb_with):
    """VIBEMATH-V3 lists the header anchors each card is written with; kb reads the
    card's state from 状态 (a proposition's also from 概率, a Verified card's from 结论
    and 概率), and its title from 标题 or else the H1. A card without them was
    indexed with an empty status and no word: KB220 at the H1's line names what is
    missing."""
    root = kb_with({
        "Problems/q1.md": "# 问题｜\n",                                         # H1 only
        "Problems/q2.md": "\n\n# 问题｜T\n\n## 陈述\nS.\n",                      # no anchor
        "Problems/q3.md": "# 问题｜T\n- 标题: T\n- 状态: 求解中\n\n## 陈述\nS.\n",  # fine
        "Propos/c/p1.md": "# 命题｜T\n- 状态: 未定论\n\n## 陈述\nS.\n",           # no 概率
        "Propos/c/p2.md": "# 命题｜\n- 标题: T\n- 状态: 未定论\n- 概率: 0.5\n",     # fine
        "Methods/m1.md": "# 方法｜T\n- 类型: 方法\n",                            # no 状态
        "Verified/命题/p2.md": "# 已验证｜T\n- ID: p2\n- 概率: 1\n",              # no 结论
    })
    rc, data = verify_json(root)
    got = {d["path"]: d for d in find(data, "KB220")}
    assert sorted((p, d["line"], d["severity"]) for p, d in got.items()) == [
        ("Methods/m1.md", 1, "error"), ("Problems/q1.md", 1, "error"),
        ("Problems/q2.md", 3, "error"), ("Propos/c/p1.md", 1, "error"),
        ("Verified/命题/p2.md", 1, "error")]
    assert "'- 状态:'" in got["Problems/q1.md"]["message"]
    assert "title" in got["Problems/q1.md"]["message"]
    assert "title" not in got["Problems/q2.md"]["message"]
    assert "'- 概率:'" in got["Propos/c/p1.md"]["message"]
    assert "'- 状态:'" not in got["Propos/c/p1.md"]["message"]
    assert "'- 结论:'" in got["Verified/命题/p2.md"]["message"]
    assert rc == 1


def test_a_card_title_of_characters_that_show_nothing_is_no_title(kb_with):
    """A title of zero-width characters (`- 标题: \u200b`, an H1 `# 问题｜\u2060`) reads as
    text and showed nothing: KB220 counts it as no title, as the write commands do
    (kb.text.visible). A title that shows is quiet."""
    root = kb_with({
        "Problems/q1.md": "# 问题｜\u2060\n- 状态: 求解中\n",
        "Problems/q2.md": "# 问题｜T\n- 标题: \u200b\n- 状态: 求解中\n",  # 标题 wins over the H1
        "Problems/q3.md": "# 问题｜\n- 标题: 👩\u200d🔬\n- 状态: 求解中\n",
    })
    rc, data = verify_json(root)
    got = {d["path"]: d for d in find(data, "KB220")}
    assert sorted(got) == ["Problems/q1.md", "Problems/q2.md"]
    assert all("no title" in d["message"] for d in got.values())
    assert rc == 1


def test_a_card_whose_state_comes_from_its_frontmatter_is_quiet(kb_with):
    """DESIGN §2.5: frontmatter may supply an anchor's field in English (``status``)."""
    root = kb_with({"Problems/q1.md": "---\nstatus: 求解中\n---\n# 问题｜T\n- 标题: T\n"})
    assert kb220(root) == []


# -- KB150: a direction log without its survival and status ---------------------------


@pytest.mark.parametrize("survival,line,says", [
    ("", 1, "no '- 存活率: …；状态: …' line"),                       # the line is missing
    ("- 存活率 0.9；状态 active\n", 4, "not read"),                   # no colons: not an anchor
    ("- 存活率：0.9；状态：active\n", None, ""),                       # full-width: read (KB110)
    ("- 存活率: 0.9\n", 4, "状态"),                                    # no status
    ("- 存活率: 0.9；状态 active\n", 4, "状态"),                       # status without its colon
    ("- 存活率: ；状态: active\n", 4, "存活率"),                         # empty survival
    ("- 存活率: 0.7；状态: active；轮次: 1\n", None, ""),
    ("- 存活率: 0.7\n- 状态: active\n", None, ""),
])
def test_a_direction_without_survival_and_status_is_a_warning(survival, line, says):
    """A direction log was listed with an empty status and no word when its
    ``- 存活率: 0.6；状态: active`` line was missing or unread: KB150 (a warning, as
    everything odd in a log) at that line, or at the H1 when there is none."""
    res = parse("Progress/q1/d1.md", DIRECTION.format(survival=survival))
    found = [d for d in coded(res, "KB150") if "存活率" in d.message or "状态" in d.message]
    if line is None:
        assert found == [], found
        return
    [d] = found
    assert (d.line, d.severity) == (line, "warning") and says in d.message, d.message
    assert res.objects[0].status == ("active" if says == "存活率" else "")


def test_a_direction_log_without_its_h1_is_told_the_logs_h1():
    """KB140 names the H1 of a direction log (VIBEMATH-V3 Progress), not a problem card's."""
    res = parse("Progress/q1/d1.md", "- 存活率: 0.7；状态: active\n")
    [d] = coded(res, "KB140")
    assert "'# 研究方向日志｜<problem> / <direction>'" in d.message and "问题" not in d.message
    [d] = coded(parse("Problems/q1.md", "- 状态: 求解中\n"), "KB140")
    assert "'# 问题｜<title>'" in d.message


# -- KB143: entries are numbered from 1 ------------------------------------------------


def test_an_entry_numbered_0_is_an_error_and_gaps_are_not():
    """VIBEMATH-V3: "N is 1-based"; kb verdict refuses an entry number below 1, so an
    entry numbered 0 could never be verified: KB143 at its line, naming a free number.
    The entry is still read. Numbers with gaps (1, 3) are not reported."""
    from kb.parse.light import light_card

    text = ("# 问题｜T\n- 状态: 求解中\n\n## 解法候选\n### 解法 0｜a｜概率0.5｜状态未定论\n"
            "### 解法 1｜b｜概率0.5｜状态未定论\n### 解法 3｜c｜概率0.5｜状态未定论\n")
    res = parse("Problems/q1.md", text)
    [d] = coded(res, "KB143")
    assert (d.line, d.severity) == (5, "error")
    assert "'解法 0'" in d.message and "from 1" in d.message and "'解法 4' is free" in d.message
    assert [e.number for e in res.objects[0].entries] == [0, 1, 3]
    assert res.diagnostics == (d,)
    assert light_card("Problems/q1.md", "0" * 40, text.encode(), "problem") is None
    propo = ("# 命题｜T\n- 状态: 未定论\n- 概率: 0.5\n\n## 证明尝试\n### 证明 0｜a｜概率0.5｜状态未定论\n\n"
             "## 证伪尝试\n### 证伪 00｜b｜概率0.5｜状态未定论\n### 证伪 0｜c｜概率0.5｜状态未定论\n")
    res = parse("Propos/c/p1.md", propo)
    assert [(d.line, d.code) for d in res.diagnostics] == [(6, "KB143"), (9, "KB143"), (10, "KB143")]
    msgs = [d.message for d in res.diagnostics]
    assert "'证明 1' is free" in msgs[0] and "'证伪 1' is free" in msgs[1]
    assert "'证伪 2' is free" in msgs[2]
    gaps = "# 问题｜T\n- 状态: 求解中\n\n## 解法候选\n### 解法 1｜a｜概率0.5｜状态未定论\n### 解法 3｜b｜概率0.5｜状态未定论\n"
    assert parse("Problems/q1.md", gaps).diagnostics == ()


# -- the acceptance report, end to end -------------------------------------------------


def test_the_silent_inputs_are_reported_in_the_example_kb(example_kb: Path):
    """Each case as the tester wrote it: an untracked file in the example KB. `kb verify`
    (the working tree) reports each; the example KB itself stays clean."""
    assert verify_json(example_kb)[1]["diagnostics"] == []
    q2 = (example_kb / "Problems/q2.md").read_text(encoding="utf-8")
    d1 = (example_kb / "Progress/q2/d1.md").read_text(encoding="utf-8")
    (example_kb / "Problems/q7.md").write_bytes(q2.replace("- ID: q2", "- ID: q7").replace("\n", "\r").encode())
    write_files(example_kb, {
        "Problems/q8.md": "# 问题｜\n",
        "Problems/q9.md": q2.replace("- ID: q2", "- ID: q9").replace("### 解法 1｜", "### 解法 0｜"),
        "Progress/q2/d2.md": d1.replace("q2 / d1", "q2 / d2").replace("- 存活率: 0.7；状态: active；轮次: 1\n", ""),
        "Progress/q2/d3.md": d1.replace("q2 / d1", "q2 / d3").replace("- 存活率: 0.7；状态: active；轮次: 1",
                                                                       "- 存活率 0.9；状态 active"),
    })
    rc, data = verify_json(example_kb)
    got = sorted((d["path"], d["line"], d["code"]) for d in data["diagnostics"])
    assert got == [("Problems/q7.md", 1, "KB100"), ("Problems/q8.md", 1, "KB220"),
                   ("Problems/q9.md", 16, "KB143"), ("Progress/q2/d2.md", 1, "KB150"),
                   ("Progress/q2/d3.md", 4, "KB150")]
    assert rc == 1


def test_a_cr_alone_inside_a_file_with_lf_is_kb100_at_its_line() -> None:
    """Header lines joined by CRs alone in a file whose other lines end in LF: their
    anchors were misread without a word (the status lost, the title swallowing them)."""
    from kb.config import Config
    from kb.parse import parse_file

    lines = ["# 问题｜t", "- 标题: t", "- ID: q9", "- 类型: 问题", "- 状态: 求解中", "- 优先级: 1"]
    text = "\n".join(lines[:2]) + "\n" + "\r".join(lines[2:]) + "\n\n## 陈述\n\nx\n"
    res = parse_file("Problems/q9.md", text.encode("utf-8"), Config(root=Path(".")), "problem")
    (d,) = [x for x in res.diagnostics if x.code == "KB100"]
    assert (d.line, d.severity) == (3, "error") and "CR alone" in d.message
    crlf = "\r\n".join(lines) + "\r\n\r\n## 陈述\r\n\r\nx\r\n"  # CRLF is read as it was
    res = parse_file("Problems/q9.md", crlf.encode("utf-8"), Config(root=Path(".")), "problem")
    assert not [x for x in res.diagnostics if x.code == "KB100"]
