"""The exploration graph's storage (issue 15): an op log that merges with plain git merge,
deterministic idempotent replay, torn entries reported, serialised writers, one commit each."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git, invoke, kb_script, source_env, tree_snapshot


@pytest.fixture
def trail_kb(tree_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    return tree_kb


def add(kb: Path, *args: str) -> dict:
    r = invoke("trail", "add", *args, "--json", cwd=kb)
    assert r.code == 0, r.stderr + r.stdout
    return r.json()


def view(kb: Path, *args: str) -> dict:
    r = invoke("trail", *args, "--json", cwd=kb)
    assert r.code == 0, r.stderr + r.stdout
    return r.json()


def test_two_recording_branches_merge_without_conflict_and_replay_to_the_union(trail_kb: Path) -> None:
    goal = add(trail_kb, "--kind", "goal", "--title", "Why does the cache miss?")["ids"][0]
    git(trail_kb, "checkout", "-q", "-b", "alice")
    a = add(trail_kb, "--kind", "hypothesis", "--title", "Tool order changes the prefix",
            "--parent", goal)["ids"][0]
    a2 = add(trail_kb, "--kind", "topic", "--title", "Prefix stability")["ids"][0]
    git(trail_kb, "checkout", "-q", "main")
    b = add(trail_kb, "--kind", "evidence", "--title", "Prefix lengths differ by 214 bytes",
            "--parent", goal)["ids"][0]
    invoke("trail", "set", goal, "--status", "active", cwd=trail_kb)
    # A plain merge, no drivers configured (as a forge's merge button does): kb init
    # registered kb's drivers, which a forge would not have.
    from kb.merge.drivers import DRIVERS

    for driver in DRIVERS:
        git(trail_kb, "config", "--remove-section", f"merge.{driver}", check=False)
    assert git(trail_kb, "config", "--get-regexp", r"^merge\.", check=False) == ""
    ops_file = git(trail_kb, "ls-files", ".explore-tree").splitlines()[0]
    assert git(trail_kb, "check-attr", "merge", "--", ops_file).endswith("unspecified")
    proc = subprocess.run(["git", "merge", "--no-edit", "alice"], cwd=trail_kb,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(trail_kb, "diff", "--name-only", "--diff-filter=U") == ""
    shutil.rmtree(trail_kb / ".kb", ignore_errors=True)
    merged = view(trail_kb, "node", goal)
    kids = {c["id"] for c in merged["children"]}
    assert kids == {a, b}
    assert merged["status"] == "active"
    st = view(trail_kb, "stats")
    assert st["nodes"] == 4 and st["by_kind"] == {"evidence": 1, "goal": 1, "hypothesis": 1,
                                                  "topic": 1}
    assert len({goal, a, a2, b}) == 4
    assert st["problems"] == 0


def test_each_recording_is_one_commit_touching_only_the_op_log(trail_kb: Path) -> None:
    before = git(trail_kb, "rev-parse", "HEAD")
    res = add(trail_kb, "--kind", "goal", "--title", "g")
    assert res["commit"] == git(trail_kb, "rev-parse", "HEAD")
    assert git(trail_kb, "rev-parse", "HEAD~1") == before
    files = git(trail_kb, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert files == res["paths"] and len(files) == 1
    assert files[0].startswith(".explore-tree/ops/2026-12/20261201T100000Z-")
    msg = git(trail_kb, "log", "-1", "--format=%B")
    assert "Kb-Op: trail.add" in msg and f"Kb-Id: {res['ids'][0]}" in msg
    assert git(trail_kb, "status", "--porcelain") == ""


def test_no_commit_leaves_the_recording_for_the_user(trail_kb: Path) -> None:
    before = git(trail_kb, "rev-parse", "HEAD")
    res = invoke("trail", "add", "--kind", "goal", "--title", "g", "--no-commit", "--json",
                 cwd=trail_kb).json()
    assert res["commit"] is None
    assert git(trail_kb, "rev-parse", "HEAD") == before
    assert git(trail_kb, "status", "--porcelain", "-uall") == f"?? {res['paths'][0]}"
    assert view(trail_kb, "stats")["nodes"] == 1


def test_replay_is_idempotent_and_deterministic(trail_kb: Path) -> None:
    g = add(trail_kb, "--kind", "goal", "--title", "g")["ids"][0]
    for i in range(3):
        add(trail_kb, "--kind", "question", "--title", f"q{i}", "--parent", g)
    first = view(trail_kb, "tree", "--depth", "5")
    # The same operation file seen twice (e.g. copied under another month) counts once.
    files = sorted((trail_kb / ".explore-tree" / "ops").rglob("*.jsonl"))
    dup = trail_kb / ".explore-tree" / "ops" / "2027-01" / files[1].name
    dup.parent.mkdir()
    shutil.copy(files[1], dup)
    shutil.rmtree(trail_kb / ".kb")
    again = view(trail_kb, "tree", "--depth", "5")
    assert again == first
    st = view(trail_kb, "stats")
    assert st["nodes"] == 4 and st["operations"] == 4
    # Cached and cold replays agree byte for byte.
    assert view(trail_kb, "node", g) == view(trail_kb, "node", g)


def test_torn_and_corrupt_entries_are_reported_with_path_and_skipped(trail_kb: Path) -> None:
    g = add(trail_kb, "--kind", "goal", "--title", "g")["ids"][0]
    bad = trail_kb / ".explore-tree" / "ops" / "2026-12" / "20261201T100001Z-000000000000.jsonl"
    good = json.dumps({"v": 1, "id": "20261201T100001Z-000000000000-0000", "op": "add", "lc": 9,
                       "at": "2026-12-01T10:00:01Z", "actor": "x",
                       "node": {"id": "n0000000001", "kind": "note", "title": "ok",
                                "parent": g}})
    bad.write_bytes(b"<<<<<<< HEAD\n" + good.encode() + b"\n[1, 2]\n{\"v\": 1, \"id\": \"tor")
    r = invoke("trail", "check", "--json", cwd=trail_kb)
    assert r.code == 1
    probs = r.json()["problems"]
    rel = ".explore-tree/ops/2026-12/20261201T100001Z-000000000000.jsonl"
    assert [(p["path"], p["line"]) for p in probs] == [(rel, 1), (rel, 3), (rel, 4)]
    assert "torn" in probs[2]["message"]
    v = view(trail_kb, "node", g)  # views keep working, with the good entry applied
    assert [c["id"] for c in v["children"]] == ["n0000000001"]
    assert len(v["log_problems"]) == 3
    text = invoke("trail", "overview", cwd=trail_kb)
    assert text.code == 0 and "3 log problem(s)" in text.stdout


def test_a_refused_write_changes_nothing(trail_kb: Path) -> None:
    add(trail_kb, "--kind", "goal", "--title", "g")
    before = tree_snapshot(trail_kb, skip_git=True)
    head = git(trail_kb, "rev-parse", "HEAD")
    r = invoke("trail", "add", "--kind", "question", "--title", "q", "--parent", "nffffffffff",
               "--json", cwd=trail_kb)
    assert r.code == 1 and r.json()["error"]["kind"] == "not_found"
    r = invoke("trail", "add", "--kind", "idea", "--title", "q", "--json", cwd=trail_kb)
    assert r.code == 2 and "accepted: goal topic" in r.json()["error"]["message"]
    after = tree_snapshot(trail_kb, skip_git=True)
    assert {k: v for k, v in after.items() if not k.startswith(".kb/")} == \
        {k: v for k, v in before.items() if not k.startswith(".kb/")}
    assert git(trail_kb, "rev-parse", "HEAD") == head


def test_concurrent_writers_on_one_machine_serialise(trail_kb: Path) -> None:
    g = add(trail_kb, "--kind", "goal", "--title", "g")["ids"][0]
    exe = kb_script()
    procs = [subprocess.Popen([exe, "trail", "add", "--kind", "question", "--title", f"q{i}",
                               "--parent", g, "--json"], cwd=trail_kb, env=source_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for i in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], [o[1] for o in outs]
    commits = {json.loads(o[0])["commit"] for o in outs}
    assert len(commits) == 4
    assert int(git(trail_kb, "rev-list", "--count", "HEAD")) == 2 + 4
    kids = view(trail_kb, "node", g)["children"]
    assert sorted(c["title"] for c in kids) == ["q0", "q1", "q2", "q3"]
    assert git(trail_kb, "status", "--porcelain") == ""


def _graph_state(kb: Path, use_cache: bool) -> dict:
    from kb.repo import open_kb
    from kb.trail.replay import load

    g = load(open_kb(kb), use_cache=use_cache)
    return {"nodes": [n.to_json() for n in g.nodes.values()], "roots": g.roots,
            "edges": [e.to_json() for e in g.edges], "problems": g.problems}


def test_merge_direction_does_not_matter_and_incremental_equals_cold(trail_kb: Path) -> None:
    goal = add(trail_kb, "--kind", "goal", "--title", "g")["ids"][0]
    topic = add(trail_kb, "--kind", "topic", "--title", "t", "--parent", goal)["ids"][0]
    git(trail_kb, "branch", "other")
    add(trail_kb, "--kind", "question", "--title", "main q", "--parent", topic)
    invoke("trail", "digest", topic, "by hand on main", cwd=trail_kb)
    git(trail_kb, "checkout", "-q", "other")
    add(trail_kb, "--kind", "hypothesis", "--title", "other h", "--parent", topic)
    invoke("trail", "set", topic, "--status", "active", cwd=trail_kb)
    git(trail_kb, "checkout", "-q", "-b", "m1", "main")
    git(trail_kb, "merge", "-q", "--no-edit", "other")
    shutil.rmtree(trail_kb / ".kb", ignore_errors=True)
    m1 = _graph_state(trail_kb, use_cache=False)
    git(trail_kb, "checkout", "-q", "-b", "m2", "other")
    git(trail_kb, "merge", "-q", "--no-edit", "main")
    m2 = _graph_state(trail_kb, use_cache=False)
    assert m1 == m2
    # The cache, extended recording by recording, agrees with a cold replay.
    add(trail_kb, "--kind", "evidence", "--title", "e", "--parent", topic)
    assert _graph_state(trail_kb, use_cache=True) == _graph_state(trail_kb, use_cache=False)


def test_moves_that_cross_on_two_branches_are_reported_not_a_crash(trail_kb: Path) -> None:
    x = add(trail_kb, "--kind", "topic", "--title", "x")["ids"][0]
    y = add(trail_kb, "--kind", "topic", "--title", "y")["ids"][0]
    git(trail_kb, "branch", "other")
    assert invoke("trail", "move", x, "--parent", y, cwd=trail_kb).code == 0
    git(trail_kb, "checkout", "-q", "other")
    assert invoke("trail", "move", y, "--parent", x, cwd=trail_kb).code == 0
    git(trail_kb, "merge", "-q", "--no-edit", "main")
    r = invoke("trail", "check", "--json", cwd=trail_kb)
    assert r.code == 1
    (prob,) = r.json()["problems"]
    assert "would make a cycle" in prob["message"] and prob["path"].startswith(".explore-tree/ops/")
    tree = view(trail_kb, "tree")
    assert len(tree["roots"]) == 1  # one of the moves applied, the other was skipped


def test_trail_diff_lists_the_nodes_a_range_added_or_closed(trail_kb: Path) -> None:
    g = add(trail_kb, "--kind", "goal", "--title", "g")["ids"][0]
    q = add(trail_kb, "--kind", "question", "--title", "q", "--parent", g)["ids"][0]
    base = git(trail_kb, "rev-parse", "HEAD")
    h = add(trail_kb, "--kind", "hypothesis", "--title", "h", "--parent", g)["ids"][0]
    invoke("trail", "set", q, "--status", "done", cwd=trail_kb)
    # Uncommitted recordings are not part of the range.
    invoke("trail", "add", "--kind", "note", "--title", "wip", "--no-commit", cwd=trail_kb)
    d = view(trail_kb, "diff", f"{base}..HEAD")
    assert [n["id"] for n in d["added"]] == [h]
    assert [n["id"] for n in d["closed"]] == [q]
    # `kb diff` lists them too, in text and Markdown as in JSON (a range of trail commits only).
    r = invoke("diff", f"{base}..HEAD", "--no-findings", cwd=trail_kb)
    assert r.code == 0, r.stderr
    assert "No research objects changed" not in r.stdout
    assert "Exploration graph\n" f"  node added {h} (hypothesis, open): h\n" \
           f"  node closed {q} (question, done): q\n" in r.stdout
    r = invoke("diff", f"{base}..HEAD", "--no-findings", "--format", "markdown", cwd=trail_kb)
    assert "### Exploration graph\n" f"- node added `{h}` (hypothesis, open): h\n" \
           f"- node closed `{q}` (question, **done**): q\n" in r.stdout
    r = invoke("diff", f"{base}..HEAD", "--no-findings", "--json", cwd=trail_kb)
    assert [n["id"] for n in r.json()["trail"]["added"]] == [h]
    r = invoke("trail", "diff", "nope..HEAD", "--json", cwd=trail_kb)
    assert r.code == 2 and "unknown revision" in r.json()["error"]["message"]


def test_a_kb_in_a_subfolder_and_a_symlinked_log(make_kb, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    kb = make_kb({}, commit=True, subdir="research")
    res = add(kb, "--kind", "goal", "--title", "g\x1b[31m red")
    assert res["paths"][0].startswith("research/.explore-tree/ops/")
    assert res["nodes"][0]["title"] == "g[31m red"  # control characters dropped
    assert invoke("trail", "render", cwd=kb).code == 0
    assert git(kb, "show", "--name-only", "--format=", "HEAD") == "research/TRAIL.md"
    add(kb, "--kind", "note", "--title", "n")
    r = invoke("verify", "--rev", "HEAD", "--json", cwd=kb)
    assert [d["code"] for d in r.json()["diagnostics"]] == ["KB241"]
    # A log folder that is a symbolic link is neither read nor written through.
    outside = tmp_path / "outside"
    shutil.move(str(kb / ".explore-tree"), outside)
    (kb / ".explore-tree").symlink_to(outside)
    r = invoke("trail", "add", "--kind", "note", "--title", "x", "--json", cwd=kb)
    assert r.code == 1 and "symbolic link" in r.json()["error"]["message"]
    st = view(kb, "stats")
    assert st["nodes"] == 0 and st["problems"] == 1
    assert st["log_problems"][0]["path"] == ".explore-tree"


def _op(batch: str, i: int, lc: int = 1) -> bytes:
    return json.dumps({"v": 1, "id": f"{batch}-{i:04d}", "lc": lc, "op": "add", "at": "t",
                       "actor": "a", "node": {"id": f"n{batch[-4:]}{i:06d}", "kind": "note",
                                              "title": "x"}}).encode() + b"\n"


def test_read_files_one_parse_names_each_operations_file_and_line(tmp_path: Path) -> None:
    """The fast path (the whole log parsed at once) attributes every operation to its file
    and line; one bad file anywhere falls back to reading file by file, which still keeps
    every good operation and names the bad line (two objects on one line included)."""
    from kb.trail.log import read_files

    d = tmp_path / "ops"
    d.mkdir()
    (d / "a.jsonl").write_bytes(_op("b-aaaa", 0) + _op("b-aaaa", 1))
    (d / "b.jsonl").write_bytes(_op("b-bbbb", 0))
    (d / "c.jsonl").write_bytes(_op("b-cccc", 0) + _op("b-cccc", 1) + _op("b-cccc", 2))
    rels = ["ops/a.jsonl", "ops/b.jsonl", "ops/c.jsonl"]
    probs: list = []
    ops = read_files(tmp_path, rels, probs)
    assert probs == []
    assert [(o["id"], o["_src"]) for o in ops] == [
        ("b-aaaa-0000", ("ops/a.jsonl", 1)), ("b-aaaa-0001", ("ops/a.jsonl", 2)),
        ("b-bbbb-0000", ("ops/b.jsonl", 1)), ("b-cccc-0000", ("ops/c.jsonl", 1)),
        ("b-cccc-0001", ("ops/c.jsonl", 2)), ("b-cccc-0002", ("ops/c.jsonl", 3))]
    # Two objects on one line of b: the counts no longer match; b's line is reported.
    (d / "b.jsonl").write_bytes(_op("b-bbbb", 0).rstrip(b"\n") + b"," + _op("b-bbbb", 1))
    probs = []
    ops = read_files(tmp_path, rels, probs)
    assert [o["id"] for o in ops] == ["b-aaaa-0000", "b-aaaa-0001", "b-cccc-0000",
                                      "b-cccc-0001", "b-cccc-0002"]
    assert [(p.path, p.line) for p in probs] == [("ops/b.jsonl", 1)]
    # A torn last line in c and an unreadable (missing) file: both reported, the rest kept.
    (d / "b.jsonl").write_bytes(_op("b-bbbb", 0))
    (d / "c.jsonl").write_bytes(_op("b-cccc", 0) + _op("b-cccc", 1)[:30])
    probs = []
    ops = read_files(tmp_path, rels + ["ops/gone.jsonl"], probs)
    assert [o["id"] for o in ops] == ["b-aaaa-0000", "b-aaaa-0001", "b-bbbb-0000",
                                      "b-cccc-0000"]
    assert sorted((p.path, p.line) for p in probs) == [("ops/c.jsonl", 2), ("ops/gone.jsonl", 0)]
    assert ops[3]["_src"] == ("ops/c.jsonl", 1)
    # Valid JSON that is no operation (no id; a list; a newer schema): file by file, reported.
    (d / "c.jsonl").write_bytes(_op("b-cccc", 0) + b'{"v": 1, "op": "add"}\n[1]\n'
                                + _op("b-cccc", 3).replace(b'"v": 1', b'"v": 99'))
    probs = []
    ops = read_files(tmp_path, rels, probs)
    assert [o["id"] for o in ops][-1] == "b-cccc-0000" and len(ops) == 4
    assert [(p.path, p.line) for p in probs] == [("ops/c.jsonl", 2), ("ops/c.jsonl", 3),
                                                 ("ops/c.jsonl", 4)]


def test_a_line_nested_too_deeply_is_a_problem_at_its_line(tmp_path: Path) -> None:
    """`[[[[…` a thousand deep on one line of a clean-looking log raised RecursionError in
    the one-parse fast path (kb verify, the hook and every trail view ended with exit 3):
    the line is a problem at its file and line, the other operations kept."""
    from kb.trail.log import read_files

    d = tmp_path / "ops"
    d.mkdir()
    (d / "a.jsonl").write_bytes(_op("b-aaaa", 0))
    (d / "b.jsonl").write_bytes(_op("b-bbbb", 0) + b"[" * 1000 + b"]" * 1000 + b"\n")
    probs: list = []
    ops = read_files(tmp_path, ["ops/a.jsonl", "ops/b.jsonl"], probs)
    assert [o["id"] for o in ops] == ["b-aaaa-0000", "b-bbbb-0000"]
    assert [(p.path, p.line) for p in probs] == [("ops/b.jsonl", 2)]


def test_deep_json_given_to_the_trail_commands_is_refused_not_a_crash(trail_kb: Path,
                                                                      tmp_path: Path) -> None:
    """The same nesting in a log file kb verify reads (KB242, exit 0: a warning), in
    `--children-json` (usage, exit 2) and in a transcript to ingest (exit 2): never exit 3,
    and nothing written."""
    goal = add(trail_kb, "--kind", "goal", "--title", "G")["ids"][0]
    deep = b"[" * 1000 + b"]" * 1000 + b"\n"
    bad = trail_kb / ".explore-tree" / "ops" / "x" / "a.jsonl"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(deep)
    r = invoke("verify", "--json", cwd=trail_kb)
    assert r.code == 0, r.stdout + r.stderr
    assert [(d["code"], d["path"], d["line"]) for d in r.json()["diagnostics"]
            if d["code"] == "KB242"] == [("KB242", ".explore-tree/ops/x/a.jsonl", 1)]
    assert invoke("trail", "check", cwd=trail_kb).code == 1
    assert invoke("trail", "tree", cwd=trail_kb).code == 0
    bad.unlink()
    before = tree_snapshot(trail_kb)
    head = git(trail_kb, "rev-parse", "HEAD")
    (tmp_path / "deep.json").write_bytes(deep)
    r = invoke("trail", "add", "--kind", "topic", "--title", "T", "--parent", goal,
               "--children-json", str(tmp_path / "deep.json"), cwd=trail_kb)
    assert r.code == 2 and "nested too deeply" in r.stderr, r.stderr
    assert invoke("trail", "ingest", str(tmp_path / "deep.json"), cwd=trail_kb).code == 2
    assert tree_snapshot(trail_kb) == before and git(trail_kb, "rev-parse", "HEAD") == head


def test_hits_count_once_per_session_and_always_without_one() -> None:
    """Replay: a ``hit`` (or a repeated ``add``) with a session counts once per node and
    session; one without a session (older and hand-written logs) always counts."""
    from kb.trail.replay import replay_blobs

    def line(i: int, **op: object) -> bytes:
        return json.dumps({"v": 1, "id": f"b-{i:04d}", "lc": i, "at": "t", "actor": "a",
                           **op}).encode() + b"\n"

    node = {"id": "n0000000001", "kind": "note", "title": "x", "fp": "f1"}
    log = (line(1, op="add", node=node, session="s1")
           + line(2, op="hit", nodes=["n0000000001"], session="s1")
           + line(3, op="add", node=node, session="s1")
           + line(4, op="hit", nodes=["n0000000001"], session="s2")
           + line(5, op="hit", nodes=["n0000000001"], session="s2")
           + line(6, op="add", node=dict(node, id="n0000000002"), session="s3")
           + line(7, op="hit", nodes=["n0000000001"]) + line(8, op="hit", nodes=["n0000000001"]))
    g = replay_blobs({".explore-tree/ops/x.jsonl": log})
    assert not g.problems and list(g.nodes) == ["n0000000001"]
    assert g.nodes["n0000000001"].hits == 1 + 1 + 1 + 2  # s2, s3 (same fp), two without


def test_an_entry_json_cannot_hold_in_python_is_a_log_problem(trail_kb: Path) -> None:
    """A number of 4,400 digits (Python's int() refuses it: ValueError, not a JSON error)
    and a nesting deeper than the recursion limit: each entry is a log problem at its line,
    skipped, and the views keep working (both were internal errors)."""
    g = add(trail_kb, "--kind", "goal", "--title", "g")["ids"][0]
    bad = trail_kb / ".explore-tree" / "ops" / "2026-12" / "20261201T100002Z-000000000000.jsonl"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(b'{"v": ' + b"9" * 4400 + b'}\n' + b"[" * 100_000 + b"\n")
    r = invoke("trail", "check", "--json", cwd=trail_kb)
    assert r.code == 1, r.stderr
    rel = ".explore-tree/ops/2026-12/20261201T100002Z-000000000000.jsonl"
    assert [(p["path"], p["line"]) for p in r.json()["problems"]] == [(rel, 1), (rel, 2)]
    assert view(trail_kb, "node", g)["id"] == g


def test_values_kb_never_writes_are_log_problems_not_applied(trail_kb: Path) -> None:
    """Written by hand, an `add` of kind `wizard`, a `set` of status `bogus` with a null
    title and a link of kind `weird` were applied (the tree showed `? n… topic:` rows) and
    `kb trail check` said nothing. Each is a problem at its line, skipped whole (a `set`
    is not applied in part)."""
    goal = add(trail_kb, "--kind", "goal", "--title", "G")["ids"][0]
    lc = max(json.loads(line)["lc"] for p in (trail_kb / ".explore-tree").rglob("*.jsonl")
             for line in p.read_text(encoding="utf-8").splitlines())
    base = {"v": 1, "actor": "a", "at": "2026-12-01T10:00:00Z"}
    ops = [
        {"op": "add", "node": {"id": "nwizard00001", "kind": "wizard", "title": "W",
                               "parent": goal}},
        {"op": "set", "node": goal, "fields": {"summary": "kept?", "status": "bogus"}},
        {"op": "set", "node": goal, "fields": {"title": None}},
        {"op": "link", "from": goal, "to": goal, "kind": "weird"},
    ]
    folder = trail_kb / ".explore-tree" / "ops" / "2026-12"
    for i, op in enumerate(ops):
        batch = f"20261201T10000{i}Z-abcdefabcdef"
        (folder / f"{batch}.jsonl").write_text(
            json.dumps({**base, **op, "id": f"{batch}-0000", "lc": lc + 1 + i}) + "\n",
            encoding="utf-8")
    r = invoke("trail", "check", "--json", cwd=trail_kb)
    assert r.code == 1, r.stdout + r.stderr
    said = [p["message"] for p in r.json()["problems"]]
    assert any("unknown kind wizard" in m for m in said), said
    assert any("unknown status bogus" in m for m in said), said
    assert any("title is text" in m for m in said), said
    assert any("unknown link kind weird" in m for m in said), said
    node = view(trail_kb, "node", goal)
    assert node["summary"] == "" and node["status"] == "open" and node["title"] == "G"
    assert "nwizard00001" not in json.dumps(view(trail_kb, "tree"))


def test_an_operation_with_a_lone_surrogate_or_a_number_for_its_time_is_a_problem(
        trail_kb: Path, tmp_path: Path) -> None:
    """A hand-written line whose title escapes half a surrogate pair, or whose `at` is 5,
    ended kb trail overview, snapshot, tree and render with exit 3; the same surrogate in
    `--children-json` too. Each is a problem at its line (exit 2 for the file given)."""
    goal = add(trail_kb, "--kind", "goal", "--title", "G")["ids"][0]
    folder = trail_kb / ".explore-tree" / "ops" / "2026-12"
    base = {"v": 1, "actor": "a", "lc": 50, "op": "add"}
    for i, (at, title) in enumerate((("2026-12-01T10:00:00Z", "\ud800"), (5, "x"))):
        op = {**base, "id": f"20261201T10000{i}Z-bbbbbbbbbbbb-0000", "at": at,
              "node": {"id": f"nbad0000000{i}", "kind": "note", "title": title, "parent": goal}}
        (folder / f"20261201T10000{i}Z-bbbbbbbbbbbb.jsonl").write_text(json.dumps(op) + "\n",
                                                                      encoding="utf-8")
    for args in (["overview"], ["snapshot"], ["tree"], ["render"]):
        r = invoke("trail", *args, cwd=trail_kb)
        assert r.code == 0, (args, r.code, r.stderr)
    r = invoke("trail", "check", "--json", cwd=trail_kb)
    said = sorted(p["message"] for p in r.json()["problems"])
    assert r.code == 1 and len(said) == 2, said
    assert "lone surrogate" in said[1] and "'at' and 'actor' are text" in said[0], said
    children = tmp_path / "c.json"
    children.write_text('[{"kind": "note", "title": "a\\ud800b"}]', encoding="utf-8")
    r = invoke("trail", "add", "--kind", "topic", "--title", "T", "--children-json",
               str(children), cwd=trail_kb)
    assert r.code == 2 and "lone surrogate" in r.stderr, r.stderr
