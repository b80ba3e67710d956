"""The gen and lit MCP tools (kb/mcp/gen.py) through the SDK's in-memory client:
a round driven by tool calls, the literature served by a loopback server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import git
from litserver import LitServer

DATA = Path(__file__).resolve().parent / "data" / "gen"
GEN_TOOLS = {"gen_init", "gen_status", "gen_brief", "gen_submit", "gen_report", "gen_schema",
             "gen_rank", "gen_adopt", "lit_search", "lit_snippet", "lit_cite", "lit_paper", "lit_keys"}


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text("utf-8"))


def data_of(res: Any) -> Any:
    return json.loads(res.content[0].text)


async def call(c: Client, tool: str, /, **args: Any) -> Any:
    res = await c.call_tool(tool, args)
    assert not res.is_error, (tool, res.content[0].text)
    return data_of(res)


async def refused(c: Client, tool: str, /, **args: Any) -> dict[str, Any]:
    res = await c.call_tool(tool, args)
    assert res.is_error, (tool, res.content)
    return data_of(res)["error"]


def test_gen_and_lit_tools_run_a_round_and_adopt(tree_kb: Path, monkeypatch: pytest.MonkeyPatch):
    from kb.mcp import build_server

    monkeypatch.setenv("KB_NOW", "2026-11-30T09:00:00Z")
    monkeypatch.setenv("KB_LIT_BACKOFF", "0.01")
    for k in ("S2_API_KEY", "OPENALEX_EMAIL", "KB_GEN_SANDBOX"):
        monkeypatch.delenv(k, raising=False)
    server = build_server(tree_kb)

    async def session(srv: LitServer) -> set[str]:
        called: set[str] = set()
        async with Client(server) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert GEN_TOOLS <= tools.keys()
            assert tools["gen_status"].annotations.read_only_hint
            assert tools["lit_search"].annotations.open_world_hint
            assert set(tools["gen_submit"].input_schema["required"]) == {"kind", "data"}

            async def do(tool: str, **args: Any) -> Any:
                called.add(tool)
                return await call(c, tool, **args)

            run = await do("gen_init", question="How does spacing shape motor retention?", gen_n=3)
            assert run["sandbox"] == str(tree_kb / "sandbox")
            assert (await do("gen_schema", kind="verdict"))["required"] == ["round", "verdicts"]
            assert (await do("gen_brief", role="generator"))["hid_pattern"] == "r1h<n>"
            err = await refused(c, "gen_submit", kind="litscout", data=load("round1/litscout.json"))
            assert err["kind"] == "conflict" and "expects candidates next" in err["message"]
            await do("gen_submit", kind="candidates", data=load("round1/candidates.json"))
            snip = await do("lit_snippet", query="spacing procedural retention")
            assert snip["round"] == 1 and snip["requests"] == 1
            await do("lit_search", query="sleep consolidation", source="s2")
            assert (await do("lit_cite", paper_id="a1b2", direction="recommend"))["result"]
            assert (await do("lit_paper", arxiv_id="2101.00001"))["result"]["arxiv_id"] == "2101.00001"
            assert (await do("lit_keys"))["keys"] == {"S2_API_KEY": False, "OPENALEX_EMAIL": False}
            scout = await do("gen_submit", kind="litscout", data=load("round1/litscout.json"))
            assert scout["not_found"] == ["E3"]
            verdict = await do("gen_submit", kind="verdict", data=load("round1/verdict.json"))
            assert verdict["kept"] == ["r1h1"]
            assert (await do("gen_status"))["round"] == 2
            assert (await do("gen_rank"))["ratings"][0]["hid"] == "r1h1"
            assert (await do("gen_report"))["hypotheses"] == ["r1h1"]
            added = await do("gen_adopt", hid="r1h1")
            assert added["id"] == "H1" and added["commit"] == git(tree_kb, "rev-parse", "HEAD")
            srv.script("/openalex", [503] * 4)
            err = await refused(c, "lit_search", query="storm", source="openalex")
            assert err["exit_code"] == 1 and "fallback: " in err["message"] and "web" in err["message"]
            return GEN_TOOLS - called

    with LitServer() as srv:
        for k, v in srv.env().items():
            monkeypatch.setenv(k, v)
        assert asyncio.run(session(srv)) == set()
    assert "*Generated* by the literature-grounded generation loop" in (tree_kb / "tree.md").read_text("utf-8")


def test_a_sandbox_outside_the_kb_is_refused_over_mcp(tree_kb: Path, tmp_path: Path):
    """`gen_init {"sandbox": "../../escape"}` wrote a run's files outside the KB (an absolute
    path too), and gen_status / gen_report read there: over MCP a sandbox is a folder inside
    the KB, as every other MCP path is confined; a usage error, nothing written."""
    import os

    from kb.mcp import build_server

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, tree_kb / "out-link")
    bad = ["../../escape", str(tmp_path / "abs"), "runs/../../x", "", ".", "out-link", ".git/x",
           "out-link/run", "a\\..\\b", "run\n1"]

    async def session() -> None:
        async with Client(build_server(tree_kb)) as c:
            for name in bad:
                for tool, args in (("gen_init", {"question": "Q?"}), ("gen_status", {}),
                                   ("gen_report", {})):
                    err = await refused(c, tool, sandbox=name, **args)
                    assert err["kind"] == "usage" and "sandbox" in err["message"], (name, err)
            got = await call(c, "gen_init", question="Q?", sandbox="runs/q7")
            assert Path(got["sandbox"]).resolve().is_relative_to(tree_kb.resolve())

    before = sorted(p.name for p in tmp_path.iterdir())
    asyncio.run(session())
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing outside the KB
    assert list(outside.iterdir()) == []
    assert (tree_kb / "runs" / "q7").is_dir()
