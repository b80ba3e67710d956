"""Exploration-graph views (issue 15): overview, trunk, brief, frontier, stats, find, node,
path, tree, subtree, text and --json, and maxNodes archiving out of the live views."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke
from trail_support import kb, ok  # noqa: F401 (a fixture and a helper)




def text(kb: Path, *args: str) -> str:
    r = invoke("trail", *args, cwd=kb)
    assert r.code == 0, r.stderr
    return r.stdout


@pytest.fixture
def graph(kb: Path) -> dict[str, str]:
    from kb.trail import ops

    ids: dict[str, str] = {}

    def add(name: str, **kw: object) -> str:
        res = ops.add(kb, no_commit=True, **kw)  # type: ignore[arg-type]
        ids[name] = res.ids[0]
        return res.ids[0]

    add("goal", kind="goal", title="Make the prompt cache hit")
    add("t1", kind="topic", title="Prefix stability", parent=ids["goal"])
    add("t2", kind="topic", title="Cache TTL", parent=ids["goal"])
    add("h1", kind="hypothesis", title="Tool order changes the prefix", parent=ids["t1"])
    add("h2", kind="hypothesis", title="Timestamp in the system prompt", parent=ids["t1"],
        summary="The clock line changes every minute, see prompt.py")
    add("e1", kind="evidence", title="Prefix differs by 214 bytes", parent=ids["h2"])
    add("c1", kind="conclusion", title="Order is stable", parent=ids["t1"], status="done")
    add("d1", kind="dead_end", title="Sorting tools did not help", parent=ids["t1"],
        summary="misses stayed at 50%")
    add("q1", kind="question", title="Does the TTL expire early?", parent=ids["t2"])
    add("a1", kind="artifact", title="docs/cache.md", parent=ids["t2"], refs=["docs/cache.md"])
    add("other", kind="goal", title="Speed up the index")
    add("t3", kind="topic", title="Parsing", parent=ids["other"])
    ops.link(kb, ids["h1"], ids["c1"], "contradicts", "opposite claims", no_commit=True)
    ops.link(kb, ids["e1"], ids["h2"], "supports", no_commit=True)
    ops.assign(kb, ids["t2"], "agent-a", no_commit=True)
    return ids


def test_overview(kb: Path, graph: dict[str, str]) -> None:
    v = ok(kb, "overview")
    assert v["goal"]["id"] == graph["other"]  # the newest goal
    assert v["goals"] == 2
    assert {d["id"] for d in v["open"]} == {graph["h1"], graph["h2"], graph["q1"]}
    assert [d["id"] for d in v["dead_ends"]] == [graph["d1"]]
    assert [d["id"] for d in v["artifacts"]] == [graph["a1"]]
    assert [d["id"] for d in v["conclusions"]] == [graph["c1"]]
    t = text(kb, "overview")
    assert "Goal: ○" in t and "Dead ends:" in t


def test_trunk_progress_owner_conflict(kb: Path, graph: dict[str, str]) -> None:
    v = ok(kb, "trunk")
    first = v["goals"][0]
    assert first["goal"]["id"] == graph["goal"]
    t1, t2 = first["topics"]
    assert t1["id"] == graph["t1"] and t1["conflict"] is True
    assert t1["progress"] == {"done": 2, "total": 4}
    assert t1["digest"].startswith("2/4 done · concluded: Order is stable · open: ")
    assert t2["owner"] == "agent-a" and t2["conflict"] is False
    assert [c["id"] for c in v["claimable"]] == [graph["t1"], graph["t3"]]
    assert "⚠ conflict" in text(kb, "trunk")


def test_brief_is_at_most_400_characters(kb: Path, graph: dict[str, str]) -> None:
    v = ok(kb, "brief", "--goal", graph["goal"])
    assert v["chars"] <= 400 and len(v["text"]) == v["chars"]
    lines = v["text"].splitlines()
    assert lines[0] == "Goal: Make the prompt cache hit"
    assert lines[1].startswith("Trunk: Prefix stability: 2/4 done")
    assert any(ln.startswith("Other trunks: Parsing") for ln in lines)
    assert any(ln.startswith("Open: ") for ln in lines)
    assert lines[-1].startswith("Next: ")
    from kb.trail import ops

    for i in range(15):
        ops.add(kb, kind="topic", title=f"A long topic title number {i} " + "x" * 80,
                parent=graph["goal"], no_commit=True)
    assert ok(kb, "brief")["chars"] <= 400


def test_frontier(kb: Path, graph: dict[str, str]) -> None:
    v = ok(kb, "frontier")
    verify = [s for s in v["suggestions"] if s["action"] == "verify"]
    # The hypothesis without evidence comes before the one with a child and a supports edge.
    assert [s["id"] for s in verify] == [graph["h1"], graph["h2"]]
    assert verify[1]["reason"] == "open hypothesis with 2 pieces of evidence"
    assert any(s["action"] == "resolve" and s["id"] == graph["h1"] for s in v["suggestions"])
    assert any(s["track"] == "switch" for s in v["suggestions"])
    assert v["avoid"] == [{"id": graph["d1"], "title": "Sorting tools did not help",
                           "reason": "misses stayed at 50%"}]


def test_stats(kb: Path, graph: dict[str, str]) -> None:
    v = ok(kb, "stats")
    assert v["nodes"] == 12
    assert v["by_kind"] == {"artifact": 1, "conclusion": 1, "dead_end": 1, "evidence": 1,
                            "goal": 2, "hypothesis": 2, "question": 1, "topic": 3}
    assert v["edges"] == {"contradicts": 1, "supports": 1}
    assert sum(v["actors"]["created"].values()) == 12


def test_find_node_path_tree_subtree(kb: Path, graph: dict[str, str]) -> None:
    f = ok(kb, "find", "clock")
    assert [r["id"] for r in f["results"]] == [graph["h2"]]
    assert "clock line" in f["results"][0]["snippet"]
    f = ok(kb, "find", "prefix")
    assert f["results"][0]["id"] in (graph["t1"], graph["h1"], graph["e1"])
    n = ok(kb, "node", graph["h2"])
    assert n["version"] == 1 and [c["id"] for c in n["children"]] == [graph["e1"]]
    assert n["edges"]["in"][0]["kind"] == "supports"
    assert [p["id"] for p in ok(kb, "path", graph["e1"])["path"]] == \
        [graph["goal"], graph["t1"], graph["h2"], graph["e1"]]
    tr = ok(kb, "tree", "--depth", "1")
    assert [r["id"] for r in tr["roots"]] == [graph["goal"], graph["other"]]
    assert tr["roots"][0]["children"][0]["children"] == [] and tr["roots"][0]["children"][0]["more"] == 4
    st = ok(kb, "subtree", graph["t1"], "--depth", "2")
    assert st["node"]["id"] == graph["t1"]
    assert len(st["tree"]["children"]) == 4
    t = text(kb, "tree", "--depth", "2")
    assert "Make the prompt cache hit" in t and "… 1 more" in t
    assert ok(kb, "tree", graph["h2"])["roots"][0]["children"][0]["id"] == graph["e1"]
    r = invoke("trail", "node", "nnope", "--json", cwd=kb)
    assert r.code == 1 and "no trail node" in r.json()["error"]["message"]


def test_max_nodes_archives_the_oldest_done_leaves(kb: Path) -> None:
    """Past 5,000 live nodes the oldest done leaves leave the live views (still in history)."""
    ops_dir = kb / ".explore-tree" / "ops" / "2026-12"
    ops_dir.mkdir(parents=True)
    lines = [{"v": 1, "id": "20261201T090000Z-aaaaaaaaaaaa-0000", "lc": 1, "op": "add",
              "at": "2026-12-01T09:00:00Z", "actor": "gen",
              "node": {"id": "nroot000000", "kind": "goal", "title": "big"}}]
    for i in range(5010):
        lines.append({"v": 1, "id": f"20261201T090000Z-aaaaaaaaaaaa-{i + 1:05d}", "lc": 1,
                      "op": "add", "at": f"2026-12-01T09:{i // 100:02d}:{i % 60:02d}Z",
                      "actor": "gen", "node": {"id": f"n{i:010d}", "kind": "note",
                                               "title": f"leaf {i}", "parent": "nroot000000",
                                               "status": "done" if i < 20 else "open"}})
    (ops_dir / "20261201T090000Z-aaaaaaaaaaaa.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    st = ok(kb, "stats")
    assert st["all_nodes"] == 5011 and st["hidden"] == 11 and st["nodes"] == 5000
    hidden_one = ok(kb, "node", "n0000000000")
    assert hidden_one["live"] is False  # still in history, reachable by id
    assert ok(kb, "node", "n0000000019")["live"] is True
    assert all(f["id"] != "n0000000000" or f["archived"] for f in ok(kb, "find", "leaf 0")["results"])


def test_snapshot_for_a_panel(kb: Path, graph: dict[str, str]) -> None:
    v = ok(kb, "snapshot")
    assert len(v["nodes"]) == 12 and v["truncated"] is False
    assert v["roots"] == [graph["goal"], graph["other"]]
    assert {e["kind"] for e in v["edges"]} == {"contradicts", "supports"}
    assert v["stats"]["nodes"] == 12 and "suggestions" in v["frontier"]
    small = ok(kb, "snapshot", "--limit", "1", "--focus", graph["h2"])
    # The newest node and its ancestors, so that the tree stays connected.
    ids = [n["id"] for n in small["nodes"]]
    assert small["truncated"] is True and small["focus"] == graph["h2"]
    assert ids[0] in (graph["goal"], graph["other"]) and len(ids) <= 3
    for n in small["nodes"]:
        assert n["parent"] is None or n["parent"] in ids


def test_a_count_below_its_minimum_is_a_usage_error(kb: Path, graph: dict[str, str]) -> None:
    """Every count option of the trail views refuses alike (exit 2, kind "usage"), as
    ``snapshot --limit -1`` did: a negative ``find --limit`` used to answer "nothing
    matches" with exit 0, and ``--limit 0`` fell back to the default."""
    cases = [["find", "prefix", "--limit", "-5"], ["find", "prefix", "--limit", "0"],
             ["snapshot", "--limit", "-1"], ["snapshot", "--limit", "0"],
             ["tree", "--depth", "-1"], ["subtree", graph["t1"], "--depth", "-2"]]
    for args in cases:
        option = args[-2]
        r = invoke("trail", *args, cwd=kb)
        assert r.code == 2, (args, r.stdout, r.stderr)
        assert option in r.stderr and "nothing matches" not in r.stdout, args
        r = invoke("trail", *args, "--json", cwd=kb)
        err = r.json()["error"]
        assert r.code == 2 and err["kind"] == "usage" and option in err["message"], args
    # The smallest accepted values still answer.
    assert len(ok(kb, "find", "prefix", "--limit", "1")["results"]) == 1
    assert ok(kb, "tree", "--depth", "0")["roots"][0]["children"] == []


def test_the_library_refuses_a_limit_below_1(kb: Path, graph: dict[str, str]) -> None:
    """``run_view`` (what the MCP tool calls) refuses as the CLI does; a limit of 0 is
    refused too, not read as "no limit given"."""
    from kb.errors import UsageError
    from kb.trail.views import run_view

    for name, params in [("find", {"query": "prefix", "limit": -5}),
                         ("find", {"query": "prefix", "limit": 0}),
                         ("snapshot", {"limit": 0})]:
        with pytest.raises(UsageError, match="limit must be at least 1"):
            run_view(kb, name, **params)
    assert run_view(kb, "find", query="prefix")["total"] == 3  # no limit given: the default


def test_every_view_has_a_text_form(kb: Path, graph: dict[str, str]) -> None:
    outs = {v: text(kb, *args) for v, args in {
        "overview": ["overview"], "trunk": ["trunk"], "brief": ["brief"],
        "frontier": ["frontier"], "stats": ["stats"], "find": ["find", "prefix"],
        "node": ["node", graph["h2"]], "path": ["path", graph["e1"]], "tree": ["tree"],
        "subtree": ["subtree", graph["t1"]]}.items()}
    assert outs["stats"].startswith("nodes 12 ")
    assert "verify " in outs["frontier"] and "Avoid:" in outs["frontier"]
    assert outs["brief"].startswith("Goal: Speed up the index")
    assert "version 1" in outs["node"] and "← supports" in outs["node"]
    assert outs["path"].splitlines()[-1].strip().startswith(f"○ {graph['e1']} evidence:")
    assert f"topic {graph['t1']} Prefix stability" in outs["trunk"]
    for name, out in outs.items():
        assert out.strip(), name


def test_views_find_the_kb_from_a_folder_inside_it(kb: Path, graph: dict[str, str]) -> None:
    from kb.errors import NotAKnowledgeBase
    from kb.repo import find_root, open_kb
    from kb.trail.replay import kb_root

    sub = kb / "notes" / "deep"
    sub.mkdir(parents=True)
    (sub / "a.md").write_text("x\n", encoding="utf-8")
    assert kb_root(sub) == find_root(sub) == kb.resolve()  # the same rule as kb.repo's
    assert kb_root(str(sub)) == kb_root(open_kb(sub)) == kb_root(sub / "a.md")
    with pytest.raises(NotAKnowledgeBase, match="does not exist"):  # as open_kb says it
        kb_root(sub / "missing.md")
    r = invoke("trail", "overview", "--json", cwd=sub)
    assert r.code == 0, r.stderr
    assert r.json()["goal"]["id"] == graph["other"]


def test_a_view_outside_a_kb_is_an_environment_error(tmp_path: Path) -> None:
    r = invoke("trail", "overview", "--json", cwd=tmp_path)
    assert r.code == 2
    assert r.json()["error"]["kind"] == "environment"
    assert "no kb.toml" in r.json()["error"]["message"]


def test_a_view_process_imports_no_index_git_or_config(kb: Path, graph: dict[str, str]) -> None:
    # The view path of a whole process (issue 15: ≤ 0.3 s per view) stays free of the
    # modules a view does not need: SQLite, the git layer, kb.toml parsing, writes.
    import subprocess
    import sys

    from conftest import source_env

    code = ("import sys; from kb_cli.main import main; rc = main(['trail', 'trunk', '--json']); "
            "print(); print(rc, ' '.join(sorted(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=kb, env=source_env(),
                          capture_output=True, text=True, timeout=60)
    rc, mods = proc.stdout.strip().splitlines()[-1].split(" ", 1)
    assert rc == "0", proc.stderr
    json.loads(proc.stdout.strip().rsplit("\n", 1)[0])  # the view itself was printed
    loaded = set(mods.split())
    assert "kb.trail.views" in loaded
    assert not loaded & {"sqlite3", "kb.index", "kb.repo", "kb.git", "kb.config", "tomllib",
                         "kb.trail.ops", "kb.trail.text", "secrets", "subprocess"}
