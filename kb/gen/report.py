"""``kb gen report``: the ranked hypothesis set (seed "停止条件").

Every pool hypothesis, best total first (Elo breaks ties when a tournament
ran, and is shown beside the total): statement, novelty assessment with the
closest prior work and its cites, support, the gap it fills, how to test it;
then the pool-size trajectory from the ledger and the best open gaps.
"""

from __future__ import annotations

from typing import Any

from kb.gen.rank import START, load_elo
from kb.gen.store import Sandbox, write_atomic

MAX_GAPS = 10


def _cites(keys: list[str], evidence: dict[str, Any]) -> str:
    out = []
    for k in keys:
        e = evidence.get(k)
        if e is None:
            out.append(f"[{k}]")
            continue
        where = f", {e['id']}" if e.get("id") else ""
        mark = "" if e.get("check") in ("verified", "web") else ", snippet not found in the round's cache"
        out.append(f"[{k}: {e['title']} ({e['source']}{where}{mark})]")
    return " ".join(out)


def open_gaps(state: dict[str, Any]) -> list[dict[str, Any]]:
    """Gaps the LiteratureScout found and no kept hypothesis fills, most recent first."""
    return [g for g in reversed(state["gaps"]) if g.get("hid") and not g.get("filled_by")]


def ranked(sb: Sandbox) -> list[dict[str, Any]]:
    """The pool, best first: total, then Elo (when rated), then hid."""
    ratings = load_elo(sb)["ratings"]
    return sorted(sb.state["pool"],
                  key=lambda h: (-h["total"], -ratings.get(h["hid"], START), h["hid"]))


def render(sb: Sandbox) -> str:
    """The report's Markdown."""
    st, run = sb.state, sb.run
    elo = load_elo(sb)
    lines = [f"# Hypotheses: {run['question']}", "",
             f"Run {st['run_id']} · {len(st['pool'])} kept · rounds run: {len(st['trajectory'])} · "
             f"keep threshold {run['keep_threshold']:g} · "
             + (f"stopped: {st['stopped']}" if st["stopped"] else f"in progress (round {st['round']})"),
             "", "Generated candidates to test, not established findings.", ""]
    for i, h in enumerate(ranked(sb), 1):
        ev = h.get("evidence", {})
        rating = f" · Elo {elo['ratings'][h['hid']]:g}" if h["hid"] in elo["ratings"] else ""
        s = h["scores"]
        lines += [f"## {i}. {h['statement']}", "",
                  f"- **{h['hid']}** (round {h['round']}, {h['kind']}) · total {h['total']:g}{rating} · "
                  f"novelty {s['novelty']} grounding {s['grounding']} testability {s['testability']} "
                  f"specificity {s['specificity']} significance {s['significance']}",
                  f"- Novelty: {h['novelty_assessment']}"]
        for field, title in (("closest_prior_work", "Closest prior work"), ("support", "Support"),
                             ("gap", "Gap")):
            for p in h.get(field, []):
                lines.append(f"- {title}: {p['claim']} {_cites(p['cites'], ev)}".rstrip())
        lines += [f"- How to test: {h['how_to_test']}"]
        if h.get("testability_note"):
            lines.append(f"- Testability: {h['testability_note']}")
        lines.append("")
    lines += ["## Pool size by round", "", "| round | generated | kept_new | pool_size | top_kept |",
              "|---|---|---|---|---|"]
    for t in st["trajectory"]:
        lines.append(f"| {t['round']} | {t['generated']} | {t['kept_new']} | {t['pool_size']} | "
                     f"{t['top_kept'].replace('|', '/')} |")
    gaps = open_gaps(st)[:MAX_GAPS]
    lines += ["", "## Best open gaps", ""] + ([f"- {g['claim']} (round {g['round']}, {g['hid']})"
                                              for g in gaps] or ["- (none recorded)"])
    if elo["matches"]:
        lines += ["", f"## Tournament ({len(elo['matches'])} matches, Elo from {START:g}, K 32)", ""]
        for m in elo["matches"]:
            lines.append(f"- {m['a']} vs {m['b']}: {m['winner']} — {m.get('rationale', '')}".rstrip(" —"))
    return "\n".join(lines) + "\n"


def write_report(sb: Sandbox) -> dict[str, Any]:
    """Write the report to ``<sandbox>/hypotheses.md``; ``{"path", "hypotheses", "stopped"}``."""
    write_atomic(sb.report_path, render(sb))
    return {"path": str(sb.report_path), "hypotheses": [h["hid"] for h in ranked(sb)],
            "stopped": sb.state["stopped"]}
