"""A file as lines with their own endings, edited by splicing.

Every kb edit goes through :class:`Document`: it changes only the lines it
is told to change, so all other bytes (BOM, each line's own ending, a missing
final newline, prose, unknown sections and anchors) survive exactly
(DESIGN.md §2: round trip and "edits splice only the lines they change").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kb.text import decode


@dataclass
class Document:
    """Lines without endings plus, per line, the ending it had ('' for the last).

    Line numbers in the API are 1-based, as in diagnostics.
    """

    path: str
    lines: list[str] = field(default_factory=list)
    endings: list[str] = field(default_factory=list)
    bom: bool = False
    newline: str = "\n"

    @classmethod
    def from_bytes(cls, data: bytes, path: str) -> "Document":
        """Split ``data``; raises kb.text.DecodeError when it is not UTF-8."""
        text, bom = decode(data, path)
        return cls.from_text(text, path, bom)

    @classmethod
    def from_text(cls, text: str, path: str, bom: bool = False) -> "Document":
        """Split decoded ``text`` into lines with their endings (``bom``: the file had one)."""
        lines: list[str] = text.split("\n")
        endings: list[str] = ["\n"] * len(lines)
        endings[-1] = ""
        if lines[-1] == "" and len(lines) > 1:
            lines.pop()
            endings.pop()
        elif lines == [""]:
            lines, endings = [], []
        if "\r" in text:
            for i, ln in enumerate(lines):
                if ln.endswith("\r") and endings[i] == "\n":
                    lines[i] = ln[:-1]
                    endings[i] = "\r\n"
        first = next((e for e in endings if e), "\n")
        return cls(path=path, lines=lines, endings=endings, bom=bom, newline=first)

    # -- edits ----------------------------------------------------------------
    def _fix_last(self) -> None:
        # A file without a final newline gets one before text is added after it.
        if self.endings and self.endings[-1] == "":
            self.endings[-1] = self.newline

    def replace(self, lineno: int, text: str) -> None:
        """Replace line ``lineno`` (1-based) by ``text`` (which may hold ``\\n``)."""
        i = lineno - 1
        new = text.split("\n")
        end = self.endings[i]
        self.lines[i:i + 1] = new
        self.endings[i:i + 1] = [self.newline] * (len(new) - 1) + [end]

    def insert(self, lineno: int, texts: list[str]) -> None:
        """Insert ``texts`` as new lines before line ``lineno`` (``len+1`` appends)."""
        i = lineno - 1
        if i >= len(self.lines):
            self.append(texts)
            return
        self.lines[i:i] = texts
        self.endings[i:i] = [self.newline] * len(texts)

    def append(self, texts: list[str]) -> None:
        """Add lines at the end of the file (which keeps ending in a newline)."""
        self._fix_last()
        self.lines.extend(texts)
        self.endings.extend([self.newline] * len(texts))

    def set_frontmatter(self, key: str, value: str) -> bool:
        """Set top-level ``key:`` of the leading frontmatter (:func:`frontmatter_edit`);
        False when there is no such line."""
        edit = frontmatter_edit(self.lines, key, value)
        if edit is None:
            return False
        self.lines[edit[0] - 1] = edit[1]  # the line keeps its own ending
        return True

    def delete(self, lineno: int, count: int = 1) -> None:
        """Remove ``count`` lines starting at ``lineno``."""
        del self.lines[lineno - 1:lineno - 1 + count]
        del self.endings[lineno - 1:lineno - 1 + count]

    # -- output ---------------------------------------------------------------
    def text(self) -> str:
        """The whole text, each line with its own ending (the BOM not included)."""
        nl, endings = self.newline, self.endings
        if endings and endings.count(nl) - (endings[-1] == nl) == len(endings) - 1:
            # Every line but the last ends in the file's newline (the usual case):
            # one join instead of one concatenation per line (a tree has 40,000).
            return nl.join(self.lines) + endings[-1]
        return "".join(ln + e for ln, e in zip(self.lines, endings))

    def to_bytes(self) -> bytes:
        """The file's bytes: BOM kept, each line's ending kept."""
        return (("\ufeff" if self.bom else "") + self.text()).encode("utf-8")


# -- the leading YAML frontmatter (DESIGN.md §2.5) ------------------------------------------

_FM_SCALAR = re.compile(r"^(?P<head>[ \t]*:[ \t]*)(?P<q>[\"']?)(?P<value>.*?)(?P=q)"
                        r"(?P<tail>[ \t]+#.*)?$")


def frontmatter_edit(lines: list[str], key: str, value: str) -> tuple[int, str] | None:
    """``(line, new text)`` setting top-level ``key: scalar`` of the leading ``---``
    block to ``value`` (a plain YAML scalar, e.g. a status word), or None when the
    block has no such line.

    ``lines`` are a :class:`Document`'s lines (BOM already removed); the line
    number is 1-based. The key, spacing, quotes and a trailing comment are kept.
    Only a plain, unquoted key at column 0 is found; the caller knows from the
    parse that the block is frontmatter.
    """
    if not lines or lines[0].rstrip() != "---":
        return None
    for i in range(1, len(lines)):
        ln = lines[i]
        if ln.rstrip() in ("---", "..."):
            return None
        m = _FM_SCALAR.match(ln[len(key):]) if ln.startswith(key) else None
        if m is not None:
            q = m.group("q")
            return i + 1, f"{key}{m.group('head')}{q}{value}{q}{m.group('tail') or ''}"
    return None
