"""Near-duplicate text: Jaccard similarity over English words and Chinese bigrams.

Both the generation loop (a candidate duplicating a pool item, HYPOTHESIS-GEN.md)
and transcript ingestion (thoughts repeating one another, seeds/explore-tree.md)
call two texts near-duplicates at Jaccard ≥ 0.85 over the same tokens.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+(?:['’-][a-z0-9]+)*")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def tokens(text: str) -> frozenset[str]:
    """English words (lower-cased) and Chinese character bigrams (a lone character as itself)."""
    low = text.lower()
    out = set(_WORD.findall(low))
    for run in _CJK.findall(low):
        if len(run) == 1:
            out.add(run)
        out.update(run[i:i + 2] for i in range(len(run) - 1))
    return frozenset(out)


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str], *,
            both_empty: float) -> float:
    """|A ∩ B| / |A ∪ B| in [0, 1]; ``both_empty`` when neither set has a token."""
    if not a and not b:
        return both_empty
    return len(a & b) / len(a | b)
