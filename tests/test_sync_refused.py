"""`kb sync` when a hook refuses the merge commit: no path conflicts, git wrote MERGE_HEAD
and ran the pre-merge-commit hook, which said no. That is ``merge: "refused"`` with the
hook's reasons, not a "conflict" to resolve by hand; the merge is aborted all the same.

Two clones of one KB sharing a bare server (:func:`conftest.make_team`). In the first
test the refusing hook is kb's own (``kb hooks install``): clone b merges tree.md with a
driver that keeps our side (``.git/info/attributes``, a clone's own setting kb does not
see), so the merge is clean for git but drops the upstream's H2, and ``kb verify
--staged`` refuses it (KB301). In the second a hand-written hook refuses a merge whose
IDs kb sync renumbered first: the renumber commit stays.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional

import pytest

from conftest import git, invoke, make_team, tree_snapshot


def _ok(*args: str, cwd: Path) -> None:
    res = invoke(*args, cwd=cwd)
    assert res.code == 0, (args, res.stdout, res.stderr)


def _files(root: Path) -> dict[str, bytes]:
    """The work tree (no .git, no kb's .kb cache)."""
    return {k: v for k, v in tree_snapshot(root, skip_git=True).items() if not k.startswith(".kb")}


def _assert_as_it_was(b: Path, head: str, files: Optional[dict[str, bytes]] = None) -> None:
    """The branch at ``head``, index and work tree its tree (and ``files``), no merge in progress."""
    assert git(b, "rev-parse", "HEAD") == head
    assert git(b, "status", "--porcelain", "--untracked-files=all") == ""
    if files is not None:
        assert _files(b) == files
    assert not (b / ".git" / "MERGE_HEAD").exists()


@pytest.fixture
def clean_but_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Clone b, kb's hooks installed, whose merge of origin/main merges every path but
    loses the upstream's H2 (b's tree.md kept whole): kb's pre-merge-commit hook refuses it."""
    team = make_team(tmp_path, monkeypatch)
    a, b = team["a"], team["b"]
    _ok("hyp", "add", "Shared", cwd=a)
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    _ok("hooks", "install", cwd=b)
    _ok("hyp", "add", "A idea", cwd=a)  # H2 upstream
    git(a, "push", "-q", "origin", "main")
    _ok("hyp", "add", "B child", "--parent", "H1", cwd=b)  # H1.1 here: both change tree.md
    (b / ".git" / "info").mkdir(exist_ok=True)
    (b / ".git" / "info" / "attributes").write_text("tree.md merge=keepours\n", encoding="utf-8")
    git(b, "config", "merge.keepours.driver", "true")
    return b


def test_kbs_hook_refusing_a_clean_merge_is_refused_not_a_conflict(clean_but_refused: Path) -> None:
    b = clean_but_refused
    head, files = git(b, "rev-parse", "HEAD"), _files(b)
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 1, (res.stdout, res.stderr)
    assert data["merge"] == "refused" and data["ok"] is False and data["merge_commit"] is None
    assert data["renumbered"] == {} and data["findings"] == []
    refused = data["conflicts"]
    assert any(c.startswith("tree.md:") and " KB301 [error] hypothesis H2 was removed" in c
               for c in refused), refused
    # The hook's reasons only: not git's lines, not its warnings, not "commit again".
    assert not [c for c in refused if c.startswith(("Auto-merging", "Not committing"))
                or "[warning]" in c or "commit again" in c], refused
    _assert_as_it_was(b, head, files)

    res = invoke("sync", cwd=b)  # the text report: what refused it and what to do
    assert res.code == 1
    assert "kb sync: merge of origin/main: refused" in res.stderr
    assert "a git hook refused the merge commit" in res.stderr and "KB301" in res.stderr
    assert "run kb sync again" in res.stderr and "`git merge origin/main`" in res.stderr
    assert "conflict" not in res.stderr.lower()
    _assert_as_it_was(b, head, files)


def test_any_refusing_hook_keeps_the_renumber_commit(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    team = make_team(tmp_path, monkeypatch)
    a, b = team["a"], team["b"]
    _ok("problem", "add", "q1", "A problem", cwd=a)
    git(a, "push", "-q", "origin", "main")
    _ok("problem", "add", "q1", "B problem", cwd=b)  # taken upstream: renumbered to q2
    hook = b / ".git" / "hooks" / "pre-merge-commit"
    hook.write_text("#!/bin/sh\necho 'policy: no merges on Fridays' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    before = git(b, "rev-parse", "HEAD")
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 1, (res.stdout, res.stderr)
    assert data["renumbered"] == {"q1": "q2"} and data["renumber_commit"]
    assert data["merge"] == "refused" and data["conflicts"] == ["policy: no merges on Fridays"]
    renumbered = data["renumber_commit"]
    assert git(b, "rev-parse", f"{renumbered}^") == before
    _assert_as_it_was(b, renumbered)
    assert (b / "Problems" / "q2.md").is_file() and not (b / "Problems" / "q1.md").exists()
    os.remove(hook)
    res = invoke("sync", "--json", cwd=b)  # the hook gone, the same sync merges
    assert res.code == 0 and res.json()["merge"] == "merged", (res.stdout, res.stderr)


def test_refusal_lines_keep_what_refused_and_drop_the_rest() -> None:
    from kb.ops.sync import refusal_lines

    text = ("Auto-merging DASHBOARD.md\nAuto-merging tree.md\n"
            "tree.md:7:1: KB301 [error] hypothesis H2 was removed\n"
            "tree.md:9:1: KB305 [error] old trouble (pre-existing)\n"
            "DASHBOARD.md:5:1: KB240 [warning] DASHBOARD.md is stale\n"
            "kb verify --staged (1 KB): 1 error(s) introduced by this change — commit refused\n"
            "kb: fix the errors above and commit again (`kb rules` explains every code)\n"
            "Not committing merge; use 'git commit' to complete the merge.\n")
    assert refusal_lines(text) == [
        "tree.md:7:1: KB301 [error] hypothesis H2 was removed",
        "kb verify --staged (1 KB): 1 error(s) introduced by this change — commit refused"]
    assert refusal_lines("Not committing merge; use 'git commit' to complete the merge.\n") == [
        "a git hook refused the merge commit and printed nothing"]


def test_a_tree_that_does_not_read_leaves_the_merge_and_says_what_to_do(team) -> None:
    """A forge merge kept two `## H1:` headings, one without its Status (KB115), upstream: kb sync's merge
    stands and it says the dashboard waits for the file to be fixed, naming `kb verify`
    (it said only that kb could not tell whether DASHBOARD.md was current, and exit 1)."""
    a, b = team["a"], team["b"]
    _ok("hyp", "add", "Shared", cwd=a)
    tree = a / "tree.md"
    text = tree.read_text(encoding="utf-8")
    # a textual merge's leftover: the heading again, its Status line gone (KB115)
    tree.write_text(text + "\n## H1: Shared, declared again\nEvidence: (empty)\n", encoding="utf-8")
    git(a, "commit", "-q", "--no-verify", "-am", "a forge merge kept both headings")
    git(a, "push", "-q", "origin", "main")
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert data["merge"] in ("fast-forward", "merged", "up to date"), data
    assert (b / "tree.md").read_bytes() == tree.read_bytes()  # the upstream's, merged
    (note,) = [n for n in data["notes"] if "DASHBOARD.md was not regenerated" in n]
    assert "the merge stands" in note and "`kb verify`" in note and "tree.md" in note, note
    text = invoke("sync", cwd=b).stderr
    assert "DASHBOARD.md was not regenerated" in text, text


def test_an_error_the_upstream_holds_does_not_stop_the_merge_commit(team) -> None:
    """With commits of its own and kb's hooks, b's merge commit ran the pre-merge-commit
    hook, which called the upstream's KB115 "introduced by this change" and refused it:
    nobody could sync until someone repaired the upstream, which needs the merge."""
    a, b = team["a"], team["b"]
    _ok("hooks", "install", cwd=b)
    _ok("problem", "add", "q1", "A problem of b's", cwd=b)  # a commit of b's own: a real merge
    tree = a / "tree.md"
    tree.write_text(tree.read_text(encoding="utf-8")
                    + "\n## H1: A heading without its Status line\nEvidence: (empty)\n",
                    encoding="utf-8")
    git(a, "commit", "-q", "--no-verify", "-am", "a forge merge kept both headings")
    git(a, "push", "-q", "origin", "main")
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert data["merge"] == "merged" and data["merge_commit"], data
    assert (b / "tree.md").read_bytes() == tree.read_bytes()
    # the merge holds no error of its own: a change of b's that breaks the tree still blocks
    bad = b / "tree.md"
    bad.write_text(bad.read_text(encoding="utf-8") + "\n## H9: Another\nEvidence: (empty)\n",
                   encoding="utf-8")
    git(b, "add", "tree.md")
    r = invoke("verify", "--staged", "--json", cwd=b)
    assert r.code == 1 and any(d["code"] == "KB115" and d["blocking"]
                               for d in r.json()["diagnostics"]), r.stdout
