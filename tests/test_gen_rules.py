"""The loop's schemas and the rules kb enforces on each submission (refusals change nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke, tree_snapshot

DATA = Path(__file__).resolve().parent / "data" / "gen"


def props(schema: dict, name: str | None = None) -> tuple[set, set, object]:
    node = schema["$defs"][name] if name else schema
    return set(node["properties"]), set(node.get("required", [])), node.get("additionalProperties")


def test_schemas_have_exactly_the_spec_fields():
    from kb.gen.models import schemas

    s = schemas()
    assert props(s["candidates"]) == ({"round", "candidates"}, {"round", "candidates"}, False)
    assert props(s["candidates"], "Candidate") == (
        {"hid", "statement", "kind", "rationale", "how_to_test"},
        {"hid", "statement", "kind", "rationale", "how_to_test"}, False)
    assert props(s["litscout"]) == ({"round", "evaluations", "evidence"},) * 2 + (False,)
    ev = {"hid", "novelty_assessment", "closest_prior_work", "support", "gap", "testability_note"}
    assert props(s["litscout"], "Evaluation") == (ev, ev, False)
    assert props(s["litscout"], "Point") == ({"claim", "cites"}, {"claim", "cites"}, False)
    assert props(s["litscout"], "Evidence") == (
        {"key", "title", "source", "id", "snippet"}, {"key", "title", "source", "snippet"}, False)
    lit = s["litscout"]["$defs"]
    assert lit["Evaluation"]["properties"]["novelty_assessment"]["enum"] == [
        "novel", "incremental", "already-established", "unknown"]
    assert lit["Evidence"]["properties"]["source"]["enum"] == ["s2", "arxiv", "web"]
    assert lit["Evidence"]["properties"]["id"] == {"title": "Id", "type": "string"}
    assert props(s["verdict"]) == ({"round", "verdicts"},) * 2 + (False,)
    assert props(s["verdict"], "Verdict") == (
        {"hid", "scores", "total", "keep", "rationale", "gate_failures", "duplicate_of"},
        {"hid", "scores", "total", "keep", "rationale"}, False)
    sc = s["verdict"]["$defs"]["Scores"]
    assert set(sc["required"]) == {"novelty", "grounding", "testability", "specificity", "significance"}
    assert all(p == {"maximum": 5, "minimum": 0, "title": p["title"], "type": "integer"}
               for p in sc["properties"].values())
    total = s["verdict"]["$defs"]["Verdict"]["properties"]["total"]
    assert (total["type"], total["minimum"], total["maximum"]) == ("number", 0, 100)
    r = invoke("gen", "schema", "litscout")
    assert r.code == 0 and json.loads(r.stdout) == s["litscout"]


def test_total_formula_and_the_upstream_examples():
    from kb.gen.rules import total

    assert total(dict(novelty=4, grounding=4, testability=5, specificity=4, significance=4)) == 84.0
    assert total(dict(novelty=1, grounding=3, testability=4, specificity=3, significance=2)) == 50.0
    assert total(dict(novelty=5, grounding=5, testability=5, specificity=5, significance=5)) == 100.0
    assert total(dict(novelty=3, grounding=2, testability=3, specificity=3, significance=2)) == 53.0


def test_jaccard_over_english_words_and_chinese_bigrams():
    from kb.gen.rules import jaccard, tokens

    assert tokens("睡眠促进 Motor-memory, 记") == {"睡眠", "眠促", "促进", "motor-memory", "记"}
    assert jaccard("Spaced practice helps", "spaced PRACTICE helps!") == 1.0
    assert jaccard("间隔练习促进运动技能保持", "间隔练习促进运动技能的保持") == pytest.approx(10 / 13)
    assert jaccard("a b c d e f g h i j k l m n o p q r s t", "a b c d e f g h i j k l m n o p q r s") >= 0.85


def test_verbatim_check_normalises_whitespace_only():
    from kb.gen.rules import corpus_of, occurs

    corpus = corpus_of([{"data": [{"snippet": {"text": "Spaced  practice\nimproved retention."}}]},
                        "<feed><summary>Sleep &amp; memory</summary></feed>"])
    assert occurs("Spaced practice improved", corpus)
    assert occurs("Sleep & memory", corpus)
    assert not occurs("spaced practice improved", corpus)  # case matters: verbatim
    assert not occurs("Spaced practice improved retention greatly.", corpus)
    assert not occurs("   ", corpus)


@pytest.fixture
def sb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("KB_GEN_SANDBOX", raising=False)
    monkeypatch.setenv("KB_NOW", "2026-11-30T09:00:00Z")
    root = tmp_path / "sandbox"
    r = invoke("gen", "init", "--question", "Q?", "--gen-n", "3", "--sandbox", str(root), "--json")
    assert r.code == 0, r.stderr
    return root


def write(tmp_path: Path, name: str, data: object) -> str:
    p = tmp_path / name
    p.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return str(p)


def refused(sb: Path, *args: str, kind: str = "refused") -> str:
    before = tree_snapshot(sb)
    r = invoke("gen", "submit", *args, "--sandbox", str(sb), "--json")
    assert r.code == 1, (r.stdout, r.stderr)
    assert tree_snapshot(sb) == before  # a refused submission changes nothing
    assert r.json()["error"]["kind"] == kind
    return r.json()["error"]["message"]


def cands(n: int = 3, rnd: int = 1) -> dict:
    return {"round": rnd, "candidates": [
        {"hid": f"r{rnd}h{i}", "statement": f"statement number {i} about topic {i * 7}", "kind": "k",
         "rationale": "r", "how_to_test": "t"} for i in range(1, n + 1)]}


def test_candidates_rules(sb, tmp_path):
    msg = refused(sb, "candidates", write(tmp_path, "bad.json", '{"round": 1,\n "candidates": [}'))
    assert msg.endswith("bad.json:2:17: not valid JSON: Expecting value")
    c = cands()
    del c["candidates"][0]["how_to_test"]
    c["candidates"][1]["extra"] = 1
    msg = refused(sb, "candidates", write(tmp_path, "c.json", c))
    assert "c.json: $.candidates[0].how_to_test: Field required" in msg
    assert "c.json: $.candidates[1].extra: Extra inputs are not permitted" in msg
    c = cands()
    c["candidates"][1]["hid"] = "r1h1"
    c["candidates"][2]["hid"] = "r2h3"
    msg = refused(sb, "candidates", write(tmp_path, "c.json", c))
    assert "$.candidates[1].hid: r1h1 repeats $.candidates[0].hid" in msg
    assert "$.candidates[2].hid: 'r2h3' is not r1h<n> (round 1)" in msg
    msg = refused(sb, "candidates", write(tmp_path, "c.json", cands(4)))
    assert "4 candidates, but gen_n is 3" in msg
    msg = refused(sb, "candidates", write(tmp_path, "c.json", cands(3, rnd=2)))
    assert "$.round: is 2, but the current round is 1" in msg
    assert "expects candidates next, not verdict" in refused(sb, "verdict", write(tmp_path, "v.json", {}),
                                                             kind="conflict")
    before = tree_snapshot(sb)  # a missing argument file is a usage error (exit 2), as elsewhere
    r = invoke("gen", "submit", "candidates", str(tmp_path / "absent.json"), "--sandbox", str(sb), "--json")
    assert (r.code, r.json()["error"]["kind"]) == (2, "usage") and tree_snapshot(sb) == before
    assert r.json()["error"]["message"].endswith("absent.json: no such file")
    r = invoke("gen", "submit", "candidates", write(tmp_path, "ok.json", cands(2)), "--reason", "only two",
               "--sandbox", str(sb))
    assert r.code == 0 and "2 candidates accepted (r1h1, r1h2); next: litscout" in r.stdout
    assert (sb / "round1" / "candidates.reason.txt").read_text("utf-8") == "only two\n"


def scout(**over: object) -> dict:
    data = {"round": 1, "evaluations": [
        {"hid": h, "novelty_assessment": "novel", "closest_prior_work": [{"claim": "c", "cites": ["E1"]}],
         "support": [], "gap": [], "testability_note": "n"} for h in ("r1h1", "r1h2", "r1h3")],
        "evidence": [{"key": "E1", "title": "T", "source": "web", "id": "https://example.org/a",
                      "snippet": "s"}]}
    data.update(over)
    return data


def test_litscout_rules(sb, tmp_path):
    assert invoke("gen", "submit", "candidates", write(tmp_path, "c.json", cands()),
                  "--sandbox", str(sb)).code == 0
    s = scout()
    s["evaluations"][0]["support"] = [{"claim": "x", "cites": ["E1", "E9"]}]
    s["evaluations"][2]["hid"] = "r1h1"
    s["evidence"].append({"key": "E1", "title": "T", "source": "web", "snippet": "t"})
    msg = refused(sb, "litscout", write(tmp_path, "s.json", s))
    assert "$.evaluations[0].support[0].cites[1]: E9 is not a key of $.evidence" in msg
    assert "$.evaluations[2].hid: r1h1 repeats $.evaluations[0].hid" in msg
    assert "$.evidence[1].key: E1 repeats $.evidence[0].key" in msg
    assert "$.evidence[1].id: a web snippet needs its URL here" in msg
    assert "$.evaluations: r1h3 not evaluated (eval_scale medium evaluates all)" in msg
    s = scout()
    s["evaluations"][0]["novelty_assessment"] = "new"
    s["evidence"][0]["source"] = "scholar"
    msg = refused(sb, "litscout", write(tmp_path, "s.json", s))
    assert "$.evaluations[0].novelty_assessment: Input should be 'novel', 'incremental'" in msg
    assert "$.evidence[0].source: Input should be 's2', 'arxiv' or 'web'" in msg


def test_verdict_rules(sb, tmp_path):
    for kind, data in (("candidates", cands()), ("litscout", scout())):
        assert invoke("gen", "submit", kind, write(tmp_path, f"{kind}.json", data),
                      "--sandbox", str(sb)).code == 0
    v = {"round": 1, "verdicts": [
        {"hid": "r1h1", "scores": {"novelty": 6, "grounding": 4.0, "testability": 3, "specificity": 3,
                                   "significance": 3}, "total": 80, "keep": "true", "rationale": "r"}]}
    msg = refused(sb, "verdict", write(tmp_path, "v.json", v))
    assert "$.verdicts[0].scores.novelty: Input should be less than or equal to 5" in msg
    assert "$.verdicts[0].scores.grounding: Input should be a valid integer" in msg
    assert "$.verdicts[0].keep: Input should be a valid boolean" in msg
    ok = {"scores": {"novelty": 3, "grounding": 3, "testability": 3, "specificity": 3, "significance": 3},
          "total": 60, "keep": False, "rationale": "r"}
    v = {"round": 1, "verdicts": [dict(ok, hid="r1h1", duplicate_of="r0h9"), dict(ok, hid="r1h9"),
                                  dict(ok, hid="r1h1")]}
    msg = refused(sb, "verdict", write(tmp_path, "v.json", v))
    assert "$.verdicts[0].duplicate_of: r0h9 is neither a pool hypothesis nor another candidate" in msg
    assert "$.verdicts[1].hid: r1h9 is not a candidate of this round (r1h1, r1h2, r1h3)" in msg
    assert "$.verdicts[2].hid: r1h1 repeats $.verdicts[0].hid" in msg
    assert "$.verdicts: no verdict for r1h2, r1h3" in msg
    # Accepted: a web closest-prior-work snippet lifts the novelty cap; kb computes keep.
    v = {"round": 1, "verdicts": [dict(ok, hid=h, total=60.0, keep=False) for h in ("r1h1", "r1h2", "r1h3")]}
    v["verdicts"][0] = dict(ok, hid="r1h1", scores=dict(ok["scores"], novelty=5, grounding=5),
                            total=77.0, keep=False)
    r = invoke("gen", "submit", "verdict", write(tmp_path, "v.json", v), "--sandbox", str(sb))
    assert r.code == 0, r.stderr
    assert "r1h1 total 82 KEEP" in r.stdout
    assert "corrected: r1h1: total 77 corrected to 82" in r.stdout
    assert "corrected: r1h1: keep false corrected to true (total 82 ≥ 65 and no gate fired)" in r.stdout
    assert "round 1: kept 1, pool 1, dry 0; next: round 2" in r.stdout
    stored = json.loads((sb / "round1" / "verdict.json").read_text("utf-8"))
    assert stored["verdicts"][0]["total"] == 82.0 and stored["verdicts"][0]["keep"] is True
    assert json.loads((sb / "round1" / "verdict.submitted.json").read_text("utf-8")) == v


def test_init_status_brief_and_errors(sb, tmp_path, monkeypatch):
    r = invoke("gen", "init", "--question", "  ", "--sandbox", str(tmp_path / "x"), "--json")
    assert r.code == 2 and "--question is empty" in r.json()["error"]["message"]
    assert not (tmp_path / "x").exists()
    r = invoke("gen", "init", "--question", "q", "--gen-n", "0", "--sandbox", str(tmp_path / "x"))
    assert r.code == 2 and "--gen-n must be at least 1" in r.stderr
    monkeypatch.chdir(tmp_path / "sandbox" / "literature")
    r = invoke("gen", "status", "--json")
    assert r.code == 2 and "no generation run" in r.json()["error"]["message"]
    monkeypatch.chdir(tmp_path)  # ./sandbox is found
    r = invoke("gen", "status")
    assert r.code == 0 and "round 1/6 · next: candidates · dry 0/2" in r.stdout
    gi = (sb / ".gitignore").read_text("utf-8")
    assert gi.splitlines()[1:] == ["*", "!.gitignore", "!hypotheses.md"]
    import yaml

    run = yaml.safe_load((sb / "loop.run.yaml").read_text("utf-8"))
    assert run["literature_tiers"] == {"S2_API_KEY": False, "OPENALEX_EMAIL": False}
    assert (run["gen_n"], run["keep_threshold"], run["eval_scale"], run["budget"], run["patience"]) == \
        (3, 65.0, "medium", 6, 2)
    b = json.loads(invoke("gen", "brief", "Generator", "--json").stdout)
    assert b["role"] == "generator" and b["gaps"] == ["Q?"] and b["hid_pattern"] == "r1h<n>"
    assert b["schema"]["required"] == ["round", "candidates"]
    text = invoke("gen", "brief", "scout").stdout
    assert text.startswith("# Brief: litscout (round 1)") and "kb lit snippet QUERY --sandbox" in text
    judge = invoke("gen", "brief", "judge").stdout
    assert "0.30·novelty" in judge and "Jaccard >= 0.85" in judge
    r = invoke("gen", "brief", "critic", "--json")
    assert r.code == 2 and "unknown role" in r.json()["error"]["message"]


def test_budget_stop_and_ledger_cells(tmp_path, monkeypatch):
    monkeypatch.delenv("KB_GEN_SANDBOX", raising=False)
    sb = tmp_path / "b"
    S = ("--sandbox", str(sb))
    assert invoke("gen", "init", "--question", "q", "--gen-n", "1", "--budget", "1", *S).code == 0
    c = {"round": 1, "candidates": [{"hid": "r1h1", "statement": "Spacing, not massing,\thelps，here",
                                     "kind": "k", "rationale": "r", "how_to_test": "t"}]}
    s = scout(evaluations=[scout()["evaluations"][0]])
    v = {"round": 1, "verdicts": [{"hid": "r1h1", "scores": {"novelty": 4, "grounding": 4, "testability": 4,
         "specificity": 4, "significance": 4}, "total": 80, "keep": True, "rationale": "r"}]}
    for kind, data in (("candidates", c), ("litscout", s), ("verdict", v)):
        r = invoke("gen", "submit", kind, write(tmp_path, f"{kind}.json", data), *S, "--json")
        assert r.code == 0, r.stdout
    assert r.json()["stopped"] == "budget" and r.json()["next_round"] is None
    row = (sb / "ledger.tsv").read_text("utf-8").splitlines()[1]
    assert row.split("\t") == ["1", "1", "1", "1", "Spacing; not massing; helps；here [80]"]
    assert "stopped (budget)" in invoke("gen", "status", *S).stdout


def test_openalex_abstract_counts_for_the_verbatim_check():
    from kb.gen.rules import corpus_of, occurs

    body = {"results": [{"abstract_inverted_index": {"Older": [0], "adults": [1], "benefit": [2]}}]}
    assert occurs("Older adults benefit", corpus_of([body]))


@pytest.mark.slow
def test_two_processes_submitting_at_once_advance_the_round_once(sb, tmp_path):
    import subprocess

    from conftest import kb_script, source_env

    f = write(tmp_path, "c.json", cands())
    procs = [subprocess.Popen([kb_script(), "gen", "submit", "candidates", f, "--sandbox", str(sb), "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=source_env())
             for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 1], outs
    loser = next(o for p, o in zip(procs, outs) if p.returncode == 1)
    assert "round 1 expects litscout next, not candidates" in loser[0].decode()
    assert json.loads((sb / "state.json").read_text("utf-8"))["step"] == "litscout"


def test_eval_scale_low_grounds_two_candidates_in_depth(tmp_path, monkeypatch):
    monkeypatch.delenv("KB_GEN_SANDBOX", raising=False)
    sb = tmp_path / "low"
    S = ("--sandbox", str(sb))
    assert invoke("gen", "init", "--question", "q", "--gen-n", "3", "--eval-scale", "low", *S).code == 0
    assert invoke("gen", "submit", "candidates", write(tmp_path, "c.json", cands()), *S).code == 0
    one = scout(evaluations=scout()["evaluations"][:1])
    msg = refused(sb, "litscout", write(tmp_path, "s1.json", one))
    assert "$.evaluations: r1h2, r1h3 not evaluated (eval_scale low evaluates 2)" in msg
    two = scout(evaluations=scout()["evaluations"][:2])
    r = invoke("gen", "submit", "litscout", write(tmp_path, "s2.json", two), *S, "--json")
    assert r.code == 0 and r.json()["evidence"] == {"E1": "web"}
    # The candidate without an evaluation has no checked closest work: novelty is capped.
    v = {"round": 1, "verdicts": [
        {"hid": h, "scores": {"novelty": 4, "grounding": 4, "testability": 4, "specificity": 4,
                              "significance": 4}, "total": 80, "keep": True, "rationale": "r"}
        for h in ("r1h1", "r1h2", "r1h3")]}
    r = invoke("gen", "submit", "verdict", write(tmp_path, "v.json", v), *S, "--json")
    by = {x["hid"]: x for x in r.json()["verdicts"]}
    assert by["r1h1"]["total"] == 80.0 and by["r1h3"]["scores"]["novelty"] == 2
    assert by["r1h3"]["total"] == 68.0 and by["r1h3"]["keep"] is True


def test_lit_with_a_folder_that_holds_no_run_is_a_usage_error(tmp_path):
    r = invoke("lit", "snippet", "x", "--sandbox", str(tmp_path), "--json")
    assert r.code == 2 and "no generation run" in r.json()["error"]["message"]
