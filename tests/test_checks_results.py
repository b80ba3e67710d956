"""The key a snapshot's results are stored under (kb.checks.results.snapshot_key): a
snapshot derived from another by a few changed files hashes again only what they touch,
and gets the key its own listing would."""

from __future__ import annotations

import pytest

import kb.digests as digests
from conftest import git
from kb.checks.changes import diff_commits, diff_staged, undo
from kb.repo import commit_snapshot, derived_snapshot, differing_paths, open_kb, staged_snapshot
from test_verify_support import make_repo, problem, pull_and_stage


@pytest.fixture
def pulled(make_kb):
    """A KB of 9 cards: a commit, a pulled commit changing q3, q4 changed and staged."""
    root = make_repo(make_kb, {f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 11)})
    pull_and_stage(root, "Problems/q3.md", "Problems/q4.md")
    return root


def test_derived_snapshots_hash_again_only_the_runs_holding_a_change(pulled, monkeypatch):
    """As the pre-commit hook derives them: HEAD from the staged index, the commit before
    the pull from HEAD. Each hashes one run of files again, and gets the digests (so the
    key) of the commit's own listing."""
    k = open_kb(pulled)
    head = git(pulled, "rev-parse", "HEAD").strip()
    before = git(pulled, "rev-parse", "HEAD~1").strip()
    monkeypatch.setattr(digests, "RUN", 2)
    hashed: list[list[str]] = []
    real = digests._digest
    monkeypatch.setattr(digests, "_digest", lambda paths, files: hashed.append(paths) or real(paths, files))

    new = staged_snapshot(k)
    runs = -(-len(new.files) // 2)
    digests.file_digests(new)
    assert len(hashed) == runs >= 6
    hashed.clear()
    base = undo(new, diff_staged(k, head), k, head)
    assert digests.file_digests(base)[1] != digests.file_digests(new)[1]
    assert len(hashed) == 1 and "Problems/q4.md" in hashed[0]  # the staged change, undone
    hashed.clear()
    earlier = undo(base, diff_commits(k, before, head), k, before)
    digests.file_digests(earlier)
    assert len(hashed) == 1 and "Problems/q3.md" in hashed[0]  # the pulled change, undone
    hashed.clear()
    assert digests.file_digests(base) == digests.file_digests(commit_snapshot(k, head))
    assert digests.file_digests(earlier) == digests.file_digests(commit_snapshot(k, before))
    assert len(hashed) == 2 * runs  # the commits' own listings: every run


def test_a_derived_snapshot_adding_a_file_hashes_every_run(pulled, monkeypatch):
    """A path added or removed moves every later run: the digests are computed whole
    (and equal the listing's)."""
    k = open_kb(pulled)
    (pulled / "Problems" / "q11.md").write_text(problem("q11"), encoding="utf-8")
    git(pulled, "add", "Problems/q11.md")
    head = git(pulled, "rev-parse", "HEAD").strip()
    monkeypatch.setattr(digests, "RUN", 2)
    new = staged_snapshot(k)
    digests.file_digests(new)
    base = undo(new, diff_staged(k, head), k, head)
    assert len(base.files) == len(new.files) - 1
    calls = []
    real = digests._digest
    monkeypatch.setattr(digests, "_digest", lambda paths, files: calls.append(1) or real(paths, files))
    assert digests.file_digests(base) == digests.file_digests(commit_snapshot(k, head))
    assert len(calls) == 2 * -(-len(base.files) // 2)


def test_differing_paths_follows_the_derivation_either_way(pulled):
    k = open_kb(pulled)
    head = git(pulled, "rev-parse", "HEAD").strip()
    before = git(pulled, "rev-parse", "HEAD~1").strip()
    new = staged_snapshot(k)
    base = undo(new, diff_staged(k, head), k, head)
    earlier = undo(base, diff_commits(k, before, head), k, before)
    assert differing_paths(new, base) == differing_paths(base, new) == {"Problems/q4.md"}
    assert differing_paths(earlier, new) == {"Problems/q3.md", "Problems/q4.md"}
    assert differing_paths(new, new) == set()
    # a snapshot listed by git, not derived: every file has to be compared
    assert differing_paths(new, commit_snapshot(k, head)) is None
    # a path patched back to what it was is not a difference
    same = derived_snapshot(base, dict(base.files), dict(base.formats), ["Problems/q5.md"], head)
    assert differing_paths(same, base) == set()
