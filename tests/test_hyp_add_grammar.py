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
