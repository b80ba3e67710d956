"""The built wheel, installed into a fresh virtual environment (not the editable install).

The wheel is built from a copy of the source tree (the shared checkout is never
written to) and installed with ``--no-deps`` into a new venv; the dependencies
come from the environment running the tests (its site-packages is appended to
the new venv's path), so no network is needed. Every check runs the new venv's
interpreter in isolated mode or its own ``kb`` script from a neutral folder, and
proves that ``kb`` is imported from the new site-packages.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import kb
from conftest import REPO_ROOT

SOURCES = ("kb", "cli", "templates", "hooks", "pyproject.toml", "setup.py", "README.md", "LICENSE",
           "setup.cfg", "MANIFEST.in")


def _run(args, cwd, env=None, timeout=300):
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    full.pop("VIRTUAL_ENV", None)
    if env:
        full.update(env)
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=full,
                          timeout=timeout)
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _modern_setuptools() -> bool:
    """True when the running environment can build the wheel offline (bdist_wheel built in)."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    from importlib.metadata import version

    major, minor = (int(x) for x in version("setuptools").split(".")[:2])
    return (major, minor) >= (70, 1)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the wheel from a copy of the sources and install it into a new venv.

    Returns (venv python, venv bin folder, venv site-packages, work folder).
    """
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        p = REPO_ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns(
                "__pycache__", "*.pyc", "*.egg-info", ".kb"))
        elif p.is_file():
            shutil.copy2(p, src / name)
    dist = work / "dist"
    isolation = ["--no-build-isolation"] if _modern_setuptools() else []
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", str(dist),
          str(src)], cwd=work)
    [wheel] = list(dist.glob("kb_research-*.whl"))

    venv = work / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    _run([base_python, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], cwd=work)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / ("python.exe" if os.name == "nt" else "python")
    purelib = Path(_run([str(py), "-I", "-c",
                         "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=work).strip())
    # Dependencies from the running environment, *after* the venv's own site-packages.
    # Plain path lines: the running environment's own .pth files (its editable
    # install of kb) are not processed.
    running = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
               *site.getsitepackages()}
    (purelib / "_kb_test_deps.pth").write_text("\n".join(sorted(running)) + "\n")
    _run([str(py), "-m", "pip", "install", "--no-deps", "--ignore-installed", "--no-index", "-q",
          str(wheel)], cwd=work)
    return py, bindir, purelib, work


def test_kb_imported_from_the_wheel(installed):
    """In the new venv (isolated mode) ``kb`` and ``kb_cli`` come from its site-packages."""
    py, _, purelib, work = installed
    out = _run([str(py), "-I", "-c",
                "import json, kb, kb_cli, kb.resources as r; print(json.dumps("
                "[kb.__file__, kb_cli.__file__, kb.__version__, str(r.hooks_dir()),"
                " str(r.templates_dir())]))"], cwd=work)
    kb_file, cli_file, version, hooks, templates = json.loads(out)
    assert Path(kb_file).is_relative_to(purelib)
    assert Path(cli_file).is_relative_to(purelib)
    assert version == kb.__version__
    assert Path(hooks) == purelib / "kb" / "_hooks" and Path(hooks).is_dir()
    assert Path(templates) == purelib / "kb" / "_templates"
    assert (Path(templates) / "kb.toml").is_file() and (Path(templates) / "gitignore").is_file()


def test_no_top_level_cli_package(installed):
    """The wheel installs ``kb_cli`` and no top-level ``cli`` package, templates or hooks."""
    _, _, purelib, _ = installed
    assert (purelib / "kb_cli" / "main.py").is_file()
    for name in ("cli", "templates", "hooks", "tests"):
        assert not (purelib / name).exists(), f"{name}/ is installed at the top level"


def test_console_script_from_the_wheel(installed):
    """The venv's own ``kb`` script: ``--version``; ``kb init`` finds its templates in the
    wheel; ``kb index`` runs on the new KB; the script imports kb from the venv."""
    py, bindir, purelib, work = installed
    script = bindir / ("kb.exe" if os.name == "nt" else "kb")
    assert script.is_file()
    assert _run([str(script), "--version"], cwd=work) == f"kb {kb.__version__}\n"
    first_line = script.read_text(errors="replace").splitlines()[0]
    assert str(bindir) in first_line  # the shebang is the new venv's python
    target = work / "newkb"
    out = json.loads(_run([str(script), "init", str(target), "--json"], cwd=work))
    assert "kb.toml" in out["written"]
    assert (target / "kb.toml").read_text(encoding="utf-8").startswith("# kb knowledge base")
    assert (target / "tree.md").read_text(encoding="utf-8") == "# Hypothesis Tree\n"
    out = json.loads(_run([str(script), "index", "--json"], cwd=target))
    assert out["errors"] == 0 and out["files"] == 2
    where = _run([str(py), "-c", "import kb; print(kb.__file__)"], cwd=target).strip()
    assert Path(where).is_relative_to(purelib)


def _readme_block(start: str) -> str:
    """The first indented command line of README.md that starts with ``start``."""
    for line in (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("    " + start):
            return line.strip()
    raise AssertionError(f"README.md has no command line starting with {start!r}")


def test_readme_quick_start_from_the_wheel(installed, tmp_path):
    """The README's opening command, run from the installed wheel: its `pip install .`
    is what the wheel stands for; the rest runs verbatim in a copy of examples/ (in its
    own git repository) with the new venv's bin folder first on PATH."""
    _, bindir, purelib, work = installed
    line = _readme_block("python -m pip install . && ")
    rest = line[len("python -m pip install . && "):]
    assert rest.startswith("cd examples && kb index")
    project = tmp_path / "project"
    shutil.copytree(REPO_ROOT / "examples", project / "examples",
                    ignore=shutil.ignore_patterns(".kb", "__pycache__"))
    env = {"PATH": f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin", "GIT_CONFIG_NOSYSTEM": "1"}
    _run(["git", "init", "-q"], cwd=project, env=env)
    _run(["git", "add", "-A"], cwd=project, env=env)
    _run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "x"],
         cwd=project, env=env)
    out = _run(["bash", "-eo", "pipefail", "-c", rest + " && python -c 'import kb; print(kb.__file__)'"],
               cwd=project, env=env)
    assert "q2" in out and "H1" in out
    assert Path(out.strip().splitlines()[-1]).is_relative_to(purelib)


def test_wheel_metadata_is_complete(installed):
    """License file and metadata: name, version, summary, license, classifiers, Python, script."""
    _, _, purelib, _ = installed
    [info] = list(purelib.glob("kb_research-*.dist-info"))
    meta = (info / "METADATA").read_text(encoding="utf-8")
    for field in ("Name: kb-research", f"Version: {kb.__version__}", "Summary: ", "Requires-Python: >=3.10",
                  "Classifier: License :: OSI Approved :: MIT License", "Author: the kb authors",
                  "Keywords: "):
        assert field in meta, field
    licenses = list(info.rglob("LICENSE*"))
    assert licenses and "MIT License" in licenses[0].read_text(encoding="utf-8")
    assert "kb = kb_cli.console:run" in (info / "entry_points.txt").read_text(encoding="utf-8")


def test_readme_documents_the_tool_install_and_the_release_tag():
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    assert "pipx install 'git+https://" in text and "pipx install dist/kb_research-" in text
    assert "python -m build" in text
    assert f"rev: v{kb.__version__}" in text  # the documented pre-commit pin is this version's tag
    assert (REPO_ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_every_library_package_is_in_the_wheel(installed):
    """Every package folder of the source tree (``kb/**/__init__.py``, ``cli/``) is installed:
    a subpackage missing from pyproject.toml's list works in an editable install and breaks
    in the wheel."""
    _, _, purelib, _ = installed
    for init in sorted((REPO_ROOT / "kb").rglob("__init__.py")):
        rel = init.parent.relative_to(REPO_ROOT)
        if "__pycache__" in rel.parts:
            continue
        assert (purelib / rel / "__init__.py").is_file(), f"{rel.as_posix()} is not in the wheel"
    assert (purelib / "kb_cli" / "__init__.py").is_file()


def test_web_view_ships_in_the_wheel(installed):
    """``kb serve`` works from a plain install: its templates, CSS and scripts are package
    data of ``kb.web`` and its app builds from them."""
    py, _, purelib, work = installed
    web = purelib / "kb" / "web"
    for name in ("templates/base.html", "templates/tree.html", "templates/board.html",
                 "templates/object.html", "static/kb.css", "static/kb.js", "static/trail.js"):
        assert (web / name).is_file(), name
    out = _run([str(py), "-I", "-c",
                "import kb.web.app as a, jinja2; print(a.HERE); "
                "e = jinja2.Environment(loader=jinja2.FileSystemLoader(str(a.HERE / 'templates'))); "
                "print(sorted(e.list_templates()))"], cwd=work)
    here, templates = out.splitlines()
    assert Path(here) == web and "'tree.html'" in templates
