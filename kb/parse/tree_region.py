"""Parse a region of a tree file on its own (the fast path of a tree edit).

``kb hyp``/``kb exp`` re-parse only the lines an edit touches
(:class:`kb.ops.tree_edit.TreeEdit`), and the history rules re-parse only the
changed region of each past version (:mod:`kb.checks.tree_versions`); both use
:func:`parse_region`, which gives up (None) whenever a region parse could differ
from the whole file's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kb.parse.tree import parse_tree
from kb.text import SourceText

if TYPE_CHECKING:  # annotations only
    from kb.model import Diagnostic, Hypothesis

#: Diagnostics that summarise the whole file (their text counts or cites lines
#: anywhere in it): a region parse cannot reproduce them.
FILE_WIDE = {"KB116", "KB129"}


def parse_region(k: Any, rel: str, lines: list[str], offset: int,
                 closed_end: bool) -> tuple[list[Hypothesis], list[Diagnostic]] | None:
    """Parse ``lines`` (file lines ``offset+1 …``) of a tree file on their own.

    The first line must be a declaration heading that the file's parse
    recognised (so no block is open before it). Returns the hypotheses and
    diagnostics with real line numbers, or None when the region parse cannot
    stand for the file's: a code or HTML block reaches its end while a heading
    follows (``closed_end``), it has an error (re-parsed whole so the message
    cites real lines), or a file-wide diagnostic. ``k`` is the KnowledgeBase (its
    ``config`` gives the heading grammar).
    """
    src = SourceText.from_text("\n".join(lines) + "\n", rel)
    hyps, diags = parse_tree(src, k.config.recognise_grammar, k.config.heading_separators)
    if closed_end and lines and src.is_masked(len(lines) - 1):
        return None
    if any(d.severity == "error" or d.code in FILE_WIDE for d in diags):
        return None
    if not offset:
        return hyps, diags
    out_h = [h.replace(line=h.line + offset, end_line=h.end_line + offset,
                       anchor_lines={a: n + offset for a, n in h.anchor_lines.items()})
             for h in hyps]
    out_d = [d.replace(line=d.line + offset if d.line else 0,
                       fix=d.fix.replace(line=d.fix.line + offset) if d.fix else None)
             for d in diags]
    return out_h, out_d


__all__ = ["FILE_WIDE", "parse_region"]
