"""Entries two branches numbered alike on one card (``kb verify --against``, ``kb sync``).

A card's entries are numbered per kind (``### 解法 1``, ``### 证明 2``), and ``kb entry
add`` takes one past the kind's highest: two branches from the same main that each add
a solution to ``q2`` both write ``解法 1``. The number names the entry everywhere else —
``kb verdict q2#解法1``, its record ``r-q2-s1_<time>.json`` — so the merge could keep
neither side's meaning by itself. What the branch added *as a whole* (its tip against its
merge-base with the target) is compared with the target's tip, card by card: an entry
number the branch added that the target added too, with another title or text, is a
collision; so is one with the same title and text but another probability or status (the
merge could keep only one of them). The same entry on both sides (a cherry-pick) is none.
A card the branch added itself is not looked into: its ID is the collision
(:mod:`kb.merge.collide`).

:func:`find_entry_collisions` finds them and :func:`entry_collision_diagnostics` reports
them as KB350; ``kb sync`` numbers the entries of that kind the branch added after
every number the target's card and the base hold (:func:`entry_moves`,
:func:`kb.merge.renumber.plan_entries`), in the branch's order, so the merged card reads
theirs, then ours, numbered in sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kb.checks.facts import Facts
from kb.merge.collide import brief, norm

#: Card kinds whose entries are numbered (problems: 解法; propositions: 证明, 证伪).
ENTRY_CARDS = ("problem", "proposition")


@dataclass(frozen=True)
class EntryCollision:
    """One entry number added on the branch that the target added to the same card.

    ``card`` the card's ID; ``kind`` 解法 | 证明 | 证伪; ``number`` the entry number;
    ``path``/``line``/``title`` the branch's entry, ``their_*`` the target's.
    """

    card: str
    kind: str
    number: int
    path: str
    line: int
    title: str
    their_path: str
    their_line: int
    their_title: str

    @property
    def key(self) -> str:
        """The entry as ``kb verdict`` names it: ``q2#解法1``."""
        return entry_key(self.card, self.kind, self.number)


def entry_key(card: str, kind: str, number: int) -> str:
    """``q2#解法1``: card ``q2``'s entry ``解法 1`` (a ``Kb-Renumber:`` trailer's side)."""
    return f"{card}#{kind}{number}"


def _cards(facts: Facts) -> dict[str, Any]:
    """card ID -> its first declaration (problems and propositions)."""
    out: dict[str, Any] = {}
    for p in sorted({o.path for o in facts.of_kind(*ENTRY_CARDS)}):
        for x in facts.light(p):
            if x.kind in ENTRY_CARDS:
                out.setdefault(x.id, x)
    return out


def _entries(facts: Facts, path: str, card: str) -> dict[tuple[str, int], Any]:
    """(kind, number) -> the entry of ``card`` at ``path`` (the first of a repeated
    number: KB142 reports the other)."""
    out: dict[tuple[str, int], Any] = {}
    for r in facts.records(path):
        if r.id == card:
            for e in r.entries or ():
                out.setdefault((e.kind, e.number), e)
    return out


def find_entry_collisions(tip: Facts, merge_base: Optional[Facts], target: Facts) -> list[EntryCollision]:
    """Entry numbers of cards all three snapshots hold that ``tip`` added since
    ``merge_base`` and ``target`` added too with another title or text, in (path, line)
    order. With no merge base (None: no common history) no card is shared: []."""
    if merge_base is None:
        return []
    ours, base, theirs = _cards(tip), _cards(merge_base), _cards(target)
    todo = []
    for card, x in ours.items():
        b, t = base.get(card), theirs.get(card)
        if b is None or t is None or x.kind != t.kind:
            continue
        was = merge_base.files.get(b.path)
        if tip.files.get(x.path) == was or target.files.get(t.path) == was:
            continue  # one side left the card as it was: nothing added on both
        old = _entries(merge_base, b.path, card)
        mine = {k: e for k, e in _entries(tip, x.path, card).items() if k not in old}
        if not mine:
            continue
        their = {k: e for k, e in _entries(target, t.path, card).items() if k not in old}
        both = [(k, mine[k], their[k]) for k in mine if k in their]
        if both:
            todo.append((card, x.path, t.path, both))
    if not todo:
        return []
    from kb.checks.history_rules import entry_texts

    my_texts = entry_texts(tip, sorted({p for _c, p, _t, _b in todo}))
    their_texts = entry_texts(target, sorted({t for _c, _p, t, _b in todo}))
    out = []
    for card, path, tpath, both in todo:
        for (kind, n), e, f in both:
            a = my_texts.get(path, {}).get((card, e.line))
            b = their_texts.get(tpath, {}).get((card, f.line))
            if (norm(e.title), e.probability, e.status) == (norm(f.title), f.probability, f.status) \
                    and a is not None and b is not None and norm(a) == norm(b):
                continue  # the same entry on both sides (heading and text: what the merge keeps once)
            out.append(EntryCollision(card, kind, n, path, e.line, e.title, tpath, f.line, f.title))
    out.sort(key=lambda c: (c.path, c.line))
    return out


@dataclass(frozen=True)
class EntryMoves:
    """The entries of one kind the branch added to one card, to be numbered after the
    target's: ``numbers`` in the order of the branch's card, ``kept`` every number of the
    kind that stays (the base's, the target's, the branch's others), ``path`` the
    branch's card file."""

    card: str
    kind: str
    path: str
    numbers: tuple[int, ...]
    kept: frozenset[int]


def entry_moves(tip: Facts, merge_base: Facts, target: Facts,
                collisions: list[EntryCollision]) -> list[EntryMoves]:
    """For each card and kind with a collision, every entry of that kind the branch added
    (not the colliding ones alone): numbered after the target's in the branch's order,
    they read in the merged card as they were written (``kb sync``)."""
    out = []
    cards = _cards(merge_base) if collisions else {}
    for card, kind, path, tpath in dict.fromkeys((c.card, c.kind, c.path, c.their_path)
                                                 for c in collisions):
        b = cards.get(card)
        old = _entries(merge_base, b.path, card) if b is not None else {}
        mine = _entries(tip, path, card)
        added = sorted((e.line, n) for (k, n), e in mine.items() if k == kind and (k, n) not in old)
        theirs = {n for (k, n) in _entries(target, tpath, card) if k == kind}
        kept = {n for (k, n) in mine if k == kind and (k, n) in old} | theirs \
            | {n for (k, n) in old if k == kind}
        out.append(EntryMoves(card, kind, path, tuple(n for _ln, n in added), frozenset(kept)))
    return out


def entry_collision_diagnostics(collisions: list[EntryCollision], target_label: str) -> list[Any]:
    """One KB350 diagnostic per entry collision, at the branch's entry heading."""
    from kb.checks.diagnostics import diag

    return [diag(c.path, c.line, "KB350",
                 f"entry {c.kind} {c.number} of {c.card} is added by this branch "
                 f"({c.path}:{c.line} “{brief(c.title)}”) but {target_label} already added "
                 f"{c.kind} {c.number} to {c.card} with other content ({c.their_path}:"
                 f"{c.their_line} “{brief(c.their_title)}”); run `kb sync` to renumber this "
                 f"branch's entry, its records and every reference to {c.key}")
            for c in collisions]


__all__ = ["ENTRY_CARDS", "EntryCollision", "EntryMoves", "entry_collision_diagnostics",
           "entry_key", "entry_moves", "find_entry_collisions"]
