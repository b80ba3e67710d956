"""kb's git hooks with real `git commit` in every form, a worktree, a merge, a
rebase, a push to a local bare remote, and the DASHBOARD.md merge driver."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from conftest import git, invoke, write_files
from test_verify_support import TREE, experiment, fresh_dashboard, git_run, make_repo, verified

EDIT_H2 = TREE.replace("Mixed precision slows", "Mixed precision speeds")
ADD_H3 = TREE + "\n## H3: A third hypothesis\nStatus: 待验\nEvidence: (empty)\n"


def _install(root: Path, *args: str) -> None:
    res = invoke("hooks", "install", *args, cwd=root)
    assert res.code == 0, res.stderr


def _out(proc) -> bytes:
    """What a hook printed (git sends a hook's stdout to stderr)."""
    return proc.stdout + proc.stderr


def _commit(root: Path, *args: str, env=None):
    return git_run(root, "commit", "-q", *args, env=env)


@pytest.fixture
def repo(make_kb):
    root = make_repo(make_kb, dashboard=False)
    _install(root)
    return root


def test_install_chains_an_existing_hook_and_uninstall_restores_exactly(make_kb):
    root = make_repo(make_kb, dashboard=False)
    hooks = root / ".git" / "hooks"
    mine = hooks / "pre-commit"
    mine.write_bytes(b"#!/bin/sh\necho mine >> \"$(git rev-parse --git-dir)/mine-ran\"\n")
    mine.chmod(0o750)
    config_before = (root / ".git" / "config").read_bytes()
    before = {p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) for p in hooks.iterdir()}
    _install(root)
    assert (hooks / "pre-commit.kb-chained").read_bytes() == before["pre-commit"][0]
    assert "kb-managed-hook" in (hooks / "pre-commit").read_text()
    assert "kb_cli.merge_driver dashboard" in git(root, "config", "merge.kb-dashboard.driver")
    assert "kb_cli.merge_driver tree" in git(root, "config", "merge.kb-tree.driver")
    write_files(root, {"tree.md": ADD_H3})
    assert _commit(root, "-am", "H3").returncode == 0
    assert (root / ".git" / "mine-ran").read_text() == "mine\n"
    write_files(root, {"tree.md": EDIT_H2})
    proc = _commit(root, "-am", "edit H2")
    assert proc.returncode == 1 and b"KB302" in proc.stderr + proc.stdout
    assert (root / ".git" / "mine-ran").read_text() == "mine\nmine\n"  # chained hook ran first
    _install(root)  # idempotent: never chains itself
    assert (hooks / "pre-commit.kb-chained").read_bytes() == before["pre-commit"][0]
    res = invoke("hooks", "uninstall", cwd=root)
    assert res.code == 0
    after = {p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode)) for p in hooks.iterdir()}
    assert after == before
    assert (root / ".git" / "config").read_bytes() == config_before


def test_core_hooks_path_is_respected(make_kb):
    root = make_repo(make_kb, dashboard=False)
    git(root, "config", "core.hooksPath", ".githooks")
    _install(root)
    assert (root / ".githooks" / "pre-commit").exists()
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    write_files(root, {"tree.md": EDIT_H2})
    assert _commit(root, "-am", "edit").returncode == 1
    assert "installed" in invoke("hooks", "status", cwd=root).stdout


def test_hook_without_kb_fails_with_the_install_command(repo):
    hook = repo / ".git" / "hooks" / "pre-commit"
    text = hook.read_text()
    hook.write_text(text.replace("KB_PYTHON='", "KB_PYTHON='/nonexistent/python"))
    env = {"PATH": "/usr/bin:/bin"}
    write_files(repo, {"tree.md": ADD_H3})
    proc = _commit(repo, "-am", "H3", env=env)
    assert proc.returncode != 0
    # Where this kb came from (an editable install here: no reachable source), never
    # the unpublished distribution name.
    assert b"kb: install it with:  python -m pip install" in proc.stderr
    assert b"pip install kb-research" not in proc.stderr


def test_plain_commit_refused_then_allowed(repo):
    write_files(repo, {"tree.md": EDIT_H2})
    git(repo, "add", "tree.md")
    proc = _commit(repo, "-m", "edit H2")
    assert proc.returncode == 1 and b"KB302" in _out(proc)
    assert git(repo, "log", "--format=%s", "-1") == "base"
    write_files(repo, {"tree.md": ADD_H3})
    git(repo, "add", "tree.md")
    assert _commit(repo, "-m", "H3").returncode == 0


def test_commit_a_and_commit_paths_use_the_temporary_index(repo):
    """GIT-03: git commit -a and git commit <path> set GIT_INDEX_FILE."""
    vfile = "Verified/命题/p1.md"
    write_files(repo, {vfile: verified("p1").replace("Claim p1", "Claim p1, edited")})
    proc = _commit(repo, "-a", "-m", "edit a verified card")
    assert proc.returncode == 1 and b"KB304" in _out(proc)
    proc = _commit(repo, "-m", "edit it by path", "--", vfile)
    assert proc.returncode == 1 and b"KB304" in _out(proc)
    # the Verified edit is staged, but `git commit tree.md` commits only tree.md
    git(repo, "add", vfile)
    write_files(repo, {"tree.md": ADD_H3})
    proc = _commit(repo, "-m", "H3 only", "--", "tree.md")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(repo, "show", "--name-only", "--format=", "HEAD") == "tree.md"


def test_amend_is_checked(repo):
    write_files(repo, {"tree.md": ADD_H3})
    assert _commit(repo, "-am", "H3").returncode == 0
    write_files(repo, {"tree.md": ADD_H3.replace("A third hypothesis", "Something else")})
    proc = _commit(repo, "--amend", "-am", "H3, reworded")
    assert proc.returncode == 1 and b"KB302" in _out(proc)
    write_files(repo, {"tree.md": ADD_H3 + "\nProse after the tree.\n"})
    assert _commit(repo, "--amend", "-am", "H3 with prose").returncode == 0


def test_first_commit_of_an_empty_repository(make_kb):
    """GIT-05 with the real hook."""
    root = make_repo(make_kb, commit=False, dashboard=False)
    _install(root)
    git(root, "add", "-A")
    proc = _commit(root, "-m", "first")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_merge_commit_runs_the_pre_merge_commit_hook(repo):
    git(repo, "checkout", "-qb", "side")
    write_files(repo, {"tree.md": EDIT_H2})
    assert _commit(repo, "--no-verify", "-am", "edit H2 (bypassing the hook)").returncode == 0
    git(repo, "checkout", "-q", "main")
    write_files(repo, {"experiments/E002.md": experiment("E002")})
    git(repo, "add", "-A")
    assert _commit(repo, "-m", "E002").returncode == 0
    proc = git_run(repo, "merge", "--no-ff", "-m", "merge side", "side")
    assert proc.returncode != 0 and b"KB302" in _out(proc)
    git(repo, "merge", "--abort")
    # the same change with its override trailer merges
    git(repo, "checkout", "-q", "side")
    git(repo, "commit", "-q", "--amend", "--no-verify", "-m", "edit H2", "-m",
        "Kb-Override: H2 reworded after review")
    git(repo, "checkout", "-q", "main")
    proc = git_run(repo, "merge", "--no-ff", "-m", "merge side", "side")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(git(repo, "rev-list", "--parents", "-n1", "HEAD").split()) == 3


def test_rebase_then_range(repo):
    git(repo, "checkout", "-qb", "feature")
    write_files(repo, {"experiments/E002.md": experiment("E002")})
    git(repo, "add", "-A")
    assert _commit(repo, "-m", "E002").returncode == 0
    git(repo, "checkout", "-q", "main")
    write_files(repo, {"tree.md": ADD_H3})
    assert _commit(repo, "-am", "H3").returncode == 0
    proc = git_run(repo, "rebase", "main", "feature")
    assert proc.returncode == 0, proc.stderr
    assert invoke("verify", "--range", "main..feature", cwd=repo).code == 0
    # a rebase that rewrites a statement on the way is caught by the range check
    git(repo, "checkout", "-q", "feature")
    proc = git_run(repo, "-c", "sequence.editor=sed -i 's/^pick/edit/'", "rebase", "-i", "main")
    assert proc.returncode == 0, proc.stderr
    write_files(repo, {"tree.md": ADD_H3.replace("A third hypothesis", "Changed during rebase")})
    git(repo, "add", "tree.md")
    proc = _commit(repo, "--amend", "--no-edit")
    assert proc.returncode == 1 and b"KB302" in _out(proc)
    git(repo, "rebase", "--abort")


def test_linked_worktree_shares_the_hooks(repo, tmp_path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "wt", str(wt))
    write_files(wt, {"tree.md": EDIT_H2})
    proc = _commit(wt, "-am", "edit H2 in a worktree")
    assert proc.returncode == 1 and b"KB302" in _out(proc)
    write_files(wt, {"tree.md": ADD_H3})
    assert _commit(wt, "-am", "H3 in a worktree").returncode == 0
    assert not (repo / ".kb" / "index.sqlite").exists() or True  # each worktree keeps its cache
    assert (wt / ".kb").is_dir()


def test_pre_push_to_a_local_bare_remote(repo, tmp_path):
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    assert git_run(repo, "push", "-q", "origin", "main").returncode == 0
    write_files(repo, {"tree.md": ADD_H3})
    assert _commit(repo, "-am", "H3").returncode == 0
    write_files(repo, {"tree.md": ADD_H3.replace("Mixed precision slows", "Mixed precision speeds")})
    assert _commit(repo, "--no-verify", "-am", "edit H2, hook bypassed").returncode == 0
    proc = git_run(repo, "push", "origin", "main")
    assert proc.returncode != 0 and b"KB302" in _out(proc) and b"push refused" in proc.stderr
    assert git(bare, "rev-parse", "main") != git(repo, "rev-parse", "HEAD")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    assert git_run(repo, "push", "-q", "origin", "main").returncode == 0
    # a new branch is checked from its merge base with origin/main
    git(repo, "checkout", "-qb", "topic")
    write_files(repo, {"experiments/E002.md": experiment("E002")})
    git(repo, "add", "-A")
    assert _commit(repo, "-m", "E002").returncode == 0
    git(repo, "fetch", "-q", "origin")
    proc = git_run(repo, "push", "origin", "topic")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert b"kb pre-push refs/heads/topic" in proc.stderr
    # deleting a ref is skipped
    proc = git_run(repo, "push", "origin", ":topic")
    assert proc.returncode == 0 and b"kb pre-push" not in proc.stderr


def test_merge_driver_keeps_one_side_of_the_dashboard(make_kb):
    """MRG-01: both branches add a hypothesis and refresh DASHBOARD.md."""
    tree = TREE + "\n## H3: Third\nStatus: 待验\nEvidence: (empty)\n\nSome prose about H3.\nMore.\nAnd more.\n"
    root = make_repo(make_kb, {"tree.md": tree, ".gitattributes": "DASHBOARD.md merge=kb-dashboard\n"})
    _install(root)
    git(root, "checkout", "-qb", "a")
    write_files(root, {"tree.md": tree.replace("Children: H1.1\n", "Children: H1.1, H1.2\n").replace(
        "## H2:", "### H1.2: A child\nStatus: 待验\nEvidence: (empty)\nParent: H1\n\n## H2:")})
    fresh_dashboard(root)
    git(root, "add", "-A")
    assert _commit(root, "-m", "a: H1.2").returncode == 0
    ours_dash = (root / "DASHBOARD.md").read_bytes()
    git(root, "checkout", "-q", "main")
    write_files(root, {"tree.md": tree + "\n## H4: Fourth\nStatus: 待验\nEvidence: (empty)\n"})
    fresh_dashboard(root)
    git(root, "add", "-A")
    assert _commit(root, "-m", "main: H4").returncode == 0
    main_dash = (root / "DASHBOARD.md").read_bytes()
    assert main_dash != ours_dash
    proc = git_run(root, "merge", "--no-ff", "-m", "merge a", "a")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (root / "tree.md").read_text(encoding="utf-8")
    assert "### H1.2: A child" in text and "## H4: Fourth" in text
    # The driver regenerated DASHBOARD.md from the merged tree: nothing stale.
    dash = (root / "DASHBOARD.md").read_bytes()
    assert dash not in (main_dash, ours_dash) and b"<<<<<<<" not in dash
    res = invoke("verify", "--json", cwd=root)
    assert res.code == 0 and res.json()["diagnostics"] == []
    fresh_dashboard(root)
    assert (root / "DASHBOARD.md").read_bytes() == dash


def test_stale_dashboard_with_an_unstaged_edit_is_refused_not_fixed(make_kb):
    """PC-03: the hook never writes files; it fails with `run kb dashboard`."""
    root = make_repo(make_kb, config='[kb]\n[rules]\ndashboard_stale = "error"\n')
    _install(root)
    write_files(root, {"tree.md": ADD_H3})
    git(root, "add", "tree.md")
    dash = root / "DASHBOARD.md"
    dash.write_bytes(dash.read_bytes() + b"- an unstaged note\n")
    before = {p: (root / p).read_bytes() for p in ("tree.md", "DASHBOARD.md")}
    index_before = git(root, "ls-files", "-s")  # git itself refreshes stat data
    proc = _commit(root, "-m", "H3")
    assert proc.returncode == 1
    assert b"KB240" in _out(proc) and b"run `kb dashboard`" in _out(proc)
    assert {p: (root / p).read_bytes() for p in before} == before
    assert git(root, "ls-files", "-s") == index_before


def test_a_correction_by_hand_passes_the_hook_and_the_push(repo, tmp_path):
    """The README's recipe for a correction kb has no command for: KB_OVERRIDE for the
    pre-commit hook, the same `Kb-Override:` trailer for pre-push and CI. The variable
    alone gets the commit past the hook but not past the push."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    assert git_run(repo, "push", "-q", "origin", "main").returncode == 0
    write_files(repo, {"tree.md": EDIT_H2})
    env = {"KB_OVERRIDE": "H2 the measurement showed a speed-up"}
    assert _commit(repo, "-am", "reword H2", env=env).returncode == 0
    proc = git_run(repo, "push", "origin", "main")
    assert proc.returncode != 0 and b"KB302" in _out(proc)
    git(repo, "reset", "-q", "--soft", "HEAD~1")
    proc = _commit(repo, "-m", "reword H2", "--trailer",
                   "Kb-Override: H2 the measurement showed a speed-up", env=env)
    assert proc.returncode == 0, _out(proc)
    proc = git_run(repo, "push", "origin", "main")
    assert proc.returncode == 0, _out(proc)
    assert git(bare, "rev-parse", "main") == git(repo, "rev-parse", "HEAD")


def test_uninstall_keeps_the_merge_drivers_kb_init_registered(tree_kb):
    """`kb hooks uninstall` removes exactly what install added: the drivers `kb init`
    registered (install found them "already registered") stay, and kb verify does not
    warn KB245; a driver install registered itself is removed."""
    drivers = {n: git(tree_kb, "config", f"merge.{n}.driver") for n in ("kb-tree", "kb-dashboard")}
    res = invoke("hooks", "install", cwd=tree_kb)
    assert res.code == 0 and "kb-dashboard: already registered" in res.stdout, res.stdout
    res = invoke("hooks", "uninstall", cwd=tree_kb)
    assert res.code == 0, res.stderr
    assert "unregistered" not in res.stdout, res.stdout
    assert {n: git(tree_kb, "config", f"merge.{n}.driver") for n in drivers} == drivers
    res = invoke("verify", cwd=tree_kb)
    assert "KB245" not in res.stdout + res.stderr, res.stdout
    # One driver gone (a clone kb init never ran in): install registers it, uninstall removes it.
    git(tree_kb, "config", "--remove-section", "merge.kb-tree")
    assert invoke("hooks", "install", cwd=tree_kb).code == 0
    res = invoke("hooks", "uninstall", cwd=tree_kb)
    assert "kb-tree: unregistered" in res.stdout, res.stdout
    assert git(tree_kb, "config", "--get", "merge.kb-tree.driver", check=False) == ""
    assert git(tree_kb, "config", "merge.kb-dashboard.driver") == drivers["kb-dashboard"]


def test_install_writes_no_attribute_line_for_a_tree_path_naming_a_folder(tree_kb):
    """kb.toml's `tree = "tree.md/"` (KB004: a folder, not the file): `kb hooks install`
    adds no `tree.md/ merge=kb-tree` line to the tracked .gitattributes."""
    toml = tree_kb / "kb.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[paths]\ntree = "tree.md/"\n',
                    encoding="utf-8")
    (tree_kb / ".gitattributes").unlink()
    git(tree_kb, "add", "-A")
    git(tree_kb, "commit", "-qm", "tree path with a slash", "--no-verify")
    assert invoke("hooks", "install", cwd=tree_kb).code == 0
    text = (tree_kb / ".gitattributes").read_text(encoding="utf-8")
    assert "tree.md/" not in text and "merge=kb-dashboard" in text, text


def test_install_names_paths_with_spaces_and_glob_characters_so_git_reads_them(tree_kb):
    """A tree, dashboard and logs folder whose names hold a space, `[` or `*`, or start
    with `#`: the .gitattributes lines `kb hooks install` writes are quoted and escaped,
    so that git gives each file its driver (an unquoted `Lab notes/tree.md merge=kb-tree`
    names no file: git splits the line at the space), and nothing else."""
    toml = tree_kb / "kb.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[paths]\ntree = "Lab notes/tree [v2].md"\n'
                    'dashboard = "#board/DASH*.md"\nlogs = "Daily logs"\n', encoding="utf-8")
    (tree_kb / ".gitattributes").unlink()
    assert invoke("hooks", "install", cwd=tree_kb).code == 0
    files = {"Lab notes/tree [v2].md": "kb-tree", "#board/DASH*.md": "kb-dashboard",
             "Daily logs/报告.md": "kb-report", "TRAIL.md": "kb-trail",
             "Lab notes/tree v.md": "unspecified", "#board/DASH1.md": "unspecified",
             "notes/tree [v2].md": "unspecified"}
    out = git(tree_kb, "check-attr", "-z", "merge", "--", *files).split("\0")
    assert dict(zip(out[0::3], out[2::3])) == files
