"""``kb log ID``: one object's history, oldest first, following renumberings."""

from __future__ import annotations

from pathlib import Path

from conftest import git, invoke


def _kb(root: Path, *args: str) -> None:
    r = invoke(*args, cwd=root)
    assert r.code == 0, (args, r.stdout, r.stderr)


def _log(root: Path, obj_id: str) -> dict:
    r = invoke("log", obj_id, "--json", cwd=root)
    assert r.code == 0, (r.stdout, r.stderr)
    return r.json()


def test_hypothesis_status_timeline(example_kb: Path) -> None:
    root = example_kb
    _kb(root, "hyp", "add", "Caching halves setup", "--parent", "H1")
    _kb(root, "exp", "new", "--hyp", "H1.3", "Warm the cache")
    _kb(root, "hyp", "add", "Unrelated", "--parent", "H1")  # touches tree.md, not H1.3
    _kb(root, "exp", "result", "E005", "--data", "12 min → 6 min", "--conclusion", "支持",
        "--reason", "halved")
    _kb(root, "hyp", "edit", "H1.3", "Caching the wheels halves setup", "--reason", "precision")
    d = _log(root, "H1.3")
    assert (d["id"], d["kind"], d["path"], d["aliases"]) == ("H1.3", "hypothesis", "tree.md", [])
    ops = [e["op"] for e in d["entries"]]
    assert ops == ["hyp.add", "exp.new", "exp.result", "hyp.edit"]
    assert [e["status"] for e in d["entries"]] == ["待验", "进行中", "被支持", "被支持"]
    first, _, result, edit = d["entries"]
    assert first["change"] == "created" and first["changes"]["statement"]["to"] == "Caching halves setup"
    assert result["changes"]["evidence"] == {"from": [], "to": ["E005"]}
    assert edit["override"] == "precision"
    assert edit["changes"]["statement"] == {"from": "Caching halves setup",
                                            "to": "Caching the wheels halves setup"}
    for e in d["entries"]:
        assert set(e) >= {"commit", "op", "author", "time"} and len(e["commit"]) == 40
        assert e["author"] == "KB Test" and e["time"].startswith("2026-01-01T00:00:00")
    text = invoke("log", "H1.3", cwd=root).stdout
    assert "status: 进行中 → 被支持" in text and "override: precision" in text


def test_problem_entries_and_verdict(example_kb: Path) -> None:
    root = example_kb
    _kb(root, "verdict", "q2#解法1", "--vote", "alice=1", "--vote", "bob=0.9")
    d = _log(root, "q2")
    assert d["kind"] == "problem" and d["entries"][0]["change"] == "created"
    last = d["entries"][-1]
    assert last["op"] == "verdict"
    assert [v["r"] for v in last["verdict"]] == ["r-q2-s1"]
    assert sorted(x["verifier"] for x in last["verdict"][0]["votes"]) == ["alice", "bob"]
    assert any("解法 1" in x for x in last["changes"]["entries"]["to"])
    # The text prints numbers as kb diff and the card do: 1, not 1.0.
    text = invoke("log", "q2", cwd=root).stdout
    assert "verdict r-q2-s1: 0.95 (alice 1, bob 0.9; consensus)" in text and "1.0" not in text


def test_follows_renumbering(example_kb: Path) -> None:
    root = example_kb
    _kb(root, "hyp", "add", "Parallel branch idea", "--parent", "H1")
    tree = (root / "tree.md").read_text(encoding="utf-8").replace("H1.3", "H1.7")
    (root / "tree.md").write_text(tree, encoding="utf-8")
    git(root, "commit", "-q", "-am", "renumber\n\nKb-Renumber: H1.3 -> H1.7")
    _kb(root, "hyp", "status", "H1.7", "进行中")
    d = _log(root, "H1.7")
    assert d["aliases"] == ["H1.3"]
    assert [(e["id"], e["change"]) for e in d["entries"]] == \
        [("H1.3", "created"), ("H1.7", "renumbered"), ("H1.7", "changed")]
    assert d["entries"][1]["renumbered_from"] == "H1.3"


def test_unknown_id_is_refused(example_kb: Path) -> None:
    r = invoke("log", "H99", "--json", cwd=example_kb)
    assert r.code == 1 and "H99" in r.json()["error"]["message"]
    assert r.json()["error"]["kind"] == "not_found"  # as `kb show H99`


def test_diff_and_log_are_mcp_tools(example_kb: Path, monkeypatch) -> None:
    """The MCP tools return the CLI's --json data (the in-memory SDK client)."""
    import asyncio
    import json

    from mcp import Client

    from kb.mcp import build_server

    root = example_kb
    _kb(root, "hyp", "add", "Caching halves setup", "--parent", "H1")
    monkeypatch.chdir(root)

    async def session() -> tuple[dict, dict, bool]:
        async with Client(build_server(root)) as c:
            d = await c.call_tool("diff", {"range": "HEAD~1..HEAD", "markdown": True})
            lg = await c.call_tool("log", {"id": "H1.3"})
            bad = await c.call_tool("diff", {"range": "HEAD...nowhere"})
            return json.loads(d.content[0].text), json.loads(lg.content[0].text), bad.is_error

    d, lg, bad = asyncio.run(session())
    assert d == {**invoke("diff", "HEAD~1..HEAD", "--json", cwd=root).json(), "markdown": d["markdown"]}
    assert d["markdown"].startswith("## Research diff") and [x["id"] for x in d["hypotheses"]["added"]] == ["H1.3"]
    assert lg == _log(root, "H1.3")
    assert bad


# -- two branches add the same ID; `kb sync` renumbers one of them ---------------------


def _sha(root: Path, rev: str = "HEAD") -> str:
    return git(root, "rev-parse", rev)


def test_log_after_sync_renumbering_keeps_the_two_objects_apart(team: dict[str, Path]) -> None:
    """Both branches add H1; `kb sync` on b renumbers b's H1 to H2 and merges. `kb log H1`
    shows only a's object; `kb log H2` shows b's, including its life as H1 on b's branch."""
    a, b = team["a"], team["b"]
    _kb(a, "hyp", "add", "A idea")
    a_add = _sha(a)
    _kb(a, "hyp", "status", "H1", "进行中")
    a_status = _sha(a)
    git(a, "push", "-q", "origin", "main")
    _kb(b, "hyp", "add", "B idea")
    b_add = _sha(b)
    _kb(b, "hyp", "edit", "H1", "B idea, sharper", "--reason", "precision")
    b_edit = _sha(b)
    r = invoke("sync", "--json", cwd=b)
    assert r.code == 0, r.stdout + r.stderr
    data = r.json()
    assert data["renumbered"] == {"H1": "H2"} and data["merge"] == "merged"
    renumber = data["renumber_commit"]
    _kb(b, "hyp", "status", "H2", "进行中")
    b_after = _sha(b)
    _kb(b, "hyp", "edit", "H1", "A idea, restated", "--reason", "wording")
    a_after = _sha(b)

    h1 = _log(b, "H1")
    assert h1["aliases"] == []
    assert [(e["commit"], e["id"], e["change"], e["status"]) for e in h1["entries"]] == [
        (a_add, "H1", "created", "待验"),
        (a_status, "H1", "changed", "进行中"),
        (a_after, "H1", "changed", "进行中"),
    ]
    assert h1["entries"][0]["changes"]["statement"] == {"from": None, "to": "A idea"}
    assert h1["entries"][1]["changes"] == {"status": {"from": "待验", "to": "进行中"}}
    assert h1["entries"][2]["changes"] == {"statement": {"from": "A idea", "to": "A idea, restated"}}

    h2 = _log(b, "H2")
    assert h2["aliases"] == ["H1"]
    assert [(e["commit"], e["id"], e["change"], e["status"]) for e in h2["entries"]] == [
        (b_add, "H1", "created", "待验"),
        (b_edit, "H1", "changed", "待验"),
        (renumber, "H2", "renumbered", "待验"),
        (b_after, "H2", "changed", "进行中"),
    ]
    assert h2["entries"][1]["changes"] == {"statement": {"from": "B idea", "to": "B idea, sharper"}}
    assert h2["entries"][1]["override"] == "precision"
    assert h2["entries"][2]["renumbered_from"] == "H1" and h2["entries"][2]["changes"] == {}
    assert h2["entries"][3]["changes"] == {"status": {"from": "待验", "to": "进行中"}}
    # The text output names the old ID on the entries before the renumbering.
    text = invoke("log", "H2", cwd=b).stdout.splitlines()
    assert text[0].startswith("H2  (hypothesis)") and "(earlier: H1)" in text[0]
    assert sum(" as H1" in line for line in text) == 2


def test_shallow_clone_marks_the_boundary_and_warns(example_kb: Path, tmp_path: Path) -> None:
    """The first commit of a shallow clone has no known parent: an object already in it
    is not "created" there; the entry is the boundary and KB390 says the history is cut."""
    root = example_kb
    _kb(root, "hyp", "add", "Caching halves setup", "--parent", "H1")  # H1.3, not fetched
    _kb(root, "hyp", "status", "H1.3", "进行中")
    boundary = _sha(root)
    _kb(root, "hyp", "add", "Warm runners", "--parent", "H1")  # H1.4, after the boundary
    added = _sha(root)
    _kb(root, "hyp", "edit", "H1.3", "Caching the wheels halves setup", "--reason", "precision")
    edited = _sha(root)
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "3", f"file://{root}", str(clone))
    assert git(clone, "rev-parse", "--is-shallow-repository") == "true"
    assert git(clone, "rev-list", "HEAD").splitlines() == [edited, added, boundary]

    d = _log(clone, "H1.3")
    assert [(e["commit"], e["change"], e["status"]) for e in d["entries"]] == [
        (boundary, "boundary", "进行中"), (edited, "changed", "进行中")]
    assert d["entries"][0]["changes"]["statement"] == {"from": None, "to": "Caching halves setup"}
    assert [(w["code"], w["severity"], w["commit"]) for w in d["warnings"]] == \
        [("KB390", "warning", boundary)]
    assert "git fetch --unshallow" in d["warnings"][0]["message"]
    r = invoke("log", "H1.3", cwd=clone)
    assert r.code == 0 and "boundary (shallow clone" in r.stdout and " created" not in r.stdout
    assert "warning: KB390" in r.stderr
    # An object added after the boundary has its whole history: created, no warning.
    d = _log(clone, "H1.4")
    assert [(e["commit"], e["change"]) for e in d["entries"]] == [(added, "created")]
    assert d["warnings"] == []
    # The full clone has the same object created, unwarned.
    d = _log(root, "H1.3")
    assert [e["change"] for e in d["entries"]] == ["created", "changed", "changed"] and d["warnings"] == []


def test_log_of_a_renumbered_experiment_file(team: dict[str, Path]) -> None:
    """One object per file: b's E001.md became E002.md in the renumber commit; a's E001.md
    is another object. Each log keeps to its own file's life."""
    a, b = team["a"], team["b"]
    _kb(a, "hyp", "add", "A idea")
    _kb(a, "hyp", "add", "A child", "--parent", "H1")
    _kb(a, "exp", "new", "--hyp", "H1.1", "A measures")
    a_exp = _sha(a)
    git(a, "push", "-q", "origin", "main")
    _kb(b, "hyp", "add", "B idea")
    _kb(b, "exp", "new", "--hyp", "H1", "B measures")
    b_exp = _sha(b)
    _kb(b, "exp", "result", "E001", "--data", "3 → 2", "--conclusion", "支持", "--reason", "fewer")
    b_result = _sha(b)
    r = invoke("sync", "--json", cwd=b)
    assert r.code == 0, r.stdout + r.stderr
    assert r.json()["renumbered"] == {"H1": "H2", "E001": "E002"}
    renumber = r.json()["renumber_commit"]

    e1 = _log(b, "E001")
    assert (e1["path"], e1["aliases"]) == ("experiments/E001.md", [])
    assert [(e["commit"], e["id"], e["change"]) for e in e1["entries"]] == [(a_exp, "E001", "created")]
    e2 = _log(b, "E002")
    assert (e2["path"], e2["aliases"]) == ("experiments/E002.md", ["E001"])
    assert [(e["commit"], e["id"], e["change"]) for e in e2["entries"]] == [
        (b_exp, "E001", "created"), (b_result, "E001", "changed"), (renumber, "E002", "renumbered")]
    assert e2["entries"][2]["changes"] == {"hypothesis": {"from": "H1", "to": "H2"}}


def test_a_merge_that_combines_both_sides_has_its_own_entry(example_kb: Path) -> None:
    """Each entry compares a commit with its own parent; a merge appears only when its
    result is none of its parents' (both branches changed the object)."""
    root = example_kb
    main = git(root, "rev-parse", "--abbrev-ref", "HEAD")
    git(root, "checkout", "-q", "-b", "side")
    _kb(root, "hyp", "evidence", "H1.2", "E004")
    side = _sha(root)
    git(root, "checkout", "-q", main)
    _kb(root, "hyp", "edit", "H1.2", "Collection and imports take over 5 minutes", "--reason", "shorter")
    edit = _sha(root)
    git(root, "merge", "-q", "--no-ff", "-X", "ours", "--no-edit", "side")  # DASHBOARD.md: ours
    merge = _sha(root)
    d = _log(root, "H1.2")
    entries = {e["commit"]: e for e in d["entries"]}
    assert [e["commit"] for e in d["entries"]][-1] == merge and {side, edit} <= set(entries)
    assert entries[side]["changes"] == {"evidence": {"from": ["E003"], "to": ["E003", "E004"]}}
    assert entries[edit]["changes"]["statement"]["to"] == "Collection and imports take over 5 minutes"
    assert "evidence" not in entries[edit]["changes"]  # against its own parent, not the side branch
    assert entries[merge]["change"] == "changed"
    assert entries[merge]["changes"] == {"evidence": {"from": ["E003"], "to": ["E003", "E004"]}}
    # A merge that takes one side's version of the object has no entry.
    git(root, "checkout", "-q", "-b", "other", edit)
    _kb(root, "hyp", "add", "Unrelated", "--parent", "H1")
    git(root, "checkout", "-q", main)
    git(root, "merge", "-q", "--no-ff", "-X", "ours", "--no-edit", "other")
    assert [e["commit"] for e in _log(root, "H1.2")["entries"]] == [e["commit"] for e in d["entries"]]
