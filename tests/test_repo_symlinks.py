"""Symlinks are judged the same in every snapshot (kb/repo.py, kb/index_rows.py).

A symlink whose target leaves the work tree (absolute, or ``..`` above the top)
is a KB106 error wherever kb reads it -- the work tree, the staged index, a
commit -- and whatever the cache holds; a link inside the work tree reads as
its target; a dangling link is a KB106 error too. The link's own text is never
parsed as Markdown. Real git, real symlinks, kb run as a process.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import commit_all, git, run_script

LINKS = ("outside", "inside", "dangling")


def _kb_with_a_problem(make_kb) -> Path:
    root = make_kb({}, commit=True)
    r = run_script("problem", "add", "Q1", "first problem", cwd=root)
    assert r.code == 0, r.stderr
    return root


def _link(root: Path, kind: str, tmp_path: Path) -> str:
    """Add Problems/q3.md as a symlink of ``kind``; return what verify must say."""
    link = root / "Problems" / "q3.md"
    if kind == "outside":
        away = tmp_path / "away"
        away.mkdir(exist_ok=True)
        shutil.copy(root / "Problems" / "Q1.md", away / "out2.md")
        link.symlink_to(away / "out2.md")
        return "outside the work tree"
    if kind == "dangling":
        link.symlink_to("nothere.md")
        return "does not exist"
    link.symlink_to("Q1.md")
    return "KB209"  # the target's card read under the link's name (its ID is Q1, not q3)


def _lines(out: str) -> list[str]:
    return sorted(line for line in out.splitlines() if "q3.md" in line)


def test_staged_verdict_on_a_symlink_does_not_depend_on_the_cache(make_kb, tmp_path: Path) -> None:
    for kind in LINKS:
        root = _kb_with_a_problem(make_kb)
        expect = _link(root, kind, tmp_path)
        assert run_script("index", cwd=root).code in (0, 1)  # the work tree seen first: warm
        git(root, "add", "Problems/q3.md")
        warm = run_script("verify", "--staged", cwd=root)
        shutil.rmtree(root / ".kb")
        cold = run_script("verify", "--staged", cwd=root)
        assert warm.code == cold.code == 1, (kind, warm.stdout, cold.stdout, cold.stderr)
        assert _lines(warm.stdout) == _lines(cold.stdout), kind
        assert any(expect in line for line in _lines(cold.stdout)), (kind, cold.stdout)
        if kind != "inside":
            assert all("KB106" in line and "[error]" in line for line in _lines(cold.stdout))
            # the link's text is never parsed as a card
            assert "KB126" not in cold.stdout and "KB140" not in cold.stdout, cold.stdout
        # the work tree judges it as git's snapshots do
        wt = run_script("verify", cwd=root)
        assert _lines(wt.stdout) == _lines(cold.stdout), (kind, wt.stdout)


def test_range_in_a_fresh_clone_refuses_a_commit_adding_an_outside_link(make_kb, tmp_path) -> None:
    root = _kb_with_a_problem(make_kb)
    base = git(root, "rev-parse", "HEAD")
    _link(root, "outside", tmp_path)
    commit_all(root, "an outside link")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    r = run_script("verify", "--range", f"{base}..HEAD", cwd=clone)
    assert r.code == 1, (r.stdout, r.stderr)
    assert "Problems/q3.md:1:1: KB106 [error]" in r.stdout and "outside the work tree" in r.stdout
    assert "refused" in r.stderr, r.stderr
    # the commit's snapshot says the same from a cold cache
    shutil.rmtree(clone / ".kb", ignore_errors=True)
    r = run_script("verify", "--rev", "HEAD", cwd=clone)
    assert "Problems/q3.md:1:1: KB106 [error]" in r.stdout, r.stdout


def test_show_and_ls_read_an_inside_link_as_its_target(make_kb, tmp_path: Path) -> None:
    root = _kb_with_a_problem(make_kb)
    _link(root, "inside", tmp_path)
    commit_all(root, "an inside link")
    shutil.rmtree(root / ".kb", ignore_errors=True)
    # git's snapshots parsed first (the cache then holds what they read), the work tree after
    assert run_script("verify", "--rev", "HEAD", cwd=root).code in (0, 1)
    assert run_script("verify", "--staged", cwd=root).code in (0, 1)
    r = run_script("show", "q3", cwd=root)
    assert r.code == 0 and "first problem" in r.stdout, (r.stdout, r.stderr)
    ls = run_script("ls", "problems", cwd=root)
    rows = [line.split() for line in ls.stdout.splitlines()[1:]]
    assert sorted(row[0] for row in rows) == ["Q1", "q3"], ls.stdout
    assert all("first" in row for row in rows), ls.stdout


def test_staged_listing_resolves_links_and_costs_nothing_without_them(make_kb, tmp_path) -> None:
    from kb.repo import Dangling, commit_snapshot, open_kb, staged_snapshot

    root = _kb_with_a_problem(make_kb)
    k = open_kb(root)
    plain = staged_snapshot(k)
    assert plain.unread == {}
    q1 = plain.files["Problems/Q1.md"]
    (root / "Problems" / "in.md").symlink_to("Q1.md")
    (root / "Problems" / "up.md").symlink_to("../../elsewhere.md")
    (root / "Problems" / "gone.md").symlink_to("nothere.md")
    commit_all(root, "links")
    for snap in (staged_snapshot(k), commit_snapshot(k, "HEAD")):
        assert snap.files["Problems/in.md"] == q1
        assert set(snap.unread) == {"Problems/up.md", "Problems/gone.md"}
        assert isinstance(snap.unread["Problems/gone.md"], Dangling)
        assert not isinstance(snap.unread["Problems/up.md"], Dangling)
        assert snap.read(["Problems/in.md", "Problems/up.md", "Problems/gone.md"]) == {
            "Problems/in.md": (root / "Problems" / "Q1.md").read_bytes()}


def test_ls_prints_no_none_for_a_problem_without_priority(make_kb) -> None:
    root = _kb_with_a_problem(make_kb)
    card = root / "Problems" / "Q1.md"
    text = card.read_text(encoding="utf-8")
    assert "- 优先级: 1\n" in text
    card.write_text(text.replace("- 优先级: 1\n", ""), encoding="utf-8")
    commit_all(root, "no priority")
    r = run_script("ls", "problems", cwd=root)
    assert "Q1" in r.stdout, (r.stdout, r.stderr)
    assert "None" not in r.stdout, r.stdout


def test_a_range_patched_from_diffs_judges_links_as_the_snapshots_do(make_kb, tmp_path) -> None:
    """The commits inside a range are snapshots patched from git's diffs: a link they
    add reads as its target (inside) or is never read (outside), as in a listing."""
    from kb.checks.changes import diff_commits, patch_files
    from kb.repo import Snapshot, commit_snapshot, open_kb

    root = _kb_with_a_problem(make_kb)
    base = git(root, "rev-parse", "HEAD")
    (root / "Problems" / "in.md").symlink_to("Q1.md")
    (root / "Problems" / "up.md").symlink_to("../../elsewhere.md")
    mid = commit_all(root, "links")
    (root / "notes.md").write_text("later\n", encoding="utf-8")
    commit_all(root, "later")
    k = open_kb(root)
    old = commit_snapshot(k, base)
    changes = diff_commits(k, base, mid)
    assert {(c.path, c.new_link) for c in changes} == {("Problems/in.md", True), ("Problems/up.md", True)}
    files, fmts = patch_files(old.files, old.formats, changes, k, forward=True)
    assert files["Problems/in.md"] == old.files["Problems/Q1.md"]
    patched = Snapshot(kb=k, kind="commit", files=files, formats=fmts, rev=mid)
    assert set(patched.read(["Problems/in.md", "Problems/up.md"])) == {"Problems/in.md"}
    clone = tmp_path / "clone-mid"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    r = run_script("verify", "--range", f"{base}..HEAD", cwd=clone)
    assert r.code == 1 and "Problems/up.md:1:1: KB106 [error]" in r.stdout, (r.stdout, r.stderr)
    assert not [line for line in r.stdout.splitlines()
                if "in.md" in line and ("KB126" in line or "KB140" in line)], r.stdout


def test_an_error_made_through_a_links_target_is_the_changes_own(make_kb, tmp_path: Path) -> None:
    """Editing the file a symlink reads (git lists the target, not the link) changes the
    card kb reads under the link: an error it brings blocks the hook and the range check,
    warm, cold and in a fresh clone, instead of passing as pre-existing."""
    from test_verify_support import problem

    root = make_kb({"drafts/q7.md": problem("q7")}, commit=False)
    (root / "Problems").mkdir(exist_ok=True)
    (root / "Problems" / "q7.md").symlink_to("../drafts/q7.md")
    commit_all(root, "a card kept in drafts, linked into Problems")
    start = git(root, "rev-parse", "HEAD").strip()
    draft = root / "drafts" / "q7.md"
    draft.write_text(draft.read_text(encoding="utf-8").replace("- 状态: 求解中", "- 状态: 瞎写"),
                     encoding="utf-8")
    git(root, "add", "drafts/q7.md")
    for cache in ("warm", "cold"):
        if cache == "cold":
            shutil.rmtree(root / ".kb", ignore_errors=True)
        staged = run_script("verify", "--staged", cwd=root)
        assert staged.code == 1, (cache, staged.stdout, staged.stderr)
        bad = [ln for ln in staged.stdout.splitlines() if "KB205" in ln]
        assert bad and all("Problems/q7.md" in ln and "pre-existing" not in ln for ln in bad), staged.stdout
    git(root, "commit", "-q", "--no-verify", "-m", "status through the link")
    fresh = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(root), str(fresh))
    for where in (root, fresh):
        ranged = run_script("verify", "--range", f"{start}..HEAD", cwd=where)
        assert ranged.code == 1, (where, ranged.stdout, ranged.stderr)
        assert any("KB205" in ln and "Problems/q7.md" in ln for ln in ranged.stdout.splitlines())


def test_the_hook_sees_a_linked_card_deleted(make_kb, tmp_path: Path) -> None:
    """``git rm`` of a symlink that reads as a card kept outside the KB's folders: the
    card was removed (KB301), in the pre-commit hook as in the range check. HEAD's
    snapshot patched back from the diff read the link's target as dangling, so the
    hook saw no card before and let the deletion through."""
    from test_verify_support import problem

    root = make_kb({"drafts/q70.md": problem("q70")}, commit=False)
    (root / "Problems").mkdir(exist_ok=True)
    (root / "Problems" / "q70.md").symlink_to("../drafts/q70.md")
    start = commit_all(root, "a card kept in drafts, linked into Problems")
    git(root, "rm", "-q", "Problems/q70.md")
    for cache in ("warm", "cold"):
        if cache == "cold":
            shutil.rmtree(root / ".kb", ignore_errors=True)
        staged = run_script("verify", "--staged", cwd=root)
        assert staged.code == 1, (cache, staged.stdout, staged.stderr)
        assert any("KB301" in ln and "q70" in ln for ln in staged.stdout.splitlines()), staged.stdout
    git(root, "commit", "-q", "--no-verify", "-m", "the link deleted")
    ranged = run_script("verify", "--range", f"{start}..HEAD", cwd=root)
    assert ranged.code == 1 and "KB301" in ranged.stdout, (ranged.stdout, ranged.stderr)


def test_a_link_climbing_above_the_top_is_outside_wherever_it_lands(make_kb) -> None:
    """A relative link whose text climbs above the work tree's top and back in leads
    elsewhere in every other clone: KB106 in the work tree as in the staged index, warm
    or cold (the work tree used to follow it here, and to say so only without a cache)."""
    from test_verify_support import problem

    root = make_kb({"drafts/q7.md": problem("q7")}, commit=True)
    (root / "Problems").mkdir(exist_ok=True)
    climb = root / "Problems" / "climb.md"
    climb.symlink_to(f"../../{root.name}/drafts/q7.md")
    assert climb.read_text(encoding="utf-8")  # it does land inside, on this machine
    git(root, "add", "Problems/climb.md")
    seen = []
    for args in (["verify"], ["verify", "--staged"], ["verify"]):
        if not seen:
            shutil.rmtree(root / ".kb", ignore_errors=True)
        r = run_script(*args, cwd=root)
        mine = [ln for ln in r.stdout.splitlines() if "climb.md" in ln]
        assert r.code == 1 and mine and all("KB106" in ln for ln in mine), (args, r.stdout)
        seen.append(mine)
    assert seen[0] == seen[2]  # the work tree, before and after the staged check filled the cache
