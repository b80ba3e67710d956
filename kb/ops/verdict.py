"""Record a verdict and write it back into the cards (``kb verdict``).

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

The rule itself (:func:`kb.research.verdict.compute_verdict`), the record format
and the verifiers' accuracy are pure functions in :mod:`kb.research.verdict`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union

from kb import clock
from kb.errors import NotFoundError, UsageError
from kb.ops.card_edit import CardError
from kb.ops.result import OpResult
from kb.ops.verified import write_verified_card
from kb.ops.workspace import Workspace, run_op
from kb.render.card import fmt_number
from kb.repo import KnowledgeBase, resolve_kb
from kb.research.dependencies import object_final
from kb.research.values import parse_probability
from kb.text import BODY_MAX, check_length, control_char, visible
from kb.research.verdict import (
    MODES,
    Target,
    Vote,
    compute_verdict,
    parse_target,
    verdict_branch,
    verifier_accuracy,
)
from kb.views.verification import load_records, records_dir


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
        if p is None or object_final(p):
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
        out = set(self.ws.idx.judge_problem_ids(pid))
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

def _opp(v: float) -> float:
    """1 - v without binary noise (1 - 0.99 is 0.010000000000000009)."""
    return round(1 - v, 12)


def _num(x: float) -> str:
    return fmt_number(x)


def _votes_arg(votes: Union[Mapping[str, Any], Sequence[tuple[str, Any]]]) -> dict[str, float | None]:
    items = list(votes.items()) if isinstance(votes, Mapping) else list(votes)
    out: dict[str, float | None] = {}
    for name, x in items:
        # A name is one line of the record, the card's entry and the commit: a line's bound,
        # checked first so the refusal below never echoes a pasted page.
        n = check_length(str(name).strip(), "a verifier name")
        # (a name of nothing to see, U+200B, would count as a second verifier nobody can name)
        if not n or re.search(r"[\s=]", n) or control_char(n) or not visible(n):
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

    Raises UsageError for an unknown mode, a malformed target or vote, a reason for someone
    who did not vote, or a reason or transcript longer than :data:`kb.text.BODY_MAX`; NotFoundError for an unknown target; CardError (refused) when the target
    is settled or of the wrong kind; every write also raises LockedError (another owner's lock),
    StaleError (``expect`` no longer matches), ConflictError (the file is dirty or HEAD moved)
    and EnvironmentError_ (git failed, the work tree is not writable); nothing is written then.
    """
    k = resolve_kb(kb)
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
    # A reason becomes a card's entry body and the record keeps it: a body's bound.
    for n, r in reasons.items():
        check_length(str(r or ""), f"the reason of {n}", BODY_MAX)
    check_length(transcript or "", "the transcript", BODY_MAX)
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
        if object_final(o):
            raise CardError(f"{t.obj_id} is already settled ({o.status}); its verification is "
                            "final and its Verified card immutable")
        word = "问题" if o.kind == "problem" else "命题"
        if ws.tx.read(ws.verified_rel(word, t.obj_id)) is not None:
            raise CardError(f"{ws.kb.prefix}{ws.verified_rel(word, t.obj_id)} exists although "
                            f"{t.obj_id} is not settled; fix that first (kb verify reports it)")
        if t.kind is None and o.entries:
            # VIBEMATH-V3 "Verification": a bare proposition is a target only without
            # entries; with them, a bare verdict added a second proof/refutation pair
            # beside the entries the verifiers never judged.
            names = ", ".join(f"{t.obj_id}#{e.kind}{e.number}" for e in o.entries)
            raise CardError(f"{t.obj_id} has entries ({names}); a bare verdict is only for a "
                            "proposition without entries — verify one of its entries")
        if t.kind is not None:
            e = ws.edit(t.obj_id, kinds).entry(t.kind, t.number or 0)
            if e.probability in (0.0, 1.0):
                raise CardError(f"{t} is already decided (概率{_num(e.probability)}); verify "
                                "another entry")
        when = clock.now()
        base = f"{records_dir(ws.kb)}/{t.rid}_{clock.compact_time(when)}"
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
            "at": clock.iso_time(when),
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



__all__ = ["record_verdict"]
