"""The verification rule, verification records and the verifiers' accuracy (pure).

The rule (VIBEMATH-V3.md "Verification"; :func:`compute_verdict`, pure):

- every vote exactly 1 -> 1; every vote exactly 0 -> 0;
- near-consensus: all votes >= 0.5 (or all <= 0.5) and the mean >= 0.85 (or
  <= 0.15) -> the mean clamped to [0.01, 0.99] (0.9 and 1 -> 0.95);
- otherwise ``forced`` -> the weighted mean, clamped to [0.01, 0.99], with
  weight = clamp(accuracy + 0.1 if the vote is exactly 0 or 1, 0.05, 0.95);
  ``flat`` -> 0.5.

At least two votes (``[verdict] min_votes`` may ask for more); a vote
outside [0, 1] is refused. A non-unanimous vote never yields 0 or 1. Means
are rounded to 10 decimals (no binary noise such as 0.20000000000000004 in
the cards).

The thresholds judge the decimals the verifiers wrote, as a person would
(:func:`decimal_value`): votes 0.1 and 0.2 have the mean 0.15 exactly, a
consensus like their mirror image 0.9 and 0.8, although the binary sum gives
0.15000000000000002.

A verifier's accuracy is derived, never stored: among the append-only
records ``Logs/Verification/*.json``, take every target whose final verdict
(its latest record) is 0 or 1 — it *settled* — and count the verifier's votes
in that target's earlier records; a vote >= 0.5 agrees with 1, a vote <= 0.5
with 0. A target that never settles itself is judged by its proposition when
that settles later: a bare verdict's votes against the outcome, a proof's
when it settled false and a refutation's when it settled true (the argument
was unsound: a vote <= 0.5 agrees). Accuracy = agreeing / counted, 0.5
without history. Agreement with the same batch (what the seed measured and
found meaningless) never counts.

A target (:class:`Target`) is an entry ``ID#解法N`` / ``ID#证明N`` / ``ID#证伪N``
or a bare proposition; its record ID is ``r-<qid>-s<N>``, ``r-<pid>``,
``r-<pid>-pf<N>`` or ``r-<pid>-rf<N>``. Writing a verdict back into the cards
is :mod:`kb.ops.verdict`; reading the records of a KB is
:mod:`kb.views.verification`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from fractions import Fraction
from typing import Any, Iterable, Mapping, Sequence, Union

from kb.clock import iso_time
from kb.errors import UsageError
from kb.numbers import MAX_DIGITS, small_int
from kb.research.values import parse_probability

MODES = ("forced", "flat")
NEAR_HIGH = 0.85
NEAR_LOW = 0.15
#: Decimals a verdict is rounded to.
PLACES = 10


def decimal_value(x: Union[float, int]) -> Fraction:
    """``x`` exactly as the decimal it was written as (``0.1`` -> 1/10, not the binary
    0.1000000000000000055…).

    ``repr`` of a float is the shortest decimal that reads back as that float, so for a
    value written with at most 15 significant digits it is the text a person or an agent
    wrote. Sums, means and products of these are exact, and so is every comparison with a
    decimal threshold (VIBEMATH-V3's 0.85, 0.15, 0.5), where binary arithmetic would put
    0.1 + 0.2 above 0.3.
    """
    return Fraction(repr(float(x)))


_HIGH = decimal_value(NEAR_HIGH)
_LOW = decimal_value(NEAR_LOW)
_HALF = Fraction(1, 2)
_FLOOR = Fraction(1, 100)   # a non-unanimous verdict stays in [0.01, 0.99]
_CEILING = Fraction(99, 100)


def _clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


# ---------------------------------------------------------------------------
# The rule


def _near_consensus(vals: Sequence[float]) -> Fraction | None:
    """The exact mean of ``vals`` when they are a near-consensus, else None.

    All on one side of 0.5 (0.5 itself on both) and the mean at least 0.85 or at most
    0.15, judged on the written decimals (:func:`decimal_value`) so that mirror-image votes
    (0.9/0.8 and 0.1/0.2) are judged alike.
    """
    exact = [decimal_value(x) for x in vals]
    if not exact:
        return None
    mean = sum(exact, Fraction(0)) / len(exact)
    one_side = all(x >= _HALF for x in exact) or all(x <= _HALF for x in exact)
    return mean if one_side and (mean >= _HIGH or mean <= _LOW) else None


def vote_values(votes: Mapping[str, Union[float, None]]) -> list[float]:
    """The votes as numbers (a missing result counts 0.5); refuses a value outside [0, 1]."""
    out = []
    for name, x in votes.items():
        if x is None:
            out.append(0.5)
            continue
        out.append(parse_probability(x, f"vote of {name}", open_interval=False))
    return out


def verdict_branch(votes: Mapping[str, Union[float, None]]) -> str:
    """Which rule decides: ``unanimous``, ``consensus`` or ``split`` (mode decides)."""
    vals = vote_values(votes)
    # A float is exactly 0 or 1 only when 0 or 1 was written: no arithmetic to judge here.
    if all(x == 1 for x in vals) or all(x == 0 for x in vals):
        return "unanimous"
    return "consensus" if _near_consensus(vals) is not None else "split"


def decided_by(results: Any, mode: Any = None) -> tuple[str, str]:
    """``(branch, how)``: which rule reached a recorded verdict, and how ``kb verdict``
    says it (``unanimous``, ``consensus``, ``split, forced``, ``split, flat``; ``none``
    and ``no votes recorded`` for a record without results).

    ``results`` is a valid record's ``results`` (kb's list or Vibe Math's map; a missing
    result counts 0.5, as in the verdict) and ``mode`` its ``mode`` field. That field is the
    rule for a split vote in effect when the verdict was given (``[verdict] mode`` or
    ``--mode``), stored on every record whichever rule decided: ``forced`` on a unanimous
    vote does not say the verdict was forced. A split record without a known mode (Vibe
    Math's) says ``split`` alone. The branch is read from the votes, so every record, old
    or new, says it. Raises UsageError for a result outside [0, 1]
    (:func:`parse_record` refuses such a record first).
    """
    # Keys by position: a list's verifier names may be missing or repeated.
    votes = {str(i): x for i, (_name, x) in enumerate(_result_items(results))}
    if not votes:  # every vote would be 1 (and 0): nothing says which rule decided
        return "none", "no votes recorded"
    branch = verdict_branch(votes)
    if branch != "split":
        return branch, branch
    return branch, f"split, {mode}" if mode in MODES else "split"


def compute_verdict(votes: Mapping[str, Union[float, None]],
                    accuracy: Mapping[str, float] | None = None, mode: str = "forced",
                    min_votes: int = 2) -> float:
    """The verdict of ``votes`` (verifier -> result in [0, 1]); see the module docstring.

    ``accuracy`` maps verifiers to their accuracy (0.5 when absent). Raises
    :class:`kb.errors.UsageError` for fewer than ``max(2, min_votes)`` votes, a vote
    outside [0, 1] or an unknown mode.
    """
    if mode not in MODES:
        raise UsageError(f"verdict mode {mode!r} is not valid; use one of: {', '.join(MODES)}")
    need = max(2, int(min_votes or 2))
    if len(votes) < need:
        raise UsageError(f"a verdict needs at least {need} votes, got {len(votes)}; give each "
                        "verifier as --vote NAME=RESULT with RESULT in [0,1]")
    vals = vote_values(votes)
    if all(x == 1 for x in vals):
        return 1.0
    if all(x == 0 for x in vals):
        return 0.0
    mean = _near_consensus(vals)
    if mean is not None:
        return float(round(max(_FLOOR, min(_CEILING, mean)), PLACES))
    if mode == "flat":
        return 0.5
    acc = accuracy or {}
    num = den = 0.0
    for name, x in zip(votes, vals):
        a = acc.get(name, 0.5)
        w = _clamp(a + (0.1 if x in (0.0, 1.0) else 0.0), 0.05, 0.95)
        num += w * x
        den += w
    # Weights are measured rates, not written decimals, and no threshold judges this mean:
    # binary arithmetic, rounded, is exact enough.
    return round(_clamp(num / den, 0.01, 0.99), PLACES) if den > 0 else 0.5


# ---------------------------------------------------------------------------
# Records and accuracy


@dataclass(frozen=True)
class Vote:
    """One verifier's result in [0, 1] on a target, with its reason."""

    verifier: str
    result: float
    reason: str = ""


@dataclass
class VerificationRecord:
    """One ``Logs/Verification/*.json`` file as kb reads it."""

    path: str
    r: str
    verdict: float | None
    results: list[Vote]
    at: str
    raw: dict[str, Any] = field(default_factory=dict)


def _record_time(v: Any) -> str:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        secs = v / 1000 if v > 1e11 else v
        return iso_time(datetime.fromtimestamp(secs, timezone.utc))
    return str(v or "")


#: A record ID: ``r-`` and a target's ID (:attr:`Target.rid`), no space or control character.
_RECORD_ID = re.compile(r"^r-[^\s\x00-\x1f\x7f]+$")


#: The ISO 8601 times records hold: kb's ``2026-11-02T10:00:00``, JavaScript's
#: ``…T10:00:00.000Z``, a date alone. Records are ordered by this text, so only the
#: extended form (which sorts as time does) is read.
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{3}(?:\d{3})?)?)?"
                       r"(?:Z|[+-]\d{2}:\d{2})?)?$")


def _probability(x: Any) -> bool:
    """Whether ``x`` is a JSON number in [0, 1] (not a boolean, NaN or an infinity)."""
    return (isinstance(x, (int, float)) and not isinstance(x, bool)
            and 0 <= x <= 1)  # NaN compares False


#: JSON's names of the types ``json.loads`` returns.
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number",
               float: "a number", bool: "a boolean", type(None): "null"}


def _shown(x: Any) -> str:
    """``x`` as JSON for a message, cut to 40 characters."""
    try:
        text = json.dumps(x, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):  # nested past what the encoder follows
        return _JSON_TYPES.get(type(x), "a value")
    return text if len(text) <= 40 else text[:39] + "…"


def _time_problem(v: Any) -> str | None:
    """What is wrong with a record's ``at``: kb reads an ISO 8601 time (``2026-11-02T10:00:00``,
    an offset or ``Z`` allowed) or epoch seconds or milliseconds (Vibe Math's), as
    :func:`_record_time` does."""
    if v is None:
        return "`at` is missing (the time of the verdict orders a target's records)"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            _record_time(v)
        except (OverflowError, OSError, ValueError):
            return f"`at` {_shown(v)} is not a time (epoch seconds or milliseconds)"
        return None
    if isinstance(v, str):
        bad = f"`at` {_shown(v)} is not an ISO 8601 time (2026-11-02T10:00:00)"
        if not _ISO_TIME.match(v):
            return bad
        try:  # the calendar: no month 13; Python 3.10's fromisoformat reads no Z
            datetime.fromisoformat(v[:-1] + "+00:00" if v.endswith("Z") else v)
        except ValueError:
            return bad
        return None
    return f"`at` {_shown(v)} is not a time (an ISO 8601 string or epoch seconds)"


def _result_items(res: Union[list[Any], dict[str, Any]]) -> list[tuple[Any, Any]]:
    """``(verifier, result)`` of each result (None where absent): kb's list of objects or
    Vibe Math's map verifier -> ``{"Result", "Reason"}`` (or a bare number)."""
    if isinstance(res, dict):
        return [(k, v.get("result", v.get("Result")) if isinstance(v, dict) else v)
                for k, v in res.items()]
    return [(it.get("verifier", it.get("name")), it.get("result", it.get("Result")))
            if isinstance(it, dict) else (None, it) for it in res]


def _results_problems(res: Any) -> list[str]:
    """What is wrong with a record's ``results``; a missing result (absent or null) is
    allowed: VIBEMATH-V3 "Verification" counts it 0.5 in the verdict, accuracy skips it."""
    if res is None:
        return ["`results` is missing"]
    if not isinstance(res, (list, dict)):
        return [f"`results` {_shown(res)} is neither a list nor a map of results"]
    out = []
    for i, (name, x) in enumerate(_result_items(res), 1):
        who = f"result {i}" + (f" ({name})" if isinstance(name, str) and name else "")
        if not isinstance(name, str) or not name.strip():
            out.append(f"{who} has no verifier name")
        if x is not None and not _probability(x):
            out.append(f"{who} {_shown(x)} is not a number in [0, 1]")
    return out


def record_problems(data: Any) -> list[str]:
    """What is wrong with one verification record (its file's JSON value); [] when kb reads it.

    kb reads two forms: kb's own ``{"r": "r-q1-s1", "verdict": 0.85, "results":
    [{"verifier", "result", "reason"}…], "at": "2026-11-02T10:00:00", …}`` and Vibe
    Math's, where ``r`` may be ``{"rId": …}``, ``results`` a map verifier ->
    ``{"Result", "Reason"}`` and ``at`` epoch milliseconds. Each problem is one
    sentence naming the field: ``r`` missing or not a record ID (``r-…``); ``verdict``
    missing or not a number in [0, 1]; ``results`` not a list or map, a result without a
    verifier name or not a number in [0, 1] (null: a missing result, allowed); ``at``
    missing or not a time :func:`_record_time` reads. Never raises.
    """
    if not isinstance(data, dict):
        return [f"not a JSON object but {_JSON_TYPES.get(type(data), 'a value')}"]
    out = []
    r = data.get("r")
    if isinstance(r, dict):
        r = r.get("rId") or r.get("r")
    if r is None or r == "":
        out.append("`r` (the record ID, r-<target>) is missing")
    elif not isinstance(r, str) or not _RECORD_ID.match(r):
        out.append(f"`r` {_shown(r)} is not a record ID (r-<target>, e.g. r-q1-s1)")
    v = data.get("verdict")
    if v is None:
        out.append("`verdict` is missing")
    elif not _probability(v):
        out.append(f"`verdict` {_shown(v)} is not a number in [0, 1]")
    out += _results_problems(data.get("results"))
    at = _time_problem(data.get("at"))
    if at is not None:
        out.append(at)
    return out


def _votes(res: Union[list[Any], dict[str, Any]]) -> list[Vote]:
    """The results of a valid record that carry a number (a missing result is no vote)."""
    items = res.items() if isinstance(res, dict) else [(None, it) for it in res]
    out = []
    for key, it in items:
        it = it if isinstance(it, dict) else {"result": it}
        name = key if key is not None else it.get("verifier", it.get("name"))
        x = it.get("result", it.get("Result"))
        if x is not None:
            out.append(Vote(name, float(x), str(it.get("reason", it.get("Reason", "")) or "")))
    return out


def parse_record(path: str, data: Any) -> VerificationRecord | None:
    """Read a record written by kb (``results`` a list) or by Vibe Math (a map of results).

    None when :func:`record_problems` finds anything wrong: a malformed record is left
    out of accuracy, verdict weighting and reports alike (``kb verify`` warns, KB243).
    """
    return None if record_problems(data) else _record(path, data)


def _record(path: str, data: dict[str, Any]) -> VerificationRecord:
    """The record of ``data``, which :func:`record_problems` found nothing wrong with."""
    r = data["r"]
    if isinstance(r, dict):
        r = r.get("rId") or r.get("r")
    return VerificationRecord(path=path, r=r, verdict=float(data["verdict"]),
                              results=_votes(data["results"]), at=_record_time(data["at"]),
                              raw=data)


@dataclass(frozen=True)
class BadRecord:
    """A record file kb leaves out: its KB path and what is wrong (one line)."""

    path: str
    why: str


def read_record(path: str, raw: bytes) -> VerificationRecord | BadRecord:
    """One record file's bytes read as :func:`parse_record` does, or why it is left out
    (not UTF-8, not JSON, or :func:`record_problems`). Never raises."""
    try:
        # utf-8, not utf-8-sig: every reader of the records (kb diff, kb serve) refuses a BOM
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return BadRecord(path, "not UTF-8")
    except json.JSONDecodeError as exc:
        return BadRecord(path, f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})")
    except ValueError as exc:  # a number too long for int()
        return BadRecord(path, f"not JSON ({exc})")
    except RecursionError:
        return BadRecord(path, "not JSON kb reads (nested too deeply)")
    problems = record_problems(data)
    return BadRecord(path, "; ".join(problems)) if problems else _record(path, data)

_NAME = re.compile(r"^(?P<stem>.*?)(?:-(?P<n>\d+))?\.json$")


def record_order(rec: VerificationRecord) -> tuple[str, str, int]:
    """Oldest first: by ``at``, then file name (``…-2.json`` after its unsuffixed twin)."""
    name = rec.path.rsplit("/", 1)[-1]
    m = _NAME.match(name)
    stem, n = (m.group("stem"), int(m.group("n") or 1)) if m else (name, 1)
    return (rec.at, stem, n)


@dataclass(frozen=True)
class Accuracy:
    """A verifier's record against settled outcomes."""

    verifier: str
    agreed: int
    counted: int
    votes: int

    @property
    def rate(self) -> float:
        """agreed / counted, 0.5 without history."""
        return self.agreed / self.counted if self.counted else 0.5


def verifier_accuracy(records: Sequence[VerificationRecord]) -> dict[str, Accuracy]:
    """Accuracy of every verifier named in ``records`` (ordered oldest first)."""
    by_r: dict[str, list[VerificationRecord]] = {}
    for rec in records:
        by_r.setdefault(rec.r, []).append(rec)
    agreed: dict[str, int] = {}
    counted: dict[str, int] = {}
    votes: dict[str, int] = {}
    for rec in records:
        for v in rec.results:
            votes[v.verifier] = votes.get(v.verifier, 0) + 1
            agreed.setdefault(v.verifier, 0)
            counted.setdefault(v.verifier, 0)
    for recs in by_r.values():
        outcome = recs[-1].verdict
        if outcome not in (0.0, 1.0):
            continue
        for rec in recs[:-1]:
            for v in rec.results:
                counted[v.verifier] += 1
                if (outcome == 1.0 and v.result >= 0.5) or (outcome == 0.0 and v.result <= 0.5):
                    agreed[v.verifier] += 1
    for rec, truth in _judged_by_proposition(records, by_r):
        kind = _record_kind(rec.r)
        for v in rec.results:
            counted[v.verifier] += 1
            # a bare vote says how likely the proposition is; a proof's or a refutation's,
            # how likely that argument is sound: only an unsound one is judged here
            if kind is None:
                agrees = v.result >= 0.5 if truth else v.result <= 0.5
            else:
                agrees = v.result <= 0.5
            if agrees:
                agreed[v.verifier] += 1
    return {name: Accuracy(name, agreed[name], counted[name], votes[name])
            for name in sorted(votes)}


def _record_kind(r: str) -> str | None:
    """The entry kind of record ID ``r`` (``s``, ``pf``, ``rf``), None for a bare one."""
    m = _RID.match(r)
    return m.group("kind") if m else None


def _judged_by_proposition(records: Sequence[VerificationRecord],
                           by_r: dict[str, list[VerificationRecord]]
                           ) -> list[tuple[VerificationRecord, bool]]:
    """Records the same-target rule cannot judge (their own target never settled) that a
    later settlement of their proposition does, each with the proposition's truth: a bare
    verdict on it whichever way it settled; a proof when it settled false (no proof of a
    false statement is sound); a refutation when it settled true. A proposition settles
    with the first record putting it at 0 or 1 (VIBEMATH-V3 write-back: a bare verdict of
    1 or 0, a proof's 1 or a refutation's 0 for true, a proof's 0 or a refutation's 1
    for false); only records before that one count. A problem's solutions are judged by
    their own targets alone (another solution may solve it)."""
    settled: dict[str, tuple[int, bool]] = {}
    for i, rec in enumerate(records):
        m = _RID.match(rec.r)
        if m is None or rec.verdict not in (0.0, 1.0) or m.group("kind") == "s":
            continue
        true = (rec.verdict == 1.0) == (m.group("kind") != "rf")
        settled.setdefault(m.group("id"), (i, true))
    out = []
    for i, rec in enumerate(records):
        m = _RID.match(rec.r)
        if m is None or m.group("kind") == "s" or m.group("id") not in settled:
            continue
        at, truth = settled[m.group("id")]
        if i >= at or by_r[rec.r][-1].verdict in (0.0, 1.0):
            continue  # cast after it settled, or judged by its own target's outcome
        kind = m.group("kind")
        if kind is None or (kind == "pf" and not truth) or (kind == "rf" and truth):
            out.append((rec, truth))
    return out


@dataclass(frozen=True)
class Target:
    """What a verdict is about: an entry (kind, number) of an object, or a bare proposition."""

    obj_id: str
    kind: str | None = None
    number: int | None = None

    @property
    def rid(self) -> str:
        """The record ID: ``r-<id>``, ``r-<id>-s<N>``, ``r-<id>-pf<N>`` or ``r-<id>-rf<N>``."""
        if self.kind is None:
            return f"r-{self.obj_id}"
        return f"r-{self.obj_id}-{ENTRY_SHORT[self.kind]}{self.number}"

    def __str__(self) -> str:
        return self.obj_id if self.kind is None else f"{self.obj_id}#{self.kind}{self.number}"


_TARGET = re.compile(r"^(?P<id>[^#\s]+)(?:#\s*(?P<kind>解法|证明|证伪|s|pf|rf)\s*(?P<n>\d+))?$")
_RID = re.compile(r"^r-(?P<id>.+?)(?:-(?P<kind>s|pf|rf)(?P<n>\d+))?$")
#: An entry kind -> its letters in a record ID and a short target (``r-q1-s1``, ``p1#pf2``).
ENTRY_SHORT = {"解法": "s", "证明": "pf", "证伪": "rf"}
_SHORT = {v: k for k, v in ENTRY_SHORT.items()}


def _entry_number(digits: str, text: str) -> int:
    """The entry number ``digits`` of target ``text``; UsageError when it is too long to be one."""
    n = small_int(digits)
    if n is None:
        shown = text if len(text) <= 60 else text[:40] + "…"
        raise UsageError(f"entry number in {shown!r} ({len(digits)} digits) is not valid; "
                        f"entries are numbered from 1, with at most {MAX_DIGITS} digits")
    return n


def parse_target(text: str) -> Target:
    """``q1#解法1``, ``p1#证明2``, ``p1#证伪1``, ``p1`` (bare), ``q1#s1`` or a rid ``r-q1-s1``.

    Raises UsageError for a malformed target or an entry number below 1.
    """
    t = (text or "").strip()
    m = _TARGET.match(t)
    if t.startswith("r-") and (m is None or m.group("kind") is None):
        m2 = _RID.match(t)
        if m2 and m2.group("kind"):
            return Target(m2.group("id"), _SHORT[m2.group("kind")], _entry_number(m2.group("n"), text))
    if m is None:
        raise UsageError(f"target {text!r} is not valid; write ID#解法N (a solution), ID#证明N, "
                        "ID#证伪N (a proof or refutation) or ID (a bare proposition)")
    kind = m.group("kind")
    if kind is None:
        return Target(m.group("id"))
    n = _entry_number(m.group("n"), text)
    if n < 1:
        raise UsageError(f"entry number {n} in {text!r} is not valid; entries are numbered from 1")
    return Target(m.group("id"), _SHORT.get(kind, kind), n)




__all__ = ["ENTRY_SHORT", "MODES", "NEAR_HIGH", "NEAR_LOW", "PLACES", "decimal_value", "vote_values",
           "verdict_branch", "decided_by", "compute_verdict", "Vote", "VerificationRecord",
           "parse_record",
           "record_problems", "BadRecord", "read_record",
           "record_order", "Accuracy", "verifier_accuracy", "Target", "parse_target"]
