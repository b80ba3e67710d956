"""A cache that cannot be used never ends in exit 3 or a wrong answer (issue 11):
kb rebuilds it or works from an in-memory index, says so once on stderr, and
read commands still answer.

The permission cases run kb as an unprivileged user (the suite usually runs
as root in CI, for whom permissions do not apply) with a virtual environment
under a temporary folder, made from the system Python, that sees this
installation's packages.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import commit_all, git_init, run_script
from nobody import as_nobody as _as_nobody, nobody_env  # noqa: F401 - a fixture

INDEX = Path(".kb") / "index.sqlite"


@pytest.fixture
def kb_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "examples"
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples", dest,
                    ignore=shutil.ignore_patterns(".kb", "__pycache__"))
    git_init(dest)
    commit_all(dest, "example KB")
    return dest


def _answers(root: Path) -> tuple[object, object]:
    ls = run_script("ls", "--json", cwd=root)
    show = run_script("show", "H1.1", "--json", cwd=root)
    assert ls.code == 0 and show.code == 0, ls.stderr + show.stderr
    return ls.json(), show.json()


def _notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "index cache" in line]


def _break(root: Path, how: str) -> None:
    kbdir = root / ".kb"
    shutil.rmtree(kbdir, ignore_errors=True)
    if how == "kb-is-file":
        kbdir.write_text("not a folder\n")
    elif how == "db-is-folder":
        (kbdir / "index.sqlite").mkdir(parents=True)
    elif how == "shm-is-folder":
        (kbdir / "index.sqlite-shm").mkdir(parents=True)
    elif how == "db-is-fifo":
        kbdir.mkdir()
        os.mkfifo(kbdir / "index.sqlite")
    elif how == "kb-symlink-out":
        outside = root.parent / "elsewhere"
        outside.mkdir()
        kbdir.symlink_to(outside)


@pytest.mark.parametrize("how", ["kb-is-file", "db-is-folder", "shm-is-folder", "db-is-fifo",
                                 "kb-symlink-out"])
def test_unusable_cache_answers_from_memory(kb_copy: Path, how: str) -> None:
    want = _answers(kb_copy)
    _break(kb_copy, how)
    before = sorted(p.name for p in kb_copy.parent.rglob("*") if "elsewhere" in str(p))
    ls = run_script("ls", "--json", cwd=kb_copy)
    assert ls.code == 0, ls.stderr
    assert ls.json() == want[0]
    notes = _notes(ls.stderr)
    assert len(notes) == 1 and "in-memory index" in notes[0], ls.stderr
    show = run_script("show", "H1.1", "--json", cwd=kb_copy)
    assert show.code == 0 and show.json() == want[1], show.stderr
    verify = run_script("verify", "--json", cwd=kb_copy)
    assert verify.code == 0, verify.stderr
    # The unusable cache was left as it was (nothing written through a symlink).
    after = sorted(p.name for p in kb_copy.parent.rglob("*") if "elsewhere" in str(p))
    assert after == before


def test_damaged_cache_is_rebuilt_once(kb_copy: Path) -> None:
    want = _answers(kb_copy)
    db = kb_copy / INDEX
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    data = bytearray(db.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the first page's schema: "malformed"
    db.write_bytes(bytes(data))
    ls = run_script("ls", "--json", cwd=kb_copy)
    assert ls.code == 0 and ls.json() == want[0], ls.stderr
    assert len(_notes(ls.stderr)) == 1
    again = run_script("ls", "--json", cwd=kb_copy)
    assert again.code == 0 and again.json() == want[0] and not _notes(again.stderr)


def test_rows_that_fail_their_check_are_not_trusted(kb_copy: Path) -> None:
    """Rows lost from the cache (an object count that no longer matches) or a
    parse stored under a blob id that is not its content's are parsed again."""
    want = _answers(kb_copy)
    db = sqlite3.connect(kb_copy / INDEX)
    with db:
        db.execute("DELETE FROM objects WHERE id = 'H1.1'")
        # A forged parse: tree.md's rows claimed for another version of tree.md.
        edited = (kb_copy / "tree.md").read_bytes() + "\n## H77: An edit\nStatus: 待验证\n".encode()
        from kb.git import blob_id

        new = blob_id(edited)
        db.execute("INSERT INTO parsed SELECT path, ?, fmt, meta, source, nobj FROM parsed "
                   "WHERE path = 'tree.md'", (new,))
        db.execute("INSERT INTO objects SELECT path, ?, id, kind, status, title, line, data "
                   "FROM objects WHERE path = 'tree.md'", (new,))
    db.close()
    # `kb index` (and `kb verify`) check every cached parse; quick reads check
    # the parses of changed files (below), not the whole cache every time.
    r = run_script("index", "--json", cwd=kb_copy)
    assert r.code == 0, r.stderr
    assert _answers(kb_copy) == want
    (kb_copy / "tree.md").write_bytes(edited)
    ids = [o["id"] for o in run_script("ls", "--json", cwd=kb_copy).json()["objects"]]
    assert "H77" in ids and ids.count("H1.1") == 1


def test_file_edited_after_its_snapshot_is_stored_under_its_own_blob(kb_copy: Path) -> None:
    from kb.git import blob_id
    from kb.index import Index
    from kb.repo import open_kb, worktree_snapshot

    k = open_kb(kb_copy)
    tree = kb_copy / "tree.md"
    tree.write_bytes(tree.read_bytes() + "\n## H80: First\nStatus: 待验证\n".encode())
    with Index(k) as idx:
        snap = worktree_snapshot(k)
        first = snap.files["tree.md"]
        tree.write_bytes(tree.read_bytes() + "\n## H81: Second\nStatus: 待验证\n".encode())
        idx.ensure(snap)
        assert snap.files["tree.md"] == blob_id(tree.read_bytes()) != first
        assert not idx.has_parse("tree.md", first)
        assert {r.id for r in idx.rows_of("tree.md", snap.files["tree.md"])} >= {"H80", "H81"}


# -- as an unprivileged user -------------------------------------------------------------


@pytest.mark.parametrize("how", ["readonly-kb-dir", "unreadable-kb-dir", "readonly-db"])
def test_cache_without_permission_answers_from_memory(nobody_env, how: str) -> None:
    prefix, env, work = nobody_env
    root = work / f"kb-{how}"
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples", root,
                    ignore=shutil.ignore_patterns(".kb", "__pycache__"))
    git_init(root)
    commit_all(root, "example KB")
    subprocess.run(["chown", "-R", "nobody:", str(root)], check=True)
    ok = _as_nobody(prefix, env, root, "ls", "--json")
    assert ok.returncode == 0, ok.stderr
    want = json.loads(ok.stdout)
    kbdir = root / ".kb"
    # Root owns the cache now: the unprivileged user may read, or not even that.
    subprocess.run(["chown", "-R", "root:", str(kbdir)], check=True)
    if how == "readonly-kb-dir":
        shutil.rmtree(kbdir)
        kbdir.mkdir(mode=0o555)
    elif how == "unreadable-kb-dir":
        os.chmod(kbdir, 0o000)
    else:
        for f in kbdir.iterdir():
            os.chmod(f, 0o444)
        os.chmod(kbdir, 0o555)
    got = _as_nobody(prefix, env, root, "ls", "--json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) == want
    assert len(_notes(got.stderr)) == 1, got.stderr
    show = _as_nobody(prefix, env, root, "show", "H1.1", "--json")
    assert show.returncode == 0 and json.loads(show.stdout)["id"] == "H1.1", show.stderr
