"""Parse a new version of a tree file from an indexed old one, region by region.

``kb verify --range`` reads every version of ``tree.md`` the range holds (a
CI clone starts with no cache); a tree of thousands of hypotheses costs about
as much to parse as the rest of the KB, and most commits change a few lines
of it. The lines the two versions share at the start and at the end are
found by comparison; the changed lines are widened to the top-level
declaration headings around them (both in the shared lines, so both are
headings in the new version too) and only that region is parsed, with
:func:`kb.ops.tree.parse_region`; :meth:`kb.index.Index.put_spliced` stores
the rest of the old parse, shifted -- or, when the caller knows the old
version's light rows, :meth:`kb.index.Index.put_derived` holds the new version
in memory and this module derives its light rows and history rows the same way
(a range check then stores no tree version that no rule reads in full). When
that cannot be shown to equal a full
parse (frontmatter, a BOM or CRLF lines, no top-level heading before the
change, a code block open at the region's end, a file-wide diagnostic, an ID
declared inside and outside the region) nothing is stored and the caller
parses the whole file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb.index import Index
    from kb.model import ParseResult
    from kb.repo import KnowledgeBase

#: Parse diagnostics whose presence depends on the whole file (never spliced).
FILE_WIDE = {"KB116", "KB129"}


def _lines(data: bytes) -> list[str] | None:
    """The lines of a plain file (UTF-8, no BOM, LF endings), or None."""
    if data.startswith(b"\xef\xbb\xbf") or b"\r" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _spliced_lines(a: list[str], old: bytes, new: bytes) -> list[str] | None:
    """``_lines(new)``, given ``a == _lines(old)`` (not None): the whole lines the two
    versions share at the start and at the end, found by comparing their bytes in C,
    are taken from ``a``; only the rest of ``new`` is decoded and split (a version of
    a big tree differs from its neighbour in a few lines: decoding and splitting each
    whole version cost more than deriving its parse)."""
    if new.startswith(b"\xef\xbb\xbf") or b"\r" in new:
        return None
    n = min(len(old), len(new))
    # the shared start, back to a line start: ``old[:p]`` is whole lines in both
    p = old.rfind(b"\n", 0, _shared_start(old, new, n)) + 1
    # the shared end, from the first line start inside it: ``old[-z:]`` in both
    nl = old.find(b"\n", len(old) - _shared_end(old, new, n - p))
    z = 0 if nl < 0 else len(old) - nl - 1
    try:
        mid = new[p:len(new) - z].decode("utf-8")  # the shared bytes decoded in ``old``
    except UnicodeDecodeError:
        return None
    got = mid.split("\n")
    if got[-1] == "":  # the end of a line, or nothing
        got.pop()
    first = old.count(b"\n", 0, p)
    last = old.count(b"\n", len(old) - z) + (1 if z and not old.endswith(b"\n") else 0)
    return a[:first] + got + a[len(a) - last:]


#: Bytes compared at once by :func:`_shared_start` and :func:`_shared_end` before
#: they halve the span that differs.
_SPAN = 1 << 16


def _shared_start(x: bytes, y: bytes, n: int) -> int:
    """How many first bytes ``x`` and ``y`` share (at most ``n``): ``startswith`` of
    a memoryview compares with ``memcmp``, without copying."""
    view = memoryview(y)
    lo = 0  # x[:lo] == y[:lo]
    while lo < n:
        hi = min(lo + _SPAN, n)
        if x.startswith(view[lo:hi], lo):
            lo = hi
            continue
        while hi - lo > 1:  # x[lo:hi] != y[lo:hi]
            mid = (lo + hi) // 2
            if x.startswith(view[lo:mid], lo):
                lo = mid
            else:
                hi = mid
        return lo
    return lo


def _shared_end(x: bytes, y: bytes, n: int) -> int:
    """How many last bytes ``x`` and ``y`` share (at most ``n``)."""
    view, lx, ly = memoryview(y), len(x), len(y)
    lo = 0  # x[lx - lo:] == y[ly - lo:]
    while lo < n:
        hi = min(lo + _SPAN, n)
        if x.startswith(view[ly - hi:ly - lo], lx - hi):
            lo = hi
            continue
        while hi - lo > 1:  # the last hi bytes differ, the last lo do not
            mid = (lo + hi) // 2
            if x.startswith(view[ly - mid:ly - lo], lx - mid):
                lo = mid
            else:
                hi = mid
        return lo
    return lo


def splice_tree_version(k: "KnowledgeBase", idx: "Index", path: str, old_blob: str, old: bytes,
                        new_blob: str, new: bytes, lines: dict | None = None,
                        memo: dict | None = None) -> bool:
    """Store the parse of ``new`` (blob ``new_blob`` of tree file ``path``) derived from
    the indexed (or held) parse of ``old``; True when stored, held or already there,
    False when the whole file must be parsed instead. ``lines``, when given, keeps each
    version's lines by blob id between calls (a chain of versions splits each once).

    ``memo``, when given, carries what a chain of versions knows of each version by
    blob id, derived along the chain as the stored rows are (no SQL reading all of a
    version's objects): ``memo[blob]["heads"]``, the ``(line, level)`` of its
    hypotheses; ``memo[blob]["file_wide"]``, whether its parse has a
    :data:`FILE_WIDE` diagnostic; ``memo[blob]["history"]``, its
    :func:`kb.index_facts.history_rows` (when the old version's are known: the rows
    before the region kept, the region's read by the same SQL, the rows after it
    shifted by the same ``new_stop - old_stop`` as the stored rows); and
    ``memo[blob]["objects"]`` and ``["links"]``, its light rows
    (:class:`kb.checks.facts.light_versions`) in the order the index stores them. When
    the old version's light rows are known, the new version is held
    (:meth:`kb.index.Index.put_derived`), not stored, and its light rows are derived."""
    from kb.model import ParseResult
    from kb.parse.tree_region import parse_region

    if idx.has_parse(path, new_blob):
        return True
    meta = idx.parse_meta(path, old_blob)
    if meta is None or meta.get("frontmatter") or meta.get("bom") or meta.get("newline") != "\n":
        return False
    known = memo.get(old_blob) if memo is not None else None
    wide = known.get("file_wide") if known else None
    if wide is None:
        wide = any(d.code in FILE_WIDE for d in idx.diagnostics_of(path, old_blob))
    if wide:
        return False
    if lines is None:
        lines = {}
    if old_blob not in lines:
        lines[old_blob] = _lines(old)
    a = lines[old_blob]
    if a is None:
        return False
    if new_blob not in lines:
        lines[new_blob] = _spliced_lines(a, old, new)
    b = lines[new_blob]
    if b is None:
        return False
    n = min(len(a), len(b))
    p = _same_first(a, b, n)
    s = _same_last(a, b, n - p)
    lo, hi = p + 1, len(a) - s + 1  # old lines [lo, hi) changed (1-based, half-open)
    heads = known["heads"] if known and "heads" in known else \
        [(r[2], r[5] or 0) for r in idx.extract("hypothesis", ["level"], path=path, blob=old_blob)]
    if not heads:
        return False
    top = min(level for _, level in heads)
    bounds = sorted(line for line, level in heads if level == top)
    before = [x for x in bounds if x < lo]  # a heading among the shared first lines
    if not before:
        return False
    start = max(before)
    after = [x for x in bounds if x >= hi and x > start]  # one among the shared last lines
    old_stop = min(after) if after else len(a) + 1
    new_stop = old_stop + len(b) - len(a)
    got = parse_region(k, path, b[start - 1:new_stop - 1], start - 1, closed_end=new_stop <= len(b))
    if got is None:
        return False
    hyps, diags = got
    title = next((ln[2:].strip() for ln in b if ln.startswith("# ")), None)
    new_meta: dict[str, object] = {"title": title} if title is not None else {}
    new_meta["bom"], new_meta["newline"] = False, "\n"
    region = ParseResult(path=path, kind="tree", objects=tuple(hyps), diagnostics=tuple(diags),
                         meta=new_meta)
    d = new_stop - old_stop
    held = None
    if known and "objects" in known:  # held in memory, its rows known here
        held = _held_rows(known, path, new_blob, start, old_stop, d, region)
        if held is None:
            return False
        idx.put_derived(path, old_blob, new_blob, start, old_stop, new_stop, region, new_meta)
    elif not idx.put_spliced(path, old_blob, new_blob, start, old_stop, new_stop, region, new_meta):
        return False
    if memo is not None:
        got_memo: dict = {"heads": [(ln, lv) for ln, lv in heads if ln < start]
                          + [(h.line, h.level or 0) for h in hyps]
                          + [(ln + d, lv) for ln, lv in heads if ln >= old_stop],
                          "file_wide": any(x.code in FILE_WIDE for x in diags)}
        if held is not None:
            got_memo["objects"], got_memo["links"], region_rows = held
        if known and "history" in known:
            from kb.index_facts import history_rows, history_rows_of

            got_memo["history"] = (
                [r for r in known["history"] if r[3] < start]
                + (history_rows_of(idx, region_rows) if held is not None
                   else history_rows(idx, path, new_blob, (start, new_stop)))
                + [_shifted(r, d) for r in known["history"] if r[3] >= old_stop])
        memo[new_blob] = got_memo
    return True


def _held_rows(known: dict, path: str, new_blob: str, first: int, stop: int, d: int,
               region: "ParseResult") -> tuple[list[tuple], list[tuple], list[tuple]] | None:
    """The light rows of a version spliced from one whose light rows are ``known``
    (``known["objects"]``: ``(id, kind, status, path, line, blob)``; ``known["links"]``:
    ``(path, src, dst, kind)``), each in the order :meth:`kb.index.Index.put_spliced`
    stores them -- the objects before the region, those after it shifted by ``d``,
    then the region's; the links of every object outside the region, then the
    region's -- and the region's ``objects`` rows; None when an ID declared in the old
    region is also declared outside it (put_spliced refuses that too)."""
    from kb.index_rows import result_rows

    old = known["objects"]
    inner = {r[0] for r in old if first <= r[4] < stop}
    if inner and any(r[0] in inner for r in old if r[4] < first or r[4] >= stop):
        return None
    _, rows_o, rows_l, _ = result_rows(path, new_blob, region)
    objects = [(i, kind, status, p, line, new_blob) for i, kind, status, p, line, _ in old
               if line < first]
    objects += [(i, kind, status, p, line + d, new_blob) for i, kind, status, p, line, _ in old
                if line >= stop]
    objects += [(r[2], r[3], r[4], r[0], r[6], new_blob) for r in rows_o]
    links = [x for x in known["links"] if x[1] not in inner]
    links += [(r[0], r[2], r[3], r[4]) for r in rows_l]
    return objects, links, rows_o


#: Lines compared at once (a slice comparison runs in C) before the line-by-line search.
_STEP = 256


def _same_first(a: list[str], b: list[str], n: int) -> int:
    """How many first lines ``a`` and ``b`` share (at most ``n``)."""
    p = 0
    while p < n:
        q = min(p + _STEP, n)
        if a[p:q] != b[p:q]:
            while a[p] == b[p]:  # a difference lies in [p, q)
                p += 1
            return p
        p = q
    return p


def _same_last(a: list[str], b: list[str], n: int) -> int:
    """How many last lines ``a`` and ``b`` share (at most ``n``)."""
    la, lb = len(a), len(b)
    s = 0
    while s < n:
        t = min(s + _STEP, n)
        if a[la - t:la - s] != b[lb - t:lb - s]:
            while a[la - 1 - s] == b[lb - 1 - s]:  # a difference lies in [s, t)
                s += 1
            return s
        s = t
    return s


def _shifted(row: tuple, d: int) -> tuple:
    """A :func:`kb.index_facts.history_rows` row moved down ``d`` lines, as
    :meth:`kb.index.Index.put_spliced` moves the object (its line and anchor lines)."""
    i, kind, status, line, stmt, ev, evl, stl, hyp = row
    if not d:
        return row
    return (i, kind, status, line + d, stmt, ev, None if evl is None else evl + d,
            None if stl is None else stl + d, hyp)
