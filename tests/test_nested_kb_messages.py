"""In a repository of two KBs (one in a folder), the messages of cross-file rules name
repository paths, as the location before them does (KB202 said "at tree.md:7 and at
tree.md:3" under the location sub/tree.md:7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import commit_all, git, git_init, invoke


@pytest.fixture
def nested(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with a KB at its top and another in ``sub/``; H1 added in sub (committed)."""
    from kb.ops.init import init_kb

    monkeypatch.setenv("KB_TODAY", "2026-11-29")
    root = git_init(tmp_path / "repo")
    init_kb(root)
    init_kb(root / "sub")
    commit_all(root, "two KBs")
    res = invoke("-C", "sub", "hyp", "add", "a", cwd=root)
    assert res.code == 0, res.stderr
    return root


def _lines(root: Path, *args: str) -> list[str]:
    res = invoke("-C", "sub", "verify", *args, cwd=root)
    return res.stdout.splitlines()


def test_kb202_names_repository_paths(nested: Path) -> None:
    with open(nested / "sub" / "tree.md", "a", encoding="utf-8") as f:
        f.write("\n## H1: dup\nStatus: 待验\nEvidence: (empty)\n")
    dup = [ln for ln in _lines(nested) if " KB202 " in ln]
    assert len(dup) == 1 and dup[0].startswith("sub/tree.md:7:1: KB202"), dup
    assert "at sub/tree.md:7 and at sub/tree.md:3;" in dup[0], dup
    stale = [ln for ln in _lines(nested) if " KB240 " in ln]
    assert stale and stale[0].startswith("sub/DASHBOARD.md:"), stale
    assert "sub/DASHBOARD.md is stale" in stale[0] and "renders from sub/tree.md " in stale[0]


def test_history_and_driver_messages_name_repository_paths(nested: Path) -> None:
    tree = nested / "sub" / "tree.md"
    text = tree.read_text(encoding="utf-8")
    tree.write_text(text[:text.index("## H1")], encoding="utf-8")
    gone = [ln for ln in _lines(nested) if " KB301 " in ln]
    assert gone and gone[0].startswith("sub/tree.md:"), gone
    assert "declared at sub/tree.md:3 " in gone[0], gone
    # KB245: the top folder's .gitattributes is ".gitattributes" (was sub/../.gitattributes)
    git(nested, "config", "--remove-section", "merge.kb-tree")
    drivers = sorted(ln for ln in _lines(nested) if " KB245 " in ln)
    assert [ln.split(":", 1)[0] for ln in drivers] == [".gitattributes", "sub/.gitattributes"]
    assert drivers[0].split(" [warning] ")[1].startswith(".gitattributes names")
    assert drivers[1].split(" [warning] ")[1].startswith("sub/.gitattributes names")
