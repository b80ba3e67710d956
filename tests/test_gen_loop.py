"""The whole generation loop offline: recorded agent outputs, a loopback literature server,
a real git KB for adopt (issue 17 "Tests, without the internet")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git, invoke
from litserver import LitServer

DATA = Path(__file__).resolve().parent / "data" / "gen"


@pytest.fixture
def lit(monkeypatch: pytest.MonkeyPatch):
    with LitServer() as srv:
        for k, v in srv.env().items():
            monkeypatch.setenv(k, v)
        for k in ("S2_API_KEY", "OPENALEX_EMAIL", "KB_GEN_SANDBOX"):
            monkeypatch.delenv(k, raising=False)
        monkeypatch.setenv("KB_LIT_BACKOFF", "0.01")
        monkeypatch.setenv("KB_NOW", "2026-11-30T09:00:00Z")
        yield srv


VALIDATED: set[str] = set()


def ok(*args: str, cwd: Path | None = None) -> dict:
    """Run ``kb ARGS --json``; a gen or lit output must validate against its contract model."""
    from kb.contract import validate_output

    r = invoke(*args, "--json", cwd=cwd)
    assert r.code == 0, (args, r.stdout, r.stderr)
    if args[0] in ("gen", "lit"):
        validate_output(" ".join(args[:2]), r.json())
        VALIDATED.add(" ".join(args[:2]))
    return r.json()


def refused(*args: str, cwd: Path | None = None, kind: str = "refused") -> str:
    r = invoke(*args, "--json", cwd=cwd)
    assert r.code == 1, (args, r.stdout, r.stderr)
    assert r.json()["error"]["kind"] == kind, r.stdout
    return r.json()["error"]["message"]


def test_full_loop_to_saturation_then_adopt(lit, tree_kb: Path, tmp_path: Path):
    sb = tree_kb / "sandbox"
    S = ("--sandbox", str(sb))
    run = ok("gen", "init", "--question", "How does practice spacing shape motor-skill retention?",
             "--gen-n", "3", *S, cwd=tree_kb)
    assert run["run_id"] == "gen-20261130T090000Z"
    assert run["literature_tiers"] == {"S2_API_KEY": False, "OPENALEX_EMAIL": False}
    assert ok("gen", "schema", "candidates")["required"] == ["round", "candidates"]
    assert ok("gen", "brief", "generator", *S)["gen_n"] == 3
    assert ok("lit", "keys", cwd=tree_kb) == {"path": str(tree_kb / "keys.env"),
                                             "keys": {"S2_API_KEY": False, "OPENALEX_EMAIL": False}}
    assert (sb / "ledger.tsv").read_text("utf-8") == "round\tgenerated\tkept_new\tpool_size\ttop_kept\n"
    assert (sb / "literature" / ".cache").is_dir()
    assert "already holds a run" in refused("gen", "init", "--question", "again", *S, cwd=tree_kb,
                                            kind="conflict")

    # -- round 1: a fabricated snippet is caught ------------------------------------------
    ok("lit", "snippet", "spacing procedural retention", *S)
    ok("lit", "search", "sleep consolidation", "--source", "s2", *S)
    ok("gen", "submit", "candidates", str(DATA / "round1/candidates.json"), *S)
    assert ok("lit", "cite", "a1b2", *S)["round"] == 1  # after the candidates: still round 1
    assert ok("lit", "paper", "2101.00001", *S)["result"]["year"] == 2021
    scout = ok("gen", "submit", "litscout", str(DATA / "round1/litscout.json"), *S)
    assert scout["evidence"] == {"E1": "verified", "E2": "verified", "E3": "not-found"}
    assert {(c["hid"], c["field"]) for c in scout["unbacked_claims"]} == {
        ("r1h2", "closest_prior_work"), ("r1h2", "support"), ("r1h2", "gap")}
    brief = ok("gen", "brief", "judge", *S)
    assert brief["evidence_check"]["E3"] == "not-found" and "novelty" in brief["rubric"]
    v1 = ok("gen", "submit", "verdict", str(DATA / "round1/verdict.json"), *S)
    by = {v["hid"]: v for v in v1["verdicts"]}
    assert by["r1h2"]["scores"]["novelty"] == 2 and by["r1h2"]["total"] == 58.0
    assert by["r1h2"]["keep"] is False
    assert any(c.startswith("r1h2: novelty 4 capped at 2") for c in v1["corrections"])
    # a gap claim no checked snippet backs stays out of the gaps, and the verdict says so
    assert "r1h2: gap claim 'surgical skill retention beyond a year is unmeasured' not added to " \
        "the open gaps: it cites no snippet that passed the check" in v1["corrections"]
    assert by["r1h3"]["gate_failures"] == ["testability<=1"]  # the Judge's own, not doubled
    assert v1["kept"] == ["r1h1"] and v1["dry"] == 0

    # -- round 2: a search before the candidates counts; a wrong total is corrected --------
    before = len(lit.requests)
    ok("lit", "snippet", "spacing procedural retention", *S)  # served from the cache
    assert len(lit.requests) == before
    ok("gen", "submit", "candidates", str(DATA / "round2/candidates.json"), *S)
    scout = ok("gen", "submit", "litscout", str(DATA / "round2/litscout.json"), *S)
    assert scout["evidence"] == {"E1": "verified", "E2": "verified"}  # E2: whitespace-normalised
    v2 = ok("gen", "submit", "verdict", str(DATA / "round2/verdict.json"), *S)
    by = {v["hid"]: v for v in v2["verdicts"]}
    assert by["r2h1"]["total"] == 84.0 and by["r2h2"]["total"] == 50.0
    assert "r2h1: total 82 corrected to 84 (100·(.30N+.25G+.20T+.15Sp+.10Si)/5)" in v2["corrections"]
    assert any(c.startswith("r2h2: total 41 corrected to 50") for c in v2["corrections"])
    assert by["r2h2"]["gate_failures"] == ["novelty<=1: already-established"]
    assert v2["kept"] == ["r2h1"] and v2["pool_size"] == 2

    # -- round 3: duplicates are gated ------------------------------------------------------
    ok("lit", "snippet", "spacing procedural retention", *S)
    ok("gen", "submit", "candidates", str(DATA / "round3/candidates.json"), *S)
    ok("gen", "submit", "litscout", str(DATA / "round3/litscout.json"), *S)
    v3 = ok("gen", "submit", "verdict", str(DATA / "round3/verdict.json"), *S)
    by = {v["hid"]: v for v in v3["verdicts"]}
    assert by["r3h1"]["duplicate_of"] == "r1h1" and by["r3h1"]["keep"] is False
    assert by["r3h1"]["gate_failures"][0].startswith("duplicate of pool hypothesis r1h1 (Jaccard 0.9")
    assert by["r3h2"]["gate_failures"] == ["duplicate of pool hypothesis r2h1"]
    assert by["r3h3"]["duplicate_of"] == "r3h2" and by["r3h3"]["keep"] is False
    assert by["r3h3"]["gate_failures"][0].startswith("near-duplicate of r3h2 (same round")
    assert "r3h3: keep true corrected to false" in " ".join(v3["corrections"])
    assert v3["kept"] == [] and v3["dry"] == 1 and v3["stopped"] is None

    # -- round 4: fewer candidates with a reason; no search this round; saturation -----------
    cands4 = str(DATA / "round4/candidates.json")
    assert "fewer than gen_n 3" in refused("gen", "submit", "candidates", cands4, *S)
    ok("gen", "submit", "candidates", cands4, "--reason", "the open gaps are nearly exhausted", *S)
    scout = ok("gen", "submit", "litscout", str(DATA / "round4/litscout.json"), *S)
    # E1 passed in rounds 1-3, but round 4 made no request for it: not this round's evidence.
    assert scout["evidence"] == {"E1": "not-found", "W1": "web"}
    v4 = ok("gen", "submit", "verdict", str(DATA / "round4/verdict.json"), *S)
    assert {v["hid"]: v["total"] for v in v4["verdicts"]} == {"r4h1": 44.0, "r4h2": 47.0}
    assert v4["stopped"] == "saturated" and v4["dry"] == 2
    assert "stopped (saturated after round 4)" in refused(
        "gen", "submit", "candidates", str(DATA / "round1/candidates.json"), *S, kind="conflict")

    ledger = (sb / "ledger.tsv").read_text("utf-8").splitlines()
    assert ledger[1:] == [
        "1\t3\t1\t1\tSpaced practice improves long-term retention of procedural motor skills "
        "compared with massed practice in adults [84]",
        "2\t3\t1\t2\tSleep-timed review sessions beat time-of-day-matched review for retaining a "
        "motor sequence [84]",
        "3\t3\t0\t2\t-", "4\t2\t0\t2\t-"]
    st = ok("gen", "status", *S)
    assert st["stopped"] == "saturated" and [p["hid"] for p in st["pool"]] == ["r1h1", "r2h1"]
    assert "long-term procedural retention untested at scale" in [g["claim"] for g in st["gaps"]]
    assert (sb / "round2" / "cache-keys.txt").read_text("ascii").split() == \
        (sb / "round1" / "cache-keys.txt").read_text("ascii").split()[:1]

    # -- tournament and report --------------------------------------------------------------
    rk = ok("gen", "rank", str(DATA / "rank.json"), *S)
    elo = {r["hid"]: r["elo"] for r in rk["ratings"]}
    # 1-0 from 1200 each: 1216 / 1184; then a draw with E = 1/(1+10^(-32/400)) = 0.5459
    assert elo == {"r2h1": 1214.53, "r1h1": 1185.47}
    rep = ok("gen", "report", *S)
    assert rep["hypotheses"] == ["r2h1", "r1h1"]  # equal totals: Elo decides
    text = (sb / "hypotheses.md").read_text("utf-8")
    assert "## 1. Sleep-timed review sessions" in text and "Elo 1214.53" in text
    assert "[E1: Spacing Effects in Motor Skill Consolidation (s2, a1b2" in text
    assert "| 3 | 3 | 0 | 2 | - |" in text and "## Best open gaps" in text
    open_gaps = text.split("## Best open gaps")[1].split("##")[0]
    assert "- difficulty thresholds for interleaving unmapped (round 2, r2h3)" in open_gaps
    assert "surgical" not in open_gaps  # backed only by the fabricated snippet
    assert "sleep-timed scheduling" not in open_gaps  # filled by r2h1

    # -- adopt: a normal hyp add commit that kb verify passes --------------------------------
    ok("hyp", "add", "Practice schedules shape motor retention", cwd=tree_kb)
    head = git(tree_kb, "rev-parse", "HEAD")
    res = ok("gen", "adopt", "r2h1", "--parent", "H1", *S, cwd=tree_kb)
    assert res["id"] == "H1.1" and res["generated"]["hid"] == "r2h1"
    assert git(tree_kb, "rev-list", "--count", f"{head}..HEAD") == "1"
    msg = git(tree_kb, "log", "-1", "--format=%B")
    assert "Kb-Op: hyp.add" in msg and "Kb-Id: H1.1" in msg
    assert "Kb-Gen-Run: gen-20261130T090000Z" in msg and "Kb-Gen-Hid: r2h1" in msg
    tree = (tree_kb / "tree.md").read_text("utf-8")
    assert "### H1.1: Sleep-timed review sessions beat time-of-day-matched review" in tree
    assert "*Generated* by the literature-grounded generation loop: run gen-20261130T090000Z, " \
           "round 2, candidate r2h1, rubric total 84/100" in tree
    assert git(tree_kb, "status", "--porcelain", "--", "tree.md") == ""
    shown = ok("show", "H1.1", cwd=tree_kb)
    assert json.dumps(shown).count("Sleep-timed") >= 1
    v = invoke("verify", cwd=tree_kb)
    assert v.code == 0, v.stdout + v.stderr
    v = invoke("verify", "--range", f"{head}..HEAD", cwd=tree_kb)  # the history rules too
    assert v.code == 0, v.stdout + v.stderr
    assert "adopted already as H1.1" in refused("gen", "adopt", "r2h1", *S, cwd=tree_kb, kind="conflict")
    assert "not a kept hypothesis" in refused("gen", "adopt", "r3h1", *S, cwd=tree_kb, kind="not_found")
    # The sandbox is ignored except its report (and its .gitignore).
    listed = git(tree_kb, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(ln[3:] for ln in listed) == ["sandbox/.gitignore", "sandbox/hypotheses.md"]
    from kb.contract import OUTPUTS

    # every gen and lit command ran once and its output matched its contract model
    assert VALIDATED == {k for k in OUTPUTS if k.split()[0] in ("gen", "lit")}


def test_status_after_the_budget_stop_names_the_last_round_run(lit, tmp_path: Path):
    """A run stopped by its budget of one round is at "round 1/1", not "round 2/1"."""
    sb = tmp_path / "sandbox"
    S = ("--sandbox", str(sb))
    ok("gen", "init", "--question", "How does practice spacing shape motor-skill retention?",
       "--gen-n", "3", "--budget", "1", *S, cwd=tmp_path)
    ok("lit", "snippet", "spacing procedural retention", *S)
    ok("gen", "submit", "candidates", str(DATA / "round1/candidates.json"), *S)
    ok("gen", "submit", "litscout", str(DATA / "round1/litscout.json"), *S)
    v = ok("gen", "submit", "verdict", str(DATA / "round1/verdict.json"), *S)
    assert v["stopped"] == "budget" and v["next_round"] is None
    st = ok("gen", "status", *S)
    assert st["stopped"] == "budget" and st["round"] == 1 and st["budget"] == 1
    r = invoke("gen", "status", *S)
    assert r.code == 0, r.stderr
    assert "round 1/1 · stopped (budget)" in r.stdout, r.stdout


def test_a_run_never_takes_over_a_folder_with_files_or_gits_own(tree_kb: Path) -> None:
    """`kb gen init --sandbox .` wrote a `.gitignore` of `*` over the KB's (the whole KB was
    ignored by git), `--sandbox Problems` dropped state files among the cards, `--sandbox
    .git` wrote into git's folder. A run makes a new or empty folder its own; nothing is
    written otherwise."""
    from conftest import tree_snapshot

    root = tree_kb
    (root / "Problems").mkdir(exist_ok=True)
    (root / "Problems" / "keep.md").write_text("x\n", encoding="utf-8")
    before = tree_snapshot(root)
    for folder, code in ((".", 1), ("Problems", 1), (".git", 2), (".git/runs", 2)):
        r = invoke("gen", "init", "--question", "Why?", "--sandbox", folder, "--json", cwd=root)
        assert r.code == code, (folder, r.stdout, r.stderr)
        assert "sandbox" in r.json()["error"]["message"] or "folder" in r.json()["error"]["message"]
    assert tree_snapshot(root) == before
    (root / "runs" / "empty").mkdir(parents=True)
    assert invoke("gen", "init", "--question", "Why?", "--sandbox", "runs/empty", cwd=root).code == 0
    assert invoke("gen", "init", "--question", "Why?", "--sandbox", "runs/new", cwd=root).code == 0
