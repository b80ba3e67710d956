"""The three public files of ``shared/cases/real/`` (cases/README.md, "Real files").

They are not in kb's canonical format; the point is that kb reads what can be
read, reports the rest in a bounded way, and never crashes.
"""

from __future__ import annotations

from pathlib import Path

from conftest import config_for
from kb.parse import parse_file

TEAMFLINT = "teamflint__HYPOTHESES.md"
SLIDERULE = "Protonk__SlideRule__HYPOTHESES.md"
KEXIN = "kexin94yyds__cunzhi-knowledge__problems.md"

#: (id, line) of every declaration heading of the teamflint file, in file order.
TEAMFLINT_DECLS = [("H006", 52), ("H001", 63), ("H002", 71), ("H001", 81), ("H002", 88),
                   ("H004", 97), ("H003", 106), ("H005", 117), ("H005", 125)]
#: Lines 24-44 hold the fenced ASCII tree (H001…H006 again).
TEAMFLINT_FENCE = range(24, 45)

SLIDERULE_HEADINGS = [("K1", 20), ("K1a", 28), ("K1b", 44), ("K1c", 66), ("K2", 138),
                      ("K3", 169), ("H1", 204), ("H1a", 240), ("H1b", 258), ("H1c", 277),
                      ("H1d", 298), ("H2", 321), ("H3", 330), ("H4", 339)]
SLIDERULE_TOML = '[kb]\nid_grammar = "[HK][0-9]+[a-z]?"\nheading_separators = ["."]\n'

KEXIN_TOML = """[kb]

[[registry]]
path = "problems.md"
heading = '^## (?P<id>P-\\d{4}-\\d{3}) (?P<title>.+)$'
"""
KEXIN_RECORDS = [("P-2024-007", 38), ("P-2024-006", 53), ("P-2024-002", 66), ("P-2024-004", 78),
                 ("P-2024-003", 90), ("P-2024-005", 102), ("P-2024-001", 120)]
KEXIN_SQL_FENCE = range(110, 116)


# -- teamflint: duplicates and a fenced ASCII tree ------------------------------------


def test_teamflint_parses_duplicates_and_ignores_fence(case_bytes):
    """teamflint as tree.md: nine declarations (H001, H002, H005 twice each), none in the fence."""
    res = parse_file("tree.md", case_bytes(TEAMFLINT), config_for(Path("/kb")))
    assert [(h.id, h.line) for h in res.objects] == TEAMFLINT_DECLS
    assert not [h for h in res.objects if h.line in TEAMFLINT_FENCE]
    assert res.objects[1].statement == "结构化数据工具优于文本解析"
    # No status line sits under these headings: one KB115 per declaration, nothing unbounded.
    assert sorted((d.code, d.line) for d in res.diagnostics) == sorted(
        ("KB115", line) for _, line in TEAMFLINT_DECLS)


def test_teamflint_duplicates_visible_in_index_and_show(case_bytes, make_kb, run_kb):
    """teamflint as tree.md in a KB: ``kb index`` does not crash; ``kb show H001 --json`` gives
    two declarations with their lines (63, 81); H002 and H005 likewise; H004 only once."""
    root = make_kb({"tree.md": case_bytes(TEAMFLINT)}, commit=True)
    r = run_kb("index", "--json", cwd=root)
    assert r.code == 1  # KB115: no Status line under any heading
    assert r.json()["counts"] == {"hypotheses": 9}
    assert {d["code"] for d in r.json()["diagnostics"]} == {"KB115"}
    for hid, lines in {"H001": [63, 81], "H002": [71, 88], "H005": [117, 125]}.items():
        r = run_kb("show", hid, "--json", cwd=root)
        assert r.code == 0
        found = r.json()
        assert found["id"] == hid and found["line"] == lines[0]
        assert [(d["kind"], d["path"], d["line"]) for d in found["declarations"]] == [
            ("hypothesis", "tree.md", ln) for ln in lines]
    r = run_kb("show", "H001", cwd=root)
    assert "declared 2 times" in r.stderr
    assert "tree.md:63" in r.stdout and "tree.md:81" in r.stdout
    h4 = run_kb("show", "H004", "--json", cwd=root).json()
    assert isinstance(h4, dict) and h4["line"] == 97

    from kb.index import Index
    from kb.repo import open_kb

    with Index(open_kb(root)) as idx:
        idx.refresh()
        assert [(row.id, row.line) for row in idx.objects("hypothesis")] == TEAMFLINT_DECLS
        assert [row.line for row in idx.get("H005")] == [117, 125]


# -- SlideRule: another ID grammar ---------------------------------------------------------


def test_sliderule_default_grammar_one_bounded_report(case_bytes):
    """SlideRule with the default grammar: no declaration and exactly one KB116 warning that
    counts the 14 look-alike headings, names the first ones and points at kb.toml."""
    res = parse_file("tree.md", case_bytes(SLIDERULE), config_for(Path("/kb")))
    assert res.objects == ()
    [d] = res.diagnostics
    assert (d.code, d.severity, d.line) == ("KB116", "warning", 20)
    assert "14 heading(s)" in d.message
    assert "'K1.' at line 20" in d.message
    assert "id_grammar" in d.message
    assert len(d.message) < 600


def test_lookalike_report_stays_bounded_for_big_files():
    """5,000 ``### K<n>. title`` headings, each followed by a blank line and ``Status: …``:
    still one diagnostic of bounded length (never one line per heading)."""
    parts = ["# Hypotheses", ""]
    for n in range(1, 5001):
        parts += [f"### K{n}. Claim number {n}", "", f"Status: supported ({n})", "", "Prose.", ""]
    res = parse_file("tree.md", "\n".join(parts).encode(), config_for(Path("/kb")))
    assert res.objects == ()
    assert [d.code for d in res.diagnostics] == ["KB116"]
    assert "5000 heading(s)" in res.diagnostics[0].message
    assert len(res.diagnostics[0].message) < 600


def test_sliderule_configured_grammar_reads_declarations(case_bytes):
    """SlideRule with ``id_grammar = "[HK][0-9]+[a-z]?"`` and ``heading_separators = ["."]``:
    K1, K1a, … H4 are read with their lines and titles; no KB116."""
    cfg = config_for(Path("/kb"), {"kb": {"id_grammar": "[HK][0-9]+[a-z]?",
                                          "heading_separators": ["."]}})
    res = parse_file("tree.md", case_bytes(SLIDERULE), cfg)
    assert [(h.id, h.line) for h in res.objects] == SLIDERULE_HEADINGS
    assert res.objects[0].statement == "Geometric partitions outperform uniform partitions for power-law targets"
    assert res.objects[1].level == 3
    assert "KB116" not in {d.code for d in res.diagnostics}


def test_sliderule_in_kb_both_ways(case_bytes, make_kb, run_kb):
    """SlideRule as tree.md: default kb.toml -> 0 hypotheses, one KB116 line; configured
    kb.toml -> the 14 declarations through ``kb ls hypotheses --json``."""
    plain = make_kb({"tree.md": case_bytes(SLIDERULE)}, commit=True)
    r = run_kb("index", cwd=plain)
    assert r.code == 0
    assert r.stdout.count("\n") == 1 and "KB116" in r.stdout
    assert run_kb("ls", "hypotheses", "--json", cwd=plain).json() == {
        "kind": "hypotheses", "status": None, "count": 0, "objects": []}

    configured = make_kb({"tree.md": case_bytes(SLIDERULE)}, config=SLIDERULE_TOML, commit=True)
    r = run_kb("index", "--json", cwd=configured)
    assert r.json()["counts"] == {"hypotheses": 14}
    assert "KB116" not in {d["code"] for d in r.json()["diagnostics"]}
    listed = run_kb("ls", "hypotheses", "--json", cwd=configured).json()
    assert [(h["id"], h["line"]) for h in listed["objects"]] == SLIDERULE_HEADINGS


# -- kexin94yyds: a registry of problem records -----------------------------------------------


def _kexin_config():
    return config_for(Path("/kb"), {"registry": [{
        "path": "problems.md", "heading": r"^## (?P<id>P-\d{4}-\d{3}) (?P<title>.+)$"}]})


def test_kexin_records_are_readable(case_bytes):
    """kexin problems.md via a ``[[registry]]``: seven records in file order (IDs out of order),
    titles and English status words under Chinese keys; the schema section is not a record."""
    res = parse_file("problems.md", case_bytes(KEXIN), _kexin_config())
    assert res.kind == "registry"
    assert [(r.id, r.line) for r in res.objects] == KEXIN_RECORDS
    rec = {r.id: r for r in res.objects}
    assert rec["P-2024-007"].title == "笔记窗口 Cmd+B 加粗时画面跳动"
    assert rec["P-2024-006"].status == "open"
    assert rec["P-2024-006"].anchors["备注"].startswith("acemcp 是基于")
    assert rec["P-2024-001"].status == "verified"
    assert rec["P-2024-005"].anchors["日期"] == "2024-12-14"
    assert all(r.kind == "record" for r in res.objects)


def test_kexin_fullwidth_colons_are_warnings(case_bytes):
    """kexin: every ``- key：value`` line of a record gets one KB110 warning with a fix, and
    nothing else is reported."""
    res = parse_file("problems.md", case_bytes(KEXIN), _kexin_config())
    anchor_lines = sorted(ln for r in res.objects for ln in r.anchor_lines.values())
    assert len(anchor_lines) == 64
    assert {d.code for d in res.diagnostics} == {"KB110"}
    assert all(d.severity == "warning" and d.fix is not None for d in res.diagnostics)
    assert sorted(d.line for d in res.diagnostics) == anchor_lines
    first = min(res.diagnostics, key=lambda d: d.line)
    assert (first.line, first.fix.old, first.fix.new) == (
        40, "- 项目：RI (Replace-Information)", "- 项目: RI (Replace-Information)")


def test_kexin_nothing_read_from_the_sql_fence(case_bytes):
    """kexin: the SQL fence of P-2024-005 (lines 110-115) contributes no anchor and no record."""
    res = parse_file("problems.md", case_bytes(KEXIN), _kexin_config())
    p5 = {r.id: r for r in res.objects}["P-2024-005"]
    assert list(p5.anchors) == ["项目", "仓库", "发生版本", "现象", "根因", "修复", "回归检查",
                                "状态", "日期"]
    used = {ln for r in res.objects for ln in r.anchor_lines.values()} | {r.line for r in res.objects}
    assert not used & set(KEXIN_SQL_FENCE)
    assert not [v for r in res.objects for v in r.anchors.values() if "CREATE" in v or "POLICY" in v]
    # The schema example section (lines 8-32) gives nothing either.
    assert min(used) == 38


def test_registry_fence_is_masked_whatever_it_holds():
    """A registry file whose fence holds a record heading and ``- 状态：`` lines at column 0:
    the fenced lines are neither records nor anchors."""
    text = "\n".join([
        "# Registry", "",
        "## P-2025-001 Real record", "- 状态：open", "- 修复：",
        "```text", "## P-2099-999 Fake record in a fence", "- 状态：fake", "```",
        "- 日期：2025-01-02", "",
        "~~~", "- 备注：fake", "~~~", "",
    ]) + "\n"
    res = parse_file("problems.md", text.encode(), _kexin_config())
    assert [(r.id, r.line) for r in res.objects] == [("P-2025-001", 3)]
    assert res.objects[0].anchors == {"状态": "open", "修复": "", "日期": "2025-01-02"}
    assert sorted(d.line for d in res.diagnostics) == [4, 5, 10]


def test_kexin_in_kb(case_bytes, make_kb, run_kb):
    """kexin problems.md with the ``[[registry]]`` kb.toml: ``kb index`` exits 0 (warnings only),
    ``kb ls records`` lists seven, ``kb show P-2024-005 --json`` has its anchors."""
    root = make_kb({"problems.md": case_bytes(KEXIN)}, config=KEXIN_TOML, commit=True)
    r = run_kb("index", "--json", cwd=root)
    assert r.code == 0, r.stdout
    out = r.json()
    assert out["counts"] == {"records": 7}
    assert out["errors"] == 0
    assert {d["code"] for d in out["diagnostics"]} == {"KB110"}
    listed = run_kb("ls", "records", "--json", cwd=root).json()
    assert sorted(x["id"] for x in listed["objects"]) == sorted(i for i, _ in KEXIN_RECORDS)
    shown = run_kb("show", "P-2024-005", "--json", cwd=root).json()
    assert shown["line"] == 102 and shown["anchors"]["状态"] == "verified"
