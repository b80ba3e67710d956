"""A read-only view of every card, as plain dicts (from the index).

:class:`CardView` is what ``kb refresh``, ``kb promote``, ``kb priority adjust``,
``kb brief``, ``kb report`` and the web pages compute from; :func:`card_view`
loads it from any open index (a snapshot's, too). The settled rule is
:func:`kb.research.dependencies.is_settled`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kb.research import dependencies
from kb.research.dependencies import natural_key


@dataclass
class CardView:
    """Every problem, proposition, method, verified card and direction, as plain dicts."""

    problems: dict[str, dict[str, Any]] = field(default_factory=dict)
    propositions: dict[str, dict[str, Any]] = field(default_factory=dict)
    methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    verified: dict[str, dict[str, Any]] = field(default_factory=dict)
    directions: list[dict[str, Any]] = field(default_factory=list)

    def settled(self, obj_id: str) -> bool:
        """Whether ``obj_id`` is settled (:func:`kb.research.dependencies.is_settled`;
        an unknown ID counts as settled)."""
        for kind, rows in (("problem", self.problems), ("proposition", self.propositions)):
            row = rows.get(obj_id)
            if row is not None:
                return dependencies.is_settled(kind, row.get("status"), row.get("probability"),
                                               row.get("priority"))
        return True

    _judges: dict[str, list[str]] | None = None

    def judge_of(self, pid: str) -> list[str]:
        """Problems whose 判断命题 names ``pid`` (built once per view)."""
        if self._judges is None:
            judges: dict[str, list[str]] = {}
            for qid, q in self.problems.items():
                target = (q.get("anchors") or {}).get("判断命题", "").strip()
                if target:
                    judges.setdefault(target, []).append(qid)
            self._judges = {k: sorted(v, key=natural_key) for k, v in judges.items()}
        return self._judges.get(pid, [])


def card_view(idx: Any) -> CardView:
    """Load the view from an open, refreshed :class:`kb.index.Index` (first declaration wins)."""
    view = CardView()
    target = {"problem": view.problems, "proposition": view.propositions,
              "method": view.methods, "verified": view.verified}
    for kind, out in target.items():
        for r in idx.objects(kind):
            if r.id not in out:
                d = r.fields()
                d["path"] = r.path
                out[r.id] = d
    view.directions = [dict(r.fields(), path=r.path) for r in idx.objects("direction")]
    return view


__all__ = ["CardView", "card_view"]
