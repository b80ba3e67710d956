"""What the cross-file rules read of a card, without its full parse (issue 18).

A range check (``kb verify --range``) runs the per-file rules only on the files
the range changed; for the others the cross-file rules (duplicate IDs,
dangling references, dependency lists and cycles, Verified cards) need only
each object's ID, kind, status and declaration line and its links. For a card
(problem, proposition, method, verified) those come from its H1 and its header
anchor lines, so :func:`light_card` reads just those -- and only when the file
is plain enough that the full parse (:func:`kb.parse.parse_file`) provably
gives the same values and no diagnostic at all. Anything else (a BOM, CRLF, a
NUL, a conflict marker, frontmatter, a header anchor line, the heading that ends
the header or an entry line that a code or HTML block masks, a missing or odd H1, a full-width colon, a repeated key, a list or a
number that does not read cleanly, a malformed, repeated or 0-numbered entry line, no anchor) returns
None and the caller parses the file in full. Tests compare the two on every
card of the shared cases and of the generated corpora.
"""

from __future__ import annotations

import re
from typing import Optional

from kb.parse.card import (APPLICATION, APPLICATION_HEAD, CARD_ANCHOR, ENTRY_HEAD, card_h1,
                           KIND_WORDS, nested_entry_lines, split_fields)
from kb.parse.common import ascii_decimal, parse_float, parse_list, parse_priority, path_stem
from kb.numbers import small_int
from kb.text import BLOCK_FIRST, MAYBE_BLOCK, SourceText, unclosed_block

__all__ = ["LIGHT_FORMATS", "LIGHT_READ_FORMATS", "LightResult", "light_card", "light_experiment", "light_read"]

#: The formats :func:`light_card` reads.
LIGHT_FORMATS = ("problem", "proposition", "method", "verified")

#: ``(objects, links, anchor lines)``: ``objects`` as the index's light rows ``(id,
#: kind, status, path, line, blob)``, ``links`` as ``(path, src, dst, kind)`` in the
#: order the full parse stores them, ``anchor lines`` as the object JSON's
#: ``anchor_lines`` (key -> 1-based line) of the file's one object.
LightResult = tuple[list[tuple[str, str, str, str, int, str]], list[tuple[str, str, str, str]],
                    dict[str, int]]

# The card parser's patterns and kb.text's test for a line that may open a code or
# HTML block: the light reading matches exactly the lines the parser matches.
_BLOCK_FIRST_BYTES = tuple(c.encode() for c in sorted(BLOCK_FIRST))
_BLOCK_LINE = re.compile(b"\n[" + re.escape("".join(sorted(BLOCK_FIRST)).encode()) + b"]")

#: The lines light_card reads after the H1 (the card parser skips them when masked).
_READ_LINES = ("## ", "### ", "- ")

#: Per format: the list anchors it reads, as (anchor key, link kind), in the order
#: the index stores their links (:data:`kb.index_rows._LINK_FIELDS` order).
_LISTS = {
    "problem": (("依赖", "depends"), ("被依赖", "depended_by")),
    "proposition": (("依赖", "depends"),),
    "method": (("可信断言", "claims"), ("上级体系", "parent_method"), ("子方法", "submethod"),
               ("相关", "related")),
    "verified": (),
}
#: Per format: the anchors read as numbers in [0,1] (KB124 when not a number).
_NUMBERS = {"problem": (), "proposition": ("概率", "价值/关键性"), "method": (), "verified": ("概率",)}
#: Per format: whether 优先级 is read (KB125 when not an integer or never).
_PRIORITY = {"problem": True, "proposition": True, "method": False, "verified": False}


def _plain_text(data: bytes) -> Optional[str]:
    """``data`` decoded, when :func:`kb.parse.parse_file` would read it as it is: no BOM,
    CR, NUL, conflict marker or frontmatter, valid UTF-8; else None (a full parse)."""
    if b"\r" in data or b"\x00" in data or b"<<<<<<<" in data \
            or data.startswith((b"\xef\xbb\xbf", b"-")):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def light_card(path: str, blob: str, data: bytes, fmt: str) -> Optional[LightResult]:
    """The light rows of one card version, or None when only a full parse can tell.

    ``path`` is KB-relative, ``blob`` the version's id, ``data`` its bytes, ``fmt``
    one of :data:`LIGHT_FORMATS`. The result equals what the index stores for the
    full parse (its ``objects`` rows' ``id kind status path line blob``, its
    ``links`` rows and its object's ``anchor_lines``), and the full parse has no
    diagnostic.
    """
    text = _plain_text(data) if fmt in LIGHT_FORMATS else None
    if text is None:
        return None
    # The header: up to the first `## ` line (all of the file without one).
    cut = text.find("\n## ")
    # A code or HTML block may mask lines: only lines starting with one of " \t<`~"
    # can open one (kb.text's own shortcut), found by a byte search first. The card
    # parser skips masked lines; of those read below (the header's `- ` anchor
    # lines and the first `## ` heading, which ends it, and every `### ` entry
    # line), a masked one sends the file to the full parse. The mask is computed
    # as the parser computes it (kb.text.compute_mask). Other masked lines (code,
    # its comments, a `## ` line in a fence of a later section) are read by neither.
    if (data[:1] in _BLOCK_FIRST_BYTES or _BLOCK_LINE.search(data) is not None) \
            and MAYBE_BLOCK.search(text) is not None:
        src = SourceText.from_text(text, path)
        every = src.lines
        src.is_masked(0)  # the parser's mask (kb.text.compute_mask), and its view of the end
        mask = src.masked or []
        last = len(every) if cut < 0 else text.count("\n", 0, cut) + 1  # the first `## ` line
        if any(m and (every[i].startswith("### ") or i <= last and every[i].startswith(_READ_LINES))
               for i, m in enumerate(mask)):
            return None
        if mask and mask[-1] and unclosed_block(src) is not None:
            return None  # a block never closed hides the rest (KB129)
    if nested_entry_lines(text):
        return None  # an entry heading in a block quote or list item (KB128)
    head = text.split("\n") if cut < 0 else text[:cut].split("\n")
    if cut < 0 and head and head[-1] == "":
        head.pop()
    n = len(head)
    i = 0
    while i < n and not head[i].strip():
        i += 1
    if i >= n or not head[i].startswith("# "):
        return None  # KB140
    h1 = card_h1(head[i])
    if h1 is None or h1[0] != KIND_WORDS[fmt]:
        return None  # KB141, or a title kb reads otherwise
    h1 = i + 1
    i += 1
    anchors: dict[str, str] = {}
    where: dict[str, int] = {}
    match = CARD_ANCHOR.match
    while i < n:
        line = head[i]
        if line[:2] == "- ":
            a = match(line)
            if a is not None:
                key, colon, value = a.groups()
                if colon != ":" or key in anchors:
                    return None  # KB110, KB112
                anchors[key] = value.rstrip()
                where[key] = i + 1
        elif line[:4] == "### ":
            return None  # an entry heading above every section (KB127), or another
        i += 1
    if not anchors:
        return None  # the full parse may add KB126
    if cut >= 0:
        numbers: set[tuple[str, int]] = set()
        at = text.find("\n### ", cut)
        while at >= 0:  # entry lines after the header (KB122, KB123, KB142)
            end = text.find("\n", at + 1)
            line = text[at + 1:] if end < 0 else text[at + 1:end]
            h = ENTRY_HEAD.match(line)
            at = -1 if end < 0 else text.find("\n### ", end)
            if h is None:
                if fmt == "method" and APPLICATION_HEAD.match(line) and (
                        (a := APPLICATION.match(line)) is None or small_int(a.group("n")) is None):
                    return None  # a malformed application line (KB122)
                continue
            fields = split_fields(h.group("rest"))
            if not (len(fields) == 4 and ascii_decimal(fields[0]) and fields[2].startswith("概率")
                    and fields[3].startswith("状态")) or parse_float(fields[2][2:]) is None:
                return None
            n = small_int(fields[0])
            if n is None:
                return None  # an entry number too long to be one (KB122)
            number = (h.group("kind"), n)
            if number in numbers or not number[1]:
                return None  # an entry numbered as an earlier one (KB142), or 0 (KB143)
            numbers.add(number)
    for key in _NUMBERS[fmt]:
        v = anchors.get(key)
        if v is not None and v.strip() and parse_float(v) is None:
            return None  # KB124
    if _PRIORITY[fmt] and "优先级" in anchors and parse_priority(anchors["优先级"]) is None:
        return None  # KB125
    obj_id = path_stem(path)
    links: list[tuple[str, str, str, str]] = []
    for key, kind in _LISTS[fmt]:
        if key not in anchors:
            continue
        raw = anchors[key]
        if raw.strip() == "[]":
            continue  # what parse_list reads it as: no item, no diagnostic
        ln = where[key]
        items, diags = parse_list(raw, path, ln, head[ln - 1], key)
        if diags:
            return None  # KB120, KB121
        links.extend((path, obj_id, x, kind) for x in items)
    if fmt == "proposition":
        src = anchors.get("来源问题", "").strip()
        if src:
            links.append((path, obj_id, src, "source"))
    status = anchors.get("结论" if fmt == "verified" else "状态", "").strip()
    return [(obj_id, fmt, status, path, h1, blob)], links, where


#: The formats :func:`light_read` reads: the cards and experiments.
LIGHT_READ_FORMATS = (*LIGHT_FORMATS, "experiment")


def light_read(path: str, blob: str, data: bytes, fmt: str) -> Optional[tuple]:
    """:func:`light_card` for a card, :func:`light_experiment` for an experiment
    (None for another format)."""
    if fmt == "experiment":
        return light_experiment(path, blob, data)
    return light_card(path, blob, data, fmt)


def light_experiment(path: str, blob: str, data: bytes) -> Optional[tuple]:
    """The light rows of one experiment version, or None when only a full parse can tell.

    The experiment parser itself (:func:`kb.parse.experiment.parse_experiment`) on a
    file plain enough that :func:`kb.parse.parse_file` would add nothing to what it
    finds (the refusals of :func:`light_card`: a BOM, CRLF, a NUL, a conflict marker,
    frontmatter); a parse with any diagnostic, or that read nothing (KB126), returns
    None. What is saved is the rows' storage, not the parse. The fourth item is
    ``{"date": …}``, the JSON field the dashboard rule reads of every experiment.
    """
    from kb.parse.experiment import parse_experiment
    from kb.text import SourceText

    text = _plain_text(data)
    if text is None:
        return None
    objects, diags = parse_experiment(SourceText.from_text(text, path))
    if diags or len(objects) != 1:
        return None
    exp = objects[0]
    if not exp.anchors and exp.conclusion is None:
        return None  # the full parse adds KB126
    exp_id, status, title_line, date = exp.id, exp.status, exp.line, exp.date
    hypothesis, anchor_lines = exp.hypothesis, dict(exp.anchor_lines)
    links = [(path, exp_id, hypothesis, "tests")] if hypothesis else []
    return ([(exp_id, "experiment", status, path, title_line, blob)], links, anchor_lines,
            {"date": date})
