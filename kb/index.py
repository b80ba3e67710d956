"""The index: ``.kb/index.sqlite``, a cache keyed by git blob id (DESIGN.md §6).

Tables (schema version :data:`SCHEMA_VERSION`; any other version, or a change
of ``kb.toml`` or of kb's version, rebuilds the cache from scratch):

- ``parsed(path, blob, fmt, meta)`` — one row per parsed file version;
- ``objects(path, blob, id, kind, status, title, line, data)`` — ``data`` is
  the object's JSON (pydantic);
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

        return MODEL_BY_KIND[self.kind].model_validate_json(self.data)


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
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        want = {"schema": str(SCHEMA_VERSION), "config": _config_key(self.kb)}
        try:
            have = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError:
            have = {}
        if any(have.get(k) != v for k, v in want.items()):
            db.close()
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            db = sqlite3.connect(self.path, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            with db:
                db.executescript(_SCHEMA)
                db.executemany("INSERT INTO meta VALUES (?, ?)", want.items())
            self.rebuilt = True
        return db

    # -- filling -------------------------------------------------------------
    def ensure(self, snap: Snapshot) -> int:
        """Parse and store every (path, blob) of ``snap`` not in the cache yet.

        Returns the number of files parsed.
        """
        have = set(self.db.execute("SELECT path, blob FROM parsed").fetchall()) if len(snap.files) > 64 \
            else {row for p, b in snap.files.items()
                  for row in self.db.execute("SELECT path, blob FROM parsed WHERE path=? AND blob=?", (p, b))}
        missing = [p for p, b in snap.files.items() if (p, b) not in have]
        if not missing:
            return 0
        from kb.parse import parse_file

        contents = snap.read(missing)
        rows_p, rows_o, rows_l, rows_d = [], [], [], []
        cfg = self.kb.config
        for p in missing:
            blob = snap.files[p]
            data = contents.get(p)
            if data is None:
                continue
            res = parse_file(p, data, cfg, snap.formats.get(p))
            rows_p.append((p, blob, res.kind, json.dumps(res.meta, ensure_ascii=False, default=str)))
            for obj in res.objects:
                rows_o.append((p, blob, obj.id, obj.kind, obj.status, obj.title, obj.line,
                               obj.model_dump_json()))
                for src, dst, kind in links_of(obj):
                    rows_l.append((p, blob, src, dst, kind))
            for d in res.diagnostics:
                rows_d.append((p, blob, d.line, d.col, d.code, d.severity, d.message,
                               d.fix.model_dump_json() if d.fix else None))
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO parsed VALUES (?,?,?,?)", rows_p)
            self.db.executemany("INSERT INTO objects VALUES (?,?,?,?,?,?,?,?)", rows_o)
            self.db.executemany("INSERT INTO links VALUES (?,?,?,?,?)", rows_l)
            self.db.executemany("INSERT INTO diagnostics VALUES (?,?,?,?,?,?,?,?)", rows_d)
        return len(rows_p)

    def refresh(self) -> RefreshStats:
        """Bring the working-tree snapshot up to date (incremental)."""
        t0 = time.perf_counter()
        snap = worktree_snapshot(self.kb)
        parsed = self.ensure(snap)
        old = dict(self.db.execute("SELECT path, blob FROM files").fetchall())
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

    def _drop(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Forget cached parses no snapshot in the index refers to any more."""
        pairs = list(pairs)
        for table in ("parsed", "objects", "links", "diagnostics"):
            self.db.executemany(f"DELETE FROM {table} WHERE path=? AND blob=?", pairs)

    # -- reading the working-tree snapshot ------------------------------------
    _CUR = "JOIN files f ON f.path = o.path AND f.blob = o.blob"

    def objects(self, kind: str | None = None, status: str | None = None) -> list[ObjectRow]:
        """Objects of the indexed working tree, in path and line order."""
        sql = f"SELECT o.id, o.kind, o.status, o.title, o.path, o.line, o.data FROM objects o {self._CUR}"
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
        from kb.model import Diagnostic, Fix

        rows = self.db.execute(
            "SELECT d.path, d.line, d.col, d.code, d.severity, d.message, d.fix FROM diagnostics d "
            "JOIN files f ON f.path=d.path AND f.blob=d.blob ORDER BY d.path, d.line, d.code")
        return [Diagnostic(path=p, line=ln, col=c, code=code, severity=s, message=m,
                           fix=Fix.model_validate_json(fx) if fx else None)
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


def links_of(obj: Any) -> list[tuple[str, str, str]]:
    """The links an object declares: (its id, other id, kind)."""
    out = []
    for fld, kind in _LINK_FIELDS.items():
        v = getattr(obj, fld, None)
        if not v:
            continue
        if isinstance(v, str):
            out.append((obj.id, v, kind))
        else:
            out.extend((obj.id, x, kind) for x in v)
    return out
