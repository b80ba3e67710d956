"""The index: ``.kb/index.sqlite``, a cache keyed by git blob id (DESIGN.md §6).

Tables (schema version :data:`SCHEMA_VERSION`; any other version, or a change
of ``kb.toml`` or of kb's version, rebuilds the cache from scratch):

- ``parsed(path, blob, fmt, meta, source, nobj)`` — one row per parsed file
  version; ``source`` is the blob id of the bytes actually parsed and ``nobj``
  the number of its ``objects`` rows (the check on each parse: a parse whose
  source is not its blob, or whose object count does not match, is never
  trusted and is parsed again);
- ``objects(path, blob, id, kind, status, title, line, data)`` — ``data`` is
  the object's JSON (``kb.model`` ``to_json``);
- ``links(path, blob, src, dst, kind)`` — parent/child/evidence/depends/…;
- ``diagnostics(path, blob, line, col, code, severity, message, fix)``;
- ``files(path, blob, fmt)`` — the working-tree snapshot last indexed;
- ``stale(path, blob, since)`` — parses the working tree stopped using at
  ``since`` (Unix seconds), forgotten :data:`STALE_SECONDS` later (a racing
  reader of another snapshot may still be reading them);
- ``forgets(n)`` — one row: a random number when the cache is made, plus one
  each time parses are forgotten; ``parsed_runs(digest, forgets)`` — digests of
  runs of a snapshot's files (:func:`kb.digests.file_runs`) whose every version
  had a stored parse when ``forgets`` was ``n`` (a marker of another ``n`` says
  nothing, one written into a cache made since among them):
  :func:`kb.index_facts.unparsed_runs` looks only at the other runs;
- ``kb_check_kv(key, value)``, ``kb_check_files(path, blob)``,
  ``kb_check_diags(path, blob, line, col, code, severity, message, fix)`` —
  ``kb verify``'s results (:mod:`kb.index_results`).

The SQL over these tables lives in the index layer: this module,
:mod:`kb.index_facts` (what the rules read of a snapshot) and
:mod:`kb.index_results` (the verify results).

Only blobs not yet in ``parsed`` are read and parsed, so an unchanged KB
re-indexes in milliseconds. WAL mode and a busy timeout let hooks and racing
agents open it at once. Deleting ``.kb/`` loses nothing.

Concurrency (issue 11): every write is one ``BEGIN IMMEDIATE`` transaction
that re-reads what it depends on, stores a parse by replacing the rows of its
(path, blob) (never appending), and a refresh moves the working-tree snapshot
in the same transaction, so a reader (WAL) sees the index before or after a
refresh, never half of one. The schema is created or replaced inside such a
transaction too. A cache that cannot be used (no permission, not a file, no
locking, corrupt) is rebuilt, or kb works from an in-memory index; either
way one note is queued for the CLI (:func:`take_notes`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import kb
from kb.fileio import read_regular
from kb.index_rows import Part, Rows, parse_batches, result_rows, rules_within, version_batches
from kb.repo import KnowledgeBase, Snapshot, worktree_snapshot

SCHEMA_VERSION = 6

#: SQLite page size of a new cache (bytes).
PAGE_SIZE = 16384

#: Seconds a parse the working tree stopped using is kept for racing readers.
STALE_SECONDS = 600.0

_TABLES = ("meta", "parsed", "objects", "links", "diagnostics", "files", "stale",
           "forgets", "parsed_runs", "kb_check_kv", "kb_check_files", "kb_check_diags")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE parsed (path TEXT NOT NULL, blob TEXT NOT NULL, fmt TEXT NOT NULL,
                     meta TEXT NOT NULL, source TEXT NOT NULL, nobj INTEGER NOT NULL,
                     PRIMARY KEY (path, blob));
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
CREATE TABLE stale (path TEXT NOT NULL, blob TEXT NOT NULL, since REAL NOT NULL,
                    PRIMARY KEY (path, blob));
CREATE TABLE forgets (n INTEGER NOT NULL);
INSERT INTO forgets VALUES (random() & 4611686018427387903);
CREATE TABLE parsed_runs (digest BLOB PRIMARY KEY, forgets INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE kb_check_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE kb_check_files (path TEXT NOT NULL, blob TEXT NOT NULL, PRIMARY KEY (path, blob));
CREATE TABLE kb_check_diags (path TEXT NOT NULL, blob TEXT NOT NULL, line INTEGER NOT NULL,
                             col INTEGER NOT NULL, code TEXT NOT NULL, severity TEXT NOT NULL,
                             message TEXT NOT NULL, fix TEXT);
CREATE INDEX kb_check_diags_pb ON kb_check_diags (path, blob);
"""

#: A parse that may be used: its check holds (see the module docstring).
_TRUSTED = "p.source = p.blob AND p.nobj = (SELECT count(*) FROM objects o WHERE o.path = p.path AND o.blob = p.blob)"

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
    #: git blob id of the file version the object was read from (what ``--expect``
    #: takes); set by the working-tree reads (objects, get, search).
    blob: str | None = None

    @classmethod
    def many(cls, rows: Iterable[tuple[Any, ...]]) -> list["ObjectRow"]:
        """Rows from ``SELECT id, kind, status, title, path, line, data, blob`` tuples.

        The frozen dataclass's ``__init__`` sets each field through
        ``object.__setattr__`` (2 µs a row); a listing of 100,000 objects fills
        each instance's ``__dict__`` at once instead (same values, same class).
        """
        names = ("id", "kind", "status", "title", "path", "line", "data", "blob")
        new = object.__new__
        out = []
        for r in rows:
            o = new(cls)
            o.__dict__.update(zip(names, r))
            out.append(o)
        return out

    def fields(self) -> dict[str, Any]:
        """The object's fields: its ``data`` JSON (the model's ``to_json`` form) parsed."""
        return json.loads(self.data)

    def model(self) -> Any:
        """The object as its :mod:`kb.model` class (:data:`kb.model.MODEL_BY_KIND` by ``kind``)."""
        from kb.model import MODEL_BY_KIND

        return MODEL_BY_KIND[self.kind].from_json(self.data)


def _preload_parsers() -> None:
    from kb.parse import preload

    preload()


def _config_key(k: KnowledgeBase) -> str:
    try:
        raw = read_regular(k.root / "kb.toml")
    except OSError:
        raw = b""
    return hashlib.sha1(raw + kb.__version__.encode()).hexdigest()


#: Notes for the user (the CLI prints each once on stderr; the library never prints).
_NOTES: list[str] = []


def note(message: str) -> None:
    """Queue ``message`` for the user once (repeats are dropped)."""
    if message not in _NOTES:
        _NOTES.append(message)


def take_notes() -> list[str]:
    """The queued notes, in order; the queue is emptied."""
    out = list(_NOTES)
    _NOTES.clear()
    return out


class CacheUnusable(Exception):
    """The on-disk cache cannot be used (the reason is the message)."""


class Index:
    """The SQLite cache of one KB. Use as a context manager or call ``close()``.

    ``memory`` is True when the on-disk cache could not be used and this
    index lives in memory (parsed again by every process).
    """

    def __init__(self, k: KnowledgeBase, path: Path | None = None) -> None:
        self.kb = k
        self.path = path or (k.root / ".kb" / "index.sqlite")
        self.rebuilt = False
        self.memory = False
        #: Tree versions derived in memory and not stored yet (:meth:`put_derived`),
        #: ``(path, blob) -> put_spliced arguments``, in the order they were derived.
        self._pending: dict[tuple[str, str], tuple[Any, ...]] = {}
        #: The ``forgets`` count a check read first (:func:`kb.index_facts.unparsed_runs`),
        #: None before: the verify results it computed are stored only into the cache
        #: it read them from (:func:`kb.index_results.put_snapshot`).
        self.generation: int | None = None
        #: The working tree's symlinks at folders of the layout, as the last refresh of
        #: the whole KB listed them (:attr:`kb.repo.Snapshot.folder_links`; KB005).
        self.folder_links: dict[str, str] = {}
        self.db = self._open()

    @property
    def db(self) -> sqlite3.Connection:
        """The SQLite connection, with every version held by :meth:`put_derived` stored
        first: a reader of the rows sees every version it was told exists."""
        if self._pending:
            self.store_derived()
        return self._conn

    @db.setter
    def db(self, conn: sqlite3.Connection) -> None:
        """Use ``conn`` from now on (opening, a fallback to memory, :meth:`resume`)."""
        self._conn = conn

    def connection_for(self, *versions: tuple[str, str]) -> sqlite3.Connection:
        """The connection for a reader of ``versions`` (``(path, blob)`` pairs) alone:
        :attr:`db` when one of them is held by :meth:`put_derived` (stored first),
        else the connection as it is (the others stay held)."""
        if self._pending and any(v in self._pending for v in versions):
            return self.db
        return self._conn

    @property
    def conn(self) -> sqlite3.Connection:
        """The SQLite connection as it is: versions held by :meth:`put_derived` are not
        in it. For readers that get those versions' rows elsewhere (a range check's
        light rows, :class:`kb.checks.facts.light_versions`) or read other tables."""
        return self._conn

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the SQLite connection; the index is unusable afterwards."""
        self._conn.close()

    def suspend(self) -> None:
        """Close the SQLite connection until :meth:`resume` (the on-disk cache only).

        Around a fork: a child must not use a connection open before the fork, and its
        own connection is safe only when the process held none at the fork (SQLite's
        file locks belong to the process). Temporary tables go with the connection;
        a :class:`kb.index_facts.SnapshotTable` makes its own again."""
        if self.memory:
            raise ValueError("an in-memory index cannot be reopened")
        self._conn.close()

    def resume(self) -> None:
        """A new connection to the cache file after :meth:`suspend` (as on opening: an
        in-memory index, with a note, if the file can no longer be used)."""
        self.db = self._open()

    # -- opening -------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        """The on-disk cache, rebuilt once if damaged; else an in-memory index."""
        try:
            return self._open_disk()
        except (CacheUnusable, OSError, sqlite3.Error) as exc:
            reason = str(exc) or type(exc).__name__
            damaged = isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)
        try:
            # Damaged (not a database, malformed): rebuilt from scratch, once.
            if damaged and self._remove_damaged():
                db = self._open_disk()
                note(f"kb: note: the index cache {self._shown()} was damaged ({reason}); rebuilt it")
                return db
        except (CacheUnusable, OSError, sqlite3.Error) as exc2:
            reason = str(exc2) or type(exc2).__name__
        return self._to_memory(reason)

    def _shown(self) -> str:
        try:
            return self.path.relative_to(self.kb.root).as_posix()
        except ValueError:
            return str(self.path)

    def _to_memory(self, reason: str) -> sqlite3.Connection:
        note(f"kb: note: the index cache {self._shown()} cannot be used ({reason}); "
             "working from an in-memory index (delete it, or fix its permissions, to cache again)")
        self.memory = True
        self.rebuilt = True
        db = sqlite3.connect(":memory:")
        _create(db, {"schema": str(SCHEMA_VERSION), "config": _config_key(self.kb)})
        return db

    def _open_disk(self) -> sqlite3.Connection:
        """Open (creating or replacing the schema of) the on-disk cache.

        Raises CacheUnusable for a cache kb must not touch (a folder or
        special file where the database belongs), OSError / sqlite3.Error
        for one that cannot be opened or read.
        """
        folder = self.path.parent
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise CacheUnusable(f"{self._shown_parent()} is not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            f = Path(str(self.path) + suffix)
            if f.is_symlink() or (f.exists() and not f.is_file()):
                raise CacheUnusable(f"{f.name} is not a regular file")
        gi = folder / ".gitignore"
        if not gi.exists():
            # The cache is never committed, even where .gitignore lacks `.kb/`.
            try:
                gi.write_text("*\n", encoding="utf-8")
            except OSError:
                pass  # a read-only .kb/ is reported by the database itself
        db = sqlite3.connect(self.path, timeout=30)
        try:
            # A new cache gets pages of 16 KiB (a no-op on an existing one): rows
            # of whole objects' JSON fill a 4 KiB page quickly, and a cold index
            # writes, checkpoints and indexes a third fewer bytes in fewer calls.
            db.execute(f"PRAGMA page_size={PAGE_SIZE}")
            mode = db.execute("PRAGMA journal_mode=WAL").fetchone()
            if not mode or str(mode[0]).lower() != "wal":
                # Without WAL's shared-memory locking racing readers could see a
                # write half done: not a cache kb can share between processes.
                raise CacheUnusable(f"the file system does not support SQLite's WAL ({mode and mode[0]})")
            # A cache: a crash may lose it (it is rebuilt), never corrupt the KB.
            db.execute("PRAGMA synchronous=OFF")
            want = {"schema": str(SCHEMA_VERSION), "config": _config_key(self.kb)}
            if _meta(db) != want:
                with _writing(db):
                    # Re-read under the write lock: a racing process may have built it.
                    if _meta(db) != want:
                        _create(db, want, in_transaction=True)
                        self.rebuilt = True
            db.execute("SELECT count(*) FROM files").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def _shown_parent(self) -> str:
        try:
            return self.path.parent.relative_to(self.kb.root).as_posix() + "/"
        except ValueError:
            return str(self.path.parent)

    def _remove_damaged(self) -> bool:
        """Delete a damaged cache (one process at a time); True when removed or gone."""
        from filelock import FileLock, Timeout

        try:
            with FileLock(str(self.path) + ".lock", timeout=30):
                if _healthy(self.path):
                    return True  # another process rebuilt it meanwhile
                for suffix in ("", "-wal", "-shm"):
                    Path(str(self.path) + suffix).unlink(missing_ok=True)
                return True
        except (Timeout, OSError):
            return False

    def _fallback(self, exc: BaseException) -> None:
        """Continue in memory after ``exc`` made the on-disk cache unusable mid-way."""
        try:
            self._conn.close()
        except sqlite3.Error:
            pass
        self.db = self._to_memory(str(exc) or type(exc).__name__)

    # -- filling -------------------------------------------------------------
    def ensure(self, snap: Snapshot, known: dict[str, str] | None = None) -> int:
        """Parse and store every (path, blob) of ``snap`` not in the cache yet.

        ``known`` (path -> blob) are versions known to be parsed (the indexed
        working tree: every ``files`` row has its parse), not looked up again.
        A working-tree file that changed after ``snap`` was taken is stored
        (and ``snap`` updated) under the blob id of the bytes parsed.
        Returns the number of files parsed.
        """
        if not self._missing(snap, known):
            return 0
        try:
            with _writing(self._conn):
                return self._ensure_locked(snap, known)
        except sqlite3.Error as exc:
            if self.memory:
                raise
            self._fallback(exc)
            return self.ensure(snap)

    def _missing(self, snap: Snapshot, known: dict[str, str] | None) -> list[str]:
        todo = snap.files if known is None else \
            {p: b for p, b in snap.files.items() if known.get(p) != b}
        if not todo:
            return []
        if len(todo) > 64:
            have = set(self._conn.execute(
                f"SELECT path, blob FROM parsed p WHERE {_TRUSTED}").fetchall())
        else:
            have = {row for p, b in todo.items() for row in self._conn.execute(
                f"SELECT path, blob FROM parsed p WHERE path=? AND blob=? AND {_TRUSTED}", (p, b))}
        return [p for p, b in todo.items() if (p, b) not in have and (p, b) not in self._pending]

    def _ensure_locked(self, snap: Snapshot, known: dict[str, str] | None) -> int:
        """:meth:`ensure` inside a write transaction (what is missing is read again)."""
        missing = self._missing(snap, known)
        # A cold build (no row stored yet): the rows go into tables without their
        # secondary indexes, built once at the end (a third less time than
        # keeping them up to date row by row), and nothing is replaced (each
        # (path, blob) comes once). All in this transaction: a reader sees the
        # indexed tables before or after it.
        cold = bool(missing) and self._empty()
        indexes = self._drop_indexes() if cold else []
        parsed = 0
        for rows in parse_batches(self.kb, snap, missing):
            for path, blob, *_ in rows[0]:
                if snap.files.get(path) != blob:
                    snap.files[path] = blob  # edited since the snapshot: what was parsed
            self._store(rows, replace=not cold)
            parsed += len(rows[0])
        for sql in indexes:
            self._conn.execute(sql)
        return parsed

    def _empty(self) -> bool:
        """Whether no object, link or diagnostic row is stored."""
        return not any(self._conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone()
                       for t in ("objects", "links", "diagnostics"))

    def _drop_indexes(self) -> list[str]:
        """Drop the secondary indexes of the row tables (in the caller's transaction);
        return the statements that create them again."""
        found = self._conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
            "AND tbl_name IN ('objects', 'links', 'diagnostics')").fetchall()
        for name, _ in found:
            self._conn.execute(f'DROP INDEX "{name}"')
        return [sql for _, sql in found]

    def _store(self, rows: "Rows", replace: bool = True) -> None:
        """Store parses, replacing every row of their (path, blob) (inside a transaction;
        ``replace`` False: the caller knows there is none)."""
        rows_p, rows_o, rows_l, rows_d = rows
        # A part of a streamed parse replaces nothing but what its first part names.
        keys = rows.clear if isinstance(rows, Part) else [(p, b) for p, b, *_ in rows_p]
        for table in ("objects", "links", "diagnostics") if replace else ():
            self._conn.executemany(f"DELETE FROM {table} WHERE path=? AND blob=?", keys)
        self._conn.executemany("INSERT OR REPLACE INTO parsed VALUES (?,?,?,?,?,?)", rows_p)
        self._conn.executemany("INSERT INTO objects VALUES (?,?,?,?,?,?,?,?)", rows_o)
        self._conn.executemany("INSERT INTO links VALUES (?,?,?,?,?)", rows_l)
        self._conn.executemany("INSERT INTO diagnostics VALUES (?,?,?,?,?,?,?,?)", rows_d)

    def ensure_versions(self, items: Iterable[tuple[str, str, str]],
                        file_rules: Any = None, read: Any = None,
                        rule_paths: set[str] | None = None, parallel: bool = True) -> int:
        """Parse and store every ``(path, blob, fmt)`` not in the cache yet, read from git.

        Many versions of one path may be given (``verify --range``: every
        tree.md of the range, with the tip's files), so that they are parsed in
        one pass -- in parallel when there are many -- instead of one commit
        at a time. Blobs git lacks are skipped. ``file_rules(config, path, blob,
        fmt, object_rows, data)``, when given, computes the per-file rule results
        of each parse in the workers (``kb_check_diags`` rows,
        :func:`kb.checks.file_results.rule_rows`); they are stored with the
        parse, in the same transaction (:func:`store_file_rows`).
        ``read(items)``, when given, returns ``{blob: bytes}`` for a batch of
        ``(path, blob, fmt)`` items in place of git's ``cat-file`` (blobs it
        lacks are skipped). ``rule_paths``, when given, limits ``file_rules`` to
        those paths (the others are parsed only, and not marked checked).
        ``parallel`` False parses in this process only (a caller that runs beside
        workers of its own). Returns the number parsed.
        """
        items = list(dict.fromkeys(items))
        if not items:
            return 0
        # Reads only (no temp table): a write here would open an implicit
        # transaction and the BEGIN IMMEDIATE below would fail.
        if len(items) > 64:
            have = set(self._conn.execute(f"SELECT path, blob FROM parsed p WHERE {_TRUSTED}"))
        else:
            have = {row for pth, b, _ in items for row in self._conn.execute(
                f"SELECT path, blob FROM parsed p WHERE path=? AND blob=? AND {_TRUSTED}", (pth, b))}
        missing = [it for it in items if (it[0], it[1]) not in have
                   and (it[0], it[1]) not in self._pending]
        if not missing:
            return 0
        parsed = 0
        if file_rules is not None and rule_paths is not None:
            file_rules = functools.partial(rules_within, file_rules, frozenset(rule_paths))
        with _writing(self._conn):  # one transaction; each parse replaces its (path, blob) rows
            for rows, rules in version_batches(self.kb, missing, file_rules, read, parallel):
                self._store(rows)
                if file_rules is not None:
                    store_file_rows(self._conn, [(r[0], r[1]) for r in rows[0]
                                              if rule_paths is None or r[0] in rule_paths], rules)
                parsed += len(rows[0])
        return parsed

    def refresh(self, only: list[str] | None = None, check: bool = False) -> RefreshStats:
        """Bring the working-tree snapshot up to date (incremental).

        ``only`` (KB-relative files or folders) refreshes just those paths;
        the rest of the indexed snapshot stays as it was last indexed. One
        transaction: a racing reader sees the index before or after it.
        A changed file's cached parse is used only when its check holds;
        ``check`` also checks every unchanged file's (a pass over the whole
        cache: ``kb index`` and ``kb verify`` do it, quick reads do not).
        """
        t0 = time.perf_counter()
        # A new cache parses every file: its parsers are imported while git runs.
        snap = worktree_snapshot(self.kb, only, meanwhile=_preload_parsers if self.rebuilt else None)
        if only is None:
            self.folder_links = snap.folder_links
        try:
            parsed, removed = self._refresh(snap, only, check)
        except sqlite3.Error as exc:
            if self.memory:
                raise
            self._fallback(exc)
            parsed, removed = self._refresh(snap, only, check)
        return RefreshStats(files=len(snap.files), parsed=parsed, removed=removed,
                            seconds=time.perf_counter() - t0, rebuilt=self.rebuilt)

    def _refresh(self, snap: Snapshot, only: list[str] | None, check: bool) -> tuple[int, int]:
        old = self._indexed(only)
        if old == snap.files and not (check and self._untrusted(only)):
            return 0, 0  # nothing to write: no write lock taken
        with _writing(self.db):
            old = self._indexed(only)  # again, under the lock: a racing refresh may have run
            bad = self._untrusted(only) if check else set()
            known = {p: b for p, b in old.items() if p not in bad}
            parsed = self._ensure_locked(snap, known)
            removed = [p for p in old if p not in snap.files]
            changed = [(p, b, snap.formats[p]) for p, b in snap.files.items() if old.get(p) != b]
            self.db.executemany("DELETE FROM files WHERE path=?", [(p,) for p in removed])
            self.db.executemany("INSERT OR REPLACE INTO files VALUES (?,?,?)", changed)
            now = time.time()
            self.db.executemany("INSERT OR IGNORE INTO stale VALUES (?,?,?)",
                                [(p, b, now) for p, b in old.items() if snap.files.get(p) != b])
            self._forget(now - STALE_SECONDS)
        return parsed, len(removed)

    def _untrusted(self, only: list[str] | None) -> set[str]:
        """Indexed working-tree files whose parse fails its check (or is gone)."""
        sql = ("SELECT f.path FROM files f LEFT JOIN parsed p ON p.path = f.path AND p.blob = f.blob "
               f"WHERE p.path IS NULL OR NOT ({_TRUSTED})")
        bad = {p for (p,) in self.db.execute(sql)}
        if only is not None and bad:
            scope = self._indexed(only)
            bad &= set(scope)
        return bad

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
        return Snapshot(kb=self.kb, kind="worktree", files=files, formats=fmts,
                        folder_links=self.folder_links)

    def _forget(self, before: float) -> None:
        """Forget parses the working tree stopped using before ``before`` (Unix
        seconds) and uses no more (inside a transaction)."""
        pairs = self.db.execute(
            "SELECT s.path, s.blob FROM stale s WHERE s.since < ? AND NOT EXISTS "
            "(SELECT 1 FROM files f WHERE f.path = s.path AND f.blob = s.blob)", (before,)).fetchall()
        for table in ("parsed", "objects", "links", "diagnostics"):
            self.db.executemany(f"DELETE FROM {table} WHERE path=? AND blob=?", pairs)
        self.db.execute("DELETE FROM stale WHERE since < ?", (before,))
        if pairs:
            # A run marked parsed whole may have held one of them: every marker is void,
            # and one written by a racing check that read the count before this commit too.
            self.db.execute("UPDATE forgets SET n = n + 1")
            self.db.execute("DELETE FROM parsed_runs")

    # -- reading the working-tree snapshot ------------------------------------
    _CUR = "JOIN files f ON f.path = o.path AND f.blob = o.blob"

    def objects(self, kind: str | None = None, status: str | None = None,
                with_data: bool = True) -> list[ObjectRow]:
        """Objects of the indexed working tree, in path and line order (``with_data``
        False: every row's ``data`` is ``"{}"``, not read)."""
        data = "o.data" if with_data else "'{}'"
        sql = (f"SELECT o.id, o.kind, o.status, o.title, o.path, o.line, {data}, o.blob "
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
        return ObjectRow.many(self.db.execute(sql, args))

    def get(self, obj_id: str) -> list[ObjectRow]:
        """Every object with this ID (more than one means a duplicate)."""
        sql = (f"SELECT o.id, o.kind, o.status, o.title, o.path, o.line, o.data, o.blob FROM objects o "
               f"{self._CUR} WHERE o.id = ? ORDER BY o.path, o.line")
        return [ObjectRow(*r) for r in self.db.execute(sql, (obj_id,))]

    def links(self, obj_id: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
        """``(outgoing, incoming)`` links of ``obj_id`` as (src, dst, kind)."""
        base = "SELECT l.src, l.dst, l.kind FROM links l JOIN files f ON f.path=l.path AND f.blob=l.blob"
        # In file order, then as declared (not in the order the files were parsed).
        out = list(self.db.execute(base + " WHERE l.src = ? ORDER BY l.path, l.rowid", (obj_id,)))
        inc = list(self.db.execute(base + " WHERE l.dst = ? ORDER BY l.path, l.rowid", (obj_id,)))
        return out, inc

    def counts(self) -> dict[str, int]:
        """Number of objects per kind in the working tree."""
        return dict(self.db.execute(
            f"SELECT o.kind, count(*) FROM objects o {self._CUR} GROUP BY o.kind"))

    def file_count(self) -> int:
        """Number of files of the working tree the index knows (as last refreshed)."""
        return self.db.execute("SELECT count(*) FROM files").fetchone()[0]

    def file_meta(self, path: str) -> dict[str, Any] | None:
        """The parse metadata of ``path``'s working-tree version (the parser's ``meta``
        dict: BOM, newline, frontmatter, title), or None when that version has no stored parse."""
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

    def unreadable(self) -> tuple[int, str]:
        """``(files, first)``: how many working-tree files have an error diagnostic,
        and the first as ``path:line CODE`` ("" when none) — for read commands'
        one-line hint that what they list may be incomplete."""
        n, first = self.db.execute(
            "SELECT count(DISTINCT d.path), min(d.path || ':' || d.line || ' ' || d.code) "
            "FROM diagnostics d JOIN files f ON f.path=d.path AND f.blob=d.blob "
            "WHERE d.severity='error'").fetchone()
        return int(n or 0), first or ""

    #: SQLite's longest LIKE pattern, in bytes (SQLITE_MAX_LIKE_PATTERN_LENGTH).
    LIKE_MAX = 50_000

    def search(self, text: str) -> list[ObjectRow]:
        """Objects whose ID, title or statement contains ``text`` (case-insensitive).

        Case-insensitive as SQLite's ``LIKE`` is: ASCII letters fold, every other
        character matches only itself (``É`` does not find ``é``). A text whose pattern
        SQLite's ``LIKE`` refuses (past :data:`LIKE_MAX` bytes) is matched with ``instr``
        on ``lower()`` of both sides, which folds exactly the same letters and takes any
        length (``LIKE`` stays for the rest: twice as fast on 100,000 objects).
        """
        like = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        if len(like.encode("utf-8", "surrogatepass")) <= self.LIKE_MAX:
            where = ("o.id LIKE :p ESCAPE '\\' OR o.title LIKE :p ESCAPE '\\' "
                     "OR json_extract(o.data, '$.statement') LIKE :p ESCAPE '\\'")
        else:
            where = ("instr(lower(o.id), lower(:t)) > 0 OR instr(lower(o.title), lower(:t)) > 0 "
                     "OR instr(lower(json_extract(o.data, '$.statement')), lower(:t)) > 0")
        sql = (f"SELECT o.id, o.kind, o.status, o.title, o.path, o.line, o.data, o.blob FROM objects o "
               f"{self._CUR} WHERE {where} ORDER BY o.path, o.line")
        return [ObjectRow(*r) for r in self.db.execute(sql, {"p": like, "t": text})]

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
        """Whether a trusted parse of ``path`` at ``blob`` is stored (or held by
        :meth:`put_derived`)."""
        if (path, blob) in self._pending:
            return True
        return self._conn.execute(f"SELECT 1 FROM parsed p WHERE path=? AND blob=? AND {_TRUSTED}",
                               (path, blob)).fetchone() is not None

    def parse_meta(self, path: str, blob: str) -> dict[str, Any] | None:
        """The parse metadata stored for ``path`` at blob ``blob`` (trusted or not), or None."""
        held = self._pending.get((path, blob))
        if held is not None:
            return dict(held[-1])
        row = self._conn.execute("SELECT meta FROM parsed WHERE path=? AND blob=?",
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
        db = self.connection_for((path, blob))
        return [ObjectRow(*r) for r in db.execute(sql + " ORDER BY line", args)]

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
        db = self.connection_for((path, blob)) if path is not None else self.db
        return list(db.execute(sql + " ORDER BY o.path, o.line", args))

    def diagnostics_of(self, path: str, blob: str) -> list[Any]:
        """Parse diagnostics of one file version, in line order."""
        from kb.model import Diagnostic, Fix

        rows = self.connection_for((path, blob)).execute(
            "SELECT path, line, col, code, severity, message, fix FROM diagnostics "
            "WHERE path=? AND blob=? ORDER BY line, code", (path, blob))
        return [Diagnostic(path=p, line=ln, col=c, code=code, severity=s, message=m,
                           fix=Fix.from_json(fx) if fx else None)
                for p, ln, c, code, s, m, fx in rows]

    def put(self, path: str, blob: str, result: Any) -> "Rows | None":
        """Store a :class:`kb.model.ParseResult` of ``path`` at ``blob`` (kept if present).

        kb's write operations store the parse of the text they wrote, so that
        the next refresh (and the pre-commit hook) need not parse it again.
        Returns the rows stored (:func:`kb.index_rows.result_rows`), None when the
        version was there already.
        """
        if self.has_parse(path, blob):
            return None
        rows = result_rows(path, blob, result)
        try:
            with _writing(self._conn):
                self._store(rows)
        except sqlite3.Error as exc:
            if self.memory:
                raise
            self._fallback(exc)
            with _writing(self._conn):
                self._store(rows)
        return rows

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
        try:
            with _writing(self._conn):
                return self._splice(path, old_blob, new_blob, first, old_stop, new_stop, region, meta)
        except sqlite3.Error:
            return False  # the caller parses the whole file (put), which falls back if need be

    def _splice(self, path: str, old_blob: str, new_blob: str, first: int, old_stop: int,
                new_stop: int, region: Any, meta: dict[str, Any]) -> bool:
        """:meth:`put_spliced` inside a write transaction."""
        if self.has_parse(path, new_blob):
            return True
        if not self.has_parse(path, old_blob):
            return False
        d = new_stop - old_stop
        args = {"p": path, "ob": old_blob, "nb": new_blob, "first": first, "stop": old_stop, "d": d}
        inner = sorted({i for (i,) in self._conn.execute(
            "SELECT id FROM objects WHERE path=:p AND blob=:ob AND line >= :first AND line < :stop",
            args)})
        marks = ",".join("?" * len(inner))
        if inner and self._conn.execute(
                f"SELECT 1 FROM objects WHERE path=? AND blob=? AND id IN ({marks}) "
                "AND (line < ? OR line >= ?) LIMIT 1",
                (path, old_blob, *inner, first, old_stop)).fetchone():
            return False
        shifted = "data" if not d else (
            "json_set(data, '$.line', line + :d, '$.end_line', json_extract(data, '$.end_line') + :d, "
            "'$.anchor_lines', json((SELECT json_group_object(key, value + :d) "
            "FROM json_each(data, '$.anchor_lines'))))")
        _, rows_o, rows_l, rows_d = result_rows(path, new_blob, region)
        meta_json = json.dumps(meta, ensure_ascii=False, default=str)
        cols = "path, :nb, id, kind, status, title"
        # Inside the caller's transaction; replace, never append.
        for table in ("objects", "links", "diagnostics"):
            self._conn.execute(f"DELETE FROM {table} WHERE path=? AND blob=?", (path, new_blob))
        self._conn.execute(f"INSERT INTO objects SELECT {cols}, line, data FROM objects "
                        "WHERE path=:p AND blob=:ob AND line < :first", args)
        self._conn.execute(f"INSERT INTO objects SELECT {cols}, line + :d, {shifted} FROM objects "
                        "WHERE path=:p AND blob=:ob AND line >= :stop", args)
        # Links belong to their source object; no ID of the region is declared outside it.
        self._conn.execute(
            "INSERT INTO links SELECT path, ?, src, dst, kind FROM links "
            f"WHERE path=? AND blob=? AND src NOT IN ({marks})",
            (new_blob, path, old_blob, *inner))
        self._conn.execute(
            "INSERT INTO diagnostics SELECT path, :nb, line, col, code, severity, message, fix "
            "FROM diagnostics WHERE path=:p AND blob=:ob AND line < :first", args)
        self._conn.execute(
            "INSERT INTO diagnostics SELECT path, :nb, line + :d, col, code, severity, message, "
            "CASE WHEN fix IS NOT NULL AND :d THEN json_set(fix, '$.line', "
            "json_extract(fix, '$.line') + :d) ELSE fix END "
            "FROM diagnostics WHERE path=:p AND blob=:ob AND line >= :stop", args)
        self._conn.executemany("INSERT INTO objects VALUES (?,?,?,?,?,?,?,?)", rows_o)
        self._conn.executemany("INSERT INTO links VALUES (?,?,?,?,?)", rows_l)
        self._conn.executemany("INSERT INTO diagnostics VALUES (?,?,?,?,?,?,?,?)", rows_d)
        nobj = self._conn.execute("SELECT count(*) FROM objects WHERE path=? AND blob=?",
                               (path, new_blob)).fetchone()[0]
        self._conn.execute("INSERT OR REPLACE INTO parsed VALUES (?,?,?,?,?,?)",
                        (path, new_blob, "tree", meta_json, new_blob, nobj))
        return True

    def put_derived(self, path: str, old_blob: str, new_blob: str, first: int, old_stop: int,
                    new_stop: int, region: Any, meta: dict[str, Any]) -> None:
        """Hold a spliced version of a tree file in memory: what :meth:`put_spliced`
        would store (same arguments), stored only when a reader needs its rows.

        ``kb verify --range`` derives each tree.md version of the range from the one
        before; copying ~5,000 unchanged hypotheses' rows per version was most of
        that (issue 18), and its history rules read a version through what the
        caller knows of it (:class:`kb.checks.facts.light_versions`) and
        :meth:`has_parse` and :meth:`parse_meta`, which answer for a held version.
        Anything else that reads the rows through :attr:`db` stores every held
        version first (:meth:`store_derived`), in the order they were derived, so
        it sees exactly what :meth:`put_spliced` would have stored. The caller
        guarantees what :meth:`put_spliced` checks: ``old_blob`` is stored or held,
        and no ID of the old region is declared outside it. Held versions are lost
        with the index object (never written unless read)."""
        self._pending[(path, new_blob)] = (old_blob, first, old_stop, new_stop, region, meta)

    def derived(self, path: str, blob: str) -> bool:
        """Whether ``path`` at ``blob`` is held by :meth:`put_derived` (not stored yet)."""
        return (path, blob) in self._pending

    def held(self) -> list[tuple[str, str]]:
        """``(path, blob)`` of every version :meth:`put_derived` holds (not stored yet)."""
        return list(self._pending)

    def store_derived(self) -> None:
        """Store every version held by :meth:`put_derived`, each after the one it was
        derived from; a version that cannot be spliced (its source was lost from
        the cache meanwhile) is parsed in full from git."""
        held, self._pending = self._pending, {}
        for (path, blob), (old, first, old_stop, new_stop, region, meta) in held.items():
            if not self.put_spliced(path, old, blob, first, old_stop, new_stop, region, meta):
                self.ensure_versions([(path, blob, "tree")])

    # -- queries of the card writers (kb.ops.workspace, kb.ops.verdict) -------------------
    def proposition_paths(self) -> list[str]:
        """KB paths of the current files that declare a proposition (distinct, any order)."""
        rows = self.db.execute(
            "SELECT DISTINCT o.path FROM objects o JOIN files f ON f.path=o.path AND f.blob=o.blob "
            "WHERE o.kind='proposition'")
        return [path for (path,) in rows]

    def judge_problem_ids(self, pid: str) -> list[str]:
        """IDs of the current problems whose ``判断命题`` anchor is exactly ``pid``."""
        rows = self.db.execute(
            "SELECT o.id FROM objects o JOIN files f ON f.path=o.path AND f.blob=o.blob "
            "WHERE o.kind='problem' AND (json_extract(o.data, '$.anchors.\"判断命题\"') = ?)",
            (pid,)).fetchall()
        return [r[0] for r in rows]


def _meta(db: sqlite3.Connection) -> dict[str, str]:
    """The cache's meta table ({} when there is none yet)."""
    try:
        return dict(db.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return {}
        raise


def _create(db: sqlite3.Connection, meta: dict[str, str], in_transaction: bool = False) -> None:
    """(Re)create every table and write ``meta``; in the caller's write transaction
    when ``in_transaction`` (racing processes then never see a partial schema)."""
    stmts = [f"DROP TABLE IF EXISTS {t}" for t in _TABLES]
    stmts += [x.strip() for x in _SCHEMA.split(";") if x.strip()]
    if not in_transaction:
        with _writing(db):
            _create(db, meta, in_transaction=True)
        return
    for stmt in stmts:
        db.execute(stmt)
    db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())


class _writing:
    """``with _writing(db):`` one ``BEGIN IMMEDIATE`` transaction (committed, or
    rolled back on an exception): the write lock is taken before anything is
    read, so what the transaction read is still true when it commits."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is None:
            self.db.commit()
        else:
            try:
                self.db.rollback()
            except sqlite3.Error:
                pass


def _healthy(path: Path) -> bool:
    """Whether the database at ``path`` opens and passes a quick check."""
    try:
        db = sqlite3.connect(path, timeout=30)
        try:
            return db.execute("PRAGMA quick_check").fetchone()[0] == "ok" and bool(_meta(db))
        finally:
            db.close()
    except sqlite3.Error:
        return False


# -- the error boundary ----------------------------------------------------------
def _mapped(method: Any) -> Any:
    """``method`` with sqlite3 errors raised as :class:`kb.errors.EnvironmentError_`."""
    import functools

    @functools.wraps(method)
    def call(self: Index, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            from kb.errors import EnvironmentError_

            raise EnvironmentError_(
                f"the index cache {self._shown()} failed ({exc}); delete the .kb/ folder "
                "(it is rebuilt from git) and run the command again") from None
    return call


#: Index methods other layers call: a sqlite3 error they meet leaves as a kb error.
#: (``has_parse`` and the private methods raise sqlite3 errors to the index's own
#: fallbacks, which catch them.)
for _name in ("ensure", "ensure_versions", "refresh", "worktree", "objects", "get", "links",
              "counts", "file_count", "file_meta", "diagnostics", "search", "current_blob",
              "parse_meta", "rows_of", "extract", "diagnostics_of", "put"):
    setattr(Index, _name, _mapped(getattr(Index, _name)))
del _name


def store_file_rows(db: sqlite3.Connection, files: list[tuple[str, str]], rows: list[tuple]) -> None:
    """Store the per-file rule results of ``files`` ((path, blob) pairs): ``rows`` are
    ``kb_check_diags`` rows (:mod:`kb.index_results`), replacing any the versions had.
    Runs in the caller's transaction (:meth:`Index.ensure_versions` stores them with
    the parses; :func:`kb.index_results.store_file_results` in one of their own);
    sqlite3 errors go to that caller."""
    # a file version whose parse was dropped and is read again may have results already
    db.executemany("DELETE FROM kb_check_diags WHERE path=? AND blob=?", files)
    db.executemany("INSERT OR IGNORE INTO kb_check_files VALUES (?, ?)", files)
    db.executemany("INSERT INTO kb_check_diags VALUES (?,?,?,?,?,?,?,?)", rows)
