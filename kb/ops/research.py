"""Whole-project card operations: promote, priority adjust, refresh, report and brief.

Formulas from VIBEMATH-V3.md ("Promotion and priorities"):

- promotion: an undecided proposition (概率 not 0 or 1, priority not never)
  whose ``价值/关键性`` (default 0.5) reaches the threshold (0.7) and that has
  no judge problem yet becomes ``q-promoted-<last 12 of its ID, [A-Za-z0-9-]>``;
- ``deadend-deprioritize``: a problem (not settled, not never) whose
  directions are all dead-end and whose numeric priority is below 10 gets 10;
- ``survival-map``: priority = round(clamp(10 - 10·max direction survival, 0, 10));
- ``progress-graded`` (undecided propositions with a numeric priority):
  closeness = |概率 - 0.5|, material = min(5, proofs + refutations),
  score = 1.2·closeness + 0.08·material,
  priority = round(clamp(10 - 10·score, 0, 10)).

``round`` is JavaScript's ``Math.round`` (halves up), as in Vibe Math.
Every writing function is one transaction and one commit; ``report`` and
``brief`` are deterministic given the KB (no wall clock, except a date the
caller passes or ``KB_NOW``).
"""

from __future__ import annotations

import json
import math
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Union

from kb.errors import UsageError
from kb.ops.cards import (
    CardError,
    OpResult,
    Workspace,
    fmt_time,
    natural_key,
    open_kb_arg,
    parse_probability,
    parse_time,
    run_op,
)
from kb.repo import KnowledgeBase
from kb.research import dependencies
from kb.vocab import PROBLEM_STATUS, PROPOSITION_STATUS

PRIORITY_MODES = ("deadend-deprioritize", "survival-map", "progress-graded")


def js_round(x: float) -> int:
    """``Math.round``: halves round up."""
    return int(math.floor(x + 0.5))


def _clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


# ---------------------------------------------------------------------------
# A read-only view of every card (from the index)


@dataclass
class CardView:
    """Every problem, proposition, method, verified card and direction, as plain dicts."""

    problems: dict[str, dict[str, Any]] = field(default_factory=dict)
    propositions: dict[str, dict[str, Any]] = field(default_factory=dict)
    methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    verified: dict[str, dict[str, Any]] = field(default_factory=dict)
    directions: list[dict[str, Any]] = field(default_factory=list)

    def settled(self, obj_id: str) -> bool:
        for kind, rows in (("problem", self.problems), ("proposition", self.propositions)):
            row = rows.get(obj_id)
            if row is not None:
                return dependencies.is_settled(kind, row.get("status"), row.get("probability"),
                                               row.get("priority"))
        return True

    _judges: dict[str, list[str]] | None = None

    def judge_of(self, pid: str) -> list[str]:
        """Problems whose 判断命题 names ``pid`` (built once per view)."""
        if self._judges is None:
            judges: dict[str, list[str]] = {}
            for qid, q in self.problems.items():
                target = (q.get("anchors") or {}).get("判断命题", "").strip()
                if target:
                    judges.setdefault(target, []).append(qid)
            self._judges = {k: sorted(v, key=natural_key) for k, v in judges.items()}
        return self._judges.get(pid, [])


def card_view(idx: Any) -> CardView:
    """Load the view from an open, refreshed :class:`kb.index.Index` (first declaration wins)."""
    view = CardView()
    target = {"problem": view.problems, "proposition": view.propositions,
              "method": view.methods, "verified": view.verified}
    for kind, out in target.items():
        for r in idx.objects(kind):
            if r.id not in out:
                d = r.fields()
                d["path"] = r.path
                out[r.id] = d
    view.directions = [dict(r.fields(), path=r.path) for r in idx.objects("direction")]
    return view


def _view(kb: Union[KnowledgeBase, str, Path, None]) -> tuple[KnowledgeBase, CardView]:
    from kb.index import Index

    k = open_kb_arg(kb)
    with Index(k) as idx:
        idx.refresh()
        return k, card_view(idx)


# ---------------------------------------------------------------------------
# refresh: 被依赖 and 等待依赖 for the whole KB


def derived_changes(view: CardView) -> list[tuple[str, str, str, str]]:
    """``(id, key, old, new)`` of every 被依赖 / 状态 that disagrees with the 依赖 lists."""
    from kb.parse.common import dump_list

    rdeps = dependencies.reverse_dependencies(
        {qid: q.get("depends", ()) for qid, q in view.problems.items()})
    out = []
    for qid in sorted(view.problems, key=natural_key):
        q = view.problems[qid]
        want = rdeps[qid]
        if list(q.get("depended_by", ())) != want:
            out.append((qid, "被依赖", dump_list(q.get("depended_by", ())), dump_list(want)))
        status = q.get("status")
        move = dependencies.waiting_move(status, q.get("priority"),
                                         all(view.settled(d) for d in q.get("depends", ())))
        if move:
            out.append((qid, "状态", status, move))
    return out


def refresh(kb: Union[KnowledgeBase, str, Path, None] = None, *, check: bool = False,
            no_commit: bool = False, owner: str | None = None,
            on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Recompute every problem's 被依赖 and 等待依赖; with ``check`` only report."""
    if check:
        _k, view = _view(kb)
        changes = derived_changes(view)
        return OpResult.dry("refresh", [f"{i}: {key} {old} → {new}" for i, key, old, new in changes],
                            {"edits": [dict(id=i, key=key, old=old, new=new)
                                       for i, key, old, new in changes]})

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        changes = derived_changes(card_view(ws.idx))
        for obj_id, key, _old, new in changes:
            ws.edit(obj_id, ("problem",)).set_anchor(key, new)
        return ([f"{i}: {key} {old} → {new}" for i, key, old, new in changes],
                {"edits": [dict(id=i, key=key, old=old, new=new) for i, key, old, new in changes]})

    return run_op(kb, "refresh", "kb refresh: 被依赖 and 等待依赖", build, no_commit=no_commit,
                  owner=owner, on_wait=on_wait, sync=False)


# ---------------------------------------------------------------------------
# promote


def promoted_id(pid: str) -> str:
    """``q-promoted-`` + the last 12 characters of ``pid`` kept by ``[a-z0-9-]`` (any case)."""
    return "q-promoted-" + re.sub(r"[^a-z0-9\-]", "", pid, flags=re.IGNORECASE)[-12:]


def promote(kb: Union[KnowledgeBase, str, Path, None] = None, threshold: Union[float, str] = 0.7,
            *, no_commit: bool = False, owner: str | None = None,
            on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Turn undecided propositions with 价值/关键性 ≥ ``threshold`` into judge problems."""
    from kb.model import Entry, Problem
    from kb.render.card import fmt_number, render_card

    th = parse_probability(threshold, "threshold", open_interval=False)

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        view = card_view(ws.idx)
        lines: list[str] = []
        made: list[dict[str, Any]] = []
        skipped: list[dict[str, str]] = []
        for pid in sorted(view.propositions, key=natural_key):
            p = view.propositions[pid]
            prob = p.get("probability")
            value = p.get("value")
            value = 0.5 if value is None else value
            if prob in (0, 1) or p.get("priority") == "never" or value < th:
                continue
            if view.judge_of(pid):
                continue
            qid = promoted_id(pid)
            if qid in view.problems or ws.exists(qid):
                skipped.append({"id": pid, "reason": f"{qid} exists and does not judge {pid}"})
                lines.append(f"{pid}: not promoted ({qid} exists and does not judge {pid})")
                continue
            pm = ws.edit(pid, ("proposition",)).model()  # the card: the index keeps no entry text
            entries = []
            for kind in ("证明", "证伪"):
                for e in pm.entries:
                    if e.kind == kind:
                        entries.append(Entry(kind="解法", number=len(entries) + 1,
                                             title=f"【{kind}】{e.title}", probability=e.probability,
                                             status="未定论", line=0,
                                             text=f"【{kind}】{e.text.strip()}"))
            rel = ws.problem_rel(qid)
            obj = Problem(
                id=qid, path=rel, line=1, title=f"判断命题：{pm.title}", status="求解中", priority=1,
                source="promote", statement=f"判断下述命题是否成立：{pm.statement}",
                plan=f"证明或证伪源命题 {pid}（解法列表中的【证明】/【证伪】条目即原命题的证明/证伪材料，"
                     "验证结果会回写源命题）。",
                entries=tuple(entries),
                anchors={"判断命题": pid, "来源命题": pid,
                         "来源与动机": f"由命题 {pid}（价值/关键性={fmt_number(value)}）自动晋升，"
                                   "目标：证明或证伪该命题；验证结果回写源命题。"})
            e = ws.create(rel, "problem", render_card(obj), qid)
            if len(e.model().entries) != len(entries):
                raise CardError(f"promoting {pid} would give a malformed problem card; check the "
                                "text of its entries for heading lines")
            ws.tx.ids.append(qid)
            made.append({"id": qid, "from": pid, "path": ws.kb.prefix + rel, "solutions": len(entries)})
            lines.append(f"{pid} → {qid} ({ws.kb.prefix}{rel}, {len(entries)} 解法 from its "
                         "proofs and refutations)")
        if not made and not skipped:
            lines.append(f"nothing to promote (threshold {th:g})")
        return lines, {"threshold": th, "promoted": made, "skipped": skipped}

    return run_op(kb, "promote", f"kb promote (threshold {th:g})", build, no_commit=no_commit,
                  owner=owner, on_wait=on_wait)


# ---------------------------------------------------------------------------
# priority adjust


def priority_targets(view: CardView, mode: str) -> list[tuple[str, str, Any, int]]:
    """``(id, kind, old, new)`` of the priorities ``mode`` changes."""
    if mode not in PRIORITY_MODES:
        raise UsageError(f"mode {mode!r} is not valid; use one of: {', '.join(PRIORITY_MODES)}")
    out = []
    if mode in ("deadend-deprioritize", "survival-map"):
        dirs: dict[str, list[dict[str, Any]]] = {}
        for d in view.directions:
            dirs.setdefault(d.get("problem", ""), []).append(d)
        for qid in sorted(view.problems, key=natural_key):
            q = view.problems[qid]
            prio = q.get("priority")
            if q.get("status") == "已解决" or prio == "never":
                continue
            ds = dirs.get(qid, [])
            if not ds:
                continue
            if mode == "deadend-deprioritize":
                if all(d.get("status") == "dead-end" for d in ds) and isinstance(prio, int) \
                        and prio < 10:
                    out.append((qid, "problem", prio, 10))
            else:
                best = max((d.get("survival") or 0.0) for d in ds)
                target = js_round(_clamp(10 - 10 * best, 0, 10))
                if prio != target:
                    out.append((qid, "problem", prio, target))
    else:
        for pid in sorted(view.propositions, key=natural_key):
            p = view.propositions[pid]
            prob, prio = p.get("probability"), p.get("priority")
            if prob in (0, 1) or prio == "never" or not isinstance(prio, int):
                continue
            closeness = abs((0.5 if prob is None else prob) - 0.5)
            material = min(5, sum(1 for e in p.get("entries", ()) if e.get("kind") in ("证明", "证伪")))
            score = 1.2 * closeness + 0.08 * material
            target = js_round(_clamp(10 - 10 * score, 0, 10))
            if prio != target:
                out.append((pid, "proposition", prio, target))
    return out


def priority_adjust(kb: Union[KnowledgeBase, str, Path, None] = None, mode: str = "",
                    *, dry_run: bool = False, no_commit: bool = False, owner: str | None = None,
                    on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Recompute priorities with one of :data:`PRIORITY_MODES` (one commit)."""
    if mode not in PRIORITY_MODES:
        raise UsageError(f"mode {mode!r} is not valid; use one of: {', '.join(PRIORITY_MODES)}")
    if dry_run:
        _k, view = _view(kb)
        ch = priority_targets(view, mode)
        return OpResult.dry("priority.adjust", [f"{i}: 优先级 {o} → {n}" for i, _k2, o, n in ch],
                            {"mode": mode, "edits": [dict(id=i, kind=kd, old=o, new=n)
                                                        for i, kd, o, n in ch]})

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        ch = priority_targets(card_view(ws.idx), mode)
        for obj_id, kind, _old, new in ch:
            ws.edit(obj_id, (kind,)).set_anchor("优先级", str(new))
        lines = [f"{i}: 优先级 {o} → {n}" for i, _kd, o, n in ch] or [f"no priority changes ({mode})"]
        return lines, {"mode": mode, "edits": [dict(id=i, kind=kd, old=o, new=n)
                                                 for i, kd, o, n in ch]}

    return run_op(kb, "priority.adjust", f"kb priority adjust --mode {mode}", build,
                  no_commit=no_commit, owner=owner, on_wait=on_wait)


# ---------------------------------------------------------------------------
# brief


def _best(entries: list[dict[str, Any]], kinds: tuple[str, ...]) -> float | None:
    ps = [e.get("probability") for e in entries if e.get("kind") in kinds]
    ps = [p for p in ps if isinstance(p, (int, float))]
    return max(ps) if ps else None


def _prio_key(prio: Any) -> tuple[int, int]:
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
    out.sort(key=lambda c: (_prio_key(c["priority"]), -(c["probability"] or 0), natural_key(c["id"]),
                            c["target"]))
    return out


def brief_data(kb: Union[KnowledgeBase, str, Path, None] = None) -> dict[str, Any]:
    """The state brief a planning agent reads (Vibe Math's ``buildBrief``, deterministic)."""
    k, view = _view(kb)
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
            "best_probability": _best(q.get("entries", []), ("解法",)),
            "directions": [{"id": d.get("direction", ""), "status": d.get("status", ""),
                            "survival": d.get("survival")} for d in ds],
        })
    open_problems.sort(key=lambda q: (_prio_key(q["priority"]), natural_key(q["id"])))
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


def _fmt_p(x: Any) -> str:
    if x is None:
        return "-"
    from kb.render.card import fmt_number

    return fmt_number(x)


def _line_problem(q: Mapping[str, Any]) -> str:
    dep = ""
    if q["depends"]:
        dep = "；依赖 " + ", ".join(q["depends"]) + (
            f"（未就绪：{', '.join(q['unsettled_depends'])}）" if q["unsettled_depends"] else "（已就绪）")
    dirs = ""
    if q["directions"]:
        dirs = "；方向 " + ", ".join(f"{d['id']}:{d['status']}:{_fmt_p(d['survival'])}"
                                   for d in q["directions"])
    return (f"- {q['id']}｜{q['title']}｜{q['status']}｜优先级 {q['priority']}"
            f"｜解法 {q['solutions']}（最高概率 {_fmt_p(q['best_probability'])}）{dep}{dirs}")


def _line_candidate(v: Mapping[str, Any]) -> str:
    return (f"- {v['target']}（{v['r']}）｜{v['title']}｜概率{_fmt_p(v['probability'])}"
            f"｜优先级 {v['priority']}")


def _line_settled(s: Mapping[str, Any]) -> str:
    return f"- {s['id']}｜{s['title']}｜{s['conclusion']}｜{s['card'] or '（缺 Verified 卡）'}"


def _line_proposition(p: Mapping[str, Any]) -> str:
    return (f"- {p['id']}｜{p['title']}｜{p['category']}｜概率{_fmt_p(p['probability'])}"
            f"｜价值/关键性 {_fmt_p(p['value'])}")


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


# ---------------------------------------------------------------------------
# report


def _rel_link(from_rel: str, to_rel: str) -> str:
    return posixpath.relpath(to_rel, posixpath.dirname(from_rel) or ".")


def report_text(kb: Union[KnowledgeBase, str, Path, None] = None, date: str | None = None,
                recent: int = 10) -> tuple[str, str]:
    """``(path, text)`` of ``Logs/报告.md`` — deterministic given the KB and ``date``."""
    from kb.ops.verdict import load_records

    k, view = _view(kb)
    out_rel = f"{k.config.paths['logs'].strip('/')}/报告.md"
    data = brief_data(k)
    title = k.root.name
    lines = [f"# 项目报告｜{title}", ""]
    if date:
        lines += [f"生成于 {date}（kb report）", ""]
    c = data["counts"]
    by_status: dict[str, int] = {}
    for q in view.problems.values():
        by_status[q.get("status", "")] = by_status.get(q.get("status", ""), 0) + 1
    p_status: dict[str, int] = {}
    for p in view.propositions.values():
        p_status[p.get("status", "")] = p_status.get(p.get("status", ""), 0) + 1
    records = load_records(k)
    lines += ["## 总览", ""]
    lines.append(f"- 问题 {c['problems']} 个：" + ("，".join(
        f"{s} {by_status[s]}" for s in PROBLEM_STATUS if by_status.get(s))
        or "无"))
    lines.append(f"- 命题 {c['propositions']} 个：" + ("，".join(
        f"{s} {p_status[s]}" for s in PROPOSITION_STATUS if p_status.get(s)) or "无"))
    lines.append(f"- 方法 {c['methods']} 个；验证记录 {len(records)} 条；Verified 卡 {len(view.verified)} 张")
    lines.append("")
    lines += ["## 问题", ""]
    for status in ("求解中", "等待依赖", "原始", "死路", "已解决"):
        ids = sorted((q for q, v in view.problems.items() if v.get("status") == status),
                     key=lambda q: (_prio_key(view.problems[q].get("priority")), natural_key(q)))
        if not ids:
            continue
        lines += [f"### {status}（{len(ids)}）", ""]
        for qid in ids:
            q = view.problems[qid]
            sols = [e for e in q.get("entries", ()) if e.get("kind") == "解法"]
            best = _best(sols, ("解法",))
            deps = q.get("depends", ())
            dep = ""
            if deps:
                dep = "；依赖 " + ", ".join(f"{d}{'' if view.settled(d) else '（未定）'}" for d in deps)
            lines.append(f"- **{qid}** {q.get('title', '')} — 优先级 {q.get('priority')}；解法 "
                         f"{len(sols)} 条" + (f"（最高概率 {_fmt_p(best)}）" if sols else "") + dep)
        lines.append("")
    lines += ["## 已定论结果", ""]
    if not data["settled"]:
        lines += ["（暂无）", ""]
    else:
        for s in data["settled"]:
            card = s["card"]
            link = f"[{card}]({_rel_link(out_rel, card)})" if card else "（缺 Verified 卡，kb verify 会报告）"
            what = "问题已解决" if s["kind"] == "problem" else f"命题为{s['conclusion']}"
            lines.append(f"- **{s['id']}** {s['title']} — {what}：{link}")
        lines.append("")
    lines += ["## 未定论命题（按概率与价值/关键性）", ""]
    und = sorted(data["undecided_propositions"],
                 key=lambda p: (-(p["probability"] if p["probability"] is not None else 0.5),
                                -(p["value"] if p["value"] is not None else 0.5), natural_key(p["id"])))
    if not und:
        lines += ["（暂无）", ""]
    else:
        lines += ["| ID | 分类 | 概率 | 价值/关键性 | 标题 |", "|---|---|---|---|---|"]
        for p in und:
            t = p["title"].replace("|", "\\|")
            lines.append(f"| {p['id']} | {p['category']} | {_fmt_p(p['probability'])} | "
                         f"{_fmt_p(p['value'])} | {t} |")
        lines.append("")
    lines += ["## 方法与应用", ""]
    if not view.methods:
        lines += ["（暂无）", ""]
    for mid in sorted(view.methods, key=natural_key):
        m = view.methods[mid]
        apps = m.get("applications", ())
        used = "，".join(f"{a.get('problem')}" + (f"/{a.get('direction')}" if a.get("direction") else "")
                        for a in apps)
        rel = ""
        if m.get("parents"):
            rel += "；上级体系 " + ", ".join(m["parents"])
        if m.get("submethods"):
            rel += "；子方法 " + ", ".join(m["submethods"])
        if m.get("claims"):
            rel += "；可信断言 " + ", ".join(m["claims"])
        lines.append(f"- **{mid}** {m.get('title', '')}（{m.get('type', '')}，{m.get('status', '')}）— "
                     f"应用 {len(apps)} 次" + (f"：{used}" if used else "") + rel)
    if view.methods:
        lines.append("")
    lines += ["## 最近的验证", ""]
    if not records:
        lines += ["（暂无）", ""]
    else:
        for rec in list(reversed(records))[:recent]:
            votes = "，".join(f"{v.verifier}={_fmt_p(v.result)}" for v in rec.results)
            lines.append(f"- {rec.at.replace('T', ' ')} `{rec.r}` → {_fmt_p(rec.verdict)}"
                         f"（{votes}）[{rec.path.rsplit('/', 1)[-1]}]({_rel_link(out_rel, rec.path)})")
        lines.append("")
    while lines and lines[-1] == "":
        lines.pop()
    return out_rel, "\n".join(lines) + "\n"


def report_date(date: str | None) -> str | None:
    """The date shown in the report: ``date`` as given (checked), else ``KB_NOW``, else none."""
    if date:
        if parse_time(date) is None:
            raise UsageError(f"date {date!r} is not a date; write e.g. 2026-11-02 or "
                            "2026-11-02T10:00:00")
        return date
    raw = os.environ.get("KB_NOW", "").strip()
    if raw:
        dt = parse_time(raw)
        return fmt_time(dt) if dt else None
    return None


def report(kb: Union[KnowledgeBase, str, Path, None] = None, date: str | None = None, *,
           no_commit: bool = False, owner: str | None = None,
           on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Write ``Logs/报告.md`` (one commit; nothing when it is already up to date)."""
    shown = report_date(date)

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        rel, text = report_text(ws.kb, shown)
        ws.tx.write(rel, text.encode("utf-8"))
        return [f"wrote {ws.kb.prefix}{rel}"], {"path": ws.kb.prefix + rel, "chars": len(text)}

    return run_op(kb, "report", "kb report: Logs/报告.md", build, no_commit=no_commit, owner=owner,
                  on_wait=on_wait, sync=False)


__all__ = ["promote", "priority_adjust", "priority_targets", "refresh", "derived_changes",
           "report", "report_text", "brief_data", "brief_text", "fit_brief", "verify_candidates",
           "promoted_id", "js_round", "PRIORITY_MODES", "card_view", "CardView"]
