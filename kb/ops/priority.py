"""``kb priority adjust``: recompute priorities with one of the Vibe Math modes.

The formulas are :func:`kb.research.priority.priority_targets`; one commit
(or, with ``dry_run``, only the planned edits). Raises
:class:`kb.errors.UsageError` for an unknown mode. Like ``kb refresh`` and
``kb report``, it refuses to commit priorities computed from a file with
uncommitted changes (:meth:`kb.ops.workspace.Workspace.refuse_uncommitted_files`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Union

from kb.errors import UsageError
from kb.ops.result import OpResult
from kb.ops.workspace import Workspace, run_op
from kb.repo import KnowledgeBase
from kb.research.cardview import card_view
from kb.research.priority import (PRIORITY_INPUTS, PRIORITY_MODES, priority_skips,
                                  priority_targets)
from kb.views.brief import load_view


def priority_adjust(kb: Union[KnowledgeBase, str, Path, None] = None, mode: str = "",
                    *, dry_run: bool = False, no_commit: bool = False, owner: str | None = None,
                    on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Recompute priorities with one of :data:`PRIORITY_MODES` (one commit).

    Raises UsageError for an unknown mode, RefusedError when priorities are to change and a
    file the mode reads (:data:`PRIORITY_INPUTS`: the problem cards and direction logs, or the
    proposition cards) has uncommitted changes (unless ``no_commit``): the commit would hold
    priorities computed from a state no commit holds. Every write also raises LockedError
    (another owner's lock), StaleError (``expect`` no longer matches), ConflictError (the file
    is dirty or HEAD moved) and EnvironmentError_ (git failed, the work tree is not writable);
    nothing is written then.
    """
    if mode not in PRIORITY_MODES:
        raise UsageError(f"mode {mode!r} is not valid; use one of: {', '.join(PRIORITY_MODES)}")
    if dry_run:
        _k, view = load_view(kb)
        ch = priority_targets(view, mode)
        sk = priority_skips(view, mode)
        return OpResult.dry("priority.adjust", [f"{i}: 优先级 {o} → {n}" for i, _k2, o, n in ch]
                            + [f"{i}: not scored ({why})" for i, _kd, why in sk],
                            {"mode": mode, "edits": [dict(id=i, kind=kd, old=o, new=n)
                                                        for i, kd, o, n in ch],
                             "skipped": [dict(id=i, kind=kd, reason=why) for i, kd, why in sk]})

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        view = card_view(ws.idx)
        ch = priority_targets(view, mode)
        sk = priority_skips(view, mode)
        if ch:  # every card of the mode is read: the commit must hold what was read
            ws.refuse_uncommitted_files(PRIORITY_INPUTS[mode], "priority adjustment")
        for obj_id, kind, _old, new in ch:
            ws.edit(obj_id, (kind,)).set_anchor("优先级", str(new))
        lines = [f"{i}: 优先级 {o} → {n}" for i, _kd, o, n in ch] or [f"no priority changes ({mode})"]
        lines += [f"{i}: not scored ({why})" for i, _kd, why in sk]
        return lines, {"mode": mode, "edits": [dict(id=i, kind=kd, old=o, new=n)
                                                 for i, kd, o, n in ch],
                       "skipped": [dict(id=i, kind=kd, reason=why) for i, kd, why in sk]}

    return run_op(kb, "priority.adjust", f"kb priority adjust --mode {mode}", build,
                  no_commit=no_commit, owner=owner, on_wait=on_wait)


__all__ = ["priority_adjust"]
