"""How file versions become the index's rows (index layer): parse, encode, batch.

:func:`result_rows` turns one :class:`kb.model.ParseResult` into the rows of the
``parsed``, ``objects``, ``links`` and ``diagnostics`` tables; a big ``tree``
file is streamed in parts (:func:`stream_rows`, :class:`Part`) so a tree of
100,000 hypotheses is never held whole. :func:`parse_batches` (the working tree)
and :func:`version_batches` (file versions of commits, with the per-file rules)
parse in forked workers (:class:`kb.parallel.Workers`) from :data:`PARALLEL_MIN` files.
:mod:`kb.index` stores what these return; nothing here touches the database.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterable, Iterator

from kb import git
from kb.repo import KnowledgeBase, Snapshot

#: The rows of one or more parses: (parsed, objects, links, diagnostics) row lists.
Rows = tuple[list[tuple], list[tuple], list[tuple], list[tuple]]

#: Link kinds: object field -> link kind.
_LINK_FIELDS = {
    "parent": "parent", "children": "child", "evidence": "evidence",
    "hypothesis": "tests", "depends": "depends", "depended_by": "depended_by",
    "claims": "claims", "parents": "parent_method", "submethods": "submethod",
    "related": "related", "source_problem": "source", "problem": "direction_of",
}


_ENCODER: Any = None


def _encode(value: Any) -> str:
    """Compact JSON, non-ASCII kept, models as their fields (``to_json``'s text);
    one encoder for every row instead of one per ``json.dumps`` call."""
    global _ENCODER
    if _ENCODER is None:
        from json import encoder

        from kb.model import json_default

        make, basestring = encoder.c_make_encoder, encoder.c_encode_basestring
        try:
            # The C encoder JSONEncoder.encode builds on every call, built once
            # (no circular-reference markers: rows are trees): 1.3 µs a row less.
            one = make(None, json_default, basestring, None, ":", ",", False, False, True)
            _ENCODER = lambda v: "".join(one(v, 0))  # noqa: E731
        except TypeError:  # no C encoder, or another signature: the documented way
            _ENCODER = json.JSONEncoder(default=json_default, ensure_ascii=False,
                                        separators=(",", ":")).encode
    return _ENCODER(value)


def object_json(obj: Any) -> str:
    """An object's JSON for the ``objects`` table: every field but entry bodies
    (commands that need an entry's text read the card)."""
    fields = obj.__dict__
    if not fields.get("entries"):
        return _encode(fields)  # == obj.to_json()
    fields = dict(fields)
    entries = fields["entries"] = []
    for e in obj.entries:
        entry = dict(e.__dict__)  # a copy less its text: five times quicker than a comprehension
        entry.pop("text", None)
        entries.append(entry)
    return _encode(fields)


#: The ``meta`` JSON of the usual parse (no frontmatter, no title): computed once.
_PLAIN_META: dict[tuple[Any, Any], str] = {}


def _meta_json(meta: dict[str, Any]) -> str:
    if len(meta) == 2 and type(meta.get("bom")) is bool and list(meta) == ["bom", "newline"]:
        key = (meta["bom"], meta["newline"])
        hit = _PLAIN_META.get(key)
        if hit is None and key[1] in ("\n", "\r\n"):
            hit = _PLAIN_META[key] = json.dumps(meta, ensure_ascii=False, default=str)
        if hit is not None:
            return hit
    return json.dumps(meta, ensure_ascii=False, default=str)


def result_rows(path: str, blob: str, res: Any, source: str | None = None) -> "Rows":
    """Table rows of one ParseResult (what :meth:`Index.ensure` stores for a parse).

    ``source`` is the blob id of the bytes parsed (default ``blob``: kb's own
    writes store the parse of the text they hashed).
    """
    rows_p = [(path, blob, res.kind, _meta_json(res.meta), source or blob, len(res.objects))]
    rows_o: list[tuple] = []
    rows_l: list[tuple] = []
    _object_rows(path, blob, res.objects, rows_o, rows_l)
    return rows_p, rows_o, rows_l, _diagnostic_rows(path, blob, res.diagnostics)


def _object_rows(path: str, blob: str, objects: Iterable[Any], rows_o: list[tuple],
                 rows_l: list[tuple]) -> None:
    """Append the ``objects`` and ``links`` rows of ``objects`` to ``rows_o``, ``rows_l``."""
    add_o, add_l = rows_o.append, rows_l.append
    for obj in objects:
        add_o((path, blob, obj.id, obj.kind, obj.status, obj.title, obj.line, object_json(obj)))
        for src, dst, kind in links_of(obj):
            add_l((path, blob, src, dst, kind))


def _diagnostic_rows(path: str, blob: str, diagnostics: Iterable[Any]) -> list[tuple]:
    return [(path, blob, d.line, d.col, d.code, d.severity, d.message,
             d.fix.to_json() if d.fix else None) for d in diagnostics]


class Part(tuple):
    """Rows of a part of one file's parse (a streamed tree, :func:`stream_rows`):
    :meth:`Index._store` first deletes the rows of the (path, blob) pairs in
    ``clear`` (the first part names its file; later parts nothing), never those
    of its own ``parsed`` row (the last part's, which counts every part's objects)."""

    clear: list[tuple[str, str]]

    def __new__(cls, rows: "Rows", clear: list[tuple[str, str]]) -> "Part":
        part = super().__new__(cls, rows)
        part.clear = clear
        return part


#: Objects per part of a streamed parse.
STREAM_PART = 2000
#: Objects per part of a tree streamed while workers parse the other files: the
#: parent takes their results between parts, so that they never wait for it
#: with a full window (a part of 2,000 hypotheses left them idle for 0.1 s).
PARALLEL_PART = 200


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused: a parse builds thousands of
    short-lived containers and no cycle (whatever one left would be collected
    after), and the collections it triggered cost 5-8% of a cold index."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def stream_rows(cfg: Any, path: str, blob: str, fmt: str | None, data: bytes,
                size: int | None = None) -> Iterator["Part"]:
    """The rows of one file in parts of ``size`` (default :data:`STREAM_PART`) objects,
    parsed as they are stored (:func:`kb.parse.iter_parse_file`): the parse of a
    tree of 100,000 hypotheses is never held whole. Stored under the id of the
    bytes read, like :func:`_rows`. Pass ``data`` without keeping it: it is
    dropped once decoded."""
    from kb.git import object_id
    from kb.parse import iter_parse_file

    real = object_id("blob", data, like=blob)
    objects = iter_parse_file(path, data, cfg, fmt)
    del data
    clear = [(path, real)]
    count = 0
    rows_o: list[tuple] = []
    rows_l: list[tuple] = []
    part: list[Any] = []
    size = size or STREAM_PART
    res = None
    while res is None:
        # The collector paused while a part is parsed, as in _rows (never across a yield).
        with gc_paused():
            while len(part) < size:
                try:
                    part.append(next(objects))
                except StopIteration as stop:
                    res = stop.value
                    break
            if res is None:
                _object_rows(path, real, part, rows_o, rows_l)
        if res is not None:
            break
        count += len(part)
        part = []
        yield Part(([], rows_o, rows_l, []), clear)
        clear, rows_o, rows_l = [], [], []
    _object_rows(path, real, part, rows_o, rows_l)
    count += len(part)
    rows_p = [(path, real, res.kind, _meta_json(res.meta), real, count)]
    yield Part((rows_p, rows_o, rows_l, _diagnostic_rows(path, real, res.diagnostics)), clear)


#: Below this many files one process parses them; above, this process and a forked
#: worker per further core (:class:`kb.parallel.Workers`). Below ~400 files the fork,
#: the pipes and the copied pages cost about what a second core saves.
PARALLEL_MIN = 400
#: Files per task of the workers at most: large enough that a task's pipe record
#: and its store cost nothing.
BATCH = 125
#: Tasks per worker at least (:func:`batch_size`): the results are stored in task
#: order and a worker holds a few tasks ahead, so at the end this process may wait
#: for up to a few of another's tasks; small tasks keep that wait short.
TASKS_PER_WORKER = 16


def batch_size(files: int, workers: int) -> int:
    """Files per task for ``files`` files shared by ``workers`` processes: :data:`BATCH`,
    or fewer so that each worker gets :data:`TASKS_PER_WORKER` tasks (at least 16
    files a task). At 1,000 files and two workers 32 files a task end the cold index
    ~25 ms sooner than 125 (docs/DECISIONS.md)."""
    return max(16, min(BATCH, -(-files // (workers * TASKS_PER_WORKER))))


def _read(k: KnowledgeBase, snap: Snapshot, paths: list[str]) -> tuple[dict[str, bytes], dict[str, str]]:
    """The bytes of ``paths`` in ``snap``, and (working tree) the symlinks among them
    leaving the work tree, never read (:func:`kb.repo.read_worktree`)."""
    if snap.kind != "worktree":
        unread = snap.unread
        return snap.read(paths), {p: unread[p] for p in paths if p in unread} if unread else {}
    from kb.repo import read_worktree

    return read_worktree(k, paths)


def _outside_rows(k: KnowledgeBase, outside: dict[str, str], blobs: dict[str, str],
                  fmts: dict[str, str], rows: Rows) -> Rows:
    """Add, to ``rows``, a KB106 parse for each path -> target of ``outside`` (KB ``k``'s)."""
    from kb.model import Diagnostic, ParseResult

    from kb.repo import Dangling, outside_where

    for p, target in outside.items():
        if isinstance(target, Dangling):
            msg = (f"{p} is a symlink to {target}, which does not exist (or is not a file): "
                   "kb does not read it; replace it by a regular file")
        else:
            msg = (f"{p} is a symlink to {target}, outside {outside_where(k, target)}: kb does "
                   "not read it (nor write through it); replace it by a regular file")
        d = Diagnostic(path=p, line=1, col=1, code="KB106", severity="error", message=msg)
        res = ParseResult(path=p, kind=fmts.get(p) or "other", diagnostics=(d,))
        for table, new in zip(rows, result_rows(p, blobs[p], res)):
            table.extend(new)
    return rows


def parse_version(cfg: Any, path: str, fmt: str | None, data: bytes) -> Any:
    """:func:`kb.parse.parse_file` of one file version, the garbage collector paused
    (:func:`gc_paused`), as :meth:`Index.ensure_versions` parses it. Returns the
    :class:`kb.model.ParseResult` (stored with :meth:`Index.put`)."""
    from kb.parse import parse_file

    with gc_paused():
        return parse_file(path, data, cfg, fmt)


def _rows(cfg: Any, items: list[tuple[str, str, str | None, bytes]]) -> Rows:
    """Parse (path, blob, fmt, bytes) items into table rows (in a worker or not), the
    garbage collector paused for the batch (:func:`gc_paused`)."""
    from kb.git import object_id
    from kb.parse import parse_file

    out: Rows = ([], [], [], [])
    with gc_paused():
        for p, blob, fmt, data in items:
            # Stored under the id of the bytes read: a file edited after its
            # snapshot was taken never gets another version's parse.
            real = object_id("blob", data, like=blob)
            for table, rows in zip(out, result_rows(p, real, parse_file(p, data, cfg, fmt))):
                table.extend(rows)
    return out


def parse_batches(k: KnowledgeBase, snap: Snapshot, missing: list[str]) -> Iterator[Rows]:
    """Parse ``missing`` paths of ``snap`` in batches; in parallel when there are many.

    Each batch comes back as table rows, inserted by the caller between batches,
    which keeps memory flat. With :data:`PARALLEL_MIN` files or more, forked
    workers (:class:`kb.parallel.Workers`) read and parse batches meanwhile; a
    worker reads its batch itself (a snapshot of commits through its own ``git
    cat-file``).
    """
    if snap.kind != "worktree" and snap.unread:
        # Symlinks kb does not read: their KB106 parse, never a parse of the link's text.
        unread = {p: snap.unread[p] for p in missing if p in snap.unread}
        if unread:
            yield _outside_rows(k, unread, snap.files, snap.formats, ([], [], [], []))
            missing = [p for p in missing if p not in unread]
    # Tree files are parsed by this process as their rows are stored (stream_rows),
    # the rest in batches, by workers too when there are many.
    streamed = [p for p in missing if snap.formats.get(p) == "tree"]
    rest = [p for p in missing if snap.formats.get(p) != "tree"] if streamed else missing
    from kb.parallel import Workers, can_fork, cpu_workers

    workers = cpu_workers()
    parallel = len(rest) >= PARALLEL_MIN and workers >= 2 and can_fork()
    per_task = batch_size(len(rest), workers) if parallel else BATCH
    batches = [rest[i:i + per_task] for i in range(0, len(rest), per_task)]

    def stream(p: str, size: int | None = None) -> Iterator[Rows]:
        contents, outside = _read(k, snap, [p])
        if p not in contents:  # gone, or a symlink leaving the KB (KB106)
            yield _outside_rows(k, outside, snap.files, snap.formats, ([], [], [], []))
            return
        yield from stream_rows(k.config, p, snap.files[p], snap.formats.get(p), contents.pop(p), size)

    def batch_rows(batch: list[str]) -> Rows:
        contents, outside = _read(k, snap, batch)
        rows = _rows(k.config, [(p, snap.files[p], snap.formats.get(p), contents[p])
                                for p in batch if p in contents])
        return _outside_rows(k, outside, snap.files, snap.formats, rows) if outside else rows

    if not parallel:
        for p in streamed:
            yield from stream(p)
        for batch in batches:
            yield batch_rows(batch)
        return
    # The parsers imported once, here, not once in each forked worker.
    import kb.parse.card  # noqa: F401
    import kb.parse.experiment  # noqa: F401
    import kb.parse.frontmatter  # noqa: F401

    with Workers(batch_rows, batches, workers) as pool:
        for p in streamed:
            # The workers parse batches meanwhile; their results are stored
            # between the parts of the tree.
            for part in stream(p, PARALLEL_PART):
                yield part
                yield from pool.ready()
        yield from pool


def rows_and_rules(cfg: Any, items: list[tuple[str, str, str | None, bytes]],
                   rule_rows: Any) -> tuple[Rows, list[tuple]]:
    """:func:`_rows`, plus the per-file rule results of each file (``rule_rows``,
    see :meth:`Index.ensure_versions`) when given."""
    if rule_rows is None:
        return _rows(cfg, items), []
    out: Rows = ([], [], [], [])
    found: list[tuple] = []
    for item in items:
        one = _rows(cfg, [item])
        for table, rows in zip(out, one):
            table.extend(rows)
        p, blob, fmt, data = item
        found.extend(rule_rows(cfg, p, blob, one[0][0][2] if one[0] else fmt, one[1], data))
    return out, found


def rules_within(rules: Any, paths: frozenset, cfg: Any, path: str, *args: Any) -> list[tuple]:
    """``rules`` (a ``file_rules`` function of :meth:`Index.ensure_versions`) on ``paths`` only."""
    return rules(cfg, path, *args) if path in paths else []


def version_batches(k: KnowledgeBase, items: list[tuple[str, str, str]],
                     rules: Any = None, read: Any = None,
                     parallel: bool = True) -> Iterator[tuple[Rows, list[tuple]]]:
    """Parse ``(path, blob, fmt)`` items read from git in batches (:func:`parse_batches`
    for many versions of a path): by forked workers too when there are many (and
    ``parallel``), each reading its batch's blobs itself. Yields each batch's rows and
    (``rules``) its per-file rule results."""
    from kb.repo import UNREAD_LINKS, unread_link

    if UNREAD_LINKS:
        # Versions that are symlinks kb does not read (as a snapshot listed them): their
        # KB106 parse, never a parse of the link's text.
        links = {(p, b): (t, f) for p, b, f in items if (t := unread_link(k, p, b)) is not None}
        for (p, b), (t, f) in links.items():
            yield _outside_rows(k, {p: t}, {p: b}, {p: f}, ([], [], [], [])), []
        if links:
            items = [it for it in items if (it[0], it[1]) not in links]

    # Large files (tree.md) alone in their batch, so that workers share them out.
    big = [it for it in items if it[2] == "tree"]
    rest = [it for it in items if it[2] != "tree"]
    groups = [[it] for it in big] + [rest[i:i + BATCH] for i in range(0, len(rest), BATCH)]

    def group_rows(group: list[tuple[str, str, str]]) -> tuple[Rows, list[tuple]]:
        data = read(group) if read is not None else git.read_blobs([b for _, b, _ in group], k.top)
        return rows_and_rules(k.config, [(p, b, f, data[b]) for p, b, f in group if b in data],
                               rules)

    from kb.parallel import Workers, can_fork, cpu_workers

    workers = cpu_workers()
    if not parallel or len(items) < 8 or len(groups) < 2 or workers < 2 or not can_fork():
        for group in groups:
            yield group_rows(group)
        return
    with Workers(group_rows, groups, workers) as pool:
        yield from pool


#: Model class -> the (field, link kind) pairs of :data:`_LINK_FIELDS` it has
#: (every instance of a model has all its fields).
_LINK_FIELDS_OF: dict[type, tuple[tuple[str, str], ...]] = {}


def links_of(obj: Any) -> list[tuple[str, str, str]]:
    """The links an object declares: (its id, other id, kind)."""
    out = []
    fields = obj.__dict__  # a model's fields; getattr on a missing one is slow
    present = _LINK_FIELDS_OF.get(type(obj))
    if present is None:
        present = tuple((f, kind) for f, kind in _LINK_FIELDS.items() if f in fields)
        from kb.model import is_model

        if is_model(obj):  # a model: every instance has every field
            _LINK_FIELDS_OF[type(obj)] = present
    for fld, kind in present:
        v = fields.get(fld)
        if not v:
            continue
        if isinstance(v, str):
            out.append((obj.id, v, kind))
        else:
            out.extend((obj.id, x, kind) for x in v)
    return out
