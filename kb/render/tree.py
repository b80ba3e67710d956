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


def hypothesis_block(h: Hypothesis, locale: str = "zh", separator: str = ":") -> list[str]:
    """The heading and anchor block of ``h`` (no trailing blank line); ``separator``
    follows the ID (the KB's: :func:`kb.parse.tree.written_separator`).

    Anchors in the seed's order: Status, Evidence, Children (only when it has
    children), Parent (every node below the top level).
    """
    lines = [f"{'#' * (1 + id_depth(h.id))} {h.id}{separator} {h.statement}",
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


# -- splice helpers: the new text of one existing line -----------------------------
# Each keeps everything of the line it does not change (the key as written, the
# colon, the spacing before the value), so an edit touches only its own bytes.

def _anchor_match(line: str):  # noqa: ANN202 - re.Match
    from kb.parse.tree import ANCHOR_LINE

    return ANCHOR_LINE.match(line)


def set_anchor_value(line: str, value: str) -> str:
    """``Status: 待验`` -> ``Status: <value>``, keeping the key and colon as written."""
    m = _anchor_match(line)
    if m is None:
        raise ValueError(f"not an anchor line: {line!r}")
    start, end = m.span("value")
    if start == end:  # an empty value: `Status:` -> `Status: <value>`
        head = line[:start].rstrip(" \t")
        return f"{head} {value}"
    return line[:start] + value + line[end:]


def append_to_list_line(line: str, item: str) -> str:
    """``Evidence: E001`` -> ``Evidence: E001, E002``; ``(empty)`` is replaced by the item.

    The items already there keep their own separators (``，`` ``、`` ``;``).
    """
    from kb.parse.common import split_id_list

    m = _anchor_match(line)
    if m is None:
        raise ValueError(f"not an anchor line: {line!r}")
    if not split_id_list(m.group("value")):
        return set_anchor_value(line, item)
    start, end = m.span("value")
    return line[:end] + ", " + item + line[end:]


def list_line(key: str, items: Iterable[str]) -> str:
    """A new ``Children:`` / ``Evidence:`` line."""
    return f"{key}: {evidence_value(items)}"


def set_statement(heading: str, hid: str, statement: str,
                  separators: tuple[str, ...] = (":", "：")) -> str:
    """The heading line of ``hid`` with a new statement (the ``#`` marks, ID and separator
    as written; ``separators``: the KB's ``[kb] heading_separators``)."""
    import re

    from kb.parse.tree import written_separator

    sep = "|".join(re.escape(s) for s in separators)
    m = re.match(rf"^(#+[ \t]+{re.escape(hid)}[ \t]*(?:{sep})[ \t]*)", heading)
    if m is None:
        return f"{'#' * (1 + id_depth(hid))} {hid}{written_separator(separators)} {statement}"
    return m.group(1) + statement
