"""MCP tools of the exploration graph (issue 15): the seed's two tools, ``explore_tree``
(read) and ``explore_tree_record`` (write, one commit per call), with the seed's parameter
names (``action``, ``id``, ``depth``, ``parentId``, ``children``, ``from``, ``to``,
``edgeKind``, ``expectedRevision``, ``toActor``, …). Both return
``{"ok": true, "action", "text", "data"}``; a refusal is a tool error whose text is kb's
``{"error": {"message", "exit_code", "kind"}}`` (``STALE_REVISION`` is kind ``stale``).
The surface is static (:mod:`kb.trail.tools`)."""

import inspect
from typing import Annotated, Any, Optional

from pydantic import Field

from kb.mcp.registry import Registry
from kb.repo import KnowledgeBase
from kb.trail.tools import (EXPLORE_TREE_DESCRIPTION, EXPLORE_TREE_RECORD_DESCRIPTION,
                            record_action, view_action)


def explore_tree(kb: KnowledgeBase, action: str = "overview", id: Optional[str] = None,
                 depth: Optional[int] = None, query: Optional[str] = None,
                 limit: Optional[int] = None, archived: bool = False) -> object:
    """Tool ``explore_tree``: a read ``action`` of the exploration graph (overview, node, path,
    …).

    Returns ``{ok, action, text, data}``. Raises UsageError / NotFoundError as
    :func:`kb.trail.tools.view_action`.
    """
    return view_action(action, id=id, depth=depth, query=query, limit=limit, archived=archived,
                       kb=kb)


def explore_tree_record(kb: KnowledgeBase, **params: Any) -> object:
    """Tool ``explore_tree_record``: one write ``action`` of the exploration graph (one commit).

    Returns ``{ok, action, text, data}``. Raises UsageError, NotFoundError, LockedError or
    StaleError (``STALE_REVISION``) as :func:`kb.trail.tools.record_action`.
    """
    # ``from`` is a Python keyword: the parameter is ``from_`` with the alias ``from``.
    if "from_" in params:
        params["from"] = params.pop("from_")
    return record_action(params.pop("action"), kb=kb, **params)


_P = inspect.Parameter
_RECORD_PARAMS: list[tuple[str, Any, Any]] = [
    ("action", str, _P.empty), ("id", Optional[str], None), ("kind", Optional[str], None),
    ("title", Optional[str], None), ("summary", Optional[str], None),
    ("status", Optional[str], None), ("tags", Optional[list[str]], None),
    ("refs", Optional[list[str]], None), ("parentId", Optional[str], None),
    ("children", Optional[list[dict[str, Any]]], None),
    ("from_", Annotated[Optional[str], Field(alias="from")], None), ("to", Optional[str], None),
    ("edgeKind", Optional[str], None), ("note", Optional[str], None),
    ("into", Optional[str], None), ("unarchive", bool, False), ("text", Optional[str], None),
    ("auto", bool, False), ("version", Optional[int], None), ("owner", Optional[str], None),
    ("renew", bool, False), ("steal", bool, False), ("leaseMinutes", Optional[int], None),
    ("toActor", Optional[str], None), ("actor", Optional[str], None),
    ("role", Optional[str], None), ("expectedRevision", Optional[int], None),
]
explore_tree_record.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [_P("kb", _P.POSITIONAL_OR_KEYWORD, annotation=KnowledgeBase)]
    + [_P(n, _P.KEYWORD_ONLY, default=d, annotation=t) for n, t, d in _RECORD_PARAMS],
    return_annotation=object)
explore_tree_record.__annotations__ = {"kb": KnowledgeBase, "return": object,
                                       **{n: t for n, t, _ in _RECORD_PARAMS}}


def register(reg: Registry) -> None:
    """Register this module's tools on ``reg`` (names, descriptions, read/write annotations)."""
    reg.read("explore_tree", explore_tree, EXPLORE_TREE_DESCRIPTION)
    reg.write("explore_tree_record", explore_tree_record, EXPLORE_TREE_RECORD_DESCRIPTION,
              op_result=False)
