"""Exploration-graph operations (issue 15): add with children, link, set, move, merge,
promote, archive, digest + history + rollback, leases, handoff, CAS and write scopes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git, invoke
from trail_support import kb, ok  # noqa: F401 (a fixture and a helper)


T10 = 1796119200  # 2026-12-01T10:00:00Z




def fail(kb: Path, code: int, *args: str) -> dict:
    r = invoke("trail", *args, "--json", cwd=kb)
    assert r.code == code, r.stderr + r.stdout
    return r.json()["error"]


def test_add_with_children_in_one_recording(kb: Path, tmp_path: Path) -> None:
    goal = ok(kb, "add", "--kind", "goal", "--title", "g")["ids"][0]
    kids = tmp_path / "kids.json"
    kids.write_text(json.dumps([{"kind": "evidence", "title": "两次请求前缀长度不同",
                                 "summary": "diff 显示 system 段多了 214 字节"},
                                {"kind": "decision", "title": "先固定工具面顺序再复测"}]),
                    encoding="utf-8")
    head = git(kb, "rev-parse", "HEAD")
    res = ok(kb, "add", "--kind", "hypothesis", "--title", "缓存未命中是因为工具面顺序变化",
             "--parent", goal, "--children-json", str(kids), "--ref", "H1.2", "--tag", "cache")
    assert git(kb, "rev-parse", "HEAD~1") == head  # one commit for all three
    h, e, d = res["ids"]
    node = ok(kb, "node", h)
    assert [c["id"] for c in node["children"]] == [e, d]
    assert node["refs"] == ["H1.2"] and node["tags"] == ["cache"]
    assert ok(kb, "node", e)["summary"] == "diff 显示 system 段多了 214 字节"
    kids.write_text(json.dumps([{"kind": "note", "title": f"c{i}"} for i in range(21)]))
    err = fail(kb, 2, "add", "--kind", "topic", "--title", "t", "--children-json", str(kids))
    assert "at most 20" in err["message"]
    kids.write_text("[{\"kind\": \"note\",\n \"title\": }]")
    err = fail(kb, 2, "add", "--kind", "topic", "--title", "t", "--children-json", str(kids))
    assert f"{kids}:2:" in err["message"]


def test_a_title_or_summary_over_its_limit_is_a_usage_error(kb: Path, tmp_path: Path) -> None:
    """A title over 120 characters or a summary over 1,200 was cut without a word (exit 0,
    "…"): it is a usage error naming the limit, and nothing is written (add, a child, set,
    a link's note). At the limit (white space runs counted as one space) it passes whole."""
    t = ok(kb, "add", "--kind", "note", "--title", "x" * 60 + " \n " + "y" * 59)["nodes"][0]
    assert t["title"] == "x" * 60 + " " + "y" * 59
    head = git(kb, "rev-parse", "HEAD")
    assert "at most 120" in fail(kb, 2, "add", "--kind", "note", "--title", "x" * 130,
                                 "--summary", "s" * 1300)["message"]
    assert "at most 1200" in fail(kb, 2, "add", "--kind", "note", "--title", "t",
                                  "--summary", "s" * 1300)["message"]
    kids = tmp_path / "kids.json"
    kids.write_text(json.dumps([{"kind": "note", "title": "x" * 121}]))
    assert "at most 120" in fail(kb, 2, "add", "--kind", "topic", "--title", "t",
                                 "--children-json", str(kids))["message"]
    nid = t["id"]
    assert "at most 120" in fail(kb, 2, "set", nid, "--title", "x" * 121)["message"]
    assert "at most 1200" in fail(kb, 2, "set", nid, "--summary", "s" * 1201)["message"]
    other = ok(kb, "add", "--kind", "note", "--title", "o")["id"]
    head = git(kb, "rev-parse", "HEAD")
    assert "at most 1200" in fail(kb, 2, "link", nid, other, "--kind", "supports", "--note",
                                  "n" * 1201)["message"]
    assert git(kb, "rev-parse", "HEAD") == head and git(kb, "status", "--porcelain") == ""
    assert ok(kb, "node", nid)["version"] == 1


def test_cas_stale_revision(kb: Path) -> None:
    t = ok(kb, "add", "--kind", "topic", "--title", "t")["ids"][0]
    assert ok(kb, "node", t)["version"] == 1
    ok(kb, "set", t, "--status", "active", "--expect-version", "1")
    assert ok(kb, "node", t)["version"] == 2
    head = git(kb, "rev-parse", "HEAD")
    err = fail(kb, 1, "set", t, "--title", "u", "--expect-version", "1")
    assert err["kind"] == "stale"
    assert "STALE_REVISION" in err["message"] and "version 2" in err["message"]
    assert "updated by" in err["message"] and "digest" in err["message"]
    assert git(kb, "rev-parse", "HEAD") == head
    for args in (["move", t, "--root"], ["archive", t], ["assign", t, "--owner", "a"],
                 ["merge", t, "--into", t]):
        assert fail(kb, 1, *args, "--expect-version", "7")["kind"] in ("stale", "refused")
    assert fail(kb, 1, "assign", t, "--owner", "a", "--expect-version", "7")["kind"] == "stale"


def test_leases_scope_and_epochs(kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = ok(kb, "add", "--kind", "topic", "--title", "t")["ids"][0]
    other = ok(kb, "add", "--kind", "topic", "--title", "other")["ids"][0]
    r = ok(kb, "assign", t, "--owner", "agent-a")
    assert r["nodes"][0]["lease_epoch"] == 1 and r["nodes"][0]["owner"] == "agent-a"
    assert r["nodes"][0]["lease_until"] == T10 + 1800
    # Inside the lease: fine. Outside: OUT_OF_SCOPE. No actor: no scope check.
    ok(kb, "add", "--kind", "question", "--title", "q", "--parent", t, "--actor", "agent-a")
    err = fail(kb, 1, "add", "--kind", "question", "--title", "q", "--parent", other,
               "--actor", "agent-a")
    assert "OUT_OF_SCOPE" in err["message"]
    ok(kb, "add", "--kind", "question", "--title", "q", "--parent", other)
    ok(kb, "add", "--kind", "question", "--title", "q", "--parent", other, "--actor", "boss",
       "--role", "lead")
    # Another owner cannot claim a live lease; a lead can steal it.
    err = fail(kb, 1, "assign", t, "--owner", "agent-b")
    assert "leased to agent-a" in err["message"] and err["kind"] == "locked"
    assert "lead or curator" in fail(kb, 1, "assign", t, "--owner", "agent-b", "--steal")["message"]
    # Time passes: the lease expired.
    monkeypatch.setenv("KB_NOW", "2026-12-01T11:00:00Z")
    err = fail(kb, 1, "set", t, "--status", "active", "--actor", "agent-a")
    assert "LEASE_EXPIRED" in err["message"]
    fr = ok(kb, "frontier")
    assert any(s["action"] == "claim" and s["id"] == t for s in fr["suggestions"])
    assert ok(kb, "trunk")["claimable"][0] == {"id": t, "title": "t", "expired": True}
    r = ok(kb, "assign", t, "--owner", "agent-a", "--renew", "--lease", "60")
    assert r["nodes"][0]["lease_epoch"] == 2
    assert r["nodes"][0]["lease_until"] == T10 + 3600 + 3600
    r = ok(kb, "assign", t, "--owner", "agent-c", "--steal", "--actor", "boss", "--role", "curator")
    assert r["nodes"][0]["owner"] == "agent-c" and r["nodes"][0]["lease_epoch"] == 3
    r = ok(kb, "assign", t, "--release", "--actor", "agent-c")
    assert r["nodes"][0]["owner"] is None and r["nodes"][0]["lease_epoch"] == 4


def test_handoff_moves_the_lease_and_writes_a_package(kb: Path) -> None:
    t = ok(kb, "add", "--kind", "topic", "--title", "Prefix stability")["ids"][0]
    q = ok(kb, "add", "--kind", "question", "--title", "Is the order stable?", "--parent", t)["ids"][0]
    h = ok(kb, "add", "--kind", "hypothesis", "--title", "Order is random", "--parent", t)["ids"][0]
    c = ok(kb, "add", "--kind", "conclusion", "--title", "Order is sorted", "--parent", t)["ids"][0]
    ok(kb, "link", h, c, "--kind", "contradicts", "--note", "opposite")
    ok(kb, "assign", t, "--owner", "agent-a")
    err = fail(kb, 1, "handoff", t, "--to", "agent-b", "--actor", "agent-x")
    assert "only the owner" in err["message"]
    r = ok(kb, "handoff", t, "--to", "agent-b", "--actor", "agent-a")
    topic = r["nodes"][0]
    assert topic["owner"] == "agent-b" and topic["lease_epoch"] == 2
    pkg = r["nodes"][1]
    assert pkg["kind"] == "note" and pkg["tags"] == ["handoff"] and pkg["parent"] == t
    assert f"{q} Is the order stable?" in pkg["summary"]
    assert f"{c} conclusion Order is sorted" in pkg["summary"]
    assert f"{h} ⟂ {c}" in pkg["summary"]
    assert pkg["summary"].startswith("Digest: ")
    tr = ok(kb, "trunk")["goals"][0]["topics"][0]
    assert tr["conflict"] is True and tr["owner"] == "agent-b"
    assert pkg["id"] not in [lf["id"] for lf in tr["leaves"]]  # a package is not a leaf root


def test_a_lease_below_one_minute_is_a_usage_error(kb: Path) -> None:
    """``--lease`` is a count like ``--limit``: below 1 it is refused (exit 2) and nothing is
    recorded; ``handoff --lease -5`` used to hand over a lease already expired."""
    t = ok(kb, "add", "--kind", "topic", "--title", "Prefix stability")["ids"][0]
    ok(kb, "assign", t, "--owner", "agent-a")
    head = git(kb, "rev-parse", "HEAD")
    logs = sorted(p.name for p in (kb / ".explore-tree").rglob("*.jsonl"))
    for args in (["handoff", t, "--to", "agent-b", "--lease", "-5"],
                 ["handoff", t, "--to", "agent-b", "--lease", "0"],
                 ["assign", t, "--owner", "agent-a", "--renew", "--lease", "-1"]):
        err = fail(kb, 2, *args)
        assert err["kind"] == "usage" and "--lease" in err["message"], args
    assert git(kb, "rev-parse", "HEAD") == head
    assert sorted(p.name for p in (kb / ".explore-tree").rglob("*.jsonl")) == logs
    assert ok(kb, "node", t)["owner"] == "agent-a"


def test_a_lease_past_a_year_is_a_usage_error(kb: Path) -> None:
    """`--lease 99999999999` ended kb trail assign with exit 3 (a date past year 9999): a
    lease is at most a year (527,040 minutes), as a lock's TTL; the library refuses more
    for the MCP tool. A year exactly is a lease."""
    from kb.errors import UsageError
    from kb.trail import ops

    t = ok(kb, "add", "--kind", "topic", "--title", "Prefix stability")["ids"][0]
    head = git(kb, "rev-parse", "HEAD")
    for args in (["assign", t, "--owner", "agent-a", "--lease", "99999999999"],
                 ["assign", t, "--owner", "agent-a", "--lease", "527041"],
                 ["handoff", t, "--to", "agent-b", "--lease", "4200000000"]):
        err = fail(kb, 2, *args)
        assert err["kind"] == "usage" and "at most 527,040 minutes" in err["message"], args
    for call in (lambda: ops.assign(kb, t, "agent-a", lease_seconds=10**12, no_commit=True),
                 lambda: ops.handoff(kb, t, "agent-b", lease_seconds=10**12, no_commit=True)):
        with pytest.raises(UsageError, match="longer than a year"):
            call()
    assert git(kb, "rev-parse", "HEAD") == head
    assert ok(kb, "assign", t, "--owner", "agent-a", "--lease", "527040")["nodes"][0]["owner"] \
        == "agent-a"


def test_a_hand_written_lease_end_past_any_date_is_a_log_problem(kb: Path) -> None:
    """An `assign` written by hand with `until` 10**20 was applied: kb verify and
    `kb trail render` then ended with exit 3 (no date shows it) while `kb trail check` said
    nothing. It is a problem at its line (skipped), as any operation that does not apply."""
    t = ok(kb, "add", "--kind", "topic", "--title", "Prefix stability")["ids"][0]
    ops_dir = kb / ".explore-tree" / "ops" / "2026-12"
    lc = max(json.loads(line)["lc"] for p in (kb / ".explore-tree").rglob("*.jsonl")
             for line in p.read_text(encoding="utf-8").splitlines())
    for i, until in enumerate((10**20, -5, "soon", True)):
        op = {"v": 1, "id": f"20261204T23595{i}Z-abcdefabcdef-0000", "lc": lc + 1 + i,
              "op": "assign", "actor": "a", "at": "2026-12-04T23:59:59Z", "mode": "claim",
              "node": t, "owner": "a", "until": until}
        (ops_dir / f"20261204T23595{i}Z-abcdefabcdef.jsonl").write_text(json.dumps(op) + "\n",
                                                                         encoding="utf-8")
    r = invoke("trail", "check", "--json", cwd=kb)
    assert r.code == 1, r.stdout + r.stderr
    assert "lease end 100000000000000000000 is no time kb reads" in r.stdout
    assert r.stdout.count("is no time kb reads") == 4
    r = invoke("verify", "--json", cwd=kb)
    assert r.code == 0 and sum(d["code"] == "KB242" for d in r.json()["diagnostics"]) == 4, r.stdout
    assert invoke("trail", "render", cwd=kb).code == 0
    assert ok(kb, "node", t)["owner"] is None  # the claims were skipped


def test_handoff_in_the_library_refuses_a_lease_that_is_not_positive(kb: Path) -> None:
    """As ``assign`` does: the MCP tool calls the library without the CLI's check."""
    from kb.errors import UsageError
    from kb.trail import ops

    t = ops.add(kb, kind="topic", title="Prefix stability", no_commit=True).ids[0]
    for seconds in (-300, 0):
        with pytest.raises(UsageError, match="lease must be a positive"):
            ops.handoff(kb, t, "agent-b", lease_seconds=seconds, no_commit=True)
    assert ok(kb, "node", t)["owner"] is None


def test_move_merge_promote_archive(kb: Path) -> None:
    g = ok(kb, "add", "--kind", "goal", "--title", "g")["ids"][0]
    a = ok(kb, "add", "--kind", "question", "--title", "a", "--parent", g)["ids"][0]
    b = ok(kb, "add", "--kind", "question", "--title", "b", "--parent", a)["ids"][0]
    c = ok(kb, "add", "--kind", "evidence", "--title", "c", "--parent", b)["ids"][0]
    assert "inside" in fail(kb, 1, "move", a, "--parent", c)["message"]
    ok(kb, "move", b, "--parent", g)
    assert [p["id"] for p in ok(kb, "path", c)["path"]] == [g, b, c]
    ok(kb, "link", c, a, "--kind", "supports")
    ok(kb, "merge", b, "--into", a)
    na = ok(kb, "node", a)
    assert [x["id"] for x in na["children"]] == [c] and na["hits"] == 2
    assert ok(kb, "node", b)["id"] == a  # a merged id leads to where it went
    assert [x["id"] for x in ok(kb, "node", g)["children"]] == [a]
    assert ok(kb, "stats")["duplicates"]["merged"] == 1
    t = ok(kb, "promote", a)["nodes"][0]
    assert t["kind"] == "topic" and t["digest"] == "0/1 done · open: c"
    assert "only a leaf" in fail(kb, 1, "promote", a)["message"]
    ok(kb, "set", c, "--status", "done")
    ok(kb, "archive", c)
    assert ok(kb, "tree", "--depth", "5")["roots"][0]["children"][0]["children"] == []
    assert ok(kb, "node", c)["archived"] is True
    ok(kb, "archive", c, "--unarchive")
    assert [x["id"] for x in ok(kb, "tree")["roots"][0]["children"][0]["children"]] == [c]


def test_digest_history_and_rollback(kb: Path) -> None:
    t = ok(kb, "add", "--kind", "topic", "--title", "t")["ids"][0]
    assert ok(kb, "node", t)["digest"] == "no leaves yet"
    q = ok(kb, "add", "--kind", "question", "--title", "Why?", "--parent", t)["ids"][0]
    d1 = ok(kb, "node", t)["digest"]
    assert d1 == "0/1 done · open: Why?"
    ok(kb, "set", q, "--status", "done")
    assert ok(kb, "node", t)["digest"] == "1/1 done"
    ok(kb, "digest", t, "Settled: the order is sorted")
    n = ok(kb, "node", t)
    assert n["digest"] == "Settled: the order is sorted" and n["digest_manual"] is True
    # A manual digest is not overwritten by the template.
    ok(kb, "add", "--kind", "hypothesis", "--title", "More", "--parent", t)
    assert ok(kb, "node", t)["digest"] == "Settled: the order is sorted"
    r = ok(kb, "rollback", t, "2")  # 0 newest, 1 the one before, 2 …
    assert r["nodes"][0]["digest"] == "0/1 done · open: Why?"
    assert r["nodes"][0]["digest_manual"] is True
    assert fail(kb, 2, "digest", t, "x" * 121)["message"].endswith("at most 120 characters")
    assert "only a topic" in fail(kb, 1, "digest", q, "x")["message"]


def test_digest_history_is_capped_at_20(kb: Path) -> None:
    from kb.repo import open_kb
    from kb.trail import ops
    from kb.trail.replay import load

    t = ok(kb, "add", "--kind", "topic", "--title", "t")["ids"][0]
    for i in range(22):
        ops.digest(kb, t, f"digest {i}", no_commit=True)
    hist = load(open_kb(kb)).nodes[t].digest_history
    assert len(hist) == 20 and hist[-1]["text"] == "digest 21" and hist[0]["text"] == "digest 2"
    assert [h["revision"] for h in hist] == list(range(4, 24))


def test_set_and_link_validate(kb: Path) -> None:
    a = ok(kb, "add", "--kind", "hypothesis", "--title", "a")["ids"][0]
    assert "accepted: open active done abandoned" in fail(kb, 2, "set", a, "--status", "closed")["message"]
    assert fail(kb, 2, "link", a, a, "--kind", "likes")["message"].startswith("unknown edge kind")
    assert "itself" in fail(kb, 1, "link", a, a, "--kind", "related")["message"]
    r = ok(kb, "set", a, "--tags", "x,y", "--refs", "E004,q1")
    assert r["nodes"][0]["tags"] == ["x", "y"] and r["nodes"][0]["refs"] == ["E004", "q1"]
    assert fail(kb, 1, "node", "nzzzzzzzzzz")["kind"] == "not_found"


@pytest.mark.parametrize("title,says", [
    ("Tool order \u202eredro", "U+202E"),   # a right-to-left override: reads as other text
    ("a\u2066b", "U+2066"),
    ("\u200b\u2060", "show nothing"),
])
def test_a_title_that_hides_or_reorders_text_is_refused(kb: Path, title: str, says: str) -> None:
    """`kb hyp add` refuses a statement with a bidirectional control or nothing that shows;
    a trail title took both, and the web view's trail panel showed them. Refused in add,
    a child and set alike; nothing is written."""
    head = git(kb, "rev-parse", "HEAD")
    assert says in fail(kb, 2, "add", "--kind", "note", "--title", title)["message"]
    assert git(kb, "rev-parse", "HEAD") == head
    nid = ok(kb, "add", "--kind", "note", "--title", "plain")["id"]
    head = git(kb, "rev-parse", "HEAD")
    assert says in fail(kb, 2, "set", nid, "--title", title)["message"]
    assert git(kb, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("option", ["--summary", "--tag", "--ref"])
def test_a_summary_tag_or_ref_with_a_bidirectional_control_is_refused(kb: Path, option: str) -> None:
    """The title's check holds for the other text of a node: a summary keeps its lines and
    tabs, not a right-to-left override."""
    head = git(kb, "rev-parse", "HEAD")
    err = fail(kb, 2, "add", "--kind", "note", "--title", "t", option, "ab\u202ecd")["message"]
    assert "U+202E" in err and git(kb, "rev-parse", "HEAD") == head
    assert ok(kb, "add", "--kind", "note", "--title", "t", "--summary", "two\nlines\tand a tab")
