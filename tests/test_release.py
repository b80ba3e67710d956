"""The version policy, and the pre-commit framework installing kb from a release tag.

Policy (README "Installing kb as a tool, versions and releases", docs/DECISIONS.md
"Version policy and license"): semantic versioning; the version is written only in
``kb.__version__`` (pyproject reads it); a release is the commit on main tagged
``vX.Y.Z`` with X.Y.Z that version; the pre-commit framework pins such a tag as
``rev:``. The last test runs the real framework against a repository of this
checkout tagged as a release: the framework clones it at the tag and builds the
hook's environment with pip from the package index. Without a reachable index that
build cannot run: when pip cannot fetch even setuptools under the same
configuration, the test skips and quotes pip's error; any other failure fails.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import kb
from conftest import GIT_ENV, REPO_ROOT, git, write_files
from test_verify_support import experiment, make_repo

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

SEMVER = r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"


def _pyproject() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_is_written_once_and_is_semver() -> None:
    project = _pyproject()
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "kb.__version__"}
    text = (REPO_ROOT / "kb" / "__init__.py").read_text(encoding="utf-8")
    assert re.findall(r'^__version__ = "([^"]*)"$', text, re.M) == [kb.__version__]
    assert re.fullmatch(SEMVER, kb.__version__), kb.__version__


def test_pre_commit_manifest_and_docs_pin_this_versions_tag() -> None:
    """The manifest's hook installs kb's own package (language: python) and runs a
    console script the package declares; the README pins ``rev: vX.Y.Z`` of this
    version and both documents state the policy."""
    scripts = _pyproject()["project"]["scripts"]
    hooks = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert [h["id"] for h in hooks] == ["kb-verify"]
    for h in hooks:
        assert h["language"] == "python" and h["entry"].split()[0] in scripts
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert re.findall(r"^\s*rev: (\S+)$", readme, re.M) == [f"v{kb.__version__}"]
    decisions = (REPO_ROOT / "docs" / "DECISIONS.md").read_text(encoding="utf-8")
    for doc in (readme, decisions):
        assert "semantic" in doc and "`vX.Y.Z`" in doc and "kb.__version__" in doc


#: What pip prints when it cannot reach an index (connection-level failures).
NETWORK = ("NewConnectionError", "Failed to establish a new connection", "Network is unreachable",
           "Temporary failure in name resolution", "Name or service not known", "ProxyError",
           "ConnectTimeoutError", "Max retries exceeded", "Could not fetch URL",
           "connection broken by", "Connection refused")


def _unreachable_index(output: str, env: dict[str, str], tmp: Path) -> str | None:
    """Why the package index cannot be used here, or None when it can.

    A failed build alone proves nothing (a dependency no index has fails the same
    way), so the index is probed with what every index has: ``pip download
    setuptools`` under the same configuration. Only when that fails too is the
    environment to blame; the reason quotes pip.
    """
    probe = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir",
                            "-q", "-d", str(tmp / "probe"), "setuptools>=68"],
                           capture_output=True, text=True, env=env, timeout=900)
    if probe.returncode == 0:
        return None
    lines = [ln.strip() for ln in (output + "\n" + probe.stdout + probe.stderr).splitlines()]
    said = next((ln for ln in lines if any(m.lower() in ln.lower() for m in NETWORK)), None)
    said = said or next((ln for ln in reversed(lines) if ln.startswith("ERROR")), "no output")
    return said[:300]


def _project_at_tag(dest: Path) -> str:
    """A repository holding this checkout's files (as they are on disk) in one commit
    tagged ``v<version>``, as a release on main is; returns the tag."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO_ROOT, capture_output=True, check=True).stdout
    dest.mkdir()
    git(dest, "init", "-q", "-b", "main")
    for name in listed.decode("utf-8", "surrogateescape").split("\0"):
        src = REPO_ROOT / name
        if name and src.is_file() and not src.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "--no-verify", "-m", f"kb {kb.__version__}")
    tag = f"v{kb.__version__}"
    git(dest, "tag", tag)
    return tag


def _env(home: Path) -> dict[str, str]:
    """No trace of the checkout: without PYTHONPATH (the tests' source shim) and without
    this interpreter's folder on PATH, ``kb`` can only come from the hook's environment."""
    here = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != here)
    env.update(GIT_ENV)
    env["PRE_COMMIT_HOME"] = str(home)
    return env


@pytest.mark.slow
def test_pre_commit_installs_kb_from_a_release_tag(make_kb, tmp_path: Path) -> None:
    pre_commit = shutil.which("pre-commit", path=str(Path(sys.executable).parent))
    if pre_commit is None:
        pytest.fail("pre-commit is not installed (pip install -e '.[test]')", pytrace=False)
    project = tmp_path / "kb-project"
    tag = _project_at_tag(project)
    root = make_repo(make_kb, dashboard=False)
    cfg = {"default_install_hook_types": ["pre-commit"],
           "repos": [{"repo": str(project), "rev": tag, "hooks": [{"id": "kb-verify"}]}]}
    (root / ".pre-commit-config.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    git(root, "add", ".pre-commit-config.yaml")
    git(root, "commit", "-q", "--no-verify", "-m", "pre-commit config")
    home = tmp_path / "pre-commit-home"
    env = _env(home)

    proc = subprocess.run([pre_commit, "install-hooks"], cwd=root, capture_output=True, text=True,
                          env=env, timeout=1200)
    if proc.returncode != 0:
        out = proc.stdout + proc.stderr
        log = home / "pre-commit.log"
        if log.is_file():
            out += log.read_text(encoding="utf-8", errors="replace")
        why = _unreachable_index(out, env, tmp_path)
        if why is not None:
            pytest.skip(f"pre-commit could not build kb's hook environment from {tag}: no package "
                        f"index is reachable here (pip cannot fetch setuptools either: {why})")
        pytest.fail(f"pre-commit install-hooks failed:\n{out[-6000:]}", pytrace=False)

    # The hook's environment holds kb as built from the tag, not the checkout.
    [exe] = [p for p in home.glob("repo*/py_env-*/bin/kb")]
    assert subprocess.run([str(exe), "--version"], capture_output=True, text=True, env=env,
                          cwd=tmp_path).stdout == f"kb {kb.__version__}\n"
    where = subprocess.run([str(exe.parent / "python"), "-c", "import kb; print(kb.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path).stdout.strip()
    assert Path(where).is_relative_to(exe.parent.parent) and not Path(where).is_relative_to(REPO_ROOT)

    # Installed as git's pre-commit hook, it refuses a duplicate ID and lets a clean commit through.
    assert subprocess.run([pre_commit, "install"], cwd=root, capture_output=True, env=env).returncode == 0
    write_files(root, {"experiments/E002.md": experiment("E001")})
    git(root, "add", "-A")
    proc = subprocess.run(["git", "commit", "-m", "duplicate"], cwd=root, capture_output=True,
                          text=True, env=env)
    assert proc.returncode != 0 and "KB202" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert git(root, "log", "-1", "--format=%s") == "pre-commit config"
    write_files(root, {"experiments/E002.md": experiment("E002")})
    git(root, "add", "-A")
    proc = subprocess.run(["git", "commit", "-m", "second experiment"], cwd=root, capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "kb verify" in proc.stdout + proc.stderr  # the framework ran the hook
