"""Files kb reads nothing from (issue #11): KB119 for a heading that carries an ID, KB126 for
a tree, experiment or card in another shape — what is there, what kb reads, and a rewrite only
when it reads back as exactly the same objects."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import config_for
from kb.parse import parse_file
from kb.parse.unread import card_rewrite, experiment_rewrite, scan_tree, tree_rewrite
from kb.text import SourceText

CFG = config_for(Path("/kb"))


def parse(text: str, path: str = "tree.md"):
    return parse_file(path, text.encode("utf-8"), CFG)


def codes(res) -> list[str]:
    return [d.code for d in res.diagnostics]


def one(res, code: str = "KB126"):
    found = [d for d in res.diagnostics if d.code == code]
    assert len(found) == 1, res.diagnostics
    return found[0]


def rewrite(text: str):
    src = SourceText.from_text(text, "tree.md")
    return tree_rewrite(src, scan_tree(src), CFG)


# -- KB119: a heading whose first token is an ID, not a declaration -------------------------


@pytest.mark.parametrize("heading, fixed", [
    ("## H2 Prefetching helps", "## H2: Prefetching helps"),
    ("## **H2** Prefetching helps", "## H2: Prefetching helps"),
    ("## **H2:** Prefetching helps", "## H2: Prefetching helps"),
    ("## **H2: Prefetching helps**", "## H2: Prefetching helps"),
    ("## Hypothesis H2 — Prefetching helps", "## H2: Prefetching helps"),
    ("## [H2] Prefetching helps", "## H2: Prefetching helps"),
    ("### H1.1 — Disk bound", "### H1.1: Disk bound"),
    ("## H2", None),
    ("## **H2 unbalanced", None),
    ("## H2+H3 joint claim", None),
])
def test_kb119_heading_carrying_an_id_is_an_error(heading: str, fixed: str | None) -> None:
    text = f"# T\n\n## H1: Decode is slow\nStatus: 待验\n\n{heading}\nStatus: 待验\n"
    res = parse(text)
    d = one(res, "KB119")
    assert (d.line, d.severity) == (6, "error")
    assert "KB117" not in codes(res)  # its Status line is explained by the same report
    if fixed is None:
        assert d.fix is None
        return
    assert (d.fix.old, d.fix.new) == (heading, fixed)
    lines = text.split("\n")
    lines[d.fix.line - 1] = d.fix.new
    again = parse("\n".join(lines))
    assert [h.id for h in again.objects][-1] == fixed.split()[1].rstrip(":")
    assert not [x for x in again.diagnostics if x.severity == "error"]


@pytest.mark.parametrize("heading", ["## H2O is water", "# H1 and H2 notes", "## Notes on H2",
                                     "## h2 lower case"])
def test_kb119_leaves_other_headings_alone(heading: str) -> None:
    res = parse(f"# T\n\n## H1: Decode is slow\nStatus: 待验\n\n{heading}\n")
    assert "KB119" not in codes(res) and [h.id for h in res.objects] == ["H1"]


# -- KB126: one warning for a tree kb reads nothing from --------------------------------------

TABLE = ("# Hypotheses\n\nNotes first.\n\n| ID | Statement | Status |\n|---|---|---|\n"
         "| H1 | Decode is slow | open |\n| H1.1 | Disk bound | supported |\n"
         "| **H2** | Cache helps | |\n")
BOLD_LIST = ("# T\n\n- **H1** Decode is slow\n  - **H1.1** Disk bound\n    status: refuted\n"
             "- **H2**: Cache helps\n")
BOLD_LINES = "# T\n\n**H1** Decode is slow\n状态：进行中\n\n**H2:** Cache helps\n"


@pytest.mark.parametrize("text, shape, first, n", [
    (TABLE, "3 table rows", 7, 3),
    (BOLD_LIST, "3 list items", 3, 3),
    (BOLD_LINES, "2 bold lines", 3, 2),
])
def test_kb126_each_shape_once_with_a_fix_that_reads_back(text: str, shape: str, first: int,
                                                         n: int) -> None:
    res = parse(text)
    assert res.objects == ()
    d = one(res)
    assert d.severity == "warning" and d.line == first
    assert shape in d.message and f"first at line {first}" in d.message
    assert "'## H1: <statement>' then 'Status: 待验'" in d.message  # the format kb reads
    assert "Fix: write line" in d.message
    new, why = rewrite(text)
    assert new is not None, why
    again = parse(new)
    assert [d.code for d in again.diagnostics if d.severity == "error"] == []
    assert "KB126" not in codes(again)
    src = SourceText.from_text(text, "tree.md")
    want = [it.raw_id for it in scan_tree(src).items]
    assert [h.id for h in again.objects] == want and len(want) == n
    for h in again.objects:  # same nesting: the level follows the ID, the parent is there
        assert h.level == 2 + h.id.count(".")


def test_kb126_rewrite_keeps_statuses_and_prose() -> None:
    new, _ = rewrite(TABLE)
    got = {h.id: (h.statement, h.status) for h in parse(new).objects}
    assert got == {"H1": ("Decode is slow", "待验"), "H1.1": ("Disk bound", "被支持"),
                   "H2": ("Cache helps", "待验")}
    assert "Notes first." in new and "|---" not in new
    new, _ = rewrite(BOLD_LIST)
    assert {h.id: h.status for h in parse(new).objects}["H1.1"] == "被推翻"


@pytest.mark.parametrize("text, why", [
    ("# T\n\n### H-3 Something odd\n\n### H-4 More\n", "'H-3' is not a valid ID"),
    ("# T\n\n## Hypothesis 1: Decode\n\n## Hypothesis 2: Cache\n", "'Hypothesis 1' is not a valid ID"),
    ("# T\n\n| H01 | leading zero | open |\n", "'H01' is not a valid ID"),
    ("# T\n\n- **H1** Decode\n  - **H2** nested but top-level ID\n", "would change the outline"),
    ("# T\n\n| H1.2 | orphan child | open |\n", "has no parent H1"),
    ("# T\n\n| H1 | one | open |\n| H1 | twice | open |\n", "H1 appears twice"),
    ("# T\n\n| ID | Claim | Status |\n|--|--|--|\n| H1 | claim | maybe later |\n",
     "not a word of the vocabulary"),
    ("# T\n\n| H1 | claim | open | 2024 notes |\n", "cells kb has no anchor for"),
    ("# T\n\n- **H1**\n", "has no statement"),
])
def test_kb126_no_fix_when_the_rewrite_is_not_certain(text: str, why: str) -> None:
    res = parse(text)
    d = one(res)
    assert "No rewrite is offered" in d.message and why in d.message, d.message
    assert "Fix:" not in d.message
    assert rewrite(text)[0] is None


def test_kb126_field_lines_written_differently() -> None:
    """``status: supported`` / ``状态：待验`` under other headings: counted and named."""
    text = "# T\n\n## Hypothesis one\nstatus: supported\n状态：待验\n"
    d = one(parse(text))
    assert "2 field lines" in d.message and "'status:'" in d.message and "'状态:'" in d.message


@pytest.mark.parametrize("text", ["", "# Hypothesis Tree\n", "# T\n\n<!-- notes -->\n",
                                  "# T\n\n```\nexample\n```\n",
                                  "# T\n\n## H1: read\nStatus: 待验\n\n| H2 | row | open |\n"])
def test_kb126_silent_for_empty_or_readable_files(text: str) -> None:
    assert "KB126" not in codes(parse(text))


def test_kb126_prose_alone_is_reported_with_the_format() -> None:
    d = one(parse("# T\n\nWe think decoding is slow.\nAnd caching helps.\n"))
    assert d.line == 3 and "2 lines of text" in d.message and "'## H1: <statement>'" in d.message
    assert "Fix" not in d.message


def test_kb126_prose_only_experiment_and_card() -> None:
    d = one(parse("Some notes about a run.\n", "experiments/E001.md"))
    assert "kb reads nothing from this experiment" in d.message and "'# E001:" in d.message
    d = one(parse("notes only\n", "Problems/q1.md"))
    assert "kb reads nothing from this card" in d.message and "'- 状态: 求解中'" in d.message
    # a title kb reads is something: no report
    assert "KB126" not in codes(parse("# E001: H1 - run\n\nprose\n", "experiments/E001.md"))
    assert "KB126" not in codes(parse("# 问题｜T\n\nprose\n", "Problems/q1.md"))


def test_kb126_not_repeated_where_another_report_explains() -> None:
    """KB116 (another grammar) and KB119 already say why nothing is read."""
    assert codes(parse("# T\n\n### K1. Claim\n\n| H1 | row | open |\n")) == ["KB116"]
    assert "KB126" not in codes(parse("# T\n\n## H1 Claim\n\n| H2 | row | open |\n"))


def test_kb126_fenced_examples_are_not_hypotheses() -> None:
    assert "KB126" not in codes(parse("# T\n\n```\n| H1 | example | open |\n- **H2** x\n```\n"))


# -- experiments and cards --------------------------------------------------------------------


def test_kb126_experiment_with_plain_fields() -> None:
    text = "# Decode experiment\n\nHypothesis: H1\nDate: 2026-01-02\nStatus: done\n\nProse.\n"
    res = parse(text, "experiments/E001.md")
    d = one(res)
    assert "3 field lines" in d.message and "'**Status**: 进行中'" in d.message
    assert "Fix: write line 3 as '**Hypothesis**: H1'" in d.message
    src = SourceText.from_text(text, "experiments/E001.md")
    new, _ = experiment_rewrite(src)
    lines = text.split("\n")
    for ln, t in new.items():
        lines[ln - 1] = t
    [exp] = parse("\n".join(lines), "experiments/E001.md").objects
    assert (exp.hypothesis, exp.date, exp.status) == ("H1", "2026-01-02", "已完成")


def test_kb126_experiment_no_fix_for_an_unknown_status() -> None:
    d = one(parse("# X\n\nHypothesis: H1\nStatus: paused\n", "experiments/E001.md"))
    assert "No rewrite is offered" in d.message and "'paused'" in d.message


def test_kb126_experiment_with_a_title_but_plain_fields() -> None:
    d = one(parse("# E001: H1 - decode\n\nStatus: running\nDate: 2026-01-02\n",
                  "experiments/E001.md"))
    assert "kb reads no field" in d.message and "Fix: write line 3 as '**Status**: running'" \
        in d.message


def test_kb126_experiment_read_normally_is_silent() -> None:
    text = "# E001: H1 - decode\n\n**Hypothesis**: H1\n**Status**: 进行中\n"
    assert "KB126" not in codes(parse(text, "experiments/E001.md"))


def test_kb126_card_with_fields_not_in_list_lines() -> None:
    text = "# 问题｜T\n\n状态：求解中\n**优先级**: 2\n\n## 陈述\nS\n"
    d = one(parse(text, "Problems/q1.md"))
    assert "2 field lines" in d.message and "Fix: write line 3 as '- 状态: 求解中'" in d.message
    new, _ = card_rewrite(SourceText.from_text(text, "Problems/q1.md"), "problem")
    lines = text.split("\n")
    for ln, t in new.items():
        lines[ln - 1] = t
    [card] = parse("\n".join(lines), "Problems/q1.md").objects
    assert (card.status, card.priority) == ("求解中", 2)


def test_kb126_card_read_normally_is_silent() -> None:
    assert "KB126" not in codes(parse("# 问题｜T\n- 状态: 求解中\n\n## 陈述\nS\n", "Problems/q1.md"))


# -- through the command line --------------------------------------------------------------


def test_kb126_kb_index_prints_one_line_for_a_table_tree(make_kb, run_kb) -> None:
    rows = "".join(f"| H{n} | claim {n} | open |\n" for n in range(1, 41))
    root = make_kb({"tree.md": "# T\n\n| ID | Statement | Status |\n|---|---|---|\n" + rows},
                   commit=True)
    r = run_kb("index", "--json", cwd=root)
    assert r.code == 0
    got = [(d["code"], d["line"]) for d in r.json()["diagnostics"]]
    assert got == [("KB126", 5)]
    assert "40 table rows" in r.json()["diagnostics"][0]["message"]


# -- the shared input cases ------------------------------------------------------------------

CASES = ["FM-01", "FM-02", "FM-04a", "FM-04b", "FM-06a", "FM-08a", "FM-08b", "FM-09a", "FM-10",
         "FM-12", "FM-14", "MD-01", "MD-02", "MD-03", "MD-04", "MD-05", "MD-06",
         "Protonk__SlideRule__HYPOTHESES.md", "kexin94yyds__cunzhi-knowledge__problems.md",
         "teamflint__HYPOTHESES.md"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("path", ["tree.md", "experiments/E001.md", "Problems/q1.md"])
def test_kb126_on_every_case_at_most_once_and_only_with_nothing_read(case_bytes, case: str,
                                                                     path: str) -> None:
    res = parse_file(path, case_bytes(case), CFG)
    found = [d for d in res.diagnostics if d.code == "KB126"]
    assert len(found) <= 1
    if found and path == "tree.md":
        assert res.objects == ()
        text = case_bytes(case).decode("utf-8-sig")
        src = SourceText.from_text(text, path)
        new, why = tree_rewrite(src, scan_tree(src), CFG)
        assert ("Fix:" in found[0].message) == (new is not None)


def test_kb126_dashboard_case_as_a_tree_rewrites_to_its_hypothesis(case_bytes) -> None:
    """FM-04a read as tree.md: its '- H1: 数据加载是瓶颈 (待验)' list item is the hypothesis."""
    text = case_bytes("FM-04a").decode("utf-8")
    new, why = rewrite(text)
    assert new is not None, why
    [h] = parse(new).objects
    assert (h.id, h.level, h.status) == ("H1", 2, "待验")


def test_kb126_cards_file_as_a_tree_names_its_field_lines(case_bytes) -> None:
    d = one(parse_file("tree.md", case_bytes("kexin94yyds__cunzhi-knowledge__problems.md"), CFG))
    assert "field lines" in d.message and "'状态:'" in d.message
