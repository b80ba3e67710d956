"""Shared locks through a lock remote (issue: team work, priority 5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, invoke, make_team, tree_snapshot


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A bare remote and two clones of a KB whose kb.toml names `origin` as lock remote."""
    monkeypatch.setenv("KB_NOW", "2026-11-29T10:00:00Z")
    return make_team(tmp_path, monkeypatch, '\n[locks]\nremote = "origin"\n',
                     "kb init, shared locks")


def test_a_clone_that_never_fetched_locks_is_refused(shared: dict[str, Path]) -> None:
    a, b, remote = shared["a"], shared["b"], shared["remote"]
    res = invoke("lock", "claim", "tree.md", "--owner", "alice", "--ttl", "30m", cwd=a)
    assert res.code == 0, res.stderr
    assert "refs/kb/locks/" in git(remote, "for-each-ref", "refs/kb/locks")  # acted on the remote
    assert git(b, "for-each-ref", "refs/kb") == ""
    def files() -> dict[str, bytes]:
        return {k: v for k, v in tree_snapshot(b, skip_git=True).items() if not k.startswith(".kb")}

    before = files()
    head = git(b, "rev-parse", "HEAD")
    res = invoke("hyp", "add", "Bob's idea", "--owner", "bob", cwd=b)
    assert res.code == 1
    assert "tree.md is locked by alice until 2026-11-29T10:30:00Z" in res.stderr, res.stderr
    assert files() == before and git(b, "rev-parse", "HEAD") == head
    st = invoke("lock", "status", "--json", cwd=b).json()
    assert st["source"] == "remote origin (fetched now)" and st["locks"][0]["owner"] == "alice"
    # alice's own writes go through, and her release frees bob.
    assert invoke("hyp", "add", "Alice's idea", "--owner", "alice", cwd=a).code == 0
    res = invoke("lock", "release", "tree.md", "--owner", "alice", cwd=a)
    assert res.code == 0, res.stderr
    git(b, "pull", "-q", "--ff-only")
    res = invoke("hyp", "add", "Bob's idea", "--owner", "bob", cwd=b)
    assert res.code == 0, res.stderr


def test_a_stale_local_copy_never_blocks(shared: dict[str, Path]) -> None:
    a, b = shared["a"], shared["b"]
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=a).code == 0
    # b mirrors the lock the old way (a plain lock fetch into refs/kb/locks) ...
    git(b, "fetch", "-q", "origin", "+refs/kb/locks/*:refs/kb/locks/*")
    assert git(b, "for-each-ref", "refs/kb/locks") != ""
    assert invoke("lock", "release", "tree.md", "--owner", "alice", cwd=a).code == 0
    # ... and the copy is stale now: it must not block bob.
    assert git(b, "for-each-ref", "refs/kb/locks") != ""
    res = invoke("hyp", "add", "Bob's idea", "--owner", "bob", cwd=b)
    assert res.code == 0, res.stderr


def test_offline_policy_refuse_or_warn(shared: dict[str, Path]) -> None:
    b = shared["b"]
    git(b, "remote", "set-url", "origin", str(shared["remote"].parent / "gone.git"))
    head = git(b, "rev-parse", "HEAD")
    res = invoke("hyp", "add", "Offline idea", "--owner", "bob", cwd=b)
    assert res.code == 1 and "cannot read the locks of the lock remote origin" in res.stderr
    assert "offline = refuse" in res.stderr and git(b, "rev-parse", "HEAD") == head
    # git's reason, not the tail of its hint ("and the repository exists.")
    assert "does not appear to be a git repository" in res.stderr, res.stderr
    assert "repository exists" not in res.stderr
    # how to go on, this clone first (kb.toml is shared); said alike for a write and a hook
    assert "`git config kb.lockOffline warn` in this clone" in res.stderr
    assert "nothing was written" not in res.stderr
    git(b, "remote", "rename", "origin", "upstream")  # [locks] remote names no remote now
    res = invoke("hyp", "add", "Offline idea", "--owner", "bob", cwd=b)
    assert res.code == 1 and "no git remote named 'origin' here? see `git remote -v`" in res.stderr
    git(b, "remote", "rename", "upstream", "origin")
    git(b, "config", "kb.lockOffline", "warn")
    res = invoke("hyp", "add", "Offline idea", "--owner", "bob", cwd=b)
    assert res.code == 0 and "writing without checking the shared locks" in res.stderr


def test_write_warns_when_the_remote_already_has_the_id(shared: dict[str, Path]) -> None:
    a, b = shared["a"], shared["b"]
    assert invoke("hyp", "add", "Alice's idea", "--owner", "alice", cwd=a).code == 0
    git(a, "push", "-q", "origin", "main")
    res = invoke("hyp", "add", "Bob's idea", "--owner", "bob", cwd=b)
    assert res.code == 0
    assert "H1 already exists on the lock remote's default branch" in res.stderr
    assert "kb sync" in res.stderr
    # An experiment on the (existing) H1 allocates only E001, which the remote lacks: no warning.
    res = invoke("exp", "new", "--hyp", "H1", "Bob measures", "--owner", "bob", cwd=b)
    assert res.code == 0 and "already exists" not in res.stderr


def test_pre_push_reads_the_remote_locks(shared: dict[str, Path]) -> None:
    a, b = shared["a"], shared["b"]
    assert invoke("hooks", "install", cwd=b).code == 0
    fetch = git(b, "config", "--get-all", "remote.origin.fetch")
    assert "+refs/kb/locks/*:refs/kb/remote-locks/origin/locks/*" in fetch  # refspecs set up
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=a).code == 0
    # bob edits by hand and skips the commit hook; the push is what stops him.
    text = (b / "tree.md").read_text(encoding="utf-8")
    (b / "tree.md").write_text(text + "\n## H1: By hand\nStatus: 待验\nEvidence: (empty)\n", encoding="utf-8")
    git(b, "config", "kb.owner", "bob")
    git(b, "commit", "-q", "--no-verify", "-am", "by hand")
    import subprocess

    proc = subprocess.run(["git", "push", "origin", "main"], cwd=b, capture_output=True)
    err = proc.stderr.decode()
    assert proc.returncode != 0 and "tree.md is locked on origin by alice" in err, err


def test_release_as_another_owner_passes_its_own_pre_push(shared: dict[str, Path]) -> None:
    """`kb lock release --owner alice` from a clone whose user.email is not alice: the
    release's push runs the pre-push hook as alice (KB_OWNER), so her own lock on the
    remote does not refuse it (it did: exit 2 and an interrupted release)."""
    a, remote = shared["a"], shared["remote"]
    assert invoke("hooks", "install", cwd=a).code == 0
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=a).code == 0
    text = (a / "tree.md").read_text(encoding="utf-8")
    (a / "tree.md").write_text(text + "\n## H1: By alice\nStatus: 待验\nEvidence: (empty)\n",
                               encoding="utf-8")
    res = invoke("lock", "release", "tree.md", "--owner", "alice", "-m", "add H1", "--json", cwd=a)
    assert res.code == 0, res.stdout + res.stderr
    assert git(remote, "rev-parse", "main") == git(a, "rev-parse", "HEAD")
    assert "By alice" in git(remote, "show", "main:tree.md")
    assert git(remote, "for-each-ref", "refs/kb/locks") == ""


def test_project_lock_follows_the_configured_lock_remote(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``[locks] remote`` set, `kb project lock` takes the lease on the remote as
    `kb lock claim` does: a second clone's lease is refused (both held "the" lease)."""
    monkeypatch.setenv("KB_NOW", "2026-11-29T10:00:00Z")
    team = make_team(tmp_path, monkeypatch, '\n[locks]\nremote = "origin"\n', "shared locks")
    a, b = team["a"], team["b"]
    r = invoke("project", "lock", "--owner", "alice", "--json", cwd=a)
    assert r.code == 0, r.stderr
    assert "refs/kb/project-lock" in git(team["remote"], "for-each-ref")  # on the shared remote
    r = invoke("project", "lock", "--owner", "bob", cwd=b)
    assert r.code == 1 and "alice" in r.stderr, (r.stdout, r.stderr)
    assert invoke("project", "unlock", "--owner", "alice", cwd=a).code == 0
    assert invoke("project", "lock", "--owner", "bob", cwd=b).code == 0


def test_a_release_refused_after_a_steal_says_who_holds_the_lock(
        shared: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """alice's lock, stolen by bob after it expired: her release is refused by the
    pre-commit hook (KB380), and the refusal says bob holds it now (it said "the lock
    is still yours"). Nothing is changed: her edit stays in the working tree."""
    a, b, remote = shared["a"], shared["b"], shared["remote"]
    assert invoke("hooks", "install", cwd=a).code == 0
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", "--ttl", "1m", cwd=a).code == 0
    monkeypatch.setenv("KB_NOW", "2026-11-29T10:05:00Z")  # expired, past the grace
    res = invoke("lock", "steal", "tree.md", "--owner", "bob@lab", "--reason", "idle", cwd=b)
    assert res.code == 0, res.stderr
    text = (a / "tree.md").read_text(encoding="utf-8")
    (a / "tree.md").write_text(text + "\n## H1: Late\nStatus: 待验\nEvidence: (empty)\n",
                               encoding="utf-8")
    head = git(a, "rev-parse", "HEAD")
    res = invoke("lock", "release", "tree.md", "--owner", "alice", "-m", "late", "--json", cwd=a)
    assert res.code == 1, res.stdout + res.stderr
    err = res.json()["error"]
    assert "still yours" not in err["message"], err
    assert "tree.md is now locked on origin by bob@lab" in err["message"], err
    assert err["kind"] == "locked" and "KB380" in err["message"], err
    assert git(a, "rev-parse", "HEAD") == head and "Late" in (a / "tree.md").read_text(encoding="utf-8")
    assert git(remote, "rev-parse", "main") == head


def test_lock_status_with_the_remote_down_shows_the_last_fetched_locks(
        shared: dict[str, Path]) -> None:
    """The remote cannot be read: status shows its locks as last fetched, says why on one
    line, and exits 0 (it is what a user asks when writes are refused)."""
    a, b = shared["a"], shared["b"]
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=a).code == 0
    assert invoke("lock", "status", "--json", cwd=b).json()["stale"] is None  # fetched now
    git(b, "remote", "set-url", "origin", str(shared["remote"].parent / "gone.git"))
    res = invoke("lock", "status", "--json", cwd=b)
    st = res.json()
    assert res.code == 0 and st["locks"][0]["owner"] == "alice", res.stderr
    assert "does not appear to be a git repository" in st["stale"] and "\n" not in st["stale"]
    assert st["source"] == f"remote origin (as last fetched: {st['stale']})"
    res = invoke("lock", "status", cwd=b)
    assert res.code == 0 and "tree.md\talice" in res.stdout
    assert res.stderr.startswith("kb: warning: locks from remote origin (as last fetched: ")
    # none as last fetched: not "no locks on origin", which read as the remote's answer
    assert invoke("lock", "release", "tree.md", "--owner", "alice", cwd=a).code == 0
    git(b, "remote", "set-url", "origin", str(shared["remote"]))
    assert invoke("lock", "status", cwd=b).stdout == "no locks on origin\n"
    git(b, "remote", "set-url", "origin", str(shared["remote"].parent / "gone.git"))
    res = invoke("lock", "status", cwd=b)
    assert res.code == 0 and res.stdout == ("no locks known of origin (as last fetched: it could "
                                            "not be read now)\n"), res.stdout


def test_the_pre_commit_frameworks_pre_push_reads_the_remote_locks(
        shared: dict[str, Path]) -> None:
    """The same push as above from a clone whose hooks are the pre-commit framework's
    (`kb verify` in its pre-push stage, from `.pre-commit-hooks.yaml`): refused with KB380
    at the locked path, as kb's own pre-push hook refuses it; passes once alice released."""
    from test_hooks_precommit import _configure
    from test_verify_support import git_run

    a, b = shared["a"], shared["b"]
    git(b, "config", "kb.owner", "bob")
    _configure(b)
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=a).code == 0
    text = (b / "tree.md").read_text(encoding="utf-8")
    (b / "tree.md").write_text(text + "\n## H1: By hand\nStatus: 待验\nEvidence: (empty)\n", encoding="utf-8")
    git(b, "commit", "-q", "--no-verify", "-am", "by hand")
    proc = git_run(b, "push", "origin", "main")
    out = (proc.stdout + proc.stderr).decode()
    assert proc.returncode != 0 and "tree.md:1:1: KB380" in out, out
    assert "tree.md is locked on origin by alice" in out, out
    assert invoke("lock", "release", "tree.md", "--owner", "alice", cwd=a).code == 0
    git(b, "pull", "-q", "--rebase", "origin", "main")
    proc = git_run(b, "push", "origin", "main")
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()
