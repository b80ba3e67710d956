"""The frontmatter cases of ``shared/cases/inputs/FM-*`` (cases/README.md).

Each case file is fed to :func:`kb.parse.parse_file` (as ``tree.md`` unless
the case says otherwise) and, for some, through a real KB and ``kb index``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import config_for
from kb.parse import parse_file
from kb.parse.frontmatter import read_frontmatter
from kb.render.document import Document
from kb.text import SourceText, decode

BOM = b"\xef\xbb\xbf"
FM_CODES = {"KB102", "KB103", "KB104", "KB105"}


def parse(data: bytes, path: str = "tree.md", fmt: str | None = "tree", extra: dict | None = None):
    return parse_file(path, data, config_for(Path("/kb"), extra), fmt=fmt)


def strings(value):
    """Every string inside a JSON-like value (keys included)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)


def codes(result) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in result.diagnostics]


# -- FM-01 BOM --------------------------------------------------------------------


def test_fm01_bom_frontmatter_is_read(case_bytes):
    """FM-01: ``EF BB BF`` then ``---`` frontmatter ``id: H1`` / ``status: 待验``."""
    data = case_bytes("FM-01")
    assert data.startswith(BOM + b"---\n")
    res = parse(data)
    assert res.meta["frontmatter"] == {"id": "H1", "status": "待验"}
    assert res.meta["bom"] is True
    assert res.diagnostics == ()
    [h1] = res.objects
    assert (h1.id, h1.status, h1.line, h1.statement) == ("H1", "待验", 6, "数据加载是训练瓶颈")
    assert h1.frontmatter == {"id": "H1", "status": "待验"}
    everything = list(strings(res.to_dict()))
    assert everything and not any("\ufeff" in s for s in everything)


def test_fm01_rewrite_keeps_bom(case_bytes):
    """FM-01: editing the Status line through Document keeps the BOM and every other byte."""
    data = case_bytes("FM-01")
    doc = Document.from_bytes(data, "tree.md")
    assert doc.bom is True
    assert doc.lines[6] == "Status: 待验"
    doc.replace(7, "Status: 进行中")
    out = doc.to_bytes()
    assert out.startswith(BOM + b"---\n")
    assert out == data.replace("Status: 待验\n".encode(), "Status: 进行中\n".encode())
    res = parse(out)
    assert res.objects[0].status == "进行中"
    assert res.meta["bom"] is True


# -- FM-02 CRLF -------------------------------------------------------------------


def test_fm02_crlf_identical_to_lf_twin(case_bytes):
    """FM-02: the FM-01 file with CRLF line ends gives the same objects as its LF twin."""
    data = case_bytes("FM-02")
    assert data.count(b"\r\n") == data.count(b"\n") > 0
    crlf = parse(data)
    lf = parse(data.replace(b"\r\n", b"\n"))
    bom_twin = parse(case_bytes("FM-01"))
    assert crlf.objects == lf.objects == bom_twin.objects
    assert crlf.diagnostics == lf.diagnostics == ()
    assert crlf.meta["frontmatter"] == lf.meta["frontmatter"] == {"id": "H1", "status": "待验"}
    assert crlf.meta["newline"] == "\r\n" and lf.meta["newline"] == "\n"
    values = list(strings([o.to_dict() for o in crlf.objects])) + list(
        strings(crlf.meta["frontmatter"]))
    assert values and not [s for s in values if "\r" in s]


def test_fm02_rewrite_keeps_crlf(case_bytes):
    """FM-02: replacing one line and appending one keeps CRLF on every line."""
    data = case_bytes("FM-02")
    doc = Document.from_bytes(data, "tree.md")
    assert doc.newline == "\r\n"
    doc.replace(7, "Status: 被支持")
    assert doc.to_bytes() == data.replace("Status: 待验\r\n".encode(), "Status: 被支持\r\n".encode())
    doc.append(["Prose after the block."])
    out = doc.to_bytes()
    assert out.endswith(b"Prose after the block.\r\n")
    assert out.count(b"\n") == out.count(b"\r\n")


# -- FM-04a/b a leading thematic break ----------------------------------------------


def test_fm04a_leading_rule_is_not_frontmatter(case_bytes):
    """FM-04a: ``---``, blank, ``**IDEA**: …`` lines, ``---``: a thematic break, not YAML."""
    data = case_bytes("FM-04a")
    text, bom = decode(data, "DASHBOARD.md")
    src = SourceText.from_text(text, "DASHBOARD.md", bom)
    fm, diags = read_frontmatter(src)
    assert (fm, diags, src.body_start) == ({}, [], 0)
    res = parse(data, "DASHBOARD.md", fmt="dashboard")
    assert "frontmatter" not in res.meta
    assert [d for d in res.diagnostics if d.severity == "error"] == []
    assert res.meta["next_steps"] is None
    as_tree = parse(data)
    # Read as a tree, its list item '- H1: …' is a hypothesis kb does not read: one KB126
    # warning (issue #11), nothing else.
    assert as_tree.objects == () and [(d.code, d.severity, d.line) for d in as_tree.diagnostics] \
        == [("KB126", "warning", 9)]


def test_fm04a_headings_after_the_rules_survive(case_bytes):
    """FM-04a plus a ``## Next Steps`` section: the section after the two rules is read."""
    data = case_bytes("FM-04a") + "\n## Next Steps\n- keep me\n".encode()
    res = parse(data, "DASHBOARD.md", fmt="dashboard")
    assert res.meta["next_steps"] == ["- keep me"]
    assert [d for d in res.diagnostics if d.severity == "error"] == []


def test_fm04_leading_rule_before_a_declaration_in_a_tree():
    """``---``, blank, ``## H1: …`` + Status, blank, ``---``: H1 is read at its own line."""
    data = "---\n\n## H1: 数据加载\nStatus: 待验\n\n---\n".encode()
    res = parse(data)
    assert [(h.id, h.status, h.line) for h in res.objects] == [("H1", "待验", 3)]
    assert res.diagnostics == ()


def test_fm04b_experiment_log_heading_survives(case_bytes):
    """FM-04b, parsed as an experiment: ``# 实验 E001`` (line 3) is the title line it reads;
    ``Hypothesis: H1`` / ``Date:`` between the rules are not metadata."""
    data = case_bytes("FM-04b")
    res = parse(data, "experiments/E001.md", fmt="experiment")
    assert "frontmatter" not in res.meta
    assert not FM_CODES & {d.code for d in res.diagnostics}
    # The heading survives at its real line: it is the line the title check looks at.
    # KB126 (issue #11): kb reads nothing from it, yet 'Hypothesis:'/'Date:' are at line 5-6.
    assert codes(res) == [("KB130", 3), ("KB126", 5)]
    [exp] = res.objects
    assert exp.id == "E001"
    assert exp.frontmatter == {}
    assert exp.hypothesis is None and exp.date is None
    assert exp.sections == ("结果",)


def test_fm04b_as_prose_gives_nothing(case_bytes):
    """FM-04b parsed as a tree: no object, no crash, and (issue #11: a non-empty file kb reads
    nothing from) one KB126 warning at its first line of text."""
    res = parse(case_bytes("FM-04b"))
    assert res.objects == ()
    assert [(d.code, d.severity, d.line) for d in res.diagnostics] == [("KB126", "warning", 5)]


# -- FM-06a empty block -------------------------------------------------------------


def test_fm06a_empty_frontmatter(case_bytes):
    """FM-06a: ``---\\n---`` then a blank line and H1: metadata is an empty mapping."""
    data = case_bytes("FM-06a")
    text, bom = decode(data, "tree.md")
    src = SourceText.from_text(text, "tree.md", bom)
    assert read_frontmatter(src) == ({}, [])
    assert src.body_start == 2
    res = parse(data)
    assert res.meta.get("frontmatter", {}) == {}
    assert res.diagnostics == ()
    [h1] = res.objects
    assert (h1.id, h1.status, h1.line, h1.frontmatter) == ("H1", "待验", 4, {})


# -- FM-08a/b awkward keys -----------------------------------------------------------


def test_fm08a_yaml11_boolean_key(case_bytes):
    """FM-08a: key ``on:`` (a boolean in YAML 1.1) -> a KB105 warning at line 2, read as 'on'."""
    res = parse(case_bytes("FM-08a"))
    assert codes(res) == [("KB105", 2)]
    [d] = res.diagnostics
    assert d.path == "tree.md" and d.severity == "warning" and "'on'" in d.message
    assert res.meta["frontmatter"] == {"on": "2026-06-16", "status": "待验"}
    [h1] = res.objects
    assert (h1.id, h1.status) == ("H1", "待验")
    # The fix quotes the key; the fixed file has no diagnostic.
    assert d.fix is not None and d.fix.line == 2 and d.fix.old == "on: 2026-06-16"
    lines = case_bytes("FM-08a").decode().split("\n")
    lines[1] = d.fix.new
    fixed = parse("\n".join(lines).encode())
    assert fixed.diagnostics == ()
    assert fixed.meta["frontmatter"]["on"] == "2026-06-16"


def test_fm08a_rest_of_kb_is_indexed(case_bytes, make_kb, run_kb):
    """FM-08a as tree.md in a KB with one experiment: both indexed, the warning names tree.md:2."""
    root = make_kb({
        "tree.md": case_bytes("FM-08a"),
        "experiments/E001.md": "# E001: H1 - 测读盘速度\n\n**Hypothesis**: H1\n**Date**: 2026-06-16\n"
                               "**Status**: 进行中\n",
    }, commit=True)
    r = run_kb("index", "--json", cwd=root)
    assert r.code == 0, r.stderr
    assert "Traceback" not in r.stderr
    out = r.json()
    assert out["counts"] == {"hypotheses": 1, "experiments": 1}
    assert [(d["path"], d["line"], d["code"]) for d in out["diagnostics"]] == [("tree.md", 2, "KB105")]


def test_fm08b_content_key(case_bytes):
    """FM-08b: key ``content:`` (python-frontmatter's own field) is an ordinary key."""
    res = parse(case_bytes("FM-08b"))
    assert res.meta["frontmatter"] == {"content": "数据加载"}
    assert res.diagnostics == ()
    assert [(h.id, h.status) for h in res.objects] == [("H1", "待验")]


# -- FM-09a unquoted ": " --------------------------------------------------------------


def test_fm09a_colon_in_value(case_bytes):
    """FM-09a: ``title: H1: 数据加载是瓶颈`` -> KB102 error at line 2 with the hint to quote."""
    res = parse(case_bytes("FM-09a"))
    [d] = res.diagnostics
    assert (d.path, d.line, d.code, d.severity) == ("tree.md", 2, "KB102", "error")
    assert "quote the value" in d.message
    assert [(h.id, h.status) for h in res.objects] == [("H1", "待验")]


def test_fm09a_in_kb_names_file_and_line(case_bytes, make_kb, run_kb):
    """FM-09a as tree.md: ``kb index`` exits 1, lists tree.md as failed, prints path:line."""
    root = make_kb({"tree.md": case_bytes("FM-09a")}, commit=True)
    r = run_kb("index", cwd=root)
    assert r.code == 1
    assert "tree.md:2:" in r.stdout and "KB102" in r.stdout
    assert "1 error(s) in 1 file(s)" in r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    r = run_kb("index", "--json", cwd=root)
    assert r.json()["failed_files"] == ["tree.md"]
    assert r.json()["counts"] == {"hypotheses": 1}


# -- FM-10 leading zeros -----------------------------------------------------------------


def test_fm10_leading_zero_ids_stay_strings(case_bytes):
    """FM-10: ``id: 010``, ``seq: 007``, ``ref: 08`` stay the strings '010', '007', '08'."""
    res = parse(case_bytes("FM-10"))
    fm = res.meta["frontmatter"]
    assert fm == {"id": "010", "seq": "007", "ref": "08"}
    assert all(type(v) is str for v in fm.values())
    assert [h.id for h in res.objects] == ["H1"]


# -- FM-12 dates ----------------------------------------------------------------------


def test_fm12_dates_are_strings(case_bytes):
    """FM-12: bare date and datetime values are kept as the strings written."""
    res = parse(case_bytes("FM-12"))
    assert res.meta["frontmatter"] == {"created": "2026-06-16", "updated": "2026-06-16 09:30:00"}
    assert res.objects[0].frontmatter == res.meta["frontmatter"]
    assert json.loads(res.objects[0].to_json())["frontmatter"] == res.meta["frontmatter"]


def test_fm12_dates_in_index_and_json(case_bytes, make_kb, run_kb):
    """FM-12 as tree.md: the index and ``kb show H1 --json`` hold ISO strings; JSON never fails."""
    root = make_kb({"tree.md": case_bytes("FM-12")}, commit=True)
    r = run_kb("index", "--json", cwd=root)
    assert r.code == 0 and r.json()["counts"] == {"hypotheses": 1}
    r = run_kb("show", "H1", "--json", cwd=root)
    assert r.code == 0
    assert r.json()["frontmatter"] == {"created": "2026-06-16", "updated": "2026-06-16 09:30:00"}
    from kb.index import Index
    from kb.repo import open_kb

    with Index(open_kb(root)) as idx:
        idx.refresh()
        assert idx.file_meta("tree.md")["frontmatter"] == {
            "created": "2026-06-16", "updated": "2026-06-16 09:30:00"}


# -- FM-14 duplicate keys -----------------------------------------------------------------


def test_fm14_duplicate_key_is_an_error(case_bytes):
    """FM-14: ``status: 待验`` then ``status: 被支持`` -> KB103 naming the key and lines 2 and 3."""
    res = parse(case_bytes("FM-14"))
    dups = [d for d in res.diagnostics if d.code == "KB103"]
    assert len(dups) == 1
    d = dups[0]
    assert (d.path, d.line, d.severity) == ("tree.md", 3, "error")
    assert "'status'" in d.message and "lines 2 and 3" in d.message
    assert [h.id for h in res.objects] == ["H1"]


# -- FM-15 GBK --------------------------------------------------------------------------


def test_fm15_gbk_is_a_diagnostic(case_bytes):
    """FM-15: GBK bytes -> KB101 'not valid UTF-8 (byte 0xb4 at offset 19)' at line 3, nothing guessed."""
    data = case_bytes("FM-15")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    for fmt in ("tree", "experiment", "problem", "dashboard", None):
        res = parse(data, fmt=fmt)
        [d] = res.diagnostics
        assert (d.path, d.line, d.code, d.severity) == ("tree.md", 3, "KB101", "error")
        assert "not valid UTF-8 (byte 0xb4 at offset 19)" in d.message
        assert res.objects == ()


def test_fm15_gbk_is_never_rewritten(case_bytes):
    """FM-15: an edit of a GBK file is refused with the same KB101 diagnostic (nothing guessed)."""
    from kb.text import DecodeError

    with pytest.raises(DecodeError) as exc:
        Document.from_bytes(case_bytes("FM-15"), "tree.md")
    assert exc.value.diagnostic.code == "KB101" and exc.value.diagnostic.line == 3


# -- a status change moves the frontmatter's status too (KB104 forbids a split) ---------------


def test_fm01_status_changes_carry_the_frontmatter(case_bytes, make_kb, run_kb):
    """FM-01 as tree.md: `kb exp new` and `kb exp result` set the frontmatter's `status:`
    with the `Status:` line; the BOM and every other byte stay; verify is clean."""
    data = case_bytes("FM-01")
    root = make_kb({"tree.md": data}, commit=True)
    r = run_kb("exp", "new", "--hyp", "H1", "测读盘速度", cwd=root)
    assert r.code == 0, r.stderr
    moved = data.replace("status: 待验".encode(), "status: 进行中".encode())
    assert (root / "tree.md").read_bytes() == moved.replace("Status: 待验".encode(), "Status: 进行中".encode())
    r = run_kb("exp", "result", "E001", "--data", "读盘占 70%", "--conclusion", "支持",
               "--reason", "瓶颈在读盘", cwd=root)
    assert r.code == 0, r.stderr
    out = (root / "tree.md").read_bytes()
    assert out.startswith(BOM + b"---\nid: H1\nstatus: \xe8\xa2\xab\xe6\x94\xaf\xe6\x8c\x81\n---\n")
    assert parse(out).diagnostics == () and parse(out).objects[0].status == "被支持"
    v = run_kb("verify", cwd=root)
    assert v.code == 0, v.stdout + v.stderr


def test_fm02_status_change_keeps_crlf_and_quotes(case_bytes, make_kb, run_kb):
    """FM-02 (CRLF) with a quoted, commented frontmatter status: `kb hyp status` keeps the
    quotes, the comment and CRLF on every line."""
    data = case_bytes("FM-02").replace(b"status: \xe5\xbe\x85\xe9\xaa\x8c\r\n",
                                       "status: '待验'  # kept in sync by kb\r\n".encode())
    assert parse(data).diagnostics == ()
    root = make_kb({"tree.md": data}, commit=True)
    r = run_kb("hyp", "status", "H1", "active", cwd=root)
    assert r.code == 0, r.stderr
    out = (root / "tree.md").read_bytes()
    assert out == data.replace("'待验'".encode(), "'进行中'".encode()).replace(
        "Status: 待验".encode(), "Status: 进行中".encode())
    assert out.count(b"\n") == out.count(b"\r\n")


def test_experiment_and_card_frontmatter_status_follow(make_kb, run_kb):
    """An experiment and a problem card with a frontmatter `status:`: `kb exp result` and
    `kb problem status` change both, and verify stays clean."""
    exp = ("---\nstatus: 进行中\n---\n# E001: H1 - 测读盘速度\n\n**Hypothesis**: H1\n"
           "**Date**: 2026-06-16\n**Status**: 进行中\n\n## 结果\n\n[待实验完成后填写]\n")
    card = ("---\nid: q1\nstatus: 求解中\n---\n# 问题｜读盘\n- 标题: 读盘\n- ID: q1\n- 类型: 问题\n"
            "- 状态: 求解中\n- 优先级: 0\n- 依赖: []\n- 被依赖: []\n- 来源: 原始\n- 计划: 待调度\n\n"
            "## 陈述\n读盘是瓶颈吗？\n\n## 解法候选\n（暂无解法候选）\n")
    root = make_kb({"tree.md": "# 假设树\n\n## H1: 读盘是瓶颈\nStatus: 进行中\nEvidence: (empty)\n",
                    "experiments/E001.md": exp, "Problems/q1.md": card}, commit=True)
    assert run_kb("dashboard", cwd=root).code == 0
    r = run_kb("exp", "result", "E001", "--data", "70%", "--conclusion", "不确定",
               "--reason", "样本太少", cwd=root)
    assert r.code == 0, r.stderr
    assert (root / "experiments/E001.md").read_text(encoding="utf-8").startswith(
        "---\nstatus: 已完成\n---\n")
    r = run_kb("problem", "status", "q1", "死路", cwd=root)
    assert r.code == 0, r.stderr
    assert "status: 死路\n" in (root / "Problems/q1.md").read_text(encoding="utf-8")
    v = run_kb("verify", cwd=root)
    assert v.code == 0, v.stdout + v.stderr


def test_a_yaml_tag_is_ignored_with_a_warning_at_its_line():
    """The tester's silence: `a: !!python/object:os.system ls` was read as 'ls' without a
    word. kb still reads every value as text; an explicit tag other than !!str is KB144 at
    its line (a reader honouring tags would read it otherwise; a Python tag runs code in an
    unsafe one)."""
    text = ("---\nid: H1\na: !!python/object:os.system ls\nb: !!str fine\nc: [!!int 3, x]\n"
            "d: !local y\n---\n# Tree\n")
    src = SourceText.from_text(text, "tree.md")
    fm, diags = read_frontmatter(src)
    assert fm == {"id": "H1", "a": "ls", "b": "fine", "c": ["3", "x"], "d": "y"}
    got = [(d.code, d.line, d.severity) for d in diags]
    assert got == [("KB144", 3, "warning"), ("KB144", 5, "warning"), ("KB144", 6, "warning")]
    assert "'!!python/object:os.system'" in diags[0].message and "'!local'" in diags[2].message


def test_a_frontmatter_nested_too_deep_or_aliased_is_an_error_not_a_crash():
    """`id: [[[[…` 600 deep ended the parse with RecursionError (exit 3) in tree.md; a few
    nested aliases (341 bytes) took 3 GB once written out. Both are KB102 now, at a line,
    and the file's hypotheses are still read."""
    for fm, line, words in (("id: " + "[" * 600, 2, "nested too deeply"),
                            ("a: &a [x, x]\nb: [*a, *a]", 3, "a YAML alias ('*a')")):
        data = f"---\n{fm}\n---\n# Tree\n\n## H1: a\nStatus: 待验\n".encode()
        res = parse(data)
        (d,) = [d for d in res.diagnostics if d.code == "KB102"]
        assert d.line == line and words in d.message, d
        assert [h.id for h in res.objects] == ["H1"]
