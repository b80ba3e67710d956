"""kb under the real pre-commit framework, configured from this repository's
`.pre-commit-hooks.yaml` (as a `repo: local` hook with `language: system`, so
the test needs no network), with real commits and a real push."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO_ROOT, git, write_files
from test_verify_support import TREE, experiment, git_env, git_run, make_repo


def _pre_commit() -> str:
    exe = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")
    if exe is None:
        pytest.fail("pre-commit is not installed (pip install -e '.[test]')", pytrace=False)
    return exe


def test_manifest_declares_the_hook_as_the_issue_says():
    (hook,) = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert hook["id"] == "kb-verify" and hook["entry"] == "kb verify"
    assert hook["pass_filenames"] is False and hook["always_run"] is True
    assert hook["require_serial"] is True
    assert set(hook["stages"]) == {"pre-commit", "pre-push", "manual"}


def _configure(root: Path) -> None:
    hooks = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    local = [{**h, "language": "system"} for h in hooks]  # offline: kb is already installed
    cfg = {"default_install_hook_types": ["pre-commit", "pre-push"],
           "repos": [{"repo": "local", "hooks": local}]}
    (root / ".pre-commit-config.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    git(root, "add", ".pre-commit-config.yaml")
    git(root, "commit", "-q", "--no-verify", "-m", "pre-commit config")
    proc = subprocess.run([_pre_commit(), "install"], cwd=root, capture_output=True, env=git_env())
    assert proc.returncode == 0, proc.stderr


def _out(proc) -> bytes:
    return proc.stdout + proc.stderr


def test_duplicate_id_among_twelve_files_is_caught(make_kb):
    """PC-01: whatever files pre-commit would pass, the whole staged snapshot is checked."""
    root = make_repo(make_kb, dashboard=False)
    _configure(root)
    files = {f"experiments/E{n:03d}.md": experiment(f"E{n:03d}") for n in range(2, 13)}
    files["experiments/E013.md"] = experiment("E007")  # twelfth file, duplicates E007's ID
    write_files(root, files)
    git(root, "add", "-A")
    proc = git_run(root, "commit", "-m", "twelve experiments")
    assert proc.returncode != 0, _out(proc)
    assert b"KB202" in _out(proc) and b"E007" in _out(proc)
    assert git(root, "log", "--format=%s", "-1") == "pre-commit config"
    write_files(root, {"experiments/E013.md": experiment("E013")})
    git(root, "add", "-A")
    proc = git_run(root, "commit", "-m", "twelve experiments")
    assert proc.returncode == 0, _out(proc)


def test_pre_push_stage_checks_the_pushed_commits(make_kb, tmp_path):
    root = make_repo(make_kb, dashboard=False)
    _configure(root)
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(root, "remote", "add", "origin", str(bare))
    assert git_run(root, "push", "-q", "origin", "main").returncode == 0
    write_files(root, {"tree.md": TREE.replace("Mixed precision slows", "Mixed precision speeds")})
    proc = git_run(root, "commit", "-am", "edit H2")
    assert proc.returncode != 0 and b"KB302" in _out(proc)  # the pre-commit stage refuses it
    assert git_run(root, "commit", "--no-verify", "-qam", "edit H2 (bypassed)").returncode == 0
    proc = git_run(root, "push", "origin", "main")
    assert proc.returncode != 0 and b"KB302" in _out(proc), _out(proc)
    git(root, "commit", "-q", "--amend", "--no-verify", "-m", "edit H2", "-m",
        "Kb-Override: H2 corrected after review")
    proc = git_run(root, "push", "origin", "main")
    assert proc.returncode == 0, _out(proc)
