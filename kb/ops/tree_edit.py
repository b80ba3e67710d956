"""``tree.md`` inside a write session: its outline from the index and pending splices.

Speed (DESIGN.md §7). ``tree.md`` can hold thousands of hypotheses and a full
parse of it costs more than the whole budget of ``kb hyp add``, so an edit is
checked by re-parsing only the *region* it touches: from the top-level
declaration heading at or before the first changed line to the next
top-level declaration heading after the last one (or the end of the file).
The old version's parse comes from the index (keyed by blob id); the region
is independent of the rest of the file because both of its ends are ATX
headings that the old parse recognised outside code, so no block is open
there, and the region parse itself shows that the new lines leave none open
at its end. When that cannot be shown (frontmatter, no top-level heading
before the change, a code block reaching the region's end, look-alike
headings whose KB116 report is file-wide, an ID declared both in and out of
the region) the whole file is parsed instead (:mod:`kb.parse.tree_region`).
The spliced parse is stored in the index under the new blob id before the
commit, so neither the pre-commit hook nor the next command parses the tree
again.

The session (:class:`kb.ops.session.Session`) is passed in; this module only
uses its ``kb``, ``tx``, ``idx`` and ``locale``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, NamedTuple

from kb.errors import NotFoundError, RefusedError, UsageError
from kb.model import ParseResult
from kb.ops.transaction import FormatGuardError
from kb.parse import parse_file
from kb.parse.tree_region import FILE_WIDE, parse_region
from kb.vocab import HYPOTHESIS_STATUS

if TYPE_CHECKING:  # annotations only
    from kb.model import Diagnostic, Hypothesis


def read_clean(s: Any, rel: str, fmt: str, hint: str = "") -> tuple[bytes, str]:
    """The bytes and blob id of ``rel``, its parse in the index, refused if corrupt.

    The parse is stored once (the next command and the hook reuse it); a file
    that already has format errors is refused with the first one.

    Raises NotFoundError when the file does not exist, FormatGuardError (refused) when it has
    format errors.
    """
    data = s.tx.read(rel)
    if data is None:
        raise NotFoundError(f"{s.kb.prefix}{rel} does not exist {hint}".rstrip())
    blob = s.tx.blob_id(data)
    if not s.idx.has_parse(rel, blob):
        s.idx.put(rel, blob, parse_file(rel, data, s.kb.config, fmt))
    refuse_corrupt(rel, s.kb.prefix,
                   [d for d in s.idx.diagnostics_of(rel, blob) if d.severity == "error"])
    s.tx.known_errors[blob] = []
    return data, blob


def refuse_corrupt(rel: str, prefix: str, errors: list[Diagnostic]) -> None:
    """Refuse to edit a file that already has format errors, naming the first.

    Raises FormatGuardError (refused) when ``errors`` holds an error diagnostic.
    """
    if errors:
        raise FormatGuardError(
            f"{prefix}{rel} already has {len(errors)} format error(s) (first: "
            f"{errors[0].format()}); fix them first (`kb index` lists them) — nothing was written",
            errors)


class Node(NamedTuple):
    """One hypothesis as the index has it, light (no model)."""

    id: str
    line: int
    status: str
    level: int
    end_line: int
    statement: str
    parent: str | None


NODE_FIELDS = ("level", "end_line", "parent")


def nodes_from(rows: Iterable[tuple[Any, ...]]) -> list["Node"]:
    """Nodes from ``Index.extract("hypothesis", NODE_FIELDS, …)`` rows (a hypothesis's
    title is its statement)."""
    return [Node(i, ln, st, lvl, end, title, parent) for _, i, ln, st, title, lvl, end, parent in rows]


class _Splice(NamedTuple):
    first: int       # 1-based old line number
    count: int       # old lines replaced (0: insert before ``first``)
    lines: list[str]
    seq: int


class TreeEdit:
    """``tree.md`` inside a session: its outline from the index and pending splices."""

    def __init__(self, s: Any) -> None:
        self.s = s
        self.rel = s.kb.config.paths["tree"]
        self.old, self.old_blob = read_clean(s, self.rel, "tree", "(`kb init` creates it)")
        idx = s.idx
        self.meta = idx.parse_meta(self.rel, self.old_blob) or {}
        self.outline = nodes_from(idx.extract("hypothesis", NODE_FIELDS, self.rel, self.old_blob))
        self._doc: Any = None
        self._splices: list[_Splice] = []
        self.new_blob: str | None = None
        self.new_outline: list[Node] | None = None

    # -- lookups ------------------------------------------------------------------------
    def ids(self) -> set[str]:
        """Every hypothesis ID of the old tree."""
        return {n.id for n in self.outline}

    def find(self, hid: str) -> Hypothesis:
        """The hypothesis ``hid`` as a model; refuse an unknown or duplicated ID."""
        hid = (hid or "").strip()
        if not hid:
            raise UsageError("no hypothesis ID given (e.g. H1 or H1.2)")
        rows = self.s.idx.rows_of(self.rel, self.old_blob, "hypothesis", hid)
        if not rows and hid[:1] == "h":
            rows = self.s.idx.rows_of(self.rel, self.old_blob, "hypothesis", "H" + hid[1:])
        if not rows:
            tops = [n.id for n in self.outline if n.parent is None]
            known = (f"top-level: {id_span(tops)}; `kb ls hypotheses` lists all" if tops
                     else "the tree is empty; `kb hyp add` adds one")
            raise NotFoundError(f"unknown hypothesis {hid!r} in {self.s.kb.prefix}{self.rel} ({known})")
        if len(rows) > 1:
            lines = ", ".join(str(r.line) for r in rows)
            raise RefusedError(f"{hid} is declared {len(rows)} times in {self.rel} (lines {lines}); "
                               "fix the duplicate first")
        return rows[0].model()

    # -- the document -------------------------------------------------------------------
    @property
    def doc(self) -> Any:
        """The old ``tree.md`` as a :class:`kb.render.document.Document` (opened once)."""
        if self._doc is None:
            from kb.render.document import Document

            self._doc = Document.from_bytes(self.old, self.rel)
        return self._doc

    def line(self, n: int) -> str:
        """Old line ``n`` (1-based) without its ending."""
        return self.doc.lines[n - 1]

    def splice(self, first: int, count: int, lines: list[str]) -> None:
        """Replace old lines ``[first, first+count)`` by ``lines`` (count 0 inserts)."""
        for sp in self._splices:
            if sp.count and count and first < sp.first + sp.count and sp.first < first + count:
                raise AssertionError("overlapping tree edits")
        self._splices.append(_Splice(first, count, list(lines), len(self._splices)))

    def set_status(self, h: Hypothesis, canonical: str) -> None:
        """Set ``Status:``, and the frontmatter's ``status:`` when it describes ``h``
        (the two must agree: KB104)."""
        from kb.render.document import frontmatter_edit
        from kb.render.tree import set_anchor_value

        word = HYPOTHESIS_STATUS.word(canonical, self.s.locale)
        ln = h.anchor_lines["Status"]
        self.splice(ln, 1, [set_anchor_value(self.line(ln), word)])
        if isinstance(h.frontmatter.get("status"), str):
            fm = frontmatter_edit(self.doc.lines, "status", word)
            if fm is not None:
                self.splice(fm[0], 1, [fm[1]])

    def append_evidence(self, h: Hypothesis, eid: str) -> None:
        """Append ``eid`` to the ``Evidence:`` line of ``h`` (adding the line after ``Status:``)."""
        from kb.render.tree import append_to_list_line, list_line

        ln = h.anchor_lines.get("Evidence")
        if ln:
            self.splice(ln, 1, [append_to_list_line(self.line(ln), eid)])
        else:
            self.splice(_after(h, "Status"), 0, [list_line("Evidence", [eid])])

    def append_child(self, h: Hypothesis, cid: str) -> None:
        """Append ``cid`` to the ``Children:`` line of ``h`` (adding the line when absent);
        nothing when the line names it already (written by hand before the child was)."""
        from kb.render.tree import append_to_list_line, list_line

        if cid in (h.children or ()):
            return
        ln = h.anchor_lines.get("Children")
        if ln:
            self.splice(ln, 1, [append_to_list_line(self.line(ln), cid)])
        else:
            self.splice(_after(h, "Evidence", "Status"), 0, [list_line("Children", [cid])])

    # -- finishing: new bytes, region parse, index, format guard ---------------------------
    def finish(self) -> bool:
        """Apply the splices, check and stage the new ``tree.md``. False when nothing changed."""
        if not self._splices:
            return False
        doc = self.doc
        self._n_old = len(doc.lines)
        # Bottom-up so line numbers stay valid; at one line, a replacement before
        # the insertions there, and insertions in reverse order of request.
        for sp in sorted(self._splices, key=lambda x: (x.first, x.count > 0, x.seq), reverse=True):
            if sp.count:
                if sp.count == 1 and len(sp.lines) == 1:
                    doc.lines[sp.first - 1] = sp.lines[0]  # keeps the line's own ending
                    continue
                end = doc.endings[sp.first + sp.count - 2]
                doc.delete(sp.first, sp.count)
                doc.insert(sp.first, sp.lines)
                if sp.lines:
                    doc.endings[sp.first + len(sp.lines) - 2] = end
            else:
                doc.insert(sp.first, sp.lines)
        new = doc.to_bytes()
        new_blob = self.s.tx.blob_id(new)
        if new_blob == self.old_blob:
            return False
        errors, nodes = self._parse_new(new, new_blob)
        self.s.tx.known_errors[new_blob] = errors
        if errors:
            raise FormatGuardError(
                f"the edit of {self.s.kb.prefix}{self.rel} would add format errors "
                f"({errors[0].format()}); nothing was written", errors)
        self.s.tx.write(self.rel, new)
        self.new_blob = new_blob
        self.new_outline = nodes
        return True

    def new_hypothesis(self, hid: str) -> Hypothesis | None:
        """The model of ``hid`` in the new version (after :meth:`finish`)."""
        blob = self.new_blob or self.old_blob
        rows = self.s.idx.rows_of(self.rel, blob, "hypothesis", hid)
        return rows[0].model() if len(rows) == 1 else None

    def _region(self) -> tuple[int, int] | None:
        """``(start, old_stop)``: 1-based half-open old line range to re-parse, or None."""
        if self.meta.get("frontmatter") or not self.outline:
            return None
        lo = min(sp.first for sp in self._splices)
        hi = max(sp.first + sp.count for sp in self._splices)
        inserts_at_lo = any(sp.first == lo and sp.count == 0 for sp in self._splices)
        top = min(n.level for n in self.outline)
        bounds = [n.line for n in self.outline if n.level == top]
        before = [b for b in bounds if b < lo or (b == lo and not inserts_at_lo)]
        if not before:
            return None
        start = max(before)
        after = [b for b in bounds if b >= hi and b > start]
        return start, (min(after) if after else self._n_old + 1)

    def _parse_new(self, new: bytes, new_blob: str) -> tuple[list[Diagnostic], list[Node]]:
        """Parse the new version (a region of it when possible); store it in the index.

        Returns its error diagnostics and its outline.
        """
        k, idx, doc = self.s.kb, self.s.idx, self.doc
        region = self._region()
        if region is not None:
            start, old_stop = region
            delta = sum(len(sp.lines) - sp.count for sp in self._splices)
            new_stop = old_stop + delta
            got = parse_region(k, self.rel, doc.lines[start - 1:new_stop - 1], start - 1,
                               closed_end=new_stop <= len(doc.lines))
            old_wide = any(d.code in FILE_WIDE for d in idx.diagnostics_of(self.rel, self.old_blob))
            if got is not None and not old_wide:
                hyps, diags = got
                title = _title(doc.lines)
                meta: dict[str, Any] = {"title": title} if title is not None else {}
                meta["bom"], meta["newline"] = doc.bom, doc.newline
                res = ParseResult(path=self.rel, kind="tree", objects=tuple(hyps),
                                  diagnostics=tuple(diags), meta=meta)
                if idx.put_spliced(self.rel, self.old_blob, new_blob, start, old_stop, new_stop,
                                   res, meta):
                    nodes = [n for n in self.outline if n.line < start] + [_node(h) for h in hyps]
                    nodes += [n._replace(line=n.line + delta, end_line=n.end_line + delta)
                              for n in self.outline if n.line >= old_stop]
                    return [], nodes
        res = parse_file(self.rel, new, k.config, "tree")
        idx.put(self.rel, new_blob, res)
        return ([d for d in res.diagnostics if d.severity == "error"],
                [_node(h) for h in res.objects])


def _node(h: Hypothesis) -> Node:
    return Node(h.id, h.line, h.status, h.level, h.end_line, h.statement, h.parent)


def _after(h: Hypothesis, *keys: str) -> int:
    """The line number to insert at: after the first of ``keys`` present, else after the heading."""
    for key in keys:
        if key in h.anchor_lines:
            return h.anchor_lines[key] + 1
    return h.line + 1


def _title(lines: list[str]) -> str | None:
    for ln in lines:
        if ln.startswith("# "):
            return ln[2:].strip()
    return None


def id_span(ids: list[str]) -> str:
    """IDs for a message: all of up to six, else the first three, …, the last two."""
    if len(ids) <= 6:
        return ", ".join(ids)
    return f"{', '.join(ids[:3])}, …, {', '.join(ids[-2:])}"



__all__ = ["TreeEdit", "Node", "NODE_FIELDS", "nodes_from", "read_clean", "refuse_corrupt",
           "id_span"]
