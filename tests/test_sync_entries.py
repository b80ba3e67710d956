"""Entries two teammates added to one card (``kb entry add`` numbers both ``解法 1``).

Two clones of one KB served by ``git daemon``, kb's hooks in each and the server's
pre-receive hook: alice adds a solution to q1 and pushes; bob adds his own to q1 (also
``解法 1``), a verdict on it and a note naming it. CI's ``--against`` says KB350 before
the sync; ``kb sync`` numbers bob's entry after alice's — its heading, its record's name
and ``"r"``, the note — with a ``Kb-Renumber: q1#解法1 -> q1#解法2`` trailer, and kb's card
driver keeps both entries. The push passes every hook, and alice's pull is a fast-forward.
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


def _solution(clone: Path, title: str, text: str) -> None:
    _ok("entry", "add", "q1", "--kind", "解法", "--title", title, "--prob", "0.3", "--text", text,
        cwd=clone)


def _headings(clone: Path, rel: str) -> list[str]:
    return [ln.split("｜")[0] + "｜" + ln.split("｜")[1]
            for ln in (clone / rel).read_text(encoding="utf-8").splitlines()
            if ln.startswith("### ")]


def _judged_apart(alice: Path, bob: Path, title: str, vote: str,
                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Alice adds 解法 1 to q1 and pushes; bob adds his own 解法 1 and a verdict on it
    (both votes ``vote``)."""
    _solution(alice, "Sieve", "Alice: by a sieve.")
    push(alice)
    _solution(bob, title, f"Bob: {title}.")
    monkeypatch.setenv("KB_NOW", "1800000000")
    _ok("verdict", "q1#解法1", "--vote", f"v1={vote}", "--vote", f"v2={vote}", cwd=bob)


def _pull_stopped(alice: Path, bob: Path, how: str) -> str:
    """Alice and bob each add 解法 1 to q1, alice pushes, bob runs ``git pull <how>`` (kb's
    drivers registered, no kb sync): it stops; what git and kb's driver printed."""
    _solution(alice, "Sieve", "Alice: by a sieve.")
    push(alice)
    _solution(bob, "Circle method", "Bob: by the circle method.")
    proc = subprocess.run(["git", "pull", how, "-q"], cwd=bob, capture_output=True)
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode != 0, out
    return out


@pytest.fixture
def shared_q1(daemon_pair: tuple[Path, Path]) -> tuple[Path, Path]:
    """``(alice, bob)`` both holding problem q1 with no entry."""
    alice, bob = daemon_pair
    _ok("problem", "add", "q1", "Is every even number above 2 a sum of two primes?", cwd=alice)
    push(alice)
    git(bob, "pull", "-q", "--ff-only")
    return alice, bob


def test_sync_numbers_bobs_solution_after_alices(shared_q1: tuple[Path, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    alice, bob = shared_q1
    _judged_apart(alice, bob, "Circle method", "0.6", monkeypatch)
    (bob / "notes.md").write_text("# Notes\nq1#解法1 (record r-q1-s1) looks best; q1#解法12 is "
                                  "another.\n", encoding="utf-8")
    git(bob, "add", "notes.md")
    git(bob, "commit", "-q", "-m", "notes")
    [old_record] = sorted(p.name for p in (bob / RECORDS).glob("*.json"))
    assert old_record.startswith("r-q1-s1_")

    git(bob, "fetch", "-q")
    before = invoke("verify", "--range", "origin/main..HEAD", "--against", "origin/main", "--json",
                    cwd=bob)
    kb350 = [f for f in before.json()["diagnostics"] if f["code"] == "KB350"]
    assert before.code == 1 and len(kb350) == 1, before.stdout
    assert "entry 解法 1 of q1" in kb350[0]["message"] and "kb sync" in kb350[0]["message"]

    res = invoke("sync", "--json", cwd=bob)
    data = res.json()
    assert res.code == 0, json.dumps(data, ensure_ascii=False)[:3000]
    assert data["renumbered"] == {"q1#解法1": "q1#解法2"}
    assert data["merge"] == "merged" and data["conflicts"] == [] and data["findings"] == []
    assert [c["kind"] for c in data["collisions"]] == ["entry"]
    assert _headings(bob, "Problems/q1.md") == ["### 解法 1｜Sieve", "### 解法 2｜Circle method"]
    assert "Kb-Renumber: q1#解法1 -> q1#解法2" in git(bob, "show", "-s", "--format=%B",
                                                      data["renumber_commit"])
    [new_record] = sorted(p.name for p in (bob / RECORDS).glob("*.json"))
    assert new_record == "r-q1-s2_" + old_record[len("r-q1-s1_"):]
    assert json.loads((bob / RECORDS / new_record).read_text(encoding="utf-8"))["r"] == "r-q1-s2"
    assert (bob / "notes.md").read_text(encoding="utf-8") == (
        "# Notes\nq1#解法2 (record r-q1-s2) looks best; q1#解法12 is another.\n")
    # the verdict's write-back went with the entry
    card = (bob / "Problems/q1.md").read_text(encoding="utf-8")
    assert "### 解法 2｜Circle method｜概率0.6｜状态已验" in card

    out = push(bob)  # kb's pre-push hook and the server's pre-receive hook pass it
    assert "KB350" not in out
    git(alice, "pull", "-q", "--ff-only")
    assert _headings(alice, "Problems/q1.md") == ["### 解法 1｜Sieve", "### 解法 2｜Circle method"]
    assert invoke("verify", cwd=alice).code == 0


def test_a_settled_entry_is_looked_for_under_its_new_number(shared_q1: tuple[Path, Path],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Bob's verdict settled his entry (概率1, q1 已解决, a Verified card): the renumbering
    keeps it as settled, which KB311 accepts under the trailer."""
    alice, bob = shared_q1
    _judged_apart(alice, bob, "Parity", "1", monkeypatch)
    res = invoke("sync", "--json", cwd=bob)
    data = res.json()
    assert res.code == 0 and data["findings"] == [], json.dumps(data, ensure_ascii=False)[:3000]
    rng = invoke("verify", "--range", "origin/main..HEAD", "--json", cwd=bob)
    assert rng.code == 0, rng.stdout
    assert not [f for f in rng.json()["diagnostics"] if f["code"] == "KB311"]
    assert "### 解法 2｜Parity｜概率1｜状态已验" in (bob / "Problems/q1.md").read_text(encoding="utf-8")
    push(bob)


def test_plain_git_pull_names_the_number_both_added(shared_q1: tuple[Path, Path]) -> None:
    """Without kb sync, kb's card driver cannot keep two entries of one number: the
    conflict stays, and its message says what repairs it."""
    alice, bob = shared_q1
    out = _pull_stopped(alice, bob, "--no-rebase")
    assert "both sides added 解法 1 with other text" in out and "kb sync" in out, out
    git(bob, "merge", "--abort")
    res = invoke("sync", "--json", cwd=bob)
    assert res.code == 0 and res.json()["merge"] == "merged", res.stdout


def test_propositions_entries_keep_their_order_and_kinds(daemon_pair: tuple[Path, Path]) -> None:
    """Proofs and refutations on one proposition: bob's two proofs become 证明 3 and 4 (after
    alice's 证明 2, in his order) and his refutation 证伪 2; the propositions' cards have
    kb's driver too."""
    alice, bob = daemon_pair
    rel = "Propos/数论/p1.md"
    _ok("propo", "add", "数论", "p1", "Every n >= 2 has a prime divisor", "--new-category", cwd=alice)
    _ok("entry", "add", "p1", "--kind", "证明", "--title", "Base", "--prob", "0.5", "--text", "B.",
        cwd=alice)
    push(alice)
    git(bob, "pull", "-q", "--ff-only")
    for kind, title in (("证明", "Least divisor"), ("证伪", "None")):
        _ok("entry", "add", "p1", "--kind", kind, "--title", title, "--prob", "0.3", "--text", title,
            cwd=alice)
    push(alice)
    for kind, title in (("证明", "Induction"), ("证明", "Second"), ("证伪", "Counter")):
        _ok("entry", "add", "p1", "--kind", kind, "--title", title, "--prob", "0.3", "--text", title,
            cwd=bob)
    res = invoke("sync", "--json", cwd=bob)
    data = res.json()
    assert res.code == 0, json.dumps(data, ensure_ascii=False)[:3000]
    assert data["renumbered"] == {"p1#证明2": "p1#证明3", "p1#证明3": "p1#证明4",
                                  "p1#证伪1": "p1#证伪2"}
    assert _headings(bob, rel) == ["### 证明 1｜Base", "### 证明 2｜Least divisor",
                                   "### 证明 3｜Induction", "### 证明 4｜Second",
                                   "### 证伪 1｜None", "### 证伪 2｜Counter"]
    assert invoke("verify", "--range", "origin/main..HEAD", cwd=bob).code == 0
    push(bob)


def test_only_the_lines_bob_wrote_are_renumbered(shared_q1: tuple[Path, Path]) -> None:
    """A line naming q1#解法1 that both sides had before either added an entry 1 meant
    neither's: it stays. Bob's own hypothesis naming his entry follows it, and KB302
    takes that as the same claim (the renumber commit passes every hook)."""
    alice, bob = shared_q1
    _ok("hyp", "add", "Route q1#解法1 will work", cwd=alice)
    (alice / "PLAN.md").write_text("# Plan\nplan: q1#解法1 first\n", encoding="utf-8")
    git(alice, "add", "PLAN.md")
    git(alice, "commit", "-q", "-m", "plan")
    push(alice)
    git(bob, "pull", "-q", "--ff-only")
    _solution(alice, "Sieve", "Alice: by a sieve.")
    push(alice)
    _solution(bob, "Circle method", "Bob: by the circle method.")
    _ok("hyp", "add", "Bob's route q1#解法1 works", cwd=bob)
    with (bob / "PLAN.md").open("a", encoding="utf-8") as f:
        f.write("mine: q1#解法1 too\n")
    git(bob, "commit", "-q", "-am", "plan more")
    res = invoke("sync", "--json", cwd=bob)
    assert res.code == 0 and res.json()["findings"] == [], res.stdout
    tree = (bob / "tree.md").read_text(encoding="utf-8")
    assert "## H1: Route q1#解法1 will work" in tree and "## H2: Bob's route q1#解法2 works" in tree
    assert (bob / "PLAN.md").read_text(encoding="utf-8") == (
        "# Plan\nplan: q1#解法1 first\nmine: q1#解法2 too\n")
    push(bob)


def test_dry_run_refuses_what_the_sync_would_refuse(shared_q1: tuple[Path, Path]) -> None:
    """Bob's card numbers two entries alike (KB142, committed past the hook): the renumber
    commit would leave a format error, and the dry run says so instead of a plan."""
    alice, bob = shared_q1
    _solution(alice, "Sieve", "Alice: by a sieve.")
    push(alice)
    _solution(bob, "Circle method", "Bob: by the circle method.")
    card = bob / "Problems/q1.md"
    card.write_text(card.read_text(encoding="utf-8")
                    + "### 解法 1｜Again｜概率0.3｜状态未定论\nx\n", encoding="utf-8")
    git(bob, "commit", "-q", "--no-verify", "-am", "a repeated number")
    dry = invoke("sync", "--dry-run", cwd=bob)
    real = invoke("sync", cwd=bob)
    assert (dry.code, real.code) == (1, 1), (dry.stdout, dry.stderr)
    assert "Problems/q1.md already has 1 format error" in dry.stderr and "nothing was written" in dry.stderr


def test_a_rebase_is_told_to_abort_the_rebase(shared_q1: tuple[Path, Path]) -> None:
    """`git pull --rebase` runs the card driver too: its advice aborts the rebase (a merge
    abort fails there: no MERGE_HEAD), and kb sync then repairs the branch."""
    alice, bob = shared_q1
    out = _pull_stopped(alice, bob, "--rebase")
    assert "`git rebase --abort`, then `kb sync`" in out, out
    git(bob, "rebase", "--abort")
    res = invoke("sync", "--json", cwd=bob)
    assert res.code == 0 and res.json()["renumbered"] == {"q1#解法1": "q1#解法2"}, res.stdout
