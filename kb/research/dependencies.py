"""Settled state and the dependency rules of Vibe Math v3 cards (VIBEMATH-V3.md).

- A problem is *settled* when it is ``已解决`` or its priority is ``never``; a
  proposition when its ``概率`` is 0 or 1 or its priority is ``never``; any other
  object (or an unknown ID) counts as settled.
- A problem is *final* (its record can no longer change) when verification
  settled it: ``已解决``, or a proposition at 概率 0 or 1.
- A problem that is ``求解中`` moves to ``等待依赖`` while one of its 依赖 is
  unsettled, and back when all are settled; ``never`` problems and problems in
  any other status do not move.
- ``被依赖`` of a problem is the reverse of the problems' ``依赖`` lists, in
  natural ID order.

Every function takes plain values, so the writers (models), ``kb refresh``
(index rows as dicts) and rule KB216 (index links) share them.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from kb.numbers import natural_number_key

SOLVED = "已解决"
SOLVING = "求解中"
WAITING = "等待依赖"
NEVER = "never"


def natural_key(obj_id: str) -> list[Any]:
    """Sort key ordering IDs as people count: ``q2`` before ``q10`` (and before an ID
    whose number is too long to read as one, :func:`kb.numbers.natural_number_key`)."""
    return [natural_number_key(t) if t.isdecimal() else t for t in re.split(r"(\d+)", obj_id)]


def is_settled(kind: str | None, status: Any = None, probability: Any = None,
               priority: Any = None) -> bool:
    """True when an object of ``kind`` no longer blocks the problems depending on it.

    ``probability`` is a number (or None); ``priority`` an int, ``"never"`` or None.
    """
    if kind == "problem":
        return status == SOLVED or priority == NEVER
    if kind == "proposition":
        return probability in (0, 1) or priority == NEVER
    return True


def is_final(kind: str | None, status: Any = None, probability: Any = None) -> bool:
    """True when verification settled the object: its status and record are final."""
    if kind == "problem":
        return status == SOLVED
    if kind == "proposition":
        return probability in (0, 1)
    return False


def waiting_move(status: Any, priority: Any, ready: bool) -> str | None:
    """The status a problem moves to by its dependencies' state, or None (no move).

    ``ready``: every 依赖 of the problem is settled.
    """
    if priority == NEVER or status not in (SOLVING, WAITING):
        return None
    if not ready and status == SOLVING:
        return WAITING
    if ready and status == WAITING:
        return SOLVING
    return None


def reverse_dependencies(depends: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """``{problem: [problems whose 依赖 names it]}`` for every problem in ``depends``.

    ``depends`` maps each problem ID to its 依赖 list; names outside the mapping
    (propositions, unknown IDs) get no entry. Lists are in natural ID order.
    """
    out: dict[str, set[str]] = {q: set() for q in depends}
    for qid, deps in depends.items():
        for d in deps:
            if d in out:
                out[d].add(qid)
    return {q: sorted(v, key=natural_key) for q, v in out.items()}


def object_settled(obj: Any) -> bool:
    """:func:`is_settled` of a card object (a model or anything with ``kind``,
    ``status``, ``probability``, ``priority`` attributes)."""
    return is_settled(getattr(obj, "kind", None), getattr(obj, "status", None),
                      getattr(obj, "probability", None), getattr(obj, "priority", None))


def object_final(obj: Any) -> bool:
    """:func:`is_final` of a card object: settled by verification (a problem
    已解决, a proposition at 0 or 1), so its record is final."""
    return is_final(getattr(obj, "kind", None), getattr(obj, "status", None),
                    getattr(obj, "probability", None))


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components of ``graph`` (node -> the nodes it points at), by
    Tarjan's algorithm without recursion (a KB may hold thousands of dependencies): a
    list of components, each a list of nodes; a node on no cycle is a component alone.
    Used for dependency cycles (KB213) and by the architecture test for import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(graph.get(nxt, ()))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == node:
                        break
                out.append(comp)
    return out
