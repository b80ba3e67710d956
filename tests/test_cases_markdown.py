"""The anchor and heading cases of ``shared/cases/inputs/MD-*`` (cases/README.md).

Each file is parsed as ``tree.md`` (MD-06 also as an experiment); some go
through a real KB and ``kb index`` / ``kb show`` / ``kb ls``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import config_for
from kb.model import Diagnostic
from kb.parse import parse_file


def parse(data: bytes, path: str = "tree.md", fmt: str | None = "tree", extra: dict | None = None):
    return parse_file(path, data, config_for(Path("/kb"), extra), fmt=fmt)


def codes(result) -> list[tuple[str, int, str]]:
    return sorted((d.code, d.line, d.severity) for d in result.diagnostics)


def apply_fixes(data: bytes, diags: tuple[Diagnostic, ...]) -> bytes:
    """Apply every fix (from the bottom up, as ``kb verify --fix`` would)."""
    lines = data.decode("utf-8").split("\n")
    for d in sorted((d for d in diags if d.fix), key=lambda d: -d.fix.line):
        assert lines[d.fix.line - 1] == d.fix.old, d
        lines[d.fix.line - 1] = d.fix.new
    return "\n".join(lines).encode("utf-8")


# -- MD-01 setext trap -------------------------------------------------------------


def test_md01_setext_trap(case_bytes):
    """MD-01: ``Evidence: E001`` directly followed by ``---``: H1 keeps Status 待验 and
    Evidence [E001]; no phantom object; a KB114 warning at line 6 suggests a blank line."""
    res = parse(case_bytes("MD-01"))
    got = [(h.id, h.line, h.status, h.evidence) for h in res.objects]
    assert got == [("H1", 3, "待验", ("E001",)), ("H2", 7, "进行中", ("E002",))]
    assert codes(res) == [("KB114", 6, "warning")]
    [d] = res.diagnostics
    assert "blank line" in d.message
    assert d.fix.old == "---" and d.fix.new == "\n---"


def test_md01_fix_removes_the_warning(case_bytes):
    """MD-01 with the KB114 fix applied: same hypotheses (H2 one line lower), no diagnostic."""
    data = case_bytes("MD-01")
    fixed = parse(apply_fixes(data, parse(data).diagnostics))
    assert fixed.diagnostics == ()
    assert [(h.id, h.line, h.status, h.evidence) for h in fixed.objects] == [
        ("H1", 3, "待验", ("E001",)), ("H2", 8, "进行中", ("E002",))]


# -- MD-02 bold anchors ----------------------------------------------------------------


def test_md02_bold_anchors_are_errors_with_fixes(case_bytes):
    """MD-02: ``**状态：**待验``, ``**Evidence:**E001``, ``**Status**: 进行中`` -> KB111 errors at
    lines 2, 3, 6 with fixes; the values are still recovered."""
    res = parse(case_bytes("MD-02"))
    assert codes(res) == [("KB111", 2, "error"), ("KB111", 3, "error"), ("KB111", 6, "error")]
    assert {d.line: d.fix.new for d in res.diagnostics} == {
        2: "Status: 待验", 3: "Evidence: E001", 6: "Status: 进行中"}
    assert all(d.path == "tree.md" for d in res.diagnostics)
    got = [(h.id, h.line, h.status, h.evidence) for h in res.objects]
    assert got == [("H1", 1, "待验", ("E001",)), ("H2", 5, "进行中", ())]


def test_md02_fixed_file_is_clean(case_bytes):
    """MD-02 after the fixes: no diagnostic, the same values."""
    data = case_bytes("MD-02")
    fixed = parse(apply_fixes(data, parse(data).diagnostics))
    assert fixed.diagnostics == ()
    assert [(h.id, h.status, h.evidence) for h in fixed.objects] == [
        ("H1", "待验", ("E001",)), ("H2", "进行中", ())]


def test_md02_values_reach_the_index(case_bytes, make_kb, run_kb):
    """MD-02 as tree.md: ``kb index`` exits 1 (format errors) yet ``kb show H1`` has 待验 / E001."""
    root = make_kb({"tree.md": case_bytes("MD-02")}, commit=True)
    r = run_kb("index", "--json", cwd=root)
    assert r.code == 1
    assert sorted((d["line"], d["code"]) for d in r.json()["diagnostics"]) == [
        (2, "KB111"), (3, "KB111"), (6, "KB111")]
    h1 = run_kb("show", "H1", "--json", cwd=root).json()
    assert (h1["status"], h1["evidence"]) == ("待验", ["E001"])


# -- MD-03 code and HTML blocks ----------------------------------------------------------


def test_md03_only_h1_exists(case_bytes):
    """MD-03: H9 in a fence, H8 in an HTML comment, H7 4-space and H6 tab indented: only H1."""
    res = parse(case_bytes("MD-03"))
    assert [(h.id, h.line, h.status) for h in res.objects] == [("H1", 18, "待验")]
    assert res.diagnostics == ()


@pytest.mark.parametrize("variant", ["crlf", "frontmatter", "bom+crlf+frontmatter"])
def test_md03_masking_survives_line_ends_and_frontmatter(case_bytes, variant):
    """MD-03 with CRLF ends and/or frontmatter before it: still only H1, at its shifted line."""
    data = case_bytes("MD-03")
    shift = 0
    if "frontmatter" in variant:
        data = b"---\nid: H1\n---\n" + data
        shift = 3
    if "crlf" in variant:
        data = data.replace(b"\n", b"\r\n")
    if "bom" in variant:
        data = b"\xef\xbb\xbf" + data
    res = parse(data)
    assert [(h.id, h.line) for h in res.objects] == [("H1", 18 + shift)]
    assert res.diagnostics == ()


def test_md03_in_kb_examples_never_count(case_bytes, make_kb, run_kb):
    """MD-03 as tree.md: the index holds H1 only; ``kb show H9`` exits 1; ``kb ls`` lists H1."""
    root = make_kb({"tree.md": case_bytes("MD-03")}, commit=True)
    assert run_kb("index", cwd=root).code == 0
    for hid in ("H6", "H7", "H8", "H9"):
        assert run_kb("show", hid, cwd=root).code == 1
    r = run_kb("ls", "hypotheses", "--json", cwd=root)
    assert [h["id"] for h in r.json()["objects"]] == ["H1"]
    # nor for reuse: the next hypothesis is H2 (not H9, nor H8/H7 after the comment and code)
    r = run_kb("hyp", "add", "The next idea", "--json", cwd=root)
    assert r.code == 0 and r.json()["ids"] == ["H2"], r.stdout + r.stderr


# -- MD-04 full-width forms ----------------------------------------------------------------


def test_md04_fullwidth_forms(case_bytes):
    """MD-04: ``H1：``/``Status：`` accepted with KB110 warnings (fixable); ``##H3:`` and
    ``＃＃ H4:`` are KB113 not-a-heading errors; ``## H2｜…`` is reported, not skipped silently."""
    res = parse(case_bytes("MD-04"))
    assert [(h.id, h.line, h.status) for h in res.objects] == [("H1", 1, "待验"), ("H1.1", 12, "待验")]
    assert res.objects[1].parent == "H1"
    by = {(d.code, d.line): d for d in res.diagnostics}
    for key in [("KB110", 1), ("KB110", 2), ("KB110", 12)]:
        assert by[key].severity == "warning" and by[key].fix is not None
    assert by[("KB110", 1)].fix.new == "## H1: 冲突稀疏度决定并行收益"
    assert by[("KB110", 2)].fix.new == "Status: 待验"
    assert by[("KB113", 6)].severity == "error"
    assert by[("KB113", 6)].fix.new == "## H3: 井号后没有空格"
    assert by[("KB113", 9)].severity == "error"
    assert by[("KB113", 9)].fix.new == "## H4: 全角井号"
    # H2 with `｜` separators: reported at its line (not read, not silently lost).
    h2 = [d for d in res.diagnostics if d.line == 4]
    assert len(h2) == 1 and "H2" in h2[0].message
    # Nothing else is an error.
    errors = sorted((d.code, d.line) for d in res.diagnostics if d.severity == "error")
    assert errors == [("KB113", 6), ("KB113", 9)]


def test_md04_after_fixes_every_heading_is_read(case_bytes):
    """MD-04 with every fix applied: H1, H3, H4 and H1.1 are declarations, no error left."""
    data = case_bytes("MD-04")
    fixed = parse(apply_fixes(data, parse(data).diagnostics))
    assert [h.id for h in fixed.objects] == ["H1", "H3", "H4", "H1.1"]
    assert all(h.status == "待验" for h in fixed.objects)
    assert not [d for d in fixed.diagnostics if d.severity == "error"]
    assert not [d for d in fixed.diagnostics if d.code in ("KB110", "KB113")]


# -- MD-05 hard break, CJK list separators ---------------------------------------------------


def test_md05_hardbreak_and_cjk_lists(case_bytes):
    """MD-05: ``Status: 待验`` + two spaces; Evidence split on , ， 、 ; ; Children on ，."""
    res = parse(case_bytes("MD-05"))
    [h1] = res.objects
    assert h1.status == "待验"
    assert h1.evidence == ("E001", "E002", "E003", "E004", "E005")
    assert h1.children == ("H1.1", "H1.2")
    assert res.diagnostics == ()


# -- MD-06 real line numbers -------------------------------------------------------------------


def test_md06_tree_lines_count_the_frontmatter(case_bytes):
    """MD-06 as a tree: the stray ``Status:`` anchor is reported at line 7 (its line on disk)."""
    res = parse(case_bytes("MD-06"))
    assert res.objects == ()
    # and KB126 (issue #11): kb reads nothing from a file with text, first at line 6
    assert [(d.code, d.line) for d in res.diagnostics] == [("KB117", 7), ("KB126", 6)]


def test_md06_experiment_lines_count_the_frontmatter(case_bytes):
    """MD-06 as experiments/E001.md: the ``## 结果`` heading is line 6 and the diagnostic says so."""
    res = parse(case_bytes("MD-06"), "experiments/E001.md", fmt="experiment")
    [exp] = res.objects
    assert exp.id == "E001" and exp.sections == ("结果",)
    # KB126 (issue #11): kb reads nothing from the file, whose plain 'Status:' line is at line 7.
    assert [(d.code, d.line) for d in res.diagnostics] == [("KB130", 6), ("KB126", 7)]


def test_md06_index_reports_real_line(case_bytes, make_kb, run_kb):
    """MD-06 as experiments/E001.md in a KB: ``kb index --json`` cites line 6."""
    root = make_kb({"experiments/E001.md": case_bytes("MD-06")}, commit=True)
    r = run_kb("index", "--json", cwd=root)
    # KB126 (issue #11) at the plain 'Status:' line, 7 on disk: kb reads nothing from the file.
    assert sorted((d["path"], d["line"], d["code"]) for d in r.json()["diagnostics"]) == [
        ("experiments/E001.md", 6, "KB130"), ("experiments/E001.md", 7, "KB126")]


@pytest.mark.parametrize("case", ["MD-01", "MD-02", "MD-03", "MD-04", "MD-05"])
@pytest.mark.parametrize("prefix", [b"---\nid: X9\n---\n\n\n", b"\xef\xbb\xbf---\r\nseq: 007\r\n---\r\n"])
def test_frontmatter_shifts_every_line_exactly(case_bytes, case, prefix):
    """Every MD case with frontmatter (and blank lines) prepended: every object and diagnostic
    line moves down by exactly the number of lines added, nothing else changes."""
    data = case_bytes(case)
    if b"\r\n" in prefix:
        data = data.replace(b"\n", b"\r\n")
    shift = prefix.count(b"\n")
    plain, shifted = parse(case_bytes(case)), parse(prefix + data)
    assert [(h.id, h.line + shift, h.status, h.evidence) for h in plain.objects] == [
        (h.id, h.line, h.status, h.evidence) for h in shifted.objects]
    got = sorted((d.code, d.line, d.col) for d in shifted.diagnostics)
    if b"id: X9" in prefix and plain.objects:  # it names no hypothesis of the file: KB109
        got.remove(("KB109", 2, 1))
    assert sorted((d.code, d.line + shift, d.col) for d in plain.diagnostics) == got


def test_heading_without_space_and_lookalike_id_is_not_a_heading_error():
    """##H3b: x — a declaration meant with an ID outside the grammar and no space
    after the hashes: KB113 (error, fixable), never silently skipped."""
    from kb.config import config_from_dict
    from kb.parse import parse_file

    cfg = config_from_dict(Path("."), {"kb": {}})
    res = parse_file("tree.md", "# Hypothesis Tree\n\n##H3b: x\nStatus: 待验\n".encode(), cfg)
    assert [(d.code, d.line, d.severity) for d in res.diagnostics if d.code == "KB113"] == [
        ("KB113", 3, "error")]
