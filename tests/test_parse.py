"""``kb.parse``: the general rules of DESIGN.md §2 in every format (beyond the input cases).

Repeated single-valued keys are errors citing both lines; full-width colons are
warnings with a fix; list anchors are JSON (a comma list is a warning, anything
else an error, never a silent ``[]``); numbers are never clamped; ``0`` stays
``0``; frontmatter that disagrees with an anchor is an error; paths from
``kb.toml`` decide the format.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import config_for
from kb.parse import classify, parse_file


def parse(path: str, text: str, extra: dict | None = None):
    return parse_file(path, text.encode("utf-8"), config_for(Path("/kb"), extra))


def diag(res, code: str):
    found = [d for d in res.diagnostics if d.code == code]
    assert len(found) == 1, res.diagnostics
    return found[0]


# -- repeated keys ----------------------------------------------------------------


@pytest.mark.parametrize("path,text,first,second", [
    ("tree.md", "## H1: a\nStatus: 待验\nEvidence: E001\nStatus: 被支持\n", 2, 4),
    ("tree.md", "## H1: a\nEvidence: E001\nStatus: 待验\n证据: E002\n", 2, 4),
    ("experiments/E001.md", "# E001: H1 - act\n\n**Hypothesis**: H1\n**Date**: 2026-01-02\n"
     "**Date**: 2026-01-03\n", 4, 5),
    ("experiments/E001.md", "# E001: H1 - act\n\n## 结果\n**结论**: 支持\n\n**结论**: 推翻\n", 4, 6),
    ("Problems/q1.md", "# 问题｜T\n- 标题: T\n- 状态: 求解中\n- 优先级: 0\n- 状态: 死路\n", 3, 5),
    ("Propos/c/p1.md", "# 命题｜T\n- 概率: 0.2\n- 概率: 0.9\n", 2, 3),
])
def test_repeated_key_is_an_error_citing_both_lines(path, text, first, second):
    """A single-valued anchor given twice in one block: error at the second line naming both."""
    res = parse(path, text)
    d = diag(res, "KB112")
    assert d.severity == "error" and d.line == second and d.path == path
    assert f"lines {first} and {second}" in d.message


def test_repeated_key_keeps_the_first_value_and_reports():
    """The first value is kept (and the error tells the user to keep one), never silently."""
    res = parse("tree.md", "## H1: a\nStatus: 待验\nStatus: 被支持\n")
    assert res.objects[0].status == "待验"
    assert res.objects[0].anchor_lines["Status"] == 2


# -- full-width colon ----------------------------------------------------------------


@pytest.mark.parametrize("path,text,line,fixed", [
    ("experiments/E001.md", "# E001：H1 - act\n", 1, "# E001: H1 - act"),
    ("experiments/E001.md", "# E001: H1 - act\n\n**Status**：进行中\n", 3, "**Status**: 进行中"),
    ("Problems/q1.md", "# 问题｜T\n- 状态：求解中\n", 2, "- 状态: 求解中"),
    ("tree.md", "## H1: a\nEvidence：E001\n", 2, "Evidence: E001"),
])
def test_fullwidth_colon_is_read_with_a_fixable_warning(path, text, line, fixed):
    """``：`` in place of ``:`` is accepted; KB110 warning with a fix that, applied, is clean."""
    res = parse(path, text)
    d = diag(res, "KB110")
    assert (d.line, d.severity, d.fix.new) == (line, "warning", fixed)
    lines = text.split("\n")
    lines[line - 1] = d.fix.new
    again = parse(path, "\n".join(lines))
    assert not [x for x in again.diagnostics if x.code == "KB110"]
    assert [o.replace(line=0) for o in again.objects] == [o.replace(line=0) for o in res.objects]


# -- list anchors ------------------------------------------------------------------------

CARD = "# 问题｜T\n- 标题: T\n- 状态: 求解中\n- 优先级: 1\n{line}\n\n## 陈述\nS\n"


@pytest.mark.parametrize("value,expected,code,severity", [
    ('["q1","p-3f2a9c01"]', ("q1", "p-3f2a9c01"), None, None),
    ("[]", (), None, None),
    ('["问题一"]', ("问题一",), None, None),
    ("q1, q2", ("q1", "q2"), "KB120", "warning"),
    ("q1，q2", ("q1", "q2"), "KB120", "warning"),
    ("", (), "KB120", "warning"),
    ("[1,2]", (), "KB121", "error"),
    ('["q1",', (), "KB121", "error"),
    ("{\"a\": 1}", (), "KB121", "error"),
    ("see q1 and q2", (), "KB121", "error"),
])
def test_list_anchor_values(value, expected, code, severity):
    """``- 依赖: <value>``: JSON read silently; comma lists warn (fixable); anything else is
    an error and reads as () — the diagnostic makes it never silent."""
    res = parse("Problems/q1.md", CARD.format(line=f"- 依赖: {value}".rstrip()))
    assert res.objects[0].depends == expected
    got = [(d.code, d.severity, d.line) for d in res.diagnostics]
    assert got == ([] if code is None else [(code, severity, 5)])
    if code == "KB120":
        fixed = res.diagnostics[0].fix.new
        again = parse("Problems/q1.md", CARD.format(line=fixed))
        assert again.diagnostics == () and again.objects[0].depends == expected


# -- numbers ---------------------------------------------------------------------------------


def test_probabilities_are_never_clamped():
    """``概率1.5`` in an entry and ``- 概率: -0.2`` stay 1.5 and -0.2 (verify reports them)."""
    res = parse("Propos/c/p1.md", "# 命题｜T\n- 概率: -0.2\n- 价值/关键性: 5e-1\n\n## 证明尝试\n"
                "### 证明 1｜t｜概率1.5｜状态未定论\n### 证明 2｜u｜概率1e-7｜状态已验\n")
    [p] = res.objects
    assert p.probability == -0.2 and p.value == 0.5
    assert [(e.number, e.probability) for e in p.entries] == [(1, 1.5), (2, 1e-7)]


def test_priority_zero_stays_zero_and_never_is_kept():
    """``- 优先级: 0`` is 0 (Vibe Math's quirk reads it as 1); ``never`` is 'never'; junk is KB125."""
    assert parse("Problems/q1.md", CARD.format(line="").replace("优先级: 1", "优先级: 0")).objects[0].priority == 0
    assert parse("Problems/q1.md", CARD.format(line="").replace("优先级: 1", "优先级: never")).objects[0].priority == "never"
    res = parse("Problems/q1.md", CARD.format(line="").replace("优先级: 1", "优先级: soon"))
    assert res.objects[0].priority is None
    assert (diag(res, "KB125").line, diag(res, "KB125").severity) == (4, "error")


@pytest.mark.parametrize("line,code", [
    ("### 解法 1｜t｜概率x｜状态未定论", "KB123"),
    ("### 解法 1｜t｜0.5｜状态未定论", "KB122"),
    ("### 解法 一｜t｜概率0.5｜状态未定论", "KB122"),
    ("### 解法 1｜t｜概率0.5", "KB122"),
])
def test_malformed_entry_lines_are_errors(line, code):
    """A broken entry line is an error at its line, never a silently missing entry."""
    res = parse("Problems/q1.md", CARD.format(line="") + "\n## 解法候选\n" + line + "\ntext\n")
    d = diag(res, code)
    assert d.line == 11 and d.severity == "error"
    assert res.objects[0].entries == ()


def test_entry_field_escapes():
    """``\\｜`` inside a title, ``\\\\`` and ``\\n`` are unescaped; entry text runs to the next heading."""
    res = parse("Problems/q1.md", CARD.format(line="") + "\n## 解法候选\n"
                "### 解法 1｜a\\｜b\\\\c\\nd｜概率5e-1｜状态未定论\nline 1\nline 2\n\n### 解法 2｜x｜概率0｜状态已验\n")
    e1, e2 = res.objects[0].entries
    assert (e1.title, e1.probability, e1.text) == ("a｜b\\c\nd", 0.5, "line 1\nline 2")
    assert (e2.number, e2.status, e2.text) == (2, "已验", "")


def test_entries_inside_a_fence_are_not_read():
    """An entry line inside a fenced block is an example, not an entry."""
    res = parse("Propos/c/p1.md", "# 命题｜T\n- 概率: 0.5\n\n## 证明尝试\n```\n"
                "### 证明 9｜in fence｜概率1｜状态已验\n```\n### 证明 1｜t｜概率0.4｜状态未定论\n")
    assert [(e.number, e.line) for e in res.objects[0].entries] == [(1, 8)]


# -- frontmatter against anchors ----------------------------------------------------------------


@pytest.mark.parametrize("path,text,line", [
    ("tree.md", "---\nstatus: 被支持\n---\n## H1: a\nStatus: 待验\n", 5),
    ("experiments/E001.md", "---\nstatus: completed\n---\n# E001: H1 - a\n\n**Status**: 进行中\n", 6),
    ("Propos/c/p1.md", "---\nstatus: 未定论\n---\n# 命题｜T\n- 状态: 已验证·真\n", 5),
    ("experiments/E001.md", "---\nid: E002\n---\n# E001: H1 - a\n", 4),
])
def test_frontmatter_conflict_is_an_error(path, text, line):
    """Frontmatter ``status``/``id`` that disagrees with the anchor line: KB104 at the anchor."""
    d = diag(parse(path, text), "KB104")
    assert (d.line, d.severity) == (line, "error")


def test_frontmatter_agreeing_in_english_is_fine():
    """``status: in-progress`` in frontmatter agrees with ``**Status**: 进行中``."""
    res = parse("experiments/E001.md", "---\nstatus: in-progress\n---\n# E001: H1 - a\n\n**Status**: 进行中\n")
    assert res.diagnostics == ()
    assert res.objects[0].frontmatter == {"status": "in-progress"}


# -- formats and paths ------------------------------------------------------------------------


@pytest.mark.parametrize("path,fmt", [
    ("tree.md", "tree"), ("DASHBOARD.md", "dashboard"), ("experiments/E001.md", "experiment"),
    ("experiments/sub/E001.md", "misplaced"), ("Problems/q1.md", "problem"), ("Propos/数论/p1.md", "proposition"),
    ("Propos/p1.md", "misplaced"), ("Methods/m1.md", "method"), ("Verified/命题/p1.md", "verified"),
    ("Verified/问题/q1.md", "verified"), ("Verified/其他/x.md", "misplaced"), ("Progress/q1.md", "progress"),
    ("Progress/q1/d1.md", "direction"), ("Notes/x.md", None), ("Reliable/x.md", None),
    ("tree.txt", None), ("Logs/Verification/r.json", None), ("sub/tree.md", None),
    ("Problems/sub/P001-x.md", "misplaced"), ("Methods/a/m1.md", "misplaced"),
    ("Progress/q1/d1/x.md", "misplaced"), ("Problems/sub/x.txt", None),
])
def test_classify_default_layout(path, fmt):
    """DESIGN.md §1 layout: which files kb reads, as which format; ``classifier``
    (what a snapshot uses for every path) says the same."""
    from kb.parse import classifier

    cfg = config_for(Path("/kb"))
    assert classify(path, cfg) == fmt
    assert classifier(cfg)(path) == fmt


@pytest.mark.parametrize("toml", ["[kb]\n",
                                  '[kb]\n[paths]\ntree = "Logs/tree.md"\nexperiments = "."\n'
                                  'problems = "Problems"\ndashboard = "experiments/D.md"\n'
                                  '[[registry]]\npath = "Problems/tree.md"\n'])
def test_the_folder_classifier_answers_what_classify_answers(tmp_path, toml):
    """kb.parse.classifier decides a format once per folder (listings of 100,000 paths):
    for every path, layouts moving folders to the root or exact paths into layout
    folders included (a registry among the problems; a tree or dashboard may not lie in a
    folder of records, kb.toml refuses it), it answers what classify answers."""
    import itertools

    from kb.config import load_config
    from kb.parse import classifier

    (tmp_path / "kb.toml").write_text(toml, encoding="utf-8")
    cfg = load_config(tmp_path)
    folders = ["", *{v for v in cfg.paths.values()}, "experiments", "命题", "问题", "x", "Notes", "Reliable", "."]
    names = ["a.md", "tree.md", "DASHBOARD.md", "D.md", ".md", "x.txt", "E1.md", "a.MD"]
    fast = classifier(cfg)
    seen = set()
    for n in range(3):
        for parts in itertools.product(folders, repeat=n):
            for name in names:
                path = "/".join([x for x in parts if x] + [name])
                assert fast(path) == classify(path, cfg), path
                seen.add(classify(path, cfg))
    assert {"tree", "dashboard", "experiment", "problem", None} <= seen


VIBE = "VibeMath/Projects/demo"
VIBE_TOML = f"""[kb]

[paths]
problems = "{VIBE}/Problems"
propositions = "{VIBE}/Propos"
methods = "{VIBE}/Methods"
verified = "{VIBE}/Verified"
progress = "{VIBE}/Progress"
"""


def test_vibe_math_layout_through_kb_toml(make_kb, run_kb):
    """A KB in Vibe Math v3's layout (``VibeMath/Projects/<p>/…``) is read when kb.toml points
    at it; the same files at the default paths are then not cards."""
    problem = "# 问题｜T\n- 标题: T\n- ID: q1\n- 状态: 求解中\n- 优先级: 2\n- 依赖: [\"p1\"]\n\n## 陈述\nS\n"
    prop = "# 命题｜P\n- 标题: P\n- ID: p1\n- 状态: 未定论\n- 概率: 0.5\n\n## 陈述\nP\n"
    root = make_kb({f"{VIBE}/Problems/q1.md": problem, f"{VIBE}/Propos/数论/p1.md": prop,
                    "Problems/q9.md": problem}, config=VIBE_TOML, commit=True)
    r = run_kb("index", "--json", cwd=root)
    assert r.code == 0 and r.json()["counts"] == {"problems": 1, "propositions": 1}
    shown = run_kb("show", "p1", "--json", cwd=root).json()
    assert shown["path"] == f"{VIBE}/Propos/数论/p1.md" and shown["category"] == "数论"
    assert shown["dependants"] == ["q1"]
    assert run_kb("show", "q9", cwd=root).code == 1


def test_declaration_without_its_colon_is_reported_with_a_fix():
    """``## H2 Prefetching`` declares nothing: a KB119 error at its line whose fix adds
    the colon (then H2 is read); ``## H2O …`` and the level-1 title are left alone."""
    text = ("# H1 and H2 notes\n\n## H1: 读盘是瓶颈\nStatus: 待验\n\n"
            "## H2 预取隐藏了解码开销\nStatus: 待验\n\n## H2O is water\n")
    res = parse("tree.md", text)
    assert [h.id for h in res.objects] == ["H1"]
    d = diag(res, "KB119")
    assert (d.line, d.severity) == (6, "error") and "H2" in d.message
    assert not [x for x in res.diagnostics if x.code == "KB117"]  # its Status line: same cause
    assert (d.fix.old, d.fix.new) == ("## H2 预取隐藏了解码开销", "## H2: 预取隐藏了解码开销")
    lines = text.split("\n")
    lines[d.fix.line - 1] = d.fix.new
    again = parse("tree.md", "\n".join(lines))
    assert [h.id for h in again.objects] == ["H1", "H2"]
    assert not [x for x in again.diagnostics if x.code == "KB119"]


# The tree scan matches headings and plain declarations with greedy groups and
# strips the end in Python (the lazy patterns were slow); both must read alike.
_HEADING_TEXT = st.text(alphabet=st.sampled_from(list("#H1Kq.:：[]() \t\u3000xé待验|")), max_size=24)


@settings(max_examples=400, deadline=None)
@given(_HEADING_TEXT)
def test_greedy_heading_pattern_reads_what_the_lazy_one_reads(line: str) -> None:
    from kb.parse import tree

    lazy, greedy = tree._ATX.match(line), tree._ATX_GREEDY.match(line)
    assert (lazy is None) == (greedy is None)
    if lazy is not None and greedy is not None:
        assert lazy.group(1) == greedy.group(1)
        assert lazy.group(2) == greedy.group(2).rstrip(" \t")


_SPACES = st.text(alphabet=st.sampled_from([" ", "\t"]), max_size=2)
# An ID, spaces, a separator, spaces, a statement: most match the default grammar.
_DECLARATION_TEXT = st.builds(
    lambda i, a, sep, b, stmt: f"{i}{a}{sep}{b}{stmt}",
    st.sampled_from(["H1", "H1.2", "H12.3.4", "H", "K1"]), _SPACES,
    st.sampled_from([":", "：", "|", ""]), _SPACES, _HEADING_TEXT)


@settings(max_examples=600, deadline=None)
@given(st.one_of(_HEADING_TEXT, _DECLARATION_TEXT))
def test_plain_declaration_pattern_reads_what_the_full_one_reads(text: str) -> None:
    from kb.parse import tree

    cfg = config_for(Path("."))
    grammar, seps = cfg.recognise_grammar, cfg.heading_separators
    if text[:1] == "[":
        text = text[1:]  # the scan gives such texts to the full pattern
    full = tree._declaration_re(grammar, seps).match(text)
    plain = tree._plain_declaration_re(grammar, seps).match(text)
    assert (full is None) == (plain is None)
    if full is not None and plain is not None:
        assert full.groupdict() == plain.groupdict()


# -- content kb used to skip without a word ------------------------------------------


@pytest.mark.parametrize("path,text,kind,section", [
    ("Problems/q1.md", "# 问题｜T\n- 状态: 求解中\n\n### 解法 1｜t｜概率0.9｜状态未定论\nbody\n",
     "解法", "解法候选"),
    ("Propos/c/p1.md", "# 命题｜T\n- 概率: 0.5\n\n### 证伪 1｜t｜概率0.2｜状态未定论\n\n## 陈述\nS\n",
     "证伪", "证伪尝试"),
])
def test_an_entry_above_every_section_is_an_error_with_a_fix(path, text, kind, section):
    """An entry line before the card's first `## ` section is read nowhere: KB127 at its
    line, and the fix (the section heading inserted above it) makes kb read the entry."""
    res = parse(path, text)
    assert res.objects[0].entries == ()
    d = diag(res, "KB127")
    assert (d.line, d.severity) == (4, "error") and f"'## {section}'" in d.message
    assert d.fix is not None and d.fix.new == f"## {section}\n" + text.split("\n")[3]
    lines = text.split("\n")
    lines[d.fix.line - 1] = d.fix.new
    fixed = parse(path, "\n".join(lines))
    assert [(e.kind, e.number, e.text) for e in fixed.objects[0].entries] == [(kind, 1, "body")
                                                                               if kind == "解法" else (kind, 1, "")]
    assert not [x for x in fixed.diagnostics if x.severity == "error"], fixed.diagnostics


def test_an_entry_above_its_section_further_down_says_move_it_there():
    """When the card has the entry's section further down, inserting another would make
    two: the message says to move the entry under it (its line), and there is no fix."""
    text = ("# 问题｜T\n- 状态: 求解中\n\n### 解法 1｜early｜概率0.5｜状态未定论\n\n## 陈述\nS\n\n"
            "## 解法候选\n### 解法 2｜t｜概率0.5｜状态未定论\n")
    d = diag(parse("Problems/q1.md", text), "KB127")
    assert d.line == 4 and d.fix is None
    assert "move it under '## 解法候选' (line 9)" in d.message and "put the section" not in d.message


METHOD = "# 方法｜m\n- 状态: 经验\n\n## 应用记录\n\n{line}\n"


@pytest.mark.parametrize("line,fixed", [
    ("### 应用 2｜q2", None),
    ("### 应用 2｜2026-11-02 10:00:00", None),
    ("### 应用 3 ｜ 2026-11-02 10:00:00 ｜ 问题 q2", "### 应用 3｜2026-11-02 10:00:00｜问题 q2"),
    ("### 应用 3 | 2026-11-02 | 问题 q2 方向 d1", "### 应用 3｜2026-11-02｜问题 q2 方向 d1"),
])
def test_a_malformed_application_line_is_reported_not_skipped(line, fixed):
    """A `### 应用` line of a method that does not read as an application is KB122 (it used
    to vanish without a word); spaced or `|` separators get the canonical line as a fix,
    which reads back as the application."""
    res = parse("Methods/m1.md", METHOD.format(line=line))
    assert res.objects[0].applications == ()
    d = diag(res, "KB122")
    assert d.line == 6 and "application line" in d.message, d.message
    if fixed is None:
        assert d.fix is None and "### 应用 N｜<YYYY-MM-DD HH:MM:SS>｜问题 <qid>" in d.message
        return
    assert d.fix is not None and d.fix.new == fixed and fixed in d.message
    again = parse("Methods/m1.md", METHOD.format(line=fixed))
    assert [a.number for a in again.objects[0].applications] == [int(fixed.split()[2][0])]
    assert not again.diagnostics, again.diagnostics


@pytest.mark.parametrize("path,text", [
    ("Methods/m1.md", METHOD.format(line="### 应用场景\nprose about where it applies")),
    ("Methods/m1.md", METHOD.format(line="### 应用 1｜2026-11-02 10:00:00｜问题 q1 方向 d")),
    ("Problems/q1.md", "# 问题｜T\n- 状态: 求解中\n\n## 陈述\n\n### 应用 2｜q2\n"),
])
def test_application_like_headings_that_are_fine_are_quiet(path, text):
    assert not [d for d in parse(path, text).diagnostics if d.code == "KB122"]


def test_an_entry_above_anchor_lines_gets_no_fix():
    """Inserting a section above an entry that header anchors follow would move them out
    of the header: reported, no fix."""
    res = parse("Problems/q1.md", "# 问题｜T\n### 解法 1｜t｜概率0.9｜状态未定论\n- 状态: 求解中\n")
    d = diag(res, "KB127")
    assert d.line == 2 and d.fix is None
    assert res.objects[0].anchors == {"状态": "求解中"}


@pytest.mark.parametrize("line,fixed", [
    ("### 解法 4 ｜ title ｜ 概率0.5 ｜ 状态未定论", "### 解法 4｜title｜概率0.5｜状态未定论"),
    ("### 解法 4｜t｜ 概率 0.5｜状态 已验", "### 解法 4｜t｜概率0.5｜状态已验"),
    ("### 解法 4 | a b | 概率1e-1 | 状态未定论", "### 解法 4｜a b｜概率1e-1｜状态未定论"),
    ("### 解法 4 ｜ a\\｜b ｜ 概率0.5 ｜ 状态未定论", "### 解法 4｜a\\｜b｜概率0.5｜状态未定论"),
])
def test_an_entry_with_spaced_separators_is_reported_with_the_canonical_line(line, fixed):
    """Spaces around `｜` (or `|` for `｜`) are not the entry format (VIBEMATH-V3: no spaces
    around 概率/状态; Vibe Math does not read them): KB122 with the canonical line as a
    fix, which kb reads as the same entry."""
    text = CARD.format(line="") + "\n## 解法候选\n" + line + "\n"
    res = parse("Problems/q1.md", text)
    assert res.objects[0].entries == ()
    d = diag(res, "KB122")
    assert d.fix is not None and (d.fix.line, d.fix.old, d.fix.new) == (11, line, fixed)
    assert fixed in d.message
    again = parse("Problems/q1.md", text.replace(line, fixed))
    assert len(again.objects[0].entries) == 1 and not again.diagnostics, again.diagnostics


@pytest.mark.parametrize("line", [
    "### 解法 4 ｜ title ｜ 0.5 ｜ 状态未定论",
    "### 解法 x ｜ title ｜ 概率0.5 ｜ 状态未定论",
    "### 解法 4 ｜ title ｜ 概率high ｜ 状态未定论",
    "### 解法 4 ｜ ｜ 概率0.5 ｜ 状态未定论",
])
def test_a_malformed_entry_gets_no_guessed_fix(line):
    res = parse("Problems/q1.md", CARD.format(line="") + "\n## 解法候选\n" + line + "\n")
    assert diag(res, "KB122").fix is None


@pytest.mark.parametrize("path,text,read", [
    ("tree.md", "## H3 : spaced\nStatus : 待验\n", lambda o: (o.id, o.statement, o.status) == ("H3", "spaced", "待验")),
    ("Problems/q1.md", "# 问题｜T\n- 状态 : 求解中\n", lambda o: o.status == "求解中"),
    ("experiments/E001.md", "# E001 : H1 - act\n\n**Status** : 进行中\n", lambda o: (o.id, o.status) == ("E001", "进行中")),
])
def test_spaces_before_a_colon_separator_are_read(path, text, read):
    """A blank before ':' in a declaration or an anchor line is read as written (the
    formats allow it), with no diagnostic: only entry lines' '｜' fields are strict."""
    res = parse(path, text)
    assert len(res.objects) == 1 and read(res.objects[0]) and not res.diagnostics, res


@pytest.mark.parametrize("path,text,line,what", [
    ("tree.md", "## H1: a\nStatus: 待验\n\n> ## H4: quoted\n> Status: 待验\n", 4, "H4 is not read"),
    ("tree.md", "## H1: a\nStatus: 待验\n- ## H5: listed\n", 3, "H5 is not read"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n1. >## H6: both\n", 4, "H6 is not read"),
    ("Problems/q1.md", "# 问题｜T\n- 状态: 求解中\n\n## 解法候选\n> ### 解法 1｜t｜概率0.5｜状态未定论\n", 5,
     "outside the block quote"),
    ("Problems/q1.md", "# 问题｜T\n- 状态: 求解中\n- ### 解法 1｜t｜概率0.5｜状态未定论\n", 3,
     "outside the list item"),
])
def test_a_declaration_or_entry_inside_a_quote_or_list_is_a_warning(path, text, line, what):
    """A heading inside a block quote or a list item is not a heading at the start of a
    line: kb does not read it (no object, no entry) and says so, KB128 at its line."""
    res = parse(path, text)
    d = diag(res, "KB128")
    assert (d.line, d.severity, d.fix) == (line, "warning", None) and what in d.message
    if path == "tree.md":
        assert [h.id for h in res.objects] == ["H1"]
    else:
        assert res.objects[0].entries == ()


@pytest.mark.parametrize("path,text", [
    ("tree.md", "## H1: a\nStatus: 待验\n\n```\n> ## H4: quoted\n```\n\n> a quote: of prose\n- item: one\n"),
    ("Problems/q1.md", "# 问题｜T\n- 状态: 求解中\n\n## 解法候选\n```\n- ### 解法 1｜t｜概率0.5｜状态未定论\n```\n"
     "> ### not an entry\n"),
])
def test_nested_lookalikes_in_code_or_prose_are_quiet(path, text):
    assert not [d for d in parse(path, text).diagnostics if d.code == "KB128"]


@pytest.mark.parametrize("path,text,line,hidden", [
    ("tree.md", "## H1: a\nStatus: 待验\n\n<!-- a comment never closed\n\n## H3: hidden\nStatus: 待验\n",
     4, "hides its 3 lines (lines 5–7, 1 heading)"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n```python\nx = 1\n## H2: hidden\nStatus: 待验\n\n",
     4, "hides its 4 lines (lines 5–8, 1 heading)"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n- item\n\n  ~~~\n  ## H2: hidden\n", 6,
     "hides its line 7 (0 headings)"),
    ("Problems/q1.md", "# 问题｜T\n- 状态: 求解中\n\n## 解法候选\n````\n### 解法 1｜t｜概率0.5｜状态未定论\n```\n",
     5, "hides its 2 lines (lines 6–7, 1 heading)"),
    ("experiments/E001.md", "# E001: H1 - act\n\n**Status**: 进行中\n\n## 执行记录\n```\nlog\n\n## 结果\n"
     "**结论**: 支持\n", 6, "hides its 4 lines (lines 7–10, 1 heading)"),
    ("experiments/E001.md", "# E001: H1 - act\n\n**Status**: 进行中\n<script>\nvar x;\n", 4,
     "hides its line 5 (0 headings)"),
    # markdown-it's path (a backtick in an info string: no fence, a paragraph line; an
    # indented fence), the file ending in a blank line that the block hides too
    ("Problems/q1.md", "# 问题｜T\n- 状态: 求解中\n\n## 解法候选\n``` a`b\n### 解法 1｜t｜概率0.5｜状态未定论\n"
     "```\n### 解法 2｜u｜概率0.5｜状态未定论\n\n", 7, "hides its 2 lines (lines 8–9, 1 heading)"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n``` a`b\n```\n## H2: hidden\nStatus: 待验\n\n", 5,
     "hides its 3 lines (lines 6–8, 1 heading)"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n  ```\n## H2: hidden\nStatus: 待验\n\n\n", 4,
     "hides its 4 lines (lines 5–8, 1 heading)"),
    ("experiments/E001.md", "# E001: H1 - act\n\n**Status**: 进行中\n\n``` a`b\n```\nlog\n## 结果\n"
     "**结论**: 支持\n\n", 6, "hides its 4 lines (lines 7–10, 1 heading)"),
])
def test_a_block_never_closed_is_a_warning_at_its_opening_line(path, text, line, hidden):
    """A fence or an HTML comment never closed runs to the end of the file and hides what
    follows from kb (and from every Markdown reader): KB129 at the line that opens it."""
    res = parse(path, text)
    d = diag(res, "KB129")
    assert (d.line, d.severity) == (line, "warning") and hidden in d.message, d.message


@pytest.mark.parametrize("path,text", [
    ("tree.md", "## H1: a\nStatus: 待验\n\n```\ncode\n```\n"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n<!--\nnote\n-->\n"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n<!-- one line -->\n"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n    indented code\n"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n<div>\nhtml to the end\n"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n```\n"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n- item\n\n  ```\n  code\n  ```\n"),
    ("experiments/E001.md", "# E001: H1 - act\n\n**Status**: 进行中\n\n```\nlog\n~~~\n```\n"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n``` a`b\n```\ncode\n```\n\n\n"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n    indented code\n\n"),
    ("tree.md", "## H1: a\nStatus: 待验\n\n<div>\nhtml to a blank line\n\n"),
])
def test_a_block_closed_at_the_end_or_hiding_nothing_is_quiet(path, text):
    assert not [d for d in parse(path, text).diagnostics if d.code == "KB129"]


def test_a_file_ending_in_a_closed_fence_needs_no_block_parse(monkeypatch):
    """The check for a block never closed reads what the mask computation saw: a card
    ending in a closed column-0 fence (common) costs no markdown-it parse."""
    import kb.text

    def refuse(body: str) -> list:
        raise AssertionError("markdown-it parse")

    monkeypatch.setattr(kb.text, "_code_ranges", refuse)
    text = CARD.format(line="") + "\n## 解法候选\n### 解法 1｜t｜概率0.5｜状态未定论\n```\ncode\n```\n"
    res = parse("Problems/q1.md", text)
    assert len(res.objects[0].entries) == 1 and not res.diagnostics
    res = parse("Problems/q1.md", text[: -len("```\n")])
    assert diag(res, "KB129").line == 12


def test_an_indented_declaration_is_a_warning():
    """`  ## H2: …` (blanks before '#') is a heading for Markdown but not a declaration
    kb reads: KB128 says so and how to write it."""
    res = parse("tree.md", "## H1: a\nStatus: 待验\n\n  ## H2: indented\nStatus: 待验\n")
    d = diag(res, "KB128")
    assert d.line == 4 and "indent" in d.message and "without the indent" in d.message
    assert [h.id for h in res.objects] == ["H1"]


def test_an_entry_numbered_as_an_earlier_one_of_its_kind_is_an_error():
    """``### 解法 1`` twice: kb verdict refuses the card and the verification records
    name an entry by its number, so the later one is KB142 at its line, naming the
    earlier and a free number. Numbers of different kinds are apart (证明 1, 证伪 1)."""
    problem = ("# 问题｜T\n- 状态: 求解中\n\n## 解法候选\n### 解法 1｜a｜概率0.5｜状态未定论\n"
               "### 解法 02｜b｜概率0.5｜状态未定论\n### 解法 1｜c｜概率0.5｜状态未定论\n"
               "### 解法 2｜d｜概率0.5｜状态未定论\n")
    res = parse("Problems/q1.md", problem)
    got = [(d.line, d.severity, d.fix) for d in res.diagnostics if d.code == "KB142"]
    assert got == [(7, "error", None), (8, "error", None)]
    first, second = [d.message for d in res.diagnostics if d.code == "KB142"]
    assert "'解法 1'" in first and "line 5" in first and "'解法 3' is free" in first
    assert "'解法 2'" in second and "line 6" in second and "'解法 4' is free" in second
    assert [e.number for e in res.objects[0].entries] == [1, 2, 1, 2]  # all read, as before
    propo = ("# 命题｜T\n- 状态: 未定论\n- 概率: 0.5\n\n## 证明尝试\n### 证明 1｜a｜概率0.5｜状态未定论\n\n"
             "## 证伪尝试\n### 证伪 1｜b｜概率0.5｜状态未定论\n")
    assert not [d for d in parse("Propos/p1.md", propo).diagnostics if d.code == "KB142"]


def test_a_tree_frontmatter_naming_no_hypothesis_of_the_file_is_a_warning():
    """tree.md's frontmatter ``id:`` says which hypothesis its fields are about; naming
    one the file does not declare, they apply to none: KB109 at the id line (they
    were dropped silently before). Naming one, or giving no id, is quiet."""
    body = "## H1: a\nStatus: 待验\n\n## H2: b\nStatus: 待验\n"
    res = parse("tree.md", "---\ntitle: T\nid: H9\n---\n" + body)
    d = diag(res, "KB109")
    assert (d.line, d.severity) == (3, "warning") and "'id: H9'" in d.message
    assert all(not h.frontmatter for h in res.objects)
    res = parse("tree.md", "---\nid: H2\nowner: ann\n---\n" + body)
    assert not [x for x in res.diagnostics if x.code == "KB109"]
    assert [h.frontmatter for h in res.objects] == [{}, {"id": "H2", "owner": "ann"}]
    assert not [x for x in parse("tree.md", "---\ntitle: T\n---\n" + body).diagnostics
                if x.code == "KB109"]
    for fm, says in (("id:", "'id:' is empty"), ("id: [H1, H2]", "'id' is a list, not one hypothesis ID"),
                     ("id: {a: 1}", "'id' is a mapping")):
        d = diag(parse("tree.md", f"---\nowner: ann\n{fm}\n---\n" + body), "KB109")
        assert d.line == 3 and says in d.message, d.message


@pytest.mark.parametrize("number", ["²", "①", "½"])
def test_an_entry_number_in_digits_that_are_no_decimal_digits_is_malformed_not_a_crash(number):
    """``str.isdigit`` is true of '²' and '①', which ``int`` refuses: an entry numbered so
    was an internal error. It is a malformed entry line (KB122), as any other
    number kb cannot read, and the light reading refuses the card likewise. So are
    decimal digits other than ASCII's (an Arabic-Indic 3, a full-width 3), which
    ``int`` reads but the record's other readers do not (0.1.11)."""
    from kb.parse.light import light_card

    text = (f"# 问题｜T\n- 状态: 求解中\n\n## 解法候选\n### 解法 {number}｜t｜概率0.5｜状态未定论\n"
            "### 解法 ٣｜u｜概率0.5｜状态未定论\n### 解法 ３｜v｜概率0.5｜状态未定论\n"
            "### 解法 4｜w｜概率０.５｜状态未定论\n")
    res = parse("Problems/q1.md", text)
    assert [d.line for d in res.diagnostics if d.code == "KB122"] == [5, 6, 7]
    assert [(d.line, d.code) for d in res.diagnostics if d.code == "KB123"] == [(8, "KB123")]
    assert res.objects[0].entries == ()
    assert light_card("Problems/q1.md", "0" * 40, text.encode(), "problem") is None
    from kb.research.dependencies import natural_key

    assert sorted([f"q{number}", "q10", "q2"], key=natural_key)[:2] == ["q2", "q10"]
