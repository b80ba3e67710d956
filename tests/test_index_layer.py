"""The index owns its SQL; the checks package has no import cycle (issue 10).

Static checks over the source: they read the modules' syntax trees, so an
import hidden inside a function counts as much as one at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The index layer: the only modules that speak SQL.
INDEX_LAYER = {"kb/index.py", "kb/index_facts.py", "kb/index_results.py"}


def _sources() -> list[Path]:
    out = sorted((ROOT / "kb").rglob("*.py")) + sorted((ROOT / "cli").rglob("*.py"))
    assert len(out) > 50  # the walk found the packages
    return out


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = path.relative_to(ROOT).with_suffix("").parts
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(here[:-node.level] + ((node.module,) if node.module else ()))
            else:
                base = node.module or ""
            out.append(base)
            out += [f"{base}.{a.name}" for a in node.names]
    return out


def test_only_the_index_layer_imports_sqlite3():
    offenders = [p.relative_to(ROOT).as_posix() for p in _sources()
                 if p.relative_to(ROOT).as_posix() not in INDEX_LAYER
                 and any(m == "sqlite3" or m.startswith("sqlite3.") for m in _imports(p))]
    assert offenders == []


def test_no_sql_outside_the_index_layer():
    """The verify cache, the rules' reads, the writes, the review sides and the web
    view go through index-layer functions: no ``execute`` on a connection outside
    ``kb/index*.py``."""
    offenders = []
    for p in _sources():
        rel = p.relative_to(ROOT).as_posix()
        if rel.startswith("kb/index"):
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("execute", "executemany",
                                                                   "executescript"):
                offenders.append(f"{rel}:{node.lineno}")
    assert offenders == []


def test_the_verify_cache_tables_are_in_the_index_schema():
    import kb.index as index

    for table in ("kb_check_kv", "kb_check_files", "kb_check_diags"):
        assert f"CREATE TABLE {table} " in index._SCHEMA
        assert table in index._TABLES  # dropped and made again with the rest


def test_the_checks_package_has_no_import_cycle():
    mods = {".".join(p.relative_to(ROOT).with_suffix("").parts): p
            for p in sorted((ROOT / "kb" / "checks").glob("*.py")) if p.name != "__init__.py"}
    graph = {m: sorted({i for i in _imports(p) if i in mods and i != m}) for m, p in mods.items()}
    for rules in ("kb.checks.tree_rules", "kb.checks.experiment_rules", "kb.checks.id_rules",
                  "kb.checks.cards", "kb.checks.dashboard_rule"):
        assert rules in mods and rules not in graph["kb.checks.facts"]
    done: set[str] = set()

    def visit(m: str, stack: list[str]) -> None:
        assert m not in stack, " -> ".join(stack[stack.index(m):] + [m])
        if m in done:
            return
        for n in graph[m]:
            visit(n, stack + [m])
        done.add(m)

    for m in graph:
        visit(m, [])
    assert len(done) == len(mods) > 10


def test_a_database_error_leaves_the_index_as_a_kb_error(make_kb):
    import pytest

    from kb.errors import EnvironmentError_
    from kb.index import Index
    from kb.index_facts import SnapshotTable
    from kb.repo import open_kb

    root = make_kb({"tree.md": "# Tree\n"}, commit=True)
    idx = Index(open_kb(root))
    snap = idx.worktree()
    idx.db.close()  # every statement now fails inside sqlite3
    with pytest.raises(EnvironmentError_, match="delete the .kb/ folder"):
        idx.objects("hypothesis")
    with pytest.raises(EnvironmentError_, match="delete the .kb/ folder"):
        SnapshotTable(idx, snap.files).objects()


def test_an_index_of_the_old_schema_is_rebuilt_with_the_verify_tables(make_kb):
    """Version 4 kept verify's tables outside the schema version: an index of that
    version is rebuilt whole, its stored results dropped."""
    import sqlite3

    from kb.index import SCHEMA_VERSION, Index
    from kb.repo import open_kb

    root = make_kb({"tree.md": "# Tree\n"}, commit=True)
    with Index(open_kb(root)) as idx:
        idx.refresh()
    db = sqlite3.connect(root / ".kb" / "index.sqlite")
    db.execute("UPDATE meta SET value='4' WHERE key='schema'")
    db.execute("INSERT INTO kb_check_kv VALUES ('snap:old', '[]')")
    db.commit()
    db.close()
    with Index(open_kb(root)) as idx:
        assert idx.rebuilt
    db = sqlite3.connect(root / ".kb" / "index.sqlite")
    try:
        assert db.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == (str(SCHEMA_VERSION),)
        assert db.execute("SELECT count(*) FROM kb_check_kv").fetchone() == (0,)
    finally:
        db.close()


def test_a_snapshots_joins_cost_what_the_snapshot_holds_not_what_the_cache_holds(make_kb):
    """A snapshot's whole-snapshot queries look each of its files up in the cache: their
    cost (SQLite's VM steps, counted by a progress handler) stays the same when the cache
    holds ten more versions of every file."""
    from kb.index import Index
    from kb.index_facts import SnapshotTable
    from kb.repo import open_kb
    from test_verify_support import TREE, experiment, problem

    files = {"tree.md": TREE, **{f"Problems/q{i}.md": problem(f"q{i}", depends='["q2"]')
                                 for i in range(2, 60)},
             **{f"experiments/E00{i}.md": experiment(f"E00{i}") for i in range(10, 40)}}
    root = make_kb(files, commit=True)
    with Index(open_kb(root)) as idx:
        idx.refresh()
        table = SnapshotTable(idx, idx.worktree().files)

        def steps() -> int:
            count = [0]

            def tick() -> int:
                count[0] += 1
                return 0

            idx.db.set_progress_handler(tick, 10)
            try:
                rows = (table.objects(), table.links(["depends", "tests"]),
                        table.parse_diagnostics(), table.field_of_kind("experiment", "date"))
            finally:
                idx.db.set_progress_handler(None, 0)
            assert rows[0] and rows[1]
            return count[0]

        before = steps()
        for n in range(10):  # ten other versions of every file: rows under other blob ids
            for t in ("objects", "links", "diagnostics"):
                cols = [c[1] for c in idx.db.execute(f"PRAGMA table_info({t})")]
                sel = ", ".join(f"'v{n}' || blob" if c == "blob" else c for c in cols)
                idx.db.execute(f"INSERT INTO {t} SELECT {sel} FROM {t} WHERE blob NOT LIKE 'v%'")
        idx.db.commit()
        assert idx.db.execute("SELECT count(*) FROM objects").fetchone()[0] > 10 * len(table.objects())
        assert steps() < 1.5 * before


def test_a_snapshots_unparsed_files_on_a_new_cache_and_after_a_parse(make_kb):
    """SnapshotTable.unparsed: every file of the snapshot on a cache that stores no parse
    (a fresh clone's range check), then those whose version is not stored, held
    versions among them."""
    from kb.index import Index
    from kb.index_facts import SnapshotTable
    from kb.repo import commit_snapshot, open_kb
    from test_verify_support import problem

    files = {f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 6)}
    root = make_kb(files, commit=True)
    k = open_kb(root)
    snap = commit_snapshot(k, "HEAD").files
    assert len(snap) >= 4
    with Index(k) as idx:
        assert sorted(SnapshotTable(idx, snap).unparsed()) == sorted(snap)
        idx.ensure_versions([("Problems/q2.md", snap["Problems/q2.md"], "problem")])
        assert sorted(SnapshotTable(idx, snap).unparsed()) == sorted(set(snap) - {"Problems/q2.md"})
        other = {**snap, "Problems/q3.md": "0" * 40}  # a version never parsed
        assert "Problems/q3.md" in SnapshotTable(idx, other).unparsed()


def test_unparsed_runs_looks_only_at_the_runs_not_marked_parsed_whole(make_kb, monkeypatch):
    """unparsed_runs gives what SnapshotTable.unparsed gives, asking SQLite only about the
    runs of files the index has not marked parsed whole: none once every run is marked,
    the one run holding a version never parsed after a change."""
    import kb.digests as digests
    import kb.index_facts
    from kb.index import Index
    from kb.index_facts import SnapshotTable, unparsed_runs
    from kb.repo import Snapshot, commit_snapshot, open_kb
    from test_verify_support import problem

    monkeypatch.setattr(digests, "RUN", 2)
    asked: list[set[str]] = []

    class Spy(SnapshotTable):
        def __init__(self, index, files):
            asked.append(set(files))
            super().__init__(index, files)

    monkeypatch.setattr(kb.index_facts, "SnapshotTable", Spy)
    root = make_kb({f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 10)}, commit=True)
    k = open_kb(root)
    snap = commit_snapshot(k, "HEAD")
    runs = digests.file_runs(snap)
    assert len(runs) >= 4
    with Index(k) as idx:
        whole = Spy(idx, snap.files)  # the snapshot's own table: used when no run is marked
        assert sorted(unparsed_runs(idx, snap.files, runs, whole)) == sorted(snap.files)
        assert len(asked) == 1  # none marked: no second table
        idx.ensure(snap)
        assert unparsed_runs(idx, snap.files, runs) == [] and asked[-1] == set(snap.files)
        assert idx.db.execute("SELECT count(*) FROM parsed_runs").fetchone() == (len(runs),)
        asked.clear()
        assert unparsed_runs(idx, snap.files, runs) == [] and asked == []  # all marked
        changed = Snapshot(kb=k, kind="commit", files={**snap.files, "Problems/q3.md": "0" * 40},
                           formats=dict(snap.formats))
        assert unparsed_runs(idx, changed.files, digests.file_runs(changed)) == ["Problems/q3.md"]
        assert len(asked) == 1 and "Problems/q3.md" in asked[0] and len(asked[0]) == 2


def test_a_forgotten_parse_voids_every_run_marker(make_kb, monkeypatch):
    """A refresh that forgets a parse (STALE_SECONDS after the working tree stopped using
    it) voids the markers: the run holding that version is looked at again, and a
    marker written under the count read before the forget (a racing check's) is void."""
    import kb.digests as digests
    import kb.index
    from kb.index import Index
    from kb.index_facts import unparsed_runs
    from kb.repo import open_kb
    from test_verify_support import problem

    monkeypatch.setattr(digests, "RUN", 2)
    root = make_kb({f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 8)}, commit=True)
    k = open_kb(root)
    with Index(k) as idx:
        idx.refresh()
        before = idx.worktree()
        runs = digests.file_runs(before)
        assert unparsed_runs(idx, before.files, runs) == []
        assert idx.db.execute("SELECT count(*) FROM parsed_runs").fetchone() == (len(runs),)
        (n,) = idx.db.execute("SELECT n FROM forgets").fetchone()
        q3 = root / "Problems" / "q3.md"
        q3.write_text(q3.read_text(encoding="utf-8") + "\nEdited.\n", encoding="utf-8")
        monkeypatch.setattr(kb.index, "STALE_SECONDS", -1.0)  # forgotten at once
        idx.refresh()
        assert not idx.has_parse("Problems/q3.md", before.files["Problems/q3.md"])
        assert idx.db.execute("SELECT n FROM forgets").fetchone() == (n + 1,)
        assert idx.db.execute("SELECT count(*) FROM parsed_runs").fetchone() == (0,)
        idx.db.executemany("INSERT INTO parsed_runs VALUES (?, ?)", [(d, n) for d, _ in runs])
        idx.db.commit()
        assert unparsed_runs(idx, before.files, runs) == ["Problems/q3.md"]


def test_a_marker_written_across_a_rebuild_of_the_cache_is_void(make_kb, monkeypatch):
    """A check reads the count, the cache is made anew under it (kb.toml edited, another
    kb version), then the check writes its markers: each new cache starts at a count of
    its own, so they vouch for nothing in it (they used to start at 0 alike, and the
    hook then read a staged version the new cache never parsed). Tables that cannot be
    read count as no marker."""
    import kb.digests as digests
    from kb.index import Index
    from kb.index_facts import unparsed_runs
    from kb.repo import open_kb
    from test_verify_support import problem

    monkeypatch.setattr(digests, "RUN", 2)
    root = make_kb({f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 8)}, commit=True)
    with Index(open_kb(root)) as idx:
        idx.refresh()
        snap = idx.worktree()
        runs = digests.file_runs(snap)
        assert unparsed_runs(idx, snap.files, runs) == []
        (n,) = idx.db.execute("SELECT n FROM forgets").fetchone()
    toml = root / "kb.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    with Index(open_kb(root)) as idx:
        assert idx.rebuilt
        assert idx.db.execute("SELECT n FROM forgets").fetchone() != (n,)
        idx.db.executemany("INSERT INTO parsed_runs VALUES (?, ?)", [(d, n) for d, _ in runs])
        idx.db.commit()  # the racing check's markers, written under the old cache's count
        assert sorted(unparsed_runs(idx, snap.files, runs)) == sorted(snap.files)
        idx.db.execute("DELETE FROM forgets")
        idx.db.commit()
        assert sorted(unparsed_runs(idx, snap.files, runs)) == sorted(snap.files)
        idx.db.execute("DROP TABLE parsed_runs")
        idx.db.commit()
        assert sorted(unparsed_runs(idx, snap.files, runs)) == sorted(snap.files)


def test_markers_never_wait_for_another_writer(make_kb, monkeypatch):
    """While another process holds the write lock (a rebuild, a long kb index), the
    markers are skipped at once: a check that waited went on reading the cache built
    meanwhile. The writer here lets go after a second: a check that waited would
    have written them then."""
    import sqlite3
    import threading

    import kb.digests as digests
    from kb.index import Index
    from kb.index_facts import unparsed_runs
    from kb.repo import open_kb
    from test_verify_support import problem

    monkeypatch.setattr(digests, "RUN", 2)
    root = make_kb({f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 8)}, commit=True)
    with Index(open_kb(root)) as idx:
        idx.refresh()
        snap = idx.worktree()
        other = sqlite3.connect(root / ".kb" / "index.sqlite", check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        timer = threading.Timer(1.0, other.commit)
        timer.start()
        try:
            assert unparsed_runs(idx, snap.files, digests.file_runs(snap)) == []
        finally:
            timer.join()
            other.close()
        assert idx.db.execute("SELECT count(*) FROM parsed_runs").fetchone() == (0,)
        assert idx.db.execute("PRAGMA busy_timeout").fetchone() == (30000,)


def test_results_of_a_check_are_not_stored_into_a_cache_that_moved_under_it(make_kb):
    """A racing kb index forgets parses (or rebuilds the cache) while a check runs: what
    the check computed may rest on versions the cache no longer holds, so its snapshot
    results, per-file results and kept values are not stored."""
    import sqlite3

    from kb import index_results
    from kb.index import Index
    from kb.index_facts import unparsed_runs
    from kb.repo import open_kb
    from test_verify_support import problem

    root = make_kb({f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 5)}, commit=True)
    with Index(open_kb(root)) as idx:
        idx.refresh()
        snap = idx.worktree()
        unparsed_runs(idx, snap.files, [(b"x", sorted(snap.files))])
        assert idx.generation == idx.db.execute("SELECT n FROM forgets").fetchone()[0]
        other = sqlite3.connect(root / ".kb" / "index.sqlite")
        other.execute("UPDATE forgets SET n = n + 1")  # what a racing forget writes
        other.commit()
        other.close()
        version = ("Problems/q2.md", snap.files["Problems/q2.md"])
        index_results.put_snapshot(idx, "snap:x", "[]")
        index_results.store_file_results(idx, [version], [])
        index_results.put(idx, [("kept", "v")])
        assert index_results.get(idx, "snap:x") is None and index_results.get(idx, "kept") is None
        assert idx.db.execute("SELECT count(*) FROM kb_check_files").fetchone() == (0,)
        idx.generation = None  # a check that starts now
        unparsed_runs(idx, snap.files, [(b"x", sorted(snap.files))])
        index_results.put_snapshot(idx, "snap:x", "[]")
        index_results.store_file_results(idx, [version], [])
        assert index_results.get(idx, "snap:x") == "[]"
        assert idx.db.execute("SELECT count(*) FROM kb_check_files").fetchone() == (1,)


def test_a_snapshots_table_filled_in_parts_holds_every_file(make_kb, monkeypatch):
    """The snapshot's table is filled from JSON texts of a few files each: with parts of
    two files, every (path, blob) of the snapshot is there, paths with quotes, spaces,
    backslashes and CJK read back as given, and the joins over it give what a snapshot
    holds."""
    import kb.index_facts
    from kb.index import Index
    from kb.index_facts import SnapshotTable
    from kb.repo import open_kb
    from test_verify_support import problem

    monkeypatch.setattr(kb.index_facts, "_JSON_PART", 2)
    files = {f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 7)}
    files['Problems/引号 "x" \\y.md'] = problem("q9")
    root = make_kb(files, commit=True)
    with Index(open_kb(root)) as idx:
        idx.refresh()
        snap = idx.worktree().files
        table = SnapshotTable(idx, snap)
        assert dict(idx.db.execute(f"SELECT path, blob FROM {table.name}")) == snap
        assert table.unparsed() == [] and len(snap) == 6
        ids = sorted(i for i, *_ in table.objects())
        assert len(ids) == 6 and ids == sorted(r.id for r in idx.objects()), ids


def test_a_held_tree_version_is_stored_only_for_a_reader_of_its_rows(make_kb):
    """Index.put_derived holds a spliced tree version: has_parse and parse_meta answer
    for it, readers of other versions (and of the verify tables) leave it held, a reader
    of its rows stores it first, and what is stored is what put_spliced stores."""
    from kb import git
    from kb.checks.tree_versions import splice_tree_version
    from kb.index import Index
    from kb.index_facts import SnapshotTable, version_links, version_objects
    from kb.repo import open_kb

    def tree(n: int, extra: str = "") -> str:
        return "# Tree\n\n" + "".join(f"## H{i}: Statement {i}\nStatus: 待验\n\nProse {i}.\n\n"
                                      for i in range(1, n + 1)) + extra

    root = make_kb({"tree.md": tree(30)}, commit=True)
    k = open_kb(root)
    old = tree(30).encode()
    # two hypotheses inserted after H3: every later line moves down
    new = old.replace(b"Prose 3.\n", "Prose 3.\n\n## H31: New\nStatus: 待验\n\n"
                      "## H32: Newer\nStatus: 待验\n".encode())
    ob, nb = git.blob_id(old), git.blob_id(new)

    def stored(held: bool) -> tuple:
        (root / ".kb").exists() and __import__("shutil").rmtree(root / ".kb")
        with Index(k) as idx:
            idx.ensure_versions([("tree.md", ob, "tree")], read=lambda items: {ob: old})
            memo = {ob: {"objects": version_objects(idx, "tree.md", ob),
                         "links": [("tree.md", *x) for x in version_links(idx, "tree.md", ob)]}} if held else {ob: {}}
            assert splice_tree_version(k, idx, "tree.md", ob, old, nb, new, memo=memo)
            assert idx.derived("tree.md", nb) is held and idx.has_parse("tree.md", nb)
            assert idx.parse_meta("tree.md", nb)["newline"] == "\n"
            if held:
                assert not idx.conn.execute("SELECT 1 FROM objects WHERE blob=?", (nb,)).fetchall()
                # readers of other versions, and of the snapshot without it, leave it held
                assert version_objects(idx, "tree.md", ob)
                assert SnapshotTable(idx, {"tree.md": ob}).parse_diagnostics() == []
                assert idx.connection_for(("tree.md", ob)) is idx.conn
                assert idx.derived("tree.md", nb)
                # the rows the range knew of it are those a reader then gets
                objects, links = version_objects(idx, "tree.md", nb), memo[nb]["links"]
                assert not idx.derived("tree.md", nb) and objects == memo[nb]["objects"]
                assert [("tree.md", *x) for x in version_links(idx, "tree.md", nb)] == links
            q = "SELECT * FROM {} WHERE path='tree.md' AND blob=? ORDER BY rowid"
            return tuple(list(idx.db.execute(q.format(t), (nb,)))
                         for t in ("objects", "links", "diagnostics", "parsed"))

    assert stored(True) == stored(False)
    assert len(stored(True)[0]) == 32
