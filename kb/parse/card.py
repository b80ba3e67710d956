"""Vibe Math v3 cards: problems, propositions, methods, verified, directions.

Format reference: VIBEMATH-V3.md (summary in DESIGN.md §2.4). A card is an H1
``# <kind word>｜<title>``, then ``- key: value`` anchor lines up to the first
``## `` heading outside a fence, then sections of free prose holding entry
lines ``### 解法 N｜<title>｜概率<x>｜状态<y>``. The object ID is the file
name without ``.md``; a proposition's category is its folder.

kb differs from Vibe Math on its quirks: ``：`` lines are read with a warning,
a repeated key is an error, a list anchor that is not JSON is a warning (comma
list) or an error (unreadable), and probabilities are never clamped.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from kb.model import (
    Application,
    Diagnostic,
    Entry,
    Fix,
    KBObject,
    Method,
    Problem,
    ProgressDirection,
    Proposition,
    Record,
    VerifiedCard,
)
from kb.parse.common import (
    NESTED_FIRST,
    NESTED_HEADING,
    ascii_decimal,
    duplicate_key_error,
    fullwidth_colon_warning,
    nested_container,
    parse_float,
    parse_list,
    parse_priority,
    path_parts,
    path_stem,
)
from kb.numbers import MAX_DIGITS, quoted, small_int
from kb.text import SourceText, unclosed_block_warning

KIND_WORDS = {"problem": "问题", "proposition": "命题", "method": "方法", "verified": "已验证"}
#: The H1 a card of each format opens with (KB140 names it when it is missing or is
#: another heading).
_H1_SHAPES = {**{fmt: f"# {word}｜<title>" for fmt, word in KIND_WORDS.items()},
              "direction": "# 研究方向日志｜<problem> / <direction>"}
LIST_KEYS = ("依赖", "被依赖", "可信断言", "上级体系", "子方法", "相关")

#: A card's H1, ``# 问题｜title`` (word, title: strip both of their trailing spaces and
#: tabs, :func:`card_h1`); :mod:`kb.parse.light` reads with it too. Linear in the line:
#: the spaces after ``#`` are all taken (``(?![ \t])``) and the word is one greedy run to
#: the first bar, so no two repetitions share a text (a lazy word before ``[ \t]*`` tried
#: every split of a run of spaces: cubic, a minute for a 3,000-character line).
CARD_H1 = re.compile(r"^#[ \t]+(?![ \t])(?P<word>[^｜|]*)[｜|][ \t]*(?P<title>.*)$")


def card_h1(line: str) -> tuple[str, str] | None:
    """``(word, title)`` of a card's H1 line ``# 问题｜title`` (each without its trailing
    spaces and tabs), or None when the line is no such heading."""
    m = CARD_H1.match(line)
    if m is None:
        return None
    return m.group("word").rstrip(" \t"), m.group("title").rstrip(" \t")
#: A card's anchor line ``- key: value`` (key, colon, value).
CARD_ANCHOR = re.compile(r"^- (?P<key>[A-Za-z\u4e00-\u9fff/·]+)[ \t]*(?P<colon>[:：])[ \t]?(?P<value>.*)$")
#: An entry's heading ``### 解法|证明|证伪 …`` (kind, rest).
ENTRY_HEAD = re.compile(r"^###[ \t]+(?P<kind>解法|证明|证伪)[ \t]*(?P<rest>.*)$")
#: An application line of a method: ``### 应用 N｜<time>｜问题 <qid> 方向 <dir>`` (方向 optional).
APPLICATION = re.compile(
    r"^###[ \t]+应用[ \t]*(?P<n>[0-9]+)｜(?P<time>[^｜]*)｜问题[ \t]*(?P<q>\S+)(?:[ \t]+方向[ \t]*(?P<d>\S+))?[ \t]*$"
)
#: A heading meant as an application line of a method (``### 应用 N…``, or ``### 应用``
#: with separators), whether it reads as one (:data:`APPLICATION`) or not.
APPLICATION_HEAD = re.compile(r"^###[ \t]+应用(?:[ \t]*\d|.*[｜|])")  # (`.*` reads the spaces)
_SEP = re.compile(r"(?<!\\)｜")
#: (card format, entry kind) -> the section the card format reads it under.
_ENTRY_SECTION = {
    ("problem", "解法"): "解法候选", ("proposition", "证明"): "证明尝试",
    ("proposition", "证伪"): "证伪尝试", ("method", "应用"): "应用记录",
}
_new = object.__new__


def _set_fields(obj: Any, values: dict[str, Any]) -> None:
    object.__setattr__(obj, "__dict__", values)


def unescape_field(s: str) -> str:
    """Undo the entry-field escapes of VIBEMATH-V3.md (``\\\\``, ``\\｜``, ``\\n``)."""
    if "\\" not in s:
        return s
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            out.append({"\\": "\\", "｜": "｜", "n": "\n"}.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def split_fields(rest: str) -> list[str]:
    """Split an entry line on unescaped ``｜`` (``\\\\｜`` is a backslash, then a split)."""
    if "\\" not in rest:
        return rest.split("｜")
    fields, cur, i = [], [], 0
    while i < len(rest):
        c = rest[i]
        if c == "\\" and i + 1 < len(rest):
            cur.append(rest[i:i + 2])
            i += 2
            continue
        if c == "｜":
            fields.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    fields.append("".join(cur))
    return fields


_SPACED = re.compile(r"^(?P<key>概率|状态)[ \t]+")


def canonical_entry_line(kind: str, rest: str) -> str | None:
    """The entry line ``### <kind> <rest>`` in the canonical form, when ``rest`` is
    malformed only by blanks around its ``｜`` separators (``1 ｜ t ｜ 概率0.5 ｜ 状态未定论``),
    by half-width ``|`` separators (with no ``｜`` in the line), or by a blank after
    ``概率`` / ``状态``; None when more is wrong. The result reads back as an entry with
    the same number, title, probability and status (checked here)."""
    fields = split_fields(rest) if "｜" in rest else rest.split("|")
    if len(fields) != 4:
        return None
    fields = [_SPACED.sub(r"\g<key>", f.strip(" \t")) for f in fields]
    number, title, prob, status = fields
    if not ascii_decimal(number) or not title or not prob.startswith("概率") \
            or not status.startswith("状态") or parse_float(prob[2:]) is None \
            or small_int(number) is None:
        return None
    line = f"### {kind} {number}｜{title}｜{prob}｜{status}"
    m = ENTRY_HEAD.match(line)
    again = split_fields(m.group("rest")) if m else []
    if [f.strip() if k == 0 else f for k, f in enumerate(again)] != fields:
        return None
    return line


def canonical_application_line(line: str) -> str | None:
    """The application line ``line`` (``### 应用 …``) in the canonical form, when it is
    malformed only by blanks around its ``｜`` separators or by half-width ``|``
    separators (with no ``｜`` in the line); None when more is wrong. The result reads
    back as an application with the same number, time and problem (checked here)."""
    rest = line.split("应用", 1)[1]
    fields = [f.strip(" \t") for f in (rest.split("｜") if "｜" in rest else rest.split("|"))]
    if len(fields) != 3 or not ascii_decimal(fields[0]) or not all(fields):
        return None
    fixed = f"### 应用 {fields[0]}｜{fields[1]}｜{fields[2]}"
    m = APPLICATION.match(fixed)
    if m is None or (m.group("n"), m.group("time")) != (fields[0], fields[1]):
        return None
    return fixed


def nested_entry_lines(text: str) -> list[int]:
    """0-based indices of the lines of ``text`` holding an entry or application heading
    inside a block quote, a list item or an indent (``> ### 解法 2｜…``, ``- ### 解法 3｜…``),
    code blocks not excluded. Cheap for a card without them: one search per ``###`` in
    the text, and each of a plain card opens its line."""
    out: list[int] = []
    at = text.find("###")
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        if at != start and text[start:start + 1] in NESTED_FIRST:
            m = NESTED_HEADING.match(text[start:end].rstrip("\r"))
            if m is not None and m.group("marks") == "###":
                line = "### " + m.group("text")
                if ENTRY_HEAD.match(line) or APPLICATION.match(line):
                    out.append(text.count("\n", 0, start))
        at = text.find("###", end)
    return out


def entry_heading(line: str) -> tuple[str, int] | None:
    """(kind, number) of an entry heading the card parser reads (``### 解法 2｜t｜概率0.3｜
    状态未定论``), None for any other line: a malformed one (KB122) is no entry. The same
    reading as the parser's (``_Card._entry``), for the card merge driver."""
    m = ENTRY_HEAD.match(line)
    if m is None:
        return None
    fields = split_fields(m.group("rest"))
    if not _entry_shaped(fields) or parse_float(fields[2][2:]) is None:
        return None
    number = small_int(fields[0])
    return None if number is None else (m.group("kind"), number)


def _entry_shaped(fields: list[str]) -> bool:
    """Whether an entry heading's ``｜`` fields are ``N｜title｜概率x｜状态y``."""
    return len(fields) == 4 and ascii_decimal(fields[0]) and fields[2].startswith("概率") \
        and fields[3].startswith("状态")


class _Card:
    """What every card format shares: H1, header anchors, sections, entries."""

    def __init__(self, src: SourceText, fmt: str) -> None:
        self.src = src
        self.fmt = fmt
        self.path = src.path
        self.diags: list[Diagnostic] = []
        self.word = ""
        self.h1_title = ""
        self.line = 1
        self.anchors: dict[str, str] = {}
        self.anchor_lines: dict[str, int] = {}
        self.sections: dict[str, int] = {}
        self.section_text: dict[str, list[str]] = {}
        self.entries: list[Entry] = []
        self.applications: list[Application] = []
        self._scan()
        entries = self.entries
        if len(entries) > 1 or (entries and not entries[0].number):
            self._numbers()
        if src.masked and src.masked[-1]:  # a block reaches the end: was it ever closed?
            unclosed = unclosed_block_warning(src, "entry or anchor line")
            if unclosed is not None:
                self.diags.append(unclosed)

    def _scan(self) -> None:
        src, lines, path = self.src, self.src.lines, self.path
        i, n = src.body_start, len(lines)
        while i < n and not lines[i].strip():
            i += 1
        if i < n and lines[i].startswith("# "):
            h1 = card_h1(lines[i])
            if h1 is not None:
                self.word, self.h1_title = h1
            if (_DIRECTION_H1.match(lines[i]) if self.fmt == "direction" else h1) is None:
                self._other_h1(i)  # `# x`: another heading (the anchors are still read)
            self.line = i + 1
            i += 1
        else:
            self.diags.append(Diagnostic(
                path=path, line=i + 1 if i < n else 1, code="KB140", severity="warning",
                message=f"card has no H1 '{_H1_SHAPES.get(self.fmt, '# 问题｜<title>')}'"))
        # Header anchors: up to the first `## ` line outside a fence.
        if i < n:
            src.is_masked(i)  # computes src.masked, read directly below
        masked = src.masked
        anchors, anchor_lines, match = self.anchors, self.anchor_lines, CARD_ANCHOR.match
        orphans: list[int] = []
        for i in range(i, n):
            line = lines[i]
            two = line[:2]
            if two == "- ":
                if not masked[i]:  # type: ignore[index]
                    m = match(line)
                    if m:
                        key, colon, value = m.groups()
                        if colon == "：":
                            self.diags.append(fullwidth_colon_warning(path, i + 1, line, f"anchor '{key}'"))
                        if key in anchors:
                            self.diags.append(
                                duplicate_key_error(path, key, anchor_lines[key], i + 1, self.path))
                        else:
                            anchors[key] = value.rstrip()
                            anchor_lines[key] = i + 1
            elif two == "##" and not masked[i]:  # type: ignore[index]
                if line[2:3] == " ":
                    break
                if line[2:4] == "# ":  # `### …` above every section: read nowhere
                    orphans.append(i)
        else:
            i = n
        if orphans:
            self._orphans(orphans, i)
        if "###" in src.text:
            self._nested(nested_entry_lines(src.text))
        # Sections, entry lines, applications: only `## ` / `### ` lines matter,
        # so visit the heading lines alone (found by one regex over the text).
        heads = [j for j in src.heading_indices() if j >= i and lines[j].startswith(("## ", "### "))
                 and not masked[j]]  # type: ignore[index]
        if "<" in src.text:  # an entry heading an HTML block swallowed (KB128)
            self._in_html_block(i)
        if "###\t" in src.text:  # an entry heading with a tab for its space (KB122)
            self._tabbed(i)
        if not heads:
            return
        ends = heads[1:] + [n]
        section = ""
        sections, section_text = self.sections, self.section_text
        for j, end in zip(heads, ends):
            line = lines[j]
            if line[2] == " ":  # `## `
                section = line[3:].strip()
                sections[section] = j + 1
                section_text[section] = lines[j + 1:end]
                continue
            entry = self._entry(j, line)
            if entry is None:
                self._application(j, line)
                if section:
                    self.section_text[section].extend(lines[j:end])
                continue
            self._close(entry, lines[j + 1:end])

    def _other_h1(self, i: int) -> None:
        """KB140 for the H1 at 0-based line ``i`` that is some other heading (``# x``, not
        ``# 问题｜<title>``; a direction log's not ``# 研究方向日志｜<problem> / <direction>``):
        the card is still read by its anchor lines, but kb takes no title or kind word from
        the heading (KB140 said only that an H1 was missing; ``# x`` passed silently)."""
        shape = _H1_SHAPES.get(self.fmt, "# 问题｜<title>")
        what = "direction log" if self.fmt == "direction" else "card"
        self.diags.append(Diagnostic(
            path=self.path, line=i + 1, code="KB140", severity="warning",
            message=f"the {what}'s H1 {quoted(self.src.lines[i].rstrip(), limit=60)} is not "
            f"'{shape}', the H1 its folder expects: kb reads the {what} by its anchor lines, "
            f"not by this heading; write '{shape}'"))

    def _numbers(self) -> None:
        """KB142 for each entry numbered as an earlier entry of its kind (``### 解法 1``
        twice): an entry's number names it (``kb verdict``, its verification records),
        so each entry of a kind has a number of its own. No fix: records may name
        either entry already. KB143 for each entry numbered 0: VIBEMATH-V3 numbers
        entries from 1 ("N is 1-based") and ``kb verdict`` refuses a number below 1, so
        the entry could never be verified. Each message names a free number (above the
        kind's highest, one for each entry to renumber). Gaps (1, 3) are not reported:
        nothing in VIBEMATH-V3 says that an entry's number may not be left unused."""
        first: dict[tuple[str, int], int] = {}
        top: dict[str, int] = {}
        for e in self.entries:
            top[e.kind] = max(top.get(e.kind, 0), e.number)
        for e in self.entries:
            if not e.number:
                top[e.kind] += 1
                self.diags.append(Diagnostic(
                    path=self.path, line=e.line, code="KB143", severity="error",
                    message=f"'{e.kind} 0': entries are numbered from 1 (VIBEMATH-V3) and kb "
                    f"verdict names no entry 0, so this one can never be verified; renumber it "
                    f"('{e.kind} {top[e.kind]}' is free)"))
                continue
            at = first.setdefault((e.kind, e.number), e.line)
            if at == e.line:
                continue
            top[e.kind] += 1
            self.diags.append(Diagnostic(
                path=self.path, line=e.line, code="KB142", severity="error",
                message=f"'{e.kind} {e.number}' is the number of the {e.kind} entry at line {at} "
                f"too: kb verdict and the verification records name an entry by its number; "
                f"renumber this one ('{e.kind} {top[e.kind]}' is free)"))

    def _orphans(self, at: list[int], end: int) -> None:
        """KB127 for each entry or application heading (``### 解法 1｜…``, ``### 应用 1｜…``)
        at the 0-based lines ``at``, above the card's first ``## `` section (line ``end``,
        or the end of the file): kb reads those only under a section, so they are not
        read. The fix inserts the section the card format gives that kind (``## 解法候选``
        before the first ``### 解法``) when that is certain: no header anchor line follows
        (it would move out of the header) and the card has no such section yet."""
        lines, path = self.src.lines, self.path
        last_anchor = max(self.anchor_lines.values(), default=0)
        prev_kind = ""
        for j in at:
            line = lines[j]
            m = ENTRY_HEAD.match(line)
            kind = m.group("kind") if m else ("应用" if APPLICATION_HEAD.match(line) else "")
            if not kind:
                continue
            section = _ENTRY_SECTION.get((self.fmt, kind))
            where = ("under '## " + section + "'" if section else "under a '## ' section")
            msg = (f"'### {kind} …' above the card's first '## ' section: kb reads entries only "
                   f"{where}, so this one is not read; ")
            fix = None
            below = self._section_lines(end).get(section) if section else None
            if below is not None:  # the section is there, further down: the entry goes under it
                msg += f"move it under '## {section}' (line {below})"
            else:
                msg += "put the section heading above it"
                if section and kind != prev_kind and j + 1 > last_anchor:
                    fix = Fix(line=j + 1, old=line, new=f"## {section}\n{line}")
                    msg += f" (write '## {section}' on the line before)"
            prev_kind = kind
            self.diags.append(Diagnostic(path=path, line=j + 1, code="KB127", severity="error",
                                         message=msg, fix=fix))

    def _nested(self, at: list[int]) -> None:
        """KB128 for each entry or application heading inside a block quote, a list item
        or an indent (0-based lines ``at``, outside code blocks): not read, never guessed."""
        src, lines = self.src, self.src.lines
        for j in at:
            if j < src.body_start or src.is_masked(j):
                continue
            m = NESTED_HEADING.match(lines[j])
            if m is None:
                continue
            where, short = nested_container(m.group("pre"))
            head = f"### {m.group('text')}"
            self.diags.append(Diagnostic(
                path=self.path, line=j + 1, code="KB128", severity="warning",
                message=f"'{head}' is a heading inside {where}: kb reads an entry only as a "
                f"heading at the start of a line, so it is not read; if it is an entry, write "
                f"'{head}' at the start of the line, {short}"))

    def _tabbed(self, start: int) -> None:
        """KB122 (with its fix) for each entry or application heading written with a tab after
        ``###`` (``###\t解法 1｜…``, outside code, from 0-based line ``start``): CommonMark reads
        it as a heading, but kb reads entries only as ``### `` lines, so it vanished without
        a word and ``kb entry add`` handed its number out again."""
        src, lines, masked = self.src, self.src.lines, self.src.masked or []
        for j in src.heading_indices():
            line = lines[j]
            if j < start or masked[j] or not line.startswith("###\t"):
                continue
            fixed = "### " + line[3:].lstrip(" \t")
            if ENTRY_HEAD.match(fixed) or APPLICATION_HEAD.match(fixed):
                self.diags.append(Diagnostic(
                    path=self.path, line=j + 1, code="KB122", severity="error",
                    message=f"a tab after '###' in {quoted(line.strip(), limit=60)}: kb reads an "
                    "entry heading only with a space there, so it is not read; write "
                    f"{quoted(fixed, limit=60)}", fix=Fix(line=j + 1, old=line, new=fixed)))

    def _in_html_block(self, start: int) -> None:
        """KB128 for each entry heading (0-based lines from ``start``) that an HTML block
        ended only by a blank line swallowed (``### 解法 2｜…`` right under ``</details>``):
        Markdown reads it as the block's text, so the entry is not read, and nothing said
        so (a merge or a tidy-up that drops one blank line does it). A heading inside a
        comment or a fence is meant to be hidden: not reported."""
        src, lines, masked = self.src, self.src.lines, self.src.masked or []
        hidden = [j for j in src.heading_indices() if j >= start and masked[j]
                  and lines[j].startswith("### ") and entry_heading(lines[j]) is not None]
        if not hidden:
            return
        from kb.text import blank_ended_html_blocks

        blocks = blank_ended_html_blocks(lines, src.body_start)
        for j in hidden:
            block = next((a for a, end in blocks if a <= j < end), None)
            if block is None:
                continue
            self.diags.append(Diagnostic(
                path=self.path, line=j + 1, code="KB128", severity="warning",
                message=f"{quoted(lines[j].strip(), limit=60)} is inside the HTML block that "
                f"{quoted(lines[block].strip(), limit=40)} opens at line {block + 1}, which ends "
                "only at a blank line: Markdown reads the heading as the block's text, so the "
                "entry is not read; put a blank line above it"))

    def _section_lines(self, start: int) -> dict[str, int]:
        """The ``## `` sections from 0-based line ``start`` on (outside code): name -> the
        1-based line of its first heading."""
        lines, masked = self.src.lines, self.src.masked or []
        out: dict[str, int] = {}
        for j in self.src.heading_indices():
            if j >= start and lines[j].startswith("## ") and not masked[j]:
                out.setdefault(lines[j][3:].strip(), j + 1)
        return out

    def _entry(self, i: int, line: str) -> dict[str, Any] | None:
        m = ENTRY_HEAD.match(line)
        if m is None:
            return None
        kind, rest = m.groups()
        fields = split_fields(rest)
        if not _entry_shaped(fields):
            self._malformed(i, line, "entry", f"### {kind} N｜<title>｜概率<0..1>｜状态未定论",
                            canonical_entry_line(kind, rest))
            return None
        number = small_int(fields[0])
        if number is None:
            self._too_long(i, "entry", fields[0].strip())
            return None
        prob = parse_float(fields[2][2:])
        if prob is None:
            self.diags.append(Diagnostic(
                path=self.path, line=i + 1, code="KB123", severity="error",
                message=f"entry probability {quoted(fields[2][2:])} is not a number"))
            return None
        return {"kind": kind, "number": number, "title": unescape_field(fields[1]),
                "probability": prob, "status": unescape_field(fields[3][2:]), "line": i + 1}

    def _close(self, entry: dict[str, Any] | None, body: list[str]) -> None:
        if entry is None:
            return
        while body and not body[-1].strip():
            body.pop()
        # Entry.build(text=..., **entry) without its per-field checks: _entry gives
        # every other field, in the model's field order, then the text.
        e = _new(Entry)
        entry["text"] = "\n".join(body)
        _set_fields(e, entry)
        self.entries.append(e)

    def _application(self, i: int, line: str) -> None:
        m = APPLICATION.match(line)
        if m:
            number = small_int(m.group("n"))
            if number is None:
                self._too_long(i, "application", m.group("n"))
                return
            self.applications.append(Application.build(
                number=number, time=m.group("time"), problem=m.group("q"),
                direction=m.group("d") or "", line=i + 1))
        elif self.fmt == "method" and APPLICATION_HEAD.match(line):
            self._malformed(i, line, "application",
                            "### 应用 N｜<YYYY-MM-DD HH:MM:SS>｜问题 <qid> 方向 <dir>",
                            canonical_application_line(line))

    def _malformed(self, i: int, line: str, what: str, form: str, fixed: str | None) -> None:
        """KB122 for the ``what`` line (entry, application) at 0-based line ``i``, which is
        not read: write ``form``; with ``fixed`` (the canonical line, when only its
        separators are off) as the fix."""
        if fixed is None:
            self.diags.append(Diagnostic(
                path=self.path, line=i + 1, code="KB122", severity="error",
                message=f"malformed {what} line, so it is not read; write '{form}'"))
            return
        self.diags.append(Diagnostic(
            path=self.path, line=i + 1, code="KB122", severity="error",
            message=f"malformed {what} line (spaces around its '｜' separators, or '|' in their "
            f"place), so it is not read; write '{fixed}'",
            fix=Fix(line=i + 1, old=line, new=fixed)))

    def _too_long(self, i: int, what: str, digits: str) -> None:
        """KB122 for the ``what`` line at 0-based line ``i`` whose number ``digits`` has more
        than :data:`kb.numbers.MAX_DIGITS` digits: not a valid number, so the line is not read."""
        self.diags.append(Diagnostic(
            path=self.path, line=i + 1, code="KB122", severity="error",
            message=f"malformed {what} line: its number ({len(digits)} digits) is not a valid "
            f"number (at most {MAX_DIGITS} digits), so it is not read; number it as the next one"))

    # -- typed anchor access -------------------------------------------------
    def text(self, key: str) -> str:
        return self.anchors.get(key, "").strip()

    def lst(self, key: str) -> tuple[str, ...]:
        if key not in self.anchors:
            return ()
        ln = self.anchor_lines[key]
        items, d = parse_list(self.anchors[key], self.path, ln, self.src.lines[ln - 1], key)
        self.diags.extend(d)
        return items

    def number(self, key: str) -> float | None:
        if key not in self.anchors or not self.anchors[key].strip():
            return None
        x = parse_float(self.anchors[key])
        if x is None:
            self.diags.append(Diagnostic(
                path=self.path, line=self.anchor_lines[key], code="KB124", severity="error",
                message=f"'{key}' must be a number in [0,1], not {quoted(self.anchors[key])}"))
        return x

    def priority(self) -> int | str | None:
        if "优先级" not in self.anchors:
            return None
        p = parse_priority(self.anchors["优先级"])
        if p is None:
            self.diags.append(Diagnostic(
                path=self.path, line=self.anchor_lines["优先级"], code="KB125", severity="error",
                message=f"'优先级' must be an integer or 'never', not "
                f"{quoted(self.anchors['优先级'])}"))
        return p

    def statement(self) -> str:
        return "\n".join(self.section_text.get("陈述", [])).strip()

    def common(self, obj_id: str) -> dict[str, Any]:
        if self.word and self.fmt in KIND_WORDS and self.word != KIND_WORDS[self.fmt]:
            self.diags.append(Diagnostic(
                path=self.path, line=self.line, code="KB141", severity="warning",
                message=f"H1 kind word '{self.word}' in a {self.fmt} card; expected "
                f"'{KIND_WORDS[self.fmt]}'"))
        return {
            "id": obj_id, "path": self.path, "line": self.line,
            "title": self.text("标题") or self.h1_title,
            "status": self.text("状态"),
            "anchors": dict(self.anchors), "anchor_lines": dict(self.anchor_lines),
            "frontmatter": {},
        }


def _problem(c: _Card, obj_id: str) -> KBObject:
    return Problem.build(
        **c.common(obj_id), priority=c.priority(), depends=c.lst("依赖"),
        depended_by=c.lst("被依赖"), source=c.text("来源"), plan=c.text("计划"),
        statement=c.statement(), entries=tuple(c.entries),
    )


def _proposition(c: _Card, obj_id: str) -> KBObject:
    parts = path_parts(c.path)
    return Proposition.build(
        **c.common(obj_id), category=parts[-2] if len(parts) >= 2 else "",
        probability=c.number("概率"), value=c.number("价值/关键性"), priority=c.priority(),
        depends=c.lst("依赖"), source_problem=c.text("来源问题"), statement=c.statement(),
        entries=tuple(c.entries),
    )


def _method(c: _Card, obj_id: str) -> KBObject:
    return Method.build(
        **c.common(obj_id), type=c.text("类型"), claims=c.lst("可信断言"),
        parents=c.lst("上级体系"), submethods=c.lst("子方法"), related=c.lst("相关"),
        scenario=c.text("适用场景"), applications=tuple(c.applications),
    )


def _verified(c: _Card, obj_id: str) -> KBObject:
    return VerifiedCard.build(
        **{**c.common(obj_id), "status": c.text("结论")}, object_type=c.text("类型"),
        conclusion=c.text("结论"),
        probability=c.number("概率"), category=c.text("分类"), source=c.text("来源"),
        time=c.text("时间"), statement=c.statement(),
    )


_BUILDERS: dict[str, Callable[[_Card, str], KBObject]] = {
    "problem": _problem, "proposition": _proposition, "method": _method, "verified": _verified,
}


def parse_card(src: SourceText, fmt: str) -> tuple[list[KBObject], list[Diagnostic]]:
    """Parse one card of format ``fmt`` (problem, proposition, method, verified).

    The ID is the file name without ``.md``. Codes: KB110, KB112, KB120–KB125,
    KB127–KB129, KB140–KB143.
    """
    card = _Card(src, fmt)
    obj = _BUILDERS[fmt](card, path_stem(src.path))
    return [obj], card.diags


_DIRECTION_H1 = re.compile(r"^#[ \t]+研究方向日志｜(?P<q>\S+)[ \t]*/[ \t]*(?P<d>\S+)")


def parse_direction(src: SourceText) -> tuple[list[KBObject], list[Diagnostic]]:
    """``Progress/<qid>/<dir>.md``: the direction header. Oddities are warnings (KB150):
    a survival outside [0,1], an unknown status, an H1 naming another direction, and a
    survival or status kb did not read (no ``- 存活率: …；状态: …`` line, or one it does
    not read as an anchor)."""
    path = src.path
    parts = path_parts(path)
    qid, did = (parts[-2], path_stem(path)) if len(parts) >= 2 else ("", "")
    card = _Card(src, "direction")
    diags = [d.replace(severity="warning") for d in card.diags]
    fields: dict[str, str] = {}
    for key, value in card.anchors.items():
        # `- 存活率: 0.6；状态: active；轮次: 2` holds three fields on one line.
        parts_ = re.split(r"[；;]\s*", value)
        fields[key] = parts_[0].strip()
        for extra in parts_[1:]:
            k, _, v = extra.partition(":") if ":" in extra else extra.partition("：")
            if k.strip():
                fields[k.strip()] = v.strip()
    survival = parse_float(fields.get("存活率", "")) if fields.get("存活率") else None
    if fields.get("存活率") and (survival is None or not 0 <= survival <= 1):
        diags.append(Diagnostic(path=path, line=card.anchor_lines.get("存活率", card.line),
                                code="KB150", severity="warning",
                                message=f"direction survival {quoted(fields['存活率'])} is not in [0,1]"))
    rounds = fields.get("轮次", "")
    status = fields.get("状态", "")
    if (not status or not fields.get("存活率")) and not (len(src.lines) < 2 and "\r" in src.text):
        diags.append(_no_survival_status(src, card, fields))  # (a CR-only file: KB100 says why)
    if status and status not in ("active", "success", "dead-end", "queued"):
        diags.append(Diagnostic(path=path, line=card.anchor_lines.get("存活率", card.line),
                                code="KB150", severity="warning",
                                message=f"direction status '{status}' is not one of "
                                "active, success, dead-end, queued"))
    m = _DIRECTION_H1.match(src.lines[card.line - 1]) if src.lines else None
    if m and (m.group("q"), m.group("d")) != (qid, did):
        diags.append(Diagnostic(path=path, line=card.line, code="KB150", severity="warning",
                                message=f"header names {m.group('q')} / {m.group('d')} but the "
                                f"file is {qid} / {did}"))
    lemmas = tuple(re.findall(r"\((p-?[^)\s]+)\)", fields.get("引理索引", "")))
    obj = ProgressDirection.build(
        id=f"{qid}/{did}", path=path, line=card.line, title=fields.get("方向", ""),
        status=status, anchors=dict(card.anchors), anchor_lines=dict(card.anchor_lines), frontmatter={},
        problem=qid, direction=did, survival=survival,
        rounds=small_int(rounds) if rounds.isdecimal() else None, lemmas=lemmas,
    )
    return [obj], diags


#: A header line that names the survival or the status without reading as them.
_SURVIVAL_STATUS = re.compile(r"存活率|状态")
#: How the direction header gives them (VIBEMATH-V3.md, Progress).
_SURVIVAL_FORM = "'- 存活率: 0.6；状态: active；轮次: 2'"


def _no_survival_status(src: SourceText, card: _Card, fields: dict[str, str]) -> Diagnostic:
    """KB150 for a direction header whose survival (``存活率``) or status (``状态``) kb
    did not read (missing, empty, or on a line that is no anchor), at the line that
    holds them: the ``存活率`` (or ``状态``) anchor; else the first line of the header
    (above the first heading after the H1) naming either that kb read as no anchor
    (``- 存活率 0.9；状态 active``, without colons); else the H1. Runs only for such a
    header, never on the usual path."""
    what = " and ".join(f"'{k}'" for k in ("存活率", "状态") if not fields.get(k))
    path, where = src.path, card.anchor_lines
    line = where.get("存活率") or where.get("状态")
    if line is not None:
        return Diagnostic(path=path, line=line, code="KB150", severity="warning",
                          message=f"direction {what} not read from this line (missing, empty or "
                          f"without its ':'), so listed empty; write {_SURVIVAL_FORM}")
    lines, read = src.lines, set(where.values())
    end = next((j for j in src.heading_indices() if j >= card.line), len(lines))
    for i in range(card.line - 1, end):
        text = lines[i]
        if text[:1] != "#" and i + 1 not in read and _SURVIVAL_STATUS.search(text) \
                and not src.is_masked(i):
            return Diagnostic(path=path, line=i + 1, code="KB150", severity="warning",
                              message=f"direction header line not read (an anchor is '- key: "
                              f"value'), so its {what} are listed empty; write {_SURVIVAL_FORM}")
    return Diagnostic(path=path, line=card.line, code="KB150", severity="warning",
                      message=f"direction header has no '- 存活率: …；状态: …' line, so its {what} "
                      f"are listed empty; write {_SURVIVAL_FORM} under the H1")


def parse_registry(src: SourceText, heading: str, kind: str) -> tuple[list[KBObject], list[Diagnostic]]:
    """A configured registry file: many records, each a heading plus ``- key: value`` lines."""
    path, lines = src.path, src.lines
    head = re.compile(heading)
    diags: list[Diagnostic] = []
    out: list[KBObject] = []
    cur: dict[str, Any] | None = None

    def close() -> None:
        if cur is not None:
            out.append(Record(id=cur["id"], path=path, line=cur["line"], title=cur["title"],
                              status=cur["anchors"].get("状态", cur["anchors"].get("status", "")),
                              anchors=cur["anchors"], anchor_lines=cur["lines"], frontmatter={}))

    for i in range(src.body_start, len(lines)):
        line = lines[i]
        if not line or src.is_masked(i):
            continue
        if line.startswith("#"):
            m = head.match(line)
            if m:
                close()
                cur = {"id": m.group("id"), "title": (m.groupdict().get("title") or "").strip(),
                       "line": i + 1, "anchors": {}, "lines": {}}
            elif line.startswith("## ") or line.startswith("# "):
                close()
                cur = None
            continue
        if cur is not None and line.startswith("- "):
            m = CARD_ANCHOR.match(line)
            if m:
                key = m.group("key")
                if m.group("colon") == "：":
                    diags.append(fullwidth_colon_warning(path, i + 1, line, f"anchor '{key}'"))
                if key in cur["anchors"]:
                    diags.append(duplicate_key_error(path, key, cur["lines"][key], i + 1, cur["id"]))
                else:
                    cur["anchors"][key] = m.group("value").strip()
                    cur["lines"][key] = i + 1
    close()
    return out, diags
