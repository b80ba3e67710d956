"""``add_hypothesis`` with prose and trailers (the write behind ``kb gen adopt``), through hooks."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, invoke


def test_prose_and_trailers_in_one_commit_through_the_hooks(tree_kb: Path):
    from kb.errors import UsageError
    from kb.ops.hypotheses import add_hypothesis

    assert invoke("hooks", "install", cwd=tree_kb).code == 0
    first = add_hypothesis(tree_kb, "Loading dominates")
    res = add_hypothesis(tree_kb, "Decoding dominates loading", "H1",
                         prose=["*Generated* by a run.", "*How to test*: profile it."],
                         trailers=[("Kb-Gen-Run", "gen-1"), ("Kb-Gen-Hid", "r1h1")])
    assert res.id == "H1.1" and res.commit == git(tree_kb, "rev-parse", "HEAD")
    assert git(tree_kb, "rev-list", "--count", f"{first.commit}..HEAD") == "1"
    assert git(tree_kb, "log", "-1", "--format=%(trailers:key=Kb-Gen-Hid,valueonly)").strip() == "r1h1"
    text = (tree_kb / "tree.md").read_text("utf-8")
    assert ("### H1.1: Decoding dominates loading\nStatus: 待验\nEvidence: (empty)\nParent: H1\n\n"
            "*Generated* by a run.\n*How to test*: profile it.\n") in text
    # A third hypothesis lands after the prose, and the tree still reads.
    add_hypothesis(tree_kb, "Network dominates")
    r = invoke("ls", "hypotheses", "--json", cwd=tree_kb)
    assert [h["id"] for h in r.json()["objects"]] == ["H1", "H1.1", "H2"]
    assert invoke("verify", cwd=tree_kb).code == 0
    head = git(tree_kb, "rev-parse", "HEAD")
    with pytest.raises(UsageError, match="a prose line spans several lines"):
        add_hypothesis(tree_kb, "x", prose=["one\ntwo"])
    assert git(tree_kb, "rev-parse", "HEAD") == head


def test_a_cite_whose_snippet_was_not_found_is_marked_in_the_provenance():
    """hypotheses.md marks a cite whose snippet failed the verbatim check; the adopted
    hypothesis's *Cites* line in tree.md gave it as the others, unmarked."""
    from types import SimpleNamespace

    from kb.gen.adopt import provenance

    sb = SimpleNamespace(state={"run_id": "gen-1"})
    h = {"round": 2, "hid": "r2h1", "total": 71.5, "scores": {"novelty": 3},
         "novelty_assessment": "new", "how_to_test": "profile it",
         "evidence": {"k1": {"title": "Real", "id": "S2:1", "check": "verified"},
                      "k2": {"title": "Made up.", "check": "not-found"},
                      "k3": {"title": "From the web", "check": "web"}}}
    (cites,) = [line for line in provenance(sb, h) if line.startswith("*Cites*")]
    assert cites == ("*Cites*: k1 Real (S2:1); k2 Made up. (snippet not found in the round's "
                     "cache); k3 From the web.")
