"""Render hypotheses in the ``tree.md`` format (DESIGN.md §2.1)."""

from __future__ import annotations

from typing import Iterable

from kb.model import Hypothesis
from kb.vocab import HYPOTHESIS_STATUS


def id_depth(hid: str) -> int:
    """``H1`` -> 1, ``H1.2.3`` -> 3 (the heading has ``1 + depth`` ``#``)."""
    return hid.count(".") + 1


def evidence_value(ids: Iterable[str]) -> str:
    """``Evidence:`` value: ``(empty)`` or IDs joined by ``, ``."""
    ids = list(ids)
    return ", ".join(ids) if ids else "(empty)"


def hypothesis_block(h: Hypothesis, locale: str = "zh") -> list[str]:
    """The heading and anchor block of ``h`` (no trailing blank line).

    Anchors in the seed's order: Status, Evidence, Children (only when it has
    children), Parent (every node below the top level).
    """
    lines = [f"{'#' * (1 + id_depth(h.id))} {h.id}: {h.statement}",
             f"Status: {HYPOTHESIS_STATUS.word(h.status, locale)}",
             f"Evidence: {evidence_value(h.evidence)}"]
    if h.children:
        lines.append(f"Children: {', '.join(h.children)}")
    if h.parent:
        lines.append(f"Parent: {h.parent}")
    return lines


def render_tree(hypotheses: Iterable[Hypothesis], title: str = "Hypothesis Tree",
                locale: str = "zh") -> str:
    """A whole ``tree.md`` for ``hypotheses`` in the given order (LF endings)."""
    out = [f"# {title}", ""]
    for h in hypotheses:
        out.extend(hypothesis_block(h, locale))
        out.append("")
    return "\n".join(out[:-1]) + "\n" if len(out) > 2 else f"# {title}\n"
