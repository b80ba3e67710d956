"""MCP tools of the exploration graph (kb.trail): the seed's ``explore_tree`` and
``explore_tree_record``, with the seed's parameter names (``parentId``, ``from``,
``edgeKind``, ``expectedRevision``, …)."""

from typing import Annotated, Any, Optional

from pydantic import Field

from kb.mcp.registry import Registry
from kb.repo import KnowledgeBase

REQUIRES = "kb.trail"


def explore_tree(kb: KnowledgeBase, action: str = "overview", id: Optional[str] = None,
                 depth: Optional[int] = None, query: Optional[str] = None,
                 limit: Optional[int] = None, archived: bool = False) -> object:
    from kb.trail.tools import view_action

    return view_action(action, id=id, depth=depth, query=query, limit=limit, archived=archived,
                       kb=kb)


def explore_tree_record(
        kb: KnowledgeBase, action: str, id: Optional[str] = None, kind: Optional[str] = None,
        title: Optional[str] = None, summary: Optional[str] = None,
        status: Optional[str] = None, tags: Optional[list[str]] = None,
        refs: Optional[list[str]] = None, parentId: Optional[str] = None,
        children: Optional[list[dict[str, Any]]] = None,
        from_: Annotated[Optional[str], Field(alias="from")] = None, to: Optional[str] = None,
        edgeKind: Optional[str] = None, note: Optional[str] = None, into: Optional[str] = None,
        unarchive: Optional[bool] = None, text: Optional[str] = None,
        auto: Optional[bool] = None, version: Optional[int] = None,
        owner: Optional[str] = None, renew: Optional[bool] = None, steal: Optional[bool] = None,
        leaseMinutes: Optional[int] = None, toActor: Optional[str] = None,
        actor: Optional[str] = None, role: Optional[str] = None,
        expectedRevision: Optional[int] = None) -> object:
    from kb.trail.tools import record_action

    params = dict(id=id, kind=kind, title=title, summary=summary, status=status, tags=tags,
                  refs=refs, parentId=parentId, children=children, to=to, edgeKind=edgeKind,
                  note=note, into=into, unarchive=unarchive, text=text, auto=auto,
                  version=version, owner=owner, renew=renew, steal=steal,
                  leaseMinutes=leaseMinutes, toActor=toActor, actor=actor, role=role,
                  expectedRevision=expectedRevision)
    params["from"] = from_
    return record_action(action, kb=kb, **params)


def register(reg: Registry) -> None:
    from kb.trail.tools import EXPLORE_TREE_DESCRIPTION, EXPLORE_TREE_RECORD_DESCRIPTION

    reg.read("explore_tree", explore_tree, EXPLORE_TREE_DESCRIPTION)
    reg.write("explore_tree_record", explore_tree_record, EXPLORE_TREE_RECORD_DESCRIPTION,
              destructive=True)
