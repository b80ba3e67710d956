"""The status rule of the hypothesis-tree seed (hypothesis-tree.md), pure.

An experiment's conclusion about a hypothesis is 支持 (supports) or 推翻
(refutes); :func:`evidence_status` gives the status the evidence rules to.
"""

from __future__ import annotations

from typing import Iterable


def evidence_status(conclusions: Iterable[str | None]) -> str | None:
    """被推翻 if any conclusion refutes, else 被支持 if any supports, else None."""
    cs = set(conclusions)
    if "推翻" in cs:
        return "被推翻"
    if "支持" in cs:
        return "被支持"
    return None



__all__ = ["evidence_status"]
