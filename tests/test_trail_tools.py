"""The seed's two tools as library entry points (issue 15): explore_tree, explore_tree_record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git
from kb.trail.tools import (EXPLORE_TREE_RECORD_SCHEMA, EXPLORE_TREE_SCHEMA, explore_tree,
                            explore_tree_record)


@pytest.fixture
def kb(tree_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    return tree_kb


def test_record_and_read_with_the_seed_parameter_names(kb: Path) -> None:
    r = explore_tree_record("add", kb=kb, kind="topic", title="建树算法")
    assert r["ok"] and r["action"] == "add"
    topic = r["data"]["ids"][0]
    r = explore_tree_record(
        "add", kb=kb, kind="hypothesis", title="缓存未命中是因为工具面顺序变化",
        summary="依据：上一轮工具列表顺序不同", parentId=topic,
        children=[{"kind": "evidence", "title": "两次请求前缀长度不同",
                   "summary": "diff 显示 system 段多了 214 字节"},
                  {"kind": "decision", "title": "先固定工具面顺序再复测"}])
    h, e, d = r["data"]["ids"]
    assert explore_tree_record("link", kb=kb, **{"from": e, "to": h, "edgeKind": "supports",
                                                 "note": "前缀差异"})["ok"]
    node = explore_tree("node", id=h, kb=kb)
    assert node["ok"] and node["data"]["version"] == 1
    assert [c["id"] for c in node["data"]["children"]] == [e, d]
    assert "hypothesis: 缓存未命中是因为工具面顺序变化" in node["text"]
    # CAS through expectedRevision: the seed's STALE_REVISION with the current state.
    stale = explore_tree_record("set", kb=kb, id=h, status="done", expectedRevision=5)
    assert stale["ok"] is False
    err = stale["error"]
    assert err["code"] == "STALE_REVISION" and err["kind"] == "stale"
    assert err["current_version"] == 1 and "updated_by" in err and "current_digest" in err
    assert explore_tree_record("set", kb=kb, id=h, status="done", expectedRevision=1)["ok"]
    # Scopes through actor.
    out = explore_tree_record("add", kb=kb, kind="note", title="n", parentId=topic, actor="agent-b")
    assert out["error"]["code"] == "OUT_OF_SCOPE"
    assert explore_tree_record("assign", kb=kb, id=topic, owner="agent-b")["ok"]
    assert explore_tree_record("add", kb=kb, kind="note", title="n", parentId=topic,
                               actor="agent-b")["ok"]
    hand = explore_tree_record("handoff", kb=kb, id=topic, actor="agent-b", toActor="agent-c")
    assert hand["ok"] and hand["data"]["nodes"][0]["owner"] == "agent-c"
    tr = explore_tree("trunk", kb=kb)
    assert tr["data"]["goals"][0]["topics"][0]["owner"] == "agent-c"
    assert len(explore_tree("brief", kb=kb)["text"]) <= 400
    for action in ("overview", "frontier", "stats", "tree"):
        assert explore_tree(action, kb=kb)["ok"], action
    assert explore_tree("find", query="前缀", kb=kb)["data"]["total"] >= 1
    assert explore_tree(view="path", id=e, kb=kb)["data"]["path"][0]["id"] == topic
    assert explore_tree("subtree", id=topic, kb=kb)["ok"]
    # Every recording was one commit.
    assert int(git(kb, "rev-list", "--count", "HEAD")) == 1 + 7


def test_bad_calls_are_errors_not_exceptions(kb: Path) -> None:
    assert explore_tree("nope", kb=kb)["error"]["code"] == "USAGE"
    assert explore_tree("node", id="nmissing000", kb=kb)["error"]["code"] == "NOT_FOUND"
    assert explore_tree_record("fly", kb=kb)["error"]["code"] == "USAGE"
    assert explore_tree_record("add", kb=kb, kind="idea", title="x")["error"]["code"] == "USAGE"
    assert explore_tree_record("add", kb=kb, parent="x", kind="note", title="x")["error"]["code"] == "USAGE"


def test_the_tool_surface_is_static(kb: Path) -> None:
    import kb.trail.tools as tools

    def surface() -> str:
        return json.dumps([tools.EXPLORE_TREE_SCHEMA, tools.EXPLORE_TREE_RECORD_SCHEMA,
                           tools.EXPLORE_TREE_DESCRIPTION, tools.EXPLORE_TREE_RECORD_DESCRIPTION],
                          sort_keys=True, ensure_ascii=False)

    before = surface()
    explore_tree_record("add", kb=kb, kind="goal", title="g")
    explore_tree("overview", kb=kb)
    assert "parentId" in EXPLORE_TREE_RECORD_SCHEMA["properties"]
    assert "expectedRevision" in EXPLORE_TREE_RECORD_SCHEMA["properties"]
    assert EXPLORE_TREE_SCHEMA["properties"]["action"]["enum"] == [
        "overview", "trunk", "brief", "frontier", "stats", "find", "node", "path", "tree", "subtree"]
    assert EXPLORE_TREE_RECORD_SCHEMA["properties"]["action"]["enum"] == [
        "add", "link", "set", "move", "merge", "promote", "archive", "digest", "rollback",
        "assign", "handoff"]
    assert surface() == before  # the graph grew; the tool surface did not change
