"""`kb sync` renumbers a settled card's verification records with it (issue: team work).

Two clones of one KB served by ``git daemon`` (with kb's pre-push hook in each and the
server's pre-receive hook): alice and bob both add problem q1, alice pushes first, bob
settles his q1 with a verdict and syncs. His q1 becomes q2 — the card, its Verified card
*and* the record ``r-q1-s1_<time>.json`` (file name and ``"r"``) — in the one renumber
commit, which every check accepts. Alice's own verdict on her q1 then has a history of
its own: bob's record does not count against her verifiers.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import git, invoke, push

RECORDS = "Logs/Verification"


def _ok(*args: str, cwd: Path) -> str:
    res = invoke(*args, cwd=cwd)
    assert res.code == 0, (args, res.stdout, res.stderr)
    return res.stdout


def _records(clone: Path) -> dict[str, dict]:
    """File name -> JSON of every verification record of ``clone``."""
    return {p.name: json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((clone / RECORDS).glob("*.json"))}


def test_sync_renumbers_the_records_of_a_settled_card(daemon_pair: tuple[Path, Path], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    alice, bob = daemon_pair
    _ok("problem", "add", "q1", "Alice problem", cwd=alice)
    push(alice)

    proof = tmp_path / "proof.md"
    proof.write_text("By parity.\n", encoding="utf-8")
    _ok("problem", "add", "q1", "Bob problem", "--title", "B", "--priority", "0", cwd=bob)
    _ok("entry", "add", "q1", "--kind", "解法", "--title", "Parity", "--prob", "0.7",
        "--text-file", str(proof), cwd=bob)
    monkeypatch.setenv("KB_NOW", "1800000000")
    _ok("verdict", "q1#解法1", "--vote", "v1=1", "--vote", "v2=1", cwd=bob)
    [old_name] = _records(bob)
    assert old_name.startswith("r-q1-s1_")

    res = invoke("sync", "--json", cwd=bob)
    data = res.json()
    assert res.code == 0, json.dumps(data, ensure_ascii=False)[:3000]
    assert data["renumbered"] == {"q1": "q2"}
    target = data["upstream_commit"]

    # The record follows its card: renamed and rewritten in the renumber commit.
    recs = _records(bob)
    new_name = "r-q2-s1_" + old_name[len("r-q1-s1_"):]
    assert list(recs) == [new_name]
    assert recs[new_name]["r"] == "r-q2-s1"
    assert [v["verifier"] for v in recs[new_name]["results"]] == ["v1", "v2"]
    rc = data["renumber_commit"]
    moved = git(bob, "diff", "--name-status", "--no-renames", f"{rc}~1", rc, "--", RECORDS)
    assert sorted(moved.splitlines()) == [f"A\t{RECORDS}/{new_name}", f"D\t{RECORDS}/{old_name}"]
    assert (bob / "Verified" / "问题" / "q2.md").exists()
    assert not (bob / "Verified" / "问题" / "q1.md").exists()
    assert "Bob problem" in (bob / "Problems" / "q2.md").read_text(encoding="utf-8")

    # CI's check, every commit of the history, the pre-push and pre-receive hooks.
    res = invoke("verify", "--range", f"{target}..HEAD", "--against", target, cwd=bob)
    assert res.code == 0, res.stdout + res.stderr
    res = invoke("verify", "--range", f"{rc}~1..{rc}", "--json", cwd=bob)
    assert res.code == 0, res.stdout
    accepted = [d for d in res.json()["diagnostics"] if d["code"] == "KB310"]
    assert accepted and all(d["severity"] == "info" and "Kb-Renumber" in d["message"]
                            for d in accepted)
    root = git(bob, "rev-list", "--max-parents=0", "HEAD")
    res = invoke("verify", "--range", f"{root}..HEAD", cwd=bob)
    assert res.code == 0, res.stdout + res.stderr
    out = push(bob)  # the pre-push hook and the server's pre-receive hook accept it
    assert "kb pre-push" in out and "kb pre-receive" in out
    assert out.count(f"{RECORDS}/{old_name} was renamed to {RECORDS}/{new_name}") == 2, out

    # Alice's q1 has a verification history of its own.
    git(alice, "pull", "-q", "--ff-only")
    assert set(_records(alice)) == {new_name}
    _ok("entry", "add", "q1", "--kind", "解法", "--title", "Guess", "--prob", "0.4",
        "--text", "A guess.", cwd=alice)
    monkeypatch.setenv("KB_NOW", "1800000100")
    _ok("verdict", "q1#解法1", "--vote", "v1=0", "--vote", "v2=0", cwd=alice)
    mine = [n for n in _records(alice) if n.startswith("r-q1-s1_")]
    assert len(mine) == 1
    from kb.views.verification import load_records

    assert sorted(r.r for r in load_records(alice)) == ["r-q1-s1", "r-q2-s1"]
    table = {a["verifier"]: a for a in json.loads(_ok("verifiers", "--json", cwd=alice))["verifiers"]}
    # No earlier record of either target: nothing counted, the rate without history.
    assert (table["v1"]["agreed"], table["v1"]["counted"]) == (0, 0), table
    assert (table["v2"]["agreed"], table["v2"]["counted"]) == (0, 0), table
    assert table["v1"]["accuracy"] == 0.5 and table["v1"]["votes"] == 2
    push(alice)


def test_a_record_renamed_without_its_card_is_still_refused(daemon_pair: tuple[Path, Path],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The trailer accepts exactly the rename kb sync writes: a record of the renumbered
    card deleted, or renamed with other content, is KB310 as before."""
    _alice, bob = daemon_pair
    _ok("problem", "add", "q1", "Bob problem", cwd=bob)
    _ok("entry", "add", "q1", "--kind", "解法", "--title", "Parity", "--prob", "0.7",
        "--text", "By parity.", cwd=bob)
    monkeypatch.setenv("KB_NOW", "1800000000")
    _ok("verdict", "q1#解法1", "--vote", "v1=1", "--vote", "v2=1", cwd=bob)
    [name] = _records(bob)
    rec = _records(bob)[name]
    rec["verdict"] = 0
    new = name.replace("r-q1-s1_", "r-q2-s1_")
    (bob / RECORDS / name).unlink()
    (bob / RECORDS / new).write_text(json.dumps(dict(rec, r="r-q2-s1"), ensure_ascii=False,
                                                indent=2) + "\n", encoding="utf-8")
    git(bob, "add", "-A")
    git(bob, "commit", "-q", "--no-verify", "-m", "tamper", "--trailer", "Kb-Renumber: q1 -> q2")
    res = invoke("verify", "--range", "HEAD~1..HEAD", "--json", cwd=bob)
    assert res.code == 1, res.stdout
    assert any(d["code"] == "KB310" and d["severity"] == "error" for d in res.json()["diagnostics"])


def test_renaming_and_rewriting_one_record() -> None:
    """The pure rewrite: file names with a ``-2`` suffix, kb's and Vibe Math's ``r``,
    prose naming a record; votes, reasons and other cards' records untouched."""
    from kb.merge.renumber import Plan, rename_record, renamed_record, rewrite_record, rewrite_text

    p = Plan(ids={"q1": "q2", "p1": "p4", "H1": "H2"},
             kinds={"q1": "problem", "p1": "proposition", "H1": "hypothesis"})
    assert rename_record(f"{RECORDS}/r-q1-s1_20270115T080000-2.json", p) == \
        f"{RECORDS}/r-q2-s1_20270115T080000-2.json"
    assert rename_record(f"{RECORDS}/r-p1_20270115T080000.json", p) == f"{RECORDS}/r-p4_20270115T080000.json"
    assert rename_record(f"{RECORDS}/r-p1-rf3_x.json", p) == f"{RECORDS}/r-p4-rf3_x.json"
    for other in ("r-q11-s1_x.json", "r-p10_x.json", "r-q1x-s1_x.json", "r-H1_x.json"):
        assert rename_record(f"{RECORDS}/{other}", p) == f"{RECORDS}/{other}"

    kb_rec = {"r": "r-q1-s1", "verdict": 1, "results": [{"verifier": "q1", "result": 1,
              "reason": "q1 reduces to parity"}], "transcript": "about q1", "history": [],
              "at": "2027-01-15T08:00:00", "mode": "forced"}
    data = (json.dumps(kb_rec, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    new = rewrite_record(data, p)
    assert new == data.replace(b'"r-q1-s1"', b'"r-q2-s1"')  # only the target's name
    vm = {"r": {"rId": "r-p1-pf2", "id": "p1", "kind": "proposition"}, "verdict": 0.5,
          "at": 1767225600000, "results": {"p1": {"Result": 0.9}}}
    got = json.loads(rewrite_record(json.dumps(vm).encode("utf-8"), p))
    assert got["r"] == {"rId": "r-p4-pf2", "id": "p4", "kind": "proposition"}
    assert got["results"] == {"p1": {"Result": 0.9}} and got["verdict"] == 0.5
    other = json.dumps({"r": "r-q3-s1", "verdict": 1}).encode("utf-8")
    assert rewrite_record(other, p) == other and rewrite_record(b"not json", p) == b"not json"
    assert renamed_record(f"{RECORDS}/r-q3-s1_x.json", other, {"q1": "q2"}) is None
    moved = renamed_record(f"{RECORDS}/r-q1-s1_x.json", data, {"q1": "q2"})
    assert moved is not None and moved.path == f"{RECORDS}/r-q2-s1_x.json" and moved.owner == "q1"

    prose = f"（见验证记录 {RECORDS}/r-p1-pf1_20270115T080000.json）; r-p1 and q1, not r-q10-s1"
    assert rewrite_text(prose, p) == (f"（见验证记录 {RECORDS}/r-p4-pf1_20270115T080000.json）; "
                                      "r-p4 and q2, not r-q10-s1")


def test_a_renumber_trailer_that_renames_nothing_accepts_no_edit(
        tree_kb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`Kb-Renumber: q1 -> q9` on a commit that rewords q1's Verified card and its settled
    entry in place (q9 exists nowhere): KB304 and KB311 stay errors, saying the trailer
    does not cover the change, instead of "accepted … renumbered to q9"."""
    root = tree_kb
    proof = tmp_path / "proof.md"
    proof.write_text("proof text\n", encoding="utf-8")
    _ok("problem", "add", "q1", "claim", "--title", "c", cwd=root)
    _ok("entry", "add", "q1", "--kind", "解法", "--title", "s", "--prob", "0.5",
        "--text-file", str(proof), cwd=root)
    monkeypatch.setenv("KB_NOW", "1800000000")
    _ok("verdict", "q1#解法1", "--vote", "v1=1", "--vote", "v2=1", cwd=root)
    for rel in ("Verified/问题/q1.md", "Problems/q1.md"):
        f = root / rel
        f.write_text(f.read_text(encoding="utf-8").replace("proof text", "a different proof"),
                     encoding="utf-8")
    git(root, "commit", "-q", "--no-verify", "-am", "reword", "--trailer", "Kb-Renumber: q1 -> q9")
    res = invoke("verify", "--range", "HEAD~1..HEAD", "--json", cwd=root)
    found = {d["code"]: d for d in res.json()["diagnostics"] if d["code"] in ("KB304", "KB311")}
    assert res.code == 1 and set(found) == {"KB304", "KB311"}, res.stdout
    for d in found.values():
        assert d["severity"] == "error" and "accepted" not in d["message"], d
        assert "Kb-Renumber: q1 -> q9 does not accept it" in d["message"], d
