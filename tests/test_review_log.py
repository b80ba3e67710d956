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
