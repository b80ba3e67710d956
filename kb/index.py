"""The index: ``.kb/index.sqlite``, a cache keyed by git blob id (DESIGN.md §6).

Tables (schema version :data:`SCHEMA_VERSION`; any other version, or a change
of ``kb.toml`` or of kb's version, rebuilds the cache from scratch):

- ``parsed(path, blob, fmt, meta)`` — one row per parsed file version;
- ``objects(path, blob, id, kind, status, title, line, data)`` — ``data`` is
  the object's JSON (``kb.model`` ``to_json``);
- ``links(path, blob, src, dst, kind)`` — parent/child/evidence/depends/…;
- ``diagnostics(path, blob, line, col, code, severity, message, fix)``;
- ``files(path, blob, fmt)`` — the working-tree snapshot last indexed.

Only blobs not yet in ``parsed`` are read and parsed, so an unchanged KB
re-indexes in milliseconds. WAL mode and a busy timeout let hooks and racing
agents open it at once. Deleting ``.kb/`` loses nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import kb
from kb import git
from kb.repo import KnowledgeBase, Snapshot, worktree_snapshot

SCHEMA_VERSION = 3

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE parsed (path TEXT NOT NULL, blob TEXT NOT NULL, fmt TEXT NOT NULL,
                     meta TEXT NOT NULL, PRIMARY KEY (path, blob));
CREATE TABLE objects (path TEXT NOT NULL, blob TEXT NOT NULL, id TEXT NOT NULL,
                      kind TEXT NOT NULL, status TEXT NOT NULL, title TEXT NOT NULL,
                      line INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX objects_pb ON objects (path, blob);
CREATE INDEX objects_id ON objects (id);
CREATE TABLE links (path TEXT NOT NULL, blob TEXT NOT NULL, src TEXT NOT NULL,
                    dst TEXT NOT NULL, kind TEXT NOT NULL);
CREATE INDEX links_pb ON links (path, blob);
CREATE TABLE diagnostics (path TEXT NOT NULL, blob TEXT NOT NULL, line INTEGER NOT NULL,
                          col INTEGER NOT NULL, code TEXT NOT NULL, severity TEXT NOT NULL,
                          message TEXT NOT NULL, fix TEXT);
CREATE INDEX diagnostics_pb ON diagnostics (path, blob);
CREATE TABLE files (path TEXT PRIMARY KEY, blob TEXT NOT NULL, fmt TEXT NOT NULL);
"""

#: Link kinds: object field -> link kind.
_LINK_FIELDS = {
    "parent": "parent", "children": "child", "evidence": "evidence",
    "hypothesis": "tests", "depends": "depends", "depended_by": "depended_by",
    "claims": "claims", "parents": "parent_method", "submethods": "submethod",
    "related": "related", "source_problem": "source", "problem": "direction_of",
}


@dataclass
class RefreshStats:
    """What one refresh did: counts, timings (seconds), and the files re-parsed."""

    files: int = 0
    parsed: int = 0
    removed: int = 0
    seconds: float = 0.0
    rebuilt: bool = False
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ObjectRow:
    """One indexed object, light: no model is built unless ``model()`` is called."""

    id: str
    kind: str
    status: str
    title: str
    path: str
    line: int
    data: str

    def fields(self) -> dict[str, Any]:
        return json.loads(self.data)

    def model(self) -> Any:
        from kb.model import MODEL_BY_KIND

        return MODEL_BY_KIND[self.kind].from_json(self.data)


def _config_key(k: KnowledgeBase) -> str:
    try:
        raw = (k.root / "kb.toml").read_bytes()
    except OSError:
        raw = b""
    return hashlib.sha1(raw + kb.__version__.encode()).hexdigest()


class Index:
    """The SQLite cache of one KB. Use as a context manager or call ``close()``."""

    def __init__(self, k: KnowledgeBase, path: Path | None = None) -> None:
        self.kb = k
        self.path = path or (k.root / ".kb" / "index.sqlite")
        self.rebuilt = False
        self.db = self._open()

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    # -- opening -------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        gi = self.path.parent / ".gitignore"
        if not gi.exists():
            # The cache is never committed, even where .gitignore lacks `.kb/`.
            gi.write_text("*\n", encoding="utf-8")
        db = sqlite3.connect(self.path, timeout=30)
        want = {"schema": str(SCHEMA_VERSION), "config": _config_key(self.kb)}
        try:
            # A damaged cache ("file is not a database") is rebuilt like an old one.
            db.execute("PRAGMA journal_mode=WAL")
            # A cache: a crash may lose it (it is rebuilt), never corrupt the KB.
            db.execute("PRAGMA synchronous=OFF")
            have = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError:
            have = {}
        if any(have.get(k) != v for k, v in want.items()):
            db.close()
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            db = sqlite3.connect(self.path, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")
            with db:
                db.executescript(_SCHEMA)
                db.executemany("INSERT INTO meta VALUES (?, ?)", want.items())
            self.rebuilt = True
        return db

    # -- filling -------------------------------------------------------------
    def ensure(self, snap: Snapshot, known: dict[str, str] | None = None) -> int:
        """Parse and store every (path, blob) of ``snap`` not in the cache yet.

        ``known`` (path -> blob) are versions known to be parsed (the indexed
        working tree: every ``files`` row has its parse), not looked up again.
        Returns the number of files parsed.
        """
        todo = snap.files if known is None else \
            {p: b for p, b in snap.files.items() if known.get(p) != b}
        have = set(self.db.execute("SELECT path, blob FROM parsed").fetchall()) if len(todo) > 64 \
            else {row for p, b in todo.items()
                  for row in self.db.execute("SELECT path, blob FROM parsed WHERE path=? AND blob=?", (p, b))}
        missing = [p for p, b in todo.items() if (p, b) not in have]
        if not missing:
            return 0
        parsed = 0
        with self.db:  # one transaction: a batch per commit costs more than the parse
            for rows_p, rows_o, rows_l, rows_d in _parse_batches(self.kb, snap, missing):
                self.db.executemany("INSERT OR REPLACE INTO parsed VALUES (?,?,?,?)", rows_p)
                self.db.executemany("INSERT INTO objects VALUES (?,?,?,?,?,?,?,?)", rows_o)
                self.db.executemany("INSERT INTO links VALUES (?,?,?,?,?)", rows_l)
                self.db.executemany("INSERT INTO diagnostics VALUES (?,?,?,?,?,?,?,?)", rows_d)
                parsed += len(rows_p)
        return parsed

    def ensure_versions(self, items: Iterable[tuple[str, str, str]],
                        store_rules: Any = None) -> int:
        """Parse and store every ``(path, blob, fmt)`` not in the cache yet, read from git.

        Many versions of one path may be given (``verify --range``: every
        tree.md of the range, with the tip's files), so that they are parsed in
        one pass -- in parallel when there are many -- instead of one commit
        at a time. Blobs git lacks are skipped. ``store_rules(db, files, rows)``,
        when given, receives the per-file rule results the workers computed
        beside each parse (:mod:`kb.checks.file_results`), in the same
        transaction. Returns the number parsed.
        """
        items = list(dict.fromkeys(items))
        if not items:
            return 0
        self.db.execute("CREATE TEMP TABLE IF NOT EXISTS kb_want (path TEXT NOT NULL, blob TEXT NOT NULL)")
        self.db.execute("DELETE FROM kb_want")
        self.db.executemany("INSERT INTO kb_want VALUES (?, ?)", [(p, b) for p, b, _ in items])
        have = set(self.db.execute(
            "SELECT w.path, w.blob FROM kb_want w JOIN parsed t ON t.path = w.path AND t.blob = w.blob"))
        self.db.execute("DELETE FROM kb_want")
        missing = [it for it in items if (it[0], it[1]) not in have]
        if not missing:
            return 0
        parsed = 0
        with self.db:
            for (rows_p, rows_o, rows_l, rows_d), rules in _version_batches(
                    self.kb, missing, store_rules is not None):
                self.db.executemany("INSERT OR REPLACE INTO parsed VALUES (?,?,?,?)", rows_p)
                self.db.executemany("INSERT INTO objects VALUES (?,?,?,?,?,?,?,?)", rows_o)
                self.db.executemany("INSERT INTO links VALUES (?,?,?,?,?)", rows_l)
                self.db.executemany("INSERT INTO diagnostics VALUES (?,?,?,?,?,?,?,?)", rows_d)
                if store_rules is not None:
                    store_rules(self.db, [(r[0], r[1]) for r in rows_p], rules)
                parsed += len(rows_p)
        return parsed

    def refresh(self, only: list[str] | None = None) -> RefreshStats:
        """Bring the working-tree snapshot up to date (incremental).

        ``only`` (KB-relative files or folders) refreshes just those paths;
        the rest of the indexed snapshot stays as it was last indexed.
        """
        t0 = time.perf_counter()
        snap = worktree_snapshot(self.kb, only)
        old = self._indexed(only)
        parsed = self.ensure(snap, known=old)
        removed = [p for p in old if p not in snap.files]
        changed = [(p, b, snap.formats[p]) for p, b in snap.files.items() if old.get(p) != b]
        if removed or changed:
            with self.db:
                self.db.executemany("DELETE FROM files WHERE path=?", [(p,) for p in removed])
                self.db.executemany("INSERT OR REPLACE INTO files VALUES (?,?,?)", changed)
                stale = [(p, b) for p, b in old.items() if snap.files.get(p) != b]
                if stale:
                    self._drop(stale)
        return RefreshStats(files=len(snap.files), parsed=parsed, removed=len(removed),
                            seconds=time.perf_counter() - t0, rebuilt=self.rebuilt)

    def _indexed(self, only: list[str] | None = None) -> dict[str, str]:
        """path -> blob of the indexed working tree (of the files or folders ``only``)."""
        if only is None:
            return dict(self.db.execute("SELECT path, blob FROM files").fetchall())
        out: dict[str, str] = {}
        for s in {p.rstrip("/") for p in only}:
            # The file itself, or what lies under the folder: '/' + 1 is '0'.
            out.update(self.db.execute(
                "SELECT path, blob FROM files WHERE path = ? OR (path > ? AND path < ?)",
                (s, s + "/", s + "0")).fetchall())
        return out

    def worktree(self) -> Snapshot:
        """The working-tree snapshot as last indexed (call :meth:`refresh` first)."""
        files, fmts = {}, {}
        for p, b, f in self.db.execute("SELECT path, blob, fmt FROM files"):
            files[p] = b
            fmts[p] = f
        return Snapshot(kb=self.kb, kind="worktree", files=files, formats=fmts)

    def _drop(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Forget cached parses no snapshot in the index refers to any more."""
        pairs = list(pairs)
        for table in ("parsed", "objects", "links", "diagnostics"):
            self.db.executemany(f"DELETE FROM {table} WHERE path=? AND blob=?", pairs)

    # -- reading the working-tree snapshot ------------------------------------
    _CUR = "JOIN files f ON f.path = o.path AND f.blob = o.blob"

    def objects(self, kind: str | None = None, status: str | None = None,
                with_data: bool = True) -> list[ObjectRow]:
        """Objects of the indexed working tree, in path and line order (``with_data``
        False: every row's ``data`` is ``"{}"``, not read)."""
        data = "o.data" if with_data else "'{}'"
        sql = (f"SELECT o.id, o.kind, o.status, o.title, o.path, o.line, {data} "
               f"FROM objects o {self._CUR}")
        cond, args = [], []
        if kind:
            cond.append("o.kind = ?")
            args.append(kind)
        if status:
            cond.append("o.status = ?")
            args.append(status)
        if cond:
            sql += " WHERE " + " AND ".join(cond)
        sql += " ORDER BY o.path, o.line"
        return [ObjectRow(*r) for r in self.db.execute(sql, args)]

    def get(self, obj_id: str) -> list[ObjectRow]:
        """Every object with this ID (more than one means a duplicate)."""
        sql = (f"SELECT o.id, o.kind, o.status, o.title, o.path, o.line, o.data FROM objects o "
               f"{self._CUR} WHERE o.id = ? ORDER BY o.path, o.line")
        return [ObjectRow(*r) for r in self.db.execute(sql, (obj_id,))]

    def links(self, obj_id: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """``(outgoing, incoming)`` links of ``obj_id`` as (src, dst, kind)."""
        base = "SELECT l.src, l.dst, l.kind FROM links l JOIN files f ON f.path=l.path AND f.blob=l.blob"
        out = list(self.db.execute(base + " WHERE l.src = ?", (obj_id,)))
        inc = list(self.db.execute(base + " WHERE l.dst = ?", (obj_id,)))
        return out, inc

    def counts(self) -> dict[str, int]:
        """Number of objects per kind in the working tree."""
        return dict(self.db.execute(
            f"SELECT o.kind, count(*) FROM objects o {self._CUR} GROUP BY o.kind"))

    def file_count(self) -> int:
        return self.db.execute("SELECT count(*) FROM files").fetchone()[0]

    def file_meta(self, path: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT p.meta FROM parsed p JOIN files f ON f.path=p.path AND f.blob=p.blob "
            "WHERE p.path=?", (path,)).fetchone()
        return json.loads(row[0]) if row else None

    def diagnostics(self) -> list[Any]:
        """Parse diagnostics of the working tree, sorted by path and line."""
        rows = self.db.execute(
            "SELECT d.path, d.line, d.col, d.code, d.severity, d.message, d.fix FROM diagnostics d "
            "JOIN files f ON f.path=d.path AND f.blob=d.blob ORDER BY d.path, d.line, d.code").fetchall()
        if not rows:
            return []
        from kb.model import Diagnostic, Fix

        return [Diagnostic(path=p, line=ln, col=c, code=code, severity=s, message=m,
                           fix=Fix.from_json(fx) if fx else None)
                for p, ln, c, code, s, m, fx in rows]

    def search(self, text: str) -> list[ObjectRow]:
        """Objects whose ID, title or statement contains ``text`` (case-insensitive)."""
        like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        sql = (f"SELECT o.id, o.kind, o.status, o.title, o.path, o.line, o.data FROM objects o "
               f"{self._CUR} WHERE o.id LIKE ? ESCAPE '\\' OR o.title LIKE ? ESCAPE '\\' "
               f"OR json_extract(o.data, '$.statement') LIKE ? ESCAPE '\\' ORDER BY o.path, o.line")
        return [ObjectRow(*r) for r in self.db.execute(sql, (like, like, like))]

    # -- other snapshots (verify) ---------------------------------------------
    def rows_for(self, snap: Snapshot) -> Iterator[tuple[str, str, ObjectRow]]:
        """(path, blob, row) of every object of ``snap`` (after :meth:`ensure`)."""
        self.ensure(snap)
        for path, blob in snap.files.items():
            for r in self.db.execute(
                "SELECT id, kind, status, title, path, line, data FROM objects "
                "WHERE path=? AND blob=?", (path, blob)):
                yield path, blob, ObjectRow(*r)

    # -- kb's own writes (kb.ops): one file version at a time ---------------------
    def current_blob(self, path: str) -> str | None:
        """The blob id of ``path`` in the working tree as last refreshed, or None."""
        row = self.db.execute("SELECT blob FROM files WHERE path=?", (path,)).fetchone()
        return row[0] if row else None

    def has_parse(self, path: str, blob: str) -> bool:
        return self.db.execute("SELECT 1 FROM parsed WHERE path=? AND blob=?",
                               (path, blob)).fetchone() is not None

    def parse_meta(self, path: str, blob: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT meta FROM parsed WHERE path=? AND blob=?",
                              (path, blob)).fetchone()
        return json.loads(row[0]) if row else None

    def rows_of(self, path: str, blob: str, kind: str | None = None,
                obj_id: str | None = None) -> list[ObjectRow]:
        """Objects of one file version (optionally of one kind / ID), in line order."""
        sql = ("SELECT id, kind, status, title, path, line, data FROM objects "
               "WHERE path=? AND blob=?")
        args: list[Any] = [path, blob]
        if kind:
            sql += " AND kind=?"
            args.append(kind)
        if obj_id is not None:
            sql += " AND id=?"
            args.append(obj_id)
        return [ObjectRow(*r) for r in self.db.execute(sql + " ORDER BY line", args)]

    def extract(self, kind: str, fields: Iterable[str], path: str | None = None,
                blob: str | None = None, fmt: str | None = None) -> list[tuple[Any, ...]]:
        """``(path, id, line, status, title, *fields)`` of every object of ``kind``, light.

        ``fields`` are top-level keys of the object's JSON, read by SQLite
        (scalars as values, lists/dicts as JSON text); no model is built. Of
        one file version when ``path`` and ``blob`` are given, else of the
        indexed working tree (only its files of format ``fmt`` when given:
        they are found without scanning every object); in path and line order.
        """
        cols = "".join(f", json_extract(o.data, '$.{f}')" for f in fields)
        sql = f"SELECT o.path, o.id, o.line, o.status, o.title{cols} "
        if path is not None:
            sql += "FROM objects o WHERE o.path=? AND o.blob=? AND o.kind=?"
            args: tuple[Any, ...] = (path, blob, kind)
        elif fmt is not None:
            sql += ("FROM files f CROSS JOIN objects o ON o.path = f.path AND o.blob = f.blob "
                    "WHERE f.fmt=? AND o.kind=?")
            args = (fmt, kind)
        else:
            sql += f"FROM objects o {self._CUR} WHERE o.kind=?"
            args = (kind,)
        return list(self.db.execute(sql + " ORDER BY o.path, o.line", args))

    def diagnostics_of(self, path: str, blob: str) -> list[Any]:
        """Parse diagnostics of one file version, in line order."""
        from kb.model import Diagnostic, Fix

        rows = self.db.execute(
            "SELECT path, line, col, code, severity, message, fix FROM diagnostics "
            "WHERE path=? AND blob=? ORDER BY line, code", (path, blob))
        return [Diagnostic(path=p, line=ln, col=c, code=code, severity=s, message=m,
                           fix=Fix.from_json(fx) if fx else None)
                for p, ln, c, code, s, m, fx in rows]

    def put(self, path: str, blob: str, result: Any) -> None:
        """Store a :class:`kb.model.ParseResult` of ``path`` at ``blob`` (kept if present).

        kb's write operations store the parse of the text they wrote, so that
        the next refresh (and the pre-commit hook) need not parse it again.
        """
        if self.has_parse(path, blob):
            return
        rows_p, rows_o, rows_l, rows_d = _result_rows(path, blob, result)
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO parsed VALUES (?,?,?,?)", rows_p)
            self.db.executemany("INSERT INTO objects VALUES (?,?,?,?,?,?,?,?)", rows_o)
            self.db.executemany("INSERT INTO links VALUES (?,?,?,?,?)", rows_l)
            self.db.executemany("INSERT INTO diagnostics VALUES (?,?,?,?,?,?,?,?)", rows_d)

    def put_spliced(self, path: str, old_blob: str, new_blob: str, first: int, old_stop: int,
                    new_stop: int, region: Any, meta: dict[str, Any]) -> bool:
        """Store the parse of a spliced version of a ``tree`` file without parsing it all.

        The new version is the old one with lines ``[first, old_stop)``
        (1-based, half-open) replaced by lines ``[first, new_stop)``, whose
        parse is ``region`` (a ParseResult holding exactly the objects and
        diagnostics of those lines, with real line numbers). Objects and
        diagnostics of the old version before the region are copied, those
        after it are shifted by ``new_stop - old_stop`` (``line``,
        ``end_line``, ``anchor_lines`` and fix lines). The caller guarantees
        that the region is parse-independent of its surroundings
        (kb.ops.tree explains when). Returns False, storing nothing, when the
        old version is not in the cache or an ID of the old region is also
        declared outside it (its links could not be told apart).
        """
        if self.has_parse(path, new_blob):
            return True
        if not self.has_parse(path, old_blob):
            return False
        d = new_stop - old_stop
        args = {"p": path, "ob": old_blob, "nb": new_blob, "first": first, "stop": old_stop, "d": d}
        inner = sorted({i for (i,) in self.db.execute(
            "SELECT id FROM objects WHERE path=:p AND blob=:ob AND line >= :first AND line < :stop",
            args)})
        marks = ",".join("?" * len(inner))
        if inner and self.db.execute(
                f"SELECT 1 FROM objects WHERE path=? AND blob=? AND id IN ({marks}) "
                "AND (line < ? OR line >= ?) LIMIT 1",
                (path, old_blob, *inner, first, old_stop)).fetchone():
            return False
        shifted = "data" if not d else (
            "json_set(data, '$.line', line + :d, '$.end_line', json_extract(data, '$.end_line') + :d, "
            "'$.anchor_lines', json((SELECT json_group_object(key, value + :d) "
            "FROM json_each(data, '$.anchor_lines'))))")
        rows_p, rows_o, rows_l, rows_d = _result_rows(path, new_blob, region)
        rows_p = [(path, new_blob, "tree", json.dumps(meta, ensure_ascii=False, default=str))]
        cols = "path, :nb, id, kind, status, title"
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO parsed VALUES (?,?,?,?)", rows_p)
            self.db.execute(f"INSERT INTO objects SELECT {cols}, line, data FROM objects "
                            "WHERE path=:p AND blob=:ob AND line < :first", args)
            self.db.execute(f"INSERT INTO objects SELECT {cols}, line + :d, {shifted} FROM objects "
                            "WHERE path=:p AND blob=:ob AND line >= :stop", args)
            # Links belong to their source object; no ID of the region is declared outside it.
            self.db.execute(
                "INSERT INTO links SELECT path, ?, src, dst, kind FROM links "
                f"WHERE path=? AND blob=? AND src NOT IN ({marks})",
                (new_blob, path, old_blob, *inner))
            self.db.execute(
                "INSERT INTO diagnostics SELECT path, :nb, line, col, code, severity, message, fix "
                "FROM diagnostics WHERE path=:p AND blob=:ob AND line < :first", args)
            self.db.execute(
                "INSERT INTO diagnostics SELECT path, :nb, line + :d, col, code, severity, message, "
                "CASE WHEN fix IS NOT NULL AND :d THEN json_set(fix, '$.line', "
                "json_extract(fix, '$.line') + :d) ELSE fix END "
                "FROM diagnostics WHERE path=:p AND blob=:ob AND line >= :stop", args)
            self.db.executemany("INSERT INTO objects VALUES (?,?,?,?,?,?,?,?)", rows_o)
            self.db.executemany("INSERT INTO links VALUES (?,?,?,?,?)", rows_l)
            self.db.executemany("INSERT INTO diagnostics VALUES (?,?,?,?,?,?,?,?)", rows_d)
        return True


def _object_json(obj: Any) -> str:
    """An object's JSON for the ``objects`` table: every field but entry bodies
    (commands that need an entry's text read the card)."""
    if not getattr(obj, "entries", None):
        return obj.to_json()
    from kb.model import json_default

    fields = dict(obj.__dict__)
    fields["entries"] = [{k: v for k, v in e.__dict__.items() if k != "text"} for e in obj.entries]
    return json.dumps(fields, default=json_default, ensure_ascii=False, separators=(",", ":"))


def _result_rows(path: str, blob: str, res: Any) -> "Rows":
    """Table rows of one ParseResult (what :meth:`Index.ensure` stores for a parse)."""
    rows_p = [(path, blob, res.kind, json.dumps(res.meta, ensure_ascii=False, default=str))]
    rows_o, rows_l, rows_d = [], [], []
    for obj in res.objects:
        data_json = _object_json(obj)
        rows_o.append((path, blob, obj.id, obj.kind, obj.status, obj.title, obj.line, data_json))
        for src, dst, kind in links_of(obj):
            rows_l.append((path, blob, src, dst, kind))
    for d in res.diagnostics:
        rows_d.append((path, blob, d.line, d.col, d.code, d.severity, d.message,
                       d.fix.to_json() if d.fix else None))
    return rows_p, rows_o, rows_l, rows_d


#: Below this many files one process parses them; above, a worker per core.
PARALLEL_MIN = 400
BATCH = 250

Rows = tuple[list[tuple], list[tuple], list[tuple], list[tuple]]
_WORK: tuple[Any, dict[str, str], dict[str, str]] | None = None  # (config, blobs, formats) in workers


def _rows(cfg: Any, items: list[tuple[str, str, str | None, bytes]]) -> Rows:
    """Parse (path, blob, fmt, bytes) items into table rows (in a worker or not)."""
    from kb.parse import parse_file

    out: Rows = ([], [], [], [])
    for p, blob, fmt, data in items:
        for table, rows in zip(out, _result_rows(p, blob, parse_file(p, data, cfg, fmt))):
            table.extend(rows)
    return out


def _worker_disk(args: tuple[str, list[str]]) -> Rows:
    """Worker: read working-tree files under ``root`` and parse them."""
    root, paths = args
    cfg, blobs, fmts = _WORK  # type: ignore[misc]
    items = []
    for p in paths:
        try:
            items.append((p, blobs[p], fmts.get(p), (Path(root) / p).read_bytes()))
        except OSError:
            continue
    return _rows(cfg, items)


def _worker_bytes(items: list[tuple[str, str, str | None, bytes]]) -> Rows:
    cfg = _WORK[0]  # type: ignore[index]
    return _rows(cfg, items)


def _parse_batches(k: KnowledgeBase, snap: Snapshot, missing: list[str]) -> Iterator[Rows]:
    """Parse ``missing`` paths of ``snap`` in batches; in parallel when there are many.

    Workers are forked (Linux) so they inherit the imported parser; each batch
    comes back as table rows, inserted by the caller, which keeps memory flat.
    """
    import os

    global _WORK
    batches = [missing[i:i + BATCH] for i in range(0, len(missing), BATCH)]
    workers = min(os.cpu_count() or 1, 4)
    parallel = len(missing) >= PARALLEL_MIN and workers > 1 and _can_fork()
    if not parallel:
        for batch in batches:
            contents = snap.read(batch)
            yield _rows(k.config, [(p, snap.files[p], snap.formats.get(p), contents[p])
                                   for p in batch if p in contents])
        return
    import multiprocessing

    _WORK = (k.config, snap.files, snap.formats)
    ctx = multiprocessing.get_context("fork")
    def tasks() -> Iterator[tuple[Any, Any]]:
        for batch in batches:
            if snap.kind == "worktree":
                yield _worker_disk, (str(k.root), batch)
            else:
                contents = snap.read(batch)
                yield _worker_bytes, [(p, snap.files[p], snap.formats.get(p), contents[p])
                                      for p in batch if p in contents]

    try:
        with ctx.Pool(workers) as pool:
            # A bounded window of batches in flight: results wait for the
            # parent's inserts, so an unbounded queue would hold the whole KB.
            window: list[Any] = []
            for fn, arg in tasks():
                window.append(pool.apply_async(fn, (arg,)))
                if len(window) >= 2 * workers:
                    yield window.pop(0).get()
            for res in window:
                yield res.get()
    finally:
        _WORK = None


def _rows_and_rules(cfg: Any, items: list[tuple[str, str, str | None, bytes]],
                    rules: bool) -> tuple[Rows, list[tuple]]:
    """:func:`_rows`, plus the per-file rule results of each file when ``rules``."""
    if not rules:
        return _rows(cfg, items), []
    from kb.checks.file_results import rule_rows

    out: Rows = ([], [], [], [])
    found: list[tuple] = []
    for item in items:
        one = _rows(cfg, [item])
        for table, rows in zip(out, one):
            table.extend(rows)
        p, blob, fmt, data = item
        found.extend(rule_rows(cfg, p, blob, one[0][0][2] if one[0] else fmt, one[1], data))
    return out, found


def _worker_versions(args: tuple[list[tuple[str, str, str | None, bytes]], bool]) -> tuple[Rows, list[tuple]]:
    return _rows_and_rules(_WORK[0], *args)  # type: ignore[index]


def _version_batches(k: KnowledgeBase, items: list[tuple[str, str, str]],
                     rules: bool = False) -> Iterator[tuple[Rows, list[tuple]]]:
    """Parse ``(path, blob, fmt)`` items read from git in batches (:func:`_parse_batches`
    for many versions of a path): in forked workers when there are many, the
    parent reading the next batch's blobs while they parse. Yields each batch's
    rows and (``rules``) its per-file rule results."""
    import os

    global _WORK

    def batches() -> Iterator[list[tuple[str, str, str | None, bytes]]]:
        # Large files (tree.md) alone in their batch, so that workers share them out.
        big = [it for it in items if it[2] == "tree"]
        rest = [it for it in items if it[2] != "tree"]
        groups = [[it] for it in big] + [rest[i:i + BATCH] for i in range(0, len(rest), BATCH)]
        for group in groups:
            data = git.read_blobs([b for _, b, _ in group], k.top)
            yield [(p, b, f, data[b]) for p, b, f in group if b in data]

    workers = min(os.cpu_count() or 1, 4)
    if not (len(items) >= 8 and workers > 1 and _can_fork()):
        for batch in batches():
            yield _rows_and_rules(k.config, batch, rules)
        return
    import multiprocessing

    _WORK = (k.config, {}, {})
    ctx = multiprocessing.get_context("fork")
    try:
        with ctx.Pool(workers) as pool:
            window: list[Any] = []
            for batch in batches():
                window.append(pool.apply_async(_worker_versions, ((batch, rules),)))
                if len(window) >= 2 * workers:
                    yield window.pop(0).get()
            for res in window:
                yield res.get()
    finally:
        _WORK = None


def _can_fork() -> bool:
    import multiprocessing
    import os

    return "fork" in multiprocessing.get_all_start_methods() and not os.environ.get("KB_NO_PARALLEL")


def links_of(obj: Any) -> list[tuple[str, str, str]]:
    """The links an object declares: (its id, other id, kind)."""
    out = []
    fields = obj.__dict__  # a model's fields; getattr on a missing one is slow
    for fld, kind in _LINK_FIELDS.items():
        v = fields.get(fld)
        if not v:
            continue
        if isinstance(v, str):
            out.append((obj.id, v, kind))
        else:
            out.extend((obj.id, x, kind) for x in v)
    return out
