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

from kb.model import Diagnostic

BOM = "\ufeff"

# A line that could open a fence, an HTML block or indented code. Only files
# with such a line pay for a markdown-it block parse.
_MAYBE_BLOCK = re.compile(r"^(?: {0,3}(?:```|~~~|<)| {4}|\t)", re.MULTILINE)


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

    @classmethod
    def from_text(cls, text: str, path: str, bom: bool = False) -> "SourceText":
        first = text.find("\n")
        newline = "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        return cls(path=path, text=text, bom=bom, newline=newline, lines=lines)

    def is_masked(self, i: int) -> bool:
        """True when 0-based line ``i`` is inside fenced/indented code or HTML."""
        if self.masked is None:
            self.masked = compute_mask(self.lines, self.body_start)
        return self.masked[i]


def compute_mask(lines: list[str], start: int = 0) -> list[bool]:
    """Mark lines inside fenced code, indented code and HTML blocks.

    ``start`` is where the Markdown body begins (after frontmatter). Returns a
    list as long as ``lines``.
    """
    mask = [False] * len(lines)
    body = "\n".join(lines[start:])
    if not _MAYBE_BLOCK.search(body):
        return mask
    for begin, end in _code_ranges(body):
        for i in range(start + begin, min(start + end, len(lines))):
            mask[i] = True
    return mask


_MD = None


def _code_ranges(body: str) -> list[tuple[int, int]]:
    global _MD
    if _MD is None:
        from markdown_it import MarkdownIt

        # Block level only: inline parsing is never needed to find code and
        # HTML regions, and costs half the parse time.
        _MD = MarkdownIt("commonmark").disable("inline")
    out = []
    for tok in _MD.parse(body):
        if tok.type in ("fence", "code_block", "html_block") and tok.map:
            out.append((tok.map[0], tok.map[1]))
    return out
