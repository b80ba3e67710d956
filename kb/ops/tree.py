"""Hypothesis-tree write operations (seed hypothesis-tree.md; DESIGN.md §2.1, §3, §4).

The library behind ``kb hyp add|status|edit|evidence`` (and the shared
machinery of ``kb exp`` and ``kb dashboard``)::

    from kb.ops.tree import add_hypothesis
    res = add_hypothesis(kb, "Disk reads dominate loading time", parent="H1")
    res.id, res.changes, res.commit        # 'H1.3', ['added H1.3 …'], '9f2c…'

Every operation is one :class:`kb.ops.transaction.Transaction`: under the
write lock it refreshes the index, edits ``tree.md`` by splicing only the
lines that change, refreshes ``DASHBOARD.md``, and commits its own paths as
one commit with ``Kb-Op`` / ``Kb-Id`` (and ``Kb-Override``) trailers. Bad
input raises :class:`kb.errors.RefusedError` (exit 1) with a one-line
message naming the problem and the accepted values; nothing is written.

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
the region) the whole file is parsed instead. The spliced parse is stored in
the index under the new blob id before the commit, so neither the
pre-commit hook nor the next command parses the tree again.

ID allocation (DESIGN.md §4 "IDs never reused"): a new ID is one more than the
largest of its siblings among the IDs in the current tree *and* the IDs
named in the ``Kb-Id:`` trailers of the commits that touched ``tree.md``
(``git log --format=%(trailers:key=Kb-Id,valueonly) -- tree.md``), so an ID
that kb ever wrote is never handed out again even after its block was
removed. An ID that only ever existed in a hand-made commit and was deleted
again is not seen (a scan of every past version of ``tree.md`` would cost
seconds on a long history; ``kb verify``'s history rule catches such a
reuse). The scan is cached in ``.kb/history-ids.json`` and extended
incrementally from the cached commit.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NamedTuple

from kb import git
from kb.errors import NotFoundError, RefusedError, UsageError
from kb.ops.result import OpResult
from kb.ops.transaction import FormatGuardError, Transaction
from kb.repo import KnowledgeBase, open_kb
from kb.text import control_char
from kb.vocab import HYPOTHESIS_MOVES, HYPOTHESIS_STATUS, is_legal_move

if TYPE_CHECKING:  # annotations only
    from kb.model import Diagnostic, Hypothesis

OnWait = Callable[[str], None]

__all__ = [
    "OpResult", "add_hypothesis", "set_status", "edit_statement", "add_evidence",
    "evidence_status", "next_hypothesis_id",
]


# -- input checks ------------------------------------------------------------------


def resolve_kb(kb: Any) -> KnowledgeBase:
    """A KnowledgeBase from a KnowledgeBase, a path inside one, or None (the cwd)."""
    if isinstance(kb, KnowledgeBase):
        return kb
    return open_kb(Path(kb) if kb else None)


def one_line(text: Any, what: str) -> str:
    """``text`` stripped; refuse it (UsageError) when empty, spanning lines or holding a
    control or invisible character (:data:`kb.text.CONTROL_CHARS`)."""
    if not isinstance(text, str):
        raise UsageError(f"{what} must be text, not {type(text).__name__}")
    t = text.strip()
    if not t:
        raise UsageError(f"{what} is empty; give one line of text")
    if "\n" in t or "\r" in t:
        raise UsageError(f"{what} spans several lines; give it on one line")
    bad = control_char(t)
    if bad:
        raise UsageError(f"{what} holds the control or invisible character {bad}; remove it")
    return t


def canonical_status(word: str) -> str:
    """Canonical (zh) hypothesis status for a word of either language, else refuse."""
    canon = HYPOTHESIS_STATUS.canonical(word or "")
    if canon is None:
        raise UsageError(f"unknown hypothesis status {word!r}; accepted: "
                           f"{HYPOTHESIS_STATUS.accepted()}")
    return canon


def expect_map(k: KnowledgeBase, expect: Any, primary: str) -> dict[str, str]:
    """``--expect``: a blob id for ``primary``, ``PATH=BLOB``, or a mapping path -> blob."""
    if not expect:
        return {}
    items: Iterable[tuple[str, str]]
    if isinstance(expect, Mapping):
        items = expect.items()
    else:
        items = []
        for part in str(expect).split(","):
            path, eq, blob = part.strip().rpartition("=")
            items.append((path if eq else primary, blob))
    out = {}
    for path, blob in items:
        blob = blob.strip().lower()
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", blob):
            raise UsageError(f"--expect needs a git blob id (40 hex digits), not {blob!r}")
        out[path.strip() or primary] = blob
    return out


# -- the session: transaction + index under the write lock --------------------------


class Session:
    """A :class:`Transaction` plus the index refreshed under its lock.

    Use as a context manager; operations build their edits inside it and the
    commit happens on a clean exit (see kb.ops.transaction).
    """

    def __init__(self, kb: Any, op: str, *, summary: str = "", no_commit: bool = False,
                 owner: str | None = None, on_wait: OnWait | None = None,
                 overrides: Iterable[tuple[str, str]] = ()) -> None:
        self.kb = resolve_kb(kb)
        self.tx = Transaction(self.kb, op, summary, no_commit=no_commit, owner=owner,
                              overrides=list(overrides), on_wait=on_wait)
        self.idx: Any = None
        self._tree: TreeEdit | None = None
        self.history_head: str | None = None  # HEAD when history_ids() read the history

    def history(self) -> tuple[set[str], set[str]]:
        """:func:`history_ids` of this KB (remembering HEAD to extend the cache after the commit)."""
        ids, deleted, self.history_head = _history_ids(self.kb)
        return ids, deleted

    def __enter__(self) -> "Session":
        self.tx.__enter__()
        try:
            from kb.index import Index

            self.idx = Index(self.kb)
            paths = self.kb.config.paths
            # The tree workflow reads the tree, the experiments and the dashboard only.
            self.idx.refresh(only=[paths["tree"], paths["experiments"], paths["dashboard"]])
        except BaseException as exc:
            if self.idx is not None:
                self.idx.close()
            self.tx.__exit__(type(exc), exc, None)
            raise
        return self

    def __exit__(self, et: Any, e: Any, tb: Any) -> None:
        try:
            self.tx.__exit__(et, e, tb)
            res = self.tx.result
            if et is None and res is not None and res.commit and self.history_head:
                tree_path = self.kb.repo_path(self.kb.config.paths["tree"])
                note_commit(self.kb, self.history_head, res.commit,
                            res.ids if tree_path in res.paths else [])
        finally:
            self.idx.close()

    @property
    def config(self) -> Any:
        return self.kb.config

    @property
    def locale(self) -> str:
        return self.kb.config.locale

    def tree(self) -> "TreeEdit":
        if self._tree is None:
            self._tree = TreeEdit(self)
        return self._tree

    def result(self, op: str, main_id: str, changes: list[str],
               details: dict[str, Any] | None = None) -> OpResult:
        return OpResult.of(self.tx, op, main_id, changes, details)


def read_clean(s: Session, rel: str, fmt: str, hint: str = "") -> tuple[bytes, str]:
    """The bytes and blob id of ``rel``, its parse in the index, refused if corrupt.

    The parse is stored once (the next command and the hook reuse it); a file
    that already has format errors is refused with the first one.
    """
    data = s.tx.read(rel)
    if data is None:
        raise NotFoundError(f"{s.kb.prefix}{rel} does not exist {hint}".rstrip())
    blob = s.tx.blob_id(data)
    if not s.idx.has_parse(rel, blob):
        from kb.parse import parse_file

        s.idx.put(rel, blob, parse_file(rel, data, s.kb.config, fmt))
    refuse_corrupt(rel, s.kb.prefix,
                   [d for d in s.idx.diagnostics_of(rel, blob) if d.severity == "error"])
    s.tx.known_errors[blob] = []
    return data, blob


def refuse_corrupt(rel: str, prefix: str, errors: list[Diagnostic]) -> None:
    """Refuse to edit a file that already has format errors, naming the first."""
    if errors:
        raise FormatGuardError(
            f"{prefix}{rel} already has {len(errors)} format error(s) (first: "
            f"{errors[0].format()}); fix them first (`kb index` lists them) — nothing was written",
            errors)


# -- tree.md as an outline (from the index) and as a document being spliced ---------


class Node(NamedTuple):
    """One hypothesis as the index has it, light (no model)."""

    id: str
    line: int
    status: str
    level: int
    end_line: int
    statement: str
    parent: str | None


_NODE_FIELDS = ("level", "end_line", "parent")


def nodes_from(rows: Iterable[tuple[Any, ...]]) -> list["Node"]:
    """Nodes from ``Index.extract("hypothesis", _NODE_FIELDS, …)`` rows (a hypothesis's
    title is its statement)."""
    return [Node(i, ln, st, lvl, end, title, parent) for _, i, ln, st, title, lvl, end, parent in rows]


class _Splice(NamedTuple):
    first: int       # 1-based old line number
    count: int       # old lines replaced (0: insert before ``first``)
    lines: list[str]
    seq: int


class TreeEdit:
    """``tree.md`` inside a session: its outline from the index and pending splices."""

    def __init__(self, s: Session) -> None:
        self.s = s
        self.rel = s.kb.config.paths["tree"]
        self.old, self.old_blob = read_clean(s, self.rel, "tree", "(`kb init` creates it)")
        idx = s.idx
        self.meta = idx.parse_meta(self.rel, self.old_blob) or {}
        self.outline = nodes_from(idx.extract("hypothesis", _NODE_FIELDS, self.rel, self.old_blob))
        self._doc: Any = None
        self._splices: list[_Splice] = []
        self.new_blob: str | None = None
        self.new_outline: list[Node] | None = None

    # -- lookups ------------------------------------------------------------------------
    def ids(self) -> set[str]:
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
            known = (f"top-level: {_span(tops)}; `kb ls hypotheses` lists all" if tops
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
        from kb.render.tree import append_to_list_line, list_line

        ln = h.anchor_lines.get("Evidence")
        if ln:
            self.splice(ln, 1, [append_to_list_line(self.line(ln), eid)])
        else:
            self.splice(_after(h, "Status"), 0, [list_line("Evidence", [eid])])

    def append_child(self, h: Hypothesis, cid: str) -> None:
        from kb.render.tree import append_to_list_line, list_line

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
        from kb.model import ParseResult

        k, idx, doc = self.s.kb, self.s.idx, self.doc
        region = self._region()
        if region is not None:
            start, old_stop = region
            delta = sum(len(sp.lines) - sp.count for sp in self._splices)
            new_stop = old_stop + delta
            got = parse_region(k, self.rel, doc.lines[start - 1:new_stop - 1], start - 1,
                               closed_end=new_stop <= len(doc.lines))
            old_wide = any(d.code in _FILE_WIDE for d in idx.diagnostics_of(self.rel, self.old_blob))
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
        from kb.parse import parse_file

        res = parse_file(self.rel, new, k.config, "tree")
        idx.put(self.rel, new_blob, res)
        return ([d for d in res.diagnostics if d.severity == "error"],
                [_node(h) for h in res.objects])


#: Diagnostics that summarise the whole file (their text counts or cites lines
#: anywhere in it): a region parse cannot reproduce them.
_FILE_WIDE = {"KB116"}


def parse_region(k: KnowledgeBase, rel: str, lines: list[str], offset: int,
                 closed_end: bool) -> tuple[list[Hypothesis], list[Diagnostic]] | None:
    """Parse ``lines`` (file lines ``offset+1 …``) of a tree file on their own.

    The first line must be a declaration heading that the file's parse
    recognised (so no block is open before it). Returns the hypotheses and
    diagnostics with real line numbers, or None when the region parse cannot
    stand for the file's: a code or HTML block reaches its end while a heading
    follows (``closed_end``), it has an error (re-parsed whole so the message
    cites real lines), or a file-wide diagnostic.
    """
    from kb.parse.tree import parse_tree
    from kb.text import SourceText

    src = SourceText.from_text("\n".join(lines) + "\n", rel)
    hyps, diags = parse_tree(src, k.config.recognise_grammar, k.config.heading_separators)
    if closed_end and lines and src.is_masked(len(lines) - 1):
        return None
    if any(d.severity == "error" or d.code in _FILE_WIDE for d in diags):
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


def _span(ids: list[str]) -> str:
    if len(ids) <= 6:
        return ", ".join(ids)
    return f"{', '.join(ids[:3])}, …, {', '.join(ids[-2:])}"


# -- IDs ever used (git history) -------------------------------------------------------


def history_ids(k: KnowledgeBase) -> tuple[set[str], set[str]]:
    """``(trailer IDs, deleted experiment stems)`` (see :func:`_history_ids`)."""
    ids, deleted, _ = _history_ids(k)
    return ids, deleted


def _cache_file(k: KnowledgeBase) -> Path:
    return k.root / ".kb" / "history-ids.json"


def _history_key(k: KnowledgeBase) -> str:
    tree_path = k.repo_path(k.config.paths["tree"])
    return f"{tree_path}\0{_exp_pathspec(k)}"


def _exp_pathspec(k: KnowledgeBase) -> str:
    exp_dir = k.config.paths["experiments"].strip("/")
    return k.repo_path(exp_dir + "/") if exp_dir not in ("", ".") else (k.prefix or ".")


_CACHE_HEADS = 16  # commits remembered (a reset or a branch switch still hits)


def _write_cache(k: KnowledgeBase, head: str, ids: Iterable[str], deleted: Iterable[str]) -> None:
    cache = _read_cache(k) or {"key": _history_key(k), "heads": {}}
    heads = {h: v for h, v in cache["heads"].items() if h != head}
    heads[head] = {"ids": sorted(set(ids)), "deleted": sorted(set(deleted))}
    heads = dict(list(heads.items())[-_CACHE_HEADS:])
    cache_file = _cache_file(k)
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_name(f"history-ids.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": _history_key(k), "heads": heads}), encoding="utf-8")
        tmp.replace(cache_file)
    except OSError:
        pass


def _read_cache(k: KnowledgeBase) -> dict[str, Any] | None:
    try:
        cache = json.loads(_cache_file(k).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(cache, dict) and cache.get("key") == _history_key(k) \
            and isinstance(cache.get("heads"), dict):
        return cache
    return None


def note_commit(k: KnowledgeBase, parent: str, commit: str, ids: Iterable[str]) -> None:
    """Extend the history cache by kb's own commit (its Kb-Id values when it touched the tree)."""
    cache = _read_cache(k)
    if cache is None or parent not in cache["heads"]:
        return
    old = cache["heads"][parent]
    _write_cache(k, commit, [*old.get("ids", []), *ids], old.get("deleted", []))


def _history_ids(k: KnowledgeBase) -> tuple[set[str], set[str], str | None]:
    """``(trailer IDs, deleted experiment stems, HEAD)`` from the history of HEAD.

    The first set holds every ``Kb-Id:`` value of the commits that touched
    ``tree.md``; the second the names (without ``.md``) of every file ever
    deleted from the experiments folder; the third the HEAD they were read at.
    Cached in ``.kb/history-ids.json`` for the last few commits seen, and
    extended incrementally from a cached commit that is an ancestor of HEAD.
    """
    head = git.rev_parse("HEAD", k.top)
    if head is None:
        return set(), set(), None
    ids: set[str] = set()
    deleted: set[str] = set()
    rev = head
    cache = _read_cache(k)
    if cache is not None:
        hit = cache["heads"].get(head)
        if hit is not None:
            return set(hit.get("ids", [])), set(hit.get("deleted", [])), head
        for base in reversed(list(cache["heads"])):
            anc = git.run(["merge-base", "--is-ancestor", base, head], k.top, check=False)
            if anc.returncode == 0:
                ids = set(cache["heads"][base].get("ids", []))
                deleted = set(cache["heads"][base].get("deleted", []))
                rev = f"{base}..{head}"
                break
    tree_path = k.repo_path(k.config.paths["tree"])
    out = git.out(["log", "--format=%(trailers:key=Kb-Id,valueonly)", rev, "--", tree_path], k.top)
    ids.update(out.split())
    out = git.out(["log", "--no-renames", "--diff-filter=D", "--name-only", "--format=", rev,
                   "--", _exp_pathspec(k)], k.top)
    for p in out.splitlines():
        name = p.rsplit("/", 1)[-1]
        if name.endswith(".md"):
            deleted.add(name[:-3])
    _write_cache(k, head, ids, deleted)
    return ids, deleted, head


#: A line that may carry an ID kb does not read as a declaration: a heading, a
#: table row, or a list item starting in bold.
_CARRIER = re.compile(r"^(?:#{1,6}[ \t]|[ \t]*\||[ \t]*[-*+][ \t]+\*\*)")
_ANY_ID = re.compile(r"(?<![\w.])H[0-9]+(?:\.[0-9]+)*(?![\w])")


def ids_in_headings(lines: Iterable[str]) -> set[str]:
    """Every hypothesis-shaped ID on a heading, table row or bold list item of
    the tree, read or not (``## **H5** …``, ``| H6 | … |``): a new hypothesis
    never takes an ID the file already shows somewhere a reader would see it as
    one, even where kb's parser does not. Fenced code blocks are skipped."""
    out: set[str] = set()
    fence = ""
    for line in lines:
        bare = line.lstrip(" ")
        if bare.startswith(("```", "~~~")):
            mark = bare[:3]
            if not fence:
                fence = mark
            elif mark == fence:
                fence = ""
            continue
        if not fence and _CARRIER.match(line):
            out.update(_ANY_ID.findall(line))
    return out


def next_hypothesis_id(k: KnowledgeBase, existing: Iterable[str], parent: str | None,
                       history: Iterable[str] = ()) -> str:
    """``H<max+1>`` (top level) or ``<parent>.<max+1>`` over ``existing`` and ``history``."""
    if k.config.custom_grammar:
        raise RefusedError("kb numbers new hypotheses as H<n>(.<n>)* only, and this KB sets its "
                           "own [kb] id_grammar in kb.toml; add the hypothesis to tree.md by hand")
    pat = re.compile((re.escape(parent) + r"\.") if parent else "H")
    nums = [0]
    for i in (*existing, *history):
        m = pat.match(i)
        if m and i[m.end():].isdigit():
            nums.append(int(i[m.end():]))
    n = max(nums) + 1
    return f"{parent}.{n}" if parent else f"H{n}"


# -- the status rule of the seed ------------------------------------------------------


def evidence_status(conclusions: Iterable[str | None]) -> str | None:
    """被推翻 if any conclusion refutes, else 被支持 if any supports, else None."""
    cs = set(conclusions)
    if "推翻" in cs:
        return "被推翻"
    if "支持" in cs:
        return "被支持"
    return None


# -- operations -------------------------------------------------------------------------

MAX_LEVEL = 6  # `######`: deeper headings are not Markdown headings


def add_hypothesis(kb: Any, statement: str, parent: str | None = None, *, no_commit: bool = False,
                   owner: str | None = None, expect: Any = None,
                   on_wait: OnWait | None = None, prose: Iterable[str] = (),
                   trailers: Iterable[tuple[str, str]] = ()) -> OpResult:
    """Add a hypothesis (Status 待验, Evidence (empty)) at the top level or under ``parent``.

    The ID is allocated under the write lock (top level ``H<max+1>``, child
    ``<parent>.<max+1>``, never one used before). A child goes at the end of
    its parent's section (after its last descendant), a top-level hypothesis
    at the end of the file; the parent's ``Children:`` line is updated (added
    after ``Evidence:`` when absent). Refuses an empty or multi-line
    statement and an unknown parent.

    ``prose``: paragraph lines written after a blank line below the anchors
    (``kb gen adopt`` records a generated hypothesis's provenance there);
    ``trailers``: extra ``(key, value)`` commit trailers.
    """
    statement = one_line(statement, "the statement")
    prose = [one_line(p, "a prose line") for p in prose]
    with Session(kb, "hyp.add", no_commit=no_commit, owner=owner, on_wait=on_wait) as s:
        k = s.kb
        s.tx.trailers.extend((one_line(a, "a trailer key"), one_line(b, "a trailer value"))
                             for a, b in trailers)
        tree = s.tree()
        s.tx.expect = expect_map(k, expect, tree.rel)
        ph = tree.find(parent) if parent is not None else None
        history, _ = s.history()
        hid = next_hypothesis_id(k, tree.ids() | ids_in_headings(tree.doc.lines), ph.id if ph else None,
                                 history)
        depth = hid.count(".") + 1
        if 1 + depth > MAX_LEVEL:
            raise RefusedError(f"{hid} would need a level-{1 + depth} heading; Markdown headings stop "
                               f"at ######, so {ph.id if ph else hid} cannot have children")
        from kb.model import Hypothesis
        from kb.render.tree import hypothesis_block

        node = Hypothesis(id=hid, path=tree.rel, line=0, statement=statement, status="待验",
                          level=1 + depth, parent=ph.id if ph else None)
        block = hypothesis_block(node, s.locale) + ([""] + prose if prose else [])
        n_lines = len(tree.doc.lines)
        at = (ph.end_line + 1) if ph else n_lines + 1
        prev_blank = at == 1 or not tree.doc.lines[at - 2].strip()
        lines = ([] if prev_blank else [""]) + block
        if at <= n_lines and tree.doc.lines[at - 1].strip():
            lines.append("")
        if ph:  # first: an inserted Children line may sit at the same place as the block
            tree.append_child(ph, hid)
        tree.splice(at, 0, lines)
        s.tx.ids.append(hid)
        s.tx.summary = f"hyp add {hid}: {_short(statement)}"
        tree.finish()
        got = tree.new_hypothesis(hid)
        if got is None or got.statement != statement or got.parent != node.parent:
            raise RefusedError(f"the statement cannot be written as a heading of tree.md "
                               f"({statement!r} does not read back as {hid}); nothing was written")
        from kb.ops.dashboard import stage_dashboard

        dash = stage_dashboard(s)
        word = HYPOTHESIS_STATUS.word("待验", s.locale)
        changes = [f"added {hid} to {k.prefix}{tree.rel} (Status: {word}"
                   + (f", Parent: {ph.id})" if ph else ")")]
        if ph:
            changes.append(f"{ph.id} Children: {', '.join((*ph.children, hid))}")
        if dash:
            changes.append(f"refreshed {k.prefix}{dash}")
        details = {"statement": statement, "status": word, "parent": ph.id if ph else None,
                   "line": got.line, "path": k.prefix + tree.rel}
    return s.result("hyp.add", hid, changes, details)


def set_status(kb: Any, hid: str, status: str, force: bool = False, reason: str | None = None, *,
               no_commit: bool = False, owner: str | None = None, expect: Any = None,
               on_wait: OnWait | None = None) -> OpResult:
    """Move ``hid`` to ``status`` (either language).

    Moves outside :data:`kb.vocab.HYPOTHESIS_MOVES` need ``force`` and a
    ``reason`` (recorded as ``Kb-Override: <hid> <reason>``). 被支持 / 被推翻
    need evidence. Moving to the status it has is a no-op.
    """
    canon = canonical_status(status)
    if force:
        if reason is None or not str(reason).strip():
            raise UsageError("--force needs --reason (it is recorded in the Kb-Override trailer)")
        reason = one_line(reason, "the reason")
    overrides = [(hid.strip(), reason)] if force and reason else []
    with Session(kb, "hyp.status", no_commit=no_commit, owner=owner, on_wait=on_wait,
                 overrides=overrides) as s:
        tree = s.tree()
        s.tx.expect = expect_map(s.kb, expect, tree.rel)
        h = tree.find(hid)
        if overrides:
            s.tx.overrides[:] = [(h.id, reason)]  # type: ignore[list-item]
        old_word = HYPOTHESIS_STATUS.word(h.status, s.locale)
        new_word = HYPOTHESIS_STATUS.word(canon, s.locale)
        if h.status == canon:
            return s.result("hyp.status", h.id, [f"{h.id} is already {new_word} (nothing to do)"],
                            {"status": new_word, "previous": old_word})
        if not force and not is_legal_move(HYPOTHESIS_MOVES, h.status, canon):
            allowed = sorted(HYPOTHESIS_MOVES.get(h.status, ()), key=list(HYPOTHESIS_MOVES).index)
            raise RefusedError(
                f"{h.id}: {old_word} → {new_word} is not an allowed status move (from {old_word}: "
                f"{', '.join(HYPOTHESIS_STATUS.word(w, s.locale) for w in allowed) or 'none'}); "
                "to correct a mistake use --force --reason R")
        if canon in ("被支持", "被推翻") and not h.evidence:
            raise RefusedError(f"{h.id} has no Evidence, and {new_word} needs at least one experiment "
                               f"(`kb exp result`, or `kb hyp evidence {h.id} Exxx` first)")
        tree.set_status(h, canon)
        s.tx.ids.append(h.id)
        s.tx.summary = f"hyp status {h.id}: {old_word} → {new_word}"
        tree.finish()
        from kb.ops.dashboard import stage_dashboard

        dash = stage_dashboard(s)
        changes = [f"{h.id} → {new_word}" + (" (override: " + str(reason) + ")" if overrides else "")]
        if dash:
            changes.append(f"refreshed {s.kb.prefix}{dash}")
    return s.result("hyp.status", h.id, changes,
                    {"status": new_word, "previous": old_word, "forced": bool(overrides)})


def edit_statement(kb: Any, hid: str, statement: str, reason: str, *, no_commit: bool = False,
                   owner: str | None = None, expect: Any = None,
                   on_wait: OnWait | None = None) -> OpResult:
    """Correct the statement of ``hid``; the ``reason`` goes into ``Kb-Override``."""
    statement = one_line(statement, "the statement")
    if reason is None or not str(reason).strip():
        raise UsageError("editing a statement needs --reason (it is recorded in the Kb-Override trailer)")
    reason = one_line(reason, "the reason")
    with Session(kb, "hyp.edit", no_commit=no_commit, owner=owner, on_wait=on_wait,
                 overrides=[(hid.strip(), reason)]) as s:
        tree = s.tree()
        s.tx.expect = expect_map(s.kb, expect, tree.rel)
        h = tree.find(hid)
        s.tx.overrides[:] = [(h.id, reason)]
        if h.statement == statement:
            return s.result("hyp.edit", h.id, [f"{h.id} already reads so (nothing to do)"],
                            {"statement": statement})
        from kb.render.tree import set_statement

        tree.splice(h.line, 1, [set_statement(tree.line(h.line), h.id, statement)])
        s.tx.ids.append(h.id)
        s.tx.summary = f"hyp edit {h.id}: {_short(statement)}"
        tree.finish()
        got = tree.new_hypothesis(h.id)
        if got is None or got.statement != statement:
            raise RefusedError(f"the statement cannot be written as a heading of tree.md "
                               f"({statement!r} does not read back); nothing was written")
        from kb.ops.dashboard import stage_dashboard

        dash = stage_dashboard(s)
        changes = [f"{h.id}: {statement} (override: {reason})"]
        if dash:
            changes.append(f"refreshed {s.kb.prefix}{dash}")
    return s.result("hyp.edit", h.id, changes, {"statement": statement, "previous": h.statement})


def find_experiment(s: Session, eid: str) -> Any:
    """The index row of experiment ``eid`` (``E5`` finds ``E005``); refuse unknown/duplicate."""
    eid = (eid or "").strip()
    if not eid:
        raise UsageError("no experiment ID given (e.g. E001)")
    rows = [r for r in s.idx.get(eid) if r.kind == "experiment"]
    if not rows:
        m = re.fullmatch(r"[Ee]0*(\d+)", eid)
        if m:
            want = int(m.group(1))
            rows = [r for r in s.idx.objects("experiment")
                    if re.fullmatch(r"E\d+", r.id) and int(r.id[1:]) == want]
    if not rows:
        have = sorted((r.id for r in s.idx.objects("experiment")), key=lambda x: (len(x), x))
        known = f"experiments: {_span(have)}" if have else "there are no experiments yet"
        raise NotFoundError(f"unknown experiment {eid!r} ({known})")
    if len(rows) > 1:
        raise RefusedError(f"{eid} is declared {len(rows)} times "
                           f"({', '.join(r.path for r in rows)}); fix the duplicate first")
    return rows[0]


def add_evidence(kb: Any, hid: str, eid: str, *, no_commit: bool = False, owner: str | None = None,
                 expect: Any = None, on_wait: OnWait | None = None) -> OpResult:
    """Append experiment ``eid`` (which must exist) to the Evidence of ``hid`` (append only)."""
    with Session(kb, "hyp.evidence", no_commit=no_commit, owner=owner, on_wait=on_wait) as s:
        tree = s.tree()
        s.tx.expect = expect_map(s.kb, expect, tree.rel)
        h = tree.find(hid)
        row = find_experiment(s, eid)
        if row.id in h.evidence:
            return s.result("hyp.evidence", h.id,
                            [f"{row.id} is already in the Evidence of {h.id} (nothing to do)"],
                            {"evidence": list(h.evidence)})
        tree.append_evidence(h, row.id)
        evidence = [*h.evidence, row.id]
        s.tx.ids += [h.id, row.id]
        s.tx.summary = f"hyp evidence {h.id} += {row.id}"
        tree.finish()
        from kb.ops.dashboard import stage_dashboard

        dash = stage_dashboard(s)
        changes = [f"{h.id} Evidence: {', '.join(evidence)}"]
        if dash:
            changes.append(f"refreshed {s.kb.prefix}{dash}")
    return s.result("hyp.evidence", h.id, changes, {"evidence": evidence})


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
