"""``kb report``: write ``Logs/报告.md`` (text from :mod:`kb.views.report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Union

from kb.ops.result import OpResult
from kb.ops.workspace import Workspace, run_op
from kb.repo import KnowledgeBase
from kb.views.report import report_date, report_text


def report(kb: Union[KnowledgeBase, str, Path, None] = None, date: str | None = None, *,
           no_commit: bool = False, owner: str | None = None,
           on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Write ``Logs/报告.md`` (one commit; nothing when it is already up to date).

    Returns the write's ``OpResult``. Raises UsageError for a malformed date; every write also
    raises LockedError (another owner's lock), StaleError (``expect`` no longer matches),
    ConflictError (the file is dirty or HEAD moved) and EnvironmentError_ (git failed, the work
    tree is not writable); nothing is written then.
    """
    shown = report_date(date)

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        rel, text = report_text(ws.kb, shown)
        ws.tx.write(rel, text.encode("utf-8"))
        return [f"wrote {ws.kb.prefix}{rel}"], {"path": ws.kb.prefix + rel, "chars": len(text)}

    return run_op(kb, "report", "kb report: Logs/报告.md", build, no_commit=no_commit, owner=owner,
                  on_wait=on_wait, sync=False)



__all__ = ["report"]
