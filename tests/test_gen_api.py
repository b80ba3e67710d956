"""kb.gen.api: the loop and the literature client as JSON-in, JSON-out tools (for MCP)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git, tree_snapshot
from litserver import LitServer

DATA = Path(__file__).resolve().parent / "data" / "gen"


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text("utf-8"))


def test_tools_drive_a_round_with_data_objects(tmp_path, monkeypatch, tree_kb):
    from kb.errors import RefusedError, UsageError
    from kb.gen import api
    from kb.gen.errors import GenError

    assert set(api.TOOLS) == {"gen_init", "gen_status", "gen_brief", "gen_submit", "gen_report",
                              "gen_schema", "gen_rank", "gen_adopt", "lit_search", "lit_snippet",
                              "lit_cite", "lit_paper", "lit_keys"}
    assert all(f.__doc__ for f in api.TOOLS.values())
    monkeypatch.delenv("KB_GEN_SANDBOX", raising=False)
    for k in ("S2_API_KEY", "OPENALEX_EMAIL"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("KB_LIT_BACKOFF", "0.01")
    sb = str(tmp_path / "run")
    api.gen_init("How does spacing shape motor retention?", sandbox=sb, gen_n=3)
    bad = load("round1/candidates.json")
    bad["candidates"][0]["hid"] = 7
    with pytest.raises(GenError) as exc:
        api.gen_submit("candidates", data=bad, sandbox=sb)
    assert "<candidates data>: $.candidates[0].hid: Input should be a valid string" in str(exc.value)
    with pytest.raises(UsageError):
        api.gen_submit("candidates", sandbox=sb)
    api.gen_submit("candidates", data=load("round1/candidates.json"), sandbox=sb)
    with LitServer() as srv:
        for k, v in srv.env().items():
            monkeypatch.setenv(k, v)
        got = api.lit_snippet("spacing procedural retention", sandbox=sb)
        assert got["round"] == 1 and got["requests"] == 1 and len(got["result"]) == 3
        api.lit_search("sleep consolidation", source="s2", sandbox=sb)
    res = api.gen_submit("litscout", data=json.dumps(load("round1/litscout.json")), sandbox=sb)
    assert res["not_found"] == ["E3"]
    assert api.gen_brief("judge", sandbox=sb)["evidence_check"]["E1"] == "verified"
    res = api.gen_submit("verdict", data=load("round1/verdict.json"), sandbox=sb)
    assert res["kept"] == ["r1h1"] and api.gen_status(sb)["round"] == 2
    assert api.gen_rank(sandbox=sb)["ratings"][0]["elo"] == 1200.0
    with pytest.raises(GenError, match=r"\$\.matches\[0\]\.b: 'r9h9' is not a pool hypothesis"):
        api.gen_rank([{"a": "r1h1", "b": "r9h9", "winner": "r1h1"}], sandbox=sb)
    # A refused adopt (unknown parent) writes nothing and leaves the hid adoptable.
    before = tree_snapshot(tree_kb, skip_git=True)
    head = git(tree_kb, "rev-parse", "HEAD")
    with pytest.raises(RefusedError):
        api.gen_adopt("r1h1", parent="H9", kb=str(tree_kb), sandbox=sb)
    assert git(tree_kb, "rev-parse", "HEAD") == head
    assert {k: v for k, v in tree_snapshot(tree_kb, skip_git=True).items() if not k.startswith(".kb")} == \
        {k: v for k, v in before.items() if not k.startswith(".kb")}
    out = api.gen_adopt("r1h1", kb=str(tree_kb), sandbox=sb)
    assert out["id"] == "H1" and out["generated"]["total"] == 84.0
    assert api.gen_status(sb)["adopted"] == {"r1h1": "H1"}
    assert api.gen_report(sandbox=sb)["hypotheses"] == ["r1h1"]
    assert api.gen_schema("verdict")["required"] == ["round", "verdicts"]


def test_gen_schema_of_an_unknown_kind_is_a_usage_error() -> None:
    from kb.errors import UsageError
    from kb.gen import api

    with pytest.raises(UsageError, match="candidates, litscout, verdict"):
        api.gen_schema("bogus")
