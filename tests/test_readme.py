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


def test_readme_says_how_kb_override_takes_several_ids() -> None:
    """The README's examples of several IDs in KB_OVERRIDE, read as the shell and kb read
    them: one ``ID reason`` per line, or comma-joined IDs before one reason."""
    import re
    import subprocess

    from kb.checks.overrides import parse_overrides

    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    examples = re.findall(r"`(KB_OVERRIDE=(?:\$'[^'`]*'|\"[^\"`]*\"))`", text)
    assert len(examples) == 2 and "per line" in text, examples
    for assignment in examples:
        value = subprocess.run(["bash", "-c", f'{assignment}; printf %s "$KB_OVERRIDE"'],
                               capture_output=True, text=True, check=True).stdout
        assert parse_overrides(value) == {"E001": "why", "E002": "why"}, (assignment, value)
    # and what "on one line, all after the first ID is its reason" warns of
    assert parse_overrides("E001 why E002 why") == {"E001": "why E002 why"}
