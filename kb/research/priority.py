"""Promotion and priority formulas (VIBEMATH-V3.md "Promotion and priorities"), pure.

- promotion: an undecided proposition (概率 not 0 or 1, priority not never)
  whose ``价值/关键性`` (default 0.5) reaches the threshold (0.7) and that has
  no judge problem yet becomes ``q-promoted-<last 12 of its ID, [A-Za-z0-9-]>``
  (:func:`promoted_id`; the write is :mod:`kb.ops.promote`);
- ``deadend-deprioritize``: a problem (not settled, not never) whose
  directions are all dead-end and whose numeric priority is below 10 gets 10;
- ``survival-map``: priority = round(clamp(10 - 10·max direction survival, 0, 10));
- ``progress-graded`` (undecided propositions with a numeric priority):
  closeness = |概率 - 0.5|, material = min(5, proofs + refutations),
  score = 1.2·closeness + 0.08·material,
  priority = round(clamp(10 - 10·score, 0, 10)).

``round`` is JavaScript's ``Math.round`` (halves up), as in Vibe Math. The
write is :mod:`kb.ops.priority`.
"""

from __future__ import annotations

import math
import re
from typing import Any

from kb.errors import UsageError
from kb.research.cardview import CardView
from kb.research.dependencies import natural_key

PRIORITY_MODES = ("deadend-deprioritize", "survival-map", "progress-graded")


def js_round(x: float) -> int:
    """``Math.round``: halves round up."""
    return int(math.floor(x + 0.5))


def _clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


def promoted_id(pid: str) -> str:
    """``q-promoted-`` + the last 12 characters of ``pid`` kept by ``[a-z0-9-]`` (any case)."""
    return "q-promoted-" + re.sub(r"[^a-z0-9\-]", "", pid, flags=re.IGNORECASE)[-12:]


def priority_targets(view: CardView, mode: str) -> list[tuple[str, str, Any, int]]:
    """``(id, kind, old, new)`` of the priorities ``mode`` changes.

    Raises UsageError for an unknown mode.
    """
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



__all__ = ["PRIORITY_MODES", "js_round", "promoted_id", "priority_targets"]
