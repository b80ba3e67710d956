"""`kb sync` renumbers the refs of the exploration graph's nodes the branch recorded.

The case a tester saw: two clones of one KB sharing a bare repository, kb's hooks installed.
Alice adds H1 and pushes; Bob adds his own H1 and records a trail node with ``--ref H1``,
then syncs. ``H1 -> H2`` renumbered Bob's hypothesis in tree.md, but the node still said
``refs: H1`` — Alice's hypothesis after the merge. The renumber commit now rewrites the refs
in the log files Bob's branch added (the upstream holds none of them), and nothing else in
them; a ref in a log file the upstream holds too is shared history: left as it is and
reported (``refs_left``, one line of ``kb sync``'s output).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, make_team
from trail_support import ok


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """:func:`conftest.make_team` with kb's clock pinned and kb's hooks in both clones."""
    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    t = make_team(tmp_path, monkeypatch)
    for clone in (t["a"], t["b"]):
        res = invoke("hooks", "install", cwd=clone)
        assert res.code == 0, res.stdout + res.stderr
    return t


def _kb(clone: Path, *args: str) -> None:
    res = invoke(*args, cwd=clone)
    assert res.code == 0, (args, res.stdout, res.stderr)


def _refs(clone: Path, nid: str) -> list[str]:
    """The node's refs, as ``kb trail node`` shows them."""
    return ok(clone, "node", nid)["refs"]


def _log_files(clone: Path, rev: str) -> dict[str, str]:
    """Path -> text of every trail log file of ``rev``."""
    paths = git(clone, "ls-tree", "-r", "--name-only", rev, "--", ".explore-tree/ops").split()
    return {p: git(clone, "show", f"{rev}:{p}") for p in paths}


def _alice_and_bob_add_h1(a: Path, b: Path) -> None:
    _kb(a, "hyp", "add", "A idea")
    git(a, "push", "-q", "origin", "main")
    _kb(b, "hyp", "add", "B idea")


def test_sync_renumbers_the_refs_of_the_trail_nodes_the_branch_recorded(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    root = git(b, "rev-parse", "HEAD")
    _alice_and_bob_add_h1(a, b)
    idea = ok(b, "add", "--kind", "hypothesis", "--title", "idea on H1", "--ref", "H1",
              "--ref", "H12")["id"]
    later = ok(b, "add", "--kind", "question", "--title", "what next")["id"]
    ok(b, "set", later, "--refs", "H1,experiments/E001.md")  # a `set` op's refs follow too
    ok(b, "render")
    before = _log_files(b, "HEAD")

    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, json.dumps(data, ensure_ascii=False)[:3000] + res.stderr
    assert data["renumbered"] == {"H1": "H2"} and data["merge"] == "merged"
    # The node points at Bob's hypothesis, under its new ID; H12 is another ID.
    assert _refs(b, idea) == ["H2", "H12"]
    assert _refs(b, later) == ["H2", "experiments/E001.md"]  # E001 was not renumbered
    assert data["refs_left"] == []
    # In the renumber commit: the log files change in their refs only (same operations,
    # ids, clocks, times, titles), written as kb writes a log line.
    rc = data["renumber_commit"]
    after = _log_files(b, rc)
    assert after.keys() == before.keys()
    changed = {p for p in before if before[p] != after[p]}
    assert len(changed) == 2 and changed <= set(git(b, "show", "--name-only", "--format=", rc).split())
    for p in changed:
        for old, new in zip(before[p].splitlines(), after[p].splitlines()):
            o, n = json.loads(old), json.loads(new)
            for op in (o, n):
                (op.get("node") if op["op"] == "add" else op.get("fields", {})).pop("refs", None)
            assert o == n
            assert new == json.dumps(json.loads(new), ensure_ascii=False, sort_keys=True,
                                     separators=(",", ":"))
    assert "idea on H1" in after[next(p for p in changed if idea in after[p])]  # titles stay
    # TRAIL.md (which shows no refs) was not rewritten as prose: fresh in the renumber
    # commit and after the merge.
    assert git(b, "rev-parse", f"{rc}:TRAIL.md") == git(b, "rev-parse", f"{rc}~1:TRAIL.md")
    for rev in (rc, "HEAD"):
        res = invoke("verify", "--rev", rev, "--json", cwd=b)
        assert "KB241" not in {d["code"] for d in res.json()["diagnostics"]}, res.stdout
    assert invoke("trail", "render", "--check", cwd=b).code == 0
    # Every check accepts the rewrite: the whole history, and against the target.
    res = invoke("verify", "--range", f"{root}..HEAD", "--json", cwd=b)
    assert res.code == 0, res.stdout
    res = invoke("verify", "--range", "origin/main..HEAD", "--against", "origin/main", cwd=b)
    assert res.code == 0, res.stdout + res.stderr
    assert git(b, "status", "--porcelain") == ""
    git(b, "push", "-q", "origin", "HEAD:main")
    git(a, "pull", "-q", "--ff-only")
    assert _refs(a, idea) == ["H2", "H12"]


def test_sync_reports_a_ref_in_a_log_file_the_upstream_holds_too(team: dict[str, Path]) -> None:
    """Alice took Bob's trail recording (its log file, the same bytes) before he synced:
    that file is shared history, the upstream reads its ref as its own H1, and Bob's sync
    does not rewrite it — it says so. A node whose refs Bob set again in a file of his
    own is renumbered there, and not reported."""
    a, b = team["a"], team["b"]
    _alice_and_bob_add_h1(a, b)
    shared = ok(b, "add", "--kind", "hypothesis", "--title", "shared idea", "--ref", "H1")
    fixed = ok(b, "add", "--kind", "hypothesis", "--title", "fixed idea", "--ref", "H1")
    for rec in (shared, fixed):
        (path,) = rec["paths"]
        (a / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(b / path, a / path)
    commit_all(a, "take Bob's trail recordings")
    git(a, "push", "-q", "origin", "main")
    ok(b, "set", fixed["id"], "--refs", "H1,q9")

    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, json.dumps(data, ensure_ascii=False)[:3000] + res.stderr
    assert data["renumbered"] == {"H1": "H2"} and data["merge"] == "merged"
    assert data["refs_left"] == [{"node": shared["id"], "path": shared["paths"][0], "ref": "H1",
                                  "old": "H1", "new": "H2"}]
    assert _refs(b, shared["id"]) == ["H1"]
    assert _refs(b, fixed["id"]) == ["H2", "q9"]
    # The shared files are as both sides hold them.
    for rec in (shared, fixed):
        assert git(b, "rev-parse", f"HEAD:{rec['paths'][0]}") == \
            git(b, "rev-parse", f"origin/main:{rec['paths'][0]}")


def test_sync_says_which_refs_it_left(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    _alice_and_bob_add_h1(a, b)
    rec = ok(b, "add", "--kind", "hypothesis", "--title", "shared idea", "--ref", "H1")
    (path,) = rec["paths"]
    (a / path).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(b / path, a / path)
    commit_all(a, "take Bob's trail recording")
    git(a, "push", "-q", "origin", "main")
    res = invoke("sync", cwd=b)
    assert res.code == 0, res.stderr
    line = next(ln for ln in res.stderr.splitlines() if rec["id"] in ln)
    assert line.startswith(f"kb sync: trail node {rec['id']} still refs H1 ({path}, which "
                           "origin/main holds too, is not rewritten)")
    assert "this branch's is H2 now" in line and f"kb trail set {rec['id']} --refs" in line


def test_rewrite_trail_log_changes_refs_only() -> None:
    from kb.merge.renumber import Plan, refs_left, rewrite, rewrite_trail_log

    p = Plan(ids={"H1": "H2", "H1.1": "H2.1", "E001": "E002"},
             kinds={"H1": "hypothesis", "H1.1": "hypothesis", "E001": "experiment"})
    add = {"v": 1, "id": "b-0000", "lc": 3, "op": "add",
           "node": {"id": "n1", "title": "H1 first", "refs": ["H1", "H1.1", "H12", "experiments/E001.md"]}}
    sett = {"v": 1, "id": "b-0001", "lc": 3, "op": "set", "node": "n2",
            "fields": {"refs": ["H1"], "title": "about H1"}}
    link = {"v": 1, "id": "b-0002", "lc": 3, "op": "link", "from": "n1", "to": "n2", "note": "H1"}
    lines = [json.dumps(add), "not json H1", json.dumps(sett), json.dumps(link)]
    data = ("\n".join(lines) + "\n").encode()
    out = rewrite_trail_log(data, p).decode().split("\n")
    assert json.loads(out[0])["node"] == dict(add["node"], refs=["H2", "H2.1", "H12", "experiments/E002.md"])
    assert out[1] == lines[1] and out[3] == lines[3] and out[4] == ""  # untouched, byte for byte
    assert json.loads(out[2])["fields"] == {"refs": ["H2"], "title": "about H1"}
    unrelated = (json.dumps(link) + "\n").encode()
    assert rewrite_trail_log(unrelated, p) is unrelated
    # rewrite() takes the log files among the branch's paths, and leaves TRAIL.md alone.
    files = {".explore-tree/ops/2026-12/b.jsonl": data, "TRAIL.md": b"- idea on H1\n"}
    new = rewrite(list(files), files.get, p)
    assert set(new) == {".explore-tree/ops/2026-12/b.jsonl"}
    # refs_left: the last operation writing a node's refs counts.
    own = (json.dumps(dict(sett, id="c-0000", lc=4, fields={"refs": ["q1"]})) + "\n").encode()
    left = refs_left({"s.jsonl": data, "o.jsonl": own}, {"s.jsonl"}, p)
    assert [(x.node, x.ref, x.old, x.new) for x in left] == [
        ("n1", "H1", "H1", "H2"), ("n1", "H1.1", "H1.1", "H2.1"),
        ("n1", "experiments/E001.md", "E001", "E002")]
