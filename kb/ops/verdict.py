"""Verification verdicts: the rule, the verifiers' accuracy, the record and the write-back.

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

A verifier's accuracy is derived, never stored: among the append-only
records ``Logs/Verification/*.json``, take every target whose final verdict
(its latest record) is 0 or 1 — it *settled* — and count the verifier's votes
in that target's earlier records; a vote >= 0.5 agrees with 1, a vote <= 0.5
with 0. Accuracy = agreeing / counted, 0.5 without history. Agreement with
the same batch (what the seed measured and found meaningless) never counts.

:func:`record_verdict` writes one record ``Logs/Verification/<rid>_<time>.json``
(``{r, verdict, results, transcript, history, at, mode}``; ``rid`` is
``r-<qid>-s<N>``, ``r-<pid>``, ``r-<pid>-pf<N>`` or ``r-<pid>-rf<N>`` with N the
entry number) and writes the verdict back in the same commit:

- a solution: probability = verdict, status 已验; 1 -> the problem is 已解决,
  priority never, and ``Verified/问题/<qid>.md`` is written;
- a proof or refutation: probability = verdict, status 已验; 0 -> an entry on
  the other side (``证伪（反证）`` for a failed proof) at 1; strictly between ->
  an entry on the other side (``…（辩论论证）``) at 1 - verdict;
- a bare proposition: ``概率`` = verdict; 1 -> 已验证·真 with a proof
  ``验证证明`` at 1 and priority never; 0 -> the mirror image (``验证证伪``);
  otherwise 未定论 with ``辩论支持论证`` at the verdict and ``辩论反驳论证`` at
  1 - verdict;
- a proof at 1 settles its proposition true (概率 1, 已验证·真, never), a
  refutation at 1 false (概率 0, 已验证·假, never), and ``Verified/命题/<pid>.md``
  is written; a judge problem of that proposition (``判断命题``) is closed
  (已解决, never, with its own Verified card);
- a solution of a promoted judge problem (``判断命题`` / ``来源命题``) is also a
  verdict on the proposition's matching entry (``【证明】`` / ``【证伪】`` titles).

A target whose object is already settled by verification is refused: its
Verified card is immutable and its record final.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

from kb.errors import NotFoundError, UsageError
from kb.ops.cards import (
    CardError,
    OpResult,
    Workspace,
    compact_time,
    fmt_time,
    is_final,
    iso_time,
    now,
    open_kb_arg,
    parse_probability,
    run_op,
)
from kb.repo import KnowledgeBase

MODES = ("forced", "flat")
NEAR_HIGH = 0.85
NEAR_LOW = 0.15


def _clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


# ---------------------------------------------------------------------------
# The rule


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
    if all(x == 1 for x in vals) or all(x == 0 for x in vals):
        return "unanimous"
    mean = sum(vals) / len(vals) if vals else 0.5
    if (all(x >= 0.5 for x in vals) or all(x <= 0.5 for x in vals)) and \
            (mean >= NEAR_HIGH or mean <= NEAR_LOW):
        return "consensus"
    return "split"


def compute_verdict(votes: Mapping[str, Union[float, None]],
                    accuracy: Mapping[str, float] | None = None, mode: str = "forced",
                    min_votes: int = 2) -> float:
    """The verdict of ``votes`` (verifier -> result in [0, 1]); see the module docstring.

    ``accuracy`` maps verifiers to their accuracy (0.5 when absent). Raises
    :class:`CardError` for fewer than ``max(2, min_votes)`` votes, a vote
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
    mean = sum(vals) / len(vals)
    if (all(x >= 0.5 for x in vals) or all(x <= 0.5 for x in vals)) and \
            (mean >= NEAR_HIGH or mean <= NEAR_LOW):
        return round(_clamp(mean, 0.01, 0.99), 10)
    if mode == "flat":
        return 0.5
    acc = accuracy or {}
    num = den = 0.0
    for name, x in zip(votes, vals):
        a = acc.get(name, 0.5)
        w = _clamp(a + (0.1 if x in (0.0, 1.0) else 0.0), 0.05, 0.95)
        num += w * x
        den += w
    return round(_clamp(num / den, 0.01, 0.99), 10) if den > 0 else 0.5


# ---------------------------------------------------------------------------
# Records and accuracy


@dataclass(frozen=True)
class Vote:
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
        from datetime import datetime, timezone

        secs = v / 1000 if v > 1e11 else v
        return iso_time(datetime.fromtimestamp(secs, timezone.utc))
    return str(v or "")


def parse_record(path: str, data: Any) -> VerificationRecord | None:
    """Read a record written by kb (``results`` a list) or by Vibe Math (a map of results)."""
    if not isinstance(data, dict):
        return None
    r = data.get("r")
    if isinstance(r, dict):
        r = r.get("rId") or r.get("r") or ""
    if not isinstance(r, str) or not r:
        return None
    votes: list[Vote] = []
    res = data.get("results")
    items: Iterable[Any] = []
    if isinstance(res, list):
        items = res
    elif isinstance(res, dict):
        items = [{"verifier": k, **(v if isinstance(v, dict) else {"result": v})}
                 for k, v in res.items()]
    for it in items:
        if not isinstance(it, dict):
            continue
        name = it.get("verifier", it.get("name"))
        x = it.get("result", it.get("Result"))
        if not isinstance(name, str) or isinstance(x, bool) or not isinstance(x, (int, float)):
            continue
        votes.append(Vote(name, float(x), str(it.get("reason", it.get("Reason", "")) or "")))
    v = data.get("verdict")
    verdict = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    return VerificationRecord(path=path, r=r, verdict=verdict, results=votes,
                              at=_record_time(data.get("at")), raw=data)


def records_dir(k: KnowledgeBase) -> str:
    return f"{k.config.paths['logs'].strip('/')}/Verification"


def load_records(kb: Union[KnowledgeBase, str, Path, None] = None) -> list[VerificationRecord]:
    """Every readable verification record of the KB, oldest first (:func:`record_order`)."""
    k = open_kb_arg(kb)
    base = k.root / records_dir(k)
    out = []
    if base.is_dir():
        for p in sorted(base.glob("*.json")):
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            rec = parse_record(f"{records_dir(k)}/{p.name}", data)
            if rec is not None:
                out.append(rec)
    out.sort(key=record_order)
    return out


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
    return {name: Accuracy(name, agreed[name], counted[name], votes[name])
            for name in sorted(votes)}


def accuracy_table(kb: Union[KnowledgeBase, str, Path, None] = None) -> list[Accuracy]:
    """``kb verifiers``: every verifier with its accuracy, best first."""
    acc = verifier_accuracy(load_records(kb))
    return sorted(acc.values(), key=lambda a: (-a.rate, -a.counted, a.verifier))


# ---------------------------------------------------------------------------
# Targets


@dataclass(frozen=True)
class Target:
    """What a verdict is about: an entry (kind, number) of an object, or a bare proposition."""

    obj_id: str
    kind: str | None = None
    number: int | None = None

    @property
    def rid(self) -> str:
        if self.kind is None:
            return f"r-{self.obj_id}"
        suffix = {"解法": "s", "证明": "pf", "证伪": "rf"}[self.kind]
        return f"r-{self.obj_id}-{suffix}{self.number}"

    def __str__(self) -> str:
        return self.obj_id if self.kind is None else f"{self.obj_id}#{self.kind}{self.number}"


_TARGET = re.compile(r"^(?P<id>[^#\s]+)(?:#\s*(?P<kind>解法|证明|证伪|s|pf|rf)\s*(?P<n>\d+))?$")
_RID = re.compile(r"^r-(?P<id>.+?)(?:-(?P<kind>s|pf|rf)(?P<n>\d+))?$")
_SHORT = {"s": "解法", "pf": "证明", "rf": "证伪"}


def parse_target(text: str) -> Target:
    """``q1#解法1``, ``p1#证明2``, ``p1#证伪1``, ``p1`` (bare), ``q1#s1`` or a rid ``r-q1-s1``."""
    t = (text or "").strip()
    m = _TARGET.match(t)
    if t.startswith("r-") and (m is None or m.group("kind") is None):
        m2 = _RID.match(t)
        if m2 and m2.group("kind"):
            return Target(m2.group("id"), _SHORT[m2.group("kind")], int(m2.group("n")))
    if m is None:
        raise UsageError(f"target {text!r} is not valid; write ID#解法N (a solution), ID#证明N, "
                        "ID#证伪N (a proof or refutation) or ID (a bare proposition)")
    kind = m.group("kind")
    if kind is None:
        return Target(m.group("id"))
    n = int(m.group("n"))
    if n < 1:
        raise UsageError(f"entry number {n} in {text!r} is not valid; entries are numbered from 1")
    return Target(m.group("id"), _SHORT.get(kind, kind), n)


# ---------------------------------------------------------------------------
# Writing back


def _safe_body(text: str) -> str:
    """Reason text as an entry body: lines kb would read as structure are escaped."""
    out = []
    for ln in text.replace("\r\n", "\n").replace("\r", "\n").strip("\n").split("\n"):
        if re.match(r"^(#|```|~~~)", ln):
            ln = "\\" + ln
        out.append(ln.rstrip())
    return "\n".join(out).strip("\n")


def _strongest(votes: Sequence[Vote], toward: int) -> str:
    best, dist = "", -1.0
    for v in votes:
        d = v.result if toward else 1 - v.result
        if v.reason.strip() and d > dist:
            best, dist = v.reason, d
    return best


def _verified_text(card: Any) -> str:
    from kb.model import VerifiedCard
    from kb.render.card import render_card

    return render_card(VerifiedCard(**card))


def _strip_time(text: str) -> str:
    return "\n".join(ln for ln in text.replace("\r\n", "\n").split("\n")
                     if not ln.startswith("- 时间:")).strip()


class _Verdict:
    """The write-back of one verdict inside one workspace."""

    def __init__(self, ws: Workspace, target: Target, v: float, votes: list[Vote],
                 record_path: str) -> None:
        self.ws = ws
        self.target = target
        self.v = v
        self.votes = votes
        self.record_path = record_path
        self.lines: list[str] = []
        self.verified: list[str] = []
        self.settled: list[str] = []

    def text(self, toward: int) -> str:
        reason = _safe_body(_strongest(self.votes, toward))
        return reason or f"（见验证记录 {self.ws.kb.prefix}{self.record_path}）"

    # -- problems -------------------------------------------------------------
    def solution(self) -> None:
        ws, t, v = self.ws, self.target, self.v
        edit = ws.edit(t.obj_id, ("problem",))
        sol = edit.set_entry("解法", t.number or 0, probability=v, status="已验")
        self.lines.append(f"{t.obj_id}: 解法 {t.number} → 概率{_num(v)}｜状态已验")
        q = edit.model()
        for key in ("判断命题", "来源命题"):
            pid = q.anchors.get(key, "").strip()
            if pid:
                self.judged(pid, sol)
                break
        if v == 1:
            self.solve(t.obj_id)

    def solve(self, qid: str) -> None:
        edit = self.ws.edit(qid, ("problem",))
        q = edit.model()
        if q.status == "已解决" and q.priority == "never":
            return
        edit.set_anchor("状态", "已解决")
        edit.set_anchor("优先级", "never")
        self.lines.append(f"{qid}: 状态 {q.status} → 已解决, 优先级 never")
        self.settled.append(qid)
        self.verified_card(qid, "问题")

    def judged(self, pid: str, sol: Any) -> None:
        """A verdict on a solution of a judge problem is a verdict on the proposition's entry."""
        ws = self.ws
        p = ws.obj(pid, ("proposition",))
        if p is None or is_final(p):
            return
        edit = ws.edit(pid, ("proposition",))
        p = edit.model()  # the card itself: the index keeps no entry text
        side = "证伪" if sol.title.startswith("【证伪】") else "证明"
        title = re.sub(r"^【(证明|证伪)】", "", sol.title).strip()
        text = re.sub(r"^\s*【(证明|证伪)】", "", sol.text).strip()
        match = [e for e in p.entries if e.kind == side and e.status == "未定论"
                 and (e.title.strip() == title or e.text.strip() == text)]
        if match:
            number = match[0].number
        else:
            number = edit.add_entry(side, "晋升验证回写", 0.5, "未定论", _safe_body(text) or
                                    f"（{self.target} 的解法）")
        self.lines.append(f"{pid}: 判断问题 {self.target.obj_id} 的裁决回写 {side} {number}")
        self.entry(pid, side, number)

    # -- propositions -----------------------------------------------------------
    def entry(self, pid: str, kind: str, number: int) -> None:
        ws, v = self.ws, self.v
        edit = ws.edit(pid, ("proposition",))
        edit.set_entry(kind, number, probability=v, status="已验")
        self.lines.append(f"{pid}: {kind} {number} → 概率{_num(v)}｜状态已验")
        other = "证伪" if kind == "证明" else "证明"
        toward_other = 0 if kind == "证明" else 1
        if v == 0:
            n = edit.add_entry(other, f"{other}（反证）", 1.0, "已验", self.text(toward_other))
            self.lines.append(f"{pid}: new {other} {n}｜{other}（反证）｜概率1｜状态已验")
        elif v != 1:
            n = edit.add_entry(other, f"{other}（辩论论证）", _opp(v), "已验", self.text(toward_other))
            self.lines.append(f"{pid}: new {other} {n}｜{other}（辩论论证）｜概率{_num(_opp(v))}｜状态已验")
        self.settle(pid)

    def bare(self) -> None:
        from kb.render.card import fmt_number

        ws, pid, v = self.ws, self.target.obj_id, self.v
        edit = ws.edit(pid, ("proposition",))
        edit.set_anchor("概率", fmt_number(v))
        self.lines.append(f"{pid}: 概率 → {_num(v)}")
        if v == 1:
            n = edit.add_entry("证明", "验证证明", 1.0, "已验", self.text(1))
            self.lines.append(f"{pid}: new 证明 {n}｜验证证明｜概率1｜状态已验")
        elif v == 0:
            n = edit.add_entry("证伪", "验证证伪", 1.0, "已验", self.text(0))
            self.lines.append(f"{pid}: new 证伪 {n}｜验证证伪｜概率1｜状态已验")
        else:
            edit.set_anchor("状态", "未定论")
            n = edit.add_entry("证明", "辩论支持论证", v, "已验",
                               _safe_body(_strongest(self.votes, 1)) or "根据辩论得到的支持性论证")
            m = edit.add_entry("证伪", "辩论反驳论证", _opp(v), "已验",
                               _safe_body(_strongest(self.votes, 0)) or "根据辩论得到的反驳性论证")
            self.lines.append(f"{pid}: new 证明 {n}｜辩论支持论证｜概率{_num(v)}, "
                              f"证伪 {m}｜辩论反驳论证｜概率{_num(_opp(v))}")
        self.settle(pid)

    def settle(self, pid: str) -> None:
        """A proof at 1 settles true, a refutation at 1 false; then the card and judge problems."""
        ws = self.ws
        edit = ws.edit(pid, ("proposition",))
        p = edit.model()
        true = any(e.kind == "证明" and e.probability == 1 for e in p.entries)
        false = any(e.kind == "证伪" and e.probability == 1 for e in p.entries)
        if true and false:
            raise CardError(f"{pid} would hold both a proof and a refutation at probability 1; "
                            "resolve the contradiction by hand first")
        if not (true or false):
            return
        prob, status = ("1", "已验证·真") if true else ("0", "已验证·假")
        edit.set_anchor("概率", prob)
        edit.set_anchor("状态", status)
        edit.set_anchor("优先级", "never")
        self.lines.append(f"{pid}: 状态 {p.status} → {status}, 概率 {prob}, 优先级 never")
        self.settled.append(pid)
        self.verified_card(pid, "命题")
        for qid in self.judge_problems(pid):
            self.solve(qid)

    def judge_problems(self, pid: str) -> list[str]:
        db = self.ws.idx.db
        rows = db.execute(
            "SELECT o.id FROM objects o JOIN files f ON f.path=o.path AND f.blob=o.blob "
            "WHERE o.kind='problem' AND (json_extract(o.data, '$.anchors.\"判断命题\"') = ?)",
            (pid,)).fetchall()
        out = {r[0] for r in rows}
        for obj_id, e in self.ws.by_id.items():
            if e.fmt == "problem" and e.model().anchors.get("判断命题", "").strip() == pid:
                out.add(obj_id)
        result = []
        for qid in sorted(out):
            q = self.ws.obj(qid, ("problem",))
            if q is not None and q.anchors.get("判断命题", "").strip() == pid and q.status != "已解决":
                result.append(qid)
        return result

    # -- Verified cards -------------------------------------------------------
    def verified_card(self, obj_id: str, word: str) -> None:
        rel = write_verified_card(self.ws, obj_id, word)
        if rel is not None:
            self.verified.append(self.ws.kb.prefix + rel)
            self.lines.append(f"{obj_id}: Verified card {self.ws.kb.prefix}{rel}")


def write_verified_card(ws: Workspace, obj_id: str, word: str) -> str | None:
    """Stage ``Verified/<word>/<id>.md`` for a settled object (VIBEMATH-V3.md "Verified cards").

    The trusted content is every entry at probability 1 (``【解法 #i】`` /
    ``【证明 #i】`` / ``【证伪 #i】``, joined by a blank line). Returns the KB
    path written, or None when the card exists with the same content (the
    ``时间`` line is not compared); a card with other content is refused:
    Verified cards are immutable.
    """
    o = ws.edit(obj_id, ("problem",) if word == "问题" else ("proposition",)).model()
    parts: list[str] = []
    if word == "问题":
        sols = [e for e in o.entries if e.kind == "解法" and e.probability == 1]
        parts = [f"【解法 #{i}】{e.text.strip()}" for i, e in enumerate(sols, 1)]
        if not parts:
            pid = o.anchors.get("判断命题", "").strip()
            p = ws.obj(pid, ("proposition",)) if pid else None
            if p is not None and is_final(p):
                ans = "成立" if p.probability == 1 else "不成立"
                parts = [f"【结论】命题 {pid} {ans}，可信内容见 "
                         f"{ws.kb.prefix}{ws.verified_rel('命题', pid)}"]
        card = dict(id=obj_id, path="", line=1, title=o.title, object_type="问题",
                    conclusion="真", probability=1.0, category="问题", source=obj_id)
    else:
        proofs = [e for e in o.entries if e.kind == "证明" and e.probability == 1]
        refs = [e for e in o.entries if e.kind == "证伪" and e.probability == 1]
        parts = [f"【证明 #{i}】{e.text.strip()}" for i, e in enumerate(proofs, 1)]
        parts += [f"【证伪 #{i}】{e.text.strip()}" for i, e in enumerate(refs, 1)]
        true = o.probability == 1
        card = dict(id=obj_id, path="", line=1, title=o.title, object_type="命题",
                    conclusion="真" if true else "假", probability=1.0 if true else 0.0,
                    category=o.category, source=o.source_problem)
    card.update(time=fmt_time(now()), statement=o.statement,
                anchors={"可信内容": "\n\n".join(parts)})
    rel = ws.verified_rel(word, obj_id)
    new = _verified_text(card)
    old = ws.tx.read(rel)
    if old is not None:
        if _strip_time(old.decode("utf-8", "replace")) == _strip_time(new):
            return None
        raise CardError(f"{ws.kb.prefix}{rel} exists with other content; Verified cards are "
                        "immutable — nothing was written")
    data = new.encode("utf-8")
    ws.tx.write(rel, data)
    from kb.parse import parse_file

    ws.remember(rel, data, parse_file(rel, data, ws.kb.config, "verified"))
    return rel


def _opp(v: float) -> float:
    """1 - v without binary noise (1 - 0.99 is 0.010000000000000009)."""
    return round(1 - v, 12)


def _num(x: float) -> str:
    from kb.render.card import fmt_number

    return fmt_number(x)


def _votes_arg(votes: Union[Mapping[str, Any], Sequence[tuple[str, Any]]]) -> dict[str, float | None]:
    items = list(votes.items()) if isinstance(votes, Mapping) else list(votes)
    out: dict[str, float | None] = {}
    for name, x in items:
        n = str(name).strip()
        if not n or re.search(r"[\s=\x00-\x1f]", n):
            raise UsageError(f"verifier name {name!r} is not valid; give NAME=RESULT with a name "
                            "without spaces, e.g. v1=0.9")
        if n in out:
            raise UsageError(f"verifier {n} votes twice; give one vote per verifier")
        out[n] = None if x is None else parse_probability(x, f"vote of {n}", open_interval=False)
    return out


def record_verdict(kb: Union[KnowledgeBase, str, Path, None], target: Union[str, Target],
                   votes: Union[Mapping[str, Any], Sequence[tuple[str, Any]]],
                   reasons: Mapping[str, str] | None = None, mode: str | None = None, *,
                   transcript: str | None = None, history: Sequence[Any] = (),
                   no_commit: bool = False, owner: str | None = None,
                   expect: Union[str, Mapping[str, str], None] = None,
                   on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Compute the verdict of ``votes`` on ``target``, write its record and write it back.

    One transaction, one commit: the record, the card(s), any Verified card,
    and the derived 被依赖 / 等待依赖 changes. ``reasons`` maps verifiers to
    their reasons; ``mode`` defaults to ``[verdict] mode`` of kb.toml, else
    ``forced``.
    """
    k = open_kb_arg(kb)
    t = target if isinstance(target, Target) else parse_target(target)
    vmap = _votes_arg(votes)
    cfg = k.config.verdict
    mode = mode or str(cfg.get("mode", "forced"))
    if mode not in MODES:
        raise UsageError(f"verdict mode {mode!r} is not valid; use one of: {', '.join(MODES)}")
    min_votes = int(cfg.get("min_votes", 2) or 2)
    reasons = dict(reasons or {})
    unknown = sorted(set(reasons) - set(vmap))
    if unknown:
        raise UsageError(f"reason given for {', '.join(unknown)}, who did not vote; voters: "
                        f"{', '.join(vmap)}")
    # Refuse bad votes before touching anything (accuracy only matters for a split vote).
    if len(vmap) < max(2, min_votes):
        compute_verdict(vmap, {}, mode, min_votes)
    branch = verdict_branch(vmap)
    acc: dict[str, float] = {}
    if branch == "split" and mode == "forced":
        acc = {a.verifier: a.rate for a in verifier_accuracy(load_records(k)).values()}
    v = compute_verdict(vmap, acc, mode, min_votes)
    vote_list = [Vote(n, 0.5 if x is None else x, str(reasons.get(n, "") or "")) for n, x in vmap.items()]

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        kinds = ("problem",) if t.kind == "解法" else ("proposition",)
        o = ws.obj(t.obj_id, kinds)
        if o is None:
            other = ws.obj(t.obj_id, ("problem", "proposition"))
            if other is not None and other.kind == "problem":
                raise CardError(f"{t.obj_id} is a problem; verify one of its solutions: "
                                f"{t.obj_id}#解法N")
            if other is not None:
                raise CardError(f"{t.obj_id} is a proposition; verify {t.obj_id} (bare), "
                                f"{t.obj_id}#证明N or {t.obj_id}#证伪N")
            raise NotFoundError(f"unknown {'problem' if t.kind == '解法' else 'proposition'} "
                            f"{t.obj_id!r}; " + ws.known_hint(kinds))
        if is_final(o):
            raise CardError(f"{t.obj_id} is already settled ({o.status}); its verification is "
                            "final and its Verified card immutable")
        word = "问题" if o.kind == "problem" else "命题"
        if ws.tx.read(ws.verified_rel(word, t.obj_id)) is not None:
            raise CardError(f"{ws.kb.prefix}{ws.verified_rel(word, t.obj_id)} exists although "
                            f"{t.obj_id} is not settled; fix that first (kb verify reports it)")
        if t.kind is not None:
            e = ws.edit(t.obj_id, kinds).entry(t.kind, t.number or 0)
            if e.probability in (0.0, 1.0):
                raise CardError(f"{t} is already decided (概率{_num(e.probability)}); verify "
                                "another entry")
        when = now()
        base = f"{records_dir(ws.kb)}/{t.rid}_{compact_time(when)}"
        rel, i = f"{base}.json", 1
        while ws.tx.read(rel) is not None:
            i += 1
            rel = f"{base}-{i}.json"
        record = {
            "r": t.rid,
            "verdict": _json_num(v),
            "results": [{"verifier": x.verifier, "result": _json_num(x.result),
                         "reason": x.reason} for x in vote_list],
            "transcript": transcript or "",
            "history": list(history),
            "at": iso_time(when),
            "mode": mode,
        }
        ws.tx.write(rel, (json.dumps(record, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
        wb = _Verdict(ws, t, v, vote_list, rel)
        if t.kind == "解法":
            wb.solution()
        elif t.kind is None:
            wb.bare()
        else:
            wb.entry(t.obj_id, t.kind, t.number or 0)
        lines = [f"{t} ({t.rid}): verdict {_num(v)} from {len(vote_list)} votes ({branch}"
                 + (f", {mode}" if branch == "split" else "") + ")",
                 f"  record {ws.kb.prefix}{rel}"] + ["  " + ln for ln in wb.lines]
        data = {"target": str(t), "r": t.rid, "verdict": v, "branch": branch, "mode": mode,
                "votes": {x.verifier: x.result for x in vote_list},
                "weights_from": acc if branch == "split" and mode == "forced" else {},
                "record": ws.kb.prefix + rel, "settled": wb.settled, "verified": wb.verified}
        return lines, data

    return run_op(k, "verdict", f"kb verdict {t.rid} = {_num(v)}", build, ids=[t.obj_id],
                  target_id=t.obj_id, no_commit=no_commit, owner=owner, expect=expect,
                  on_wait=on_wait)


def _json_num(x: float) -> Union[int, float]:
    return int(x) if float(x).is_integer() else x


__all__ = ["compute_verdict", "verdict_branch", "record_verdict", "write_verified_card", "verifier_accuracy",
           "accuracy_table", "load_records", "parse_record", "parse_target", "Target", "Vote",
           "VerificationRecord", "Accuracy", "MODES"]
