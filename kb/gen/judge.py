"""The Judge's verdicts as kb applies them (HYPOTHESIS-GEN.md "The Judge's rubric").

kb, not the Judge, decides what the rubric's arithmetic and gates decide:

1. novelty above 2 is capped at 2 unless a ``closest_prior_work`` point of
   the candidate cites evidence that passed the evidence check (a snippet
   found verbatim in the round's cache, or a web snippet with its URL);
2. the total is computed from the five scores; a submitted total that
   disagrees is corrected and the correction reported;
3. gates force ``keep=false`` and are recorded in ``gate_failures``:
   novelty ≤ 1, testability ≤ 1, a duplicate of a pool hypothesis (named by
   the Judge or found by kb: Jaccard ≥ 0.85), a same-round near-duplicate
   (the lower total of the pair, the later one on a tie); gates the Judge
   recorded itself are kept;
4. keep = total ≥ keep_threshold and no gate fired.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kb.gen import rules
from kb.gen.errors import GenError
from kb.gen.store import Sandbox, read_round_file, write_json


def apply(sb: Sandbox, path: Path, raw: Any, m: Any, reason: str | None = None) -> dict[str, Any]:
    """Check and apply the round's ``verdict.json``; advance the loop. See the module docstring.

    Returns ``{kind, round, verdicts (as corrected), corrections: [str], kept: [hid],
    pool_size, dry, stopped, next_round}``.
    """
    from kb.gen.models import Candidates, LitScout

    rd = sb.round_dir()
    cands = {c.hid: c for c in read_round_file(rd / "candidates.json", Candidates).candidates}
    scout = read_round_file(rd / "litscout.json", LitScout)
    checked = read_round_file(rd / "evidence-check.json")
    if not isinstance(checked, dict) or not isinstance(checked.get("evidence"), dict):
        raise GenError(f"{rd / 'evidence-check.json'}: the run's own file is damaged (no evidence "
                       "map); put it back (git, a backup) or start a new run with another --sandbox")
    check = checked["evidence"]
    evals = {e.hid: e for e in scout.evaluations}
    pool = sb.state["pool"]
    pool_hids = {p["hid"] for p in pool}
    _check_coverage(path, m, cands, pool_hids)

    corrections: list[str] = []
    out: list[dict[str, Any]] = []
    for v in m.verdicts:
        scores = v.scores.model_dump()
        ev = evals.get(v.hid)
        backed_prior = ev is not None and any(
            check.get(k) in ("verified", "web") for pt in ev.closest_prior_work for k in pt.cites)
        if scores["novelty"] > rules.NOVELTY_CAP and not backed_prior:
            corrections.append(f"{v.hid}: novelty {scores['novelty']} capped at {rules.NOVELTY_CAP}: "
                               "no closest_prior_work point cites evidence that passed the check")
            scores["novelty"] = rules.NOVELTY_CAP
        total = rules.total(scores)
        if abs(total - float(v.total)) > 0.05:
            why = ("with novelty capped" if scores["novelty"] != v.scores.novelty
                   else "100·(.30N+.25G+.20T+.15Sp+.10Si)/5")
            corrections.append(f"{v.hid}: total {float(v.total):g} corrected to {total:g} ({why})")
        gates = list(v.gate_failures)
        dup = v.duplicate_of
        if scores["novelty"] <= 1:
            _gate(gates, "novelty<=1", f": {ev.novelty_assessment if ev else 'no evaluation'}")
        if scores["testability"] <= 1:
            _gate(gates, "testability<=1", ": not falsifiable as stated")
        if dup in pool_hids:
            _gate(gates, f"duplicate of pool hypothesis {dup}")
        elif dup is None:
            for p in pool:
                sim = rules.jaccard(cands[v.hid].statement, p["statement"])
                if sim >= rules.NEAR_DUPLICATE:
                    dup = p["hid"]
                    gates.append(f"duplicate of pool hypothesis {dup} (Jaccard {sim:.2f})")
                    corrections.append(f"{v.hid}: duplicate of pool hypothesis {dup} found by kb "
                                       f"(Jaccard {sim:.2f})")
                    break
        out.append({"hid": v.hid, "scores": scores, "total": total, "keep": v.keep,
                    "rationale": v.rationale, "gate_failures": gates, "duplicate_of": dup})
    _same_round(out, cands, corrections)
    thr = float(sb.run["keep_threshold"])
    for o, v in zip(out, m.verdicts):
        o["gate_failures"] = list(dict.fromkeys(o["gate_failures"]))
        keep = o["total"] >= thr and not o["gate_failures"]
        if keep != v.keep:
            why = (f"total {o['total']:g} < {thr:g}" if o["total"] < thr
                   else "; ".join(o["gate_failures"]) if o["gate_failures"]
                   else f"total {o['total']:g} ≥ {thr:g} and no gate fired")
            corrections.append(f"{v.hid}: keep {str(v.keep).lower()} corrected to "
                               f"{str(keep).lower()} ({why})")
        o["keep"] = keep
    return _advance(sb, raw, out, corrections, cands, evals, scout, check)


def _gate(gates: list[str], name: str, detail: str = "") -> None:
    """Record gate ``name`` unless the Judge already recorded it (same prefix)."""
    if not any(g.strip().startswith(name) for g in gates):
        gates.append(name + detail)


def _check_coverage(path: Path, m: Any, cands: dict[str, Any], pool_hids: set[str]) -> None:
    problems = []
    seen: dict[str, int] = {}
    for i, v in enumerate(m.verdicts):
        at = f"{path}: $.verdicts[{i}]"
        if v.hid not in cands:
            problems.append(f"{at}.hid: {v.hid} is not a candidate of this round ({', '.join(cands)})")
        if v.hid in seen:
            problems.append(f"{at}.hid: {v.hid} repeats $.verdicts[{seen[v.hid]}].hid")
        seen.setdefault(v.hid, i)
        d = v.duplicate_of
        if d is not None and (d == v.hid or (d not in pool_hids and d not in cands)):
            problems.append(f"{at}.duplicate_of: {d} is neither a pool hypothesis nor another "
                            "candidate of this round")
    missing = [h for h in cands if h not in seen]
    if missing:
        problems.append(f"{path}: $.verdicts: no verdict for {', '.join(missing)}")
    if problems:
        raise GenError(f"{path}: refused", problems)


def _same_round(out: list[dict[str, Any]], cands: dict[str, Any], corrections: list[str]) -> None:
    """Gate the weaker of every same-round pair with Jaccard ≥ 0.85 (or named by the Judge)."""
    order = {o["hid"]: i for i, o in enumerate(out)}
    by = {o["hid"]: o for o in out}
    for o in out:
        d = o["duplicate_of"]
        if d in by:  # the Judge named a same-round duplicate
            o["gate_failures"].append(f"near-duplicate of {d} (same round)")
    for i, a in enumerate(out):
        for b in out[i + 1:]:
            sim = rules.jaccard(cands[a["hid"]].statement, cands[b["hid"]].statement)
            if sim < rules.NEAR_DUPLICATE:
                continue
            weak, strong = (b, a) if (a["total"], -order[a["hid"]]) >= (b["total"], -order[b["hid"]]) else (a, b)
            gate = f"near-duplicate of {strong['hid']} (same round, Jaccard {sim:.2f})"
            if not any(g.startswith(f"near-duplicate of {strong['hid']}") for g in weak["gate_failures"]):
                weak["gate_failures"].append(gate)
                corrections.append(f"{weak['hid']}: {gate}, found by kb")
            weak["duplicate_of"] = weak["duplicate_of"] or strong["hid"]


def _advance(sb: Sandbox, raw: Any, out: list[dict[str, Any]], corrections: list[str],
             cands: dict[str, Any], evals: dict[str, Any], scout: Any,
             check: dict[str, str]) -> dict[str, Any]:
    st, n = sb.state, sb.round
    evidence = {e.key: e.model_dump() for e in scout.evidence}
    kept = []
    for o in out:
        if not o["keep"]:
            continue
        c, ev = cands[o["hid"]], evals.get(o["hid"])
        item = {"hid": o["hid"], "round": n, **c.model_dump(), "scores": o["scores"],
                "total": o["total"], "judge_rationale": o["rationale"],
                "novelty_assessment": ev.novelty_assessment if ev else "unknown",
                "closest_prior_work": [p.model_dump() for p in ev.closest_prior_work] if ev else [],
                "support": [p.model_dump() for p in ev.support] if ev else [],
                "gap": [p.model_dump() for p in ev.gap] if ev else [],
                "testability_note": ev.testability_note if ev else ""}
        used = {k for f in ("closest_prior_work", "support", "gap") for p in item[f] for k in p["cites"]}
        item["evidence"] = {k: dict(evidence[k], check=check.get(k)) for k in sorted(used) if k in evidence}
        kept.append(item)
    st["pool"].extend(kept)
    # A gap joins only when a checked snippet backs it (the evidence gate); the gap of a
    # kept hypothesis is the one it fills, so it is recorded as filled, not open.
    known = {rules.normalise_ws(g["claim"]).lower() for g in st["gaps"]}
    kept_hids = {k["hid"] for k in kept}
    for ev in scout.evaluations:
        for p in ev.gap:
            norm = rules.normalise_ws(p.claim).lower()
            if not norm or norm in known:
                continue
            if not any(check.get(k) in ("verified", "web") for k in p.cites):
                # said, not dropped in silence: the scout may cite a checked snippet next round
                corrections.append(f"{ev.hid}: gap claim {p.claim!r} not added to the open gaps: "
                                   "it cites no snippet that passed the check")
                continue
            known.add(norm)
            st["gaps"].append({"claim": p.claim, "cites": list(p.cites), "hid": ev.hid, "round": n,
                               "filled_by": ev.hid if ev.hid in kept_hids else None})
    st["dry"] = 0 if kept else st["dry"] + 1
    best = max(kept, key=lambda k: k["total"], default=None)
    top = f"{best['statement']} [{best['total']:g}]" if best else "-"
    rd = sb.round_dir()
    write_json(rd / "verdict.submitted.json", raw)
    write_json(rd / "verdict.json", {"round": n, "verdicts": out})
    write_json(rd / "judgement.json", {"corrections": corrections, "kept": [k["hid"] for k in kept]})
    st["trajectory"].append({"round": n, "generated": len(cands), "kept_new": len(kept),
                             "pool_size": len(st["pool"]), "top_kept": top})
    st["round"] = n + 1
    st["step"] = "candidates"
    if st["dry"] >= int(sb.run["patience"]):
        st["stopped"] = "saturated"
    elif st["round"] > int(sb.run["budget"]):
        st["stopped"] = "budget"
    sb.save()
    sb.write_ledger()  # derived from the saved state, so a crash never doubles a row
    return {"kind": "verdict", "round": n, "verdicts": out, "corrections": corrections,
            "kept": [k["hid"] for k in kept], "pool_size": len(st["pool"]), "dry": st["dry"],
            "stopped": st["stopped"], "next_round": None if st["stopped"] else st["round"]}
