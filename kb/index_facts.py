"""Queries over the index for one snapshot or one file version (index layer).

What the rules (:mod:`kb.checks.facts`), the review sides (:mod:`kb.review`)
and the web view (:mod:`kb.web`) read of the index's ``parsed``, ``objects``,
``links`` and ``diagnostics`` tables (:mod:`kb.index`), as plain tuples: the
callers never write SQL. A :class:`SnapshotTable` is a snapshot's
``{path: blob}`` as a temporary table, so that whole-snapshot questions cost
what the snapshot holds, not what else the cache holds.

Errors: a database that cannot be read raises
:class:`kb.errors.EnvironmentError_` (delete ``.kb/`` and run again).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from itertools import islice
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional

from kb.errors import EnvironmentError_
from kb.index import Index

if TYPE_CHECKING:  # pragma: no cover
    from kb.repo import KnowledgeBase, Snapshot


@contextmanager
def _reading() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise EnvironmentError_(f"kb's index cache cannot be read ({exc}); delete the .kb/ folder "
                                "and run the command again") from None


#: Files per JSON text that fills a snapshot's table (:attr:`SnapshotTable.name`).
_JSON_PART = 8192


class SnapshotTable:
    """A snapshot's ``{path: blob}`` as a temporary table of the index's connection,
    created on first use (:attr:`name`)."""

    _serial = 0

    def __init__(self, index: Index, files: dict[str, str]) -> None:
        self.index = index
        self.files = files
        self._name: Optional[str] = None
        self._db: Any = None  # the connection holding the table (Index.resume opens another)

    @property
    def name(self) -> str:
        """The table's name (``kb_snap_<n>``, columns ``path``, ``blob``)."""
        if self._name is None or self._db is not self.index.conn:
            SnapshotTable._serial += 1
            name = f"kb_snap_{SnapshotTable._serial}"
            db = self.index.conn
            with _reading():
                db.execute(f"CREATE TEMP TABLE {name} (path TEXT PRIMARY KEY, blob TEXT NOT NULL) "
                           "WITHOUT ROWID")
                # JSON texts read by SQLite's json_each, not a Python tuple a row
                # (executemany): ~0.11 s instead of ~0.155 s for the 104,000 files of a
                # big KB. In parts: one text of the whole listing (and SQLite's parse of
                # it) added ~20 MB to the hook's peak memory.
                items = iter(self.files.items())
                while part := dict(islice(items, _JSON_PART)):
                    db.execute(f"INSERT INTO {name} SELECT key, value FROM json_each(?)",
                               (json.dumps(part, ensure_ascii=False, check_circular=False),))
                # The inserts opened an implicit transaction: end it, or the index's next
                # write (BEGIN IMMEDIATE) fails and kb falls back to an in-memory index.
                db.commit()
            self._name, self._db = name, db
        return self._name

    def _join(self, table: str, columns: str, where: str = "", args: tuple = (),
              held: bool = False) -> list[tuple]:
        """Rows of ``table`` of the snapshot's versions; ``held`` True: without the
        versions :meth:`kb.index.Index.put_derived` holds (the caller has their rows
        already: :class:`kb.checks.facts.Facts`' light rows), else those of the
        snapshot are stored first."""
        # CROSS JOIN: the snapshot's files are the outer loop, each looked up in the
        # table's (path, blob) index. Left to itself SQLite scans the whole table (every
        # version the cache holds) and looks each row up in the snapshot instead.
        sql = (f"SELECT {columns} FROM {self.name} s CROSS JOIN {table} t "
               f"ON t.path = s.path AND t.blob = s.blob")
        if where:
            sql += f" WHERE {where}"
        with _reading():
            db = self.index.conn if held else self.index.connection_for(
                *[(p, b) for p, b in self.index.held() if self.files.get(p) == b])
            return list(db.execute(sql, args))

    def unparsed(self) -> list[str]:
        """Paths of the snapshot whose version has no stored parse (a version
        :meth:`kb.index.Index.put_derived` holds among them)."""
        with _reading():
            if self.index.conn.execute("SELECT 1 FROM parsed LIMIT 1").fetchone() is None:
                return list(self.files)  # a new cache (a fresh CI clone): no table to fill
            return [p for (p,) in self.index.conn.execute(
                f"SELECT s.path FROM {self.name} s LEFT JOIN parsed t "
                "ON t.path = s.path AND t.blob = s.blob WHERE t.path IS NULL")]

    def objects(self, held: bool = False) -> list[tuple[str, str, str, str, int, str]]:
        """``(id, kind, status, path, line, blob)`` of every object of the snapshot
        (``held``: see :meth:`_join`)."""
        return self._join("objects", "t.id, t.kind, t.status, t.path, t.line, t.blob", held=held)

    def links(self, kinds: Iterable[str], held: bool = False) -> list[tuple[str, str, str, str]]:
        """``(path, src, dst, kind)`` of every link of ``kinds`` in the snapshot
        (``held``: see :meth:`_join`)."""
        kinds = tuple(kinds)
        marks = ",".join("?" * len(kinds))
        return self._join("links", "t.path, t.src, t.dst, t.kind", f"t.kind IN ({marks})", kinds,
                          held=held)

    def ids_of_kind(self, kind: str, held: bool = False) -> set[str]:
        """IDs of the snapshot's objects of ``kind`` (``held``: see :meth:`_join`)."""
        return {i for (i,) in self._join("objects", "t.id", "t.kind = ?", (kind,), held=held)}

    def parse_diagnostics(self) -> list[tuple]:
        """``(path, line, col, code, severity, message, fix JSON)`` of every parse
        diagnostic of the snapshot."""
        return self._join("diagnostics", "t.path, t.line, t.col, t.code, t.severity, t.message, t.fix")

    def field_of_kind(self, kind: str, field: str) -> list[tuple[str, Any]]:
        """``(path, value of the JSON field)`` of every object of ``kind``."""
        return self._join("objects", f"t.path, json_extract(t.data, '$.{field}')", "t.kind = ?", (kind,))

    def data_of_kind(self, kind: str) -> list[tuple[str, str]]:
        """``(path, object JSON)`` of every object of ``kind``."""
        return self._join("objects", "t.path, t.data", "t.kind = ?", (kind,))


#: Run markers kept at most (``parsed_runs``): past it they are dropped and marked again.
RUNS_KEPT = 4096


def unparsed_runs(index: Index, files: dict[str, str], runs: list[tuple[bytes, list[str]]],
                  table: Optional[SnapshotTable] = None) -> list[str]:
    """Paths of ``files`` whose version has no stored parse (what
    :meth:`SnapshotTable.unparsed` gives), looking only at the runs of ``runs``
    (``(digest, paths)``, :func:`kb.digests.file_runs`) the index has not
    marked as parsed whole; the runs found parsed whole are marked. ``table``
    (the table of all of ``files``) answers when no run is marked: a check
    computing everything joins through it later, so it is filled once.

    The first check after a pull (issue 18) asked SQLite about every file of the
    staged index (~0.25 s at 104,000 files) although a pull changes a few runs of
    4,096. A marker is void once parses are forgotten or the cache is made anew
    (``forgets``: random in each new cache, one more at each forget; read before
    the runs are looked at, so that a marker written across a racing forget or
    rebuild is void too). The markers are a cache's cache: tables that cannot be
    read count as no marker, and a write that fails is skipped.
    """
    db = index.conn
    digests = [d for d, _ in runs]
    marked: set[bytes] = set()
    try:
        row = db.execute("SELECT n FROM forgets").fetchone()
        forgets = row[0] if row else None
        for i in range(0, len(digests), 500) if forgets is not None else ():
            chunk = digests[i:i + 500]
            marked.update(d for (d,) in db.execute(
                f"SELECT digest FROM parsed_runs WHERE forgets = ? AND digest IN "
                f"({','.join('?' * len(chunk))})", (forgets, *chunk)))
    except sqlite3.Error:
        forgets, marked = None, set()
    if index.generation is None:
        index.generation = forgets
    todo = [(d, paths) for d, paths in runs if d not in marked]
    if not todo:
        return []
    if table is None or len(todo) < len(runs):
        table = SnapshotTable(index, {p: files[p] for _, paths in todo for p in paths})
    missing = table.unparsed()
    lost = set(missing)
    whole = [(d, forgets) for d, paths in todo if lost.isdisjoint(paths)]
    if whole and forgets is not None:
        # Never wait for another writer here: a check that waited through a rebuild
        # went on reading the new cache, which lacks what it found parsed in the old.
        try:
            wait = db.execute("PRAGMA busy_timeout").fetchone()[0]
            db.execute("PRAGMA busy_timeout = 0")
            try:
                with db:
                    if db.execute("SELECT count(*) FROM parsed_runs").fetchone()[0] + len(whole) > RUNS_KEPT:
                        db.execute("DELETE FROM parsed_runs")
                    db.executemany("INSERT OR REPLACE INTO parsed_runs VALUES (?, ?)", whole)
            finally:
                db.execute(f"PRAGMA busy_timeout = {int(wait)}")
        except sqlite3.Error:
            pass
    return missing


def version_objects(index: Index, path: str, blob: str) -> list[tuple[str, str, str, str, int, str]]:
    """``(id, kind, status, path, line, blob)`` of the objects of one file version."""
    with _reading():
        return list(index.connection_for((path, blob)).execute(
            "SELECT id, kind, status, path, line, blob FROM objects WHERE path=? AND blob=?",
            (path, blob)))


def light_rows_of(rows: Any) -> tuple[list[tuple], list[tuple]]:
    """``(objects, links)`` of one file version from the rows stored for it
    (:func:`kb.index_rows.result_rows`), with no SQL: :func:`version_objects`' rows and
    :func:`version_links`' with the path first, ``(path, src, dst, kind)``, in the order
    those read them (the order stored)."""
    _, rows_o, rows_l, _ = rows
    return ([(r[2], r[3], r[4], r[0], r[6], r[1]) for r in rows_o],
            [(r[0], r[2], r[3], r[4]) for r in rows_l])


def version_field(index: Index, path: str, blob: str, kind: str, field: str) -> list[Any]:
    """The JSON field ``field`` of every object of ``kind`` of one file version (what
    :meth:`SnapshotTable.field_of_kind` gives for it)."""
    with _reading():
        return [v for (v,) in index.connection_for((path, blob)).execute(
            f"SELECT json_extract(data, '$.{field}') FROM objects WHERE path=? AND blob=? AND kind=?",
            (path, blob, kind))]


def version_links(index: Index, path: str, blob: str,
                  kinds: Optional[Iterable[str]] = None) -> list[tuple[str, str, str]]:
    """``(src, dst, kind)`` of the links one file version declares (of ``kinds``; every
    kind when None), in the order stored."""
    where, args = "", (path, blob)
    if kinds is not None:
        kinds = tuple(kinds)
        where, args = f" AND kind IN ({','.join('?' * len(kinds))})", (path, blob, *kinds)
    with _reading():
        return list(index.connection_for((path, blob)).execute(
            f"SELECT src, dst, kind FROM links WHERE path=? AND blob=?{where}", args))


def declarations(index: Index, obj_id: str, kinds: Iterable[str]) -> list[tuple[str, str, str, str, str, int]]:
    """``(path, blob, id, kind, status, line)`` of every stored declaration of ``obj_id``
    among ``kinds`` (of any file version: the caller keeps its snapshot's; not of the
    versions :meth:`Index.put_derived` holds: the caller has their rows)."""
    kinds = tuple(kinds)
    marks = ",".join("?" * len(kinds))
    with _reading():
        return list(index.conn.execute(
            f"SELECT path, blob, id, kind, status, line FROM objects WHERE id=? AND kind IN ({marks})",
            (obj_id, *kinds)))


def history_rows(index: Index, path: str, blob: str, lines: Optional[tuple[int, int]] = None
                 ) -> list[tuple]:
    """What the history rules compare of the objects of one file version, in line
    order: ``(id, kind, status, line, statement (an experiment's title), evidence JSON, evidence line,
    status line, hypothesis)`` (JSON fields read by SQLite, None when absent); only the
    objects declared on lines ``[lo, hi)`` when ``lines`` is ``(lo, hi)``."""
    where, args = "", (path, blob)
    if lines is not None:
        where, args = " AND line >= ? AND line < ?", (path, blob, *lines)
    with _reading():
        return list(index.connection_for((path, blob)).execute(
            f"SELECT {_HISTORY_COLUMNS} FROM objects WHERE path=? AND blob=?{where} ORDER BY line",
            args))


#: What :func:`history_rows` reads of an object row (columns ``id kind status line data``).
_HISTORY_COLUMNS = (
    "id, kind, status, line, "
    # an experiment has no statement: its title says what it is (KB350, kb sync)
    "coalesce(json_extract(data, '$.statement'), json_extract(data, '$.title')), "
    "json_extract(data, '$.evidence'), json_extract(data, '$.anchor_lines.Evidence'), "
    "coalesce(json_extract(data, '$.anchor_lines.Status'), "
    "json_extract(data, '$.anchor_lines.状态')), json_extract(data, '$.hypothesis')")


def history_rows_of(index: Index, rows: list[tuple]) -> list[tuple]:
    """:func:`history_rows` of ``objects`` rows not stored (``(path, blob, id, kind,
    status, title, line, data)``, :func:`kb.index_rows.result_rows`), read by the same
    SQL, in line order."""
    out: list[tuple] = []
    with _reading():
        for i in range(0, len(rows), 150):  # 5 parameters a row, far below SQLite's limit
            chunk = rows[i:i + 150]
            values = ",".join(["(?,?,?,?,?)"] * len(chunk))
            out.extend(index.conn.execute(
                f"WITH region(id, kind, status, line, data) AS (VALUES {values}) "
                f"SELECT {_HISTORY_COLUMNS} FROM region ORDER BY line",
                [x for r in chunk for x in (r[2], r[3], r[4], r[6], r[7])]))
    out.sort(key=lambda r: r[3])
    return out


def version_diagnostics(index: Index, path: str, blob: str) -> list[tuple]:
    """``(line, col, code, severity, message, fix JSON)`` of one file version's parse."""
    with _reading():
        return list(index.connection_for((path, blob)).execute(
            "SELECT line, col, code, severity, message, fix FROM diagnostics "
            "WHERE path=? AND blob=?", (path, blob)))


def hypotheses_brief(index: Index, path: str, blob: str) -> list[tuple[str, str, str, Optional[str]]]:
    """``(id, statement, status, parent)`` of the hypotheses of one tree.md version, in
    line order (what the dashboard renders)."""
    with _reading():
        return list(index.connection_for((path, blob)).execute(
            "SELECT id, json_extract(data, '$.statement'), status, json_extract(data, '$.parent') "
            "FROM objects WHERE path=? AND blob=? AND kind='hypothesis' ORDER BY line", (path, blob)))


def same_facts(index: Index, path: str, a: str, b: str) -> bool:
    """Whether two versions of ``path`` hold the same objects (JSON) and links."""
    q_obj = "SELECT id, kind, status, title, line, data FROM objects WHERE path=? AND blob=?"
    q_lnk = "SELECT src, dst, kind FROM links WHERE path=? AND blob=?"
    db = index.connection_for((path, a), (path, b))
    with _reading():
        if sorted(set(db.execute(q_obj, (path, a)))) != sorted(set(db.execute(q_obj, (path, b)))):
            return False
        return sorted(set(db.execute(q_lnk, (path, a)))) == sorted(set(db.execute(q_lnk, (path, b))))


def changed_objects(index: Index, path: str, a: str, b: str,
                    moving: Iterable[str] = ()) -> list[tuple[str, str, int, str]]:
    """``(kind, id, line, JSON)`` of the objects of ``path`` at blob ``a`` that blob ``b``
    lacks or holds with other fields (compared inside SQLite; the JSON paths
    ``moving``, e.g. ``$.line``, are left out of the comparison), in line order."""
    moving = tuple(moving)
    drop = ", ".join("?" * len(moving))
    same = f"json_remove(b.data, {drop}) = json_remove(a.data, {drop})" if moving else "0"
    sql = ("SELECT a.kind, a.id, a.line, a.data FROM objects a "
           "WHERE a.path = ? AND a.blob = ? AND NOT EXISTS ("
           "SELECT 1 FROM objects b WHERE b.id = a.id AND b.path = ? AND b.blob = ? "
           f"AND b.kind = a.kind AND (b.data = a.data OR {same})) ORDER BY a.line")
    with _reading():
        db = index.connection_for((path, a), (path, b))
        return list(db.execute(sql, (path, a, path, b, *moving, *moving)))


def objects_with_ids(index: Index, path: str, blob: str, kind: str,
                     ids: list[str]) -> list[tuple[str, int, str]]:
    """``(id, line, JSON)`` of the objects of ``kind`` with these IDs in one file version."""
    out: list[tuple[str, int, str]] = []
    with _reading():
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            out.extend(index.connection_for((path, blob)).execute(
                f"SELECT id, line, data FROM objects WHERE path=? AND blob=? AND kind=? AND id IN ({marks})",
                (path, blob, kind, *chunk)))
    return out


def first_diagnostics(index: Index, versions: list[tuple[str, str]],
                      codes: Iterable[str]) -> list[tuple[str, int, str, str]]:
    """``(path, line, code, message)`` of the diagnostics with ``codes`` of these file
    versions (``(path, blob)`` pairs), by path and line: one query per 400 versions."""
    codes = tuple(codes)
    out: list[tuple[str, int, str, str]] = []
    with _reading():
        for i in range(0, len(versions), 400):
            chunk = versions[i:i + 400]
            marks = ",".join(["(?,?)"] * len(chunk))
            out.extend(index.connection_for(*versions).execute(
                f"SELECT path, line, code, message FROM diagnostics WHERE code IN "
                f"({','.join('?' * len(codes))}) AND (path, blob) IN (VALUES {marks}) "
                "ORDER BY path, line, code", (*codes, *(x for pb in chunk for x in pb))))
    return out


class SnapshotIndex(Index):
    """The index restricted to one snapshot's files: its "current files" are the
    snapshot's (a connection-local temporary table ``snap``) instead of the indexed
    working tree, so the index's working-tree readers (``objects``, ``get``,
    ``extract``, ``links``) answer for that snapshot. Parses what the cache lacks
    on opening; use on one thread (SQLite connections stay in theirs)."""

    _CUR = "JOIN temp.snap f ON f.path = o.path AND f.blob = o.blob"

    def __init__(self, k: "KnowledgeBase", snap: "Snapshot") -> None:
        super().__init__(k)
        self.snap = snap
        self.ensure(snap)
        with _reading():
            self.db.execute("CREATE TEMP TABLE IF NOT EXISTS snap "
                            "(path TEXT PRIMARY KEY, blob TEXT NOT NULL, fmt TEXT NOT NULL)")
            with self.db:
                self.db.execute("DELETE FROM temp.snap")
                self.db.executemany("INSERT INTO temp.snap VALUES (?,?,?)",
                                    [(p, b, snap.formats[p]) for p, b in snap.files.items()])

    def links(self, obj_id: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """``(outgoing, incoming)`` links of ``obj_id`` in the snapshot, as (src, dst, kind)."""
        base = ("SELECT l.src, l.dst, l.kind FROM links l "
                "JOIN temp.snap f ON f.path=l.path AND f.blob=l.blob")
        with _reading():
            # declaration order, whatever order the files were stored in
            return (list(self.db.execute(base + " WHERE l.src = ? ORDER BY l.path, l.rowid", (obj_id,))),
                    list(self.db.execute(base + " WHERE l.dst = ? ORDER BY l.path, l.rowid", (obj_id,))))

    def all_links(self, kind: str) -> list[tuple[str, str]]:
        """Every (src, dst) link of ``kind`` in the snapshot (e.g. ``depends``)."""
        with _reading():
            return list(self.db.execute(
                "SELECT l.src, l.dst FROM links l JOIN temp.snap f ON f.path=l.path AND f.blob=l.blob "
                "WHERE l.kind = ?", (kind,)))

    def error_rows(self) -> list[tuple[str, int, str]]:
        """Every stored parse error of the snapshot's files as ``(path, line, code)``,
        sorted by path, line and code (nothing is parsed again)."""
        with _reading():
            return list(self.db.execute(
                "SELECT d.path, d.line, d.code FROM diagnostics d "
                "JOIN temp.snap f ON f.path = d.path AND f.blob = d.blob "
                "WHERE d.severity = 'error' ORDER BY d.path, d.line, d.code"))

    def all_ids(self) -> list[str]:
        """Every object ID declared in the snapshot."""
        with _reading():
            return [i for (i,) in self.db.execute(
                "SELECT DISTINCT o.id FROM objects o JOIN temp.snap f ON f.path=o.path AND f.blob=o.blob")]

