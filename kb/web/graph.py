"""A layered layout of the problems' dependency graph, drawn as SVG by the board page.

Server-side and deterministic: no JavaScript graph library (and no Mermaid, so
a title holding a Mermaid directive is just text). Layer 0 holds the objects
that depend on nothing in the graph; an object sits one layer below the
deepest object it depends on (longest path, cycles broken by visiting each
node once). Only objects on at least one dependency edge are drawn; the rest
are listed on the board.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

__all__ = ["layout", "MAX_NODES"]

#: The most nodes drawn; a larger graph draws the first ones (by layer) and says so.
MAX_NODES = 300
BOX_W, BOX_H, GAP_X, GAP_Y = 150, 34, 24, 56


def _layers(nodes: list[str], deps: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Longest-path layer of every node: an iterative depth-first walk, each node
    finished once (an edge back into the current path, a cycle, is ignored)."""
    layer: dict[str, int] = {}
    for start in nodes:
        if start in layer:
            continue
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(deps.get(start, ())))]
        on_path = {start}
        while stack:
            n, it = stack[-1]
            for d in it:
                if d not in layer and d not in on_path:
                    on_path.add(d)
                    stack.append((d, iter(deps.get(d, ()))))
                    break
            else:
                stack.pop()
                on_path.discard(n)
                layer[n] = 1 + max((layer[d] for d in deps.get(n, ()) if d in layer), default=-1)
    return layer


def layout(deps: Mapping[str, Sequence[str]], titles: Mapping[str, str],
           statuses: Mapping[str, str]) -> dict[str, Any]:
    """Positions for an SVG: ``{"nodes": [{id, title, status, x, y}], "edges": [{x1, y1,
    x2, y2, src, dst}], "width", "height", "left_out"}`` in pixels.

    ``deps`` maps an object to the objects it depends on (``依赖``); an
    edge runs from the dependency (above) to its dependant (below).
    """
    edges = [(src, dst) for src, ds in deps.items() for dst in ds if dst != src]
    involved = sorted({n for e in edges for n in e})
    if not involved:
        return {"nodes": [], "edges": [], "width": 0, "height": 0, "left_out": 0}
    layer = _layers(involved, {n: [d for d in deps.get(n, ()) if d != n] for n in involved})
    ordered = sorted(involved, key=lambda n: (layer[n], n))
    shown = ordered[:MAX_NODES]
    keep = set(shown)
    rows: dict[int, list[str]] = {}
    for n in shown:
        rows.setdefault(layer[n], []).append(n)
    pos: dict[str, tuple[int, int]] = {}
    width = 0
    for li, (_, names) in enumerate(sorted(rows.items())):
        for i, n in enumerate(names):
            pos[n] = (GAP_X + i * (BOX_W + GAP_X), GAP_Y // 2 + li * (BOX_H + GAP_Y))
        width = max(width, GAP_X + len(names) * (BOX_W + GAP_X))
    height = GAP_Y // 2 + len(rows) * (BOX_H + GAP_Y)
    nodes = [{"id": n, "title": titles.get(n, ""), "status": statuses.get(n, ""),
              "known": n in titles, "x": pos[n][0], "y": pos[n][1]} for n in shown]
    lines = []
    for src, dst in edges:  # src depends on dst: dst above, src below
        if src in keep and dst in keep:
            (x1, y1), (x2, y2) = pos[dst], pos[src]
            lines.append({"src": src, "dst": dst, "x1": x1 + BOX_W // 2, "y1": y1 + BOX_H,
                          "x2": x2 + BOX_W // 2, "y2": y2})
    return {"nodes": nodes, "edges": lines, "width": width, "height": height,
            "left_out": len(involved) - len(shown), "box_w": BOX_W, "box_h": BOX_H}
