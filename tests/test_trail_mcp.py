"""The seed's two tools over kb's MCP server (issue 15): static surface with the seed's
parameter names, recordings as commits, refusals as tool errors with kb's kinds."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import git


@pytest.fixture
def kb(tree_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    monkeypatch.chdir(tree_kb)
    return tree_kb


async def call(c: Client, tool: str, **args: Any) -> tuple[bool, Any]:
    res = await c.call_tool(tool, args)
    return bool(res.is_error), json.loads(res.content[0].text)


def test_explore_tree_tools_over_mcp(kb: Path, tmp_path: Path) -> None:
    from kb.mcp import build_server

    async def session() -> None:
        async with Client(build_server(kb)) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            rec = tools["explore_tree_record"]
            props = rec.input_schema["properties"]
            assert {"action", "parentId", "children", "from", "to", "edgeKind",
                    "expectedRevision", "toActor", "actor", "role"} <= props.keys()
            assert rec.input_schema["required"] == ["action"]
            assert not rec.annotations.read_only_hint
            view = tools["explore_tree"]
            assert set(view.input_schema["properties"]) == {
                "action", "id", "depth", "query", "limit", "archived"}
            assert view.annotations.read_only_hint

            err, t = await call(c, "explore_tree_record", action="add", kind="topic",
                                title="建树算法")
            assert not err and t["ok"] and t["data"]["op"] == "trail.add"
            assert t["data"]["commit"] == git(kb, "rev-parse", "HEAD")
            topic = t["data"]["id"]
            err, h = await call(c, "explore_tree_record", action="add", kind="hypothesis",
                                title="配额为何先到先得？", parentId=topic,
                                children=[{"kind": "evidence", "title": "前缀多了 214 字节"}])
            hyp, ev = h["data"]["ids"]
            err, linked = await call(c, "explore_tree_record", **{
                "action": "link", "from": ev, "to": hyp, "edgeKind": "supports"})
            assert not err and linked["data"]["changes"] == [f"linked {ev} -[supports]-> {hyp}"]
            err, node = await call(c, "explore_tree", action="node", id=hyp)
            assert not err and node["data"]["version"] == 1
            assert node["data"]["edges"]["in"][0]["from"] == ev
            err, stale = await call(c, "explore_tree_record", action="set", id=hyp,
                                    status="done", expectedRevision=3)
            assert err and stale["error"]["kind"] == "stale"
            assert "STALE_REVISION" in stale["error"]["message"]
            err, out = await call(c, "explore_tree_record", action="add", kind="note",
                                  title="n", parentId=topic, actor="agent-b")
            assert err and out["error"]["kind"] == "refused"
            assert out["error"]["message"].startswith("OUT_OF_SCOPE")
            err, brief = await call(c, "explore_tree", action="brief")
            assert not err and len(brief["text"]) <= 400
            err, bad = await call(c, "explore_tree", action="snapshot")
            assert err and bad["error"]["kind"] == "usage"

    asyncio.run(session())
    assert git(kb, "status", "--porcelain") == ""
    assert int(git(kb, "rev-list", "--count", "HEAD")) == 1 + 3


def test_counts_of_zero_or_less_are_refused_over_mcp_as_by_the_cli(kb: Path) -> None:
    """A ``limit`` or ``leaseMinutes`` of 0 (or less) is a usage error, as ``kb trail``'s
    COUNT type makes it; never the default (``leaseMinutes: 0`` used to lease 30 minutes)."""
    from kb.mcp import build_server

    async def session() -> None:
        async with Client(build_server(kb)) as c:
            err, t = await call(c, "explore_tree_record", action="add", kind="topic", title="建树")
            topic = t["data"]["id"]
            for limit in (0, -1):
                err, out = await call(c, "explore_tree", action="find", query="建树", limit=limit)
                assert err and out["error"]["kind"] == "usage", out
                assert "limit must be at least 1" in out["error"]["message"]
            err, out = await call(c, "explore_tree", action="tree", depth=-1)
            assert err and out["error"]["kind"] == "usage"
            head = git(kb, "rev-parse", "HEAD")
            for minutes in (0, -5):
                for action, who in (("assign", {"owner": "alice"}), ("handoff", {"toActor": "bob"})):
                    err, out = await call(c, "explore_tree_record", action=action, id=topic,
                                          leaseMinutes=minutes, **who)
                    assert err and out["error"]["kind"] == "usage", (action, minutes, out)
                    assert "leaseMinutes must be at least 1" in out["error"]["message"], out
            for action, who in (("assign", {"owner": "alice"}), ("handoff", {"toActor": "bob"})):
                # past a year (99,999,999,999 minutes ended the CLI with exit 3: past 9999)
                err, out = await call(c, "explore_tree_record", action=action, id=topic,
                                      leaseMinutes=99_999_999_999, **who)
                assert err and out["error"]["kind"] == "usage", (action, out)
                assert "leaseMinutes" in out["error"]["message"], out
            assert git(kb, "rev-parse", "HEAD") == head  # nothing recorded
            err, out = await call(c, "explore_tree_record", action="assign", id=topic,
                                  owner="alice", leaseMinutes=1)
            assert not err and out["data"]["op"] == "trail.assign", out

    asyncio.run(session())


def test_a_title_or_summary_over_its_limit_is_a_usage_error_over_mcp(kb: Path) -> None:
    """``explore_tree_record`` add/set with a title over 120 characters or a summary over
    1,200 is a usage error naming the limit, as ``kb trail add`` (it was cut without a word)."""
    from kb.mcp import build_server

    async def session() -> None:
        async with Client(build_server(kb)) as c:
            head = git(kb, "rev-parse", "HEAD")
            for args, limit in (({"title": "x" * 130}, "at most 120"),
                                ({"title": "t", "summary": "s" * 1300}, "at most 1200"),
                                ({"title": "t", "children": [{"kind": "note", "title": "c" * 121}]},
                                 "at most 120")):
                err, out = await call(c, "explore_tree_record", action="add", kind="note", **args)
                assert err and out["error"]["kind"] == "usage", out
                assert limit in out["error"]["message"], out
            assert git(kb, "rev-parse", "HEAD") == head  # nothing recorded
            err, t = await call(c, "explore_tree_record", action="add", kind="note", title="t")
            err, out = await call(c, "explore_tree_record", action="set", id=t["data"]["id"],
                                  title="x" * 121)
            assert err and out["error"]["kind"] == "usage" and "at most 120" in out["error"]["message"]

    asyncio.run(session())
