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
from typing import Any, Mapping, Optional

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


def norm(text: str) -> str:
    """``text`` with every run of white space made one space (how two declarations compare)."""
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
        return norm(a.statement) == norm(b.statement)
    if a.kind == "experiment":
        return a.hypothesis == b.hypothesis and norm(a.statement) == norm(b.statement)
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
        mine, their = _said(c.ours), _said(c.theirs)
        out.append(diag(c.ours.path, c.ours.line, "KB350",
                        f"{what} {c.id} is added by this branch ({c.ours.path}:{c.ours.line}{mine}) "
                        f"but {target_label} already has {c.id} with other content "
                        f"({c.theirs.path}:{c.theirs.line}{their}); run `kb sync` to renumber "
                        f"this branch's {c.id} and every reference to it"))
    return out


def lost_at_merge(idx: Any, k: Any, heads: list[str], base: str, new: Any, label: str,
                  overrides: Mapping[str, str]) -> list[Any]:
    """KB350 diagnostics of a merge of ``heads`` (commits; ``base`` their merge base) into
    snapshot ``new`` (labelled ``label``): a card two heads each added since ``base``
    under one ID with files of their own, of which the merge holds one side's file as it
    was and not the other's. A forge (or ``git checkout --ours``) resolving the add/add
    conflict so kept one card and dropped the other, and no rule judging the merge against
    a parent sees it: against its own parent the kept card is only edited. A merge that
    holds both (a duplicate ID: the snapshot rules say it) or neither as it was (a
    resolution written by hand) is not judged here; ``overrides`` (``Kb-Override:`` or
    ``Kb-Renumber:`` naming the ID) accept it. Raises GitError when git fails."""
    from kb.checks.changes import diff_commits
    from kb.checks.diagnostics import diag
    from kb.repo import commit_snapshot

    added: list[tuple[str, Facts, dict[tuple[str, str], Light]]] = []
    for h in heads:
        paths = [ch.path for ch in diff_commits(k, base, h) if ch.old is None and ch.new]
        if not paths:
            continue
        side = Facts(idx, commit_snapshot(k, h), h[:10], ensure=paths)
        cards: dict[tuple[str, str], Light] = {}
        for p in paths:
            if p in side.files:
                for x in side.light(p):
                    if x.kind in CARD_KINDS:
                        cards.setdefault((x.ns, x.id), x)
        if cards:
            added.append((h, side, cards))
    out = []
    for i, (ha, fa, ca) in enumerate(added):
        for hb, fb, cb in added[i + 1:]:
            for key in sorted(ca.keys() & cb.keys()):
                a, b = ca[key], cb[key]
                if same(a, b, fa, fb):
                    continue
                kept_a = new.files.get(a.path) == fa.files.get(a.path)
                if kept_a == (new.files.get(b.path) == fb.files.get(b.path)):
                    continue  # both kept (a duplicate ID) or neither as it was
                (kh, kept), (lh, lost) = ((ha, a), (hb, b)) if kept_a else ((hb, b), (ha, a))
                what = f"{kept.kind} card"
                msg = (f"{what} {kept.id} was added on both sides since the merge base "
                       f"{base[:10]}: {kh[:10]}'s ({kept.path}{_said(kept)}) and {lh[:10]}'s "
                       f"({lost.path}{_said(lost)}); {label} kept {kh[:10]}'s and {lh[:10]}'s "
                       f"card is gone — bring it back under a new ID (`git show "
                       f"{lh[:10]}:{k.prefix}{lost.path}`), or renumber one side before "
                       f"merging (`kb sync`)")
                reason = overrides.get(kept.id)
                if reason is not None:
                    out.append(diag(kept.path, kept.line, "KB350",
                                    f"{msg} — accepted: Kb-Override: {kept.id} {reason}".rstrip(),
                                    severity="info"))
                else:
                    out.append(diag(kept.path, kept.line, "KB350", msg))
    return out


def _said(x: Light) -> str:
    """`` “statement”`` of a declaration that has one, else ``""``."""
    return f" “{brief(x.statement)}”" if x.statement else ""


def brief(text: str, n: int = 60) -> str:
    """``text`` normalised (:func:`norm`) and cut to ``n`` characters (… marks a cut), as a
    KB350 message quotes a statement or title."""
    text = norm(text)
    return text if len(text) <= n else text[: n - 1] + "…"


__all__ = ["Collision", "KINDS", "brief", "norm", "find_collisions", "collision_diagnostics", "lights", "lost_at_merge", "same",
           "NAMESPACE"]
