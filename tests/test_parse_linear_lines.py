"""kb's own line patterns read a long line in time linear in its length (the tester's
finding on 0.1.19: kb refused `\\w+\\d+`-shaped grammars in kb.toml while its own tree
parser had one, and a card's H1 pattern had three repetitions over one run of spaces).

No timing is asserted: the structural check of kb.parse.regex_safety judges the token
pattern, and a KB holding 200,000-character lines of both shapes is indexed within a
generous bound (before the fix: minutes for the heading, hours for the card's H1)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import run_script
from kb.parse.card import card_h1
from kb.parse.regex_safety import polynomial_backtracking
from kb.parse.tree import _CANDIDATE

LONG = 200_000


def test_the_id_like_token_pattern_has_no_two_repetitions_over_one_text() -> None:
    assert polynomial_backtracking(_CANDIDATE.pattern) is None
    # what it reads is unchanged: a letter, a run of letters and digits with a digit,
    # dotted or dashed parts, a separator
    for text, tok in (("K1. x", "K1"), ("[H12.3-b: x", "H12.3-b"), ("abc9 ｜ x", "abc9"),
                      ("H1.2. x", "H1.2")):
        m = _CANDIDATE.match(text)
        assert m is not None and m.group("tok") == tok, text
    for text in ("Hx: y", "1H: y", "H1 x", "Notes: y"):
        assert _CANDIDATE.match(text) is None, text


def test_a_card_h1_reads_as_before() -> None:
    assert card_h1("# 问题｜ A title \t") == ("问题", "A title")
    assert card_h1("#  \t命题 \t|title") == ("命题", "title")
    assert card_h1("# 问题 no bar") is None and card_h1("#问题｜x") is None
    assert card_h1("#   ｜title") == ("", "title")


@pytest.mark.parametrize("what", ["heading", "card"])
def test_a_kb_with_one_huge_line_is_indexed(make_kb, what: str) -> None:
    files = {"tree.md": "# Tree\n\n## H" + "1" * LONG + " x\n\n## H1: fine\nStatus: 待验\n"} \
        if what == "heading" else {"Problems/q1.md": "# " + " " * LONG + "x\n- 优先级: 0\n"}
    kb = make_kb(files, commit=True)
    try:
        res = run_script("index", cwd=kb, timeout=120)
    except subprocess.TimeoutExpired:  # pragma: no cover - the fault itself
        pytest.fail(f"kb index did not read a {LONG}-character line within 120 s")
    # read, and what is wrong with the line said (an error: exit 1), never a hang
    assert res.code in (0, 1) and "indexed 1 files" in res.stderr, res.stdout + res.stderr
    assert len(res.stdout) < 2000  # the line's ID or text quoted short, not 200,000 characters


#: kb's patterns applied to a line of a file, and lines of the shape that made each one
#: quadratic or worse: (start, a unit repeated LONG times, end) -- a run of spaces, tabs
#: or digits that the pattern cannot end on.
_ATTACKS = {
    "kb.parse.tree._ANCHOR": [("Status", " ", "x"), ("Status: x", " ", "y")],
    "kb.parse.tree._CANDIDATE": [("H", "1", " x")],
    "kb.parse.card.CARD_H1": [("# ", " ", "x"), ("#  a", " ", "x")],
    "kb.parse.card.APPLICATION_HEAD": [("### 应用", " ", "x")],
    "kb.parse.unread._HEADING": [("## hyp", " ", "x"), ("## H1 x", " ", "y")],
    "kb.parse.unread._BOLD_PARA": [("**H1** x", " ", "y")],
    "kb.parse.unread._LIST": [("- H1 x", "\t", "y")],
    "kb.parse.unread._ROW_SEP": [("", " ", "x"), ("|--", " ", "x")],
    "kb.parse.unread._CELL_ID": [("hyp", " ", "x")],
    "kb.parse.unread._FIELD": [("Status: x", " ", "y")],
    "kb.merge.renumber._NUM": [("", "1", "x")],
}


def test_kbs_line_patterns_read_a_huge_line_in_bounded_time() -> None:
    """Each pattern matched against its attack lines in a child process, bounded by a
    generous timeout (before the fix: minutes to hours each; now milliseconds)."""
    import sys

    code = ("import importlib, sys\n"
            f"LONG = {LONG}\n"
            f"ATTACKS = {_ATTACKS!r}\n"
            "for name, lines in ATTACKS.items():\n"
            "    mod, attr = name.rsplit('.', 1)\n"
            "    pattern = getattr(importlib.import_module(mod), attr)\n"
            "    for start, unit, end in lines:\n"
            "        pattern.match(start + unit * LONG + end)\n"
            "print('ok', len(ATTACKS))\n")
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:  # pragma: no cover - the fault itself
        pytest.fail("a pattern of kb's did not read a 200,000-character line within 120 s")
    assert proc.returncode == 0 and proc.stdout.split() == [b"ok", b"11"], proc.stderr


#: The second tester's shapes (files, in a KB), each quadratic or worse before 0.1.19's
#: last fixes: an Evidence / Children list with a long run of spaces, a line of `[`, a
#: card's wiki-link list, a frontmatter's first line without a colon, an unknown status.
_FILES = {
    "evidence-spaces": {"tree.md": "# T\n\n## H1: a\nStatus: 待验\nEvidence: E001" + " " * LONG
                        + "E002\n"},
    "children-spaces": {"tree.md": "# T\n\n## H1: a\nStatus: 待验\nChildren: H1.1" + " " * LONG
                        + "x\n"},
    "evidence-brackets": {"tree.md": "# T\n\n## H1: a\nStatus: 待验\nEvidence: " + "[" * LONG + "\n"},
    "card-wiki-spaces": {"Problems/q1.md": "# 问题｜q1\n\n- 依赖: [[p1]]" + " " * LONG + "x\n"},
    "frontmatter-first-line": {"tree.md": "---\na" + " " * LONG + "x\n---\n# T\n"},
    "status-word": {"tree.md": "# T\n\n## H1: a\nStatus: x" + " " * LONG + "y\n"},
}


@pytest.mark.parametrize("shape", list(_FILES))
def test_the_second_testers_long_lines_are_read(make_kb, shape: str) -> None:
    kb = make_kb(_FILES[shape], commit=True)
    for args in (("index",), ("verify",)):
        try:
            res = run_script(*args, cwd=kb, timeout=120)
        except subprocess.TimeoutExpired:  # pragma: no cover - the fault itself
            pytest.fail(f"kb {args[0]} did not read a {LONG}-character line within 120 s")
        assert res.code in (0, 1), res.stdout[:2000] + res.stderr[:2000]
        assert max(map(len, (res.stdout + res.stderr).splitlines()), default=0) < 2000, \
            "a diagnostic quoted the whole line"
