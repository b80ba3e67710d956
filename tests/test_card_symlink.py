"""A card file that is a symlink (git mode 120000) inside a folder of cards.

- One leading out of the KB's folder -- elsewhere in the repository, for a KB in a
  subfolder (``sub/Problems/q9.md -> ../../outside/secret.md``) -- is read as no
  record: KB106 at the link's path and line 1 in the work tree, the staged index
  (the pre-commit hook refuses the commit adding it), a commit and a range in a
  fresh clone, ``kb index``; ``kb ls`` and ``kb show`` never list what it leads to,
  and the card writers refuse to write there (the file outside is never touched).
- One leading to another file of the KB reads as its target (as before), but kb
  writes nothing through it and never replaces it by a file: the writers refuse,
  and so do ``kb verify --fix`` and the dashboard it regenerates.

Real git repositories, real symlinks, the hook run by git itself.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import commit_all, git, invoke, tree_snapshot
from test_verify_support import git_run, problem

SECRET = problem("q9").replace("Problem q9", "Secret q9 outside the KB")


def _sub_kb(make_kb) -> tuple[Path, Path]:
    """A KB in ``sub/`` of a repository whose ``outside/secret.md`` (a card's text) lies
    outside the KB; returns (the KB folder, the repository's top)."""
    root = make_kb({"Problems/q1.md": problem("q1")}, subdir="sub")
    top = root.parent
    (top / "outside").mkdir()
    (top / "outside" / "secret.md").write_text(SECRET, encoding="utf-8")
    commit_all(top, "a KB in sub/, and a file outside it")
    return root, top


def _files(top: Path) -> dict[str, bytes]:
    """Every file of the work tree (symlinks as their text), kb's cache left out."""
    return {p: b for p, b in tree_snapshot(top, skip_git=True).items()
            if not (p.startswith(".kb/") or "/.kb/" in p)}


def _kb106(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if "q9.md" in ln]


def test_a_card_linked_out_of_the_kb_is_kb106_everywhere_and_never_written(make_kb, tmp_path) -> None:
    root, top = _sub_kb(make_kb)
    assert invoke("hooks", "install", cwd=root).code == 0
    commit_all(top, "hooks")
    base = git(top, "rev-parse", "HEAD")
    (root / "Problems" / "q9.md").symlink_to("../../outside/secret.md")
    git(top, "add", "sub/Problems/q9.md")
    want = (f"sub/Problems/q9.md:1:1: KB106 [error] Problems/q9.md is a symlink to "
            f"{os.path.realpath(top / 'outside' / 'secret.md')}, outside the KB folder sub")
    # the pre-commit hook: the commit adding the link is refused, said at the link's line
    staged = invoke("verify", "--staged", cwd=root)
    assert staged.code == 1 and any(ln.startswith(want) for ln in _kb106(staged.stdout)), staged.stdout
    proc = git_run(top, "commit", "-q", "-m", "a card kept outside the KB")
    said = (proc.stdout + proc.stderr).decode("utf-8")
    assert proc.returncode == 1 and want in said and "Traceback" not in said, said
    assert git(top, "rev-parse", "HEAD") == base
    git(top, "commit", "-q", "--no-verify", "-m", "a card kept outside the KB")
    for cache in ("warm", "cold"):
        if cache == "cold":
            shutil.rmtree(root / ".kb", ignore_errors=True)
        for args in (["verify"], ["verify", "--staged"], ["verify", "--rev", "HEAD"],
                     ["verify", "--range", f"{base}..HEAD"]):
            r = invoke(*args, cwd=root)
            mine = _kb106(r.stdout)
            # (the staged index holds the link as HEAD does: said, pre-existing, not blocking)
            code = 0 if args == ["verify", "--staged"] else 1
            assert r.code == code and mine and all(ln.startswith(want) for ln in mine), (args, r.stdout)
            assert "Secret" not in r.stdout
    # CI: the range in a fresh clone refuses it too
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(top), str(clone))
    r = invoke("verify", "--range", f"{base}..HEAD", cwd=clone / "sub")
    there = want.replace(str(top), str(clone))
    assert r.code == 1 and any(ln.startswith(there) for ln in _kb106(r.stdout)), r.stdout
    idx = invoke("index", cwd=root)
    assert idx.code == 1 and "Problems/q9.md:1:1: KB106 [error]" in idx.stdout, idx.stdout
    assert "outside the KB folder sub" in idx.stdout
    listed = invoke("ls", "problems", cwd=root)
    assert listed.code == 0 and "q1" in listed.stdout and "Secret" not in listed.stdout
    assert invoke("show", "q9", cwd=root).code != 0
    # writers: nothing outside the KB is written, the link stays, no commit
    head = git(top, "rev-parse", "HEAD")
    before = _files(top)
    w = invoke("problem", "plan", "q9", "written through", cwd=root)
    assert w.code != 0 and "unknown problem 'q9'" in w.stderr, (w.stdout, w.stderr)
    w = invoke("problem", "add", "q9", "again", cwd=root)
    assert w.code == 1 and "symlink" in w.stderr and "outside the KB folder sub" in w.stderr, w.stderr
    assert _files(top) == before and git(top, "rev-parse", "HEAD") == head
    assert (root / "Problems" / "q9.md").is_symlink()
    assert (top / "outside" / "secret.md").read_text(encoding="utf-8") == SECRET


def test_the_work_tree_never_reads_a_link_out_of_the_kb(make_kb) -> None:
    """Uncommitted (untracked, then staged and changed on disk): the work tree's reader
    judges the link as git's snapshots do."""
    from kb.repo import open_kb, outside_links, read_worktree, staged_snapshot

    root, top = _sub_kb(make_kb)
    link = root / "Problems" / "q9.md"
    link.symlink_to("../../outside/secret.md")
    r = invoke("verify", cwd=root)
    assert r.code == 1 and "outside the KB folder sub" in r.stdout and "Secret" not in r.stdout, r.stdout
    k = open_kb(root)
    real = os.path.realpath(top / "outside" / "secret.md")
    assert outside_links(k, ["Problems/q9.md", "Problems/q1.md"]) == {"Problems/q9.md": real}
    contents, outside = read_worktree(k, ["Problems/q9.md", "Problems/q1.md"])
    assert set(contents) == {"Problems/q1.md"} and outside == {"Problems/q9.md": real}
    git(top, "add", "sub/Problems/q9.md")
    snap = staged_snapshot(k)
    assert set(snap.unread) == {"Problems/q9.md"} and snap.read(["Problems/q9.md"]) == {}
    assert snap.files["Problems/q9.md"] == git(top, "rev-parse", ":sub/Problems/q9.md")


def _linked_card(make_kb) -> Path:
    """A KB whose card q7 is kept in drafts/ and linked into Problems/ (committed)."""
    root = make_kb({"Problems/q1.md": problem("q1"), "drafts/q7.md": problem("q7")})
    (root / "Problems" / "q7.md").symlink_to("../drafts/q7.md")
    commit_all(root, "a card kept in drafts, linked into Problems")
    return root


def test_a_card_linked_inside_the_kb_is_read_but_never_written_through(make_kb) -> None:
    root = _linked_card(make_kb)
    shown = invoke("show", "q7", cwd=root)
    assert shown.code == 0 and "Problem q7" in shown.stdout, shown.stdout
    head = git(root, "rev-parse", "HEAD")
    before = _files(root)
    w = invoke("problem", "plan", "q7", "a new plan", cwd=root)
    assert w.code == 1, (w.stdout, w.stderr)
    assert "Problems/q7.md is a symlink to" in w.stderr and "nothing was written" in w.stderr, w.stderr
    assert os.path.realpath(root / "drafts" / "q7.md") in w.stderr
    # the link is still a link (not replaced by a copy of the card), its target unchanged
    assert (root / "Problems" / "q7.md").is_symlink()
    assert _files(root) == before and git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""
    # a card of a regular file is still written
    ok = invoke("problem", "plan", "q1", "a new plan", cwd=root)
    assert ok.code == 0, ok.stderr


def test_verify_fix_and_the_dashboard_leave_links_alone(make_kb) -> None:
    """``kb verify --fix`` applies no fix through a linked tree.md (the fix is said as
    skipped), and does not regenerate a DASHBOARD.md that is a link."""
    tree = "# Tree\n\n## H1: Root\nStatus： 待验\n"  # a full-width colon: KB110, fixable
    root = make_kb({"notes/tree.md": tree, "notes/dash.md": "# old dashboard\n"})
    (root / "tree.md").symlink_to("notes/tree.md")
    (root / "DASHBOARD.md").symlink_to("notes/dash.md")
    commit_all(root, "tree and dashboard kept in notes/")
    r = invoke("verify", cwd=root)
    assert "tree.md:4:7: KB110" in r.stdout, r.stdout
    before = _files(root)
    fixed = invoke("verify", "--fix", cwd=root)
    assert "Traceback" not in fixed.stderr, fixed.stderr
    assert "tree.md:4: a symlink" in fixed.stdout + fixed.stderr, (fixed.stdout, fixed.stderr)
    assert (root / "tree.md").is_symlink() and (root / "DASHBOARD.md").is_symlink()
    assert _files(root) == before
