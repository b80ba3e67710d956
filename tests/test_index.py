"""``kb.index``: the incremental SQLite cache in ``.kb/`` (DESIGN.md §6)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import kb
from conftest import commit_all, git
from kb import index as kbindex
from kb.index import Index
from kb.index_rows import links_of
from kb.repo import open_kb

TREE = """# Hypothesis Tree

## H1: Data loading is the training bottleneck
Status: 进行中
Evidence: E001
Children: H1.1

### H1.1: Decoding JPEGs dominates loading time
Status: 待验
Evidence: (empty)
Parent: H1
"""
EXP = "# E001: H1 - Profile the loader\n\n**Hypothesis**: H1\n**Date**: 2026-01-02\n**Status**: 进行中\n"
PROBLEM = """# 问题｜100% sure_thing
- 标题: 100% sure_thing
- ID: q1
- 类型: 问题
- 状态: 求解中
- 优先级: 0
- 依赖: ["p1"]
- 被依赖: []
- 来源: 原始
- 计划: 待调度

## 陈述
Prove it.

## 解法候选
（暂无解法候选）
"""
PROPOSITION = """# 命题｜Lemma
- 标题: Lemma
- ID: p1
- 类型: 命题
- 状态: 未定论
- 概率: 0.5
- 优先级: 1
- 依赖: []
- 价值/关键性: 0.5

## 陈述
A lemma.

## 证明尝试
（暂无证明尝试）

## 证伪尝试
（暂无证伪尝试）
"""
FILES = {"tree.md": TREE, "experiments/E001.md": EXP, "Problems/q1.md": PROBLEM,
         "Propos/代数/p1.md": PROPOSITION}


@pytest.fixture
def kb_root(make_kb) -> Path:
    """A committed KB: a two-node tree, one experiment, one problem, one proposition."""
    return make_kb(FILES, commit=True)


def refresh(root: Path):
    with Index(open_kb(root)) as idx:
        return idx.refresh()


def test_first_run_parses_everything_second_nothing(kb_root):
    """Cold index parses the 4 files; a second run parses 0 and reuses the cache."""
    first = refresh(kb_root)
    assert (first.files, first.parsed, first.rebuilt) == (4, 4, True)
    second = refresh(kb_root)
    assert (second.files, second.parsed, second.removed, second.rebuilt) == (4, 0, 0, False)
    assert (kb_root / ".kb" / "index.sqlite").is_file()


def test_editing_one_file_reparses_one(kb_root):
    """After an edit of tree.md (uncommitted), exactly one file is re-parsed and the new
    status is what the index answers."""
    refresh(kb_root)
    (kb_root / "tree.md").write_text(TREE.replace("Status: 待验", "Status: 被支持"), encoding="utf-8")
    stats = refresh(kb_root)
    assert (stats.parsed, stats.rebuilt) == (1, False)
    with Index(open_kb(kb_root)) as idx:
        assert [r.status for r in idx.get("H1.1")] == ["被支持"]
    assert refresh(kb_root).parsed == 0


def test_deleted_and_added_files(kb_root):
    """Deleting the experiment and adding E002: one removed, one parsed; the index forgets E001."""
    refresh(kb_root)
    (kb_root / "experiments" / "E001.md").unlink()
    (kb_root / "experiments" / "E002.md").write_text(EXP.replace("E001", "E002"), encoding="utf-8")
    stats = refresh(kb_root)
    assert (stats.files, stats.parsed, stats.removed) == (4, 1, 1)
    with Index(open_kb(kb_root)) as idx:
        assert idx.get("E001") == []
        assert [r.id for r in idx.objects("experiment")] == ["E002"]
        assert idx.file_count() == 4


def test_deleting_kb_folder_rebuilds(kb_root):
    """``rm -rf .kb``: the next run rebuilds from scratch and answers the same."""
    refresh(kb_root)
    with Index(open_kb(kb_root)) as idx:
        before = [(r.id, r.kind, r.path, r.line, r.data) for r in idx.objects()]
    shutil.rmtree(kb_root / ".kb")
    stats = refresh(kb_root)
    assert (stats.parsed, stats.rebuilt) == (4, True)
    with Index(open_kb(kb_root)) as idx:
        assert [(r.id, r.kind, r.path, r.line, r.data) for r in idx.objects()] == before


def test_old_schema_version_rebuilds(kb_root):
    """A cache whose meta table says schema version 1: rebuilt, every file parsed again."""
    refresh(kb_root)
    db = sqlite3.connect(kb_root / ".kb" / "index.sqlite")
    with db:
        db.execute("UPDATE meta SET value='1' WHERE key='schema'")
    db.close()
    stats = refresh(kb_root)
    assert (stats.parsed, stats.rebuilt) == (4, True)
    db = sqlite3.connect(kb_root / ".kb" / "index.sqlite")
    assert dict(db.execute("SELECT key, value FROM meta"))["schema"] == str(kbindex.SCHEMA_VERSION)
    db.close()


def test_new_schema_version_in_code_rebuilds(kb_root, monkeypatch):
    """kb's SCHEMA_VERSION moves on (an upgrade): the existing cache is rebuilt."""
    refresh(kb_root)
    monkeypatch.setattr(kbindex, "SCHEMA_VERSION", kbindex.SCHEMA_VERSION + 1)
    assert refresh(kb_root).rebuilt is True
    assert refresh(kb_root).rebuilt is False


def test_kb_version_change_rebuilds(kb_root, monkeypatch):
    """A different kb version (parsers may have changed) rebuilds the cache."""
    refresh(kb_root)
    monkeypatch.setattr(kb, "__version__", kb.__version__ + ".post1")
    stats = refresh(kb_root)
    assert (stats.parsed, stats.rebuilt) == (4, True)


def test_kb_toml_change_rebuilds(kb_root):
    """Editing kb.toml (here: another ID grammar) rebuilds and re-reads with the new config."""
    refresh(kb_root)
    (kb_root / "kb.toml").write_text('[kb]\nid_grammar = "X[0-9]+"\n', encoding="utf-8")
    stats = refresh(kb_root)
    assert (stats.parsed, stats.rebuilt) == (4, True)
    with Index(open_kb(kb_root)) as idx:
        assert idx.objects("hypothesis") == []


def test_damaged_cache_is_rebuilt(kb_root, run_kb):
    """``.kb/index.sqlite`` overwritten with garbage: ``kb index`` rebuilds it (exit 0), no crash."""
    refresh(kb_root)
    for suffix in ("-wal", "-shm"):
        Path(str(kb_root / ".kb" / "index.sqlite") + suffix).unlink(missing_ok=True)
    (kb_root / ".kb" / "index.sqlite").write_bytes(b"this is not a database\n" * 20)
    r = run_kb("index", "--json", cwd=kb_root)
    assert r.code == 0, r.stderr
    assert r.json()["rebuilt"] is True and r.json()["parsed"] == 4


def test_cache_is_never_committed(make_kb):
    """A KB without any .gitignore: after indexing, ``git status`` shows nothing under .kb/."""
    root = make_kb({"tree.md": TREE}, commit=True)
    assert not (root / ".gitignore").exists()
    refresh(root)
    assert (root / ".kb" / ".gitignore").read_text() == "*\n"
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""


def test_same_content_in_two_paths(make_kb):
    """Two experiment files with identical bytes (same blob): both are indexed under their paths."""
    root = make_kb({"experiments/E001.md": EXP, "experiments/E002.md": EXP}, commit=True)
    stats = refresh(root)
    assert stats.parsed == 2
    with Index(open_kb(root)) as idx:
        assert [(r.id, r.path) for r in idx.objects("experiment")] == [
            ("E001", "experiments/E001.md"), ("E001", "experiments/E002.md")]


def test_links_counts_and_search(kb_root):
    """Links are stored both ways; counts per kind; search escapes % and _ literally."""
    refresh(kb_root)
    with Index(open_kb(kb_root)) as idx:
        assert idx.counts() == {"hypothesis": 2, "experiment": 1, "problem": 1, "proposition": 1}
        out, inc = idx.links("H1")
        assert sorted(out) == [("H1", "E001", "evidence"), ("H1", "H1.1", "child")]
        assert sorted(inc) == [("E001", "H1", "tests"), ("H1.1", "H1", "parent")]
        out, inc = idx.links("p1")
        assert inc == [("q1", "p1", "depends")]
        assert [r.id for r in idx.search("100%")] == ["q1"]
        assert [r.id for r in idx.search("e_t")] == ["q1"]  # "sure_thing", not "e<any>t"
        assert idx.search("0% s") and not idx.search("1_0")
        assert [r.id for r in idx.search("jpeg")] == ["H1.1"]  # case-insensitive
        assert [r.id for r in idx.search("a lemma")] == ["p1"]  # statement of a card


def test_links_of_every_field():
    """``links_of`` turns every reference field into (src, dst, kind) rows."""
    from kb.model import Hypothesis, Method

    h = Hypothesis(id="H1.1", path="tree.md", line=1, statement="s", level=3,
                   evidence=("E1", "E2"), children=("H1.1.1",), parent="H1")
    assert links_of(h) == [("H1.1", "H1", "parent"), ("H1.1", "H1.1.1", "child"),
                           ("H1.1", "E1", "evidence"), ("H1.1", "E2", "evidence")]
    m = Method(id="m1", path="Methods/m1.md", line=1, claims=("p1",), parents=("m0",),
               submethods=("m2",), related=("q1",))
    assert sorted(links_of(m)) == [("m1", "m0", "parent_method"), ("m1", "m2", "submethod"),
                                   ("m1", "p1", "claims"), ("m1", "q1", "related")]


def test_two_open_indexes_at_once(kb_root):
    """Two Index objects on the same cache (a hook and an agent): both refresh and read."""
    k = open_kb(kb_root)
    with Index(k) as a, Index(k) as b:
        a.refresh()
        (kb_root / "experiments" / "E002.md").write_text(EXP.replace("E001", "E002"), encoding="utf-8")
        assert b.refresh().parsed == 1
        assert a.refresh().parsed == 0
        assert len(a.objects("experiment")) == len(b.objects("experiment")) == 2


def test_model_round_trip_from_index(kb_root):
    """An indexed row turns back into the same model as a fresh parse."""
    from kb.parse import parse_file

    refresh(kb_root)
    k = open_kb(kb_root)
    fresh = parse_file("Problems/q1.md", PROBLEM.encode(), k.config).objects[0]
    with Index(k) as idx:
        [row] = idx.get("q1")
        assert row.model() == fresh


def test_parallel_cold_index_equals_serial(make_kb, monkeypatch):
    """450 problem cards (over PARALLEL_MIN): the forked workers' index holds the
    same objects, links and diagnostics as a one-process parse."""
    import sqlite3

    from kb.index_rows import PARALLEL_MIN

    n = PARALLEL_MIN + 50
    files = {f"Problems/q{i}.md": (
        f"# 问题｜P{i}\n- 标题: P{i}\n- ID: q{i}\n- 类型: 问题\n- 状态: 求解中\n- 优先级: {i % 7}\n"
        f"- 依赖: [\"q{(i + 1) % n}\"]\n- 被依赖: []\n- 来源: 原始\n- 计划: x\n\n## 陈述\nS{i}\n\n"
        f"## 解法候选\n### 解法 1｜t{i}｜概率0.5｜状态未定论\nproof\n") for i in range(n)}
    files["Problems/bad.md"] = "# 问题｜bad\n- 优先级: soon\n"
    root = make_kb(files, commit=True)

    def dump() -> list:
        from kb.index import Index
        from kb.repo import open_kb

        with Index(open_kb(root)) as idx:
            idx.refresh()
        db = sqlite3.connect(root / ".kb" / "index.sqlite")
        out = [sorted(db.execute(f"SELECT * FROM {t}")) for t in ("objects", "links", "diagnostics")]
        db.close()
        return out

    parallel = dump()
    assert len(parallel[0]) == n + 1 and any(r[4] == "KB125" for r in parallel[2])
    import shutil

    shutil.rmtree(root / ".kb")
    monkeypatch.setenv("KB_NO_PARALLEL", "1")
    assert dump() == parallel


def test_batch_size_gives_each_worker_many_small_tasks():
    """Few files: tasks of at least 16 files, TASKS_PER_WORKER tasks a worker; many:
    BATCH files a task."""
    from kb.index_rows import BATCH, TASKS_PER_WORKER, batch_size

    assert batch_size(1000, 2) == 32  # 1,000 files, two cores: 32 tasks of 32 (31 + 1 of 8)
    assert batch_size(400, 2) == 16 and batch_size(100, 4) == 16  # never under 16 files
    assert batch_size(7500, 2) == BATCH == batch_size(100_000, 4)
    for files in (401, 999, 1000, 2047, 3999, 4001):
        size = batch_size(files, 2)
        assert 16 <= size <= BATCH and (-(-files // size) >= 2 * TASKS_PER_WORKER or size == 16)


def test_parallel_cold_index_shares_the_files_out_in_small_tasks(make_kb, monkeypatch):
    """With two workers, a cold index of 600 cards is parsed in tasks of batch_size(600, 2)
    files (19): every file once, in the snapshot's order."""
    import kb.parallel
    from kb.index_rows import batch_size, parse_batches
    from kb.repo import open_kb, worktree_snapshot

    if not kb.parallel.can_fork():
        pytest.skip("no os.fork here")
    n = 600
    root = make_kb({f"Problems/q{i:03}.md": f"# 问题｜P{i}\n- 状态: 求解中\n\n## 陈述\nS{i}\n"
                    for i in range(n)}, commit=True)
    monkeypatch.setattr(kb.parallel, "cpu_workers", lambda limit=4: 2)
    k = open_kb(root)
    snap = worktree_snapshot(k)
    cards = sorted(p for p in snap.files if p.startswith("Problems/"))
    parsed = [[r[0] for r in rows[0]] for rows in parse_batches(k, snap, cards)]
    size = batch_size(n, 2)
    assert size == 19
    assert [len(b) for b in parsed] == [size] * (n // size) + [n % size]
    assert [p for b in parsed for p in b] == cards


def test_parallel_cold_index_reports_links_leaving_the_work_tree(make_kb, monkeypatch, tmp_path):
    """Over PARALLEL_MIN files, a card and a tree.md that are symlinks leaving the work
    tree get one KB106 each and are never read, in the workers as in one process."""
    import sqlite3

    from kb.index_rows import PARALLEL_MIN

    n = PARALLEL_MIN + 10
    files = {f"Problems/q{i}.md": f"# 问题｜P{i}\n- 状态: 求解中\n\n## 陈述\nS{i}\n" for i in range(n)}
    root = make_kb(files, commit=False)
    secret = tmp_path / "secret.md"
    secret.write_text("# 问题｜secret\n- 状态: 求解中\n\n## H1: leaked\n", encoding="utf-8")
    (root / "Problems" / "q0.md").unlink()
    (root / "Problems" / "q0.md").symlink_to(secret)
    (root / "tree.md").symlink_to(secret)
    commit_all(root, "links")

    def dump() -> list:
        from kb.index import Index
        from kb.repo import open_kb

        with Index(open_kb(root)) as idx:
            idx.refresh()
        db = sqlite3.connect(root / ".kb" / "index.sqlite")
        out = [sorted(db.execute(f"SELECT * FROM {t}")) for t in ("objects", "diagnostics")]
        db.close()
        return out

    parallel = dump()
    assert sorted(r[0] for r in parallel[1] if r[4] == "KB106") == ["Problems/q0.md", "tree.md"]
    assert len(parallel[0]) == n - 1 and not any("secret" in r[7] or "leaked" in r[7] for r in parallel[0])
    import shutil

    shutil.rmtree(root / ".kb")
    monkeypatch.setenv("KB_NO_PARALLEL", "1")
    assert dump() == parallel
