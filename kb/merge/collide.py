"""IDs a branch adds that its merge target already has (``kb verify --against``).

Sequential IDs (H7, E002, q12) let two branches from the same main allocate
the same one. What the range adds *as a whole* — its tip against its
merge-base with the target — is compared with the target's tip: an ID the
branch added that the target also has, with other content (another
statement, another hypothesis, another card file), is a KB350 error naming
both declarations. The same content on both sides (a cherry-pick, a branch
already merged) is no collision. ``kb sync`` repairs what this finds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kb.checks.facts import CARD_KINDS, NAMESPACE, Facts, Light

#: Kinds whose IDs are allocated sequentially (and renumbered by ``kb sync``).
KINDS = ("hypothesis", "experiment", *CARD_KINDS)


@dataclass(frozen=True)
class Collision:
    """One ID added on the branch and already taken on the target.

    ``ours`` / ``theirs`` are the branch's and the target's declarations.
    """

    id: str
    kind: str
    ours: Light
    theirs: Light


def _norm(text: str) -> str:
    return " ".join(text.split())


def lights(facts: Facts, kinds: tuple[str, ...] = KINDS) -> dict[tuple[str, str], Light]:
    """(namespace, id) -> first declaration, over every file of the snapshot that
    holds objects of ``kinds``."""
    paths = sorted({o.path for o in facts.of_kind(*kinds)})
    out: dict[tuple[str, str], Light] = {}
    for p in paths:
        for x in facts.light(p):
            if x.kind in kinds:
                out.setdefault((x.ns, x.id), x)
    return out


def same(a: Light, b: Light, facts_a: Facts, facts_b: Facts) -> bool:
    """Do two declarations of one ID hold the same object? Hypotheses: the same
    statement; experiments: the same hypothesis and title; cards: the same file
    bytes (a card is its file)."""
    if a.kind != b.kind:
        return False
    if a.kind == "hypothesis":
        return _norm(a.statement) == _norm(b.statement)
    if a.kind == "experiment":
        return a.hypothesis == b.hypothesis and _norm(a.statement) == _norm(b.statement)
    return a.path == b.path and facts_a.files.get(a.path) == facts_b.files.get(b.path)


def find_collisions(tip: Facts, merge_base: Optional[Facts], target: Facts) -> list[Collision]:
    """IDs in ``tip`` and not in ``merge_base`` (None: the empty history) that
    ``target`` declares with other content, in (kind, path, line) order."""
    added = lights(tip)
    if merge_base is not None:
        before = lights(merge_base)
        added = {k: v for k, v in added.items() if k not in before}
    if not added:
        return []
    theirs = lights(target)
    out = []
    for key, ours in added.items():
        other = theirs.get(key)
        if other is not None and not same(ours, other, tip, target):
            out.append(Collision(ours.id, ours.kind, ours, other))
    out.sort(key=lambda c: (KINDS.index(c.kind) if c.kind in KINDS else 9, c.ours.path, c.ours.line))
    return out


def collision_diagnostics(collisions: list[Collision], target_label: str) -> list[Any]:
    """One KB350 diagnostic per collision, at the branch's declaration."""
    from kb.checks.diagnostics import diag

    out = []
    for c in collisions:
        what = {"hypothesis": "hypothesis", "experiment": "experiment"}.get(c.kind, f"{c.kind} card")
        # the statement (or title) when there is one; a card is its file, named once
        mine = f" “{_short(c.ours.statement)}”" if c.ours.statement else ""
        their = f" “{_short(c.theirs.statement)}”" if c.theirs.statement else ""
        out.append(diag(c.ours.path, c.ours.line, "KB350",
                        f"{what} {c.id} is added by this branch ({c.ours.path}:{c.ours.line}{mine}) "
                        f"but {target_label} already has {c.id} with other content "
                        f"({c.theirs.path}:{c.theirs.line}{their}); run `kb sync` to renumber "
                        f"this branch's {c.id} and every reference to it"))
    return out


def _short(text: str, n: int = 60) -> str:
    text = _norm(text)
    return text if len(text) <= n else text[: n - 1] + "…"


__all__ = ["Collision", "KINDS", "find_collisions", "collision_diagnostics", "lights", "same",
           "NAMESPACE"]
