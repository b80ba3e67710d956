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
formulas run on the decimals the cards hold, exactly
(:func:`kb.research.verdict.decimal_value`): in binary floating point
10 − 10·(1.2·|0.675 − 0.5| + 0.08·3) is 5.499999… and rounds to 5, while its
mirror image 0.325 and the written decimals give 5.5 → 6.

A value outside [0, 1] (a 概率, or a direction's 存活率) is an error or a
warning of its card, never clamped: the object it belongs to is not scored
(:func:`priority_skips` says which and why). The write is :mod:`kb.ops.priority`.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any, Union

from kb.errors import UsageError
from kb.research.cardview import CardView
from kb.research.dependencies import natural_key
from kb.research.verdict import decimal_value

PRIORITY_MODES = ("deadend-deprioritize", "survival-map", "progress-graded")

#: The card formats (:func:`kb.parse.classify`) each mode reads: the problem modes a problem's
#: 状态 and 优先级 and its directions' 存活率 and 状态 (the direction logs,
#: ``Progress/<problem>/<direction>.md``); ``progress-graded`` a proposition's 概率, 优先级
#: and entries. Promotion (:mod:`kb.ops.promote`) reads :data:`PROMOTE_INPUTS`.
PRIORITY_INPUTS = {"deadend-deprioritize": ("problem", "direction"),
                   "survival-map": ("problem", "direction"),
                   "progress-graded": ("proposition",)}
#: The propositions (their whole card is copied) and the problems (IDs taken, 判断命题).
PROMOTE_INPUTS = ("proposition", "problem")


def js_round(x: Union[float, Fraction]) -> int:
    """``Math.round``: halves round up (exactly, for a Fraction)."""
    return int(math.floor(x + Fraction(1, 2)))


def _clamp(x: Fraction, lo: int, hi: int) -> Fraction:
    return max(Fraction(lo), min(Fraction(hi), x))


def _out_of_range(x: Any) -> bool:
    """Whether ``x`` is a number outside [0, 1] (None, for a missing value, is not)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not 0 <= x <= 1


def promoted_id(pid: str) -> str:
    """``q-promoted-`` + the last 12 characters of ``pid`` kept by ``[a-z0-9-]`` (any case)."""
    return "q-promoted-" + re.sub(r"[^a-z0-9\-]", "", pid, flags=re.IGNORECASE)[-12:]


def priority_targets(view: CardView, mode: str) -> list[tuple[str, str, Any, int]]:
    """``(id, kind, old, new)`` of the priorities ``mode`` changes.

    Objects holding a value outside [0, 1] are left out (:func:`priority_skips`).
    Raises UsageError for an unknown mode.
    """
    return _plan(view, mode)[0]


def priority_skips(view: CardView, mode: str) -> list[tuple[str, str, str]]:
    """``(id, kind, reason)`` of the objects ``mode`` would score but does not: a 概率 or a
    direction's 存活率 outside [0, 1] (never clamped into range, DESIGN.md).

    Raises UsageError for an unknown mode.
    """
    return _plan(view, mode)[1]


def _plan(view: CardView, mode: str) -> tuple[list[tuple[str, str, Any, int]],
                                                list[tuple[str, str, str]]]:
    """``(changes, skips)`` of ``mode``; see :func:`priority_targets` and :func:`priority_skips`."""
    if mode not in PRIORITY_MODES:
        raise UsageError(f"mode {mode!r} is not valid; use one of: {', '.join(PRIORITY_MODES)}")
    out: list[tuple[str, str, Any, int]] = []
    skips: list[tuple[str, str, str]] = []
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
                bad = next((d for d in ds if _out_of_range(d.get("survival"))), None)
                if bad is not None:
                    skips.append((qid, "problem", f"存活率 {bad.get('survival')} of direction "
                                  f"{bad.get('direction') or bad.get('id')} ({bad.get('path')}) is "
                                  "outside [0,1]; fix the direction log"))
                    continue
                best = max(decimal_value(d.get("survival") or 0) for d in ds)
                target = js_round(_clamp(10 - 10 * best, 0, 10))
                if prio != target:
                    out.append((qid, "problem", prio, target))
    else:
        for pid in sorted(view.propositions, key=natural_key):
            p = view.propositions[pid]
            prob, prio = p.get("probability"), p.get("priority")
            if prob in (0, 1) or prio == "never" or not isinstance(prio, int):
                continue
            if _out_of_range(prob):
                skips.append((pid, "proposition", f"概率 {prob} ({p.get('path')}) is outside "
                              "[0,1] (KB218); fix the card"))
                continue
            closeness = abs((Fraction(1, 2) if prob is None else decimal_value(prob)) - Fraction(1, 2))
            material = min(5, sum(1 for e in p.get("entries", ()) if e.get("kind") in ("证明", "证伪")))
            score = Fraction(12, 10) * closeness + Fraction(8, 100) * material
            target = js_round(_clamp(10 - 10 * score, 0, 10))
            if prio != target:
                out.append((pid, "proposition", prio, target))
    return out, skips


__all__ = ["PRIORITY_MODES", "PRIORITY_INPUTS", "PROMOTE_INPUTS", "js_round", "promoted_id",
           "priority_targets", "priority_skips"]
