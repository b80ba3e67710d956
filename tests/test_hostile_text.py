"""Hostile text in research files (issue 11): terminal escapes are never printed
raw by human-readable output; DASHBOARD.md escapes Markdown/HTML in list items;
every Mermaid label shows exactly the statement's text; a duplicated ID is one
Mermaid node; human tables print rich markup and emoji codes as written; a text of
only invisible characters is refused as empty."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import git, invoke, run_script
from kb.errors import UsageError

EVIL = "evil \x1b[31mRED\x1b[0m \x1b]0;pwned\x07 \x9b2J \u202eelif"


def test_terminal_escapes_are_never_printed_raw(tree_kb: Path) -> None:
    root = tree_kb
    tree = root / "tree.md"
    tree.write_text(tree.read_text(encoding="utf-8") + f"\n## H1: {EVIL}\nStatus: 待验\n",
                    encoding="utf-8")
    for args in (["ls"], ["show", "H1"], ["find", "evil"], ["index"], ["verify"]):
        r = run_script(*args, cwd=root)
        out = r.stdout + r.stderr
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", out), (args, out)
    r = run_script("ls", cwd=root)
    assert "\\x1b[31mRED" in r.stdout  # shown, escaped
    data = run_script("show", "H1", "--json", cwd=root).json()
    assert "\x1b" in data["statement"] or "RED" in data["statement"]  # JSON keeps the text


def test_dashboard_escapes_markdown_html_and_mermaid(tree_kb: Path) -> None:
    root = tree_kb
    statement = 'a <img src=x onerror=alert(1)> [link](javascript:x) *em* "q" #lt; %%{init: {}}%%'
    r = invoke("hyp", "add", statement, cwd=root)
    assert r.code == 0, r.stderr
    dash = (root / "DASHBOARD.md").read_text(encoding="utf-8")
    item = next(ln for ln in dash.splitlines() if ln.startswith("- H1:"))
    assert "<img" not in item and "&lt;img" in item
    assert "\\[link\\]" in item and "\\*em\\*" in item
    label = next(ln for ln in dash.splitlines() if ln.strip().startswith("n_H1["))
    inner = label.split('["', 1)[1].rsplit('"]', 1)[0]
    # Decoding the numeric entities gives back exactly the text shown.
    decoded = re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), inner.split("<br/>")[0])
    shown = decoded.removesuffix("…")  # a long statement is cut, never altered
    assert f"H1: {statement}".startswith(shown) and len(shown) > 20
    assert not re.search(r'["<>%`]|#lt;', inner.split("<br/>")[0])
    assert invoke("verify", cwd=root).code == 0


def test_duplicate_ids_are_one_mermaid_node() -> None:
    from kb.ops.tree_edit import Node
    from kb.render.dashboard import mermaid

    nodes = [Node("H1", 0, "待验", 2, 0, "first", None), Node("H1", 1, "待验", 2, 0, "again", None)]
    lines, left = mermaid(nodes)
    assert sum(1 for ln in lines if ln.strip().startswith("n_H1[")) == 1 and left == 0


@pytest.mark.parametrize("value,want", [
    ("[[E001]], [[E002|run, then rerun]]", ["E001", "E002"]),
    ("[[E001|a ] odd; label]]，E002", ["E001", "E002"]),
    ("[[E001#结果|结果, 见表]]", ["E001"]),
])
def test_wiki_link_anchor_values_are_read_as_links(value: str, want: list) -> None:
    from kb.config import config_from_dict
    from kb.parse import parse_file

    text = f"# T\n\n## H1: Root\nStatus: 待验\nEvidence: {value}\n"
    res = parse_file("tree.md", text.encode(), config_from_dict(Path("."), {}))
    (h,) = res.objects
    assert list(h.evidence) == want
    card = f"# 问题｜q\n\n- ID: q1\n- 状态: 开放\n- 依赖: {value.replace('E00', 'p')}\n"
    res = parse_file("Problems/q1.md", card.encode(), config_from_dict(Path("."), {}))
    assert [d.code for d in res.diagnostics if d.code in ("KB120", "KB121")] == []


#: Text rich would read as markup or emoji codes: printed as is by every human table.
MARKUP = ["Unmatched [/b] tag", "Index a[i] is bounded", "[bold]x[/bold] wins",
          "p in [0,1] :thumbs_up:"]


def test_markup_in_statements_and_titles_is_printed_literally(tree_kb: Path) -> None:
    root = tree_kb
    for n, text in enumerate(MARKUP, 1):
        assert invoke("hyp", "add", text, cwd=root).code == 0
        assert invoke("problem", "add", f"P{n}", f"solve {n}", "--title", text,
                      cwd=root).code == 0
    for args in (["ls"], ["ls", "hypotheses"], ["ls", "problems"], ["find", "["]):
        r = invoke(*args, cwd=root)
        assert r.code == 0, (args, r.stderr)
        for text in MARKUP:  # each text is a statement and a title
            assert text in r.stdout, (args, text, r.stdout)
    for n, text in enumerate(MARKUP, 1):
        assert text in invoke("show", f"H{n}", cwd=root).stdout
        assert text in invoke("show", f"P{n}", cwd=root).stdout


@pytest.mark.parametrize("tty", [True, False])
def test_human_table_console_prints_markup_literally(tty: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.table import Table

    from kb_cli.output import console

    class Out(io.StringIO):
        def isatty(self) -> bool:
            return tty

    out = Out()
    monkeypatch.setattr("sys.stdout", out)
    table = Table(box=None)
    table.add_column("[b]Title")
    for text in MARKUP:
        table.add_row(text)
    console().print(table)
    shown = out.getvalue()
    for text in ["[b]Title", *MARKUP]:
        assert text in shown, (text, shown)


#: Texts of nothing a reader can see: zero-width space, word joiner, BOM, Hangul filler,
#: variation selector, tag letter, mixed with blanks; the blank Braille pattern.
INVISIBLE = ["\u200b\u200b", "\u2060", "\ufeff", "\u3164", " \u00a0\u200d\ufe0f ", "\U000e0041",
             "\u2800"]


@pytest.mark.parametrize("text", INVISIBLE)
def test_invisible_only_text_is_refused_as_empty(tree_kb: Path, text: str) -> None:
    from kb.text import one_line

    from test_ops_tree import unchanged

    root = tree_kb
    with unchanged(root):
        for args in (["hyp", "add", text], ["problem", "add", "P1", text],
                     ["problem", "add", "P1", "real", "--title", text],
                     ["lock", "claim", "tree.md", "--owner", text]):
            r = invoke(*args, cwd=root)
            assert r.code == 2 and "is empty" in r.stderr, (args, r.stderr)
    with pytest.raises(UsageError, match="only invisible characters"):
        one_line(text, "the plan", required=False)  # given, yet nothing to read


@pytest.mark.parametrize("text", ["क्\u200dष joins", "👨\u200d👩\u200d👧 family",
                                  "e\u0301", "\u0301", "x\u200b", "\u2800x"])
def test_joiners_and_marks_in_visible_text_are_kept(tree_kb: Path, text: str) -> None:
    r = invoke("hyp", "add", text, "--json", cwd=tree_kb)
    assert r.code == 0, r.stderr
    assert invoke("show", r.json()["id"], "--json", cwd=tree_kb).json()["statement"] == text


def test_visible_is_false_only_for_texts_of_nothing_to_see() -> None:
    from kb.text import visible

    assert not any(visible(t) for t in INVISIBLE + ["", " \t"])
    assert all(visible(t) for t in ["a", "क्\u200dष", "👨\u200d👩", "\u0301", "\x1b"])


@pytest.mark.parametrize("head", ["H\u200b1", "\u2060H1", "H1\ufeff"])
def test_an_id_holding_a_character_that_shows_nothing_is_an_error_at_its_line(
        tree_kb: Path, head: str) -> None:
    """``## H\u200b1: …`` (pasted from a chat) reads as H1 and declares nothing: an error at
    its line with the rewrite, and `kb hyp add` never takes the ID the heading shows."""
    root = tree_kb
    tree = root / "tree.md"
    tree.write_text(f"# Tree\n\n## {head}: pasted\nStatus: 待验\nEvidence: (empty)\n",
                    encoding="utf-8")
    git(root, "commit", "-qam", "pasted", "--no-verify")
    r = invoke("verify", "--json", cwd=root)
    hit = [d for d in r.json()["diagnostics"] if d["code"] == "KB119"]
    assert r.code == 1 and [d["line"] for d in hit] == [3], r.stdout
    assert "shows nothing" in hit[0]["message"] and "'## H1: pasted'" in hit[0]["message"]
    # the rewrite it offers is what kb reads as H1
    fixed = tree.read_text(encoding="utf-8").replace(f"## {head}: pasted", "## H1: pasted")
    from kb.ops.history import ids_in_headings

    assert ids_in_headings(tree.read_text(encoding="utf-8").splitlines()) == {"H1"}
    tree.write_text(fixed, encoding="utf-8")
    assert invoke("verify", cwd=root).code == 0


@pytest.mark.parametrize("lead", ["\ufeff", "\u200b", "\u2060", "\u200e", "\u00a0", "\u3000",
                                  "\u200b ", " \ufeff", "\u00a0 "])  # blanks among them too
def test_a_heading_behind_a_character_that_shows_nothing_is_an_error_with_the_rewrite(
        tree_kb: Path, lead: str) -> None:
    """``\ufeff## H2: two`` (a BOM pasted mid-file, a zero-width or a no-break space before
    the '#') is no heading to Markdown: H2 vanished without a word (U+00A0 and U+3000 left a
    vague KB117 on its Status line) and `kb hyp add` took H2 again. KB119 at its line, with
    the rewrite `kb verify --fix` applies; the ID counts as taken."""
    root = tree_kb
    tree = root / "tree.md"
    tree.write_text(f"# Tree\n\n## H1: one\nStatus: 待验\nEvidence: (empty)\n\n{lead}## H2: two\n"
                    "Status: 待验\nEvidence: (empty)\n", encoding="utf-8")
    git(root, "commit", "-qam", "pasted", "--no-verify")
    r = invoke("verify", "--json", cwd=root)
    hit = [d for d in r.json()["diagnostics"] if d["code"] in ("KB119", "KB117")]
    assert r.code == 1 and [(d["code"], d["line"]) for d in hit] == [("KB119", 7)], r.stdout
    first = lead.strip(" ") or lead
    assert f"U+{ord(first[0]):04X}" in hit[0]["message"] and "'## H2: two'" in hit[0]["message"]
    from kb.ops.history import ids_in_headings

    assert ids_in_headings(tree.read_text(encoding="utf-8").splitlines()) == {"H1", "H2"}
    invoke("verify", "--fix", cwd=root)
    assert "\n## H2: two\n" in tree.read_text(encoding="utf-8")
    assert [h["id"] for h in invoke("ls", "hypotheses", "--json", cwd=root).json()["objects"]] \
        == ["H1", "H2"]


def test_an_indented_heading_id_is_never_taken_again() -> None:
    """` ## H2: two` (up to three spaces: still a heading to Markdown, a KB128 warning to kb)
    shows H2: `kb hyp add` took it again. Four spaces make code, which shows no heading."""
    from kb.ops.history import ids_in_headings

    lines = ["# T", "", "## H1: one", "", " ## H2: two", "", "   ### H1.1: x", "", "    ## H9: code"]
    assert ids_in_headings(lines) == {"H1", "H2", "H1.1"}


def test_a_quoted_word_holding_a_character_that_shows_nothing_says_so(tree_kb: Path) -> None:
    root = tree_kb
    (root / "tree.md").write_text("# Tree\n\n## H1: one\nStatus: 待\u200b验\nEvidence: (empty)\n",
                                  encoding="utf-8")
    r = invoke("verify", "--json", cwd=root)
    said = [d["message"] for d in r.json()["diagnostics"] if d["code"] == "KB205"]
    assert said and "(holding U+200B, which shows nothing)" in said[0], r.stdout
    from kb.numbers import quoted

    assert quoted("待验") == "'待验'" and quoted("👨\u200d👩") == "'👨\u200d👩'"  # a joiner's own


@pytest.mark.parametrize("space", ["\u3000", "\u00a0", "\u2009"])
def test_a_wide_space_before_the_separator_is_an_error_with_the_rewrite(tree_kb: Path, space: str) -> None:
    """``## H1\u3000: x`` (an input method's space) declared nothing with only a KB116
    warning that pointed at `id_grammar`; `## H1 : x` (the ASCII space) is read."""
    root = tree_kb
    (root / "tree.md").write_text(f"# Tree\n\n## H1{space}: x\nStatus: 待验\nEvidence: (empty)\n",
                                  encoding="utf-8")
    r = invoke("verify", "--json", cwd=root)
    hit = [d for d in r.json()["diagnostics"] if d["code"] == "KB119"]
    assert r.code == 1 and [d["line"] for d in hit] == [3], r.stdout
    assert f"U+{ord(space):04X}" in hit[0]["message"] and "'## H1: x'" in hit[0]["message"]
    assert not [d for d in r.json()["diagnostics"] if d["code"] == "KB116"]


def test_a_status_holding_a_character_that_shows_nothing_is_fixed_by_verify_fix(tree_kb: Path) -> None:
    root = tree_kb
    tree = root / "tree.md"
    tree.write_text("# Tree\n\n## H1: one\nStatus: 待验\u200b\nEvidence: (empty)\n", encoding="utf-8")
    r = invoke("verify", "--json", cwd=root)
    hit = [d for d in r.json()["diagnostics"] if d["code"] == "KB205"]
    assert hit and hit[0]["fix"] is not None, r.stdout
    invoke("verify", "--fix", cwd=root)
    assert "Status: 待验\n" in tree.read_text(encoding="utf-8")
    assert invoke("verify", cwd=root).code == 0


def test_a_listed_id_holding_a_character_that_shows_nothing_is_named(tree_kb: Path) -> None:
    """`Children: H1.\u200b1` read as another ID than the H1.1 declared below it, and the
    message quoted it as `H1.1`: it says which character is there."""
    root = tree_kb
    (root / "tree.md").write_text(
        "# Tree\n\n## H1: a\nStatus: 待验\nEvidence: (empty)\nChildren: H1.\u200b1\n\n"
        "### H1.1: b\nStatus: 待验\nEvidence: (empty)\nParent: H1\n", encoding="utf-8")
    r = invoke("verify", "--json", cwd=root)
    said = [d["message"] for d in r.json()["diagnostics"] if d["code"] == "KB204"]
    assert said and "(holding U+200B, which shows nothing)" in said[0], r.stdout
