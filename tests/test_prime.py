"""``kb prime``: the session-start context, within 8,000 characters."""

from __future__ import annotations

from pathlib import Path

from conftest import commit_all, git, invoke, write_files


def test_prime_names_the_state(example_kb: Path) -> None:
    assert invoke("lock", "claim", "Problems/q2.md", "--owner", "alice", cwd=example_kb).code == 0
    r = invoke("prime", cwd=example_kb)
    assert r.code == 0
    text = r.stdout
    for needle in ("## Layout", "## Rules", "- problems: `Problems`", "--expect",
                   "Problems/q2.md held by alice", "H1.1.1 [进行中]", "H2 [待验]",
                   "- q2 (priority 0, 求解中) Infinitude of primes"):
        assert needle in text, needle
    assert "H1 [被支持]" not in text  # only active hypotheses
    data = invoke("prime", "--json", cwd=example_kb).json()
    assert data["text"] == text and data["head"] == git(example_kb, "rev-parse", "HEAD")


def test_prime_since_lists_commits_and_paths(example_kb: Path) -> None:
    base = git(example_kb, "rev-parse", "HEAD")
    assert invoke("problem", "plan", "q2", "bisect", cwd=example_kb).code == 0
    text = invoke("prime", "--since", base, cwd=example_kb).stdout
    section = text.split(f"## Changed since {base}", 1)[1]
    assert " kb problem plan q2\n" in section
    assert "M Problems/q2.md" in section
    bad = invoke("prime", "--since", "no-such-commit", "--json", cwd=example_kb)
    assert bad.code == 2 and bad.json()["error"]["kind"] == "usage"


def test_prime_stays_within_8000_characters(tree_kb: Path) -> None:
    """2,000 active hypotheses: each section keeps what fits and counts the rest."""
    blocks = "".join(f"## H{i}: statement number {i} with some words to make it longer\n"
                     f"Status: 待验\nEvidence: (empty)\n\n" for i in range(1, 2001))
    write_files(tree_kb, {"tree.md": "# Hypothesis Tree\n\n" + blocks})
    commit_all(tree_kb, "many hypotheses")
    text = invoke("prime", cwd=tree_kb).stdout
    assert len(text) <= 8000
    assert "- H1 [待验] statement number 1 " in text and "more (see `kb ls`" in text
    assert "## Open problems by priority" in text  # later sections still present
