"""The state brief a planning agent reads (``kb brief``; Vibe Math's ``buildBrief``).

Deterministic given the KB: :func:`brief_data` (or :func:`brief_of` for a
loaded :class:`kb.research.cardview.CardView`) returns plain JSON data,
:func:`brief_text` its text lines, :func:`fit_brief` a shortened copy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Union

from kb.index import Index
from kb.render.card import fmt_number
from kb.repo import KnowledgeBase, resolve_kb
from kb.research.cardview import CardView, card_view
from kb.research.dependencies import natural_key


def load_view(kb: Union[KnowledgeBase, str, Path, None]) -> tuple[KnowledgeBase, CardView]:
    """``(kb, view)``: the KB and the :class:`CardView` of its working tree (index refreshed).

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails.
    """
    k = resolve_kb(kb)
    with Index(k) as idx:
        idx.refresh()
        return k, card_view(idx)


def best_probability(entries: list[dict[str, Any]], kinds: tuple[str, ...]) -> float | None:
    """The highest probability among ``entries`` of ``kinds``, None without one."""
    ps = [e.get("probability") for e in entries if e.get("kind") in kinds]
    ps = [p for p in ps if isinstance(p, (int, float))]
    return max(ps) if ps else None


def priority_key(prio: Any) -> tuple[int, int]:
    """Sort key of a priority: integers (smaller first), then others, then ``never``."""
    if prio == "never":
        return (2, 0)
    if isinstance(prio, int):
        return (0, prio)
    return (1, 0)


def verify_candidates(view: CardView) -> list[dict[str, Any]]:
    """Entries (and bare propositions) a verifier could take next, by priority then probability.

    As Vibe Math's ``buildVerifyCandidates``: unsettled objects, entries not
    yet verified (状态 未定论, 概率 not 0 or 1); a proposition without
    entries is a bare candidate; propositions judged through a promoted problem
    are verified there.
    """
    out = []
    for qid, q in view.problems.items():
        if q.get("status") == "已解决" or q.get("priority") == "never":
            continue
        for e in q.get("entries", ()):
            if e.get("kind") != "解法" or e.get("probability") in (0, 1) or e.get("status") == "已验":
                continue
            out.append({"target": f"{qid}#解法{e['number']}", "r": f"r-{qid}-s{e['number']}",
                        "kind": "solution", "id": qid, "title": e.get("title", ""),
                        "probability": e.get("probability"), "priority": q.get("priority")})
    for pid, p in view.propositions.items():
        if p.get("probability") in (0, 1) or p.get("priority") == "never" or view.judge_of(pid):
            continue
        entries = [e for e in p.get("entries", ()) if e.get("kind") in ("证明", "证伪")]
        if not entries:
            out.append({"target": pid, "r": f"r-{pid}", "kind": "proposition", "id": pid,
                        "title": p.get("title", ""), "probability": p.get("probability"),
                        "priority": p.get("priority")})
            continue
        for e in entries:
            if e.get("probability") in (0, 1) or e.get("status") == "已验":
                continue
            short = "pf" if e["kind"] == "证明" else "rf"
            out.append({"target": f"{pid}#{e['kind']}{e['number']}",
                        "r": f"r-{pid}-{short}{e['number']}",
                        "kind": "proof" if e["kind"] == "证明" else "refutation", "id": pid,
                        "title": e.get("title", ""), "probability": e.get("probability"),
                        "priority": p.get("priority")})
    out.sort(key=lambda c: (priority_key(c["priority"]), -(c["probability"] or 0), natural_key(c["id"]),
                            c["target"]))
    return out


def brief_data(kb: Union[KnowledgeBase, str, Path, None] = None) -> dict[str, Any]:
    """The state brief a planning agent reads (Vibe Math's ``buildBrief``, deterministic).

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails.
    """
    k, view = load_view(kb)
    return brief_of(k, view)


def brief_of(k: KnowledgeBase, view: CardView) -> dict[str, Any]:
    """:func:`brief_data` of a loaded :class:`CardView` (any snapshot's, see :func:`card_view`)."""
    dirs: dict[str, list[dict[str, Any]]] = {}
    for d in view.directions:
        dirs.setdefault(d.get("problem", ""), []).append(d)
    open_problems = []
    for qid, q in view.problems.items():
        if q.get("status") == "已解决" or q.get("priority") == "never":
            continue
        deps = list(q.get("depends", ()))
        unsettled = [d for d in deps if not view.settled(d)]
        ds = sorted(dirs.get(qid, []), key=lambda d: natural_key(d.get("direction", "")))
        open_problems.append({
            "id": qid, "title": q.get("title", ""), "status": q.get("status", ""),
            "priority": q.get("priority"), "depends": deps, "unsettled_depends": unsettled,
            "ready": not unsettled, "plan": q.get("anchors", {}).get("计划", ""),
            "solutions": sum(1 for e in q.get("entries", ()) if e.get("kind") == "解法"),
            "best_probability": best_probability(q.get("entries", []), ("解法",)),
            "directions": [{"id": d.get("direction", ""), "status": d.get("status", ""),
                            "survival": d.get("survival")} for d in ds],
        })
    open_problems.sort(key=lambda q: (priority_key(q["priority"]), natural_key(q["id"])))
    settled = []
    for qid, q in view.problems.items():
        if q.get("status") == "已解决":
            settled.append({"id": qid, "kind": "problem", "title": q.get("title", ""),
                            "conclusion": "已解决",
                            "card": qid in view.verified and view.verified[qid]["path"] or None})
    for pid, p in view.propositions.items():
        if p.get("probability") in (0, 1):
            settled.append({"id": pid, "kind": "proposition", "title": p.get("title", ""),
                            "conclusion": "真" if p.get("probability") == 1 else "假",
                            "card": pid in view.verified and view.verified[pid]["path"] or None})
    settled.sort(key=lambda s: (s["kind"], natural_key(s["id"])))
    methods = []
    for mid in sorted(view.methods, key=natural_key):
        m = view.methods[mid]
        methods.append({"id": mid, "title": m.get("title", ""), "type": m.get("type", ""),
                        "status": m.get("status", ""), "scenario": m.get("scenario", ""),
                        "claims": list(m.get("claims", ())),
                        "applications": len(m.get("applications", ()))})
    undecided = []
    for pid, p in view.propositions.items():
        if p.get("probability") in (0, 1):
            continue
        undecided.append({"id": pid, "title": p.get("title", ""), "category": p.get("category", ""),
                          "probability": p.get("probability"), "value": p.get("value"),
                          "priority": p.get("priority")})
    undecided.sort(key=lambda p: (-(p["value"] if p["value"] is not None else 0.5),
                                  natural_key(p["id"])))
    return {
        "kb": str(k.root),
        "counts": {"problems": len(view.problems), "open_problems": len(open_problems),
                   "propositions": len(view.propositions), "undecided_propositions": len(undecided),
                   "methods": len(view.methods), "settled": len(settled)},
        "open_problems": open_problems,
        "verify_candidates": verify_candidates(view),
        "settled": settled,
        "undecided_propositions": undecided,
        "methods": methods,
    }


def fmt_p(x: Any) -> str:
    """A probability as the cards write it, ``-`` for none."""
    if x is None:
        return "-"
    return fmt_number(x)


def _line_problem(q: Mapping[str, Any]) -> str:
    dep = ""
    if q["depends"]:
        dep = "；依赖 " + ", ".join(q["depends"]) + (
            f"（未就绪：{', '.join(q['unsettled_depends'])}）" if q["unsettled_depends"] else "（已就绪）")
    dirs = ""
    if q["directions"]:
        dirs = "；方向 " + ", ".join(f"{d['id']}:{d['status']}:{fmt_p(d['survival'])}"
                                   for d in q["directions"])
    return (f"- {q['id']}｜{q['title']}｜{q['status']}｜优先级 {q['priority']}"
            f"｜解法 {q['solutions']}（最高概率 {fmt_p(q['best_probability'])}）{dep}{dirs}")


def _line_candidate(v: Mapping[str, Any]) -> str:
    return (f"- {v['target']}（{v['r']}）｜{v['title']}｜概率{fmt_p(v['probability'])}"
            f"｜优先级 {v['priority']}")


def _line_settled(s: Mapping[str, Any]) -> str:
    return f"- {s['id']}｜{s['title']}｜{s['conclusion']}｜{s['card'] or '（缺 Verified 卡）'}"


def _line_proposition(p: Mapping[str, Any]) -> str:
    return (f"- {p['id']}｜{p['title']}｜{p['category']}｜概率{fmt_p(p['probability'])}"
            f"｜价值/关键性 {fmt_p(p['value'])}")


def _line_method(m: Mapping[str, Any]) -> str:
    claims = f"；可信断言 {', '.join(m['claims'])}" if m["claims"] else ""
    return (f"- {m['id']}｜{m['title']}｜{m['type']}｜{m['status']}｜应用 {m['applications']} 次"
            f"{claims}" + (f"｜适用：{m['scenario']}" if m["scenario"] else ""))


#: list key -> (section heading, line of one item), in the order the brief prints them.
_SECTIONS = (
    ("open_problems", "## 未解决问题（按优先级）", _line_problem),
    ("verify_candidates", "## 可验证条目（kb verdict TARGET --vote …）", _line_candidate),
    ("settled", "## 已定论结果（可引用为事实）", _line_settled),
    ("undecided_propositions", "## 未定论命题（按价值/关键性）", _line_proposition),
    ("methods", "## 可用方法", _line_method),
)


def brief_text(data: Mapping[str, Any]) -> list[str]:
    """The brief as text lines (one line per item)."""
    c = data["counts"]
    lines = [f"# 状态简报 — {c['open_problems']}/{c['problems']} 个问题未解决，"
             f"{c['undecided_propositions']}/{c['propositions']} 个命题未定论，{c['methods']} 个方法"]
    for key, head, line in _SECTIONS:
        lines += ["", head]
        lines += [line(x) for x in data[key]] or ["- （无）"]
    return lines


_LIST_KEYS = ("verify_candidates", "undecided_propositions", "methods", "settled", "open_problems")


def fit_brief(data: dict[str, Any], max_chars: int | None, as_json: bool) -> tuple[Any, int]:
    """Shorten the brief to ``max_chars`` (JSON text or text lines); return (brief, items dropped).

    Lists lose their last (least urgent) items, the longest list first; what
    was left out is counted in ``omitted``. Item sizes are estimated once
    (compact JSON / the item's line), then the result is measured exactly.
    """
    def render(d: dict[str, Any]) -> int:
        if as_json:
            return len(json.dumps(d, ensure_ascii=False, indent=2))
        return len("\n".join(brief_text(d))) + 1

    if max_chars is None:
        return data, 0
    lines = {key: line for key, _head, line in _SECTIONS}
    cost: dict[str, list[int]] = {}
    for key in _LIST_KEYS:
        if as_json:
            sizes = []
            for x in data[key]:
                c = json.dumps(x, ensure_ascii=False)
                sizes.append(len(c) + 6 * (c.count('":') + c.count("[") + c.count("{") + 1))
            cost[key] = sizes
        else:
            cost[key] = [len(lines[key](x)) + 1 for x in data[key]]
    d = {k: (list(v) if isinstance(v, list) else v) for k, v in data.items()}
    base = render({k: ([] if k in _LIST_KEYS else v) for k, v in d.items()}) + 160
    total = base + sum(sum(v) for v in cost.values())
    if total <= max_chars and render(d) <= max_chars:
        return data, 0
    omitted: dict[str, int] = {}
    dropped = 0
    while True:
        if total <= max_chars:
            total = render(d)
            if total <= max_chars:
                break
        longest = max(_LIST_KEYS, key=lambda key: len(d[key]))
        if not d[longest]:
            break
        d[longest].pop()
        total -= cost[longest].pop()
        omitted[longest] = omitted.get(longest, 0) + 1
        dropped += 1
        d["omitted"] = dict(omitted)
    return d, dropped



__all__ = ["load_view", "verify_candidates", "brief_data", "brief_of", "brief_text", "fit_brief",
           "best_probability", "priority_key", "fmt_p"]
