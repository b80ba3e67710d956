"""The Mermaid sub-diagram of the part of the hypothesis tree a range changed.

Nodes: every changed hypothesis (added, corrected, status moved, evidence
appended, renumbered) and its ancestors, for context; changed nodes carry the
``changed`` class (a thick outline). Within Mermaid's default limits (500
edges, 50,000 characters; DESIGN.md §2.3): changed hypotheses are drawn in
tree order until the next one would not fit, and the note says how many were
left out. Labels are escaped so that agent-written statements are inert text
(no Mermaid syntax, no HTML, no entity tricks).
"""

from __future__ import annotations

from typing import Any, Optional

from kb.render.dashboard import CLASS_STYLES as _STYLE, MAX_CHARS, MAX_EDGES, STATUS_CLASSES as _CLASSES, mermaid_text
from kb.vocab import HYPOTHESIS_STATUS

LABEL_CHARS = 60


def escape_label(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` as inert Mermaid label text: one line, at most ``limit`` characters
    (an ellipsis marks a cut), through the dashboard's :func:`mermaid_text` (every
    character but letters, digits and a few safe ones as a numeric entity)."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return mermaid_text(text)


def _node(hid: str) -> str:
    return "n_" + "".join(ch if ch.isalnum() else "_" for ch in hid)


def changed_tree(s: Any, new: dict[tuple[str, str], dict[str, Any]], hyp: dict[str, list],
                 locale: str = "zh") -> Optional[dict[str, Any]]:
    """``{"lines", "shown", "left_out", "note", "changed"}`` for the changed hypotheses,
    or None when the range changed none. ``s`` is the diff's :class:`Sides`, ``new``
    its changed after-side objects by ``(kind, id)``; ``hyp`` is the diff's
    ``hypotheses`` section. Unchanged ancestors are read from the after side."""
    from kb.review.sides import new_objects_by_id

    changed = list(dict.fromkeys(
        x.get("id") or x["to"] for sec in ("added", "corrected", "status", "evidence", "renumbered") for x in hyp[sec]))
    if not changed:
        return None
    byid = {i: f for (kind, i), f in new.items() if kind == "hypothesis"}
    want = [i for i in changed if i in byid]
    for _ in range(64):  # one query per tree level, up to the roots
        parents = [p for i in want if (p := byid[i].get("parent")) and p not in byid]
        if not parents:
            break
        found = new_objects_by_id(s, "hypothesis", parents)
        byid.update(found)
        want = list(found)
    order = sorted((i for i in changed if i in byid), key=lambda i: byid[i]["line"])
    mark = set(changed)
    head = ["```mermaid", "graph TD"]
    styles = ["  " + s for s in _STYLE] + ["  classDef changed stroke-width:4px,stroke:#1f6feb"]
    chars = sum(len(x) + 1 for x in head + styles) + 4
    nodes: dict[str, str] = {}
    edges: list[str] = []
    shown = 0
    for hid in order:
        chain = []
        cur: Optional[str] = hid
        while cur and cur in byid and cur not in nodes and len(chain) < 64:
            chain.append(cur)
            cur = byid[cur].get("parent")
        add_nodes = {}
        add_edges = []
        for i in chain:
            h = byid[i]
            label = escape_label(f"{i}: {h['statement']}") + "<br/>" + escape_label(
                HYPOTHESIS_STATUS.word(h["status"], locale), 20)
            cls = _CLASSES.get(h["status"], "unknown")
            add_nodes[i] = f'  {_node(i)}["{label}"]:::{cls}' + (f"\n  class {_node(i)} changed" if i in mark else "")
            p = h.get("parent")
            if p and p in byid:
                add_edges.append(f"  {_node(p)} --> {_node(i)}")
        cost = sum(len(x) + 1 for x in add_nodes.values()) + sum(len(x) + 1 for x in add_edges)
        if len(edges) + len(add_edges) > MAX_EDGES or chars + cost > MAX_CHARS:
            break
        nodes.update(add_nodes)
        edges += add_edges
        chars += cost
        shown += 1
    left = len(changed) - shown
    note = ""
    if left:
        note = (f"{left} changed hypothes{'is' if left == 1 else 'es'} not drawn "
                f"(Mermaid's limits: {MAX_EDGES} edges, {MAX_CHARS:,} characters)")
    lines = head + [nodes[i] for i in sorted(nodes, key=lambda i: byid[i]["line"])] + edges + styles + ["```"]
    return {"lines": lines, "shown": shown, "left_out": left, "note": note,
            "changed": changed}
