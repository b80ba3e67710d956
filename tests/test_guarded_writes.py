"""Every commit kb makes passes the format guard (issue 11): lock release,
kb dashboard; kb hyp add never reuses an ID the file shows in a form kb
does not read."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, invoke


def _commits(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


def test_lock_release_refuses_a_file_it_would_break(tree_kb: Path) -> None:
    root = tree_kb
    assert invoke("hyp", "add", "A", cwd=root).code == 0
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=root).code == 0
    tree = root / "tree.md"
    good = tree.read_bytes()
    # a second H1: a duplicate ID a hand edit (or a bad merge) brings in
    tree.write_bytes(good + "\n## H1: A again\nStatus: 待验\n".encode())
    n = _commits(root)
    r = invoke("lock", "release", "tree.md", "--owner", "alice", "--no-verify", cwd=root)
    assert r.code == 1 and "H1" in r.stderr and "nothing was changed" in r.stderr, r.stderr
    assert _commits(root) == n
    assert git(root, "for-each-ref", "refs/kb/locks") != ""  # the lock is kept
    tree.write_bytes(b"\xff\xfe not UTF-8\n" + good)
    r = invoke("lock", "release", "tree.md", "--owner", "alice", "--no-verify", cwd=root)
    assert r.code == 1 and "format errors" in r.stderr, r.stderr
    assert _commits(root) == n
    tree.write_bytes(good + "\n## H2: Fine\nStatus: 待验\n".encode())
    r = invoke("lock", "release", "tree.md", "--owner", "alice", "--no-verify", cwd=root)
    assert r.code == 0, r.stderr
    assert _commits(root) == n + 1


def test_dashboard_refuses_unreadable_or_dirty_tree(tree_kb: Path) -> None:
    root = tree_kb
    for s in ("First", "Second"):
        assert invoke("hyp", "add", s, cwd=root).code == 0
    tree = root / "tree.md"
    good = tree.read_bytes()
    dash = (root / "DASHBOARD.md").read_bytes()
    n = _commits(root)
    tree.write_bytes(good + b"\xff\xfe garbage\n")
    r = invoke("dashboard", cwd=root)
    assert r.code == 1 and "tree.md" in r.stderr, r.stderr
    assert _commits(root) == n and (root / "DASHBOARD.md").read_bytes() == dash
    tree.write_bytes(good + "\n## H3: Not committed\nStatus: 待验\n".encode())
    r = invoke("dashboard", cwd=root)
    assert r.code == 1 and "uncommitted" in r.stderr, r.stderr
    assert _commits(root) == n and (root / "DASHBOARD.md").read_bytes() == dash
    r = invoke("dashboard", "--no-commit", cwd=root)
    assert r.code == 0, r.stderr
    assert b"H3" in (root / "DASHBOARD.md").read_bytes()
    assert _commits(root) == n


@pytest.mark.parametrize("line", ["## **H5** Bold heading", "### H5 — no colon",
                                  "| H5 | in a table |", "- **H5**: a bold list item",
                                  "## 5. H5: numbered"])
def test_hyp_add_never_takes_an_id_the_file_shows(tree_kb: Path, line: str) -> None:
    root = tree_kb
    assert invoke("hyp", "add", "A", cwd=root).code == 0
    tree = root / "tree.md"
    tree.write_text(tree.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    git(root, "commit", "-qam", "hand edit")
    r = invoke("hyp", "add", "B", "--json", cwd=root)
    if r.code == 0:
        assert r.json()["id"] not in ("H5",)
        assert r.json()["id"] == "H6"
    else:  # refused because the file has a format error (KB119, an error since issue #11,
        # names the unread heading's ID): never a collision either
        assert r.code == 1 and r.json()["error"]["kind"] == "refused"
        assert "KB119" in r.json()["error"]["message"]
        assert (root / "tree.md").read_text(encoding="utf-8").count("H5") == 1  # nothing added


def test_hyp_add_reads_an_id_mentioned_in_a_statement_as_no_declaration(tree_kb: Path) -> None:
    """An ID further along a heading is a mention, not the heading's own: the next new
    ID follows the declarations (it was H51 after a statement naming H50)."""
    root = tree_kb
    assert invoke("hyp", "add", "A", cwd=root).code == 0
    assert invoke("hyp", "add", "Compare with H50 and | H60 |", cwd=root).code == 0
    tree = root / "tree.md"
    tree.write_text(tree.read_text(encoding="utf-8") + "\n| H7 | a table row naming H70 |\n",
                    encoding="utf-8")
    git(root, "commit", "-qam", "hand edit")
    r = invoke("hyp", "add", "B", "--json", cwd=root)
    assert r.code == 0, r.stderr
    assert r.json()["id"] == "H8"  # after H7, the row's own ID; not H51, H61 or H71
