"""The README's first lines give the two fresh-machine commands, and .ci/run
runs exactly the README's test command."""

from __future__ import annotations

from conftest import REPO_ROOT


def _commands() -> list[str]:
    """The indented command lines before the README's first rule (``---``)."""
    head = (REPO_ROOT / "README.md").read_text(encoding="utf-8").split("\n---", 1)[0]
    return [ln.strip() for ln in head.splitlines() if ln.startswith("    ") and ln.strip()]


def test_readme_opens_with_the_install_run_and_test_commands() -> None:
    run, test = _commands()
    assert run.startswith("python -m pip install .") and "cd examples" in run
    assert "kb index" in run
    assert test.startswith('python -m pip install ".[test]"') and test.endswith("pytest")


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, test = _commands()
    lines = [ln.strip() for ln in (REPO_ROOT / ".ci" / "run").read_text().splitlines()]
    assert test in lines
