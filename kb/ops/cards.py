"""Research cards: create and edit problems, propositions, methods and entries.

The write side of the Vibe Math v3 cards (VIBEMATH-V3.md; DESIGN.md §2.4).
Every public function is one :class:`kb.ops.transaction.Transaction` and so
one commit; it refuses bad input with :class:`CardError` (exit 1) before
anything is written.

New cards are rendered in Vibe Math's own layout (anchor order, JSON lists
without spaces, placeholders of empty sections, ``- key: `` for an empty
value). Existing cards are *never* rebuilt from the model: every edit is a
splice through :class:`kb.render.document.Document` (:class:`CardEdit`), so
unknown anchors and sections, the BOM, each line's ending and every untouched
byte survive.

Derived fields are kept up to date inside the same transaction
(:meth:`Workspace.sync_dependencies`): ``被依赖`` of a problem lists the
problems whose ``依赖`` names it (natural ID order), and a problem moves
between ``求解中`` and ``等待依赖`` as its dependencies settle. A dependency
is settled when the problem is ``已解决`` or ``never``, or the proposition's
``概率`` is 0 or 1 or its priority ``never``. Reads come from the index
(:class:`kb.index.Index`, refreshed incrementally), never from a parse of
every card.

The clock is ``KB_NOW`` when set (epoch seconds — the form kb's lock code
reads too —, ISO 8601 or ``20261102T100000``, UTC), else the system's UTC time.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

from kb.errors import ConflictError, NotFoundError, RefusedError, UsageError
from kb.ops.result import OpResult
from kb.repo import KnowledgeBase, open_kb
from kb.text import control_char
from kb.research import dependencies
from kb.research.dependencies import natural_key
from kb.vocab import (  # re-exported: the card vocabularies live in kb.vocab
    METHOD_STATUS,
    METHOD_TYPE,
    PROBLEM_SOURCE,
    PROBLEM_STATUS,
    PROPOSITION_STATUS,
)

# ---------------------------------------------------------------------------
# Errors, clock, numbers, IDs


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


def now() -> datetime:
    """The current time in UTC; ``KB_NOW`` overrides it (kb.clock)."""
    from kb import clock

    return clock.now()


def parse_time(raw: str) -> datetime | None:
    """See :func:`kb.clock.parse_time`."""
    from kb import clock

    return clock.parse_time(raw)


def fmt_time(dt: datetime) -> str:
    """``2026-11-02 10:00:00`` (Verified cards, applications)."""
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def compact_time(dt: datetime) -> str:
    """``20261102T100000`` (verification record file names)."""
    return dt.strftime("%Y%m%dT%H%M%S")


def iso_time(dt: datetime) -> str:
    """``2026-11-02T10:00:00`` (the ``at`` of verification records)."""
    return dt.strftime("%Y-%m-%dT%H:%M:%S")


def parse_probability(raw: Union[str, float, int, None], what: str = "probability", *,
                      open_interval: bool = True) -> float:
    """A number in [0, 1]; with ``open_interval`` 0 and 1 are refused too.

    0 and 1 mean *settled* (true / false); only a verdict writes them
    (VIBEMATH-V3.md: agents never report 0 or 1 themselves).
    """
    if raw is None:
        raise UsageError(f"{what} is missing; give a number between 0 and 1")
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        x = float(raw)
    else:
        try:
            x = float(str(raw).strip())
        except ValueError:
            raise UsageError(f"{what} {raw!r} is not a number; give a number between 0 and 1") from None
    if x != x or x in (float("inf"), float("-inf")) or not 0 <= x <= 1:
        raise UsageError(f"{what} {raw} is outside [0,1]; give a number between 0 and 1")
    if 0 < x < 1e-4:
        raise UsageError(f"{what} {raw} is below 0.0001; give at least 0.0001 (Vibe Math reads "
                        "plain decimals only)")
    if open_interval and x in (0.0, 1.0):
        raise UsageError(f"{what} {raw} would settle the object; give a number strictly between 0 "
                        "and 1 (only `kb verdict` sets 0 or 1)")
    return x


def parse_priority_arg(raw: Union[str, int, None]) -> Union[int, str]:
    """``"3"`` -> 3, ``"never"`` -> ``"never"``; anything else is refused."""
    if raw is None:
        return 1
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw < 0:
            raise UsageError(f"priority {raw} is negative; give an integer ≥ 0 or never")
        return raw
    v = str(raw).strip()
    if v == "never":
        return "never"
    if re.fullmatch(r"\d+", v):
        return int(v)
    raise UsageError(f"priority {raw!r} is not valid; give an integer ≥ 0 (smaller runs first) or never")


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNSAFE_NEW = re.compile(r'[\\/:*?"<>|#｜,\[\]{}\s\x00-\x1f\x7f]')


def unsafe_id_reason(value: str) -> str | None:
    """Why ``value`` is not a safe ID anywhere (path separators, ``..``, control characters)."""
    if value in ("", ".", ".."):
        return "is empty or a path component" if value else "is empty"
    if "/" in value or "\\" in value:
        return "holds a path separator"
    if ".." in value:
        return "holds '..'"
    if _CONTROL.search(value):
        return "holds a control character"
    return None


def check_new_id(value: str, what: str = "ID") -> str:
    """Refuse an ID kb would not create (VIBEMATH-V3.md safe IDs, refused rather than rewritten).

    Besides :func:`unsafe_id_reason`: none of ``\\ / : * ? " < > | # ｜ , [ ] { }``
    nor white space, no leading or trailing ``.`` or ``-``, at most 80 characters.
    """
    v = value if isinstance(value, str) else ""
    why = unsafe_id_reason(v)
    if why is None:
        bad = _UNSAFE_NEW.search(v)
        if bad:
            why = f"holds {bad.group()!r}"
        elif v[0] in ".-" or v[-1] in ".-":
            why = "starts or ends with '.' or '-'"
        elif len(v) > 80:
            why = "is longer than 80 characters"
    if why:
        raise UsageError(f"{what} {value!r} {why}; use letters, digits, CJK, '_' and inner '-' or "
                        "'.' (e.g. q1, p-3f2a9c01)")
    return v


def check_line(value: str | None, what: str, *, required: bool = True) -> str:
    """A one-line field (title, plan, name): no newline, not empty when required."""
    v = (value or "").strip()
    if required and not v:
        raise UsageError(f"{what} is empty; give a non-empty one-line text")
    if "\n" in v or "\r" in v:
        raise UsageError(f"{what} holds a line break; give a single line")
    bad = control_char(v)
    if bad:
        raise UsageError(f"{what} holds the control or invisible character {bad}; remove it")
    return v


def read_text_arg(text: str | None, text_file: str | Path | None, what: str = "text",
                  required: bool = True) -> str:
    """The text of ``--text`` or ``--text-file`` (UTF-8; ``-`` is not special)."""
    if text is not None and text_file is not None:
        raise UsageError(f"give either the {what} or a file holding it, not both")
    if text_file is not None:
        p = Path(text_file)
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            raise UsageError(f"text file {str(text_file)!r} does not exist; give an existing "
                            "UTF-8 file") from None
        except OSError as exc:
            raise UsageError(f"cannot read text file {str(text_file)!r}: {exc.strerror}") from None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise UsageError(f"text file {str(text_file)!r} is not UTF-8; re-save it as UTF-8") from None
    out = (text or "").replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    out = "\n".join(ln.rstrip() for ln in out.split("\n")).strip("\n")
    if required and not out.strip():
        raise UsageError(f"the {what} is empty; give it with --text or --text-file")
    return out


# ---------------------------------------------------------------------------
# Settled state and dependency rules (VIBEMATH-V3.md)


def is_settled(obj: Any) -> bool:
    """A problem 已解决 or ``never``; a proposition at 概率 0 or 1 or ``never``; others: yes."""
    return dependencies.is_settled(getattr(obj, "kind", None), getattr(obj, "status", None),
                                   getattr(obj, "probability", None), getattr(obj, "priority", None))


def is_final(obj: Any) -> bool:
    """Settled by verification: a problem 已解决, a proposition at 0 or 1 (its record is final)."""
    return dependencies.is_final(getattr(obj, "kind", None), getattr(obj, "status", None),
                                 getattr(obj, "probability", None))


# ---------------------------------------------------------------------------
# Editing one card by splicing


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
        return self.doc.to_bytes()

    def changed(self) -> bool:
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
        return next((s for s in self.sections() if s[0] == name), None)

    def structure(self) -> tuple[tuple[str, ...], tuple[tuple[str, int], ...]]:
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

        A placeholder line (``（暂无解法候选）``) is replaced by the block; blocks
        are separated by one blank line, and one blank line is kept before the
        next section.
        """
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
                    self.doc.replace(i + 1, "\n".join(block))
                    self._invalidate()
                    return
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
        if (sorted(entries) != sorted(want) or not _same_sections(before_secs, secs, ENTRY_SECTION[kind])
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
        found = [e for e in self.model().entries if e.kind == kind and e.number == number]
        if not found:
            have = ", ".join(f"{e.kind}{e.number}" for e in self.model().entries) or "none"
            raise CardError(f"{self.model().id} has no entry {kind} {number} (entries: {have})")
        if len(found) > 1:
            raise CardError(f"{self.model().id} has {kind} {number} twice; renumber the entries first")
        return found[0]


# ---------------------------------------------------------------------------
# The workspace of one operation: index + pending edits



class Workspace:
    """The KB as one write operation sees it: the index, overlaid with its own edits."""

    def __init__(self, k: KnowledgeBase, tx: Any) -> None:
        from kb.index import Index

        self.kb = k
        self.tx = tx
        self.idx = Index(k)
        self.idx.refresh()
        self.edits: dict[str, CardEdit] = {}
        self.by_id: dict[str, CardEdit] = {}
        self.notes: list[str] = []

    def close(self) -> None:
        self.idx.close()

    # -- paths --------------------------------------------------------------
    def path_of(self, key: str) -> str:
        return self.kb.config.paths[key].strip("/")

    def problem_rel(self, qid: str) -> str:
        return f"{self.path_of('problems')}/{qid}.md"

    def proposition_rel(self, category: str, pid: str) -> str:
        return f"{self.path_of('propositions')}/{category}/{pid}.md"

    def method_rel(self, mid: str) -> str:
        return f"{self.path_of('methods')}/{mid}.md"

    def verified_rel(self, kind_word: str, obj_id: str) -> str:
        return f"{self.path_of('verified')}/{kind_word}/{obj_id}.md"

    # -- lookups ------------------------------------------------------------
    def rows(self, obj_id: str) -> list[Any]:
        return self.idx.get(obj_id)

    def row(self, obj_id: str, kinds: Sequence[str] = CARD_KINDS) -> Any:
        rows = [r for r in self.idx.get(obj_id) if r.kind in kinds]
        if len(rows) > 1:
            where = ", ".join(f"{self.kb.prefix}{r.path}" for r in rows)
            raise CardError(f"ID {obj_id} is declared {len(rows)} times ({where}); fix the "
                            "duplicate first (kb verify lists it)")
        return rows[0] if rows else None

    def obj(self, obj_id: str, kinds: Sequence[str] = CARD_KINDS) -> Any:
        """The object as this operation sees it (its own edits first), or None."""
        e = self.by_id.get(obj_id)
        if e is not None and e.fmt in kinds:
            return e.model()
        r = self.row(obj_id, kinds)
        return r.model() if r is not None else None

    def exists(self, obj_id: str) -> bool:
        return obj_id in self.by_id or bool(self.idx.get(obj_id))

    def require(self, obj_id: str, kinds: Sequence[str], what: str) -> Any:
        o = self.obj(obj_id, kinds)
        if o is None:
            raise NotFoundError(f"unknown {what} {obj_id!r}; " + self.known_hint(kinds))
        return o

    def known_hint(self, kinds: Sequence[str]) -> str:
        ids: list[str] = []
        for kind in kinds:
            ids += [r.id for r in self.idx.objects(kind)]
        ids = sorted(set(ids), key=natural_key)
        if not ids:
            return "there are none yet"
        shown = ", ".join(ids[:12]) + (f", … ({len(ids)} in all)" if len(ids) > 12 else "")
        return f"known: {shown}"

    def categories(self) -> list[str]:
        return _categories(self.kb, self.idx)

    # -- edits --------------------------------------------------------------
    def edit(self, obj_id: str, kinds: Sequence[str] = CARD_KINDS) -> CardEdit:
        """The edit of an existing card (opened once per operation)."""
        e = self.by_id.get(obj_id)
        if e is not None:
            return e
        r = self.row(obj_id, kinds)
        if r is None:
            raise NotFoundError(f"unknown ID {obj_id!r}; " + self.known_hint(kinds))
        return self.open(r.path, r.kind, obj_id)

    def open(self, rel: str, fmt: str, obj_id: str | None = None) -> CardEdit:
        e = self.edits.get(rel)
        if e is None:
            data = self.tx.read(rel)
            if data is None:
                raise CardError(f"{self.kb.prefix}{rel} does not exist (the index is stale? run "
                                "kb index)")
            e = CardEdit(self.kb, rel, fmt, data)
            self.edits[rel] = e
        self.by_id[obj_id or e.model().id] = e
        return e

    def create(self, rel: str, fmt: str, text: str, obj_id: str) -> CardEdit:
        if self.tx.read(rel) is not None:
            raise ConflictError(f"{self.kb.prefix}{rel} already exists; choose another ID")
        e = CardEdit(self.kb, rel, fmt, None, text)
        self.edits[rel] = e
        self.by_id[obj_id] = e
        return e

    def flush(self) -> list[str]:
        """Stage every changed card in the transaction; return their KB paths."""
        out = []
        for rel, e in self.edits.items():
            if e.changed():
                data = e.to_bytes()
                self.tx.write(rel, data)
                self.remember(rel, data, e.result())
                out.append(rel)
        return out

    def remember(self, rel: str, data: bytes, result: Any) -> None:
        """Store the parse of bytes kb writes, so the next refresh need not parse them."""
        put = getattr(self.idx, "put", None)
        if put is None:
            return
        from kb import git

        try:
            put(rel, git.blob_id(data), result)
        except Exception:  # a cache: never let it fail a write
            pass

    # -- derived fields ----------------------------------------------------------
    def dependants(self, target: str) -> set[str]:
        """Problems whose ``依赖`` names ``target`` (index, overlaid with this op's edits)."""
        out = set()
        _, inc = self.idx.links(target)
        for src, _dst, kind in inc:
            if kind == "depends":
                out.add(src)
        for obj_id, e in self.by_id.items():
            if e.fmt == "problem":
                out.add(obj_id)
        result = set()
        for q in out:
            o = self.obj(q, ("problem",))
            if o is not None and target in o.depends:
                result.add(q)
        return result

    def dep_settled(self, obj_id: str) -> bool:
        o = self.obj(obj_id, ("problem", "proposition"))
        return True if o is None else is_settled(o)

    def waiting_status(self, q: Any) -> str | None:
        """The status ``q`` should move to by dependency state, or None."""
        if q.kind != "problem":
            return None
        return dependencies.waiting_move(q.status, q.priority,
                                         all(self.dep_settled(d) for d in q.depends))

    def sync_dependencies(self) -> list[str]:
        """Recompute ``被依赖`` and ``等待依赖`` wherever this operation's edits matter."""
        from kb.parse.common import dump_list

        changes: list[str] = []
        targets: set[str] = set()
        check: set[str] = set()
        settled_changed: list[str] = []
        for obj_id, e in list(self.by_id.items()):
            if e.fmt not in ("problem", "proposition"):
                continue
            old, new = e.orig_model, e.model()
            if e.fmt == "problem":
                old_deps = set(old.depends) if old is not None else set()
                if old is None or old_deps != set(new.depends):
                    targets |= old_deps | set(new.depends)
                    check.add(obj_id)
                if old is None:
                    targets.add(obj_id)
            if old is None or is_settled(old) != is_settled(new):
                settled_changed.append(obj_id)
        for t in sorted(targets, key=natural_key):
            o = self.obj(t, ("problem",))
            if o is None:
                continue
            want = tuple(sorted(self.dependants(t), key=natural_key))
            if want != tuple(o.depended_by):
                self.edit(t, ("problem",)).set_anchor("被依赖", dump_list(want))
                changes.append(f"{t}: 被依赖 {dump_list(want)}")
        for x in settled_changed:
            check |= self.dependants(x)
        for q in sorted(check, key=natural_key):
            o = self.obj(q, ("problem",))
            if o is None:
                continue
            st = self.waiting_status(o)
            if st:
                self.edit(q, ("problem",)).set_anchor("状态", st)
                changes.append(f"{q}: 状态 {o.status} → {st}")
        return changes


def open_kb_arg(kb: Union[KnowledgeBase, str, Path, None]) -> KnowledgeBase:
    """A :class:`KnowledgeBase`, or the KB containing a path (default: the current directory)."""
    if isinstance(kb, KnowledgeBase):
        return kb
    return open_kb(Path(kb) if kb else None)


def run_op(kb: Union[KnowledgeBase, str, Path, None], op: str, summary: str,
           build: Callable[[Workspace], tuple[list[str], dict[str, Any]]], *,
           ids: Sequence[str] = (), target_id: str | None = None, no_commit: bool = False,
           owner: str | None = None, expect: Union[str, Mapping[str, str], None] = None,
           on_wait: Callable[[str], None] | None = None, sync: bool = True) -> OpResult:
    """Run ``build`` inside one transaction; it edits through the workspace.

    ``build(ws)`` returns ``(lines, data)``; derived fields are synced after
    it (``sync``), every changed card is staged and the transaction commits.
    ``expect`` is the blob id the caller read of ``target_id``'s card
    (compare-and-swap), or a mapping KB path -> blob id.
    """
    from kb.ops.transaction import Transaction

    k = open_kb_arg(kb)
    exp: dict[str, str] = dict(expect) if isinstance(expect, Mapping) else {}
    if isinstance(expect, str) and expect and target_id is None:
        raise UsageError("--expect applies to commands that edit an existing card; this one "
                        "creates a new card")
    tx = Transaction(k, op, summary=summary, no_commit=no_commit, owner=owner, expect=exp,
                     on_wait=on_wait)
    with tx:
        ws = Workspace(k, tx)
        try:
            if isinstance(expect, str) and expect:
                r = ws.row(target_id or "")
                if r is None:
                    raise NotFoundError(f"unknown ID {target_id!r}; " + ws.known_hint(CARD_KINDS))
                tx.expect[r.path] = expect
            lines, data = build(ws)
            if sync:
                derived = ws.sync_dependencies()
                if derived:
                    lines = lines + [f"  (derived) {c}" for c in derived]
                    data.setdefault("derived", derived)
            ws.flush()
            tx.ids.extend(i for i in ids if i not in tx.ids)
        finally:
            ws.close()
    return OpResult.of(tx, op, target_id or (ids[0] if ids else None), lines, data)


def _same_sections(before: Sequence[str], after: Sequence[str], added: str) -> bool:
    want = list(before) + ([added] if added not in before else [])
    return sorted(want) == sorted(after)


# ---------------------------------------------------------------------------
# Problems


def _check_depends(ws: Workspace, depends: Iterable[str], self_id: str) -> tuple[str, ...]:
    out: list[str] = []
    for d in depends:
        d = d.strip()
        if not d:
            continue
        if d == self_id:
            raise CardError(f"{self_id} cannot depend on itself")
        if ws.obj(d, ("problem", "proposition")) is None:
            raise CardError(f"dependency {d!r} is not a problem or proposition; "
                            + ws.known_hint(("problem", "proposition")))
        if d not in out:
            out.append(d)
    return tuple(out)


def _check_free_id(ws: Workspace, obj_id: str) -> None:
    rows = ws.rows(obj_id)
    if rows or obj_id in ws.by_id:
        where = f" ({ws.kb.prefix}{rows[0].path})" if rows else ""
        raise ConflictError(f"ID {obj_id!r} already exists{where}; choose another ID")


def _title_from(statement: str) -> str:
    first = statement.strip().split("\n", 1)[0].strip()
    return first if len(first) <= 60 else first[:59] + "…"


def add_problem(kb: Union[KnowledgeBase, str, Path, None], qid: str, statement: str,
                title: str | None = None, priority: Union[int, str] = 1,
                depends: Sequence[str] = (), source: str = "原始", motivation: str | None = None,
                *, plan: str = "待调度", formal: str | None = None, no_commit: bool = False,
                owner: str | None = None, expect: Union[str, Mapping[str, str], None] = None,
                on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Create ``Problems/<qid>.md`` (status 求解中, or 等待依赖 while a dependency is unsettled)."""
    from kb.model import Problem
    from kb.render.card import render_card

    check_new_id(qid, "problem ID")
    statement = read_text_arg(statement, None, "statement")
    title = check_line(title, "title") if title is not None else _title_from(statement)
    prio = parse_priority_arg(priority)
    if source not in PROBLEM_SOURCE:
        raise UsageError(f"source {source!r} is not valid; use one of: {', '.join(PROBLEM_SOURCE)}")
    plan = check_line(plan, "plan", required=False)
    formal_v = check_line(formal, "formal statement", required=False) if formal else None
    motivation_v = read_text_arg(motivation, None, "motivation", required=False) if motivation else ""

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        _check_free_id(ws, qid)
        deps = _check_depends(ws, depends, qid)
        ready = all(ws.dep_settled(d) for d in deps)
        status = "求解中" if ready or prio == "never" else "等待依赖"
        anchors: dict[str, str] = {}
        if formal_v:
            anchors["形式化"] = formal_v
        if motivation_v:
            anchors["来源与动机"] = motivation_v
        rel = ws.problem_rel(qid)
        obj = Problem(id=qid, path=rel, line=1, title=title, status=status, priority=prio,
                      depends=deps, depended_by=tuple(sorted(ws.dependants(qid), key=natural_key)),
                      source=source, plan=plan, statement=statement, anchors=anchors)
        e = ws.create(rel, "problem", render_card(obj), qid)
        got = e.model()
        if got.statement != statement.strip() or got.entries:
            raise CardError("the statement would change the structure of the card (a line "
                            "starting with '#' or an unclosed code fence); use '#### ' or close it")
        return ([f"{qid}: new problem {ws.kb.prefix}{rel} ({status}, 优先级 {prio})"],
                {"id": qid, "path": ws.kb.prefix + rel, "status": status, "priority": prio,
                 "depends": list(deps)})

    return run_op(kb, "problem.add", f"kb problem add {qid}: {title}", build, ids=[qid],
                  no_commit=no_commit, owner=owner, expect=expect, on_wait=on_wait)


def set_problem_status(kb: Union[KnowledgeBase, str, Path, None], qid: str, status: str, *,
                       no_commit: bool = False, owner: str | None = None,
                       expect: Union[str, Mapping[str, str], None] = None,
                       on_wait: Callable[[str], None] | None = None) -> OpResult:
    """``状态`` of a problem: 原始, 求解中, 等待依赖 or 死路.

    已解决 is accepted only for a problem that already holds a solution at 概率1
    (e.g. a card Vibe Math wrote without closing it): it is closed as a verdict
    would (优先级 never, Verified card); otherwise a verdict settles it.
    """
    if status not in PROBLEM_STATUS:
        raise UsageError(f"status {status!r} is not valid; use one of: {', '.join(PROBLEM_STATUS)}")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        q = ws.require(qid, ("problem",), "problem")
        if q.status == status:
            return [f"{qid}: already {status}"], {"id": qid, "status": status, "changed": False}
        if q.status == "已解决":
            raise CardError(f"{qid} is 已解决 (settled by verification); its status is final")
        if status == "已解决":
            e = ws.edit(qid, ("problem",))
            if not any(x.kind == "解法" and x.probability == 1 for x in e.model().entries):
                raise CardError(f"{qid} becomes 已解决 through a verdict of 1 on a solution "
                                f"(kb verdict {qid}#解法N --vote …), and it has no solution at 概率1; "
                                "use one of: 原始, 求解中, 等待依赖, 死路")
            from kb.ops.verdict import write_verified_card

            e.set_anchor("状态", "已解决")
            e.set_anchor("优先级", "never")
            rel = write_verified_card(ws, qid, "问题")
            lines = [f"{qid}: 状态 {q.status} → 已解决, 优先级 never (its solution at 概率1)"]
            if rel:
                lines.append(f"{qid}: Verified card {ws.kb.prefix}{rel}")
            return lines, {"id": qid, "status": status, "changed": True}
        unsettled = [d for d in q.depends if not ws.dep_settled(d)]
        if status == "求解中" and unsettled and q.priority != "never":
            raise CardError(f"{qid} depends on unsettled {', '.join(unsettled)}; it stays 等待依赖 "
                            "until they settle")
        if status == "等待依赖" and not unsettled:
            raise CardError(f"{qid} has no unsettled dependency; use 求解中 (or add a dependency)")
        ws.edit(qid, ("problem",)).set_anchor("状态", status)
        return [f"{qid}: 状态 {q.status} → {status}"], {"id": qid, "status": status, "changed": True}

    return run_op(kb, "problem.status", f"kb problem status {qid} {status}", build, ids=[qid],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=qid, on_wait=on_wait)


def set_plan(kb: Union[KnowledgeBase, str, Path, None], qid: str, plan: str, *,
             no_commit: bool = False, owner: str | None = None,
             expect: Union[str, Mapping[str, str], None] = None,
             on_wait: Callable[[str], None] | None = None) -> OpResult:
    """``计划`` of a problem (one line: the next step)."""
    plan = check_line(plan, "plan")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        ws.require(qid, ("problem",), "problem")
        ws.edit(qid, ("problem",)).set_anchor("计划", plan)
        return [f"{qid}: 计划 {plan}"], {"id": qid, "plan": plan}

    return run_op(kb, "problem.plan", f"kb problem plan {qid}", build, ids=[qid],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=qid, on_wait=on_wait)


def set_priority(kb: Union[KnowledgeBase, str, Path, None], obj_id: str, priority: Union[int, str],
                 *, no_commit: bool = False, owner: str | None = None,
                 expect: Union[str, Mapping[str, str], None] = None,
                 on_wait: Callable[[str], None] | None = None) -> OpResult:
    """``优先级`` of a problem or proposition (an integer, smaller first, or never)."""
    prio = parse_priority_arg(priority)

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        o = ws.require(obj_id, ("problem", "proposition"), "problem or proposition")
        if is_final(o):
            raise CardError(f"{obj_id} is settled by verification; its priority stays never")
        ws.edit(obj_id, ("problem", "proposition")).set_anchor("优先级", str(prio))
        return [f"{obj_id}: 优先级 {o.priority} → {prio}"], {"id": obj_id, "priority": prio}

    return run_op(kb, "priority.set", f"kb problem priority {obj_id} {prio}", build, ids=[obj_id],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=obj_id, on_wait=on_wait)


# ---------------------------------------------------------------------------
# Propositions


def _categories(k: KnowledgeBase, idx: Any) -> list[str]:
    """Folders under Propos/ that hold propositions (indexed) or exist on disk."""
    cats = set()
    rows = idx.db.execute(
        "SELECT DISTINCT o.path FROM objects o JOIN files f ON f.path=o.path AND f.blob=o.blob "
        "WHERE o.kind='proposition'")
    for (path,) in rows:
        parts = PurePosixPath(path).parts
        if len(parts) >= 2:
            cats.add(parts[-2])
    base = k.root / k.config.paths["propositions"].strip("/")
    if base.is_dir():
        cats |= {p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")}
    return sorted(cats)


def categories(kb: Union[KnowledgeBase, str, Path, None] = None) -> list[str]:
    """The proposition categories (folders under Propos/) of the KB."""
    from kb.index import Index

    k = open_kb_arg(kb)
    with Index(k) as idx:
        idx.refresh()
        return _categories(k, idx)


def check_category(ws: Workspace, category: str | None, new_category: bool) -> str:
    cats = ws.categories()
    if not category or not category.strip():
        raise UsageError("a proposition needs a CATEGORY (its folder under Propos/); known: "
                        + (", ".join(cats) or "none yet (pass --new-category)"))
    c = category.strip()
    why = unsafe_id_reason(c)
    if why is None and (c.startswith(".") or _UNSAFE_NEW.search(c.replace(" ", "_"))):
        why = "holds a character not allowed in a folder name"
    if why:
        raise UsageError(f"category {category!r} {why}; give a folder name such as 数论")
    if c not in cats and not new_category:
        raise UsageError(f"unknown category {c!r}; use one of: {', '.join(cats) or '(none yet)'} "
                        "(or pass --new-category to create it)")
    return c


def add_proposition(kb: Union[KnowledgeBase, str, Path, None], category: str, pid: str,
                    statement: str, title: str | None = None, probability: Union[float, str] = 0.5,
                    value: Union[float, str] = 0.5, depends: Sequence[str] = (),
                    priority: Union[int, str] = 1, source_problem: str | None = None,
                    source_direction: str | None = None, *, new_category: bool = False,
                    formal: str | None = None, no_commit: bool = False, owner: str | None = None,
                    expect: Union[str, Mapping[str, str], None] = None,
                    on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Create ``Propos/<category>/<pid>.md`` (状态 未定论).

    ``category`` must be an existing folder unless ``new_category``.
    """
    from kb.model import Proposition
    from kb.render.card import render_card

    check_new_id(pid, "proposition ID")
    statement = read_text_arg(statement, None, "statement")
    title = check_line(title, "title") if title is not None else _title_from(statement)
    prob = parse_probability(probability, "probability")
    val = parse_probability(value, "value (价值/关键性)", open_interval=False)
    prio = parse_priority_arg(priority)
    formal_v = check_line(formal, "formal statement", required=False) if formal else None
    if source_direction is not None:
        check_new_id(source_direction, "source direction")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        cat = check_category(ws, category, new_category)
        _check_free_id(ws, pid)
        deps = _check_depends(ws, depends, pid)
        if source_problem:
            ws.require(source_problem, ("problem",), "source problem")
        anchors: dict[str, str] = {}
        if formal_v:
            anchors["形式化"] = formal_v
        if source_direction:
            anchors["来源方向"] = source_direction
        rel = ws.proposition_rel(cat, pid)
        obj = Proposition(id=pid, path=rel, line=1, title=title, status="未定论", category=cat,
                          probability=prob, value=val, priority=prio, depends=deps,
                          source_problem=source_problem or "", statement=statement,
                          anchors=anchors)
        e = ws.create(rel, "proposition", render_card(obj), pid)
        got = e.model()
        if got.statement != statement.strip() or got.entries:
            raise CardError("the statement would change the structure of the card (a line "
                            "starting with '#' or an unclosed code fence); use '#### ' or close it")
        return ([f"{pid}: new proposition {ws.kb.prefix}{rel} (概率 {prob:g}, 价值/关键性 {val:g})"],
                {"id": pid, "path": ws.kb.prefix + rel, "category": cat, "probability": prob,
                 "value": val})

    return run_op(kb, "propo.add", f"kb propo add {pid}: {title}", build, ids=[pid],
                  no_commit=no_commit, owner=owner, expect=expect, on_wait=on_wait)


# ---------------------------------------------------------------------------
# Entries


def add_entry(kb: Union[KnowledgeBase, str, Path, None], obj_id: str, kind: str, title: str,
              probability: Union[float, str] = 0.5, text: str | None = None,
              text_file: str | Path | None = None, *, no_commit: bool = False,
              owner: str | None = None, expect: Union[str, Mapping[str, str], None] = None,
              on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Append a 解法 entry to a problem or a 证明 / 证伪 entry to a proposition (状态 未定论)."""
    if kind not in ENTRY_KINDS:
        raise UsageError(f"entry kind {kind!r} is not valid; use 解法 (problems), 证明 or 证伪 "
                        "(propositions)")
    title = check_line(title, "entry title")
    prob = parse_probability(probability, "probability")
    body = read_text_arg(text, text_file, "entry text")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        kinds = ("problem",) if kind == "解法" else ("proposition",)
        o = ws.obj(obj_id, kinds)
        if o is None:
            other = ws.obj(obj_id, ("problem", "proposition"))
            if other is not None:
                raise CardError(f"{obj_id} is a {other.kind}; a {other.kind} takes "
                                + ("解法 entries" if other.kind == "problem" else "证明 or 证伪 entries"))
            raise NotFoundError(f"unknown {'problem' if kind == '解法' else 'proposition'} {obj_id!r}; "
                            + ws.known_hint(kinds))
        if is_final(o):
            raise CardError(f"{obj_id} is settled by verification ({o.status}); its record is final")
        e = ws.edit(obj_id, kinds)
        n = e.add_entry(kind, title, prob, "未定论", body)
        return ([f"{obj_id}: new entry {kind} {n}｜{title}｜概率{prob:g} in {ws.kb.prefix}{e.rel}"],
                {"id": obj_id, "kind": kind, "number": n, "target": f"{obj_id}#{kind}{n}",
                 "probability": prob, "path": ws.kb.prefix + e.rel})

    return run_op(kb, "entry.add", f"kb entry add {obj_id}: {kind} {title}", build, ids=[obj_id],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=obj_id, on_wait=on_wait)


# ---------------------------------------------------------------------------
# Methods


def add_method(kb: Union[KnowledgeBase, str, Path, None], mid: str, name: str,
               type: str = "方法", parent: str | None = None, scenario: str = "",
               content: str = "", related: Sequence[str] = (), *, no_commit: bool = False,
               owner: str | None = None, expect: Union[str, Mapping[str, str], None] = None,
               on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Create ``Methods/<mid>.md`` (状态 经验); with ``parent`` both sides of the hierarchy."""
    from kb.model import Method
    from kb.parse.common import dump_list
    from kb.render.card import render_card

    check_new_id(mid, "method ID")
    name = check_line(name, "method name")
    if type not in METHOD_TYPE:
        raise UsageError(f"method type {type!r} is not valid; use one of: {', '.join(METHOD_TYPE)}")
    scenario = check_line(scenario, "scenario", required=False)
    body = read_text_arg(content, None, "content", required=False)

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        _check_free_id(ws, mid)
        lines = []
        parents: tuple[str, ...] = ()
        if parent:
            p = ws.require(parent, ("method",), "parent method")
            parents = (parent,)
            subs = tuple(p.submethods) + ((mid,) if mid not in p.submethods else ())
            ws.edit(parent, ("method",)).set_anchor("子方法", dump_list(subs))
            lines.append(f"{parent}: 子方法 {dump_list(subs)}")
        rel_ids = []
        for r in related:
            if not ws.exists(r):
                raise NotFoundError(f"related ID {r!r} names no object; give existing IDs")
            rel_ids.append(r)
        rel = ws.method_rel(mid)
        obj = Method(id=mid, path=rel, line=1, title=name, status="经验", type=type,
                     parents=parents, related=tuple(rel_ids), scenario=scenario,
                     anchors={"核心内容": body})
        e = ws.create(rel, "method", render_card(obj), mid)
        got = e.model()
        if got.applications or [s[0] for s in e.sections()] != ["核心内容", "应用记录", "改进历史"]:
            raise CardError("the content would change the structure of the card (a line "
                            "starting with '## ' or '### '); use '#### ' headings")
        return ([f"{mid}: new method {ws.kb.prefix}{rel} ({type})"] + lines,
                {"id": mid, "path": ws.kb.prefix + rel, "type": type, "parent": parent})

    return run_op(kb, "method.add", f"kb method add {mid}: {name}", build, ids=[mid],
                  no_commit=no_commit, owner=owner, expect=expect, on_wait=on_wait)


def apply_method(kb: Union[KnowledgeBase, str, Path, None], mid: str, problem: str,
                 effect: str, direction: str | None = None, *, no_commit: bool = False,
                 owner: str | None = None, expect: Union[str, Mapping[str, str], None] = None,
                 on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Append ``### 应用 N｜<time>｜问题 <qid> 方向 <dir>`` and the effect to ``## 应用记录``."""
    effect = read_text_arg(effect, None, "effect")
    if direction is not None:
        check_new_id(direction, "direction")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        m = ws.require(mid, ("method",), "method")
        ws.require(problem, ("problem",), "problem")
        e = ws.edit(mid, ("method",))
        n = max((a.number for a in m.applications), default=0) + 1
        when = fmt_time(now())
        head = f"### 应用 {n}｜{when}｜问题 {problem}" + (f" 方向 {direction}" if direction else "")
        before = len(m.applications)
        secs = [s[0] for s in e.sections()]
        e.add_block("应用记录", [head, *effect.split("\n")], PLACEHOLDERS["应用"])
        got = e.model()
        if len(got.applications) != before + 1 or \
                not _same_sections(secs, [s[0] for s in e.sections()], "应用记录"):
            raise CardError("the effect would change the structure of the card (a line starting "
                            "with '## ' or '### '); use '#### ' headings")
        apps = len(got.applications)
        lines = [f"{mid}: 应用 {n}｜{when}｜问题 {problem}" + (f" 方向 {direction}" if direction else "")]
        if apps >= 3:
            lines.append(f"{mid} has {apps} applications: a candidate for the global method "
                         "library (a decision for a person)")
        return lines, {"id": mid, "number": n, "problem": problem, "direction": direction,
                       "time": when, "applications": apps}

    return run_op(kb, "method.apply", f"kb method apply {mid} to {problem}", build, ids=[mid],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=mid, on_wait=on_wait)


_IMPROVEMENT = re.compile(r"^###[ \t]+v(\d+)（")


def improve_method(kb: Union[KnowledgeBase, str, Path, None], mid: str, reason: str,
                   text: str | None = None, text_file: str | Path | None = None, *,
                   no_commit: bool = False, owner: str | None = None,
                   expect: Union[str, Mapping[str, str], None] = None,
                   on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Append ``### v<N>（<reason>）`` and the text to ``## 改进历史``."""
    reason = check_line(reason, "reason")
    body = read_text_arg(text, text_file, "improvement text")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        ws.require(mid, ("method",), "method")
        e = ws.edit(mid, ("method",))

        def versions() -> list[int]:
            sec = e.section("改进历史")
            if sec is None:
                return []
            src = e.src()
            return [int(m.group(1)) for i in range(sec[1] + 1, sec[2])
                    if (m := _IMPROVEMENT.match(src.lines[i])) and not src.is_masked(i)]

        have = versions()
        n = max(have, default=0) + 1
        secs = [s[0] for s in e.sections()]
        apps = len(e.model().applications)
        e.add_block("改进历史", [f"### v{n}（{reason}）", *body.split("\n")], PLACEHOLDERS["改进"])
        now_secs = [s[0] for s in e.sections()]
        if len(versions()) != len(have) + 1 or len(e.model().applications) != apps \
                or not _same_sections(secs, now_secs, "改进历史"):
            raise CardError("the text would change the structure of the card (a line starting "
                            "with '## ' or '### '); use '#### ' headings")
        return [f"{mid}: v{n}（{reason}）"], {"id": mid, "version": n, "reason": reason}

    return run_op(kb, "method.improve", f"kb method improve {mid}: {reason}", build, ids=[mid],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=mid, on_wait=on_wait)


__all__ = [
    "CardError", "CardEdit", "Workspace", "OpResult", "add_problem", "add_proposition",
    "add_method", "add_entry", "set_problem_status", "set_plan", "set_priority", "apply_method",
    "improve_method", "run_op", "now", "parse_time", "fmt_time", "compact_time", "iso_time",
    "parse_probability", "parse_priority_arg", "check_new_id", "unsafe_id_reason", "is_settled",
    "is_final", "natural_key", "categories",
]
