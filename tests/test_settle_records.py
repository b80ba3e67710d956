"""A settlement rests on a *valid* verification record, and an entry moved to 0 or 1 is a
settlement too (kb.checks.settle_rules KB312, kb.checks.record_rules KB243).

Two findings, through kb's real pre-commit hook and ``kb verify --range``:

1. a hand-written record whose verdict contradicts its votes, that has fewer verifiers than
   ``min_votes`` or names one verifier twice backed a hand settlement; now KB243 warns at it
   and KB312 refuses the settlement, saying the record found is not valid and why;
2. an entry hand-set to ``概率1`` (or a proposition's ``概率`` to 1) with no verdict passed;
   now KB312 asks for the record that puts it there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git, invoke, write_files

NOW = "1793613600"  # 2026-11-02T10:00:00Z
RECORD = "Logs/Verification/r-q3-s1_20261102T100000.json"


@pytest.fixture
def ex(example_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example KB with kb's hooks installed, an undecided proposition p3 with a proof
    (概率0.6) and an open problem q3 with a solution (概率0.5), each committed by kb."""
    monkeypatch.setenv("KB_NOW", NOW)
    assert invoke("hooks", "install", cwd=example_kb).code == 0
    for args in (("propo", "add", "数论", "p3", "Every even n > 2 is a sum of two primes.",
                  "--prob", "0.6"),
                 ("entry", "add", "p3", "--kind", "证明", "--title", "PfZ", "--prob", "0.6",
                  "--text", "A sketch."),
                 ("problem", "add", "q3", "Are there infinitely many twin primes?"),
                 ("entry", "add", "q3", "--kind", "解法", "--title", "a proof", "--text", "Proof.")):
        r = invoke(*args, cwd=example_kb)
        assert r.code == 0, (args, r.stderr)
    return example_kb


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (old, text)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _line(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                if needle in ln)


def _found(ex: Path, *args: str, code: str = "KB312") -> tuple[int, list[dict]]:
    r = invoke("verify", *args, "--format", "json", cwd=ex)
    return r.code, [d for d in json.loads(r.stdout)["diagnostics"] if d["code"] == code]


def _hook_refuses(ex: Path) -> None:
    git(ex, "add", "-A")
    before = git(ex, "rev-parse", "HEAD")
    git(ex, "commit", "-q", "-m", "hand settlement", check=False)
    assert git(ex, "rev-parse", "HEAD") == before, "the hook let the hand settlement in"


def _record(results: list, verdict: float = 1, **more: object) -> str:
    return json.dumps({"r": "r-q3-s1", "verdict": verdict, "at": "2026-11-02T10:00:00",
                       "results": results, **more}, ensure_ascii=False)


def _solve_q3_by_hand(ex: Path, record: str) -> None:
    """The tester's forgery: a record, 已解决, the entry at 1 and a copied Verified card."""
    write_files(ex, {RECORD: record})
    card = ex / "Problems/q3.md"
    _edit(card, "- 状态: 求解中", "- 状态: 已解决")
    _edit(card, "- 优先级: 1\n", "- 优先级: never\n")
    _edit(card, "｜概率0.5｜状态未定论", "｜概率1｜状态已验")
    write_files(ex, {"Verified/问题/q3.md":
                     (ex / "Verified/问题/q1.md").read_text(encoding="utf-8").replace("q1", "q3")})


# ---------------------------------------------------------------------------
# finding 1: a record no verdict could write backs nothing


BAD_RECORDS = [
    pytest.param([{"verifier": "v1", "result": 0}, {"verifier": "v2", "result": 0}],
                 "`verdict` 1 does not follow from its results (v1=0, v2=0): unanimous votes give 0",
                 id="verdict-contradicts-votes"),
    pytest.param([{"verifier": "v1", "result": 1}],
                 "1 verifier voted, a verdict needs at least 2", id="one-vote"),
    pytest.param([{"verifier": "v1", "result": 1}, {"verifier": "v1", "result": 1}],
                 "verifier v1 votes twice", id="same-verifier-twice"),
]


@pytest.mark.parametrize("results, why", BAD_RECORDS)
def test_a_record_no_verdict_could_write_backs_no_settlement(ex, results, why):
    _solve_q3_by_hand(ex, _record(results))
    _hook_refuses(ex)
    rc, staged = _found(ex, "--staged")
    assert rc == 1
    assert [(d["path"], d["line"]) for d in staged] == [
        ("Problems/q3.md", _line(ex / "Problems/q3.md", "- 状态: 已解决")),
        ("Verified/问题/q3.md", 1)]
    assert f"the record found is not valid (KB243): {RECORD} ({why}" in staged[0]["message"]
    _, warned = _found(ex, "--staged", code="KB243")
    assert [(d["path"], d["severity"], d["blocking"]) for d in warned] == [
        (RECORD, "warning", False)]
    assert why in warned[0]["message"] and "settles nothing (KB312)" in warned[0]["message"]
    # committed past the hook: the range refuses it, and `kb verify` warns at the record
    git(ex, "commit", "-q", "--no-verify", "-m", "hand settlement")
    rc, found = _found(ex, "--range", "HEAD~1..HEAD")
    assert rc == 1 and [d["path"] for d in found] == ["Problems/q3.md", "Verified/问题/q3.md"]
    rc, warned = _found(ex, code="KB243")
    assert [d["path"] for d in warned] == [RECORD]


def test_the_same_record_with_its_votes_right_backs_it(ex):
    """The control: the forgery with a record whose votes give its verdict passes KB312
    (what KB312 judges is the record, not who wrote it)."""
    _solve_q3_by_hand(ex, _record([{"verifier": "v1", "result": 1},
                                   {"verifier": "v2", "result": 1}]))
    git(ex, "add", "-A")
    rc, staged = _found(ex, "--staged")
    assert staged == []
    _, warned = _found(ex, "--staged", code="KB243")
    assert warned == []


def test_min_votes_of_kb_toml_counts(ex):
    """``[verdict] min_votes = 3``: a record of two votes settles nothing."""
    with (ex / "kb.toml").open("a", encoding="utf-8") as f:
        f.write("\n[verdict]\nmin_votes = 3\n")
    git(ex, "commit", "-q", "--no-verify", "-am", "three votes")
    _solve_q3_by_hand(ex, _record([{"verifier": "v1", "result": 1},
                                   {"verifier": "v2", "result": 1}]))
    git(ex, "add", "-A")
    rc, staged = _found(ex, "--staged")
    assert rc == 1 and "2 verifiers voted, a verdict needs at least 3" in staged[0]["message"]


def test_a_committed_bad_record_blocks_no_later_commit(ex, monkeypatch):
    """Records are append-only (KB310): a bad one committed (here with an override) warns
    in every later check but blocks no later commit of kb's own."""
    _solve_q3_by_hand(ex, _record([{"verifier": "v1", "result": 1}]))
    git(ex, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", "q3 imported without a valid record")
    git(ex, "commit", "-q", "-m", "import q3\n\nKb-Override: q3 imported without a valid record")
    assert git(ex, "log", "-1", "--format=%s") == "import q3"
    monkeypatch.delenv("KB_OVERRIDE")
    r = invoke("propo", "add", "数论", "p9", "Another claim.", cwd=ex)  # through the hook
    assert r.code == 0, r.stderr
    assert "p9" in git(ex, "log", "-1", "--format=%s")
    rc, warned = _found(ex, "--range", "HEAD~1..HEAD", code="KB243")
    assert rc == 0 and [(d["path"], d["blocking"]) for d in warned] == [(RECORD, False)]


@pytest.mark.parametrize("votes, mode", [
    (("a=1", "b=1"), None), (("a=0", "b=0"), None), (("a=0.9", "b=0.8"), None),
    (("a=0.6", "b=0.2"), "forced"), (("a=0.6", "b=0.2"), "flat"), (("a=1", "b=0.3"), "forced"),
])
def test_kb_verdicts_records_are_valid(ex, votes, mode):
    """What `kb verdict` writes is what the check accepts, every branch and mode."""
    args = [a for v in votes for a in ("--vote", v)] + (["--mode", mode] if mode else [])
    r = invoke("verdict", "q3#解法1", *args, cwd=ex)  # committed through the hook
    assert r.code == 0, r.stderr
    rc, warned = _found(ex, code="KB243")
    assert warned == []
    rc, found = _found(ex, "--range", "HEAD~1..HEAD")
    assert rc == 0 and found == []


@pytest.mark.parametrize("results, verdict, mode, fault", [
    ([0.6, 0.2], 0.5, "flat", None),
    ([0.6, 0.2], 0.5, "forced", "[0.2"),            # 0.5 is inside the forced range too
    ([0.6, 0.7], 0.5, "forced", "a weighted mean in [0.6"),
    ([0.6, 0.7], 0.5, None, None),                  # no mode (Vibe Math's): flat's 0.5
    ([0.6, 0.7], 0.9, None, "0.5 (flat) or a weighted mean"),
    ([0.9, 0.8], 0.8500000000000001, None, None),   # a binary mean (Vibe Math's)
    ([0.9, 0.8], 0.9, "forced", "a near-consensus gives 0.85"),
    ([1, 0], 1, "forced", "never exactly 0 or 1"),
    ([1, None], 0.75, "forced", None),              # a missing result counts 0.5
])
def test_record_faults(results, verdict, mode, fault):
    from kb.research.record_faults import record_faults
    from kb.research.verdict import read_record

    raw = {"r": "r-q1-s1", "verdict": verdict, "at": "2026-11-02T10:00:00",
           "results": [{"verifier": f"v{i}", "result": x} for i, x in enumerate(results)]}
    if mode:
        raw["mode"] = mode
    got = record_faults(read_record("r.json", json.dumps(raw).encode()), 2)
    if fault is None or fault == "[0.2":
        assert got == []
    else:
        assert len(got) == 1 and fault in got[0], got


# ---------------------------------------------------------------------------
# finding 2: an entry (or 概率) moved to 0 or 1 by hand


@pytest.mark.parametrize("card, old, new, oid, needle, how", [
    ("Propos/数论/p3.md", "｜PfZ｜概率0.6｜状态未定论", "｜PfZ｜概率1｜状态未定论", "p3",
     "### 证明 1", "证明 1 概率0.6 -> 概率1"),
    ("Problems/q3.md", "｜概率0.5｜状态未定论", "｜概率0｜状态已验", "q3", "### 解法 1",
     "解法 1 概率0.5 -> 概率0"),
    ("Propos/数论/p3.md", "- 概率: 0.6\n", "- 概率: 1\n", "p3", "- 概率: 1", "概率 0.6 -> 1"),
])
def test_an_entry_moved_to_0_or_1_by_hand_is_refused(ex, card, old, new, oid, needle, how):
    _edit(ex / card, old, new)
    _hook_refuses(ex)
    rc, staged = _found(ex, "--staged")
    assert rc == 1 and [(d["path"], d["line"], d["blocking"]) for d in staged] == [
        (card, _line(ex / card, needle), True)]
    assert staged[0]["message"].startswith(f"{oid}: {how}, but no valid verification record")
    assert f"Kb-Override: {oid} <reason>" in staged[0]["message"]
    git(ex, "commit", "-q", "--no-verify", "-m", "by hand")
    rc, found = _found(ex, "--range", "HEAD~1..HEAD")
    assert rc == 1 and [d["path"] for d in found] == [card]


def test_an_override_accepts_an_entry_at_1(ex, monkeypatch):
    _edit(ex / "Propos/数论/p3.md", "｜PfZ｜概率0.6｜", "｜PfZ｜概率1｜")
    git(ex, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", "p3 imported from Vibe Math")
    git(ex, "commit", "-q", "-m", "import p3\n\nKb-Override: p3 imported from Vibe Math")
    assert git(ex, "log", "-1", "--format=%s") == "import p3"
    rc, found = _found(ex, "--range", "HEAD~1..HEAD")
    assert rc == 0 and [d["severity"] for d in found] == ["info"]


def test_an_entry_set_by_a_hand_record_no_verdict_could_write_is_refused(ex):
    """Both findings at once: the entry at 1 rests on a record of one vote."""
    write_files(ex, {"Logs/Verification/r-p3-pf1_20261102T100000.json": json.dumps(
        {"r": "r-p3-pf1", "verdict": 1, "at": "2026-11-02T10:00:00",
         "results": [{"verifier": "v1", "result": 1}]})})
    _edit(ex / "Propos/数论/p3.md", "｜PfZ｜概率0.6｜状态未定论", "｜PfZ｜概率1｜状态已验")
    git(ex, "add", "-A")
    rc, staged = _found(ex, "--staged")
    assert rc == 1 and len(staged) == 1
    assert "the record found is not valid (KB243)" in staged[0]["message"]


def test_kb_verdicts_entries_at_0_and_1_pass(ex):
    """A failed proof (verdict 0) puts the proof at 0 and adds a refutation at 1 that
    settles p3 false; a verdict of 0 on a solution puts it at 0: all on their records."""
    before = git(ex, "rev-parse", "HEAD")
    for target in ("p3#证明1", "q3#解法1"):
        r = invoke("verdict", target, "--vote", "a=0", "--vote", "b=0", cwd=ex)
        assert r.code == 0, r.stderr
    assert "证伪（反证）｜概率1" in (ex / "Propos/数论/p3.md").read_text(encoding="utf-8")
    rc, found = _found(ex, "--range", f"{before}..HEAD")
    assert rc == 0 and found == []


def test_kb_verifiers_leaves_a_record_no_verdict_could_write_out(ex: Path) -> None:
    """The contradicting record counts in no verifier's votes or accuracy (nor in later
    verdicts' weights, which read the same records); `kb verifiers` names it on stderr."""
    before = {v["verifier"]: v["votes"] for v in
              json.loads(invoke("verifiers", "--json", cwd=ex).stdout)["verifiers"]}
    write_files(ex, {RECORD: _record([{"verifier": "v1", "result": 0},
                                      {"verifier": "v2", "result": 0}])})
    r = invoke("verifiers", "--json", cwd=ex)
    after = {v["verifier"]: v["votes"] for v in json.loads(r.stdout)["verifiers"]}
    assert r.code == 0 and after == before, (before, after)
    assert RECORD in r.stderr and "does not follow from its results" in r.stderr, r.stderr
