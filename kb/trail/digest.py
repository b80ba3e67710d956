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

from typing import Mapping

from kb.trail.model import LEAF_ROOT_KINDS, MAX_DIGEST, Node, clip


def closed(n: Node) -> bool:
    """A leaf counts as closed when done or abandoned, or a dead end (a finished exploration)."""
    return n.status in ("done", "abandoned") or n.kind == "dead_end"


def synthesise(nodes: Mapping[str, Node], topic: Node) -> str:
    """The template digest of ``topic`` whose children are in ``nodes`` (a graph's nodes by
    id; ≤ 120 characters). Depends on the model only, so replay imports it and not the
    other way round."""
    # One pass over the children (a topic can have thousands; this runs once per recording
    # that touches the topic).
    total = done = dead = 0
    ltotal = ldone = 0
    concl: Node | None = None
    opn: list[Node] = []
    anyleaf: list[Node] = []
    for c in topic.children:
        k = nodes.get(c)
        if k is None or k.merged_into is not None or "handoff" in k.tags:
            continue
        total += 1
        is_closed = closed(k)
        done += is_closed
        if k.kind == "dead_end":
            dead += 1
        if k.kind == "conclusion" and k.status != "abandoned":
            concl = k
        if k.kind in LEAF_ROOT_KINDS:
            ltotal += 1
            ldone += is_closed
            if not is_closed and k.kind != "conclusion":
                opn.append(k)
        elif not is_closed and k.kind != "conclusion":
            anyleaf.append(k)
    if not total:
        return "no leaves yet"
    if not ltotal:  # no leaf roots: count every child
        ltotal, ldone, opn = total, done, anyleaf
    parts = [f"{ldone}/{ltotal} done"]
    if concl is not None:
        parts.append("concluded: " + clip(concl.title, 48))
    if opn:
        parts.append("open: " + "; ".join(clip(k.title, 32) for k in reversed(opn[-3:])))
    if dead:
        parts.append(f"{dead} dead end{'s' if dead != 1 else ''}")
    return clip(" · ".join(parts), MAX_DIGEST)
