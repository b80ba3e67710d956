"""Problems: create one, set its status, plan and priority (``kb problem``).

The write side of the problem cards (VIBEMATH-V3.md ``Problems/<qid>.md``).
Each function is one :func:`kb.ops.workspace.run_op` (one transaction, one
commit) and returns its :class:`kb.ops.result.OpResult`. Bad arguments raise
:class:`kb.errors.UsageError` (exit 2), refusals :class:`kb.ops.card_edit.CardError`
(exit 1), an unknown ID :class:`kb.errors.NotFoundError`, a taken ID
:class:`kb.errors.ConflictError`, a stale ``expect`` :class:`kb.errors.StaleError`;
nothing is written then.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union

from kb.errors import UsageError
from kb.fileio import read_regular
from kb.model import Problem
from kb.ops.card_edit import CardError
from kb.ops.card_input import check_new_id, read_text_arg, title_from
from kb.ops.result import OpResult
from kb.ops.verified import write_verified_card
from kb.ops.workspace import Workspace, check_depends, check_free_id, run_op
from kb.render.card import render_card
from kb.repo import KnowledgeBase
from kb.research.dependencies import natural_key, object_final
from kb.research.values import parse_priority_arg
from kb.research.verdict import read_record
from kb.text import one_line
from kb.views.verification import records_dir
from kb.vocab import PROBLEM_SOURCE, PROBLEM_STATUS


def add_problem(kb: Union[KnowledgeBase, str, Path, None], qid: str, statement: str,
                title: str | None = None, priority: Union[int, str] = 1,
                depends: Sequence[str] = (), source: str = "原始", motivation: str | None = None,
                *, plan: str = "待调度", formal: str | None = None, no_commit: bool = False,
                owner: str | None = None, expect: Union[str, Mapping[str, str], None] = None,
                on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Create ``Problems/<qid>.md`` (status 求解中, or 等待依赖 while a dependency is unsettled).

    Raises UsageError for an invalid ID, source or priority, ConflictError when the card exists,
    CardError (refused) when the statement would change the card's structure; every write also
    raises LockedError (another owner's lock), StaleError (``expect`` no longer matches),
    ConflictError (the file is dirty or HEAD moved) and EnvironmentError_ (git failed, the work
    tree is not writable); nothing is written then.
    """
    check_new_id(qid, "problem ID")
    statement = read_text_arg(statement, None, "statement")
    title = one_line(title, "title") if title is not None else title_from(statement)
    prio = parse_priority_arg(priority)
    if source not in PROBLEM_SOURCE:
        raise UsageError(f"source {source!r} is not valid; use one of: {', '.join(PROBLEM_SOURCE)}")
    plan = one_line(plan, "plan", required=False)
    formal_v = one_line(formal, "formal statement", required=False) if formal else None
    motivation_v = read_text_arg(motivation, None, "motivation", required=False) if motivation else ""

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        check_free_id(ws, qid)
        deps = check_depends(ws, depends, qid)
        ready = all(ws.dep_settled(d) for d in deps)
        status = "求解中" if ready or prio == "never" else "等待依赖"
        anchors: dict[str, str] = {}
        if formal_v:
            anchors["形式化"] = formal_v
        if motivation_v:
            anchors["来源与动机"] = motivation_v
        rel = ws.problem_rel(qid)
        obj = Problem(id=qid, path=rel, line=1, title=title, status=status, priority=prio,
                      depends=deps, depended_by=tuple(sorted(ws.dependants(qid), key=natural_key)),
                      source=source, plan=plan, statement=statement, anchors=anchors)
        e = ws.create(rel, "problem", render_card(obj), qid)
        got = e.model()
        if got.statement != statement.strip() or got.entries:
            raise CardError("the statement would change the structure of the card (a line "
                            "starting with '#' or an unclosed code fence); use '#### ' or close it")
        return ([f"{qid}: new problem {ws.kb.prefix}{rel} ({status}, 优先级 {prio})"],
                {"id": qid, "path": ws.kb.prefix + rel, "status": status, "priority": prio,
                 "depends": list(deps)})

    return run_op(kb, "problem.add", f"kb problem add {qid}: {title}", build, ids=[qid],
                  no_commit=no_commit, owner=owner, expect=expect, on_wait=on_wait)


def set_problem_status(kb: Union[KnowledgeBase, str, Path, None], qid: str, status: str, *,
                       no_commit: bool = False, owner: str | None = None,
                       expect: Union[str, Mapping[str, str], None] = None,
                       on_wait: Callable[[str], None] | None = None) -> OpResult:
    """``状态`` of a problem: 原始, 求解中, 等待依赖 or 死路.

    已解决 is accepted only for a problem that already holds a solution at 概率1
    (e.g. a card Vibe Math wrote without closing it) whose verification record
    (``r-<qid>-sN`` at verdict 1) is in the records folder: it is closed as a verdict
    would (优先级 never, Verified card); otherwise a verdict settles it (KB312 refuses
    a problem solved without its record).

    Raises UsageError for an unknown status, NotFoundError for an unknown ID, CardError
    (refused) for a move the dependency rules forbid or a settled problem; every write also
    raises LockedError (another owner's lock), StaleError (``expect`` no longer matches),
    ConflictError (the file is dirty or HEAD moved) and EnvironmentError_ (git failed, the work
    tree is not writable); nothing is written then.
    """
    if status not in PROBLEM_STATUS:
        raise UsageError(f"status {status!r} is not valid; use one of: {', '.join(PROBLEM_STATUS)}")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        q = ws.require(qid, ("problem",), "problem")
        if q.status == status:
            return [f"{qid}: already {status}"], {"id": qid, "status": status, "changed": False}
        if q.status == "已解决":
            raise CardError(f"{qid} is 已解决 (settled by verification); its status is final")
        if status == "已解决":
            e = ws.edit(qid, ("problem",))
            at_one = [x.number for x in e.model().entries if x.kind == "解法" and x.probability == 1]
            if not at_one:
                raise CardError(f"{qid} becomes 已解决 through a verdict of 1 on a solution "
                                f"(kb verdict {qid}#解法N --vote …), and it has no solution at 概率1; "
                                "use one of: 原始, 求解中, 等待依赖, 死路")
            if not _recorded_solutions(ws.kb, qid) & set(at_one):
                folder = records_dir(ws.kb)
                raise CardError(
                    f"{qid}'s solution at 概率1 ({', '.join(f'解法 {n}' for n in at_one)}) has no "
                    f"verification record in {ws.kb.prefix}{folder}/ (r-{qid}-sN at verdict 1), and "
                    f"kb verify refuses a problem solved without one (KB312): commit the record the "
                    f"verdict wrote (Vibe Math's {folder}/r-{qid}-sN_<time>.json) first, or close it "
                    f"by hand in a commit with the trailer `Kb-Override: {qid} <reason>`")
            e.set_anchor("状态", "已解决")
            e.set_anchor("优先级", "never")
            rel = write_verified_card(ws, qid, "问题")
            lines = [f"{qid}: 状态 {q.status} → 已解决, 优先级 never (its solution at 概率1)"]
            if rel:
                lines.append(f"{qid}: Verified card {ws.kb.prefix}{rel}")
            return lines, {"id": qid, "status": status, "changed": True}
        unsettled = [d for d in q.depends if not ws.dep_settled(d)]
        if status == "求解中" and unsettled and q.priority != "never":
            raise CardError(f"{qid} depends on unsettled {', '.join(unsettled)}; it stays 等待依赖 "
                            "until they settle")
        if status == "等待依赖" and not unsettled:
            raise CardError(f"{qid} has no unsettled dependency; use 求解中 (or add a dependency)")
        ws.edit(qid, ("problem",)).set_anchor("状态", status)
        return [f"{qid}: 状态 {q.status} → {status}"], {"id": qid, "status": status, "changed": True}

    return run_op(kb, "problem.status", f"kb problem status {qid} {status}", build, ids=[qid],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=qid, on_wait=on_wait)


def _recorded_solutions(k: KnowledgeBase, qid: str) -> set[int]:
    """The numbers N of ``qid``'s solutions that a verification record in the working tree
    (``r-<qid>-sN``, named so) settled at 1: what KB312 accepts a problem solved by."""
    folder = k.root / records_dir(k)
    try:
        names = sorted(p for p in folder.glob("*.json") if p.name.startswith(f"r-{qid}-s")) \
            if folder.is_dir() else []
    except OSError:
        return set()
    out = set()
    for p in names:
        try:
            rec = read_record(f"{records_dir(k)}/{p.name}", read_regular(p))
        except OSError:
            continue
        m = re.fullmatch(re.escape(f"r-{qid}-s") + r"(\d+)", getattr(rec, "r", "") or "")
        if m and getattr(rec, "verdict", None) == 1:
            out.add(int(m.group(1)))
    return out


def set_plan(kb: Union[KnowledgeBase, str, Path, None], qid: str, plan: str, *,
             no_commit: bool = False, owner: str | None = None,
             expect: Union[str, Mapping[str, str], None] = None,
             on_wait: Callable[[str], None] | None = None) -> OpResult:
    """``计划`` of a problem (one line: the next step).

    Returns the write's ``OpResult``. Raises UsageError for an empty or multi-line plan,
    NotFoundError for an unknown problem; every write also raises LockedError (another owner's
    lock), StaleError (``expect`` no longer matches), ConflictError (the file is dirty or HEAD
    moved) and EnvironmentError_ (git failed, the work tree is not writable); nothing is written
    then.
    """
    plan = one_line(plan, "plan")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        ws.require(qid, ("problem",), "problem")
        ws.edit(qid, ("problem",)).set_anchor("计划", plan)
        return [f"{qid}: 计划 {plan}"], {"id": qid, "plan": plan}

    return run_op(kb, "problem.plan", f"kb problem plan {qid}", build, ids=[qid],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=qid, on_wait=on_wait)


def set_priority(kb: Union[KnowledgeBase, str, Path, None], obj_id: str, priority: Union[int, str],
                 *, no_commit: bool = False, owner: str | None = None,
                 expect: Union[str, Mapping[str, str], None] = None,
                 on_wait: Callable[[str], None] | None = None) -> OpResult:
    """``优先级`` of a problem or proposition (an integer, smaller first, or never).

    Raises UsageError for an invalid priority, NotFoundError for an unknown ID, CardError
    (refused) for a settled card; every write also raises LockedError (another owner's lock),
    StaleError (``expect`` no longer matches), ConflictError (the file is dirty or HEAD moved)
    and EnvironmentError_ (git failed, the work tree is not writable); nothing is written then.
    """
    prio = parse_priority_arg(priority)

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        o = ws.require(obj_id, ("problem", "proposition"), "problem or proposition")
        if object_final(o):
            raise CardError(f"{obj_id} is settled by verification; its priority stays never")
        if str(o.priority) == str(prio):  # nothing to write: say so, not "12 → 12"
            return [f"{obj_id}: 优先级 is {prio} already"], {"id": obj_id, "priority": prio}
        ws.edit(obj_id, ("problem", "proposition")).set_anchor("优先级", str(prio))
        return [f"{obj_id}: 优先级 {o.priority} → {prio}"], {"id": obj_id, "priority": prio}

    return run_op(kb, "priority.set", f"kb problem priority {obj_id} {prio}", build, ids=[obj_id],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=obj_id, on_wait=on_wait)



__all__ = ["add_problem", "set_problem_status", "set_plan", "set_priority"]
