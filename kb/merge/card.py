"""Problem cards merged as text, their derived ``被依赖`` taken from both sides.

``被依赖`` lists the problems whose ``依赖`` names the card (VIBEMATH-V3.md); kb
writes it whenever a problem is added or its ``依赖`` changes, so two branches that
each add a problem depending on one card both rewrite that card's one line, and
git's line merge stops on it although nobody disagrees. :func:`settle_derived`
gives the three versions one ``被依赖`` line before the line merge: the IDs of
both sides, less those either side removed from the base, in natural ID order
(what ``kb refresh`` computes when each side's list was right for its side; KB216
says so after the merge when it was not). Every other line is git's to merge.
"""

from __future__ import annotations

import re
from typing import Optional

from kb.parse.common import dump_list, parse_list
from kb.research.dependencies import natural_key

#: A card's ``被依赖`` anchor line (:data:`kb.parse.card.CARD_ANCHOR` with the key fixed):
#: the part before the value, and the value.
_DEPENDED_BY = re.compile(r"^(?P<head>- 被依赖[ \t]*[:：][ \t]?)(?P<value>.*?)[ \t]*(?P<end>\r?)$",
                          re.MULTILINE)


def _line(text: str) -> Optional[re.Match[str]]:
    """The one ``被依赖`` line of ``text``; None when it has none or more than one
    (a card kb would report: the line merge decides)."""
    found = list(_DEPENDED_BY.finditer(text))
    return found[0] if len(found) == 1 else None


def _ids(m: re.Match[str]) -> Optional[tuple[str, ...]]:
    """The IDs of a ``被依赖`` line; None when unreadable (KB121: kept for the line merge)."""
    ids, diags = parse_list(m.group("value"), "", 0, m.group(0), "被依赖")
    return None if any(d.severity == "error" for d in diags) else ids


def settle_derived(base: bytes, ours: bytes, theirs: bytes) -> Optional[tuple[bytes, bytes, bytes]]:
    """The three versions with one merged ``被依赖`` line, or None when there is nothing
    to settle (the sides agree, a side has no such line or an unreadable one, a text
    is not UTF-8): then the versions are merged as they are.

    The merged line is our line with the merged list (our spelling of the key kept);
    the base gets it too when it had the line, so the line merge sees no change there.
    """
    try:
        texts = [b.decode("utf-8") for b in (base, ours, theirs)]
    except UnicodeDecodeError:
        return None
    b_m, o_m, t_m = (_line(t) for t in texts)
    if o_m is None or t_m is None or o_m.group("value") == t_m.group("value"):
        return None
    o_ids, t_ids = _ids(o_m), _ids(t_m)
    b_ids = _ids(b_m) if b_m is not None else ()
    if o_ids is None or t_ids is None or b_ids is None:
        return None
    gone = (set(b_ids) - set(o_ids)) | (set(b_ids) - set(t_ids))
    merged = sorted((set(o_ids) | set(t_ids)) - gone, key=natural_key)

    def put(text: str, m: Optional[re.Match[str]]) -> bytes:
        if m is None:
            return text.encode("utf-8")
        line = o_m.group("head") + dump_list(merged) + m.group("end")
        return (text[:m.start()] + line + text[m.end():]).encode("utf-8")

    return put(texts[0], b_m), put(texts[1], o_m), put(texts[2], t_m)


def conflict_regions(merged: bytes) -> list[str]:
    """What each conflict of a line-merged card is about, for the merge's message: the
    anchors both sides changed there (``- 计划:``) or else its lines, with the line of its
    ``<<<<<<<`` marker: ``["line 11: 计划"]``."""
    text = merged.decode("utf-8", "replace")
    out: list[str] = []
    start: Optional[int] = None
    keys: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("<<<<<<<"):
            start, keys = n, []
        elif start is not None and line.startswith(">>>>>>>"):
            what = ", ".join(dict.fromkeys(keys)) if keys else f"lines {start + 1}–{n - 1}"
            out.append(f"line {start}: {what}")
            start = None
        elif start is not None:
            m = _ANCHOR_KEY.match(line)
            if m is not None:
                keys.append(m.group(1))
    return out


#: The key of a card's anchor line (``- 计划: …``).
_ANCHOR_KEY = re.compile(r"^- ([A-Za-z\u4e00-\u9fff/·]+)[ \t]*[:：]")
