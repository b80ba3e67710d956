"""``DASHBOARD.md`` (DESIGN.md §2.3): generated, except ``## Next Steps``.

The only thing read back is the Next Steps section, kept verbatim (lines
without their endings) so that ``kb dashboard`` can carry it over.
"""

from __future__ import annotations

from kb.text import SourceText

NEXT_STEPS = "## Next Steps"


def next_steps(src: SourceText) -> list[str] | None:
    """The lines of the ``## Next Steps`` section (heading excluded), or None if absent.

    The section runs to the next ``## `` heading outside code, or to the end.
    """
    lines = src.lines
    start = None
    for i in range(src.body_start, len(lines)):
        if lines[i].strip() == NEXT_STEPS and not src.is_masked(i):
            start = i + 1
            break
    if start is None:
        return None
    end = len(lines)
    for j in range(start, len(lines)):
        if lines[j].startswith("## ") and not src.is_masked(j):
            end = j
            break
    return lines[start:end]
