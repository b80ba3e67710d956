"""MCP tools of the hypothesis tree and experiments: ``kb hyp``, ``kb exp``, ``kb dashboard``.

Each tool is one transaction and one commit (``no_commit`` leaves it
uncommitted); ``expect`` is the blob id the caller read of the file it edits
(``tree.md`` or the experiment), refused with kind ``stale`` when it changed.
"""

from typing import Optional

from kb.mcp.registry import Registry
from kb.repo import KnowledgeBase


def hyp_add(kb: KnowledgeBase, statement: str, parent: Optional[str] = None,
            no_commit: bool = False, owner: Optional[str] = None,
            expect: Optional[str] = None) -> object:
    """Tool ``hyp_add``: add a hypothesis with the next free ID under ``parent``
    (:func:`kb.ops.hypotheses.add_hypothesis`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.hypotheses import add_hypothesis

    return add_hypothesis(kb, statement, parent, no_commit=no_commit, owner=owner, expect=expect)


def hyp_status(kb: KnowledgeBase, id: str, status: str, force: bool = False,
               reason: Optional[str] = None, no_commit: bool = False, owner: Optional[str] = None,
               expect: Optional[str] = None) -> object:
    """Tool ``hyp_status``: move hypothesis ``id`` to ``status`` (``force`` with ``reason`` for
    a move the rules forbid) (:func:`kb.ops.hypotheses.set_status`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.hypotheses import set_status

    return set_status(kb, id, status, force, reason, no_commit=no_commit, owner=owner,
                      expect=expect)


def hyp_edit(kb: KnowledgeBase, id: str, statement: str, reason: str, no_commit: bool = False,
             owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``hyp_edit``: correct the statement of hypothesis ``id`` (an override with
    ``reason``) (:func:`kb.ops.hypotheses.edit_statement`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.hypotheses import edit_statement

    return edit_statement(kb, id, statement, reason, no_commit=no_commit, owner=owner,
                          expect=expect)


def hyp_evidence(kb: KnowledgeBase, id: str, experiment: str, no_commit: bool = False,
                 owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``hyp_evidence``: append ``experiment`` to the Evidence of hypothesis ``id``
    (:func:`kb.ops.hypotheses.add_evidence`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.hypotheses import add_evidence

    return add_evidence(kb, id, experiment, no_commit=no_commit, owner=owner, expect=expect)


def exp_new(kb: KnowledgeBase, hyp: str, action: str, goal: Optional[str] = None,
            date: Optional[str] = None, no_commit: bool = False,
            owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``exp_new``: create the next experiment file for hypothesis ``hyp`` (``date``
    YYYY-MM-DD) (:func:`kb.ops.experiments.new_experiment`); ``expect`` is tree.md's blob
    (the hypothesis moves 待验 → 进行中 there).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.experiments import new_experiment

    return new_experiment(kb, hyp, action, goal, date=date, no_commit=no_commit, owner=owner,
                          expect=expect)


def exp_log(kb: KnowledgeBase, id: str, text: str, no_commit: bool = False,
            owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``exp_log``: append ``text`` to the 执行记录 of experiment ``id``
    (:func:`kb.ops.experiments.log`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.experiments import log

    return log(kb, id, text, no_commit=no_commit, owner=owner, expect=expect)


def exp_update(kb: KnowledgeBase, id: str, text: str, section: str, no_commit: bool = False,
               owner: Optional[str] = None, expect: Optional[str] = None) -> object:
    """Tool ``exp_update``: fill design field ``section`` (目标 / 方法 / 预期) of experiment ``id``
    (:func:`kb.ops.experiments.update_section`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.experiments import update_section

    return update_section(kb, id, section, text, no_commit=no_commit, owner=owner, expect=expect)


def exp_result(kb: KnowledgeBase, id: str, data: str, conclusion: str, reason: str,
               no_commit: bool = False, owner: Optional[str] = None,
               expect: Optional[str] = None) -> object:
    """Tool ``exp_result``: record the result of experiment ``id`` (``conclusion`` 支持 / 推翻 /
    不确定) (:func:`kb.ops.experiments.record_result`).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.experiments import record_result

    return record_result(kb, id, data, conclusion, reason, no_commit=no_commit, owner=owner,
                         expect=expect)


def dashboard(kb: KnowledgeBase, no_commit: bool = False, owner: Optional[str] = None,
              expect: Optional[str] = None) -> object:
    """Tool ``dashboard``: regenerate DASHBOARD.md and commit it
    (:func:`kb.ops.dashboard.refresh_dashboard`); ``expect`` is DASHBOARD.md's blob.

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.ops.dashboard import refresh_dashboard

    return refresh_dashboard(kb, no_commit=no_commit, owner=owner, expect=expect)


def dashboard_check(kb: KnowledgeBase) -> object:
    """Tool ``dashboard_check``: ``{path, stale, exists}`` of DASHBOARD.md (nothing written).

    Raises EnvironmentError_ when the KB cannot be read.
    """
    from kb.ops.dashboard import is_stale

    res = is_stale(kb.root)
    return {"path": res.path, "stale": res.stale, "exists": res.exists}


def register(reg: Registry) -> None:
    """Register this module's tools on ``reg`` (names, descriptions, read/write annotations)."""
    reg.write("hyp_add", hyp_add, "kb hyp add: add a hypothesis (待验) to tree.md with the next "
              "free ID (H<n>, or <parent>.<n>). One commit; returns the write result.")
    reg.write("hyp_status", hyp_status, "kb hyp status: move hypothesis `id` to `status` (待验 "
              "进行中 被支持 被推翻, or untested in-progress supported refuted); a move the rules "
              "forbid needs force and reason.", destructive=True, idempotent=True)
    reg.write("hyp_edit", hyp_edit, "kb hyp edit: correct the statement of hypothesis `id` (an "
              "override recorded with `reason`).", destructive=True, idempotent=True)
    reg.write("hyp_evidence", hyp_evidence, "kb hyp evidence: append `experiment` to the "
              "Evidence of hypothesis `id` (append only).", idempotent=True)
    reg.write("exp_new", exp_new, "kb exp new: create experiments/E<next>.md for hypothesis "
              "`hyp` with the short `action`; the hypothesis moves 待验 → 进行中.")
    reg.write("exp_log", exp_log, "kb exp log: append `text` to the 执行记录 of experiment `id`.")
    reg.write("exp_update", exp_update, "kb exp update: fill design field `section` (目标 / 方法 "
              "/ 预期) of experiment `id` with `text`.", destructive=True, idempotent=True)
    reg.write("exp_result", exp_result, "kb exp result: record the result of experiment `id` "
              "(data, conclusion 支持|推翻|不确定, reason); final once recorded.")
    reg.write("dashboard", dashboard, "kb dashboard: regenerate DASHBOARD.md and commit it.",
              destructive=True, idempotent=True)
    reg.read("dashboard_check", dashboard_check, "kb dashboard --check: whether DASHBOARD.md "
             "is stale (nothing written).")
