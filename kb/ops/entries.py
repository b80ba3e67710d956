"""Entries: append a 解法 to a problem, a 证明 or 证伪 to a proposition (``kb entry add``).

One :func:`kb.ops.workspace.run_op`; returns the :class:`kb.ops.result.OpResult`
(``number``: the new entry's number, ``target``: ``ID#<kind>N`` for ``kb verdict``).
Raises :class:`kb.errors.UsageError` for a bad kind, title, probability or text,
:class:`kb.ops.card_edit.CardError` for a settled object or a text that would
change the card's structure, :class:`kb.errors.NotFoundError` for an unknown ID.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Union

from kb.errors import NotFoundError, UsageError
from kb.ops.card_edit import ENTRY_KINDS, CardError
from kb.ops.card_input import read_text_arg
from kb.ops.result import OpResult
from kb.ops.workspace import Workspace, run_op
from kb.repo import KnowledgeBase
from kb.research.dependencies import object_final
from kb.research.values import parse_probability
from kb.text import one_line


def add_entry(kb: Union[KnowledgeBase, str, Path, None], obj_id: str, kind: str, title: str,
              probability: Union[float, str] = 0.5, text: str | None = None,
              text_file: str | Path | None = None, *, no_commit: bool = False,
              owner: str | None = None, expect: Union[str, Mapping[str, str], None] = None,
              on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Append a 解法 entry to a problem or a 证明 / 证伪 entry to a proposition (状态 未定论).

    Raises UsageError for an invalid kind or probability, NotFoundError for an unknown ID,
    CardError (refused) for a settled or mismatched card; every write also raises LockedError
    (another owner's lock), StaleError (``expect`` no longer matches), ConflictError (the file
    is dirty or HEAD moved) and EnvironmentError_ (git failed, the work tree is not writable);
    nothing is written then.
    """
    if kind not in ENTRY_KINDS:
        raise UsageError(f"entry kind {kind!r} is not valid; use 解法 (problems), 证明 or 证伪 "
                        "(propositions)")
    title = one_line(title, "entry title")
    prob = parse_probability(probability, "probability")
    body = read_text_arg(text, text_file, "entry text")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        kinds = ("problem",) if kind == "解法" else ("proposition",)
        o = ws.obj(obj_id, kinds)
        if o is None:
            other = ws.obj(obj_id, ("problem", "proposition"))
            if other is not None:
                raise CardError(f"{obj_id} is a {other.kind}; a {other.kind} takes "
                                + ("解法 entries" if other.kind == "problem" else "证明 or 证伪 entries"))
            raise NotFoundError(f"unknown {'problem' if kind == '解法' else 'proposition'} {obj_id!r}; "
                            + ws.known_hint(kinds))
        if object_final(o):
            raise CardError(f"{obj_id} is settled by verification ({o.status}); its record is final")
        e = ws.edit(obj_id, kinds)
        n = e.add_entry(kind, title, prob, "未定论", body)
        return ([f"{obj_id}: new entry {kind} {n}｜{title}｜概率{prob:g} in {ws.kb.prefix}{e.rel}"],
                {"id": obj_id, "kind": kind, "number": n, "target": f"{obj_id}#{kind}{n}",
                 "probability": prob, "path": ws.kb.prefix + e.rel})

    return run_op(kb, "entry.add", f"kb entry add {obj_id}: {kind} {title}", build, ids=[obj_id],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=obj_id, on_wait=on_wait)



__all__ = ["add_entry"]
