"""``kb problem priority``: a priority set to the value the card holds writes nothing and
says so (it listed the change "q2: 优先级 0 → 0" with no commit)."""

from __future__ import annotations

from pathlib import Path

from conftest import git, invoke


def test_the_same_priority_again_changes_nothing_and_says_so(example_kb: Path) -> None:
    head = git(example_kb, "rev-parse", "HEAD")
    r = invoke("problem", "priority", "q2", "0", "--json", cwd=example_kb)
    data = r.json()
    assert r.code == 0 and data["commit"] is None, r.stdout
    assert data["changes"] == ["q2: 优先级 is 0 already"], data
    assert git(example_kb, "rev-parse", "HEAD") == head
    r = invoke("problem", "priority", "q2", "3", "--json", cwd=example_kb)
    assert r.code == 0 and r.json()["changes"] == ["q2: 优先级 0 → 3"], r.stdout
    assert git(example_kb, "rev-parse", "HEAD") != head
