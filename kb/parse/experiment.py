"""``experiments/Exxx.md`` (DESIGN.md §2.2, seed hypothesis-tree.md).

Anchors: the title line ``# E004: H1.2 - <action>``, ``**Hypothesis**``,
``**Date**`` (YYYY-MM-DD), ``**Status**`` (进行中 | 已完成), and in ``## 结果``
the ``**结论**`` line whose first word is 支持 | 推翻 | 不确定. Everything else
is free text.
"""

from __future__ import annotations

import re
from datetime import date as _date
from typing import Any

from kb.model import Diagnostic, Experiment
from kb.parse.common import duplicate_key_error, fullwidth_colon_warning, path_stem
from kb.text import BLOCK_FIRST, SourceText, unclosed_block_warning
from kb.vocab import CONCLUSION, EXPERIMENT_STATUS

EXPERIMENT_ID = re.compile(r"E[0-9]{3,}")
# The rest is taken whole and stripped of trailing blanks in Python (what
# `(?P<rest>.*?)[ \t]*$` gives; the lazy group cost 3 µs a title).
_TITLE = re.compile(r"^#[ \t]+(?P<id>E[0-9]{3,})[ \t]*(?P<colon>[:：])[ \t]*(?P<rest>.*)$")
# The values are taken whole and stripped of trailing blanks in Python (what
# `(?P<value>.*?)[ \t]*$` gives: a lazy group tries the end at every character).
_BOLD = re.compile(r"^\*\*(?P<key>[^*]+?)\*\*[ \t]*(?P<colon>[:：])[ \t]*(?P<value>.*)$")
_SECTION = re.compile(r"^##[ \t]+(?P<name>.*)$")
_SINGLE = {"Hypothesis", "Date", "Status"}
#: The first characters of the lines the parser reads (a heading, a bold anchor) and
#: of those that may open a code or HTML block.
_READ_FIRST = frozenset("#*") | BLOCK_FIRST
_HYP_ACTION = re.compile(r"(?P<h>\S+)\s+-\s+(?P<a>.*)$")
_WORD_END = re.compile(r"[\s—\-–,，。:：(（+]")
#: ASCII digits only: ``\d`` also matches full-width and Arabic-Indic digits (２０２６), which
#: ``int`` reads too, so a date written with them would pass unnoticed.
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _on_calendar(date: str) -> bool:
    """Whether ``YYYY-MM-DD`` (ASCII digits, :data:`_DATE`) names a day of the calendar
    (not 2026-13-45, 2026-02-30, 0000-01-01). ``datetime`` is loaded with kb.config
    already (tomllib imports it)."""
    try:
        _date.fromisoformat(date)
    except ValueError:
        return False
    return True


def parse_experiment(src: SourceText) -> tuple[list[Experiment], list[Diagnostic]]:
    """Parse one experiment file. The ID comes from the title line, else the file name.

    Codes: KB130 missing or malformed title, KB131 bad date, KB132 result
    section without a 结论 line in a finished experiment, KB110, KB112.
    """
    path, lines = src.path, src.lines
    diags: list[Diagnostic] = []
    stem = path_stem(path)
    exp_id, hyp, action, title_line = stem, None, "", 0
    anchors: dict[str, str] = {}
    anchor_lines: dict[str, int] = {}
    sections: list[str] = []
    section = ""
    result_line = 0
    conclusion = None
    conclusion_line = 0
    read_first = _READ_FIRST
    # The lines opening with `#` or `*`, and those that may open a block (one
    # comprehension; the others are prose).
    marked = [i for i in range(src.body_start, len(lines)) if lines[i][:1] in read_first]
    if src.masked is None:
        if any(lines[i][0] in BLOCK_FIRST for i in marked):
            src.is_masked(marked[0])  # computes src.masked, read directly below
        else:
            src.unmasked_body()
    masked: list[bool] = src.masked  # type: ignore[assignment]
    for i in marked:
        line = lines[i]
        c = line[0]
        if c != "#" and c != "*":
            continue
        if masked[i]:
            continue
        if c == "*":
            if line[1:2] != "*":
                continue  # neither a section nor a bold anchor
        elif not title_line and line.startswith("# "):
            m = _TITLE.match(line)
            title_line = i + 1
            if m is None:
                diags.append(Diagnostic(
                    path=path, line=i + 1, code="KB130", severity="warning",
                    message="experiment title must read '# Exxx: <hypothesis ID> - <action>'"))
                continue
            if m.group("colon") == "：":
                diags.append(fullwidth_colon_warning(path, i + 1, line, "the title"))
            exp_id = m.group("id")
            rest = m.group("rest").rstrip(" \t")
            hm = _HYP_ACTION.match(rest)
            if hm:
                hyp, action = hm.group("h"), hm.group("a")
            else:
                hyp, action = (rest.split(None, 1) + [""])[:2] if rest else (None, "")
            continue
        else:
            m = _SECTION.match(line)
            if m is not None:
                section = m.group("name").rstrip(" \t")
                sections.append(section)
                if section == "结果":
                    result_line = i + 1
            continue  # a `#` line is never a bold anchor
        m = _BOLD.match(line)
        if m is None:
            continue
        key, colon, value = m.groups()
        key = key.strip()
        value = value.rstrip(" \t")
        if colon == "：":
            diags.append(fullwidth_colon_warning(path, i + 1, line, f"anchor '{key}'"))
        if key == "结论" and section == "结果":
            if conclusion_line:
                diags.append(duplicate_key_error(path, "结论", conclusion_line, i + 1, exp_id))
                continue
            conclusion_line = i + 1
            word = _WORD_END.split(value.strip(), maxsplit=1)[0]
            conclusion = CONCLUSION.canonical(word) if word else None
            if conclusion is None and word and not word.startswith("["):
                conclusion = word  # kept as read; kb verify reports the unknown word
            continue
        if key in _SINGLE and not section:
            if key in anchors:
                diags.append(duplicate_key_error(path, key, anchor_lines[key], i + 1, exp_id))
                continue
            anchors[key] = value
            anchor_lines[key] = i + 1
    if masked and masked[-1]:  # a block reaches the end of the file: was it ever closed?
        unclosed = unclosed_block_warning(src, "heading or anchor line")
        if unclosed is not None:
            diags.append(unclosed)
    if not title_line:
        first = next((k for k in range(src.body_start, len(lines)) if lines[k].strip()),
                     src.body_start)
        diags.append(Diagnostic(
            path=path, line=first + 1, code="KB130", severity="warning",
            message="experiment has no title line '# Exxx: <hypothesis ID> - <action>'"))
    date = anchors.get("Date")
    if date is not None and not (_DATE.fullmatch(date) and _on_calendar(date)):
        diags.append(Diagnostic(
            path=path, line=anchor_lines["Date"], code="KB131", severity="error",
            message=f"**Date** must be a date written YYYY-MM-DD, not '{date}'"))
    raw_status = anchors.get("Status", "")
    status = EXPERIMENT_STATUS.canonical(raw_status) or raw_status
    if result_line and conclusion_line == 0 and status == "已完成":
        diags.append(Diagnostic(
            path=path, line=result_line, code="KB132", severity="error",
            message=f"{exp_id} is 已完成 but its '## 结果' section (line {result_line}) has no "
            "'**结论**: 支持|推翻|不确定 …' line"))
    hyp_text = anchors.get("Hypothesis", "")
    hyp_id = hyp_text.split(None, 1)[0] if hyp_text else hyp
    exp = Experiment.build(
        id=exp_id, path=path, line=title_line or 1, title=action, status=status,
        hypothesis=hyp_id or hyp, hypothesis_text=hyp_text.split(None, 1)[1] if len(hyp_text.split(None, 1)) > 1 else "",
        action=action, date=date, conclusion=conclusion, conclusion_line=conclusion_line,
        sections=tuple(sections), anchors=anchors, anchor_lines=anchor_lines, frontmatter={},
    )
    return [exp], diags


#: A line that is a Markdown heading (any level): it ends a recorded result.
_ANY_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


def recorded_result(data: bytes, path: str, conclusion_line: int) -> list[tuple[int, str]]:
    """The result an experiment recorded, as ``(1-based line, text)`` pairs: its
    ``## 结果`` section from the line after the heading through the ``**结论**`` line at
    ``conclusion_line`` (the parser's) and the lines that continue that line (up to a
    blank line, a heading, a code or HTML block or another bold anchor).

    That is what ``kb exp result`` writes (``**数据**``, then ``**结论**: <word> —
    <reason>``) and what the section held before it. What comes after it -- a note in a
    paragraph or anchor of its own, ``## 影响``, the other sections -- is not part of it,
    nor are blank lines. [] when the bytes are not UTF-8 or that line is no ``**结论**``
    anchor of a ``## `` section.
    """
    from kb.text import DecodeError, decode

    try:
        text, bom = decode(data, path)
    except DecodeError:
        return []
    src = SourceText.from_text(text, path, bom)
    lines = src.lines
    at = conclusion_line - 1
    if not 0 <= at < len(lines) or _BOLD.match(lines[at]) is None:
        return []
    start = at
    while start > 0 and not (_SECTION.match(lines[start - 1]) and not src.is_masked(start - 1)):
        start -= 1
    if start == 0:
        return []  # no `## ` heading above it: not the parser's 结论
    end = at + 1
    while end < len(lines):
        line = lines[end]
        if (not line.strip() or _ANY_HEADING.match(line) or _BOLD.match(line)
                or src.is_masked(end)):
            break
        end += 1
    return [(i + 1, lines[i]) for i in range(start, end) if lines[i].strip()]


def result_parts(rows: list[tuple[int, str]]) -> list[tuple[str, str, int]]:
    """``(part, text, first line)`` of a recorded result (:func:`recorded_result`), each
    text with its runs of white space made one space: one part per bold anchor (its key:
    ``数据``; the lines below it that continue it are its text too), the ``结论`` anchor as
    two parts, ``结论`` (its word, canonical: 支持 and supports are one) and ``reason`` (the
    rest), and the free text as the part ``""``. Parts given twice are joined."""
    parts: dict[str, list[Any]] = {}
    key = ""
    prev = 0
    for ln, line in rows:
        m = _BOLD.match(line)
        if m is not None:
            key, text = m.group("key").strip(), m.group("value")
        else:
            if ln != prev + 1:
                key = ""  # after a blank line: free text again
            text = line
        prev = ln
        if key == "结论" and m is not None:
            value = text.strip()
            word, *rest = _WORD_END.split(value, maxsplit=1)
            canon = CONCLUSION.canonical(word) if word else None
            _join(parts, "结论", canon or word, ln)
            reason = value[len(word):].strip().lstrip("—-–:：,，。").strip() if rest else ""
            _join(parts, "reason", reason, ln)
            continue
        _join(parts, "reason" if key == "结论" else key, text, ln)
    return [(k, " ".join(" ".join(v[0]).split()), v[1]) for k, v in parts.items()]


def _join(parts: dict[str, list[Any]], key: str, text: str, line: int) -> None:
    have = parts.get(key)
    if have is None:
        parts[key] = [[text], line]
    else:
        have[0].append(text)
