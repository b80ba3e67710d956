"""Editing one research card by splicing (VIBEMATH-V3.md; DESIGN.md §2.4).

Existing cards are *never* rebuilt from the model: every edit is a splice
through :class:`kb.render.document.Document` (:class:`CardEdit`), so unknown
anchors and sections, the BOM, each line's ending and every untouched byte
survive. New cards are rendered in Vibe Math's own layout (anchor order
:data:`ANCHOR_ORDER`, placeholders of empty sections :data:`PLACEHOLDERS`).

:class:`CardError` is the refusal of every card operation (exit 1).
"""

from __future__ import annotations

from typing import Any, Sequence

from kb.errors import NotFoundError, RefusedError
from kb.repo import KnowledgeBase


class CardError(RefusedError):
    """Bad input for a card operation: a one-line message; nothing was written (exit 1)."""


ENTRY_KINDS = ("解法", "证明", "证伪")
ENTRY_SECTION = {"解法": "解法候选", "证明": "证明尝试", "证伪": "证伪尝试"}
CARD_KINDS = ("problem", "proposition", "method")

#: Anchor order Vibe Math v3 writes, per card format (VIBEMATH-V3.md).
ANCHOR_ORDER = {
    "problem": ("标题", "ID", "类型", "状态", "形式化", "优先级", "依赖", "被依赖", "来源", "判断命题",
                "来源命题", "计划"),
    "proposition": ("标题", "ID", "类型", "状态", "概率", "形式化", "优先级", "依赖", "来源问题", "来源方向",
                    "价值/关键性"),
    "method": ("标题", "ID", "类型", "状态", "可信断言", "上级体系", "子方法", "相关", "适用场景"),
}

PLACEHOLDERS = {"解法": "（暂无解法候选）", "证明": "（暂无证明尝试）", "证伪": "（暂无证伪尝试）",
                "应用": "（暂无应用记录）", "改进": "（暂无改进记录）"}


_SECTION_AFTER = {"证伪尝试": ("证明尝试",), "改进历史": ("应用记录", "定义与记号", "核心内容")}
_SECTION_BEFORE = {"证明尝试": ("证伪尝试",), "应用记录": ("改进历史",), "解法候选": (),
                   "来源与动机": ("解法候选",)}


class CardEdit:
    """A card file being edited: a :class:`Document` plus its re-parsed model.

    Line numbers come from the parser (1-based, as in the file); after each
    edit the card is re-parsed, so successive edits always see fresh lines.
    """

    def __init__(self, k: KnowledgeBase, rel: str, fmt: str, data: bytes | None,
                 text: str | None = None) -> None:
        from kb.render.document import Document
        from kb.text import DecodeError

        self.kb = k
        self.rel = rel
        self.fmt = fmt
        self.orig_bytes = data
        try:
            if data is not None:
                self.doc = Document.from_bytes(data, rel)
            else:
                self.doc = Document.from_text(text or "", rel)
        except DecodeError as exc:
            raise CardError(f"{k.prefix}{rel} is not valid UTF-8 ({exc}); fix it first") from None
        self._model: Any = None
        self._result: Any = None
        self._src: Any = None
        self.orig_model = self.model() if data is not None else None

    # -- reading ------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The card's bytes as they read now (BOM and line endings kept)."""
        return self.doc.to_bytes()

    def changed(self) -> bool:
        """Whether the bytes differ from those read (a new card: always)."""
        return self.orig_bytes != self.to_bytes()

    def _invalidate(self) -> None:
        self._model = None
        self._result = None
        self._src = None

    def model(self) -> Any:
        """The card's object as it reads now (errors are the format guard's business)."""
        if self._model is None:
            from kb.parse import parse_file

            res = parse_file(self.rel, self.to_bytes(), self.kb.config, self.fmt)
            objs = [o for o in res.objects if o.kind == self.fmt]
            if not objs:
                raise CardError(f"{self.kb.prefix}{self.rel} cannot be read as a {self.fmt} card")
            self._model = objs[0]
            self._result = res
        return self._model

    def result(self) -> Any:
        """The :class:`kb.model.ParseResult` of the current bytes."""
        self.model()
        return self._result

    def src(self) -> Any:
        """The current text as a :class:`kb.text.SourceText` (masking, frontmatter end)."""
        if self._src is None:
            from kb.parse.frontmatter import read_frontmatter
            from kb.text import SourceText

            self._src = SourceText.from_text(self.doc.text(), self.rel, self.doc.bom)
            read_frontmatter(self._src)
        return self._src

    def sections(self) -> list[tuple[str, int, int]]:
        """``(name, heading index, end index)`` of each ``## `` section (0-based, end exclusive)."""
        src = self.src()
        lines = src.lines
        heads = [i for i in range(src.body_start, len(lines))
                 if lines[i].startswith("## ") and not src.is_masked(i)]
        ends = heads[1:] + [len(lines)]
        return [(lines[h][3:].strip(), h, e) for h, e in zip(heads, ends)]

    def section(self, name: str) -> tuple[str, int, int] | None:
        """``(name, heading index, end index)`` of the ``## name`` section, or None."""
        return next((s for s in self.sections() if s[0] == name), None)

    def structure(self) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
        """``(section names, (entry kind, number) pairs)``: what an edit must keep."""
        m = self.model()
        entries = tuple((e.kind, e.number) for e in getattr(m, "entries", ()))
        return tuple(s[0] for s in self.sections()), entries

    # -- anchors ------------------------------------------------------------
    def set_anchor(self, key: str, value: str) -> bool:
        """Write ``- key: value`` in place, or insert it in Vibe Math's anchor order."""
        m = self.model()
        line = f"- {key}: {value}"
        if key == "状态" and isinstance(m.frontmatter.get("status"), str):
            # The frontmatter's status follows the anchor (the two must agree: KB104).
            self.doc.set_frontmatter("status", value)
        if key in m.anchor_lines:
            ln = m.anchor_lines[key]
            if self.doc.lines[ln - 1] == line:
                return False
            self.doc.replace(ln, line)
        else:
            self.doc.insert(self._anchor_slot(key), [line])
        self._invalidate()
        return True

    def _anchor_slot(self, key: str) -> int:
        """1-based line number before which a new anchor ``key`` goes."""
        m = self.model()
        have = m.anchor_lines
        order = ANCHOR_ORDER.get(self.fmt, ())
        if key in order:
            i = order.index(key)
            for prev in reversed(order[:i]):
                if prev in have:
                    return have[prev] + 1
            for nxt in order[i + 1:]:
                if nxt in have:
                    return have[nxt]
        if have:
            return max(have.values()) + 1
        src = self.src()
        for j in range(src.body_start, len(src.lines)):
            if src.lines[j].startswith("# "):
                return j + 2
        return src.body_start + 1

    # -- sections and blocks --------------------------------------------------
    def add_block(self, section: str, block: list[str], placeholder: str | None = None) -> None:
        """Append ``block`` (lines) at the end of ``section``, creating the section if needed.

        A placeholder line (``（暂无解法候选）``) is replaced by the block when it is
        all the section holds; beside prose of the user's it is removed and the block
        appended after the prose (put in its place, the prose would have become the
        block's text). Blocks are separated by one blank line, and one blank line is
        kept before the next section.

        Raises :class:`CardError` when the card already leaves a code fence or HTML block
        open at its end, or the block would: whatever is written after it (the next entry,
        a merge's) would be read as its text.
        """
        was_open = self._open_at_end()
        if was_open is not None:
            raise CardError(f"the card leaves a code fence or an HTML block open from line "
                            f"{was_open} to its end, so anything written after it is not read; "
                            "close it (`kb verify` shows it: KB129) and run the command again")
        self._add_block(section, block, placeholder)
        opened = self._open_at_end()
        if opened is not None:
            raise CardError(f"the text leaves a code fence or an HTML block open (from line "
                            f"{opened} of the card): what is written after it would not be read "
                            "(a teammate's next entry would vanish into it); close it")

    def _open_at_end(self) -> int | None:
        """The 1-based line where a code fence or HTML block that the card leaves open at
        its end begins (a heading written after the card would be read as its text), or
        None. The parser's own mask decides (:func:`kb.text.compute_mask`)."""
        from kb.text import compute_mask

        lines = [*self.doc.lines, "", "## kb"]
        mask = compute_mask(lines, self.src().body_start)
        if not mask[-1]:
            return None
        i = len(lines) - 1
        while i > 0 and mask[i - 1]:
            i -= 1
        return i + 1

    def _add_block(self, section: str, block: list[str], placeholder: str | None) -> None:
        lines = self.doc.lines
        sec = self.section(section)
        src = self.src()
        if sec is None:
            self._create_section(section, block)
            return
        _, h, end = sec
        if placeholder:
            for i in range(h + 1, end):
                if lines[i].strip() == placeholder and not src.is_masked(i):
                    if not any(lines[j].strip() for j in range(h + 1, end) if j != i):
                        self.doc.replace(i + 1, "\n".join(block))
                        self._invalidate()
                        return
                    self.doc.delete(i + 1)  # `lines` is the document's list: end moves up
                    self._invalidate()
                    end -= 1
                    break
        last = max(i for i in range(h, end) if i == h or lines[i].strip())
        ins = list(block) if last == h else [""] + list(block)
        if end < len(lines) and last + 1 == end:
            ins.append("")
        self.doc.insert(last + 2, ins)
        self._invalidate()

    def _create_section(self, section: str, block: list[str]) -> None:
        secs = self.sections()
        names = [s[0] for s in secs]
        lines = self.doc.lines
        for after in _SECTION_AFTER.get(section, ()):
            if after in names:
                _, h, end = secs[names.index(after)]
                last = max(i for i in range(h, end) if i == h or lines[i].strip())
                ins = ["", f"## {section}", *block]
                if end < len(lines):
                    ins.append("")
                self.doc.insert(last + 2, ins)
                self._invalidate()
                return
        for before in _SECTION_BEFORE.get(section, ()):
            if before in names:
                _, h, _ = secs[names.index(before)]
                self.doc.insert(h + 1, [f"## {section}", *block, ""])
                self._invalidate()
                return
        ins = [f"## {section}", *block]
        if lines and lines[-1].strip():
            ins.insert(0, "")
        self.doc.append(ins)
        self._invalidate()

    # -- entries ----------------------------------------------------------------
    def add_entry(self, kind: str, title: str, probability: float, status: str, text: str) -> int:
        """Append ``### <kind> N｜title｜概率x｜状态y`` and its text; return N."""
        from kb.model import Entry
        from kb.render.card import entry_line

        m = self.model()
        before_secs, before_entries = self.structure()
        number = max((e.number for e in m.entries if e.kind == kind), default=0) + 1
        head = entry_line(Entry(kind=kind, number=number, title=title, probability=probability,
                                status=status, line=0))
        body = text.split("\n") if text else []
        self.add_block(ENTRY_SECTION[kind], [head, *body], PLACEHOLDERS[kind])
        secs, entries = self.structure()
        want = before_entries + ((kind, number),)
        got = next((e for e in self.model().entries if (e.kind, e.number) == (kind, number)), None)
        if (sorted(entries) != sorted(want) or not same_sections(before_secs, secs, ENTRY_SECTION[kind])
                or got is None or got.text.strip("\n") != text.strip("\n")):
            raise CardError("the text would change the structure of the card (a line starting "
                            "with '## ' or '### ' outside a code block, or an unclosed code "
                            "fence); use '#### ' headings or close the fence")
        return number

    def set_entry(self, kind: str, number: int, **update: Any) -> Any:
        """Rewrite the entry line of (kind, number) with ``update`` (probability, status, title)."""
        from kb.render.card import entry_line

        e = self.entry(kind, number)
        new = e.replace(**update)
        self.doc.replace(e.line, entry_line(new))
        self._invalidate()
        return new

    def entry(self, kind: str, number: int) -> Any:
        """The entry (kind, number); :class:`CardError` when absent or duplicated."""
        found = [e for e in self.model().entries if e.kind == kind and e.number == number]
        if not found:
            have = ", ".join(f"{e.kind}{e.number}" for e in self.model().entries) or "none"
            raise NotFoundError(f"{self.model().id} has no entry {kind} {number} (entries: {have})")
        if len(found) > 1:
            raise CardError(f"{self.model().id} has {kind} {number} twice; renumber the entries first")
        return found[0]


def same_sections(before: Sequence[str], after: Sequence[str], added: str) -> bool:
    """Whether the ``## `` sections ``after`` an edit are those ``before`` plus ``added``."""
    want = list(before) + ([added] if added not in before else [])
    return sorted(want) == sorted(after)


__all__ = ["CardError", "CardEdit", "ENTRY_KINDS", "ENTRY_SECTION", "CARD_KINDS", "ANCHOR_ORDER",
           "PLACEHOLDERS", "same_sections"]
