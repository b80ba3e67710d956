"""A revision a user gives never reaches git as an option.

``kb diff -- --output=<file>`` (and the MCP ``diff`` tool with that range) made
``git rev-parse`` echo the unknown flag and ``git diff-tree``/``git log`` then write
``<file>^{commit}``. Every user-given revision starting with ``-`` is now a usage error
(exit 2) before git runs, and :func:`kb.git.rev_parse` passes ``--end-of-options``.
Real repositories; the proof is that no file appears."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import invoke


def _left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("victim"))


@pytest.mark.parametrize("args", [
    ("diff", "--", "--output={v}"),
    ("diff", "--", "--output={v}..HEAD"),
    ("diff", "--", "HEAD..--output={v}"),
    ("diff", "--", "--output={v}", "HEAD"),
    ("diff", "--", "HEAD", "--output={v}"),
    ("diff", "--json", "--", "--output={v}"),
    ("diff", "HEAD..HEAD", "--against=--output={v}"),
    ("log", "H1", "--rev=--output={v}"),
    ("prime", "--since=--output={v}"),
    ("verify", "--range", "--output={v}..HEAD"),
    ("verify", "--rev=--output={v}"),
    ("verify", "--range", "HEAD..HEAD", "--against=--output={v}"),
])
def test_cli_refuses_a_revision_that_git_would_read_as_an_option(
        example_kb: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    victim = tmp_path / "victim"
    r = invoke(*(a.format(v=victim) for a in args), cwd=example_kb)
    assert r.code == 2, (args, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert _left(tmp_path) == []
    if "--json" not in args:
        assert "starts with '-'" in r.stderr, r.stderr


def test_mcp_diff_tool_refuses_an_option_range(example_kb: Path, tmp_path: Path) -> None:
    from kb.errors import UsageError
    from kb.mcp.review import diff
    from kb.repo import open_kb

    k = open_kb(str(example_kb))
    for spec in (f"--output={tmp_path / 'victim'}", f"HEAD..--output={tmp_path / 'victim'}"):
        with pytest.raises(UsageError, match="starts with '-'"):
            diff(k, range=spec)
    assert _left(tmp_path) == []


def test_library_range_and_rev_parse_refuse_options(example_kb: Path, tmp_path: Path) -> None:
    from kb import git
    from kb.errors import UsageError
    from kb.repo import open_kb
    from kb.review.diff import research_diff

    k = open_kb(str(example_kb))
    victim = f"--output={tmp_path / 'victim'}"
    with pytest.raises(UsageError):  # what the Diff page of kb serve calls
        research_diff(k, "range", victim, "HEAD")
    with pytest.raises(UsageError):
        research_diff(k, "range", "HEAD", victim)
    with pytest.raises(UsageError):
        git.rev_parse(victim, example_kb)
    assert _left(tmp_path) == []
    # ordinary revisions still resolve; an empty one names nothing, as before
    head = git.rev_parse("HEAD", example_kb)
    assert head and len(head) == 40 and git.rev_parse("", example_kb) is None
    assert git.rev_parse("no-such-branch", example_kb) is None
    d = research_diff(k, "range", "HEAD", "HEAD", findings=False)
    assert d["empty"]
