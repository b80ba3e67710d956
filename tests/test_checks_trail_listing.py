"""The KBs, and KB241's listing of TRAIL.md and the exploration log, on the pre-commit hook, read out
of the staged listing kb already holds: the same entries git's own pathspec listing
gives (``git ls-files -s`` / ``git ls-tree -r``), and the same findings."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import git, invoke
from trail_support import kb, ok  # noqa: F401 (a fixture and a helper)


def _repo(tmp_path: Path, prefix: str) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    kbdir = root / prefix if prefix else root
    kbdir.mkdir(parents=True, exist_ok=True)
    names = ["kb.toml", "TRAIL.md", "TRAIL.md.bak", "x/TRAIL.md", "a\tTRAIL.md",
             ".explore-tree/ops/2026/a.jsonl", ".explore-tree/ops/b.jsonl", ".explore-tree/opsX/c.jsonl",
             ".explore-tree/ops.jsonl", "notes/.explore-tree/ops/d.jsonl"]
    for i, name in enumerate(names):
        p = kbdir / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("[kb]\n" if name == "kb.toml" else f"content {i}\n", encoding="utf-8")
    if prefix:  # a file of the repository outside the KB with the same name
        (root / "TRAIL.md").write_text("outside\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "base")
    # staged changes: one log file more, one gone, TRAIL.md changed
    (kbdir / ".explore-tree/ops/e.jsonl").write_text("new\n", encoding="utf-8")
    (kbdir / "TRAIL.md").write_text("changed\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "rm", "-q", "--cached", f"{prefix}.explore-tree/ops/b.jsonl")
    return kbdir


@pytest.mark.parametrize("prefix", ["", "sub/"])
def test_the_listing_out_of_the_staged_one_is_gits(tmp_path: Path, prefix: str) -> None:
    from kb import git as kgit
    from kb.checks import trail_rules as T
    from kb.repo import open_kb

    k = open_kb(_repo(tmp_path, prefix))
    assert k.prefix == prefix
    data = kgit.run(["ls-files", "-s", "-z", *(["--", k.prefix] if k.prefix else [])], k.top).stdout
    staged, blobs = T.from_staged_listing(k, data)
    want_staged = T._list(SimpleNamespace(kb=k, snap=SimpleNamespace(kind="staged")), list(T._SPEC))
    assert staged == want_staged
    assert sorted(staged) == [".explore-tree/ops/2026/a.jsonl", ".explore-tree/ops/e.jsonl", "TRAIL.md"]
    # committed as it is staged: HEAD lists the same blobs
    git(k.top, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "next")
    head = git(k.top, "rev-parse", "HEAD")
    want_head = T._list(SimpleNamespace(kb=k, snap=SimpleNamespace(kind="commit", rev=head)), list(T._SPEC))
    assert blobs == want_head


def test_a_stale_trail_on_the_hook_is_found_as_git_lists_it(kb: Path, monkeypatch) -> None:
    """HEAD's TRAIL.md is stale; a staged change leaving the trail alone, then one
    re-rendering it without committing: the same findings as with git's listings."""
    from kb.checks import trail_rules as T

    ok(kb, "add", "--kind", "goal", "--title", "g")
    ok(kb, "render")
    ok(kb, "add", "--kind", "question", "--title", "q")  # the committed TRAIL.md is now stale
    (kb / "notes.md").write_text("a note\n", encoding="utf-8")
    git(kb, "add", "notes.md")

    def both() -> tuple:
        fast = invoke("verify", "--staged", "--json", cwd=kb)
        with monkeypatch.context() as m:
            m.setattr(T, "from_staged_listing", lambda *a: None)  # git lists them
            slow = invoke("verify", "--staged", "--json", cwd=kb)
        assert (fast.code, fast.json()) == (slow.code, slow.json())
        return fast.json()

    assert [d["code"] for d in both()["diagnostics"]].count("KB241") == 1
    from kb.repo import open_kb
    from kb.trail.render import render
    from kb.trail.replay import load

    (kb / "TRAIL.md").write_text(render(load(open_kb(kb), use_cache=False)), encoding="utf-8")
    git(kb, "add", "TRAIL.md")
    assert [d["code"] for d in both()["diagnostics"]].count("KB241") == 0


def test_the_kbs_out_of_the_staged_listing_are_gits(tmp_path: Path) -> None:
    """The pre-commit check finds the KBs (every staged kb.toml) in its one listing of
    the staged index: what ``git ls-files -- ':(glob)**/kb.toml'`` finds."""
    from kb import git as kgit
    from kb.checks.targets import kbs_in_listing, staged_kbs

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    for name in ["kb.toml", "sub/kb.toml", "a/b/kb.toml", "notkb.toml", "c/kb.toml.bak", "d/xkb.toml",
                 "e\tkb.toml", "f/g\t/kb.toml", "h/kb.toml/inner.md"]:
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("[kb]\n", encoding="utf-8")
    git(root, "add", "-A")
    data = kgit.run(["ls-files", "-s", "-z"], root).stdout
    assert kbs_in_listing(data) == staged_kbs(root)
    assert staged_kbs(root) == ["", "a/b/", "f/g\t/", "sub/"]
