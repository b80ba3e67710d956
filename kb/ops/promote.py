"""``kb promote``: turn valuable undecided propositions into judge problems.

The rule (which propositions, the new ID) is :mod:`kb.research.priority`; one
:func:`kb.ops.workspace.run_op`, one commit, returning an
:class:`kb.ops.result.OpResult` (``promoted``, ``skipped``). Raises
:class:`kb.errors.UsageError` for a bad threshold and
:class:`kb.ops.card_edit.CardError` when a promoted card would be malformed.

A proposition whose card has error diagnostics — those ``kb verify`` reports
for it: the parse's (a malformed entry) and the per-file rules' (KB218, a
probability outside [0, 1], never clamped) — is skipped with its first error:
the new card would copy what cannot be read as written, and kb's own commit
would fail the range check CI runs.

What it commits is computed from every proposition card (the whole card is
copied) and every problem card (the IDs taken, the 判断命题 naming a judge
problem): like ``kb refresh`` and ``kb report`` it refuses while one of them
has uncommitted changes (:meth:`kb.ops.workspace.Workspace.refuse_uncommitted_files`;
not with ``no_commit``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Union

from kb import git
from kb.checks.catalogue import effective_severity
from kb.checks.diagnostics import LightDiagnostic
from kb.checks.file_results import parsed_rule_rows
from kb.model import Entry, Problem
from kb.ops.card_edit import CardEdit, CardError
from kb.ops.result import OpResult
from kb.ops.workspace import Workspace, run_op
from kb.render.card import fmt_number, render_card
from kb.repo import KnowledgeBase
from kb.research.cardview import card_view
from kb.research.dependencies import natural_key
from kb.research.priority import PROMOTE_INPUTS, promoted_id
from kb.research.values import parse_probability


def promote(kb: Union[KnowledgeBase, str, Path, None] = None, threshold: Union[float, str] = 0.7,
            *, no_commit: bool = False, owner: str | None = None,
            on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Turn undecided propositions with 价值/关键性 ≥ ``threshold`` into judge problems.

    A proposition whose card has format errors (:func:`card_errors`) is skipped, named with
    its first error in ``skipped`` and the output lines; nothing is written for it.

    Raises UsageError for a threshold outside [0, 1], CardError (refused) when a promoted card
    would be malformed, RefusedError when something is to be promoted and a proposition or
    problem card has uncommitted changes (unless ``no_commit``): the commit would hold judge
    problems derived from a state no commit holds. Every write also raises LockedError
    (another owner's lock), StaleError (``expect`` no longer matches), ConflictError (the file
    is dirty or HEAD moved) and EnvironmentError_ (git failed, the work tree is not writable);
    nothing is written then.
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
            card = ws.edit(pid, ("proposition",))  # the card: the index keeps no entry text
            errors = card_errors(ws.kb, card)
            if errors:
                first = errors[0]
                where = f"{ws.kb.prefix}{card.rel}:{first.line}"
                reason = (f"{where} {first.code}: {first.message}; {len(errors)} format error(s) in "
                          "all, `kb verify` lists them — fix the card first")
                skipped.append({"id": pid, "reason": reason, "code": first.code,
                                "path": ws.kb.prefix + card.rel, "line": first.line})
                lines.append(f"{pid}: not promoted ({reason})")
                continue
            pm = card.model()
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
        if made:  # every proposition and problem card was read: the commit must hold them
            ws.refuse_uncommitted_files(PROMOTE_INPUTS, "promotion")
        if not made and not skipped:
            lines.append(f"nothing to promote (threshold {th:g})")
        return lines, {"threshold": th, "promoted": made, "skipped": skipped}

    return run_op(kb, "promote", f"kb promote (threshold {th:g})", build, no_commit=no_commit,
                  owner=owner, on_wait=on_wait)


def card_errors(k: KnowledgeBase, card: CardEdit) -> list[LightDiagnostic]:
    """The error diagnostics ``kb verify`` gives ``card`` as it reads now, in line order.

    The parse's diagnostics (what the transaction's format guard reads) and those of the
    per-file rules (KB2xx; KB218: a probability outside [0, 1]) that ``kb verify``, the
    pre-commit hook and ``kb verify --range`` run — the same rules on the same parse
    (:func:`kb.checks.file_results.parsed_rule_rows`) — with kb.toml's severities
    applied, so a rule the KB turned into a warning does not block.
    """
    res = card.result()
    data = card.to_bytes()
    found = [LightDiagnostic.of(d) for d in res.diagnostics]
    found += [LightDiagnostic(path, line, col, code, severity, message)
              for path, _blob, line, col, code, severity, message, _fix
              in parsed_rule_rows(k.config, card.rel, git.blob_id(data), res, data)]
    errors = [d for d in found if effective_severity(d.code, d.severity, k.config) == "error"]
    return sorted(errors, key=lambda d: (d.line, d.col, d.code))


__all__ = ["promote", "card_errors"]
