"""``kb refresh``: recompute every problem's 被依赖 and 等待依赖 from the 依赖 lists.

The rules are :mod:`kb.research.dependencies` (the same the card writers apply
to the cards they touch, and rule KB216 checks).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Union

from kb.ops.result import OpResult
from kb.ops.workspace import Workspace, run_op
from kb.parse.common import dump_list
from kb.repo import KnowledgeBase
from kb.research import dependencies
from kb.research.cardview import CardView, card_view
from kb.research.dependencies import natural_key
from kb.views.brief import load_view


def derived_changes(view: CardView) -> list[tuple[str, str, str, str]]:
    """``(id, key, old, new)`` of every 被依赖 / 状态 that disagrees with the 依赖 lists."""
    rdeps = dependencies.reverse_dependencies(
        {qid: q.get("depends", ()) for qid, q in view.problems.items()})
    out = []
    for qid in sorted(view.problems, key=natural_key):
        q = view.problems[qid]
        want = rdeps[qid]
        if list(q.get("depended_by", ())) != want:
            out.append((qid, "被依赖", dump_list(q.get("depended_by", ())), dump_list(want)))
        status = q.get("status")
        move = dependencies.waiting_move(status, q.get("priority"),
                                         all(view.settled(d) for d in q.get("depends", ())))
        if move:
            out.append((qid, "状态", status, move))
    return out


def refresh(kb: Union[KnowledgeBase, str, Path, None] = None, *, check: bool = False,
            no_commit: bool = False, owner: str | None = None,
            on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Recompute every problem's 被依赖 and 等待依赖; with ``check`` only report.

    Returns the write's ``OpResult`` (with ``check``: the changes it would make, nothing
    written). Raises RefusedError when something is to change and a problem or proposition
    card has uncommitted changes to its 依赖 or settled state (unless ``no_commit``): the
    commit would hold derived fields computed from a state no commit holds, its cards
    contradicting them (KB216); nothing is written then. Every write also raises LockedError
    (another owner's lock), StaleError (``expect`` no longer matches), ConflictError (the file
    is dirty or HEAD moved) and EnvironmentError_ (git failed, the work tree is not writable);
    nothing is written then.
    """
    if check:
        _k, view = load_view(kb)
        changes = derived_changes(view)
        return OpResult.dry("refresh", [f"{i}: {key} {old} → {new}" for i, key, old, new in changes],
                            {"edits": [dict(id=i, key=key, old=old, new=new)
                                       for i, key, old, new in changes]})

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        changes = derived_changes(card_view(ws.idx))
        if changes:  # every 依赖 and settled state is read: the commit must hold what was read
            for obj_id, u in ws.uncommitted_inputs().items():
                if u.depends_differ():
                    ws.note_uncommitted(obj_id, u.what("依赖"))
                elif u.settled_differs():
                    ws.note_uncommitted(obj_id, u.what("settled or not"))
        for obj_id, key, _old, new in changes:
            ws.edit(obj_id, ("problem",)).set_anchor(key, new)
        return ([f"{i}: {key} {old} → {new}" for i, key, old, new in changes],
                {"edits": [dict(id=i, key=key, old=old, new=new) for i, key, old, new in changes]})

    return run_op(kb, "refresh", "kb refresh: 被依赖 and 等待依赖", build, no_commit=no_commit,
                  owner=owner, on_wait=on_wait, sync=False)


__all__ = ["refresh", "derived_changes"]
