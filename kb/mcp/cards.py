"""MCP tools of the research cards: ``kb problem``, ``propo``, ``method``, ``entry``,
``verdict``, ``promote``, ``priority``, ``refresh``, ``report`` (Vibe Math v3 formats).

List arguments (``depends``, ``related``) are lists of IDs; ``expect`` is the blob
id of the card the tool edits (refused with kind ``stale`` when it changed).
"""

from typing import Optional

from kb.mcp.registry import NumberText, Registry, number_text
from kb.repo import KnowledgeBase


def problem_add(kb: KnowledgeBase, id: str, statement: str, title: Optional[str] = None,
                priority: NumberText = "1", depends: Optional[list[str]] = None, source: str = "原始",
                motivation: Optional[str] = None, plan: str = "待调度", no_commit: bool = False,
                owner: Optional[str] = None) -> object:
    """Tool ``problem_add``: create problem card ``id`` with ``statement``; ``depends`` is a
    list of IDs (:func:`kb.ops.problems.add_problem`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.problems import add_problem

    return add_problem(kb, id, statement, title=title, priority=number_text(priority),
                       depends=depends or [],
                       source=source, motivation=motivation, plan=plan, no_commit=no_commit,
                       owner=owner)


def problem_status(kb: KnowledgeBase, id: str, status: str, no_commit: bool = False,
                   owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``problem_status``: set the 状态 of problem ``id``
    (:func:`kb.ops.problems.set_problem_status`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.problems import set_problem_status

    return set_problem_status(kb, id, status, no_commit=no_commit, owner=owner, expect=expect)


def problem_plan(kb: KnowledgeBase, id: str, next_step: str, no_commit: bool = False,
                 owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``problem_plan``: set the 计划 (one line) of problem ``id``
    (:func:`kb.ops.problems.set_plan`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.problems import set_plan

    return set_plan(kb, id, next_step, no_commit=no_commit, owner=owner, expect=expect)


def problem_priority(kb: KnowledgeBase, id: str, priority: NumberText, no_commit: bool = False,
                     owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``problem_priority``: set the 优先级 (an integer, or its text) of ``id``
    (:func:`kb.ops.problems.set_priority`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.problems import set_priority

    return set_priority(kb, id, number_text(priority), no_commit=no_commit, owner=owner,
                        expect=expect)


def propo_add(kb: KnowledgeBase, category: str, id: str, statement: str,
              title: Optional[str] = None, prob: NumberText = "0.5", value: NumberText = "0.5",
              depends: Optional[list[str]] = None, priority: NumberText = "1",
              source_problem: Optional[str] = None, source_direction: Optional[str] = None,
              new_category: bool = False, no_commit: bool = False,
              owner: Optional[str] = None) -> object:
    """Tool ``propo_add``: create proposition ``id`` in ``category``; ``prob`` and ``value`` are
    numbers in [0, 1] (JSON numbers or their text) (:func:`kb.ops.propositions.add_proposition`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.propositions import add_proposition

    return add_proposition(kb, category, id, statement, title=title,
                           probability=number_text(prob), value=number_text(value),
                           depends=depends or [], priority=number_text(priority),
                           source_problem=source_problem, source_direction=source_direction,
                           new_category=new_category, no_commit=no_commit, owner=owner)


def entry_add(kb: KnowledgeBase, id: str, kind: str, title: str, text: str,
              prob: NumberText = "0.5",
              no_commit: bool = False, owner: Optional[str] = None,
              expect: Optional[str] = None) -> object:
    """Tool ``entry_add``: append an entry of ``kind`` to problem or proposition ``id``
    (:func:`kb.ops.entries.add_entry`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.entries import add_entry

    return add_entry(kb, id, kind, title, number_text(prob), text=text, no_commit=no_commit,
                     owner=owner,
                     expect=expect)


def method_add(kb: KnowledgeBase, id: str, name: str, type: str = "方法",
               parent: Optional[str] = None, scenario: str = "", content: str = "",
               related: Optional[list[str]] = None, no_commit: bool = False,
               owner: Optional[str] = None) -> object:
    """Tool ``method_add``: create method card ``id`` called ``name``
    (:func:`kb.ops.methods.add_method`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.methods import add_method

    return add_method(kb, id, name, type=type, parent=parent, scenario=scenario, content=content,
                      related=related or [], no_commit=no_commit, owner=owner)


def method_apply(kb: KnowledgeBase, id: str, effect: str, problem: str,
                 direction: Optional[str] = None, no_commit: bool = False,
                 owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``method_apply``: record an application of method ``id`` to ``problem``
    (:func:`kb.ops.methods.apply_method`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.methods import apply_method

    return apply_method(kb, id, problem, effect, direction=direction, no_commit=no_commit,
                        owner=owner, expect=expect)


def method_improve(kb: KnowledgeBase, id: str, reason: str, text: str, no_commit: bool = False,
                   owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``method_improve``: record an improvement of method ``id``
    (:func:`kb.ops.methods.improve_method`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.methods import improve_method

    return improve_method(kb, id, reason, text=text, no_commit=no_commit, owner=owner,
                          expect=expect)


def verdict(kb: KnowledgeBase, target: str, vote: dict[str, float],
            reason: Optional[dict[str, str]] = None, mode: Optional[str] = None,
            transcript: Optional[str] = None, no_commit: bool = False,
            owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``verdict``: record the verifiers' ``vote`` (name -> probability in [0, 1]) on
    ``target`` (:func:`kb.ops.verdict.record_verdict`); ``expect``: the target card's blob id.

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.verdict import record_verdict

    return record_verdict(kb, target, vote, reason or {}, mode, transcript=transcript,
                          no_commit=no_commit, owner=owner, expect=expect)


def promote(kb: KnowledgeBase, threshold: NumberText = "0.7", no_commit: bool = False,
            owner: Optional[str] = None) -> object:
    """Tool ``promote``: promote the propositions whose probability reaches ``threshold`` (a
    number, or its text) (:func:`kb.ops.promote.promote`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.promote import promote as run

    return run(kb, number_text(threshold), no_commit=no_commit, owner=owner)


def priority_adjust(kb: KnowledgeBase, mode: str, dry_run: bool = False, no_commit: bool = False,
                    owner: Optional[str] = None) -> object:
    """Tool ``priority_adjust``: recompute priorities by ``mode`` (``dry_run`` writes nothing)
    (:func:`kb.ops.priority.priority_adjust`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.priority import priority_adjust as run

    return run(kb, mode, dry_run=dry_run, no_commit=no_commit, owner=owner)


def refresh(kb: KnowledgeBase, check: bool = False, no_commit: bool = False,
            owner: Optional[str] = None) -> object:
    """Tool ``refresh``: recompute the derived fields (被依赖, 等待依赖); ``check`` only reports
    (:func:`kb.ops.refresh.refresh`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.refresh import refresh as run

    return run(kb, check=check, no_commit=no_commit, owner=owner)


def report(kb: KnowledgeBase, date: Optional[str] = None, no_commit: bool = False,
           owner: Optional[str] = None) -> object:
    """Tool ``report``: write the day's report (``date`` YYYY-MM-DD, default today)
    (:func:`kb.ops.report.report`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.report import report as run

    return run(kb, date, no_commit=no_commit, owner=owner)


def register(reg: Registry) -> None:
    """Register this module's tools on ``reg`` (names, descriptions, read/write annotations)."""
    reg.write("problem_add", problem_add, "kb problem add: create problem card `id` with "
              "`statement` (状态 求解中, or 等待依赖 while a dependency is unsettled).")
    reg.write("problem_status", problem_status, "kb problem status: set problem `id` to "
              "`status` (原始 求解中 等待依赖 死路; 已解决 only through a verdict).",
              destructive=True, idempotent=True)
    reg.write("problem_plan", problem_plan, "kb problem plan: set the 计划 (next step) of "
              "problem `id`.", destructive=True, idempotent=True)
    reg.write("problem_priority", problem_priority, "kb problem priority: set the priority of "
              "problem or proposition `id` (an integer, smaller first, or never).",
              destructive=True, idempotent=True)
    reg.write("propo_add", propo_add, "kb propo add: create proposition `id` in `category` "
              "(a folder under Propos/; new_category to create one).")
    reg.write("entry_add", entry_add, "kb entry add: append an entry (kind 解法 to a problem, "
              "证明 or 证伪 to a proposition) with `title`, `text` and probability `prob`.")
    reg.write("method_add", method_add, "kb method add: create method card `id` called `name`.")
    reg.write("method_apply", method_apply, "kb method apply: record an application of method "
              "`id` to `problem` with its `effect`.")
    reg.write("method_improve", method_improve, "kb method improve: record an improvement "
              "(vN, `reason`, `text`) of method `id`.")
    reg.write("verdict", verdict, "kb verdict: verify `target` (ID#解法N, ID#证明N, ID#证伪N or "
              "a bare proposition ID) with the verifiers' votes {name: result in [0,1]} (two or "
              "more); settles the object at 1 or 0 with an immutable Verified card.")
    reg.write("promote", promote, "kb promote: turn undecided propositions whose 价值/关键性 "
              "reaches `threshold` into judge problems.", idempotent=True)
    reg.write("priority_adjust", priority_adjust, "kb priority adjust: recompute priorities with "
              "`mode` (dry_run: only report).", destructive=True, idempotent=True)
    reg.write("refresh", refresh, "kb refresh: recompute 被依赖 and 等待依赖 from the 依赖 lists "
              "(check: only report).", idempotent=True)
    reg.write("report", report, "kb report: write Logs/报告.md (one commit; none when current).",
              destructive=True, idempotent=True)
