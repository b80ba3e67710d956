"""Read views of the exploration graph (seed ``explore_tree`` actions), as plain data.

Every view takes a replayed :class:`kb.trail.replay.Graph` and returns a
JSON-ready dict whose first key ``view`` names it; :func:`run_view` loads the
KB's graph and dispatches by name::

    from kb.trail.views import run_view
    run_view(kb, "trunk")     # {"view": "trunk", "goals": [...], "claimable": [...]}

Short node dicts (:func:`short`) carry ``id kind title status parent version
hits owner``. Live views leave out merged-away and archived nodes and, past
``maxNodes`` (5,000), the oldest done leaves (``Graph.hidden``). Views never
write; ``now`` (epoch seconds) decides which leases are live. These shapes
are a stable contract for the CLI, the MCP tools and the web page.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

from kb import clock
from kb.errors import UsageError
from kb.trail.digest import closed
from kb.trail.model import LEAF_ROOT_KINDS, Node, TrailError, clip
from kb.trail.replay import Graph, topics_under

VIEWS = ("overview", "trunk", "brief", "frontier", "stats", "find", "node", "path", "tree",
         "subtree")
BRIEF_MAX = 400
THOUGHTS = ("question", "hypothesis", "decision")


def short(n: Node, now: int | None = None) -> dict[str, Any]:
    """The short form of a node used in every list."""
    d = {"id": n.id, "kind": n.kind, "title": n.title, "status": n.status, "parent": n.parent,
         "version": n.version, "hits": n.hits}
    if n.owner and (now is None or n.lease_until > now):
        d["owner"] = n.owner
    return d


def _recent(nodes: list[Node]) -> list[Node]:
    return sorted(nodes, key=lambda n: (n.updated_at, n.seq), reverse=True)


def _need(g: Graph, nid: Any) -> Node:
    if not isinstance(nid, str) or not nid:
        raise UsageError("this view needs a node id")
    n = g.resolve(nid)
    if n is None:
        raise TrailError(f"no trail node {nid!r} (kb trail find lists nodes)", "NOT_FOUND", id=nid)
    return n


def _live(g: Graph) -> list[Node]:
    hidden = g.hidden  # Graph.live, inlined (50,000 nodes and more)
    return [n for n in g.nodes.values()
            if n.merged_into is None and not n.archived and n.id not in hidden]


def conflicts(g: Graph) -> list[dict[str, Any]]:
    """``contradicts`` edges between live nodes, with the nearest topic they share (or None)."""
    out = []
    for e in g.edges:
        if e.kind != "contradicts":
            continue
        a, b = g.nodes.get(e.src), g.nodes.get(e.dst)
        if a is None or b is None or not g.live(a) or not g.live(b):
            continue
        ta, tb = g.topic_of(a.id), g.topic_of(b.id)
        out.append({"from": short(a), "to": short(b), "note": e.note,
                    "topic": ta.id if ta is not None and tb is not None and ta.id == tb.id else None})
    return out


def _leaves(g: Graph, t: Node, archived: bool) -> tuple[list[Node], int]:
    kids = [g.nodes[c] for c in t.children if c in g.nodes]
    kids = [k for k in kids if k.merged_into is None and k.kind in LEAF_ROOT_KINDS
            and "handoff" not in k.tags]
    n_arch = sum(1 for k in kids if k.archived or k.id in g.hidden)
    if not archived:
        kids = [k for k in kids if not k.archived and k.id not in g.hidden]
    return kids, n_arch


def _progress(g: Graph, t: Node) -> dict[str, int]:
    kids, _ = _leaves(g, t, True)
    done = sum(1 for k in kids if closed(k))
    return {"done": done, "total": len(kids)}


# -- overview -------------------------------------------------------------------------


def overview(g: Graph, now: int | None = None, limit: int = 8) -> dict[str, Any]:
    """Goal, focus, recent nodes, open questions (process noise folded into counts),
    dead ends, artifacts, conclusions.

    Open thoughts (open/active question, hypothesis, decision) are *current*
    when written by hand or hung directly under a goal/topic; the rest only
    count: ``reasoning`` (extracted, directly under a step), ``stale_topic``
    (under a closed topic), ``nested`` (under another thought).
    """
    live = _live(g)
    goals = _recent([n for n in live if n.kind == "goal"])
    focus = next(iter(_recent([n for n in live if n.kind in ("topic", "step")
                               and n.status in ("open", "active")])), None)
    current: list[Node] = []
    folded: Counter[str] = Counter()
    for n in live:
        if n.kind not in THOUGHTS or n.status not in ("open", "active"):
            continue
        p = g.nodes.get(n.parent) if n.parent else None
        t = g.topic_of(n.id)
        if t is not None and t.id != n.id and t.status in ("done", "abandoned"):
            folded["stale_topic"] += 1
        elif p is not None and p.kind not in ("goal", "topic", "step"):
            folded["nested"] += 1
        elif n.source == "extractor" and (p is None or p.kind == "step"):
            folded["reasoning"] += 1
        else:
            current.append(n)

    def pick(kind: str) -> list[dict[str, Any]]:
        return [short(n, now) for n in _recent([n for n in live if n.kind == kind])[:limit]]

    return {"view": "overview", "goal": short(goals[0], now) if goals else None,
            "goals": len(goals), "focus": short(focus, now) if focus else None,
            "recent": [short(n, now) for n in _recent(live)[:limit]],
            "open": [short(n, now) for n in _recent(current)[:limit]],
            "open_total": len(current), "open_folded": dict(sorted(folded.items())),
            "dead_ends": pick("dead_end"), "artifacts": pick("artifact"),
            "conclusions": pick("conclusion"), "nodes": len(live), "problems": len(g.problems)}


# -- trunk and brief --------------------------------------------------------------------


def _topic_entry(g: Graph, t: Node, now: int, archived: bool,
                 conflict_topics: set[str]) -> dict[str, Any]:
    leaves, n_arch = _leaves(g, t, archived)
    live_lease = bool(t.owner) and t.lease_until > now
    return {"id": t.id, "title": t.title, "status": t.status, "digest": t.digest,
            "progress": _progress(g, t), "owner": t.owner if live_lease else None,
            "lease_until": t.lease_until if live_lease else None,
            "lease_expired": bool(t.owner) and not live_lease, "lease_epoch": t.lease_epoch,
            "conflict": t.id in conflict_topics, "version": t.version,
            "leaves": [short(k, now) for k in leaves], "archived_leaves": n_arch}


def trunk(g: Graph, now: int | None = None, archived: bool = False) -> dict[str, Any]:
    """goal → topic → leaf roots, with each topic's digest, progress, owner, ⚠ conflict.

    ``claimable`` lists open topics with no live lease (expired ones first).
    ``archived`` also lists archived leaf roots.
    """
    now = clock.epoch() if now is None else now
    conflict_topics = {c["topic"] for c in conflicts(g) if c["topic"]}
    goals: list[dict[str, Any]] = []
    live_roots = [g.nodes[r] for r in g.roots if g.live(g.nodes[r])]
    for r in live_roots:
        if r.kind not in ("goal", "topic"):
            continue
        topics = [r] if r.kind == "topic" else []
        topics += topics_under(g, r)
        goals.append({"goal": short(r, now) if r.kind == "goal" else None,
                      "topics": [_topic_entry(g, t, now, archived, conflict_topics)
                                 for t in topics]})
    claim: list[dict[str, Any]] = []
    for gl in goals:
        for t in gl["topics"]:
            if t["status"] in ("open", "active") and t["owner"] is None:
                claim.append({"id": t["id"], "title": t["title"], "expired": t["lease_expired"]})
    claim.sort(key=lambda c: not c["expired"])
    return {"view": "trunk", "goals": goals, "claimable": claim}


def brief(g: Graph, now: int | None = None, goal: str | None = None) -> dict[str, Any]:
    """A research brief of at most 400 characters: goal / trunk digests / other trunks /
    open leaf roots / next. ``goal`` picks the goal (default: the most recent)."""
    now = clock.epoch() if now is None else now
    tr = trunk(g, now)
    with_goal = [x for x in tr["goals"] if x["goal"]]
    mine = None
    if goal:
        gn = _need(g, goal)
        mine = next((x for x in with_goal if x["goal"]["id"] == gn.id), None)
    elif with_goal:
        recent = _recent([g.nodes[x["goal"]["id"]] for x in with_goal])[0]
        mine = next(x for x in with_goal if x["goal"]["id"] == recent.id)
    parts = []
    if mine:
        parts.append(f"Goal: {clip(mine['goal']['title'], 80)}")
        tops = [f"{t['title'][:30]}: {t['digest']}" + (" ⚠" if t["conflict"] else "")
                for t in mine["topics"][:3]]
        if tops:
            parts.append("Trunk: " + " | ".join(tops))
    others = [t for x in tr["goals"] if x is not mine for t in x["topics"]]
    if others:
        parts.append("Other trunks: " + "; ".join(
            clip(t["title"], 30) + (f" ({t['owner']})" if t["owner"] else "") for t in others[:3]))
    open_leaves = [lf for x in ([mine] if mine else tr["goals"]) for t in x["topics"]
                   for lf in t["leaves"] if lf["status"] in ("open", "active")]
    if open_leaves:
        parts.append("Open: " + "; ".join(clip(lf["title"], 40) for lf in open_leaves[:3]))
    fr = frontier(g, now)
    if fr["suggestions"]:
        s = fr["suggestions"][0]
        parts.append(f"Next: {s['action']} {clip(s['title'], 50)}")
    text = "\n".join(parts) if parts else "The trail is empty."
    if len(text) > BRIEF_MAX:
        text = text[: BRIEF_MAX - 1] + "…"
    return {"view": "brief", "text": text, "chars": len(text),
            "goal": mine["goal"] if mine else None}


# -- frontier -------------------------------------------------------------------------


def _evidence_count(g: Graph, n: Node, support: Counter) -> int:
    kids = sum(1 for c in n.children if (k := g.nodes.get(c)) is not None and k.kind == "evidence")
    return kids + support[n.id]


def frontier(g: Graph, now: int | None = None, limit: int = 8) -> dict[str, Any]:
    """Next-step suggestions and what to avoid.

    ``suggestions`` (each ``{"action", "id", "title", "reason", "track"}``):
    *verify* the open hypotheses with the least evidence, *resolve*
    contradictions, *claim* expired leases, *converge* topics with three or
    more open leaves and no conclusion (track ``current``); *switch* to the
    least recently touched open question or hypothesis outside the focus topic
    (track ``switch``). ``avoid``: the live dead ends (newest first).
    """
    now = clock.epoch() if now is None else now
    live = _live(g)
    support = Counter(e.dst for e in g.edges if e.kind == "supports")
    sugg: list[dict[str, Any]] = []
    hyps = [n for n in live if n.kind == "hypothesis" and n.status in ("open", "active")]
    hyps.sort(key=lambda n: (_evidence_count(g, n, support), n.seq))
    for n in hyps[:3]:
        k = _evidence_count(g, n, support)
        sugg.append({"action": "verify", "id": n.id, "title": n.title, "track": "current",
                     "reason": f"open hypothesis with {k} piece{'s' if k != 1 else ''} of evidence"})
    for c in conflicts(g)[:3]:
        sugg.append({"action": "resolve", "id": c["from"]["id"], "title": c["from"]["title"],
                     "track": "current", "reason": f"contradicts {c['to']['id']} {c['to']['title']}"})
    for n in live:
        if n.owner and n.lease_until <= now and n.status in ("open", "active"):
            sugg.append({"action": "claim", "id": n.id, "title": n.title, "track": "current",
                         "reason": f"{n.owner}'s lease expired"})
    for t in (n for n in live if n.kind == "topic" and n.status in ("open", "active")):
        leaves, _ = _leaves(g, t, False)
        opn = [k for k in leaves if k.status in ("open", "active")]
        if len(opn) >= 3 and not any(k.kind == "conclusion" for k in leaves):
            sugg.append({"action": "converge", "id": t.id, "title": t.title, "track": "current",
                         "reason": f"{len(opn)} open leaves and no conclusion"})
    ov_focus = next(iter(_recent([n for n in live if n.kind == "topic"
                                  and n.status in ("open", "active")])), None)
    others = [n for n in live if n.kind in ("question", "hypothesis")
              and n.status in ("open", "active")
              and (ov_focus is None or g.topic_of(n.id) is not ov_focus)]
    others.sort(key=lambda n: (n.updated_at, n.seq))
    for n in others[:2]:
        sugg.append({"action": "switch", "id": n.id, "title": n.title, "track": "switch",
                     "reason": f"untouched since {n.updated_at}"})
    avoid = [{"id": n.id, "title": n.title, "reason": clip(n.summary, 160)}
             for n in _recent([n for n in live if n.kind == "dead_end"
                               and "auto-curated" not in n.tags])[:limit]]
    return {"view": "frontier", "suggestions": sugg[: limit + 4], "avoid": avoid}


# -- stats, find ----------------------------------------------------------------------


def stats(g: Graph) -> dict[str, Any]:
    """Counts: ``nodes`` (live total), ``by_kind``, ``by_status``, ``edges`` by kind, per actor
    ``created``/``updated``, ``duplicates`` (repeat hits and ``duplicates`` edges), archived,
    merged, hidden over maxNodes, operations replayed and log problems."""
    live = _live(g)
    return {"view": "stats", "nodes": len(live), "all_nodes": len(g.nodes),
            "by_kind": dict(sorted(Counter(n.kind for n in live).items())),
            "by_status": dict(sorted(Counter(n.status for n in live).items())),
            "edges": dict(sorted(Counter(e.kind for e in g.edges).items())),
            "actors": {"created": dict(sorted(Counter(n.created_by for n in live).items())),
                       "updated": dict(sorted(Counter(n.updated_by for n in live).items()))},
            "duplicates": {"repeat_hits": sum(n.hits - 1 for n in live if n.hits > 1),
                           "nodes_hit_again": sum(1 for n in live if n.hits > 1),
                           "duplicate_edges": sum(1 for e in g.edges if e.kind == "duplicates"),
                           "merged": sum(1 for n in g.nodes.values() if n.merged_into)},
            "archived": sum(1 for n in g.nodes.values() if n.archived and not n.merged_into),
            "hidden": len(g.hidden), "operations": g.ops, "problems": len(g.problems)}


def find(g: Graph, query: str, limit: int = 20) -> dict[str, Any]:
    """Nodes whose title, digest, summary, tags or refs contain every word of ``query``
    (case-insensitive); title and digest hits rank first; a summary hit carries a snippet."""
    words = [w for w in (query or "").lower().split() if w]
    if not words:
        raise UsageError("give words to find")
    if limit < 1:  # as snapshot: a negative limit would slice the hits away ("total 1, results []")
        raise UsageError("limit must be at least 1")
    hits = []
    for n in g.nodes.values():
        if n.merged_into is not None:
            continue
        head = (n.title + " " + n.digest).lower()
        rest = " ".join([n.summary, " ".join(n.tags), " ".join(n.refs)]).lower()
        if not all(w in head or w in rest for w in words):
            continue
        rank = sum(1 for w in words if w in head)
        d = short(n)
        d["archived"] = n.archived or n.id in g.hidden
        if rank < len(words):
            low = n.summary.lower()
            at = next((low.find(w) for w in words if w in low), -1)
            if at >= 0:
                d["snippet"] = clip(n.summary[max(0, at - 40): at + 80], 120)
        hits.append((-rank, -n.seq, d))
    hits.sort(key=lambda h: (h[0], h[1]))
    return {"view": "find", "query": query, "total": len(hits),
            "results": [h[2] for h in hits[:limit]]}


# -- node, path, tree, subtree -------------------------------------------------------------


def path(g: Graph, nid: str) -> dict[str, Any]:
    """The path from the root down to the node."""
    n = _need(g, nid)
    chain = [n, *g.ancestors(n.id)]
    return {"view": "path", "id": n.id, "path": [short(m) for m in reversed(chain)]}


def node(g: Graph, nid: str, now: int | None = None) -> dict[str, Any]:
    """One node in full (``version`` is the CAS token), its children, side edges and path."""
    n = _need(g, nid)
    d = n.to_json()
    d["view"] = "node"
    d["requested"] = nid
    d["live"] = g.live(n)
    d["children"] = [short(g.nodes[c], now) for c in n.children if c in g.nodes]
    d["edges"] = {"out": [e.to_json() for e in g.edges if e.src == n.id],
                  "in": [e.to_json() for e in g.edges if e.dst == n.id]}
    d["path"] = path(g, n.id)["path"]
    d["digest_history"] = d["digest_history"][-3:] if len(d["digest_history"]) > 3 else \
        d["digest_history"]
    return d


def _subtree(g: Graph, n: Node, depth: int, show_all: bool, budget: list[int]) -> dict[str, Any]:
    out: dict[str, Any] = short(n)
    kids = [g.nodes[c] for c in n.children if c in g.nodes]
    if not show_all:
        kids = [k for k in kids if g.live(k)]
    out["descendants"] = None
    if depth <= 0 or budget[0] <= 0:
        out["children"] = []
        out["more"] = len(kids)
        return out
    out["children"] = []
    for k in kids:
        if budget[0] <= 0:
            break
        budget[0] -= 1
        out["children"].append(_subtree(g, k, depth - 1, show_all, budget))
    out["more"] = len(kids) - len(out["children"])
    return out


def tree(g: Graph, nid: str | None = None, depth: int = 3, max_nodes: int = 500,
         show_all: bool = False) -> dict[str, Any]:
    """The live forest (or the subtree at ``nid``) to ``depth`` levels (default 3), at most
    ``max_nodes`` entries; ``more`` counts the children left out at each node."""
    if depth < 0:
        raise UsageError("depth must be 0 or more")
    budget = [max_nodes]
    if nid:
        roots = [_need(g, nid)]
    else:
        roots = [g.nodes[r] for r in g.roots if show_all or g.live(g.nodes[r])]
    return {"view": "tree", "id": nid, "depth": depth,
            "roots": [_subtree(g, r, depth, show_all, budget) for r in roots]}


def subtree(g: Graph, nid: str, depth: int = 6, now: int | None = None) -> dict[str, Any]:
    """The node's details and its subtree (default 6 levels)."""
    d = node(g, nid, now)
    t = tree(g, d["id"], depth)
    return {"view": "subtree", "node": d, "tree": t["roots"][0]}


def snapshot(g: Graph, focus: str | None = None, limit: int = 2000,
             now: int | None = None) -> dict[str, Any]:
    """The whole live graph for a panel (the seed's ``/explore-tree/snapshot``): at most
    ``limit`` nodes — the most recently updated, plus their ancestors so that the tree
    stays connected — each a short dict with ``summary``, ``tags``, ``refs``,
    ``digest``, ``updated_at`` and ``children`` (ids); the side edges between them;
    ``roots``; ``focus`` (the given id, else the newest open topic or step);
    ``truncated`` when nodes were left out; ``frontier``; ``stats``."""
    if limit < 1:
        raise UsageError("limit must be at least 1")
    live = _live(g)
    keep: set[str] = set()
    for n in _recent(live):
        if len(keep) >= limit:
            break
        keep.add(n.id)
        keep.update(a.id for a in g.ancestors(n.id))
    nodes = []
    for n in sorted((g.nodes[i] for i in keep), key=lambda n: n.seq):
        d = short(n, now)
        d.update(summary=n.summary, tags=list(n.tags), refs=list(n.refs), digest=n.digest,
                 updated_at=n.updated_at, updated_by=n.updated_by,
                 children=[c for c in n.children if c in keep])
        nodes.append(d)
    if focus:
        fid: str | None = _need(g, focus).id
    else:
        f = next(iter(_recent([n for n in live if n.kind in ("topic", "step")
                                and n.status in ("open", "active")])), None)
        fid = f.id if f else None
    return {"view": "snapshot", "nodes": nodes,
            "edges": [e.to_json() for e in g.edges if e.src in keep and e.dst in keep],
            "roots": [r for r in g.roots if r in keep], "focus": fid,
            "truncated": len(keep) < len(live), "frontier": frontier(g, now), "stats": stats(g)}


def handoff_package(g: Graph, t: Node) -> str:
    """The text of a handoff package for ``t``: digest, open leaves, recent key nodes, conflicts."""
    lines = [f"Digest: {t.digest or '-'}"]
    sub = []
    stack, guard = list(t.children), len(g.nodes) + 1
    while stack and guard:
        guard -= 1
        k = g.nodes.get(stack.pop())
        if k is not None and g.live(k):
            sub.append(k)
            stack.extend(k.children)
    opn = [k for k in sub if k.kind in LEAF_ROOT_KINDS and k.status in ("open", "active")]
    lines.append("Open leaves: " + ("; ".join(f"{k.id} {clip(k.title, 60)}" for k in opn[:8])
                                    or "none"))
    key = [k for k in _recent(sub) if k.kind in ("conclusion", "decision", "evidence", "dead_end")]
    lines.append("Recent key nodes: " + ("; ".join(f"{k.id} {k.kind} {clip(k.title, 60)}"
                                                   for k in key[:6]) or "none"))
    ids = {k.id for k in sub}
    cs = [c for c in conflicts(g) if c["from"]["id"] in ids or c["to"]["id"] in ids]
    lines.append("Conflicts: " + ("; ".join(f"{c['from']['id']} ⟂ {c['to']['id']}" for c in cs[:5])
                                  or "none"))
    return "\n".join(lines)


_VIEW_FNS: dict[str, Callable[..., dict[str, Any]]] = {
    "overview": lambda g, p: overview(g, p.get("now")),
    "trunk": lambda g, p: trunk(g, p.get("now"), bool(p.get("archived"))),
    "brief": lambda g, p: brief(g, p.get("now"), p.get("id")),
    "frontier": lambda g, p: frontier(g, p.get("now")),
    "stats": lambda g, p: stats(g),
    # A given limit is passed on as given (0 included: refused), only a missing one defaults.
    "find": lambda g, p: find(g, p.get("query") or "",
                              int(p["limit"]) if p.get("limit") is not None else 20),
    "node": lambda g, p: node(g, p.get("id"), p.get("now")),
    "path": lambda g, p: path(g, p.get("id")),
    "tree": lambda g, p: tree(g, p.get("id"), int(p["depth"]) if p.get("depth") is not None else 3),
    "subtree": lambda g, p: subtree(g, p.get("id"),
                                    int(p["depth"]) if p.get("depth") is not None else 6),
    "snapshot": lambda g, p: snapshot(g, p.get("id"),
                                      int(p["limit"]) if p.get("limit") is not None else 2000,
                                      p.get("now")),
}


def run_view(kb: Any, name: str, **params: Any) -> dict[str, Any]:
    """Load the KB's graph and compute view ``name`` (one of :data:`VIEWS`, or ``snapshot``).

    ``kb``: a :class:`kb.repo.KnowledgeBase`, a path inside a KB, or None (the current
    directory); see :func:`kb.trail.replay.kb_root`.

    ``params``: ``id`` (node/path/subtree/tree/brief), ``depth``, ``query``,
    ``limit``, ``archived``, ``now``. Adds ``log_problems`` (torn or corrupt log
    entries, as dicts with path and line) when there are any. Raises
    UsageError for an unknown view, TrailError NOT_FOUND for an unknown id.
    """
    from kb.trail.replay import kb_root, load

    if name not in _VIEW_FNS:
        raise UsageError(f"unknown view {name!r}; accepted: {' '.join(VIEWS)}")
    g = load(kb_root(kb))
    out = _VIEW_FNS[name](g, params)
    if g.problems:
        out["log_problems"] = [p.to_json() for p in g.problems]
    return out
