"""The seed's two tools as library entry points: ``explore_tree`` (read) and
``explore_tree_record`` (write), a static surface for kb's MCP server.

Parameter names are the seed's (``action``, ``id``, ``depth``, ``parentId``,
``children``, ``from``, ``to``, ``edgeKind``, ``expectedRevision``, ``toActor``,
…); :data:`EXPLORE_TREE_SCHEMA` and :data:`EXPLORE_TREE_RECORD_SCHEMA` are their
JSON Schemas, fixed (they never depend on the graph: the tool surface is the
same before and after any recording, so a model's prompt cache survives).
Register them in an MCP server in one line each, e.g.::

    server.tool(name="explore_tree", description=EXPLORE_TREE_DESCRIPTION)(explore_tree)

Both return a JSON-ready dict and never raise for a refused or bad call:

* success: ``{"ok": true, "action": …, "text": <short text>, "data": <view dict
  or recording result>}``;
* failure: ``{"ok": false, "action": …, "error": {"code", "kind", "message",
  …}}`` — ``code`` the seed's word (``STALE_REVISION`` with
  ``current_version``, ``current_digest``, ``updated_by``; ``OUT_OF_SCOPE``;
  ``LEASE_EXPIRED``; ``NOT_FOUND``; ``USAGE``; …).

``kb`` (keyword) names the KB (a path or a :class:`kb.repo.KnowledgeBase`;
default: the current directory).
"""

from __future__ import annotations

from typing import Any

from kb.errors import KbError, UsageError
from kb.numbers import quoted
from kb.trail.model import (DEFAULT_LEASE_SECONDS, EDGE_KINDS, KINDS, MAX_DIGEST,
                            MAX_LEASE_SECONDS, MAX_SUMMARY, MAX_TITLE, STATUSES)

VIEW_ACTIONS = ("overview", "trunk", "brief", "frontier", "stats", "find", "node", "path", "tree",
                "subtree")
RECORD_ACTIONS = ("add", "link", "set", "move", "merge", "promote", "archive", "digest",
                  "rollback", "assign", "handoff")

EXPLORE_TREE_DESCRIPTION = (
    "Read the shared exploration graph (goal, topics, questions, hypotheses, evidence, "
    "decisions, dead ends, conclusions). action: overview (default) | trunk | brief (≤400 chars) "
    "| frontier (next steps + avoid) | stats | find (query) | node (id) | path (id) | tree "
    "(id?, depth, default 3) | subtree (id). Read before opening a new direction.")
EXPLORE_TREE_RECORD_DESCRIPTION = (
    "Record into the shared exploration graph (each call is one git commit). action: add "
    "(kind, title, summary?, parentId? — omitted or '' = new root, children? ≤20) | link (from, "
    "to, edgeKind, note?) | set (id, status/title/summary/tags/refs) | move (id, parentId) | "
    "merge (id, into) | promote (id) | archive (id, unarchive?) | digest (id, text? or auto) | "
    "rollback (id, version: 0 newest) | assign (id, owner — null releases, renew?, steal?, "
    "leaseMinutes?) | handoff (id, toActor). Writes take expectedRevision (the node's version) "
    "and actor/role for write scopes. Keep titles one sentence; put reasons in summary.")

_ID = {"type": "string", "description": "A node id (nxxxxxxxxxx)."}
EXPLORE_TREE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(VIEW_ACTIONS), "default": "overview"},
        "id": _ID,
        "depth": {"type": "integer", "minimum": 0},
        "query": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1},
        "archived": {"type": "boolean"},
    },
    "additionalProperties": False,
}
_CHILD = {"type": "object", "properties": {
    "kind": {"type": "string", "enum": list(KINDS)},
    "title": {"type": "string", "maxLength": MAX_TITLE},
    "summary": {"type": "string", "maxLength": MAX_SUMMARY}, "status": {"type": "string", "enum": list(STATUSES)},
    "tags": {"type": "array", "items": {"type": "string"}},
    "refs": {"type": "array", "items": {"type": "string"}}},
    "required": ["kind", "title"], "additionalProperties": False}
EXPLORE_TREE_RECORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": list(RECORD_ACTIONS)},
        "id": _ID,
        "kind": {"type": "string", "enum": list(KINDS)},
        "title": {"type": "string", "maxLength": MAX_TITLE},  # longer: a usage error
        "summary": {"type": "string", "maxLength": MAX_SUMMARY},
        "status": {"type": "string", "enum": list(STATUSES)},
        "tags": {"type": "array", "items": {"type": "string"}},
        "refs": {"type": "array", "items": {"type": "string"}},
        "parentId": {"type": ["string", "null"]},
        "children": {"type": "array", "items": _CHILD, "maxItems": 20},
        "from": _ID, "to": _ID,
        "edgeKind": {"type": "string", "enum": list(EDGE_KINDS)},
        "note": {"type": "string", "maxLength": MAX_SUMMARY},
        "into": _ID,
        "unarchive": {"type": "boolean"},
        "text": {"type": "string", "maxLength": MAX_DIGEST},
        "auto": {"type": "boolean"},
        "version": {"type": "integer", "minimum": 0},
        "owner": {"type": ["string", "null"]},
        "renew": {"type": "boolean"},
        "steal": {"type": "boolean"},
        "leaseMinutes": {"type": "integer", "minimum": 1, "maximum": MAX_LEASE_SECONDS // 60},
        "toActor": {"type": "string"},
        "actor": {"type": "string"},
        "role": {"type": "string", "enum": ["agent", "lead", "curator"]},
        "expectedRevision": {"type": "integer", "minimum": 1},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def _error(action: Any, exc: KbError) -> dict[str, Any]:
    code = getattr(exc, "code", None) or ("USAGE" if isinstance(exc, UsageError) else "REFUSED")
    err = {"code": code, "kind": getattr(exc, "kind", None) or type(exc).__name__,
           "message": str(exc), "exit_code": exc.exit_code}
    err.update(getattr(exc, "details", {}) or {})
    return {"ok": False, "action": action, "error": err}


def view_action(action: str = "overview", *, id: str | None = None, depth: int | None = None,
                query: str | None = None, limit: int | None = None, archived: bool = False,
                kb: Any = None) -> dict[str, Any]:
    """:func:`explore_tree` that raises: ``{"ok": true, "action", "text", "data"}``, or a
    :class:`kb.errors.KbError` (what the MCP server turns into a tool error)."""
    from kb.trail.text import format_view
    from kb.trail.views import run_view

    if action not in VIEW_ACTIONS:
        raise UsageError(f"unknown action {action!r}; accepted: {' '.join(VIEW_ACTIONS)}")
    data = run_view(kb, action, id=id, depth=depth, query=query, limit=limit, archived=archived)
    return {"ok": True, "action": action, "text": format_view(data), "data": data}


def explore_tree(action: str = "overview", *, id: str | None = None, depth: int | None = None,
                 query: str | None = None, limit: int | None = None, archived: bool = False,
                 view: str | None = None, kb: Any = None) -> dict[str, Any]:
    """Read a view of the exploration graph (seed ``explore_tree``); see the module docstring.

    ``view`` is accepted as another name of ``action``.
    """
    name = view or action or "overview"
    try:
        return view_action(name, id=id, depth=depth, query=query, limit=limit,
                           archived=archived, kb=kb)
    except KbError as exc:
        return _error(name, exc)


def record_action(action: str, *, kb: Any = None, **params: Any) -> dict[str, Any]:
    """:func:`explore_tree_record` that raises a :class:`kb.errors.KbError` when refused."""
    from kb.trail import ops

    unknown = sorted(set(params) - set(EXPLORE_TREE_RECORD_SCHEMA["properties"]))
    if unknown:
        raise UsageError(f"unknown parameter(s) {', '.join(unknown)} for explore_tree_record")
    if action not in RECORD_ACTIONS:
        raise UsageError(f"unknown action {action!r}; accepted: {' '.join(RECORD_ACTIONS)}")
    p = {k: v for k, v in params.items() if v is not None}
    kw = {"actor": p.pop("actor", None), "role": p.pop("role", None),
          "expect_version": p.pop("expectedRevision", None)}
    nid = str(p.get("id") or "")
    # Only a missing leaseMinutes defaults: ``or 30`` made a given 0 a 30-minute lease, where
    # the CLI's ``--lease`` (a COUNT) refuses it.
    lease = DEFAULT_LEASE_SECONDS
    minutes = p.get("leaseMinutes")
    if minutes is not None:
        if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 1:
            raise UsageError(f"leaseMinutes must be at least 1 (whole minutes), not {minutes!r}")
        if minutes > MAX_LEASE_SECONDS // 60:
            raise UsageError(f"leaseMinutes must be at most {MAX_LEASE_SECONDS // 60:,} (a year), "
                             f"not {quoted(str(minutes), limit=20, quote=False)}")
        lease = minutes * 60
    if action == "add":
        res = ops.add(kb, kind=p.get("kind") or "", title=p.get("title") or "",
                      summary=p.get("summary"), parent=p.get("parentId"),
                      status=p.get("status") or "open", tags=p.get("tags"), refs=p.get("refs"),
                      children=p.get("children"), **kw)
    elif action == "link":
        res = ops.link(kb, p.get("from") or "", p.get("to") or "", p.get("edgeKind") or "",
                       p.get("note"), **kw)
    elif action == "set":
        res = ops.set_fields(kb, nid, status=p.get("status"), title=p.get("title"),
                             summary=p.get("summary"), tags=p.get("tags"), refs=p.get("refs"),
                             **kw)
    elif action == "move":
        res = ops.move(kb, nid, p.get("parentId"), **kw)
    elif action == "merge":
        res = ops.merge(kb, nid, p.get("into") or "", **kw)
    elif action == "promote":
        res = ops.promote(kb, nid, **kw)
    elif action == "archive":
        res = ops.archive(kb, nid, unarchive=bool(p.get("unarchive")), **kw)
    elif action == "digest":
        res = ops.digest(kb, nid, p.get("text"), auto=bool(p.get("auto")), **kw)
    elif action == "rollback":
        res = ops.rollback(kb, nid, int(p.get("version") or 0), **kw)
    elif action == "assign":
        res = ops.assign(kb, nid, p.get("owner"), renew=bool(p.get("renew")),
                         steal=bool(p.get("steal")), lease_seconds=lease, **kw)
    else:  # handoff
        res = ops.handoff(kb, nid, p.get("toActor") or "", lease_seconds=lease, **kw)
    return {"ok": True, "action": action, "text": "\n".join(res.changes), "data": res.to_json()}


def explore_tree_record(action: str, *, kb: Any = None, **params: Any) -> dict[str, Any]:
    """Record into the exploration graph (seed ``explore_tree_record``); one commit per call.

    ``params`` are the seed's names (:data:`EXPLORE_TREE_RECORD_SCHEMA`);
    unknown names are refused (``USAGE``).
    """
    try:
        return record_action(action, kb=kb, **params)
    except KbError as exc:
        return _error(action, exc)


__all__ = ["explore_tree", "explore_tree_record", "view_action", "record_action",
           "EXPLORE_TREE_SCHEMA", "EXPLORE_TREE_RECORD_SCHEMA", "EXPLORE_TREE_DESCRIPTION",
           "EXPLORE_TREE_RECORD_DESCRIPTION", "VIEW_ACTIONS", "RECORD_ACTIONS"]
