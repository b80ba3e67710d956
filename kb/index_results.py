"""``kb verify``'s results, stored in the index database (index layer).

The tables are part of :mod:`kb.index`'s schema (one ``SCHEMA_VERSION``; an
index of another version is rebuilt from scratch):

- ``kb_check_files(path, blob)`` — file versions whose per-file rule results
  are stored; ``kb_check_diags(path, blob, line, col, code, severity, message,
  fix)`` — those results (``fix``: JSON ``{"line", "old", "new"}`` or NULL);
- ``kb_check_kv(key, value)`` — ``rules``: the fingerprint of kb's rules the
  stored results were computed with (another fingerprint empties the three
  tables); ``snap:<sha1>``: the results of one whole snapshot (JSON, the few
  most recently stored or used kept); other keys: values a rule keeps
  between runs (the dashboard's rendering).

Everything here is a cache: a write that fails (a locked or read-only
database) only costs speed and is skipped; a read that fails raises
:class:`kb.errors.EnvironmentError_`.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Iterable, Optional

from kb.errors import EnvironmentError_

if TYPE_CHECKING:  # pragma: no cover
    from kb.index import Index
    from kb.index_facts import SnapshotTable

#: Snapshot results kept (HEAD's, the staged states checked since, ...).
KEEP_SNAPSHOTS = 8


def _unreadable(exc: sqlite3.Error) -> EnvironmentError_:
    return EnvironmentError_(f"kb's index cache cannot be read ({exc}); delete the .kb/ folder "
                             "and run the command again")


def prepare(index: "Index", fingerprint: str) -> bool:
    """Make the results tables usable for rules with ``fingerprint``.

    Takes the index and the fingerprint of kb's rules
    (:func:`kb.checks.registry.rules_fingerprint`); results stored under
    another fingerprint are dropped. Returns False when the tables cannot be
    read or written (the caller then computes everything and stores nothing).
    """
    db = index.conn
    try:
        row = db.execute("SELECT value FROM kb_check_kv WHERE key='rules'").fetchone()
        if row is None or row[0] != fingerprint:
            with db:
                db.execute("DELETE FROM kb_check_files")
                db.execute("DELETE FROM kb_check_diags")
                db.execute("DELETE FROM kb_check_kv")
                db.execute("INSERT INTO kb_check_kv VALUES ('rules', ?)", (fingerprint,))
        return True
    except sqlite3.Error:
        return False


def unchecked(index: "Index", files: dict[str, str], scope: list[str],
              snapshot: Optional["SnapshotTable"] = None) -> list[str]:
    """Paths of ``scope`` (KB-relative, in ``files``: path -> blob) whose per-file results
    are not stored. ``snapshot`` (the table of ``files``) answers a large scope in
    one query. Raises EnvironmentError_ when the cache cannot be read."""
    db = index.conn
    try:
        if snapshot is not None:
            want = set(scope)
            return [p for (p,) in db.execute(
                f"SELECT s.path FROM {snapshot.name} s LEFT JOIN kb_check_files c "
                "ON c.path = s.path AND c.blob = s.blob WHERE c.path IS NULL") if p in want]
        return [p for p in scope if db.execute(
            "SELECT 1 FROM kb_check_files WHERE path=? AND blob=?", (p, files[p])).fetchone() is None]
    except sqlite3.Error as exc:
        raise _unreadable(exc) from None


class _Moved(Exception):
    """The cache is not the one the check read (rebuilt or parses forgotten since)."""


def _same_cache(index: "Index") -> None:
    """Raise :class:`_Moved` when the ``forgets`` count is not the one the check read
    first (:attr:`kb.index.Index.generation`; no check when it read none). Called in
    the write transaction, after its first write: under the write lock, what it
    reads stays true until the commit."""
    if index.generation is None:
        return
    row = index.conn.execute("SELECT n FROM forgets").fetchone()
    if row is None or row[0] != index.generation:
        raise _Moved


def store_file_results(index: "Index", files: list[tuple[str, str]], rows: list[tuple]) -> None:
    """Store per-file results (:func:`kb.index.store_file_rows`) in their own transaction;
    a failure (locked, read-only) is skipped: the results are computed again next time.
    Results computed from a cache rebuilt (or whose parses were forgotten) under the
    check are not stored: the check may have read versions the new cache lacks."""
    from kb.index import store_file_rows

    try:
        with index.conn:
            store_file_rows(index.conn, files, rows)
            _same_cache(index)
    except (sqlite3.Error, _Moved):
        pass


def file_results(index: "Index", files: dict[str, str], scope: list[str],
                 snapshot: Optional["SnapshotTable"] = None) -> list[tuple]:
    """Stored per-file results of ``scope``: rows ``(path, blob, line, col, code,
    severity, message, fix JSON)``; ``snapshot`` (the table of ``files``) reads a
    large scope in one query (rows of other paths of the snapshot may come too).
    Raises EnvironmentError_ when the cache cannot be read."""
    db = index.conn
    try:
        if snapshot is not None:
            return list(db.execute(
                f"SELECT t.path, t.blob, t.line, t.col, t.code, t.severity, t.message, t.fix "
                f"FROM {snapshot.name} s CROSS JOIN kb_check_diags t "  # the snapshot outer
                "ON t.path = s.path AND t.blob = s.blob"))
        return [(p, files[p], *r) for p in scope for r in db.execute(
            "SELECT line, col, code, severity, message, fix FROM kb_check_diags "
            "WHERE path=? AND blob=?", (p, files[p]))]
    except sqlite3.Error as exc:
        raise _unreadable(exc) from None


def get(index: "Index", key: str, touch: bool = False) -> Optional[str]:
    """The value stored under ``key`` in ``kb_check_kv``, or None (also when the cache
    cannot be read). ``touch`` marks it as just used (kept among the most recent
    snapshot results)."""
    db = index.conn
    try:
        row = db.execute("SELECT value FROM kb_check_kv WHERE key=?", (key,)).fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    if touch:
        try:
            with db:
                db.execute("INSERT OR REPLACE INTO kb_check_kv VALUES (?, ?)", (key, row[0]))
        except sqlite3.Error:
            pass
    return row[0]


def put(index: "Index", pairs: Iterable[tuple[str, str]]) -> None:
    """Store ``(key, value)`` pairs in ``kb_check_kv`` (a failure is skipped; so are values
    computed from a cache rebuilt under the check, as in :func:`store_file_results`)."""
    try:
        with index.conn:
            index.conn.executemany("INSERT OR REPLACE INTO kb_check_kv VALUES (?, ?)", list(pairs))
            _same_cache(index)
    except (sqlite3.Error, _Moved):
        pass


def put_snapshot(index: "Index", key: str, data: str, keep: int = KEEP_SNAPSHOTS) -> None:
    """Store a snapshot's results (``key`` starts with ``snap:``) and drop all but the
    ``keep`` most recently stored or used ones (a failure is skipped; so are results
    computed from a cache rebuilt under the check, as in :func:`store_file_results`)."""
    db = index.conn
    try:
        with db:
            db.execute("INSERT OR REPLACE INTO kb_check_kv VALUES (?, ?)", (key, data))
            _same_cache(index)
            db.execute(
                "DELETE FROM kb_check_kv WHERE key LIKE 'snap:%' AND rowid NOT IN (SELECT rowid "
                f"FROM kb_check_kv WHERE key LIKE 'snap:%' ORDER BY rowid DESC LIMIT {int(keep)})")
    except (sqlite3.Error, _Moved):
        pass
