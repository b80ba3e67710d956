"""kb writes no statement, title or reason longer than a line should be, nor a body text
longer than a book: the write is refused with a usage error (exit 2) naming the limit
and the length, and nothing is written (no file changed, no commit).

One line of research text (an anchor of tree.md or a card, a dashboard row, a commit's
summary or trailer) takes at most :data:`kb.text.LINE_MAX` (4,000) characters; a body
(an entry's text, a statement section, a log, a verifier's reason) at most
:data:`kb.text.BODY_MAX` (1,000,000). Real git repositories.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, invoke, tree_snapshot

#: The documented bounds (README, docs/DECISIONS.md): kb.text holds them.
LINE_MAX = 4_000
BODY_MAX = 1_000_000


def test_the_bounds_are_the_documented_ones() -> None:
    import kb.text

    assert (getattr(kb.text, "LINE_MAX", None), getattr(kb.text, "BODY_MAX", None)) == (LINE_MAX, BODY_MAX)


def _refused(root: Path, args: tuple[str, ...], length: int, limit: int) -> None:
    """``kb <args>`` exits 2 naming the length and the limit; nothing written."""
    before, head = tree_snapshot(root, skip_git=True), git(root, "rev-parse", "HEAD")
    r = invoke(*args, cwd=root)
    assert r.code == 2, (args[:3], r.code, r.stderr[:500])
    assert f"{length:,} characters long" in r.stderr and f"at most {limit:,} characters" in r.stderr, \
        r.stderr[:500]
    assert "Traceback" not in r.stderr
    assert tree_snapshot(root, skip_git=True) == before and git(root, "rev-parse", "HEAD") == head


def _with_cards(tree_kb: Path) -> Path:
    """``tree_kb`` holding H1 (with experiment E001), problem q1, proposition p1, method m1."""
    root = tree_kb
    for args in (("hyp", "add", "a statement"), ("exp", "new", "--hyp", "H1", "measure it"),
                 ("problem", "add", "q1", "state q1"),
                 ("propo", "add", "--new-category", "代数", "p1", "claim p1"),
                 ("method", "add", "m1", "a method")):
        r = invoke(*args, cwd=root)
        assert r.code == 0, (args, r.stderr)
    return root


def test_a_two_million_character_statement_is_refused(tree_kb: Path) -> None:
    """The testers' case: ``kb hyp add`` of 2,000,000 characters wrote 2 MB into tree.md and
    DASHBOARD.md, and removing it was KB301 forever."""
    _refused(tree_kb, ("hyp", "add", "x" * 2_000_000), 2_000_000, LINE_MAX)


def test_one_line_fields_of_every_write_are_capped(tree_kb: Path) -> None:
    root = _with_cards(tree_kb)
    long = "长" * (LINE_MAX + 1)
    n = LINE_MAX + 1
    for args in (("hyp", "add", long),
                 ("hyp", "edit", "H1", long, "--reason", "typo"),
                 ("hyp", "edit", "H1", "a better statement", "--reason", long),
                 ("hyp", "status", "H1", "被推翻", "--force", "--reason", long),
                 ("exp", "new", "--hyp", "H1", long),
                 ("exp", "result", "E001", "--data", "1.0", "--conclusion", "支持", "--reason", long),
                 ("problem", "add", "q2", "state q2", "--title", long),
                 ("propo", "add", "代数", "p2", "claim p2", "--title", long),
                 ("method", "add", "m2", long),
                 ("method", "improve", "m1", long, "--text", "better"),
                 ("entry", "add", "q1", "--kind", "解法", "--title", long, "--text", "try")):
        _refused(root, args, n, LINE_MAX)


def test_a_line_at_the_limit_is_written(tree_kb: Path) -> None:
    text = "y" * LINE_MAX
    r = invoke("hyp", "add", text, cwd=tree_kb)
    assert r.code == 0, r.stderr
    assert text in (tree_kb / "tree.md").read_text(encoding="utf-8")


def test_body_texts_are_capped_far_higher(tree_kb: Path, tmp_path: Path) -> None:
    root = _with_cards(tree_kb)
    body = "z" * (BODY_MAX + 1)
    n = BODY_MAX + 1
    _refused(root, ("entry", "add", "q1", "--kind", "解法", "--title", "t", "--text", body), n, BODY_MAX)
    _refused(root, ("problem", "add", "q3", body), n, BODY_MAX)
    _refused(root, ("exp", "log", "E001", body), n, BODY_MAX)
    big = tmp_path / "proof.txt"
    big.write_text(body, encoding="utf-8")
    _refused(root, ("entry", "add", "p1", "--kind", "证明", "--title", "t", "--text-file", str(big)),
             n, BODY_MAX)
    # a file too large whatever it holds is refused before it is read
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as f:
        f.truncate(4 * BODY_MAX + 1)
    before = tree_snapshot(root, skip_git=True)
    r = invoke("entry", "add", "p1", "--kind", "证明", "--title", "t", "--text-file", str(huge), cwd=root)
    assert r.code == 2 and f"{4 * BODY_MAX + 1:,} bytes" in r.stderr, r.stderr
    assert tree_snapshot(root, skip_git=True) == before
    # a long proof under the bound is written
    proof = "a step of the proof\n" * 5_000  # 100,000 characters
    r = invoke("entry", "add", "p1", "--kind", "证明", "--title", "long proof", "--text", proof,
               cwd=root)
    assert r.code == 0, r.stderr


def test_a_verifiers_reason_is_a_body(tree_kb: Path) -> None:
    root = _with_cards(tree_kb)
    assert invoke("entry", "add", "q1", "--kind", "解法", "--title", "t", "--text", "try",
                  cwd=root).code == 0
    _refused(root, ("verdict", "q1#解法1", "--vote", "v1=0.9", "--vote", "v2=0.9",
                    "--reason", "v1=" + "r" * (BODY_MAX + 1)), BODY_MAX + 1, BODY_MAX)


@pytest.mark.parametrize("n, ok", [(LINE_MAX, True), (LINE_MAX + 1, False)])
def test_one_line_bound(n: int, ok: bool) -> None:
    from kb.errors import UsageError
    from kb.text import one_line

    text = "  " + "w" * n + "  "  # the surrounding blanks are stripped first
    if ok:
        assert one_line(text, "the statement") == "w" * n
    else:
        with pytest.raises(UsageError, match=f"the statement is {n:,} characters long"):
            one_line(text, "the statement")


def test_the_mcp_tool_is_capped_too(tree_kb: Path) -> None:
    """MCP's hyp_add goes through the same operation: the same refusal, nothing written."""
    from kb.errors import UsageError
    from kb.mcp.tree import hyp_add
    from kb.repo import open_kb

    before = tree_snapshot(tree_kb, skip_git=True)
    with pytest.raises(UsageError, match="2,000,000 characters long; kb writes at most 4,000"):
        hyp_add(open_kb(tree_kb), "s" * 2_000_000)
    assert tree_snapshot(tree_kb, skip_git=True) == before
