"""The suite runs the checkout's code, in-process and in every subprocess it starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import kb
import kb_cli
from conftest import REPO_ROOT, kb_script, source_env


def test_in_process_imports_come_from_the_checkout() -> None:
    assert Path(kb.__file__).resolve() == REPO_ROOT / "kb" / "__init__.py"
    assert Path(kb_cli.__file__).resolve() == REPO_ROOT / "cli" / "__init__.py"


def test_the_kb_script_runs_the_checkout(tmp_path: Path) -> None:
    code = "import kb, kb_cli; print(kb.__file__); print(kb_cli.__file__)"
    script = Path(kb_script())
    python = script.read_text(encoding="utf-8", errors="replace").splitlines()[0].lstrip("#!").strip()
    out = subprocess.run([python, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env=source_env(), check=True).stdout.split()
    assert [Path(p).resolve() for p in out] == [REPO_ROOT / "kb" / "__init__.py",
                                                  REPO_ROOT / "cli" / "__init__.py"]
    version = subprocess.run([str(script), "--version"], cwd=tmp_path, capture_output=True,
                             text=True, env=source_env(), check=True).stdout
    assert version.strip() == f"kb {kb.__version__}"
