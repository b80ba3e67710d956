"""Rewritten history: a force push, ``kb verify --range`` over a range whose start is
not an ancestor of its end, and the server's pre-receive hook.

A bare repository is served by ``git daemon --enable=receive-pack`` on a free loopback
port (started and stopped here, every wait bounded); clones push to it over git://
with kb's real pre-push hook (``kb hooks install``). A non-fast-forward update of a
branch is judged as one change from its old tip to its new tip (the history rules),
besides each commit it adds against its parent.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import git, invoke, write_files
from test_verify_support import (TREE, experiment, git_run, make_repo, problem, proposition,
                                 verified)

ADD_H3 = TREE + "\n## H3: A third hypothesis\nStatus: 待验\nEvidence: (empty)\n"
Q1 = "Verified/问题/q1.md"


def _out(proc) -> str:
    """What a push printed (git sends a hook's stdout to stderr)."""
    return (proc.stdout + proc.stderr).decode("utf-8", "replace")


def _commit(root: Path, *args: str) -> None:
    proc = git_run(root, "commit", "-q", *args)
    assert proc.returncode == 0, _out(proc)


@pytest.fixture
def served(daemon, make_kb):
    """A clone with kb's hooks whose ``main`` (base, +q1's Verified card, +E002 and p2,
    +H3) was pushed to the served repository: ``(clone, bare, {name: commit})``."""
    url, bare = daemon
    root = make_repo(make_kb, dashboard=False)
    res = invoke("hooks", "install", cwd=root)
    assert res.code == 0, res.stderr
    git(root, "remote", "add", "origin", url)
    shas = {"base": git(root, "rev-parse", "HEAD")}
    write_files(root, {Q1: verified("q1", kind="问题"),
                       "Problems/q1.md": problem("q1", depends='["p1"]', status="已解决"),
                       # the record of the verdict that solved it (KB312)
                       "Logs/Verification/r-q1-s1_20260101T000000.json":
                       '{"r": "r-q1-s1", "verdict": 1, "results": [{"verifier": "a", "result": 1}, '
                       '{"verifier": "b", "result": 1}], "at": "2026-01-01T00:00:00"}\n'})
    git(root, "add", "-A")
    _commit(root, "-m", "q1 verified")
    shas["q1"] = git(root, "rev-parse", "HEAD")
    write_files(root, {"experiments/E002.md": experiment("E002"),
                       "Propos/代数/p2.md": proposition("p2")})
    git(root, "add", "-A")
    _commit(root, "-m", "E002 and p2")
    shas["e2"] = git(root, "rev-parse", "HEAD")
    write_files(root, {"tree.md": ADD_H3})
    _commit(root, "-am", "H3")
    shas["h3"] = git(root, "rev-parse", "HEAD")
    proc = git_run(root, "push", "-u", "origin", "main")
    assert proc.returncode == 0, _out(proc)
    assert "kb pre-push refs/heads/main" in _out(proc)
    return root, bare, shas


def _rewrite_from_q1(root: Path, shas: dict[str, str], branch: str, edit: bool) -> str:
    """``branch``: main's history with the commit that added q1's Verified card amended
    (``edit``: the card now says 结论: 假; else only its message), the later commits
    picked again on top. Returns the new tip."""
    git(root, "checkout", "-q", "-b", branch, shas["q1"])
    if edit:
        write_files(root, {Q1: verified("q1", kind="问题", conclusion="假")})
        _commit(root, "--no-verify", "--amend", "-a", "--no-edit")  # as the tester did
    else:
        _commit(root, "--amend", "-m", "q1 verified (reworded)")
    proc = git_run(root, "cherry-pick", f"{shas['q1']}..{shas['h3']}")
    assert proc.returncode == 0, _out(proc)
    tip = git(root, "rev-parse", "HEAD")
    assert git_run(root, "merge-base", "--is-ancestor", shas["h3"], tip).returncode == 1
    return tip


def test_force_push_of_a_rewritten_verified_card_is_refused(served) -> None:
    root, bare, shas = served
    _rewrite_from_q1(root, shas, "rewrite", edit=True)
    proc = git_run(root, "push", "--force", "origin", "rewrite:main")
    out = _out(proc)
    assert proc.returncode != 0, out
    assert "KB304" in out and Q1 in out and "push refused" in out
    assert "rewritten" in out  # says why a commit-by-commit check was not enough
    assert git(bare, "rev-parse", "main") == shas["h3"]


def test_force_push_after_reset_that_drops_records_is_refused(served) -> None:
    root, bare, shas = served
    git(root, "reset", "-q", "--hard", "HEAD~2")
    proc = git_run(root, "push", "--force", "origin", "HEAD:main")
    out = _out(proc)
    assert proc.returncode != 0, out
    lines = [ln for ln in out.splitlines() if "KB301" in ln]
    assert any("E002" in ln for ln in lines) and any("p2" in ln for ln in lines) \
        and any("H3" in ln for ln in lines), out
    assert git(bare, "rev-parse", "main") == shas["h3"]


def test_force_push_of_a_reworded_history_is_accepted(served) -> None:
    root, bare, shas = served
    tip = _rewrite_from_q1(root, shas, "reword", edit=False)
    proc = git_run(root, "push", "--force", "origin", "reword:main")
    assert proc.returncode == 0, _out(proc)
    assert "kb pre-push refs/heads/reword" in _out(proc)
    assert git(bare, "rev-parse", "main") == tip


def test_force_push_that_drops_a_hypothesis_with_an_override_is_accepted(served) -> None:
    """The documented way: a commit of the push carries `Kb-Override: <ID> <reason>`."""
    root, bare, shas = served
    git(root, "reset", "-q", "--hard", "HEAD~1")
    _commit(root, "--allow-empty", "-m", "Drop H3", "--trailer",
            "Kb-Override: H3 it duplicated H2")
    proc = git_run(root, "push", "--force", "origin", "HEAD:main")
    out = _out(proc)
    assert proc.returncode == 0, out
    assert "KB301" in out and "accepted: Kb-Override: H3 it duplicated H2" in out
    assert git(bare, "rev-parse", "main") == git(root, "rev-parse", "HEAD")


def test_force_push_from_a_stale_clone_judges_the_commits_it_never_fetched(served, tmp_path) -> None:
    """A clone that never fetched the remote's newest commit force-pushes over it: the
    hook fetches the remote's old tip and judges old -> new (E003 would be lost)."""
    root, bare, shas = served
    url = git(root, "remote", "get-url", "origin")
    stale = tmp_path / "stale"
    git(tmp_path, "clone", "-q", url, str(stale))
    assert invoke("hooks", "install", cwd=stale).code == 0
    write_files(root, {"experiments/E003.md": experiment("E003")})
    git(root, "add", "-A")
    _commit(root, "-m", "E003")
    assert git_run(root, "push", "-q", "origin", "main").returncode == 0
    newest = git(root, "rev-parse", "HEAD")
    write_files(stale, {"Propos/代数/p3.md": proposition("p3")})
    git(stale, "add", "-A")
    _commit(stale, "-m", "p3")
    assert git_run(stale, "cat-file", "-e", f"{newest}^{{commit}}").returncode != 0
    # A plain push first (git runs the hook before it finds it must fetch first): the
    # hook cannot tell it from a forced one, and says to pull first, not only how to
    # override what a force push would remove.
    proc = git_run(stale, "push", "origin", "HEAD:main")
    out = _out(proc)
    assert proc.returncode != 0 and "never fetched" in out and "pull first" in out, out
    assert "history was rewritten" not in out, out
    proc = git_run(stale, "push", "--force", "origin", "HEAD:main")
    out = _out(proc)
    assert proc.returncode != 0, out
    assert any("KB301" in ln and "E003" in ln for ln in out.splitlines()), out
    assert git(bare, "rev-parse", "main") == newest
    git(stale, "fetch", "-q", "origin")  # seen now: a force push is a deliberate rewrite
    proc = git_run(stale, "push", "--force", "origin", "HEAD:main")
    assert "KB301" in _out(proc) and "never fetched" not in _out(proc), _out(proc)


def test_pre_push_refuses_when_the_remote_old_tip_cannot_be_fetched(served) -> None:
    """The remote's tip is not in this clone and cannot be fetched: nothing is judged
    silently; the push is refused (an environment error, exit 2) and says why."""
    from kb.checks.push import check_push

    root, _, shas = served
    gone = "1234567890" * 4
    [pushed] = check_push(root, "origin", [f"refs/heads/main {shas['h3']} refs/heads/main {gone}"])
    assert pushed.report.exit_code == 2
    assert gone[:10] in pushed.report.env_error and "fetch" in pushed.report.env_error
    assert pushed.report.env_error in pushed.report.notes
    # the hook's command: exit 2 (refused), the reason on stderr, no lock check on a
    # commit that is not here
    from conftest import kb_script, source_env

    proc = subprocess.run([kb_script(), "hooks", "pre-push", "origin", "unused"], cwd=root,
                          input=f"refs/heads/main {shas['h3']} refs/heads/main {gone}\n".encode(),
                          capture_output=True, env=source_env(), timeout=120)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, err
    assert f"the remote's branch is at {gone[:10]}" in err and "could not fetch" in err


def test_delete_of_a_branch_is_not_a_rewrite(served) -> None:
    root, bare, shas = served
    git(root, "push", "-q", "origin", f"{shas['q1']}:refs/heads/old")
    proc = git_run(root, "push", "origin", ":old")
    assert proc.returncode == 0 and "kb pre-push" not in _out(proc)


def test_verify_range_over_a_rewrite_notes_it_and_judges_old_tip_to_new(served) -> None:
    root, _, shas = served
    tip = _rewrite_from_q1(root, shas, "rewrite", edit=True)
    # without --rewrite A..B may be a branch and a target that moved on: noted; each commit
    # is judged against its parent, where the amended one adds a card of q1 saying 结论: 假
    # that no record backs (the record solves q1: KB312)
    res = invoke("verify", "--range", f"{shas['h3']}..{tip}", "--json", cwd=root)
    assert any("--rewrite" in n for n in res.json()["notes"]), res.stdout
    assert res.code == 1 and [(d["code"], d["path"]) for d in res.json()["diagnostics"]
                              if d["severity"] == "error"] == [("KB312", Q1)], res.stdout
    res = invoke("verify", "--range", f"{shas['h3']}..{tip}", "--rewrite", "--json", cwd=root)
    assert res.code == 1, res.stdout + res.stderr
    data = res.json()
    assert any("not an ancestor" in n and shas["h3"][:10] in n for n in data["notes"]), data["notes"]
    kb304 = [d for d in data["diagnostics"] if d["code"] == "KB304"]
    assert [d["path"] for d in kb304] == [Q1] and kb304[0]["blocking"], data["diagnostics"]
    # the text report says it too
    res = invoke("verify", "--range", f"{shas['h3']}..{tip}", "--rewrite", cwd=root)
    assert res.code == 1 and "not an ancestor" in res.stderr and "KB304" in res.stdout
    # a reworded history: noted, nothing found
    tip2 = _rewrite_from_q1(root, shas, "reword", edit=False)
    res = invoke("verify", "--range", f"{shas['h3']}..{tip2}", "--rewrite", "--json", cwd=root)
    assert res.code == 0, res.stdout
    assert any("not an ancestor" in n for n in res.json()["notes"])
    # a range whose start is an ancestor says nothing of the kind
    res = invoke("verify", "--range", f"{shas['base']}..{shas['h3']}", "--json", cwd=root)
    assert res.code == 0 and not any("ancestor" in n for n in res.json()["notes"])


def test_verify_range_with_against_keeps_the_pull_request_reading(served) -> None:
    """``--against``: A..B is a branch meant to merge into A, which moved on; B is judged
    from the merge base (nothing of A's newer commits is 'removed'), and the note says so."""
    root, _, shas = served
    git(root, "checkout", "-q", "-b", "feat", shas["e2"])
    write_files(root, {"Propos/代数/p3.md": proposition("p3")})
    git(root, "add", "-A")
    _commit(root, "-m", "p3")
    res = invoke("verify", "--range", "main..feat", "--against", "main", "--json", cwd=root)
    assert res.code == 0, res.stdout
    assert any("not an ancestor" in n and "merge base" in n for n in res.json()["notes"])
    # without --against: each commit judged, nothing of main's newer commits "removed"
    res = invoke("verify", "--range", "main..feat", "--json", cwd=root)
    assert res.code == 0 and any("--against main" in n for n in res.json()["notes"]), res.stdout
    # with --rewrite the same range reads as feat replacing main: H3 would be lost
    res = invoke("verify", "--range", "main..feat", "--rewrite", "--json", cwd=root)
    assert res.code == 1
    assert any(d["code"] == "KB301" and "H3" in d["message"] for d in res.json()["diagnostics"])
    assert invoke("verify", "--range", "main..feat", "--rewrite", "--against", "main",
                  cwd=root).code == 2


def test_server_pre_receive_refuses_a_rewrite(served, tmp_path) -> None:
    """The same judgement on the server (`kb hooks install --server`), for a push with
    the client's hooks skipped."""
    root, bare, shas = served
    res = invoke("hooks", "install", "--server", cwd=bare)
    assert res.code == 0, res.stderr
    _rewrite_from_q1(root, shas, "rewrite", edit=True)
    proc = git_run(root, "push", "--no-verify", "--force", "origin", "rewrite:main")
    out = _out(proc)
    assert proc.returncode != 0 and "KB304" in out and "refused by the server" in out, out
    assert git(bare, "rev-parse", "main") == shas["h3"]


def test_a_shallow_clone_says_it_cannot_tell_rather_than_judging_a_rewrite(served, tmp_path) -> None:
    """Two tips whose merge base a shallow clone lacks: no rewrite is assumed (nor
    ruled out); the run is an environment error that says to fetch full history."""
    root, bare, shas = served
    _rewrite_from_q1(root, shas, "reword", edit=False)
    proc = git_run(root, "push", "origin", "reword")
    assert proc.returncode == 0, _out(proc)
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--no-single-branch", f"file://{bare}", str(clone))
    res = invoke("verify", "--range", "origin/main..origin/reword", "--json", cwd=clone)
    data = res.json()
    assert res.code == 2, res.stdout
    assert "shallow clone" in data["error"]["message"] and "unshallow" in data["error"]["message"]
    assert not any("rewritten" in n for n in data["notes"])
