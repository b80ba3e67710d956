"""`kb hyp add` in a KB that sets its own `[kb] id_grammar`: kb numbers hypotheses
H<n>(.<n>)*, so it adds one whenever the KB's grammar reads the ID it takes (the README's
kb.toml spells out the default grammar; `H\\d+(\\.\\d+)*` reads kb's numbering too), and
refuses, naming the ID, only when the grammar would not read it."""

from __future__ import annotations

import pytest

from conftest import MakeKB, run_script

TREE = "# Tree\n\n## H1: First\nStatus: 待验\nEvidence: (empty)\n"


def _kb(make_kb: MakeKB, grammar: str):
    return make_kb({"tree.md": TREE}, config=f"[kb]\nlocale = \"zh\"\nid_grammar = '{grammar}'\n",
                   commit=True)


@pytest.mark.parametrize("grammar", [r"H[1-9][0-9]*(?:\.[1-9][0-9]*)*", r"H\d+(\.\d+)*"])
def test_a_grammar_reading_kbs_numbering_lets_hyp_add_work(make_kb: MakeKB, grammar: str) -> None:
    root = _kb(make_kb, grammar)
    r = run_script("hyp", "add", "Second", cwd=root)
    assert r.code == 0, r.stderr
    r = run_script("hyp", "add", "Child", "--parent", "H1", cwd=root)
    assert r.code == 0, r.stderr
    r = run_script("ls", "hypotheses", "--json", cwd=root)
    assert sorted(h["id"] for h in r.json()["objects"]) == ["H1", "H1.1", "H2"], r.stdout


def test_a_grammar_not_reading_the_new_id_refuses_and_names_it(make_kb: MakeKB) -> None:
    """`[KH][1-9][0-9]*` reads H2 but not H1.1: the top-level add works, the child is
    refused with the ID kb would have taken, and tree.md keeps its bytes."""
    root = _kb(make_kb, r"[KH][1-9][0-9]*")
    assert run_script("hyp", "add", "Second", cwd=root).code == 0
    before = (root / "tree.md").read_bytes()
    r = run_script("hyp", "add", "Child", "--parent", "H1", cwd=root)
    assert r.code == 1, (r.code, r.stderr)
    assert "does not read H1.1 as an ID" in r.stderr, r.stderr
    assert (root / "tree.md").read_bytes() == before


# -- [kb] heading_separators: kb writes the KB's own separator -----------------------------


def test_hyp_add_and_edit_write_the_kbs_separator(make_kb: MakeKB) -> None:
    """`heading_separators = ["(("]` (no `:`): kb wrote `## H2: …`, which this KB does not
    read, and refused blaming the statement. It writes the KB's separator now, and an edit
    keeps the separator of the heading it edits."""
    root = make_kb({"tree.md": "# Tree\n\n## H1(( First\nStatus: 待验\nEvidence: (empty)\n"},
                   config='[kb]\nlocale = "zh"\nheading_separators = ["(("]\n', commit=True)
    r = run_script("hyp", "add", "Second", cwd=root)
    assert r.code == 0, r.stderr
    r = run_script("hyp", "add", "Child", "--parent", "H1", cwd=root)
    assert r.code == 0, r.stderr
    r = run_script("hyp", "edit", "H1", "First, edited", "--reason", "typo", cwd=root)
    assert r.code == 0, r.stderr
    tree = (root / "tree.md").read_text(encoding="utf-8")
    assert "## H1(( First, edited\n" in tree and "### H1.1(( Child\n" in tree, tree
    assert "## H2(( Second\n" in tree, tree
    r = run_script("ls", "hypotheses", "--json", cwd=root)
    assert {h["id"]: h["statement"] for h in r.json()["objects"]} == {
        "H1": "First, edited", "H1.1": "Child", "H2": "Second"}, r.stdout
    assert run_script("verify", cwd=root).code == 0


@pytest.mark.parametrize("toml, says", [
    # a grammar that cannot give the digit back: `## H11 …` never reads as H1
    ("id_grammar = 'H\\d++'\nheading_separators = [\"1\"]\n",
     "kb would write the heading `## H11 <statement>` (the separator `1`), which does not read "
     "back as H1 with the KB's ID grammar"),
    ('heading_separators = [":\\n"]\n',  # a line break: the heading would be two lines
     "the separator kb would write after H1, ':\\n', holds U+000A, which no heading line can hold"),
])
def test_a_separator_kb_cannot_write_is_named_not_the_statement(make_kb: MakeKB, toml: str,
                                                                says: str) -> None:
    root = make_kb({"tree.md": "# Tree\n"}, config=f'[kb]\nlocale = "zh"\n{toml}', commit=True)
    before = (root / "tree.md").read_bytes()
    r = run_script("hyp", "add", "A statement", cwd=root)
    assert r.code == 1, (r.code, r.stderr)
    assert r.stderr.startswith(f"kb: kb.toml's [kb] heading_separators: {says}; add `:` to the "
                               "separators"), r.stderr
    assert "statement cannot be written" not in r.stderr
    assert (root / "tree.md").read_bytes() == before


def test_a_kb_reading_only_the_fullwidth_colon_is_not_warned_for_it(make_kb: MakeKB) -> None:
    """`heading_separators = ["："]`: kb writes `## H2： …`; KB110 (full-width colon) would
    offer `:` as its fix, which this KB does not read, so it is not reported there. A KB that
    reads both still gets it."""
    tree = "# Tree\n\n## H1： First\nStatus: 待验\nEvidence: (empty)\n"
    only = make_kb({"tree.md": tree}, config='[kb]\nlocale = "zh"\nheading_separators = ["："]\n',
                   commit=True)
    assert run_script("hyp", "add", "Second", cwd=only).code == 0
    assert "## H2： Second\n" in (only / "tree.md").read_text(encoding="utf-8")
    r = run_script("verify", "--json", cwd=only)
    assert "KB110" not in {d["code"] for d in r.json()["diagnostics"]}, r.stdout
    both = make_kb({"tree.md": tree}, config='[kb]\nlocale = "zh"\n', commit=True)
    r = run_script("verify", "--json", cwd=both)
    assert "KB110" in {d["code"] for d in r.json()["diagnostics"]}, r.stdout
