"""``kb gen brief ROLE``: what the next role needs, for an external agent (seed roles/).

Roles: ``generator`` (Generator), ``litscout`` (LiteratureScout; also
``scout``, ``literaturescout``), ``judge`` (Judge), ``ranker`` (the optional
tournament). :func:`brief` returns a JSON-ready dict; :func:`render` the
same as Markdown for people and prompts.
"""

from __future__ import annotations

import json
from typing import Any

from kb import json_input
from kb.errors import UsageError
from kb.gen import rules
from kb.gen.store import EVAL_SCALES, Sandbox

ROLES = {"generator": "generator", "litscout": "litscout", "scout": "litscout",
         "literaturescout": "litscout", "judge": "judge", "ranker": "ranker"}
KINDS = ["mechanistic", "conditional/moderation", "non-linear/threshold", "confound-aware",
         "cross-domain transfer", "contrarian"]
RUBRIC = {
    "novelty": "5 related work exists but none tests this claim (novel, real closest work cited) · "
               "3 incremental · 1 already established",
    "grounding": "5 strong cited evidence or mechanism · 3 some, partly indirect · 1 none",
    "testability": "5 concrete feasible study with a measurable outcome · 3 testable in principle · "
                   "1 not falsifiable",
    "specificity": "5 variables + direction/mechanism + population · 3 direction clear, scope loose · "
                   "1 vague",
    "significance": "5 resolves an important open question · 3 useful increment · 1 marginal",
}
TASKS = {
    "generator": "Propose {gen_n} concrete, testable, plausibly novel hypotheses aimed at the open gaps "
                 "and not duplicating the pool; vary the kinds. hid = r{round}h<n>.",
    "litscout": "Ground every candidate in real literature (novelty and closest prior work, support, "
                "gap, testability) with `kb lit search|snippet|cite|paper` run in this sandbox, so the "
                "responses land in the round's cache. Quote snippets verbatim; never invent a paper. "
                "If the APIs fail, use web search and mark that evidence source \"web\" with its URL in "
                "id. Say \"unknown\" when retrieval was thin.",
    "judge": "Score each candidate 0–5 on the rubric, evidence gate first (a claim counts only if a "
             "cited snippet passed kb's check), and decide keep / drop / duplicate. kb recomputes the "
             "total, caps novelty at 2 without checked closest prior work, and applies the gates.",
    "ranker": "Compare pool hypotheses in pairs: which is the stronger candidate to test next? "
              "Submit {{\"matches\": [{{\"a\", \"b\", \"winner\": a|b|\"draw\", \"rationale\"}}]}} with "
              "`kb gen rank FILE`.",
}


def brief(sb: Sandbox, role: str) -> dict[str, Any]:
    """The brief of ``role`` for the current round (see the module docstring).

    Raises UsageError for an unknown role.
    """
    from kb.gen.models import schemas

    r = ROLES.get(role.strip().lower().replace("-", "").replace("_", ""))
    if r is None:
        raise UsageError(f"unknown role {role!r}; use generator, litscout, judge or ranker")
    st, run, n = sb.state, sb.run, sb.round
    out: dict[str, Any] = {
        "role": r, "round": n, "next_step": None if st["stopped"] else st["step"],
        "stopped": st["stopped"], "question": run["question"],
        "task": TASKS[r].format(gen_n=run["gen_n"], round=n),
        "pool": [{"hid": p["hid"], "statement": p["statement"], "total": p["total"]} for p in st["pool"]],
        "gaps": [g["claim"] for g in st["gaps"] if not g.get("filled_by")],
    }
    rd = sb.round_dir()
    if r == "generator":
        out.update(gen_n=run["gen_n"], hid_pattern=f"r{n}h<n>", kinds=KINDS,
                   output="candidates.json", schema=schemas()["candidates"],
                   submit=f"kb gen submit candidates FILE --sandbox {sb.root}")
    if r in ("litscout", "judge"):
        out["candidates"] = _read(rd / "candidates.json", {}).get("candidates", [])
    if r == "litscout":
        out.update(eval_scale=run["eval_scale"], limits=EVAL_SCALES[run["eval_scale"]],
                   literature=[f"kb lit search QUERY --sandbox {sb.root} --json",
                               f"kb lit snippet QUERY --sandbox {sb.root} --json",
                               f"kb lit cite PAPER_ID --direction references|citations|recommend "
                               f"--sandbox {sb.root} --json",
                               f"kb lit paper ARXIV_ID --sandbox {sb.root} --json"],
                   output="litscout.json", schema=schemas()["litscout"],
                   submit=f"kb gen submit litscout FILE --sandbox {sb.root}")
    if r == "judge":
        out["litscout"] = _read(rd / "litscout.json", {})
        out["evidence_check"] = _read(rd / "evidence-check.json", {}).get("evidence", {})
        out.update(rubric=RUBRIC, weights=rules.WEIGHTS,
                   formula="total = 100 × (0.30·novelty + 0.25·grounding + 0.20·testability + "
                           "0.15·specificity + 0.10·significance) / 5",
                   keep_threshold=run["keep_threshold"],
                   gates=["novelty<=1", "testability<=1", "duplicate of a pool hypothesis (duplicate_of)",
                          "same-round near-duplicate (Jaccard >= 0.85)"],
                   output="verdict.json", schema=schemas()["verdict"],
                   submit=f"kb gen submit verdict FILE --sandbox {sb.root}")
    if r == "ranker":
        out["pool"] = [{"hid": p["hid"], "statement": p["statement"], "total": p["total"],
                        "how_to_test": p["how_to_test"]} for p in st["pool"]]
    return out


def _read(path: Any, default: Any) -> Any:
    try:
        return json_input.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


def render(b: dict[str, Any]) -> str:
    """The brief as Markdown (schemas as JSON blocks)."""
    lines = [f"# Brief: {b['role']} (round {b['round']})", "", f"Question: {b['question']}", "",
             f"Task: {b['task']}", ""]
    if b["stopped"]:
        lines += [f"The run has stopped ({b['stopped']}); `kb gen report` writes the report.", ""]
    elif b["next_step"]:
        lines += [f"Next step of the loop: {b['next_step']}", ""]
    lines += ["## Pool"] + ([f"- {p['hid']} [{p['total']:g}] {p['statement']}" for p in b["pool"]]
                           or ["(empty)"]) + [""]
    lines += ["## Open gaps"] + [f"- {g}" for g in b["gaps"]] + [""]
    for key, title in (("candidates", "Candidates"),):
        if key in b:
            lines += [f"## {title}"] + [f"- {c['hid']} ({c['kind']}): {c['statement']}"
                                        for c in b[key]] + [""]
    for key in ("kinds", "literature", "limits", "rubric", "formula", "gates", "keep_threshold",
                "evidence_check", "litscout", "hid_pattern", "submit"):
        if key in b:
            val = b[key]
            if isinstance(val, (str, int, float)):
                lines += [f"## {key}", "", str(val), ""]
            else:
                lines += [f"## {key}", "", "```json", json.dumps(val, ensure_ascii=False, indent=2),
                          "```", ""]
    if "schema" in b:
        lines += [f"## Output: {b['output']} (JSON Schema)", "", "```json",
                  json.dumps(b["schema"], ensure_ascii=False, indent=2), "```", ""]
    return "\n".join(ln for ln in lines) + "\n"
