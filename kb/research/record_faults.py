"""Whether a verification record is one ``kb verdict`` could have written.

A record (``Logs/Verification/*.json``) is read by :func:`kb.research.verdict.read_record`;
one that reads may still hold a verdict no vote gives: a verifier named twice, fewer
verifiers than ``[verdict] min_votes``, or a verdict that does not follow from its results
under VIBEMATH-V3's rules. Such a record backs no settlement (KB312), is a KB243 warning,
and counts in no verifier's accuracy (:mod:`kb.views.verification`). Pure functions; never
raise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from kb.errors import UsageError

if TYPE_CHECKING:
    from kb.research.verdict import VerificationRecord

#: How far a record's verdict may be from the one kb computes: Vibe Math's records hold
#: binary means (0.8500000000000001 where kb writes 0.85); a real disagreement is far larger.
_SLACK = 1e-9
#: A forced verdict's weight bounds (:func:`kb.research.verdict.compute_verdict`): clamp(accuracy
#: + 0.1 for an exact 0 or 1, 0.05, 0.95), accuracy anything in [0, 1].
_W_MAX = 0.95


def min_votes_of(config: Any) -> int:
    """The votes a verdict takes under ``config`` (a :class:`kb.config.Config`):
    ``[verdict] min_votes``, never fewer than 2 (``kb verdict`` asks the same)."""
    raw = (getattr(config, "verdict", None) or {}).get("min_votes", 2)
    try:
        return max(2, int(raw or 2))
    except (TypeError, ValueError):  # kb.toml's reader drops such a value (KB001)
        return 2


def _results(raw: Any) -> list[tuple[str, Optional[float]]]:
    """``(verifier, result)`` of a valid record's ``results`` (kb's list or Vibe Math's map),
    a missing result as None; names stripped as ``kb verdict`` strips them."""
    res = raw.get("results") if isinstance(raw, dict) else None
    if isinstance(res, dict):
        items = [(k, v.get("result", v.get("Result")) if isinstance(v, dict) else v)
                 for k, v in res.items()]
    elif isinstance(res, list):
        items = [(it.get("verifier", it.get("name")), it.get("result", it.get("Result")))
                 for it in res if isinstance(it, dict)]
    else:
        items = []
    return [(str(n).strip(), None if x is None else float(x)) for n, x in items]


def _weighted_range(vals: list[float]) -> tuple[float, float]:
    """The least and greatest forced verdict of split votes ``vals`` under any accuracies:
    each weight ranges over [0.05 (0.1 for an exact 0 or 1), 0.95], and a weighted mean
    is extreme where the votes below it weigh most and those above least (or the mirror
    image), so trying each cut of the sorted votes finds both ends."""
    xs = sorted(vals)
    light = [0.1 if x in (0.0, 1.0) else 0.05 for x in xs]
    lo, hi = 1.0, 0.0
    for k in range(len(xs) + 1):
        for w in ([_W_MAX] * k + light[k:], light[:k] + [_W_MAX] * (len(xs) - k)):
            m = sum(a * x for a, x in zip(w, xs)) / sum(w)
            lo, hi = min(lo, m), max(hi, m)
    return max(0.01, min(0.99, lo)), max(0.01, min(0.99, hi))


def _shown_num(x: float) -> str:
    """``x`` as a person writes it (1, not 1.0)."""
    return str(int(x)) if float(x).is_integer() else repr(x)


def record_faults(rec: "VerificationRecord", min_votes: int = 2) -> list[str]:
    """What makes record ``rec`` (one :func:`kb.research.verdict.read_record` read) a
    verdict ``kb verdict`` could not have written; [] when it could. Never raises.

    Each fault is one sentence: a verifier named twice; fewer distinct verifiers than
    ``min_votes`` (:func:`min_votes_of`); or a verdict that does not follow from the results
    (a missing result counts 0.5): unanimous and near-consensus votes have exactly one
    verdict (:func:`kb.research.verdict.compute_verdict`), a split vote 0.5 (``"mode":
    "flat"``) or a weighted mean within what any accuracies give (``forced``; without a
    known ``mode``, either). The weights are not recomputed: they depend on the history
    the verdict was cast in, which a later snapshot (a merge, another branch) need not hold.
    """
    from kb.research.verdict import compute_verdict, verdict_branch

    items = _results(rec.raw)
    names = [n for n, _ in items]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        return [f"verifier {', '.join(twice)} votes twice (a verdict takes one vote per "
                "verifier)"]
    need = max(2, min_votes)
    if len(names) < need:
        return [f"{len(names)} verifier{'' if len(names) == 1 else 's'} voted, a verdict "
                f"needs at least {need} ([verdict] min_votes)"]
    votes = dict(items)
    v = rec.verdict if rec.verdict is not None else -1.0
    shown = ", ".join(f"{n}={'missing' if x is None else _shown_num(x)}" for n, x in items)
    try:
        branch = verdict_branch(votes)
        if branch != "split":
            want = compute_verdict(votes, {}, "forced", need)
            if abs(v - want) <= _SLACK:
                return []
            return [f"`verdict` {_shown_num(v)} does not follow from its results ({shown}): "
                    f"{'unanimous votes give' if branch == 'unanimous' else 'a near-consensus gives'}"
                    f" {_shown_num(want)}"]
    except (UsageError, ValueError):  # record_problems let through nothing the rule refuses
        return []
    mode = rec.raw.get("mode") if isinstance(rec.raw, dict) else None
    lo, hi = _weighted_range([0.5 if x is None else x for x in votes.values()])
    flat_ok = abs(v - 0.5) <= _SLACK and mode != "forced"
    forced_ok = lo - _SLACK <= v <= hi + _SLACK and mode != "flat"
    if flat_ok or forced_ok:
        return []
    gives = {"flat": "0.5 (flat)", "forced": f"a weighted mean in [{lo:.4g}, {hi:.4g}] (forced)"}
    told = [gives[m] for m in ("flat", "forced") if mode not in ("flat", "forced") or m == mode]
    never = ", never exactly 0 or 1" if v in (0.0, 1.0) else ""
    return [f"`verdict` {_shown_num(v)} does not follow from its results ({shown}): a split "
            f"vote gives {' or '.join(told)}{never}"]


def checked_record(path: str, data: bytes, min_votes: int = 2) -> Any:
    """Record file ``path`` (its bytes ``data``) as every reader takes it: the
    :class:`kb.research.verdict.VerificationRecord` :func:`kb.research.verdict.read_record`
    reads, or a :class:`kb.research.verdict.BadRecord` saying why it is left out
    (unreadable, malformed, or :func:`record_faults`). Never raises."""
    from kb.research.verdict import BadRecord, read_record

    rec = read_record(path, data)
    if isinstance(rec, BadRecord):
        return rec
    faults = record_faults(rec, min_votes)
    return BadRecord(rec.path, "; ".join(faults)) if faults else rec

