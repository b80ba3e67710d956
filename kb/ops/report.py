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

    Returns the write's ``OpResult``. Raises UsageError for a malformed date, RefusedError when
    a card or record it is built from has uncommitted changes (unless ``no_commit``); every write also
    raises LockedError (another owner's lock), StaleError (``expect`` no longer matches),
    ConflictError (the file is dirty or HEAD moved) and EnvironmentError_ (git failed, the work
    tree is not writable); nothing is written then.
    """
    shown = report_date(date)

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        if not no_commit:
            _refuse_uncommitted_inputs(ws.kb)
        rel, text = report_text(ws.kb, shown)
        data = text.encode("utf-8")
        changed = ws.tx.read(rel) != data
        ws.tx.write(rel, data)
        line = f"wrote {ws.kb.prefix}{rel}" if changed else \
            f"{ws.kb.prefix}{rel} is up to date (nothing to do)"
        return [line], {"path": ws.kb.prefix + rel, "chars": len(text), "changed": changed}

    return run_op(kb, "report", "kb report: Logs/报告.md", build, no_commit=no_commit, owner=owner,
                  on_wait=on_wait, sync=False)


#: The formats of the cards the report is built from (kb.views.report: the card view of
#: ``load_view``/``brief_data``; :func:`kb.parse.classify`).
_CARD_FORMATS = frozenset({"problem", "proposition", "method", "verified", "direction", "progress"})


def _refuse_uncommitted_inputs(k: KnowledgeBase) -> None:
    """Raise RefusedError when a file the report is built from has uncommitted changes: the
    committed report would describe a state no commit holds (as ``kb dashboard`` refuses).
    Those files are the cards and the verification records (``<logs>/Verification/*.json``,
    :func:`kb.views.verification.load_records`); another file of the logs folder (a scratch
    note) is not read and does not stop it."""
    from kb.merge.drivers import report_path
    from kb.ops.git_state import refuse_uncommitted, uncommitted_files
    from kb.views.verification import records_dir

    own = k.prefix + report_path(k.config.paths["logs"])
    dirty = [p for p in uncommitted_files(k, _CARD_FORMATS, records_dir(k)) if p != own]
    refuse_uncommitted(dirty, "report")


__all__ = ["report"]
