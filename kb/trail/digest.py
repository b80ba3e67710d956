"""A topic's digest: synthesised from its children by a template, no model (seed §3.1.1).

The digest reads only the children's titles, kinds and statuses (never their
text in full) and is at most 120 characters::

    3/5 done · concluded: Tool order changes the prefix · open: Pin order?; Cache TTL

Parts, in order, each only when it has something: progress over the leaf
roots (done, abandoned and dead ends over all), the newest conclusion, the open leaf roots
(newest first), the dead-end count. A topic without children reads
``no leaves yet``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kb.trail.model import LEAF_ROOT_KINDS, MAX_DIGEST, clip

if TYPE_CHECKING:  # annotations only
    from kb.trail.model import Node
    from kb.trail.replay import Graph


def closed(n: "Node") -> bool:
    """A leaf counts as closed when done or abandoned, or a dead end (a finished exploration)."""
    return n.status in ("done", "abandoned") or n.kind == "dead_end"


def synthesise(g: "Graph", topic: "Node") -> str:
    """The template digest of ``topic`` in ``g`` (≤ 120 characters)."""
    kids = [g.nodes[c] for c in topic.children if c in g.nodes]
    kids = [k for k in kids if k.merged_into is None and "handoff" not in k.tags]
    if not kids:
        return "no leaves yet"
    leaves = [k for k in kids if k.kind in LEAF_ROOT_KINDS] or kids
    parts = [f"{sum(1 for k in leaves if closed(k))}/{len(leaves)} done"]
    concl = [k for k in kids if k.kind == "conclusion" and k.status != "abandoned"]
    if concl:
        parts.append("concluded: " + clip(concl[-1].title, 48))
    open_ = [k for k in reversed(leaves) if not closed(k) and k.kind != "conclusion"]
    if open_:
        parts.append("open: " + "; ".join(clip(k.title, 32) for k in open_[:3]))
    dead = sum(1 for k in kids if k.kind == "dead_end")
    if dead:
        parts.append(f"{dead} dead end{'s' if dead != 1 else ''}")
    return clip(" · ".join(parts), MAX_DIGEST)
