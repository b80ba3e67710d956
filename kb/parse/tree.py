"""``tree.md`` — the hypothesis tree (DESIGN.md §2.1, seed hypothesis-tree.md).

A declaration is an ATX heading ``<#×(1+depth)> <ID>: <statement>`` outside
code and HTML blocks; its anchor block is the lines directly under it up to
the first blank line: ``Status:``, ``Evidence:``, ``Children:``, ``Parent:``.
Lines are read from the source one by one, so CommonMark's setext rule cannot
swallow an anchor line (case MD-01); any depth is read (``####`` and deeper).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Iterator

from kb.chars import HIDDEN_CHARS, HIDDEN_CLASS, WIDE_SPACE_CHARS, WIDE_SPACES, hidden_char
from kb.model import Diagnostic, Fix, Hypothesis
from kb.numbers import quoted
from kb.parse.common import (NESTED_FIRST, NESTED_HEADING, duplicate_key_error, fullwidth_colon_warning,
                             nested_container, split_id_list)
from kb.text import SourceText, unclosed_block_warning
from kb.vocab import HYPOTHESIS_STATUS

# Anchor keys of a tree block; Chinese aliases are read (with a fixable warning).
KEY_ALIASES = {
    "status": "Status", "状态": "Status",
    "evidence": "Evidence", "证据": "Evidence",
    "children": "Children", "子假设": "Children", "子节点": "Children",
    "parent": "Parent", "父假设": "Parent", "父节点": "Parent",
}
#: The characters of a fixed heading a message quotes whole (the fix itself keeps all).
QUOTED_LINE = 200
_CANONICAL_KEYS = frozenset(("Status", "Evidence", "Children", "Parent"))
# Linear in the line: the key's run of letters and spaces is taken whole (a lookahead
# and a backreference: an atomic group before Python 3.11; its trailing spaces are
# stripped by the readers), and the value runs to its last character that is not a
# space or a tab (a lazy key or value before `[ \t]*` tried every split of a run of
# spaces: quadratic, a minute for a line of 100,000).
_ANCHOR = re.compile(
    r"^(?P<b1>\*\*)?(?P<key>[A-Za-z](?=(?P<_run>[A-Za-z ]*))(?P=_run)|[\u4e00-\u9fff]+)"
    r"(?P<b2>\*\*)?[ \t]*(?P<colon>[:：])[ \t]*(?P<b3>\*\*)?[ \t]*(?P<value>(?:.*[^ \t])?)[ \t]*$"
)
#: An anchor line (``Status: 待验``, ``**状态**：…``) with its parts as groups;
#: the splice helpers of kb.render.tree edit lines through it.
ANCHOR_LINE = _ANCHOR
# More than six `#` is not a Markdown heading, but a hypothesis at depth 6 or
# deeper needs it (DESIGN.md §2.1: "and so on"); kb reads it in tree.md.
_ATX = re.compile(r"^(#+)[ \t]+(.*?)[ \t]*$")
#: :data:`_ATX` with a greedy text (strip its end of spaces and tabs for _ATX's
#: group 2): the lazy group tries the end of the line at every character.
_ATX_GREEDY = re.compile(r"^(#+)[ \t]+(.*)$")
_NOSPACE = re.compile(r"^(#{1,6})([^#\s].*)$")
_FULLWIDTH_HASH = re.compile(r"^(＃{1,6})[ \t　]*(.*)$")
_SETEXT = re.compile(r" {0,3}(-{3,}|={3,})\s*")
# An ID-like token (a letter, a run of letters and digits holding a digit, dotted or
# dashed parts) and a separator. The digit is asked for by a lookahead, so the run is
# one repetition: `[A-Za-z0-9]*\d[A-Za-z0-9]*` tried every digit of a long run as the
# one, quadratic (a second for a 3,000-digit heading, minutes for a 100 KB one).
_CANDIDATE = re.compile(
    r"^\[?(?P<tok>[A-Za-z](?=[A-Za-z0-9]*\d)[A-Za-z0-9]*(?:[.\-][A-Za-z0-9]+)*)\s*(?P<sep>[:：.｜|])"
)


def _declaration_head(grammar: str, seps: tuple[str, ...]) -> str:
    """The pattern of a declaration up to its statement (an optional ``[``, the ID, the
    separator): :func:`_declaration_re` and :func:`_plain_declaration_re` share it."""
    sep = "|".join(re.escape(s) for s in seps)
    return rf"^(?P<link>\[)?(?P<id>{grammar})[ \t]*(?P<sep>{sep})[ \t]*"


@lru_cache(maxsize=16)
def _declaration_re(grammar: str, seps: tuple[str, ...]) -> re.Pattern[str]:
    # `[ID: statement](link)` is read as `ID: statement` (real indexes do it).
    return re.compile(_declaration_head(grammar, seps) + r"(?P<stmt>.*?)(?(link)\]\([^)]*\))$")


@lru_cache(maxsize=16)
def _plain_declaration_re(grammar: str, seps: tuple[str, ...]) -> re.Pattern[str]:
    """:func:`_declaration_re` for a text that does not open with ``[`` (then its
    ``link`` group cannot match and its statement runs to the end of the text):
    a greedy statement, the same groups, without trying the end at every character."""
    return re.compile(_declaration_head(grammar, seps) + r"(?P<stmt>.*)$")


def written_separator(separators: tuple[str, ...]) -> str:
    """The separator kb writes after a hypothesis ID (``kb hyp add``, a fix): ``:`` when
    the KB reads it, else the first of ``[kb] heading_separators``."""
    return ":" if ":" in separators else separators[0]


def read_declaration(text: str, grammar: str, separators: tuple[str, ...]) -> tuple[str, str] | None:
    """``(ID, statement)`` of the heading text ``text`` (after its ``#`` marks) as the tree
    parser reads it with ``grammar`` and ``separators``; None when it is no declaration."""
    d = _declaration_re(grammar, tuple(separators)).match(text)
    return None if d is None else (d.group("id"), d.group("stmt").strip())


@lru_cache(maxsize=16)
def _unread_re(grammar: str) -> re.Pattern[str]:
    # A heading whose first token is an ID of the grammar, perhaps after a word
    # such as "Hypothesis" and inside Markdown markup: `## H2 Prefetching`,
    # `## **H2** Prefetching`, `## H2. Prefetching`, `## Hypothesis H2 — …`, `## [H2] …`.
    return re.compile(
        rf"^(?:(?i:hypothesis|hyp\.?|假设)[ \t]*)?(?P<open>\*\*|__|\*|_|`|\[)?"
        rf"(?P<id>{grammar})(?!\w|\.[0-9])(?P<rest>.*)$")


#: A separator of another kind than the configured ones.
_OTHER_SEP = r"[ \t]*(?:[:：.)）、｜|\-–—]+[ \t]*)?"
_CLOSE = {"**": "**", "__": "__", "*": "*", "_": "_", "`": "`", "[": "]"}


def unread_declaration(text: str, grammar: str, separators: tuple[str, ...],
                       decl: re.Pattern[str]) -> tuple[str, str | None] | None:
    """``(ID, fixed heading text or None)`` when the heading text ``text`` starts
    with an ID of ``grammar`` but is not a declaration; None otherwise.

    The fix is offered only when it is mechanical and provably right: the
    rewritten text, read by the declaration regex, declares exactly that ID
    with the same statement (never an empty one).
    """
    m = _unread_re(grammar).match(text)
    if m is None:
        return None
    hid, rest = m.group("id"), m.group("rest")
    if m.group("open"):
        close = re.escape(_CLOSE[m.group("open")])
        inner = re.match(rf"^{_OTHER_SEP}{close}(?P<r>.*)$", rest)  # **H2** / **H2:**
        if inner is not None:
            rest = inner.group("r")
        elif rest.endswith(_CLOSE[m.group("open")]):  # **H2: statement**
            rest = rest[: -len(_CLOSE[m.group("open")])]
        else:
            return hid, None
    stmt = re.sub(rf"^{_OTHER_SEP}", "", rest, count=1).strip()
    if not stmt or not rest[:1].isspace() and rest == stmt:
        return hid, None  # `## H2` alone, or glued text such as `## H2+H3`
    fixed = f"{hid}{written_separator(separators)} {stmt}"
    d = decl.match(fixed)
    if d is None or d.group("id") != hid or d.group("stmt").strip() != stmt:
        return hid, None
    return hid, fixed


def _hidden_declaration(text: str, separators: tuple[str, ...], decl: re.Pattern[str],
                        plain: re.Pattern[str]) -> tuple[str, str, str] | None:
    """``(ID, 'U+XXXX, what it is,', fixed heading text)`` when heading text ``text`` is a
    declaration but for characters that show nothing, or spaces other than the ASCII space,
    before its first separator (``H\u200b1: …``, ``H1\u3000: …``);
    None otherwise. Only that head is cleaned: a zero-width joiner inside the statement
    (an emoji sequence) is the statement's own."""
    ends = [j for j in (text.find(s) for s in separators) if j >= 0]
    if not ends:
        return None
    end = min(ends) + 1
    ch = hidden_char(text[:end])
    what = "a character that shows nothing (pasted from a chat or a web page)"
    if ch is None:
        wide = WIDE_SPACES.search(text, 0, end)
        if wide is None:
            return None
        ch = f"U+{ord(wide.group()):04X}"
        what = "a space that is not the ASCII space (an input method's or a no-break space)"
    head = WIDE_SPACES.sub("", HIDDEN_CHARS.sub("", text[:end]))
    fixed_text = head + text[end:]
    d = (decl if fixed_text[:1] == "[" else plain).match(fixed_text)
    if d is None or not d.group("stmt").strip():
        return None
    return d.group("id"), f"{ch}, {what},", fixed_text


#: Characters that show nothing, and spaces other than the ASCII space, before a line's
#: first '#' (with ASCII blanks among them: `\u200b ## H2`, ` \ufeff## H2`): Markdown reads
#: no heading there (a BOM pasted mid-file, U+200B, U+00A0).
_HIDDEN_ONE = f"{HIDDEN_CLASS}{WIDE_SPACE_CHARS}"
_HIDDEN_LEAD = re.compile(f"[ \t]*[{_HIDDEN_ONE}][ \t{_HIDDEN_ONE}]*(?=[#＃])")


def _kb119(path: str, i: int, line: str, fixed: str, what: str) -> Diagnostic:
    """KB119 at 0-based line ``i`` (``line``): ``what``, and the rewrite ``fixed`` (its fix)."""
    return Diagnostic(path=path, line=i + 1, code="KB119", severity="error",
                      message=f"{what}; write {quoted(fixed, limit=QUOTED_LINE)}",
                      fix=Fix(line=i + 1, old=line, new=fixed))


def _hidden_lead(line: str, decl: re.Pattern[str], plain: re.Pattern[str]
                 ) -> tuple[str, str, str] | None:
    """``(ID, 'U+XXXX (what it is)', the line without them)`` when ``line`` is a
    declaration heading but for characters that show nothing (or wide spaces, ASCII blanks
    among them) before its '#' (``\\ufeff## H2: …``): it reads as a heading and declares
    nothing. None otherwise."""
    lead = _HIDDEN_LEAD.match(line)
    if lead is None:
        return None
    rest = line[lead.end():]
    m = _ATX_GREEDY.match(rest)
    if m is None:
        return None
    text = m.group(2).rstrip(" \t")
    d = (decl if text[:1] == "[" else plain).match(text)
    if d is None or not d.group("stmt").strip():
        return None
    what = ("a space other than the ASCII space" if WIDE_SPACES.match(line.lstrip(" \t"))
            else "a character that shows nothing")
    first = next(c for c in line if c not in " \t")
    return d.group("id"), f"U+{ord(first):04X} ({what})", rest


def parse_tree(
    src: SourceText,
    grammar: str,
    separators: tuple[str, ...] = (":", "："),
    frontmatter: dict[str, Any] | None = None,
    grammar_label: str | None = None,
) -> tuple[list[Hypothesis], list[Diagnostic]]:
    """Parse the declarations of a hypothesis tree.

    ``grammar`` is the ID regex used to recognise declarations;
    ``grammar_label`` the one to name in messages (the KB's configured grammar). Returns the
    hypotheses in file order and the parse diagnostics (KB110 full-width
    colon, KB111 bold anchor, KB112 repeated anchor, KB113 not a heading,
    KB114 setext trap, KB115 missing Status, KB116 headings that look like
    declarations of another grammar, KB117 stray anchor line, KB119 a
    declaration without its separator, KB104 frontmatter conflict).
    """
    diags: list[Diagnostic] = []
    hyps = list(iter_tree(src, grammar, separators, frontmatter, grammar_label, diags))
    return hyps, diags


def iter_tree(
    src: SourceText,
    grammar: str,
    separators: tuple[str, ...] = (":", "："),
    frontmatter: dict[str, Any] | None = None,
    grammar_label: str | None = None,
    diags: list[Diagnostic] | None = None,
) -> Iterator[Hypothesis]:
    """:func:`parse_tree`, each hypothesis yielded as soon as its block is read
    (in file order), so that a tree of 100,000 hypotheses need not be held at
    once. The diagnostics go to ``diags``, complete and in :func:`parse_tree`'s
    order once the iterator is exhausted.

    One pass over the heading lines first finds where every section ends (a
    stack of open headings: linear in the number of headings); the main pass
    then reads each declaration and its anchor block and builds its
    hypothesis at once. A frontmatter without an ``id`` applies to the only
    hypothesis of the file, which is known at the end only: such a file is
    read whole before its hypotheses are yielded.
    """
    if diags is None:
        diags = []
    path = src.path
    lines = src.lines
    decl = _declaration_re(grammar, separators)
    plain = _plain_declaration_re(grammar, separators)
    other_seps = [s for s in separators if s not in (":", "：")]
    fm = frontmatter or {}
    late: list[Diagnostic] = []  # KB115 / KB104, reported after the parse diagnostics
    if lines:
        src.is_masked(0)  # computes src.masked, read directly below
    masked: list[bool] = src.masked or []
    section_end = _section_ends(_heading_levels(src), len(lines))
    lookalikes: list[tuple[int, str]] = []
    held: list[dict[str, Any]] | None = [] if fm and not isinstance(fm.get("id"), str) else None
    fm_id = fm.get("id") if held is None and fm else None  # the hypothesis it names
    declared = False
    if fm and "id" in fm and not isinstance(fm["id"], str):  # a list or a mapping
        diags.append(Diagnostic(
            path=path, line=_frontmatter_line(src, "id"), code="KB109", severity="warning",
            message=f"the frontmatter's 'id' is {_yaml_kind(fm['id'])}, not one hypothesis ID: "
            "write the id of the hypothesis its fields are about ('id: H2')"))
    # True while inside the section of a heading already counted in `lookalikes`:
    # its stray anchor lines are explained by that one KB116 report, so they are
    # not reported again line by line (a bounded report for foreign files).
    under_lookalike = False
    n = len(lines)
    i = src.body_start
    while i < n:
        line = lines[i]
        if not line or (line[0] != "#" and line[0] != "＃"):
            # (only a line holding a '#' can be one: most are anchor lines and prose)
            hidden = _hidden_lead(line, decl, plain) \
                if line and "#" in line and not line.isascii() else None
            if hidden is not None and not src.is_masked(i):
                hid, ch, fixed = hidden
                diags.append(_kb119(path, i, line, fixed, (
                    f"heading starts with {ch} before its '#': Markdown reads no heading there, "
                    f"so {quoted(hid, quote=False)} is not declared")))
                under_lookalike = True  # its anchor lines are explained by this report
                i += 1
                continue
            if line and ((":" in line or "：" in line) or other_seps and any(
                    s in line for s in other_seps)):
                if not under_lookalike and _looks_like_anchor(line):
                    if not src.is_masked(i):
                        prev = lines[i - 1] if i > 0 else ""
                        if not prev.strip() or prev.lstrip().startswith("#"):
                            diags.append(Diagnostic(
                                path=path, line=i + 1, code="KB117", severity="warning",
                                message="anchor line outside any hypothesis block (it must follow "
                                "its heading directly, with no blank line)"))
                elif line[0] in NESTED_FIRST and "#" in line and not src.is_masked(i):
                    nested = _nested_declaration(line, decl, plain)
                    if nested is not None:
                        diags.append(Diagnostic(
                            path=path, line=i + 1, code="KB128", severity="warning",
                            message=f"'{nested[1]}' is a heading inside {nested[2]}: kb reads a "
                            "declaration only as a heading at the start of a line, so "
                            f"{nested[0]} is not read; if it is a hypothesis, write "
                            f"'{nested[1]}' at the start of the line, {nested[3]}"))
            i += 1
            continue
        if masked[i]:
            i += 1
            continue
        under_lookalike = False
        m = _ATX_GREEDY.match(line)
        if m is None:
            bad = _not_a_heading(line, decl)
            if bad is not None:
                fixed, what = bad
                diags.append(Diagnostic(
                    path=path, line=i + 1, code="KB113", severity="error",
                    message=f"not a heading: {what}; write '{fixed}'",
                    fix=Fix(line=i + 1, old=line, new=fixed)))
            i += 1
            continue
        marks, text = m.groups()
        level = len(marks)
        text = text.rstrip(" \t")  # _ATX's group 2
        d = (decl if text[:1] == "[" else plain).match(text)
        if d is None and not text.isascii():
            hidden = _hidden_declaration(text, separators, decl, plain)
            if hidden is not None:
                hid, ch, fixed_text = hidden
                diags.append(_kb119(path, i, line, f"{m.group(1)} {fixed_text}", (
                    f"heading declares {quoted(hid, quote=False)} with {ch} in its ID or before "
                    "its separator, so kb reads nothing from it")))
                under_lookalike = True  # its anchor lines are explained by this report
                i += 1
                continue
        if d is None:
            c = _CANDIDATE.match(text)
            # `### K1. …` / `### H1. …` (an ID, then '.', '|' or ':') is how files of
            # another grammar or separator look: one bounded KB116 for the file.
            unread = unread_declaration(text, grammar, separators, decl) if level >= 2 else None
            if c is not None and unread is not None and len(c.group("tok")) >= len(unread[0]):
                unread = None  # `### H1. …`: the ID is followed by a separator of its own
            if unread is not None:
                hid, fixed_text = unread
                shown = quoted(hid, quote=False)  # an ID of 200,000 digits quoted short
                what = (f"heading carries the ID {shown} but is not a declaration ('{'#' * level} "
                        f"{shown}{written_separator(separators)} <statement>'), so kb reads "
                        "nothing from it")
                if fixed_text is None:
                    diags.append(Diagnostic(
                        path=path, line=i + 1, code="KB119", severity="error",
                        message=f"{what}; rewrite it as a declaration or drop the ID"))
                else:
                    fixed = f"{m.group(1)} {fixed_text}"
                    diags.append(Diagnostic(
                        path=path, line=i + 1, code="KB119", severity="error",
                        message=f"{what}; write {quoted(fixed, limit=QUOTED_LINE)}",
                        fix=Fix(line=i + 1, old=line, new=fixed)))
                under_lookalike = True  # its anchor lines are explained by this report
            elif c is not None and level >= 2:
                lookalikes.append((i + 1, c.group("tok") + c.group("sep")))
                under_lookalike = True
            i += 1
            continue
        if d.group("sep") == "：" and ":" in separators:
            # (a KB that reads only `：` writes it: its fix, `:`, would not be read there)
            diags.append(fullwidth_colon_warning(path, i + 1, line, "a declaration"))
        node: dict[str, Any] = {
            "id": d.group("id"), "statement": d.group("stmt").strip(), "level": level,
            "line": i + 1, "anchors": {}, "anchor_lines": {},
        }
        i = _read_block(src, i + 1, node, diags)
        declared = True
        if held is not None:
            held.append(node)
        else:
            if node["id"] == fm_id:
                fm_id = None  # applied
            yield _hypothesis(src, node, section_end, fm, False, late)

    if lookalikes:
        # as written (repr would escape a full-width space, or flip to double quotes)
        first = ", ".join(f"'{tok}' at line {ln}" for ln, tok in lookalikes[:3])
        diags.append(Diagnostic(
            path=path, line=lookalikes[0][0], code="KB116", severity="warning",
            message=f"{len(lookalikes)} heading(s) look like declarations but do not match the "
            f"ID grammar `{grammar_label or grammar}` with separator "
            f"{' or '.join(f'`{s}`' for s in separators)} ({first}); they are not read — "
            "set [kb] id_grammar / heading_separators in kb.toml if they are hypotheses"))
    if fm_id is not None and declared:  # without a declaration, KB126 says it all
        said = f"'id: {quoted(fm_id, quote=False)}' names no hypothesis of this file" \
            if fm_id.strip() else \
            "'id:' is empty"
        diags.append(Diagnostic(
            path=path, line=_frontmatter_line(src, "id"), code="KB109", severity="warning",
            message=f"the frontmatter's {said}, so its fields apply to none; write the id of "
            "the hypothesis they are about"))
    if masked and masked[-1]:  # a block reaches the end of the file: was it ever closed?
        unclosed = unclosed_block_warning(src, "declaration or anchor line")
        if unclosed is not None:
            diags.append(unclosed)
    if held is not None:
        only = len(held) == 1
        for node in held:
            yield _hypothesis(src, node, section_end, fm, only, late)
    diags.extend(late)


def _heading_levels(src: SourceText) -> list[tuple[int, int]]:
    """(0-based line, level) of every ATX heading of the body outside code and HTML
    blocks (what :data:`_ATX` matches: ``#``s, then a space or a tab)."""
    out: list[tuple[int, int]] = []
    lines, start = src.lines, src.body_start
    if not lines:
        return out
    src.is_masked(0)
    masked = src.masked or []
    for i in src.heading_indices():
        if i < start:
            continue
        line = lines[i]
        level = len(line) - len(line.lstrip("#"))
        if line[level:level + 1] in (" ", "\t") and not masked[i]:
            out.append((i, level))
    return out


def _nested_declaration(line: str, decl: re.Pattern[str],
                        plain: re.Pattern[str]) -> tuple[str, str, str, str] | None:
    """``(ID, heading, where, container)`` when ``line`` is a declaration heading inside a
    block quote, a list item or an indent (which kb does not read); None otherwise."""
    m = NESTED_HEADING.match(line)
    if m is None:
        return None
    text = m.group("text")
    d = (decl if text[:1] == "[" else plain).match(text)
    if d is None:
        return None
    where, short = nested_container(m.group("pre"))
    return d.group("id"), f"{m.group('marks')} {text}", where, short


def _looks_like_anchor(line: str) -> bool:
    m = _ANCHOR.match(line)
    return bool(m) and m.group("key").strip().lower() in KEY_ALIASES


def _not_a_heading(line: str, decl: re.Pattern[str]) -> tuple[str, str] | None:
    """A line meant as a declaration heading that Markdown does not read as one."""
    m = _NOSPACE.match(line)
    if m and (decl.match(m.group(2)) or _CANDIDATE.match(m.group(2))):
        return f"{m.group(1)} {m.group(2)}", f"no space after '{m.group(1)}'"
    m = _FULLWIDTH_HASH.match(line)
    if m and (decl.match(m.group(2)) or _CANDIDATE.match(m.group(2))):
        return "#" * len(m.group(1)) + " " + m.group(2), "full-width '＃' is not a heading mark"
    return None


def _read_block(src: SourceText, i: int, node: dict[str, Any], diags: list[Diagnostic]) -> int:
    """Read the anchor block starting at 0-based line ``i``; return the next line."""
    path, lines, n = src.path, src.lines, len(src.lines)
    hid = node["id"]
    anchors, anchor_lines = node["anchors"], node["anchor_lines"]
    seen = anchor_lines  # each key read -> its line (a repeat keeps the first)
    while i < n:
        line = lines[i]
        # The usual line, `Status: 待验`: a canonical key, ': ', a value that does
        # not open with `**`. _ANCHOR reads it as (key, value stripped of spaces
        # and tabs) with nothing to report but a repeat; read it so, directly.
        key, colon, value = line.partition(": ")
        if colon and key in _CANONICAL_KEYS:
            value = value.strip(" \t")
            if not value.startswith("**"):
                if key in seen:
                    diags.append(duplicate_key_error(path, key, seen[key], i + 1, hid))
                else:
                    anchors[key] = value
                    anchor_lines[key] = i + 1
                i += 1
                continue
        if not line.strip():
            break
        if line.lstrip().startswith("#"):
            break
        if _SETEXT.fullmatch(line):
            diags.append(Diagnostic(
                path=path, line=i + 1, code="KB114", severity="warning",
                message=f"'{line.strip()}' directly under the anchors of {hid} turns them into a "
                "setext heading for Markdown renderers; put a blank line before it",
                fix=Fix(line=i + 1, old=line, new="\n" + line)))
            break
        m = _ANCHOR.match(line)
        if m is None:
            break
        raw_key = m.group("key").strip()
        key = KEY_ALIASES.get(raw_key.lower(), KEY_ALIASES.get(raw_key))
        if key is None:
            key = raw_key  # an unknown anchor: kept, shown, never lost
        value = m.group("value")
        bold = m.group("b1") or m.group("b2") or m.group("b3")
        canonical_line = f"{key}: {value}"
        if bold:
            diags.append(Diagnostic(
                path=path, line=i + 1, code="KB111", severity="error",
                message=f"bold anchor '{line.strip()}' in tree.md (anchors are never bold); "
                f"write '{canonical_line}'",
                fix=Fix(line=i + 1, old=line, new=canonical_line)))
        elif m.group("colon") == "：":
            diags.append(fullwidth_colon_warning(path, i + 1, line, f"anchor '{raw_key}'"))
        elif raw_key != key and key in KEY_ALIASES.values():
            diags.append(Diagnostic(
                path=path, line=i + 1, code="KB118", severity="warning",
                message=f"anchor key '{raw_key}'; the tree format writes '{key}'",
                fix=Fix(line=i + 1, old=line, new=canonical_line)))
        if key in seen:
            diags.append(duplicate_key_error(path, key, seen[key], i + 1, hid))
        else:
            anchors[key] = value
            anchor_lines[key] = i + 1
        i += 1
    return i


def _frontmatter_line(src: SourceText, key: str) -> int:
    """The 1-based line of ``key:`` in the file's frontmatter (1 when not found)."""
    return next((j + 1 for j in range(1, src.body_start)
                 if src.lines[j].startswith(key) and src.lines[j][len(key):].lstrip()[:1] == ":"), 1)


def _yaml_kind(value: Any) -> str:
    """What a frontmatter value that is not a string is, in a user's words (kb reads
    every YAML scalar as a string: the others are a list or a mapping)."""
    return "a list" if isinstance(value, list) else "a mapping" if isinstance(value, dict) else \
        "no text"


def _hypothesis(
    src: SourceText,
    node: dict[str, Any],
    section_end: dict[int, int],
    fm: dict[str, Any],
    only: bool,
    diags: list[Diagnostic],
) -> Hypothesis:
    """The hypothesis of one declaration ``node`` (KB115 / KB104 go to ``diags``).
    ``only``: it is the file's only declaration (a frontmatter without ``id``
    then applies to it)."""
    path, lines = src.path, src.lines
    start0 = node["line"] - 1
    end0 = section_end[start0]
    while end0 - 1 > start0 and not lines[end0 - 1].strip():
        end0 -= 1
    anchors = node["anchors"]
    raw_status = anchors.get("Status")
    if raw_status is None:
        diags.append(Diagnostic(
            path=path, line=node["line"], code="KB115", severity="error",
            message=f"{node['id']} has no 'Status:' line directly under its heading"))
    status = _STATUS.get(raw_status) if raw_status is not None else None
    if status is None:
        status = HYPOTHESIS_STATUS.canonical(raw_status or "") or (raw_status or "")
    node_fm: dict[str, object] = {}
    if fm:
        fm_target = fm.get("id") if isinstance(fm.get("id"), str) else None
        if fm_target == node["id"] or (fm_target is None and only):
            fm_status = fm.get("status")
            if isinstance(fm_status, str) and raw_status is not None:
                if (HYPOTHESIS_STATUS.canonical(fm_status) or fm_status) != status:
                    diags.append(Diagnostic(
                        path=path, line=node["anchor_lines"].get("Status", node["line"]),
                        code="KB104", severity="error",
                        message=f"frontmatter status '{fm_status}' disagrees with the anchor "
                        f"'Status: {raw_status}' of {node['id']}"))
            node_fm = _jsonable(fm)
    parent = anchors.get("Parent")
    evidence = anchors.get("Evidence")
    children = anchors.get("Children")
    statement = node["statement"]
    h = _new_hypothesis(Hypothesis)
    # Every field, in the model's field order (its JSON's key order), without
    # Hypothesis.build's per-field checks: the values are typed by construction.
    _set_dict(h, {
        "id": node["id"], "kind": "hypothesis", "path": path, "line": node["line"],
        "title": statement, "status": status, "anchors": anchors,
        "anchor_lines": node["anchor_lines"], "frontmatter": node_fm,
        "statement": statement, "level": node["level"],
        "evidence": split_id_list(evidence) if evidence else (),
        "children": split_id_list(children) if children else (),
        "parent": parent.strip() if parent and parent.strip() else None,
        "has_children_line": children is not None,
        "end_line": end0,
    })
    return h


_new_hypothesis = object.__new__


def _set_dict(obj: Any, values: dict[str, Any]) -> None:
    object.__setattr__(obj, "__dict__", values)


#: Status words read as they are (the canonical ones), without the vocabulary's lookup.
_STATUS = {w: w for w in HYPOTHESIS_STATUS.zh_to_en}


def _section_ends(heading_levels: list[tuple[int, int]], n: int) -> dict[int, int]:
    """0-based line of every heading -> the 0-based line where its section ends.

    A section ends before the next heading of the same or a higher level (or
    at ``n``). One pass with a stack of open headings: each is pushed and
    popped once, so a tree of 100,000 hypotheses costs 100,000 steps, not the
    square of it.
    """
    ends: dict[int, int] = {}
    open_: list[tuple[int, int]] = []  # (line, level), levels strictly increasing
    for ln, lvl in heading_levels:
        while open_ and open_[-1][1] >= lvl:
            ends[open_.pop()[0]] = ln
        open_.append((ln, lvl))
    for ln, _ in open_:
        ends[ln] = n
    return ends


def _jsonable(fm: dict[str, Any]) -> dict[str, object]:
    return {str(k): v for k, v in fm.items()}
