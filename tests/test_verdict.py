"""Verification verdicts (issue 5): the rule, verifier accuracy, records and write-back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, write_files

NOW = "1793613600"  # 2026-11-02T10:00:00Z


@pytest.fixture
def ex(example_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_NOW", NOW)
    return example_kb


# ---------------------------------------------------------------------------
# the rule (pure)


@pytest.mark.parametrize("votes, mode, want", [
    ({"a": 1, "b": 1, "c": 1}, "forced", 1.0),                 # unanimous 1
    ({"a": 0, "b": 0}, "flat", 0.0),                           # unanimous 0
    ({"a": 0.9, "b": 1}, "forced", 0.95),                      # near-consensus high
    ({"a": 0.9, "b": 1}, "flat", 0.95),                        # near-consensus, either mode
    ({"a": 0.1, "b": 0}, "forced", 0.05),                      # near-consensus low
    ({"a": 1, "b": 1, "c": 0.99}, "forced", 0.99),             # the mean, clamped to 0.99
    ({"a": 0, "b": 0, "c": 0.01}, "forced", 0.01),             # clamped to 0.01
    ({"a": 0.5, "b": 1, "c": 1}, "forced", pytest.approx((0.5 * 0.5 + 0.6 + 0.6) / 1.7)),  # mean < 0.85
    ({"a": 0.5, "b": 1, "c": 1}, "flat", 0.5),
    ({"a": 0.6, "b": 0.4}, "forced", pytest.approx(0.5)),      # split, equal weights
    ({"a": 0.6, "b": 0.4}, "flat", 0.5),                       # split, flat
    ({"a": 1, "b": 0.4}, "forced", pytest.approx((0.6 * 1 + 0.5 * 0.4) / 1.1)),  # 0 or 1 weighs +0.1
    ({"a": 1, "b": 0}, "forced", pytest.approx(0.5)),
    ({"a": 1, "b": 0}, "flat", 0.5),
    ({"a": 0.5, "b": 0.5}, "forced", 0.5),
    ({"a": 0.9, "b": 0.7}, "flat", 0.5),                       # mean 0.8 < 0.85
    ({"a": 0.95, "b": 0.7, "c": 1}, "flat", pytest.approx(2.65 / 3)),  # same side, mean ≥ 0.85
    ({"a": 0.95, "b": 0.4, "c": 1}, "forced", pytest.approx((0.5 * 0.95 + 0.5 * 0.4 + 0.6) / 1.6)),
])
def test_verdict_table(votes: dict, mode: str, want: float) -> None:
    from kb.research.verdict import compute_verdict

    assert compute_verdict(votes, {}, mode) == want


def test_forced_weights_by_accuracy() -> None:
    from kb.research.verdict import compute_verdict

    acc = {"good": 0.9, "bad": 0.2}
    # weights 0.9 and 0.2: 0.6*0.9 + 0.3*0.2 over 1.1
    assert compute_verdict({"good": 0.6, "bad": 0.3}, acc) == pytest.approx((0.54 + 0.06) / 1.1)
    # exact 1 / 0 add 0.1, clamped to [0.05, 0.95]
    assert compute_verdict({"good": 1, "bad": 0}, acc) == pytest.approx(0.95 / (0.95 + 0.3))
    assert compute_verdict({"good": 1, "bad": 0}, {"good": 0.99, "bad": 0.0}) == \
        pytest.approx(0.95 / (0.95 + 0.1))
    assert compute_verdict({"good": 0.2, "bad": 0.9}, {"good": 0.0, "bad": 0.0}) == \
        pytest.approx((0.05 * 0.2 + 0.05 * 0.9) / 0.1)
    # a forced verdict never reaches 0 or 1
    assert compute_verdict({"a": 1, "b": 1, "c": 0.3}, {"a": 0.95, "b": 0.95, "c": 0.0}) <= 0.99


@pytest.mark.parametrize("votes, needle", [
    ({"a": 1}, "at least 2 votes"),
    ({}, "at least 2 votes"),
    ({"a": 1, "b": 1.5}, "outside [0,1]"),
    ({"a": -0.1, "b": 1}, "outside [0,1]"),
    ({"a": "x", "b": 1}, "not a number"),
])
def test_verdict_refused(votes: dict, needle: str) -> None:
    from kb.errors import UsageError
    from kb.research.verdict import compute_verdict

    with pytest.raises(UsageError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        compute_verdict(votes)


def test_min_votes_and_mode() -> None:
    from kb.errors import UsageError
    from kb.research.verdict import compute_verdict

    with pytest.raises(UsageError, match="at least 3"):
        compute_verdict({"a": 1, "b": 1}, min_votes=3)
    with pytest.raises(UsageError, match="forced, flat"):
        compute_verdict({"a": 1, "b": 1}, mode="majority")
    assert compute_verdict({"a": None, "b": 0.5}) == 0.5  # a missing result counts 0.5


#: Mirror images (each vote v against 1 - v) with the verdict of the first in flat mode.
#: (0.1 + 0.2) / 2 is 0.15000000000000002 in binary floating point: the thresholds must
#: judge the decimals written, or the low side of a mirror pair misses the consensus.
MIRRORS = [
    ((0.9, 0.8), 0.85),            # mean 0.85: a consensus on both sides
    ((0.85, 0.85), 0.85),          # exactly at the thresholds
    ((0.7, 1.0), 0.85),            # 0.3 / 0.0 on the low side
    ((0.98, 0.72), 0.85),
    ((0.93, 0.77), 0.85),
    ((0.87, 0.83), 0.85),
    ((0.89, 0.83, 0.83), 0.85),    # three votes
    ((0.9, 0.7), 0.5),             # mean 0.8: split on both sides
    ((0.9, 0.79), 0.5),            # mean 0.845: just below
    ((0.9, 0.4), 0.5),             # both sides of 0.5
]


def test_mirror_image_votes_are_judged_alike() -> None:
    from kb.research.verdict import compute_verdict, verdict_branch

    for high, want in MIRRORS:
        low = tuple(round(1 - x, 2) for x in high)
        hv = {f"v{i}": x for i, x in enumerate(high)}
        lv = {f"v{i}": x for i, x in enumerate(low)}
        assert verdict_branch(hv) == verdict_branch(lv), (high, low)
        assert compute_verdict(hv, {}, "flat") == want, high
        assert compute_verdict(lv, {}, "flat") == round(1 - want, 10), low
        # forced: equal accuracy, so a split is the plain mean and mirrors too
        assert compute_verdict(lv, {}, "forced") == pytest.approx(1 - compute_verdict(hv, {}, "forced"))
    assert verdict_branch({"a": 0.1, "b": 0.2}) == "consensus"
    assert compute_verdict({"a": 0.1, "b": 0.2}, {}, "flat") == 0.15  # printed as 0.15, not 0.15000000000000002
    assert compute_verdict({"a": 0.15, "b": 0.15}, {}, "flat") == 0.15
    assert compute_verdict({"a": 0.5, "b": 0.2, "c": 0.05, "d": 0.0, "e": 0.0}, {}, "flat") == 0.15
    assert compute_verdict({"a": 0.1, "b": 0.2, "c": 0.16}, {}, "flat") == 0.5  # mean 0.1533…


def test_mirror_verdict_end_to_end(ex: Path) -> None:
    """The CLI judges 0.1/0.2 the way it judges 0.9/0.8: a consensus at 0.15, either mode."""
    from kb.ops.propositions import add_proposition

    add_proposition(ex, "数论", "p7", "High.", probability=0.5)
    add_proposition(ex, "数论", "p8", "Low.", probability=0.5)
    add_proposition(ex, "数论", "p9", "Low, flat.", probability=0.5)
    r = invoke("verdict", "p7", "--vote", "a=0.9", "--vote", "b=0.8", cwd=ex)
    assert r.code == 0 and "verdict 0.85 from 2 votes (consensus)" in r.stdout, r.stdout + r.stderr
    r = invoke("verdict", "p8", "--vote", "a=0.1", "--vote", "b=0.2", cwd=ex)
    assert r.code == 0 and "verdict 0.15 from 2 votes (consensus)" in r.stdout, r.stdout + r.stderr
    r = invoke("verdict", "p9", "--vote", "a=0.1", "--vote", "b=0.2", "--mode", "flat", cwd=ex)
    assert r.code == 0 and "verdict 0.15 from 2 votes (consensus)" in r.stdout, r.stdout + r.stderr
    assert "- 概率: 0.15\n" in (ex / "Propos/数论/p9.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------
# accuracy: against outcomes that settled later


def rec(r: str, verdict: float, at: str, **votes: float) -> dict:
    return {"r": r, "verdict": verdict, "at": at, "transcript": "", "history": [],
            "results": [{"verifier": k, "result": v, "reason": ""} for k, v in votes.items()]}


def test_accuracy_only_counts_votes_on_targets_that_settled_later() -> None:
    from kb.research.verdict import parse_record, verifier_accuracy

    raw = [
        rec("r-p1-pf1", 0.5, "2026-01-01T00:00:00", a=0.7, b=0.3),   # settles to 1 later
        rec("r-p1-pf1", 1, "2026-01-02T00:00:00", a=1, b=1),
        rec("r-p2-pf1", 0.6, "2026-01-01T00:00:00", a=0.2, b=0.9),   # settles to 0 later
        rec("r-p2-pf1", 0, "2026-01-03T00:00:00", a=0, b=0),
        rec("r-q1-s1", 0.5, "2026-01-01T00:00:00", a=0.5, b=0.5),    # never settled
        rec("r-q2-s1", 1, "2026-01-01T00:00:00", a=1, c=1),          # settled at once: no history
    ]
    recs = [parse_record(f"Logs/Verification/{i}.json", r) for i, r in enumerate(raw)]
    acc = verifier_accuracy(recs)
    assert (acc["a"].agreed, acc["a"].counted) == (2, 2) and acc["a"].rate == 1.0
    assert (acc["b"].agreed, acc["b"].counted) == (0, 2) and acc["b"].rate == 0.0
    assert acc["c"].counted == 0 and acc["c"].rate == 0.5
    assert acc["a"].votes == 6


def test_accuracy_reads_vibe_math_records() -> None:
    from kb.research.verdict import parse_record, verifier_accuracy

    vm = {"r": {"rId": "r-p9", "kind": "proposition"}, "verdict": 0.5, "at": 1767225600000,
          "results": {"child-1": {"Result": 0.9, "Reason": "ok"}, "child-2": {"Result": 0.1}},
          "transcript": "Reviewer 0: …", "history": []}
    later = {"r": "r-p9", "verdict": 1, "at": "2026-06-01T00:00:00",
             "results": [{"verifier": "x", "result": 1}, {"verifier": "y", "result": 1}]}
    recs = [parse_record("a.json", vm), parse_record("b.json", later)]
    assert recs[0].r == "r-p9" and recs[0].at == "2026-01-01T00:00:00"
    acc = verifier_accuracy(recs)
    assert acc["child-1"].rate == 1.0 and acc["child-2"].rate == 0.0


def test_forced_verdict_uses_derived_accuracy(ex: Path) -> None:
    """History in Logs/Verification decides the weights of a split vote."""
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition
    from kb.ops.verdict import record_verdict
    from kb.views.verification import accuracy_table

    add_proposition(ex, "数论", "p7", "A claim.", probability=0.5)
    add_entry(ex, "p7", "证明", "first try", 0.5, text="An argument.")
    r = record_verdict(ex, "p7#证明1", {"good": 0.8, "bad": 0.2}, mode="forced")
    assert r.data["verdict"] == pytest.approx(0.5) and r.data["branch"] == "split"
    r = record_verdict(ex, "p7#证明1", {"good": 1, "bad": 1})
    assert r.data["verdict"] == 1
    table = {a.verifier: a for a in accuracy_table(ex)}
    assert table["good"].rate == 1.0 and table["bad"].rate == 0.0
    add_proposition(ex, "数论", "p8", "Another claim.", probability=0.5)
    add_entry(ex, "p8", "证明", "try", 0.5, text="Argument.")
    r = record_verdict(ex, "p8#证明1", {"good": 0.8, "bad": 0.2})
    # weights clamp(1.0) -> 0.95 and clamp(0.0) -> 0.05
    assert r.data["verdict"] == pytest.approx((0.95 * 0.8 + 0.05 * 0.2) / 1.0)
    out = invoke("verifiers", "--json", cwd=ex)
    assert out.code == 0
    rows = {x["verifier"]: x for x in out.json()["verifiers"]}
    assert out.json()["count"] == len(rows)
    assert rows["good"]["accuracy"] == 1.0 and rows["good"]["counted"] == 1
    assert rows["v1"]["accuracy"] == 0.5  # the example's verifiers: no settled history


# ---------------------------------------------------------------------------
# records and write-back


def test_solution_verified_to_one_end_to_end(ex: Path) -> None:
    """Add a problem with two solutions, verify one to 1: solved, Verified card, one commit.

    With the hooks installed, kb's own commits pass the pre-commit hook (a new Verified
    card is allowed); a later edit of the card is refused by it.
    """
    assert invoke("hooks", "install", cwd=ex).code == 0
    (ex / "s1.md").write_text("Take N = 4·p₁⋯p_k − 1.\nIt has a prime factor ≡ 3 (mod 4).\n",
                              encoding="utf-8")
    assert invoke("problem", "add", "q5", "Infinitely many primes ≡ 3 (mod 4).", "--title",
                  "Primes 3 mod 4", cwd=ex).code == 0
    assert invoke("problem", "add", "q6", "Uses q5.", "--depends", "q5", cwd=ex).code == 0
    assert "- 状态: 等待依赖\n" in (ex / "Problems/q6.md").read_text(encoding="utf-8")
    assert invoke("entry", "add", "q5", "--kind", "解法", "--title", "Euclid variant", "--prob",
                  "0.8", "--text-file", str(ex / "s1.md"), cwd=ex).code == 0
    assert invoke("entry", "add", "q5", "--kind", "解法", "--title", "Dirichlet", "--prob", "0.6",
                  "--text", "Dirichlet's theorem.", cwd=ex).code == 0
    before = git(ex, "rev-parse", "HEAD")
    r = invoke("verdict", "q5#解法1", "--vote", "v1=1", "--vote", "v2=1", "--vote", "v3=1",
               "--reason", "v1=complete", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["verdict"] == 1 and out["r"] == "r-q5-s1" and out["settled"] == ["q5"]
    assert git(ex, "rev-parse", "HEAD~1") == before
    assert set(out["paths"]) == {"Logs/Verification/r-q5-s1_20261102T100000.json",
                                 "Problems/q5.md", "Problems/q6.md", "Verified/问题/q5.md"}
    q5 = (ex / "Problems/q5.md").read_text(encoding="utf-8")
    assert "- 状态: 已解决\n- 优先级: never\n" in q5
    assert "### 解法 1｜Euclid variant｜概率1｜状态已验\n" in q5
    assert "### 解法 2｜Dirichlet｜概率0.6｜状态未定论\n" in q5
    assert "- 状态: 求解中\n" in (ex / "Problems/q6.md").read_text(encoding="utf-8")
    card = (ex / "Verified/问题/q5.md").read_text(encoding="utf-8")
    assert card == ("# 已验证｜Primes 3 mod 4\n- ID: q5\n- 类型: 问题\n- 结论: 真\n- 概率: 1\n"
                    "- 分类: 问题\n- 来源: q5\n- 时间: 2026-11-02 10:00:00\n\n## 陈述\n"
                    "Infinitely many primes ≡ 3 (mod 4).\n\n## 可信内容\n【解法 #1】Take N = 4·p₁⋯p_k − 1.\n"
                    "It has a prime factor ≡ 3 (mod 4).\n")
    record = json.loads((ex / "Logs/Verification/r-q5-s1_20261102T100000.json").read_text("utf-8"))
    assert record["r"] == "r-q5-s1" and record["verdict"] == 1 and record["at"] == "2026-11-02T10:00:00"
    assert record["results"][0] == {"verifier": "v1", "result": 1, "reason": "complete"}
    assert set(record) >= {"r", "verdict", "results", "transcript", "history", "at"}
    # settled: the other solution can no longer be verified, the card is final
    r = invoke("verdict", "q5#解法2", "--vote", "v1=1", "--vote", "v2=1", cwd=ex)
    assert r.code == 1 and "already settled" in r.stderr
    _verify_and_hook(ex)


def _verify_and_hook(ex: Path) -> None:
    """Verify is clean; a commit editing the Verified card is refused by kb's hook."""
    r = invoke("verify", "--format", "json", cwd=ex)
    assert r.code == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["blocking"] == 0
    assert not [d for d in out["diagnostics"] if d["severity"] == "error" or d["code"] == "KB217"]
    card = ex / "Verified/问题/q5.md"
    card.write_text(card.read_text(encoding="utf-8") + "\n（改动）\n", encoding="utf-8")
    git(ex, "add", "Verified/问题/q5.md")
    proc = git(ex, "commit", "-q", "-m", "edit a Verified card", check=False)
    assert git(ex, "status", "--porcelain", "--", "Verified").startswith("M"), proc
    assert "edit a Verified card" not in git(ex, "log", "-1", "--format=%s")


def test_failed_proof_adds_refutation_and_settles_false(ex: Path) -> None:
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition
    from kb.ops.verdict import record_verdict

    add_proposition(ex, "数论", "p7", "All odd numbers are prime.", probability=0.3,
                    source_problem="q2")
    add_entry(ex, "p7", "证明", "3, 5, 7", 0.3, text="Check 3, 5 and 7.")
    r = record_verdict(ex, "p7#证明1", {"v1": 0, "v2": 0},
                       {"v1": "9 = 3·3 is odd and not prime.", "v2": "Induction from three cases."})
    text = (ex / "Propos/数论/p7.md").read_text(encoding="utf-8")
    assert "### 证明 1｜3, 5, 7｜概率0｜状态已验\n" in text
    assert "### 证伪 1｜证伪（反证）｜概率1｜状态已验\n9 = 3·3 is odd and not prime.\n" in text
    assert "- 状态: 已验证·假\n- 概率: 0\n- 优先级: never\n" in text
    card = (ex / "Verified/命题/p7.md").read_text(encoding="utf-8")
    assert "- 结论: 假\n- 概率: 0\n- 分类: 数论\n- 来源: q2\n" in card
    assert card.endswith("## 可信内容\n【证伪 #1】9 = 3·3 is odd and not prime.\n")
    assert r.data["settled"] == ["p7"]


def test_split_verdict_adds_opposite_entry(ex: Path) -> None:
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition
    from kb.ops.verdict import record_verdict

    add_proposition(ex, "数论", "p7", "Twin primes are infinite.", probability=0.6)
    add_entry(ex, "p7", "证伪", "finite?", 0.2, text="Maybe they stop.")
    r = record_verdict(ex, "p7#证伪1", {"v1": 0.3, "v2": 0.1, "v3": 0.2}, {"v2": "no argument"})
    assert r.data["branch"] == "split" and r.data["verdict"] == pytest.approx(0.2)
    text = (ex / "Propos/数论/p7.md").read_text(encoding="utf-8")
    assert "### 证伪 1｜finite?｜概率0.2｜状态已验\n" in text
    assert "### 证明 1｜证明（辩论论证）｜概率0.8｜状态已验\n" in text
    assert "- 状态: 未定论\n" in text and not (ex / "Verified/命题/p7.md").exists()
    # a consensus near 0 on the refutation: 0.05, opposite entry at 0.95, still undecided
    add_entry(ex, "p7", "证伪", "second", 0.2, text="Another try.")
    r = record_verdict(ex, "p7#证伪2", {"v1": 0.1, "v2": 0})
    assert r.data["verdict"] == pytest.approx(0.05)
    assert "### 证明 2｜证明（辩论论证）｜概率0.95｜状态已验\n" in \
        (ex / "Propos/数论/p7.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("votes, want_status, want_entries", [
    ({"v1": 1, "v2": 1}, "已验证·真", ["### 证明 1｜验证证明｜概率1｜状态已验"]),
    ({"v1": 0, "v2": 0}, "已验证·假", ["### 证伪 1｜验证证伪｜概率1｜状态已验"]),
    ({"v1": 0.6, "v2": 0.8}, "未定论", ["### 证明 1｜辩论支持论证｜概率0.7｜状态已验",
                                       "### 证伪 1｜辩论反驳论证｜概率0.3｜状态已验"]),
])
def test_bare_proposition_write_back(ex: Path, votes: dict, want_status: str,
                                     want_entries: list[str]) -> None:
    from kb.ops.propositions import add_proposition
    from kb.ops.verdict import record_verdict

    add_proposition(ex, "数论", "p7", "Bare claim.", probability=0.5)
    r = record_verdict(ex, "p7", votes, {"v1": "because"})
    assert r.data["r"] == "r-p7"
    text = (ex / "Propos/数论/p7.md").read_text(encoding="utf-8")
    assert f"- 状态: {want_status}\n" in text
    for e in want_entries:
        assert e + "\n" in text
    assert (ex / "Verified/命题/p7.md").exists() == (want_status != "未定论")
    assert list((ex / "Logs/Verification").glob("r-p7_20261102T100000.json"))


def test_a_bare_verdict_on_a_proposition_with_entries_is_refused(ex: Path) -> None:
    """VIBEMATH-V3: a bare proposition is a target only without entries. With entries a
    bare verdict added a second proof/refutation pair beside them; now it is refused and
    nothing is written (no record, no card change, no commit)."""
    from kb.ops.card_edit import CardError
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition
    from kb.ops.verdict import record_verdict

    add_proposition(ex, "数论", "p7", "Bare claim.", probability=0.5)
    add_entry(ex, "p7", "证明", "an argument", 0.4, text="Sketch.")
    card = (ex / "Propos/数论/p7.md").read_bytes()
    head = git(ex, "rev-parse", "HEAD")
    with pytest.raises(CardError, match=r"p7 has entries \(p7#证明1\)"):
        record_verdict(ex, "p7", {"v1": 0.2, "v2": 0.4})
    assert (ex / "Propos/数论/p7.md").read_bytes() == card
    assert git(ex, "rev-parse", "HEAD") == head
    assert not list((ex / "Logs/Verification").glob("r-p7_*.json"))
    record_verdict(ex, "p7#证明1", {"v1": 0.2, "v2": 0.4})  # its entry is the target


def test_judge_problem_writes_back_to_its_proposition(ex: Path) -> None:
    """kb promote, then a verdict on a 【证明】 solution settles the proposition and the problem."""
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition
    from kb.ops.promote import promote
    from kb.ops.verdict import record_verdict

    add_proposition(ex, "数论", "p-3f2a9c01", "Every even n > 2 is a sum of two primes.",
                    probability=0.6, value=0.9)
    add_entry(ex, "p-3f2a9c01", "证明", "Circle method", 0.4, text="Hardy–Littlewood.")
    r = promote(ex, 0.7)
    assert [m["id"] for m in r.data["promoted"]] == ["q-promoted-p-3f2a9c01"]
    r = record_verdict(ex, "q-promoted-p-3f2a9c01#解法1", {"v1": 1, "v2": 1})
    assert set(r.data["settled"]) == {"p-3f2a9c01", "q-promoted-p-3f2a9c01"}
    p = (ex / "Propos/数论/p-3f2a9c01.md").read_text(encoding="utf-8")
    assert "### 证明 1｜Circle method｜概率1｜状态已验\n" in p and "- 状态: 已验证·真\n" in p
    assert (ex / "Verified/命题/p-3f2a9c01.md").exists()
    card = (ex / "Verified/问题/q-promoted-p-3f2a9c01.md").read_text(encoding="utf-8")
    assert "【解法 #1】【证明】Hardy–Littlewood." in card
    # promoting again finds the judge problem and does nothing
    r = promote(ex, 0.7)
    assert r.data["promoted"] == [] and r.tx.commit is None


def test_same_second_records_are_appended(ex: Path) -> None:
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition
    from kb.ops.verdict import record_verdict
    from kb.views.verification import load_records

    add_proposition(ex, "数论", "p7", "c", probability=0.5)
    add_entry(ex, "p7", "证明", "t", 0.5, text="x")
    record_verdict(ex, "p7#证明1", {"a": 0.6, "b": 0.4})
    record_verdict(ex, "p7#证明1", {"a": 0.7, "b": 0.4})
    names = sorted(p.name for p in (ex / "Logs/Verification").glob("r-p7-pf1_*.json"))
    assert names == ["r-p7-pf1_20261102T100000-2.json", "r-p7-pf1_20261102T100000.json"]
    mine = [r for r in load_records(ex) if r.r == "r-p7-pf1"]
    assert [r.path.rsplit("/", 1)[-1] for r in mine] == ["r-p7-pf1_20261102T100000.json",
                                                         "r-p7-pf1_20261102T100000-2.json"]


def test_existing_verified_card_is_never_rewritten(ex: Path) -> None:
    from kb.ops.card_edit import CardError
    from kb.ops.entries import add_entry
    from kb.ops.problems import add_problem
    from kb.ops.verdict import record_verdict

    add_problem(ex, "q8", "x")
    add_entry(ex, "q8", "解法", "s", 0.5, text="y")
    write_files(ex, {"Verified/问题/q8.md": "# 已验证｜stray\n- ID: q8\n"})
    commit_all(ex, "a stray card")
    before = git(ex, "rev-parse", "HEAD")
    with pytest.raises(CardError, match="not settled"):
        record_verdict(ex, "q8#解法1", {"a": 1, "b": 1})
    assert git(ex, "rev-parse", "HEAD") == before
    assert (ex / "Verified/问题/q8.md").read_text(encoding="utf-8") == "# 已验证｜stray\n- ID: q8\n"


def test_reason_file_and_transcript(ex: Path) -> None:
    from kb.ops.entries import add_entry
    from kb.ops.problems import add_problem

    add_problem(ex, "q8", "x")
    add_entry(ex, "q8", "解法", "s", 0.5, text="y")
    (ex / "reasons.json").write_text(json.dumps({"v1": "ok", "v2": "## a heading\nfine"}),
                                     encoding="utf-8")
    (ex / "debate.txt").write_text("Round 1: …\n", encoding="utf-8")
    r = invoke("verdict", "q8#s1", "--vote", "v1=0.2", "--vote", "v2=0.6", "--reason-file",
               str(ex / "reasons.json"), "--transcript-file", str(ex / "debate.txt"),
               "--mode", "flat", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    assert r.json()["verdict"] == 0.5
    rec_ = json.loads((ex / "Logs/Verification/r-q8-s1_20261102T100000.json").read_text("utf-8"))
    assert rec_["transcript"] == "Round 1: …" and rec_["mode"] == "flat"
    assert rec_["results"][1]["reason"] == "## a heading\nfine"


def test_verdict_on_an_entry_that_does_not_exist_is_not_found(ex: Path) -> None:
    head = git(ex, "rev-parse", "HEAD")
    r = invoke("verdict", "q2#解法9", "--vote", "a=1", "--vote", "b=1", "--json", cwd=ex)
    assert r.code == 1 and r.json()["error"]["kind"] == "not_found", r.stdout
    assert "q2 has no entry 解法 9" in r.json()["error"]["message"]
    assert git(ex, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("edit", ["probability", "status", "title", "removed"])
def test_a_settled_entry_edited_by_hand_is_refused_kb311(ex: Path, edit: str) -> None:
    """KB311: an entry a verdict settled (状态已验 at 0 or 1) stays as written, in the hook
    and in CI; a new entry beside it, and kb's own verdicts, pass."""
    q1 = ex / "Problems/q1.md"
    text = q1.read_text(encoding="utf-8")
    line = "### 解法 1｜Minimal denominator and parity｜概率1｜状态已验"
    assert line in text
    new = {"probability": line.replace("概率1", "概率0.2"),
           "status": line.replace("状态已验", "状态未定论"),
           "title": line.replace("Minimal denominator", "Some other"),
           "removed": "### 解法 9｜Replacement｜概率0.5｜状态未定论"}[edit]
    q1.write_text(text.replace(line, new), encoding="utf-8")
    git(ex, "add", "-A")
    res = invoke("verify", "--staged", "--json", cwd=ex)
    hits = [d for d in res.json()["diagnostics"] if d["code"] == "KB311"]
    assert res.code == 1 and [(d["path"], d["severity"]) for d in hits] == \
        [("Problems/q1.md", "error")], res.stdout
    git(ex, "commit", "-qm", "hand edit", "--no-verify")
    res = invoke("verify", "--range", "HEAD~1..HEAD", "--json", cwd=ex)
    assert res.code == 1 and [d["code"] for d in res.json()["diagnostics"]].count("KB311") == 1


def test_kb_verdicts_and_new_entries_pass_kb311(ex: Path) -> None:
    from kb.ops.entries import add_entry
    from kb.ops.propositions import add_proposition
    from kb.ops.verdict import record_verdict

    base = git(ex, "rev-parse", "HEAD")
    add_proposition(ex, "数论", "p7", "Twin primes are infinite.", probability=0.6)
    add_entry(ex, "p7", "证明", "sieve", 0.2, text="Maybe.")
    record_verdict(ex, "p7#证明1", {"v1": 0.7, "v2": 0.8})  # a split: 已验 between 0 and 1
    add_entry(ex, "p7", "证明", "second", 0.5, text="Again.")
    record_verdict(ex, "p7#证明2", {"v1": 1, "v2": 1})  # settles p7
    add_entry(ex, "q2", "解法", "another idea", 0.3, text="Try.")
    res = invoke("verify", "--range", f"{base}..HEAD", "--json", cwd=ex)
    assert res.code == 0 and "KB311" not in res.stdout, res.stdout


# -- KB311: the text of a settled entry ------------------------------------------------

def _settled_proof(ex: Path) -> tuple[Path, str, str]:
    """p1's 证明 1 (概率1 状态已验, the example's): (card, its text, the proof's first line)."""
    card = ex / "Propos/数论/p1.md"
    text = card.read_text(encoding="utf-8")
    assert "### 证明 1｜Least divisor argument｜概率1｜状态已验" in text
    first = text.split("### 证明 1｜Least divisor argument｜概率1｜状态已验\n", 1)[1].split("\n", 1)[0]
    assert first.strip()
    return card, text, first


def test_a_settled_proof_rewritten_is_refused_kb311(ex: Path) -> None:
    """The body of a settled entry stays as its heading does, in the hook and in a range;
    the message names the entry and the line that changed."""
    card, text, first = _settled_proof(ex)
    base = git(ex, "rev-parse", "HEAD")
    new = text.replace(first, first[: len(first) // 2] + "(rewritten)")
    card.write_text(new, encoding="utf-8")
    git(ex, "add", "-A")
    res = invoke("verify", "--staged", "--json", cwd=ex)
    hits = [d for d in res.json()["diagnostics"] if d["code"] == "KB311"]
    assert res.code == 1 and len(hits) == 1 and hits[0]["severity"] == "error", res.stdout
    assert "the text of settled entry 证明 1 changed" in hits[0]["message"]
    line = next(i for i, ln in enumerate(new.splitlines(), 1) if "(rewritten)" in ln)
    assert hits[0]["line"] == line and f"line {line} was" in hits[0]["message"]
    git(ex, "commit", "-qm", "rewrite the proof", "--no-verify")
    res = invoke("verify", "--range", f"{base}..HEAD", "--json", cwd=ex)
    assert res.code == 1 and [d["code"] for d in res.json()["diagnostics"]].count("KB311") == 1


def test_a_settled_proof_rewritten_with_an_override_passes(ex: Path, monkeypatch) -> None:
    card, text, first = _settled_proof(ex)
    card.write_text(text.replace(first, first + " (a typo fixed)"), encoding="utf-8")
    git(ex, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", "p1 a typo in the proof")
    res = invoke("verify", "--staged", "--json", cwd=ex)
    hits = [d for d in res.json()["diagnostics"] if d["code"] == "KB311"]
    assert res.code == 0 and [d["severity"] for d in hits] == ["info"], res.stdout


def test_an_open_entrys_text_and_white_space_alone_pass_kb311(ex: Path) -> None:
    """An entry no verdict settled may be rewritten (q2's 解法 1, 未定论); a settled card
    whose line endings alone changed (CRLF, no last newline) reads the same."""
    base = git(ex, "rev-parse", "HEAD")
    q2 = ex / "Problems/q2.md"
    text = q2.read_text(encoding="utf-8")
    head = "### 解法 1｜Euclid's product-plus-one argument｜概率0.9｜状态未定论\n"
    q2.write_text(text.replace(head, head + "A rewritten sketch.\n"), encoding="utf-8")
    card, ptext, _first = _settled_proof(ex)
    card.write_bytes(ptext.rstrip("\n").replace("\n", "\r\n").encode("utf-8"))
    git(ex, "add", "-A")
    res = invoke("verify", "--staged", "--json", cwd=ex)
    assert "KB311" not in res.stdout, res.stdout
    git(ex, "commit", "-qm", "edits", "--no-verify")
    res = invoke("verify", "--range", f"{base}..HEAD", "--json", cwd=ex)
    assert "KB311" not in res.stdout, res.stdout


def test_a_merge_beside_a_settled_entry_passes_kb311(ex: Path) -> None:
    """q2's 解法 2 settled at 0 (q2 stays open); a branch appends an entry to q2 (kb's own
    write), the other side changes something else: the merge passes in a range and alone."""
    from kb.ops.entries import add_entry
    from kb.ops.verdict import record_verdict

    base = git(ex, "rev-parse", "HEAD")
    record_verdict(ex, "q2#解法2", {"v1": 0, "v2": 0})
    assert "### 解法 2｜Euler's polynomial n² + n + 41｜概率0｜状态已验" in \
        (ex / "Problems/q2.md").read_text(encoding="utf-8")
    git(ex, "checkout", "-q", "-b", "feature")
    add_entry(ex, "q2", "解法", "a third idea", 0.3, text="Try a sieve.")
    git(ex, "checkout", "-q", "main")
    assert invoke("hyp", "add", "Another claim", cwd=ex).code == 0
    git(ex, "merge", "-q", "--no-ff", "--no-edit", "feature")
    assert "### 解法 3｜a third idea" in (ex / "Problems/q2.md").read_text(encoding="utf-8")
    for args in (["--range", f"{base}..HEAD"], ["--rev", "HEAD"]):
        res = invoke("verify", "--json", *args, cwd=ex)
        assert res.code == 0 and "KB311" not in res.stdout, (args, res.stdout)


def test_accuracy_counts_what_a_propositions_later_settlement_judges() -> None:
    """A target that never settles itself is judged by its proposition's settlement: a bare
    verdict's votes against the outcome; a proof's once the proposition settled false, a
    refutation's once it settled true (a vote <= 0.5 agrees); nothing cast after it
    settled, and no solution of a problem another solution solved."""
    from kb.research.verdict import parse_record, verifier_accuracy

    raw = [
        rec("r-pd", 0.55, "2026-01-01T00:00:00", a=0.2, b=0.9),      # bare, then true via pf1
        rec("r-pd-rf1", 0.4, "2026-01-01T01:00:00", a=0.9, b=0.1),   # a refutation of a truth
        rec("r-pd-pf1", 1, "2026-01-02T00:00:00", c=1, d=1),          # pd settles true
        rec("r-pd", 0.5, "2026-01-03T00:00:00", a=0.9, b=0.9),       # after: not counted
        rec("r-pb-pf1", 0.7, "2026-01-01T00:00:00", a=0.9, b=0.3),   # a proof of a falsehood
        rec("r-pb-rf1", 1, "2026-01-02T00:00:00", c=1, d=1),          # pb settles false
        rec("r-q1-s1", 0.6, "2026-01-01T00:00:00", a=0.9, b=0.2),    # q1 solved by s2
        rec("r-q1-s2", 1, "2026-01-02T00:00:00", c=1, d=1),
    ]
    recs = [parse_record(f"Logs/Verification/{i}.json", r) for i, r in enumerate(raw)]
    acc = verifier_accuracy(recs)
    assert (acc["a"].agreed, acc["a"].counted) == (0, 3), acc["a"]
    assert (acc["b"].agreed, acc["b"].counted) == (3, 3), acc["b"]
    assert acc["c"].counted == 0 and acc["d"].counted == 0


@pytest.mark.parametrize("name", ["\u200b\u2060", "\ufeff", "\u2800", "v\u202e1", "v\x7f"])
def test_a_verifier_name_nobody_can_read_is_refused(ex: Path, name: str) -> None:
    """An invisible name counted as a second verifier toward `min_votes` and settled q2."""
    head = git(ex, "rev-parse", "HEAD")
    r = invoke("verdict", "q2#解法1", "--vote", f"{name}=1", "--vote", "v2=1", cwd=ex)
    assert r.code == 2 and "verifier name" in r.stderr, (r.code, r.stderr)
    assert git(ex, "rev-parse", "HEAD") == head and git(ex, "status", "--porcelain") == ""
