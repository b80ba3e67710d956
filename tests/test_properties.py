"""Property-based tests (hypothesis).

- Any bytes or text, in any format, parse without an exception.
- Valid generated objects rendered by ``kb.render`` parse back to the same fields.
- ``Document`` splits and joins any UTF-8 file byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from conftest import config_for
from kb.model import Entry, Hypothesis, Problem, Proposition, validate
from kb.parse import FORMATS, parse_file
from kb.render.card import render_card
from kb.render.document import Document
from kb.render.tree import render_tree
from kb.vocab import ENTRY_STATUS, HYPOTHESIS_STATUS, PROBLEM_SOURCE, PROBLEM_STATUS, PROPOSITION_STATUS

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

CONFIG = config_for(Path("/kb"), {"registry": [{"path": "problems.md"}]})
#: A path of each format (the registry path is configured above).
PATHS = {
    "tree": "tree.md", "experiment": "experiments/E001.md", "dashboard": "DASHBOARD.md",
    "problem": "Problems/q1.md", "proposition": "Propos/数论/p1.md", "method": "Methods/m1.md",
    "verified": "Verified/命题/p1.md", "direction": "Progress/q1/d1.md",
    "progress": "Progress/q1.md", "registry": "problems.md", "other": "Notes/x.md",
    "misplaced": "Problems/sub/q1.md",
}
ALL_FORMATS = (*FORMATS, "other")

# Fragments real files are made of, including every trap the cases name.
FRAGMENTS = [
    "---", "...", "```", "~~~", "<!--", "-->", "<div>", "    ", "\t", "＃＃ ", "##H3: x",
    "# Hypothesis Tree", "## H1: 数据加载", "### H1.1: x", "#### H1.1.1：y", "## K1. Title",
    "#### [H001: 链接](a.md)", "Status: 待验", "Status：进行中", "**状态：**待验", "Evidence: E001，E002",
    "Children: H1.1、H1.2", "Parent: H1", "Parent:", "id: H1", "on: yes", "content: x",
    "title: a: b", "status: 被支持", "? [a]", ": b", "[x]: y", "{a: b}: c", "key: &a [1, *a]",
    "# E001: H1 - act", "**Hypothesis**: H1 x", "**Date**: 2026-13-45", "**Status**: 已完成",
    "## 结果", "**结论**: 支持 — 好", "**结论**：推翻", "# 问题｜标题", "# 命题｜t", "# 方法｜m",
    "# 已验证｜v", "- 标题: t", "- ID: q1", "- 状态: 求解中", "- 优先级: never", "- 优先级: x",
    "- 依赖: [\"q1\",\"p2\"]", "- 依赖: q1, p2", "- 依赖: [1,", "- 依赖:", "- 概率: 1e-7",
    "- 概率: nan", "- 概率: 1.5", "- 价值/关键性: -0", "## 陈述", "## 解法候选", "## 证明尝试",
    "### 解法 1｜t\\｜u｜概率0.9｜状态未定论", "### 证明 2｜a｜概率x｜状态已验", "### 证伪 ｜｜｜",
    "### 应用 1｜2026-01-01 00:00:00｜问题 q1 方向 d1", "# 研究方向日志｜q1 / d1",
    "- 存活率: 0.6；状态: active；轮次: 2", "- 引理索引: (p-1) (p2)", "## Next Steps",
    "## P-2024-001 记录", "- 状态：open", "\ufeff", "\r", "", " ", "\\", "｜", "：", "\u2028",
]

md_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=40
).map("\n".join)
line_end = st.sampled_from(["\n", "\r\n"])


def _check(fmt: str, data: bytes) -> None:
    res = parse_file(PATHS[fmt], data, CONFIG, fmt=fmt)
    assert res.path == PATHS[fmt]
    for d in res.diagnostics:
        assert d.line >= 0 and d.path == PATHS[fmt]
    for obj in res.objects:
        # Serialisable for the index, and valid: the index turns rows back into models.
        assert type(obj).from_json(obj.to_json()) == obj
        assert validate(type(obj), json.loads(obj.to_json())) == obj


# -- parsing never raises ---------------------------------------------------------------


@SETTINGS
@given(fmt=st.sampled_from(ALL_FORMATS), text=st.text())
def test_any_text_parses(fmt, text):
    """Any Unicode text, in any format: a ParseResult, never an exception."""
    _check(fmt, text.encode("utf-8", "surrogatepass"))


@SETTINGS
@given(fmt=st.sampled_from(ALL_FORMATS), data=st.binary())
def test_any_bytes_parse(fmt, data):
    """Any bytes (invalid UTF-8 included), in any format: never an exception."""
    _check(fmt, data)


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(fmt=st.sampled_from(ALL_FORMATS), text=md_text, nl=line_end, bom=st.booleans(),
       fm=st.booleans())
@example(fmt="tree", text="a: 1\n? [x]\n: y", nl="\n", bom=False, fm=True)
@example(fmt="problem", text="a: 1\n{b: c}: z", nl="\n", bom=True, fm=True)
@example(fmt="tree", text="\"on\": 1\n---\n## H1: x\nStatus: 待验", nl="\r\n", bom=True, fm=True)
def test_markdownish_text_parses(fmt, text, nl, bom, fm):
    """Lines built from the fragments real files hold (frontmatter, fences, anchors, entry
    lines, full-width forms), with LF or CRLF, BOM or not: never an exception."""
    body = ("---\n" + text if fm else text).replace("\n", nl)
    _check(fmt, (b"\xef\xbb\xbf" if bom else b"") + body.encode("utf-8", "surrogatepass"))


# -- render -> parse is the identity -----------------------------------------------------

_NO_BREAK = st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"))
one_line = st.text(_NO_BREAK, max_size=30).map(str.strip)


def _safe_line(s: str) -> bool:
    """A prose line that cannot start a heading, fence, HTML block or indented code."""
    return not s.startswith(("#", "`", "~", "<", "    ", "\t", "＃"))


prose = st.lists(one_line.filter(_safe_line), max_size=4).map(lambda ls: "\n".join(ls).strip())
hyp_id = st.lists(st.integers(1, 30), min_size=1, max_size=8).map(
    lambda ns: "H" + ".".join(map(str, ns)))
exp_id = st.integers(1, 9999).map(lambda n: f"E{n:03d}")
card_id = st.from_regex(r"[a-z][a-z0-9]{0,6}(-[0-9a-f]{4})?", fullmatch=True)


@st.composite
def hypotheses(draw):
    ids = draw(st.lists(hyp_id, min_size=1, max_size=8, unique=True))
    out = []
    for hid in ids:
        parent = hid.rsplit(".", 1)[0] if "." in hid else None
        out.append(Hypothesis(
            id=hid, path="tree.md", line=1, statement=draw(one_line),
            status=draw(st.sampled_from(list(HYPOTHESIS_STATUS.zh_to_en))), level=hid.count(".") + 2,
            evidence=tuple(draw(st.lists(exp_id, max_size=4))),
            children=tuple(draw(st.lists(hyp_id, max_size=3))), parent=parent))
    return out


def _hyp_fields(h: Hypothesis):
    return (h.id, h.statement, h.status, h.level, h.evidence, h.children, h.parent)


@SETTINGS
@given(hyps=hypotheses(), locale=st.sampled_from(["zh", "en"]), nl=line_end)
def test_tree_render_parse_round_trip(hyps, locale, nl):
    """Generated hypotheses -> render_tree (zh or en words, LF or CRLF) -> parse: same id,
    statement, canonical status, level, evidence, children and parent; no diagnostic."""
    text = render_tree(hyps, locale=locale).replace("\n", nl)
    res = parse_file("tree.md", text.encode("utf-8"), CONFIG)
    assert [d.format() for d in res.diagnostics] == []
    assert [_hyp_fields(h) for h in res.objects] == [_hyp_fields(h) for h in hyps]


# No NUL: a NUL byte in a Markdown file is a diagnostic of its own (KB107, issue 11).
field_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x00"),
                     max_size=20)
probability = st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1.0, 0.5, 1e-7, 0.999]))


@st.composite
def entries(draw, kinds: tuple[str, ...]):
    out = []
    for kind in kinds:
        for n in range(1, draw(st.integers(0, 3)) + 1):
            out.append(Entry(kind=kind, number=n, title=draw(field_text),
                             probability=draw(probability),
                             status=draw(st.one_of(st.sampled_from(ENTRY_STATUS), field_text)),
                             line=0, text=draw(prose)))
    return tuple(out)


priority = st.one_of(st.integers(-5, 100), st.just("never"))


@st.composite
def problems(draw):
    return Problem(
        id=draw(card_id), path="", line=1, title=draw(one_line.filter(bool)),
        status=draw(st.sampled_from(PROBLEM_STATUS)), priority=draw(priority),
        depends=tuple(draw(st.lists(card_id, max_size=3))),
        depended_by=tuple(draw(st.lists(card_id, max_size=3))),
        source=draw(st.sampled_from(PROBLEM_SOURCE)), plan=draw(one_line),
        statement=draw(prose), entries=draw(entries(("解法",))))


@st.composite
def propositions(draw):
    return Proposition(
        id=draw(card_id), path="", line=1, title=draw(one_line.filter(bool)),
        status=draw(st.sampled_from(PROPOSITION_STATUS)), probability=draw(probability),
        value=draw(probability), priority=draw(priority),
        depends=tuple(draw(st.lists(card_id, max_size=3))),
        source_problem=draw(st.one_of(st.just(""), card_id)),
        statement=draw(prose), entries=draw(entries(("证明", "证伪"))))


def _entry_fields(entries):
    return [(e.kind, e.number, e.title, e.probability, e.status, e.text) for e in entries]


@SETTINGS
@given(p=problems())
def test_problem_card_round_trip(p):
    """A generated Problem -> render_card -> parse: same id, title, status, priority, lists,
    source, plan, statement and entries (kind, number, title, probability, status, text)."""
    path = f"Problems/{p.id}.md"
    res = parse_file(path, render_card(p).encode("utf-8"), CONFIG)
    assert [d.format() for d in res.diagnostics] == []
    [q] = res.objects
    assert (q.id, q.title, q.status, q.priority, q.depends, q.depended_by, q.source, q.plan,
            q.statement) == (p.id, p.title, p.status, p.priority, p.depends, p.depended_by,
                             p.source, p.plan, p.statement)
    assert _entry_fields(q.entries) == _entry_fields(p.entries)


@SETTINGS
@given(p=propositions(), category=st.sampled_from(["数论", "algebra", "a b"]))
def test_proposition_card_round_trip(p, category):
    """A generated Proposition -> render_card -> parse: same fields, category from its folder,
    proof entries then refutation entries."""
    path = f"Propos/{category}/{p.id}.md"
    res = parse_file(path, render_card(p).encode("utf-8"), CONFIG)
    assert [d.format() for d in res.diagnostics] == []
    [q] = res.objects
    assert (q.id, q.title, q.status, q.probability, q.value, q.priority, q.depends,
            q.source_problem, q.statement, q.category) == (
        p.id, p.title, p.status, p.probability, p.value, p.priority, p.depends,
        p.source_problem, p.statement, category)
    assert _entry_fields(q.entries) == _entry_fields(p.entries)


@SETTINGS
@given(p=problems())
def test_rendered_card_is_stable(p):
    """render(parse(render(x))) == render(x): a parsed card renders to the same bytes."""
    text = render_card(p)
    [q] = parse_file(f"Problems/{p.id}.md", text.encode(), CONFIG).objects
    assert render_card(q) == text


@SETTINGS
@given(hyps=hypotheses())
def test_rendered_tree_is_stable(hyps):
    """render_tree(parse(render_tree(x))) == render_tree(x)."""
    text = render_tree(hyps)
    again = parse_file("tree.md", text.encode(), CONFIG).objects
    assert render_tree(list(again)) == text


# -- Document round trip ------------------------------------------------------------------


@SETTINGS
@given(text=st.text(st.characters(blacklist_categories=("Cs",))), bom=st.booleans(),
       crlf=st.booleans(), final_newline=st.sampled_from([None, True, False]))
@example(text="", bom=True, crlf=False, final_newline=None)
@example(text="a\r\r\nb\rc", bom=False, crlf=False, final_newline=False)
@example(text="\ufeff\ufeffx", bom=True, crlf=True, final_newline=True)
def test_document_bytes_round_trip(text, bom, crlf, final_newline):
    """Document.from_bytes(b).to_bytes() == b for any UTF-8 text, with or without BOM,
    CRLF line ends, with or without a final newline (mixed endings included)."""
    if crlf:
        text = text.replace("\n", "\r\n")
    if final_newline is True and not text.endswith("\n"):
        text += "\r\n" if crlf else "\n"
    elif final_newline is False:
        text = text.rstrip("\r\n")
    data = (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
    doc = Document.from_bytes(data, "x.md")
    assert doc.to_bytes() == data
    assert doc.bom == bom


@SETTINGS
@given(lines=st.lists(one_line, min_size=1, max_size=10), crlf=st.booleans(),
       final_newline=st.booleans(), data=st.data())
def test_document_edit_touches_one_line(lines, crlf, final_newline, data):
    """Replacing line k changes exactly that line's text; every other byte (endings, BOM,
    missing final newline) stays."""
    assume(final_newline or lines[-1] != "")  # "a\n" + "" is one line, not two
    nl = "\r\n" if crlf else "\n"
    text = nl.join(lines) + (nl if final_newline else "")
    raw = b"\xef\xbb\xbf" + text.encode()
    k = data.draw(st.integers(1, len(lines)))
    doc = Document.from_bytes(raw, "x.md")
    doc.replace(k, "EDITED")
    expected = list(lines)
    expected[k - 1] = "EDITED"
    assert doc.to_bytes() == b"\xef\xbb\xbf" + (nl.join(expected) + (nl if final_newline else "")).encode()


@SETTINGS
@given(lines=st.lists(one_line, max_size=8), crlf=st.booleans(), final_newline=st.booleans(),
       bom=st.booleans())
def test_document_append_keeps_every_byte_before(lines, crlf, final_newline, bom):
    """Appending a line: the old bytes stay a prefix; a missing final newline is added first,
    in the file's own style; the new line ends with it too."""
    nl = "\r\n" if crlf else "\n"
    text = nl.join(lines) + (nl if final_newline and lines else "")
    raw = (b"\xef\xbb\xbf" if bom else b"") + text.encode()
    doc = Document.from_bytes(raw, "x.md")
    doc.append(["NEW"])
    out = doc.to_bytes()
    missing = bool(text) and not text.endswith("\n")
    expected_nl = nl if "\n" in text else "\n"  # a file without any line end: LF
    assert out.startswith(raw)
    assert out[len(raw):] == ((expected_nl if missing else "") + "NEW" + expected_nl).encode()
