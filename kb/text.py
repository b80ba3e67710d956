"""Decoding and line model shared by every parser (DESIGN.md §2, general rules).

A :class:`SourceText` is a decoded file: its lines without line endings, the
line-ending style, the BOM flag, where the frontmatter ends, and which lines
are *masked* — inside fenced code, indented code or HTML blocks, where no
heading or anchor is recognised. Masking uses markdown-it-py's block tokens
and their ``map`` line ranges, and is only computed for files whose text can
hold such a block (markdown-it is the slow path; most research notes skip it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from typing import Any, TYPE_CHECKING

from kb.chars import HIDDEN_CLASS

if TYPE_CHECKING:
    from kb.model import Diagnostic

#: Characters no one-line research text (statement, title, owner, reason) may
#: hold: C0 and C1 controls (terminal escapes among them), DEL, Unicode line and
#: paragraph separators (U+0085, U+2028, U+2029: splitlines() and many tools
#: break lines there) and the bidirectional marks and overrides that make text
#: display as other text.
CONTROL_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def control_char(text: str) -> str | None:
    """The first forbidden character of ``text`` as ``U+XXXX``, or None."""
    m = CONTROL_CHARS.search(text)
    return None if m is None else f"U+{ord(m.group()):04X}"


#: A run of characters that show nothing: white space and Unicode's
#: Default_Ignorable_Code_Point set (DerivedCoreProperties.txt: soft hyphen, zero-width
#: space and joiners, U+2060 word joiner, U+FEFF, variation selectors, Hangul fillers,
#: tag characters, …). Combining marks are not in it (an accent on nothing still shows),
#: nor controls: they are refused by name (:data:`CONTROL_CHARS`), and shown escaped.
_INVISIBLE = re.compile(rf"[\s{HIDDEN_CLASS}]*")


def visible(text: str) -> bool:
    """Whether ``text`` holds a character that shows. A zero-width joiner inside real text
    (Devanagari, an emoji sequence) is fine; a text of nothing else reads as empty."""
    return _INVISIBLE.fullmatch(text) is None


#: The most characters kb writes as one line of research text (:func:`one_line`: a
#: statement, title, reason, plan, name). Such a line is an anchor of tree.md or a card,
#: a row of DASHBOARD.md and a commit's summary or trailer, and every later version of
#: the file carries it: 4,000 characters (about a page of prose) holds any statement a
#: reader takes in at once; longer text is a body
#: (the card's sections, ``--text-file``), not a line. Without a bound one mistaken
#: paste (2,000,000 characters) was committed into tree.md and the dashboard, and
#: removing it afterwards is a KB301 deletion forever.
LINE_MAX = 4_000

#: The most characters kb writes as one body text (an entry's ``--text`` or
#: ``--text-file``, a statement or motivation section, an experiment's log, a verifier's
#: reason): 1,000,000 characters, a book's length. A proof or a log may be long, so the
#: bound is far above any written text; it stops a wrong file (a data dump, a binary
#: read as text) from being committed into a card that history then keeps.
BODY_MAX = 1_000_000


def check_length(text: str, what: str, limit: int = LINE_MAX) -> str:
    """``text`` unchanged when it is at most ``limit`` characters (code points) long:
    :data:`LINE_MAX` for one line, :data:`BODY_MAX` for a body text.

    Raises :class:`kb.errors.UsageError` (exit 2) naming ``what``, its length and the
    limit otherwise, before anything is written. One ``len``: no cost for any text.
    """
    if len(text) > limit:
        from kb.errors import UsageError

        if limit == LINE_MAX:
            room = f"at most {limit:,} characters on one line; shorten it (details go in a card's body)"
        else:
            room = f"at most {limit:,} characters of text at once; shorten it or split it"
        raise UsageError(f"{what} is {len(text):,} characters long; kb writes {room}")
    return text


def one_line(text: Any, what: str, *, required: bool = True) -> str:
    """``text`` stripped, as one line of research text (a statement, title, plan, name).

    ``None`` is the empty text. Raises :class:`kb.errors.UsageError` when ``text`` is
    not text, is empty (and ``required``), is longer than :data:`LINE_MAX` characters,
    spans lines, holds a control or invisible character (:data:`CONTROL_CHARS`) or only
    characters that show nothing (:func:`visible`; even when not ``required``: a value
    was given, and none can read it); ``what`` names the field in the message.
    """
    from kb.errors import UsageError

    if text is None:
        text = ""
    if not isinstance(text, str):
        raise UsageError(f"{what} must be text, not {type(text).__name__}")
    t = text.strip()
    if required and not t:
        raise UsageError(f"{what} is empty; give one line of text")
    check_length(t, what)
    if "\n" in t or "\r" in t:
        raise UsageError(f"{what} spans several lines; give it on one line")
    bad = control_char(t)
    if bad:
        raise UsageError(f"{what} holds the control or invisible character {bad}; remove it")
    if t and not visible(t):  # U+200B, U+2060, U+FEFF, …: no statement anyone can read
        shown = " ".join(f"U+{ord(c):04X}" for c in t[:5]) + (" …" if len(t) > 5 else "")
        raise UsageError(f"{what} is empty: it holds only invisible characters ({shown}); "
                         "give one line of visible text")
    return t


_ID_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def unsafe_id_reason(value: str) -> str | None:
    """Why ``value`` is not a safe ID or folder name anywhere (empty, a path
    component, a path separator, ``..``, a control character), or None when safe.
    Used by the card writers (kb.ops.card_input) and rule KB260 (kb.checks.cards)."""
    if value in ("", ".", ".."):
        return "is empty or a path component" if value else "is empty"
    if "/" in value or "\\" in value:
        return "holds a path separator"
    if ".." in value:
        return "holds '..'"
    if _ID_CONTROL.search(value):
        return "holds a control character"
    return None


BOM = "\ufeff"

#: A line that could open a fence, an HTML block or indented code. Only files
#: with such a line pay for a markdown-it block parse.
MAYBE_BLOCK = re.compile(r"^(?: {0,3}(?:```|~~~|<)| {4}|\t)", re.MULTILINE)
_MAYBE_BLOCK_LINE = re.compile(r"(?: {0,3}(?:```|~~~|<)| {4}|\t)")
#: The first character of every line MAYBE_BLOCK matches.
BLOCK_FIRST = frozenset(" \t<`~")
#: BLOCK_FIRST and the heading mark.
_MARK_FIRST = BLOCK_FIRST | {"#"}


class DecodeError(Exception):
    """Raised by :func:`decode` with a ready :class:`Diagnostic`."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def decode(data: bytes, path: str) -> tuple[str, bool]:
    """Decode file bytes as UTF-8 with an optional BOM.

    Returns ``(text, had_bom)`` with the BOM removed. Raises
    :class:`DecodeError` (code KB101) naming the first bad byte and its
    offset; nothing is guessed.
    """
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        from kb.model import Diagnostic

        bad = data[exc.start]
        line = data.count(b"\n", 0, exc.start) + 1
        raise DecodeError(
            Diagnostic(
                path=path,
                line=line,
                code="KB101",
                severity="error",
                message=f"not valid UTF-8 (byte 0x{bad:02x} at offset {exc.start}); "
                "re-save the file as UTF-8",
            )
        ) from None
    if bom:
        text = text[1:]
    return text, bom


@dataclass
class SourceText:
    """A decoded file split into lines.

    ``lines[i]`` is line ``i + 1`` of the file without its ending (a stray
    ``\\r`` of a CRLF file is removed). ``body_start`` is the 0-based index of
    the first line after the frontmatter. ``masked[i]`` is True for lines in
    code or HTML blocks.
    """

    path: str
    text: str
    bom: bool = False
    newline: str = "\n"
    lines: list[str] = field(default_factory=list)
    body_start: int = 0
    masked: list[bool] | None = None
    _heads: list[int] | None = None
    #: Whether some line opens with a character of BLOCK_FIRST (set with _heads).
    _blocky: bool = True
    #: What the mask computation saw of a block reaching the end of the file
    #: (:func:`unclosed_block` reads it; None: no block there).
    _tail: tuple[Any, ...] | None = None

    @classmethod
    def from_text(cls, text: str, path: str, bom: bool = False) -> "SourceText":
        """Split decoded ``text`` into lines (LF or CRLF, taken from the first line ending).

        ``path`` is KB-relative, ``bom`` whether the bytes began with a UTF-8 BOM (already
        removed from ``text``). ``body_start`` and ``masked`` are left for the parser.
        """
        first = text.find("\n")
        newline = "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if "\r" in text:
            lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        return cls(path=path, text=text, bom=bom, newline=newline, lines=lines)

    def heading_indices(self) -> list[int]:
        """0-based indices of every line that starts with ``#`` (one pass over the lines:
        a multiline regex over the text costs five times as much)."""
        if self._heads is None:
            self._first_characters()
        return self._heads  # type: ignore[return-value]

    def _first_characters(self) -> None:
        """One pass over the lines for what both :meth:`heading_indices` and
        :meth:`is_masked` look at first: the lines opening with ``#``, and
        whether any opens with a character of :data:`BLOCK_FIRST`."""
        lines = self.lines
        marked = [i for i, ln in enumerate(lines) if ln[:1] in _MARK_FIRST]
        heads = [i for i in marked if lines[i][0] == "#"]
        self._heads = heads
        self._blocky = len(heads) != len(marked)

    def unmasked_body(self) -> None:
        """Record what the caller found looking at the first character of every line
        of the body: none is in :data:`BLOCK_FIRST`, so no line is masked (what
        :meth:`is_masked` computes then, without its own pass over the lines)."""
        if self.masked is None:
            self.masked = [False] * len(self.lines)

    def is_masked(self, i: int) -> bool:
        """True when 0-based line ``i`` is inside fenced/indented code or HTML."""
        if self.masked is None:
            # Every line MAYBE_BLOCK matches starts with one of BLOCK_FIRST: a
            # scan of first characters rules most files out before the regex.
            if self._heads is None:
                self._first_characters()
            if not self._blocky or MAYBE_BLOCK.search(self.text) is None:
                self.masked = [False] * len(self.lines)
            else:
                self.masked, self._tail = _mask_and_tail(self.lines, self.body_start)
        return self.masked[i]


def compute_mask(lines: list[str], start: int = 0) -> list[bool]:
    """Mark lines inside fenced code, indented code and HTML blocks.

    ``start`` is where the Markdown body begins (after frontmatter). Returns a
    list as long as ``lines``. Fast path: when the only block constructs are
    fences opened at column 0 (the common case in research notes), they are
    found by a line scan — a column-0 fence cannot sit inside a list item or
    a block quote, so no container context is needed. Anything else (an
    indented fence, an HTML block, indented code outside a fence) is left to
    markdown-it-py's block parser, which is exact.
    """
    return _mask_and_tail(lines, start)[0]


def _mask_and_tail(lines: list[str], start: int) -> tuple[list[bool], tuple[Any, ...] | None]:
    """:func:`compute_mask`, and what it saw of the block reaching the end of the file:
    ``("open", line, marker)`` for a column-0 fence the line scan found never closed,
    ``("range", first line, end)`` of markdown-it's last block when it masks the last
    line (:func:`unclosed_block` judges it), None otherwise."""
    mask = [False] * len(lines)
    # MAYBE_BLOCK over the body, line by line (no copy of a 20 MB tree.md).
    first, maybe = BLOCK_FIRST, _MAYBE_BLOCK_LINE.match
    if not any(ln[:1] in first and maybe(ln) for ln in lines[start:] if ln):
        return mask, None
    tail: list[tuple[Any, ...]] = []
    simple = _simple_fences(lines, start, mask, tail)
    if simple:
        return mask, (tail[0] if tail else None)
    mask = [False] * len(lines)
    # Every line ends with its newline, the last too: joined without it, a last blank
    # line was no line to markdown-it, and a block it left open did not reach it.
    body = "\n".join(lines[start:]) + "\n"
    ranges = _code_ranges(body)
    for begin, end in ranges:
        for i in range(start + begin, min(start + end, len(lines))):
            mask[i] = True
    last = None
    if ranges and mask[-1]:
        last = ("range", start + ranges[-1][0], start + ranges[-1][1])
    return mask, last


_COLUMN0_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
_NOT_TEXT = re.compile(r"^ {0,3}(?:#{1,6}(?:[ \t]|$)|([-*_=])(?:[ \t]*\1){2,}[ \t]*$)")
_ALWAYS_PARSE = re.compile(r"^[ \t]*(?:```|~~~|<[A-Za-z/!?])|^[ \t]*(?:[-+*]|\d{1,9}[.)])[ \t]+(?:```|~~~|<[A-Za-z/!?])")
_INDENTED = re.compile(r"^(?: {4}|\t)")
_COLUMN0_COMMENT = re.compile(r"^<!--.*-->")
#: First characters of the lines the patterns of _simple_fences can match (and digits).
_SPECIAL_FIRST = frozenset(" \t`~<-+*#_=")


def _simple_fences(lines: list[str], start: int, mask: list[bool],
                   tail: list[tuple[Any, ...]] | None = None) -> bool:
    """Mask column-0 fences; return False when the file needs a real parse. A fence
    still open at the end is put in ``tail`` as ``("open", its line, its marker)``."""
    fence: str | None = None
    opened = 0
    prev_text = False  # was the previous line paragraph text (which indented code cannot interrupt)?
    for i in range(start, len(lines)):
        line = lines[i]
        if fence is not None:
            mask[i] = True
            stripped = line.lstrip(" ")
            if (len(line) - len(stripped) <= 3 and stripped.startswith(fence)
                    and not stripped.rstrip().strip(fence[0])):
                fence = None
                prev_text = False
            continue
        c = line[:1]
        if not c:
            prev_text = False
            continue
        if c not in _SPECIAL_FIRST and not c.isspace() and not c.isdigit():
            # None of the patterns below can match a line opening with another
            # character: paragraph text (most lines of a big tree.md).
            prev_text = True
            continue
        if c == "#":
            # Of the patterns below only _NOT_TEXT can match a line opening with
            # `#` (a heading: not paragraph text; most special lines of a tree.md).
            prev_text = not _NOT_TEXT.match(line)
            continue
        m = _COLUMN0_FENCE.match(line) if c == "`" or c == "~" else None
        if m is not None:
            marker, info = m.group(1), m.group(2)
            if marker[0] == "`" and "`" in info:
                return False  # not a fence by CommonMark; let the parser decide
            fence, opened = marker, i
            mask[i] = True
            continue
        if c == "<" and _COLUMN0_COMMENT.match(line):
            # An HTML comment opened and closed on one line at column 0 (kb's own
            # `<!-- Generated by kb dashboard … -->` header) is an HTML block of
            # that line alone: it interrupts a paragraph and ends where it ends.
            mask[i] = True
            prev_text = False
            continue
        if _ALWAYS_PARSE.match(line) or (_INDENTED.match(line) and not prev_text):
            # A fence or HTML inside a container, or indented code (which
            # cannot interrupt a paragraph, so an indented line right after
            # paragraph text is a continuation): the real parser decides.
            return False
        prev_text = bool(line.strip()) and not _NOT_TEXT.match(line)
    if fence is not None and tail is not None:
        tail.append(("open", opened, fence))
    return True


_MD = None


def _code_ranges(body: str, kinds: tuple[str, ...] = ("fence", "code_block", "html_block")
                 ) -> list[tuple[int, int]]:
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        # Block level only: inline parsing is never needed to find code and
        # HTML regions, and costs half the parse time.
        _MD = MarkdownIt("commonmark").disable("inline")
    out = []
    for tok in _MD.parse(body):
        if tok.type in kinds and tok.map:
            out.append((tok.map[0], tok.map[1]))
    return out


def blank_ended_html_blocks(lines: list[str], start: int = 0) -> list[tuple[int, int]]:
    """0-based ``[first, end)`` line ranges of the HTML blocks that CommonMark ends at a
    blank line (its kinds 6 and 7: a line opening with ``<details>``, ``</details>``,
    ``<div>`` or any tag alone), in ``lines`` from ``start``. A line right under such a
    block, a heading too, is the block's text: ``### 解法 2｜…`` under ``</details>`` is
    no entry. Blocks ended by a closing text (a comment, ``<pre>``: kinds 1-5) are left
    out: what is inside them is meant to be hidden. One markdown-it parse: called only
    for a file with a masked line worth naming."""
    out = []
    for first, end in _code_ranges("\n".join(lines[start:]) + "\n", ("html_block",)):
        head = lines[start + first].lstrip(" ") if start + first < len(lines) else ""
        if not any(pat.match(head) for pat, _close, _what in _HTML_OPEN):
            out.append((start + first, start + end))
    return out


#: HTML blocks that end only at a closing text (CommonMark's kinds 1-5): the opening
#: (after a block quote's or list item's marks) -> the text that closes it.
_HTML_OPEN = (
    (re.compile(r"<!--"), "-->", "an HTML comment '<!--'"),
    (re.compile(r"<(script|pre|style|textarea)(?=[\s>]|$)", re.IGNORECASE), "</{0}>", "an HTML <{0}> block"),
    (re.compile(r"<\?"), "?>", "an HTML processing instruction '<?'"),
    (re.compile(r"<!\[CDATA\["), "]]>", "a CDATA section '<![CDATA['"),
    (re.compile(r"<![A-Za-z]"), ">", "an HTML declaration '<!'"),
)
_FENCE_MARK = re.compile(r"`{3,}|~{3,}")
#: What may stand before a line's block inside containers (as a pattern's text): blanks,
#: block-quote marks, list markers followed by a blank. The parsers' check for headings
#: inside containers (kb.parse.common.NESTED_HEADING) is built on it too.
CONTAINER_PREFIX = r"[ \t]*(?:(?:>|(?:[-*+]|[0-9]{1,9}[.)])(?=[ \t]|$))[ \t]*)*"
_CONTAINER = re.compile("^" + CONTAINER_PREFIX)


def unclosed_block(src: "SourceText") -> tuple[int, int, str, str] | None:
    """``(opening line, hidden headings, what, how to close)`` when a fenced code block or an
    HTML block of ``src`` (a comment, ``<script>``…) is never closed and so runs to the end
    of the file, hiding its lines from every parser (0-based line; what it is; the text
    that closes it). None otherwise.

    Costs nothing for a file whose last line is not masked (the common case: O(1)); for
    the others the mask computation already saw the block reaching the end (the line
    scan's open fence, or the range of markdown-it's last block): no parse of its own."""
    masked, lines, tail = src.masked, src.lines, src._tail
    if not masked or not masked[-1] or tail is None:
        return None
    start = src.body_start
    end0 = len(lines) - 1  # the last line that is not blank (markdown-it's blocks end there)
    while end0 > start and not lines[end0].strip():
        end0 -= 1
    if tail[0] == "open":  # the line scan's column-0 fence, never closed
        first0, mark = tail[1], tail[2]
        if end0 <= first0:
            return None  # it opens on the last non-blank line: it hides nothing
        heads = sum(1 for i in range(first0 + 1, len(lines)) if lines[i][:1] == "#")
        return first0, heads, f"a fenced code block '{mark}'", f"a line '{mark}'"
    _, first0, stop = tail  # markdown-it's last block, reaching the end
    if stop <= end0 or first0 > end0 or _INDENTED.match(lines[first0]):
        return None  # indented code ends where the indent does: nothing is unclosed
    end_line = lines[end0]
    inner = _CONTAINER.sub("", end_line, count=1)
    fence = _FENCE_MARK.match(_CONTAINER.sub("", lines[first0], count=1))
    if fence is not None:
        mark = fence.group(0)
        closed = (end0 > first0 and inner.startswith(mark)
                  and not inner.rstrip(" \t").strip(mark[0]))
        what, close = f"a fenced code block '{mark}'", f"a line '{mark}'"
    else:
        opening = _CONTAINER.sub("", lines[first0], count=1)
        for pat, end, desc in _HTML_OPEN:
            m = pat.match(opening)
            if m is not None:
                tag = m.group(1).lower() if m.groups() else ""
                end, what = end.format(tag), desc.format(tag)
                break
        else:
            return None  # an HTML block that ends at a blank line: nothing is unclosed
        tail = end_line if end0 > first0 else opening[m.end():]
        closed = end.lower() in tail.lower()
        close = f"'{end}'"
    if closed:
        return None
    if not any(ln.strip() for ln in lines[first0 + 1:]):
        return None  # it opens on the last non-blank line: it hides nothing
    heads = sum(1 for i in range(first0 + 1, len(lines)) if lines[i][:1] == "#")
    return first0, heads, what, close


def unclosed_block_warning(src: "SourceText", what_read: str) -> "Diagnostic | None":
    """KB129 for :func:`unclosed_block` (None when there is none): at the opening line,
    naming how many lines and headings it hides; ``what_read`` names what kb reads there
    ("declarations", "entries", …)."""
    found = unclosed_block(src)
    if found is None:
        return None
    from kb.model import Diagnostic

    first0, heads, what, close = found
    hidden = len(src.lines) - first0 - 1
    where = (f"its line {first0 + 2}" if hidden == 1 else
             f"its {hidden} lines (lines {first0 + 2}–{len(src.lines)}")
    where += f"{' (' if hidden == 1 else ', '}{heads} heading{'s' if heads != 1 else ''})"
    return Diagnostic(
        path=src.path, line=first0 + 1, code="KB129", severity="warning",
        message=f"{what} opened here is never closed, so it runs to the end of the file and "
        f"hides {where}: kb reads no {what_read} there; close it with {close} where it "
        "should end")
