"""A folder of the layout that is a symlink is said, never silent (KB005).

``ln -s /elsewhere Problems``: git tracks the link (mode 120000), not the files under
it, so kb reads no card there and writes none through it. Every reader says so, at
the link's path, with what to do: ``kb verify`` in the working tree, in the staged
index (the pre-commit hook: a link the change adds blocks, one HEAD holds as it is
does not), over a commit or a range (CI, a fresh clone); ``kb index`` and ``kb ls``.
The link is found in git's listing kb reads anyway: no git process of its own. The
KB folder itself, reached through a symlink, and free folders (``Notes/``) are not
folders of the layout. Real git repositories, real symlinks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import commit_all, count_processes, git, invoke
from test_verify_support import git_run, method, problem


def _kb(make_kb, config: str = "[kb]\n") -> Path:
    """A committed KB with one problem card and a free folder."""
    return make_kb({"Problems/q1.md": problem("q1"), "Notes/n.md": "free text\n"},
                   config=config, commit=True)


def _away(root: Path, tmp_path: Path, folder: str, files: dict[str, str]) -> Path:
    """Put ``files`` in a folder outside the work tree and link KB folder ``folder`` to it
    (moving what was there out first); return the folder outside."""
    away = tmp_path / f"away-{root.name}-{folder.replace('/', '-')}"
    if (root / folder).is_dir():
        shutil.move(str(root / folder), str(away))
    away.mkdir(exist_ok=True)
    for name, text in files.items():
        (away / name).write_text(text, encoding="utf-8")
    (root / folder).symlink_to(away, target_is_directory=True)
    return away


def _said(out: str, path: str, target: Path) -> bool:
    """Whether ``out`` holds KB005 at ``path`` naming where the link leads."""
    return f"{path}:1:1: KB005 [error] " in out and f"is a symlink to {os.path.realpath(target)}" in out


def _no_traceback(*results) -> None:
    for r in results:
        assert "Traceback" not in r.stderr + r.stdout, r.stderr


def test_a_committed_card_folder_linked_outside_is_said_by_every_reader(make_kb, tmp_path) -> None:
    root = _kb(make_kb)
    away = _away(root, tmp_path, "Problems", {})
    commit_all(root, "Problems moved out of the repository")  # no hook: plain git
    head = git(root, "rev-parse", "HEAD")
    for args in (["verify"], ["verify", "--rev", "HEAD"]):
        r = invoke(*args, cwd=root)
        assert r.code == 1 and _said(r.stdout, "Problems", away), (args, r.stdout, r.stderr)
        assert "paths.problems" in r.stdout and "rm Problems && cp -R" in r.stdout, r.stdout
        _no_traceback(r)
    # the hook: HEAD holds the link as it is, so a commit of something else is not refused
    staged = invoke("verify", "--staged", "--json", cwd=root)
    found = [d for d in staged.json()["diagnostics"] if d["code"] == "KB005"]
    assert staged.code == 0 and [(d["path"], d["pre_existing"], d["blocking"]) for d in found] == [
        ("Problems", True, False)], staged.stdout
    idx = invoke("index", cwd=root)
    assert idx.code == 1 and _said(idx.stdout, "Problems", away), (idx.stdout, idx.stderr)
    listed = invoke("ls", "problems", cwd=root)
    assert listed.code == 0 and "q1" not in listed.stdout
    assert "kb: Problems:1: KB005 [error] Problems is a symlink" in listed.stderr, listed.stderr
    # writing through it is refused, and loses nothing
    before = sorted(os.listdir(away)), (root / "Notes" / "n.md").read_bytes()
    w = invoke("problem", "add", "Q2", "second problem", cwd=root)
    assert w.code == 1 and "symlink" in w.stderr, (w.stdout, w.stderr)
    assert (sorted(os.listdir(away)), (root / "Notes" / "n.md").read_bytes()) == before
    assert git(root, "rev-parse", "HEAD") == head
    _no_traceback(staged, idx, listed, w)


def test_the_pre_commit_hook_refuses_a_folder_link_the_commit_adds(make_kb, tmp_path) -> None:
    root = _kb(make_kb)
    assert invoke("hooks", "install", cwd=root).code == 0
    commit_all(root, "hooks")
    head = git(root, "rev-parse", "HEAD")
    away = _away(root, tmp_path, "Methods", {"m1.md": method("m1")})
    git(root, "add", "Methods")
    r = invoke("verify", "--staged", "--json", cwd=root)
    found = [d for d in r.json()["diagnostics"] if d["code"] == "KB005"]
    assert r.code == 1 and [(d["path"], d["blocking"]) for d in found] == [("Methods", True)], r.stdout
    proc = git_run(root, "commit", "-q", "-m", "methods elsewhere")
    said = (proc.stdout + proc.stderr).decode("utf-8")
    assert proc.returncode == 1 and "Methods:1:1: KB005 [error]" in said, said
    assert "Traceback" not in said and git(root, "rev-parse", "HEAD") == head
    assert os.listdir(away) == ["m1.md"]


def test_a_link_only_in_the_work_tree_then_replaced_by_the_folder(make_kb, tmp_path) -> None:
    """Untracked, the link is the work tree's finding, not the staged index's; committed
    and then replaced on disk by the real folder, the work tree reads the cards again
    while the staged index still holds the link (pre-existing)."""
    root = _kb(make_kb)
    away = _away(root, tmp_path, "Methods", {"m1.md": method("m1")})
    wt = invoke("verify", cwd=root)
    assert wt.code == 1 and _said(wt.stdout, "Methods", away), (wt.stdout, wt.stderr)
    staged = invoke("verify", "--staged", cwd=root)
    assert staged.code == 0 and "KB005" not in staged.stdout, staged.stdout
    idx = invoke("index", cwd=root)
    assert idx.code == 1 and _said(idx.stdout, "Methods", away), idx.stdout
    commit_all(root, "methods linked")
    (root / "Methods").unlink()
    shutil.copytree(away, root / "Methods")
    wt = invoke("verify", cwd=root)
    assert "KB005" not in wt.stdout, wt.stdout
    assert "m1" in invoke("ls", "methods", cwd=root).stdout
    staged = invoke("verify", "--staged", cwd=root)
    assert staged.code == 0 and "Methods:1:1: KB005 [error]" in staged.stdout, staged.stdout
    assert "(pre-existing)" in staged.stdout
    _no_traceback(wt, staged, idx)


def test_a_link_above_a_configured_folder_inside_the_kb_in_a_fresh_clone(make_kb, tmp_path) -> None:
    """A link above the folder kb.toml names, to a folder inside the KB: the range check
    of a fresh clone (CI) refuses the commit that made it, and says which value of
    kb.toml would read the cards where they are."""
    config = '[kb]\n\n[paths]\nproblems = "VibeMath/Projects/demo/Problems"\n'
    root = make_kb({"VibeMath/Projects/demo/Problems/q1.md": problem("q1")}, config=config,
                   commit=True)
    base = git(root, "rev-parse", "HEAD")
    (root / "data").mkdir()
    git(root, "mv", "VibeMath", "data/vm")
    (root / "VibeMath").symlink_to("data/vm", target_is_directory=True)
    commit_all(root, "the layout moved under data/")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    r = invoke("verify", "--range", f"{base}..HEAD", "--json", cwd=clone)
    found = [d for d in r.json()["diagnostics"] if d["code"] == "KB005"]
    assert r.code == 1 and [(d["path"], d["blocking"]) for d in found] == [("VibeMath", True)], r.stdout
    msg = found[0]["message"]
    assert "VibeMath is a symlink to" in msg and "(paths.problems)" in msg, msg
    assert 'set paths.problems = "data/vm/Projects/demo/Problems" in kb.toml' in msg, msg
    # the commit's own snapshot says the same, judged against its parent (introduced)
    r = invoke("verify", "--rev", "HEAD", cwd=clone)
    assert r.code == 1 and "VibeMath:1:1: KB005 [error]" in r.stdout, r.stdout
    assert "KB005" in invoke("index", cwd=clone).stdout


def test_the_kb_root_and_free_folders_are_not_folders_of_the_layout(make_kb, tmp_path) -> None:
    """The KB (a subfolder) opened through a symlink at the top, a link at a free
    folder (Notes) and one at the top of the repository: only the card folder's link
    is said, under the KB's path."""
    root = make_kb({"Problems/q1.md": problem("q1")}, subdir="sub", commit=True)
    top = root.parent
    (top / "alias").symlink_to("sub", target_is_directory=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "Notes").symlink_to(elsewhere, target_is_directory=True)
    away = _away(root, tmp_path, "Methods", {"m1.md": method("m1")})
    commit_all(top, "links")
    for args in (["verify", "--json"], ["verify", "--staged", "--json"], ["verify", "--rev", "HEAD", "--json"]):
        r = invoke(*args, cwd=top / "alias")
        found = [(d["path"], d["code"]) for d in r.json()["diagnostics"] if d["code"] == "KB005"]
        assert found == [("sub/Methods", "KB005")], (args, r.stdout)
        assert os.path.realpath(away) in r.stdout
    idx = invoke("index", "--json", cwd=top / "alias")
    assert [d["path"] for d in idx.json()["diagnostics"] if d["code"] == "KB005"] == ["Methods"]


def test_kb_toml_sets_the_codes_severity(make_kb, tmp_path) -> None:
    root = _kb(make_kb, config='[kb]\n\n[rules.severity]\nKB005 = "warning"\n')
    _away(root, tmp_path, "Methods", {"m1.md": method("m1")})
    commit_all(root, "methods linked")
    for args in (["verify"], ["verify", "--staged"], ["verify", "--rev", "HEAD"], ["index"]):
        r = invoke(*args, cwd=root)
        assert r.code == 0 and "Methods:1:1: KB005 [warning]" in r.stdout, (args, r.stdout)


@pytest.mark.parametrize("layout", ["default", "research"])
def test_layout_folders_are_the_configured_folders_and_those_above(layout: str, tmp_path) -> None:
    from kb.config import DEFAULT_PATHS, RESEARCH_PATHS, Config
    from kb.parse import layout_folders

    cfg = Config(root=tmp_path, paths=dict(DEFAULT_PATHS if layout == "default" else RESEARCH_PATHS))
    folders = layout_folders(cfg)
    assert folders["Problems"] == (("paths.problems", "Problems"),)
    assert "" not in folders and "." not in folders and "Notes" not in folders
    if layout == "research":  # the folder above tree.md holds it, the dashboard, experiments
        assert [k for k, _ in folders[".research"]] == ["paths.tree", "paths.dashboard",
                                                        "paths.experiments"]
    else:
        assert "tree.md" not in folders and "experiments" in folders


def test_the_listing_finds_folder_links_without_a_git_process(make_kb, tmp_path, monkeypatch) -> None:
    """The hook's listing: the link is in git's output already; finding it starts no git
    process, and a link elsewhere (Notes) is none of the layout's."""
    from kb.repo import commit_snapshot, open_kb, staged_snapshot

    root = _kb(make_kb)
    _away(root, tmp_path, "Methods", {"m1.md": method("m1")})
    (root / "Notes2").symlink_to(tmp_path, target_is_directory=True)
    commit_all(root, "links")
    k = open_kb(root)
    listing = subprocess.run(["git", "ls-files", "-s", "-z"], cwd=root, capture_output=True,
                             check=True).stdout
    link_blob = git(root, "rev-parse", "HEAD:Methods")
    started = count_processes(monkeypatch)
    snap = staged_snapshot(k, listing)
    assert started == [] and snap.folder_links == {"Methods": link_blob}
    monkeypatch.undo()
    assert commit_snapshot(k, "HEAD").folder_links == {"Methods": link_blob}
