"""``kb promote``: turn valuable undecided propositions into judge problems.

The rule (which propositions, the new ID) is :mod:`kb.research.priority`; one
:func:`kb.ops.workspace.run_op`, one commit, returning an
:class:`kb.ops.result.OpResult` (``promoted``, ``skipped``). Raises
:class:`kb.errors.UsageError` for a bad threshold and
:class:`kb.ops.card_edit.CardError` when a promoted card would be malformed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Union

from kb.model import Entry, Problem
from kb.ops.card_edit import CardError
from kb.ops.result import OpResult
from kb.ops.workspace import Workspace, run_op
from kb.render.card import fmt_number, render_card
from kb.repo import KnowledgeBase
from kb.research.cardview import card_view
from kb.research.dependencies import natural_key
from kb.research.priority import promoted_id
from kb.research.values import parse_probability


def promote(kb: Union[KnowledgeBase, str, Path, None] = None, threshold: Union[float, str] = 0.7,
            *, no_commit: bool = False, owner: str | None = None,
            on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Turn undecided propositions with 价值/关键性 ≥ ``threshold`` into judge problems.

    Raises UsageError for a threshold outside [0, 1], CardError (refused) when a promoted card
    would be malformed; every write also raises LockedError (another owner's lock), StaleError
    (``expect`` no longer matches), ConflictError (the file is dirty or HEAD moved) and
    EnvironmentError_ (git failed, the work tree is not writable); nothing is written then.
    """
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


__all__ = ["promote"]
