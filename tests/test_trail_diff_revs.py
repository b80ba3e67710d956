"""``kb trail diff`` refuses a range end that names no commit by the text the user gave:
never with the suffix kb adds to ask git for the commit (``^{commit}``), and never as an
option of git (a word starting with ``-``)."""

from __future__ import annotations

import pytest

from conftest import invoke
from kb.errors import UsageError
from kb.repo import open_kb
from kb.trail.diff import range_changes
from test_verify_support import problem


def test_a_range_end_starting_with_a_dash_is_quoted_as_given(make_kb, tmp_path) -> None:
    root = make_kb({"Problems/q1.md": problem("q1")}, commit=True)
    out = tmp_path / "x"
    r = invoke("trail", "diff", "--", f"--output={out}..HEAD", cwd=root)
    assert r.code == 2, (r.stdout, r.stderr)
    assert f"'--output={out}' is not a revision" in r.stderr, r.stderr
    assert "^{commit}" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()


def test_the_library_refusals_name_the_revision_as_given(make_kb) -> None:
    k = open_kb(make_kb({"Problems/q1.md": problem("q1")}, commit=True))
    with pytest.raises(UsageError) as dash:
        range_changes(k, "-x", "HEAD")
    assert "'-x' is not a revision" in str(dash.value) and "^{" not in str(dash.value)
    with pytest.raises(UsageError) as unknown:
        range_changes(k, "HEAD", "nope")
    assert str(unknown.value) == "unknown revision 'nope'"
    assert range_changes(k, "HEAD", "HEAD")["added"] == []
