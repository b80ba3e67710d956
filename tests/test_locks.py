"""Write locks as git refs and commits (issue 6, DESIGN §5): claim, release,
status, renew, steal, prune, project lock, bad input, the write-transaction
hook and git's index lock. Real git, pinned environment, no mocks."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from conftest import git, invoke, tree_snapshot

T0 = 1_800_000_000  # a fixed "now" (KB_NOW) for lease arithmetic


@pytest.fixture
def kbr(make_kb, monkeypatch) -> Path:
    """A committed KB with a few free-form files; the clock pinned at T0."""
    monkeypatch.setenv("KB_NOW", str(T0))
    root = make_kb({"Notes/a.md": "a\n", "Notes/b.md": "b\n", "Notes/c.md": "c\n",
                    "kb.toml": "[kb]\n\n[locks]\nttl = \"10m\"\ngrace = \"30s\"\nleads = [\"lead\"]\n"},
                   commit=True)
    return root


def lock_refs(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/kb")
    return dict(line.split(" ") for line in out.splitlines()) if out else {}


def ref_of(path: str) -> str:
    return "refs/kb/locks/" + hashlib.sha1(path.encode()).hexdigest()


def kb_(root: Path, *args: str):
    return invoke(*args, cwd=root)


# -- formats ------------------------------------------------------------------------------


def test_claim_creates_ref_and_lock_commit(kbr):
    r = kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", "--json")
    assert r.code == 0, r.stderr
    data = r.json()
    (lk,) = data["locks"]
    assert lk["ref"] == ref_of("Notes/a.md")
    assert lk["how"] == "new" and lk["owner"] == "alice"
    assert lk["expires_epoch"] == T0 + 600
    refs = lock_refs(kbr)
    assert refs == {ref_of("Notes/a.md"): lk["commit"]}
    # the lock commit: empty tree, no parent, on no branch, message records it all
    assert git(kbr, "rev-parse", lk["commit"] + "^{tree}") == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    assert git(kbr, "rev-list", "--parents", "-n1", lk["commit"]) == lk["commit"]
    assert git(kbr, "branch", "--contains", lk["commit"]) == ""
    msg = git(kbr, "log", "-1", "--format=%B", lk["commit"])
    blob = git(kbr, "hash-object", "Notes/a.md")
    assert "Kb-Lock-Path: Notes/a.md" in msg
    assert "Kb-Lock-Owner: alice" in msg
    assert "Kb-Lock-Expires: 2027-01-15T08:10:00Z" in msg
    assert f"Kb-Lock-Expires-Epoch: {T0 + 600}" in msg
    assert f"Kb-Lock-Blob: {blob}" in msg


def test_ttl_parsing():
    from kb.errors import UsageError
    from kb.locks import format_duration, parse_duration

    assert parse_duration("30m") == 1800
    assert parse_duration("90s") == 90
    assert parse_duration("2h") == 7200
    assert parse_duration("1h30m") == 5400
    assert parse_duration("1d") == 86400
    assert parse_duration("0s", allow_zero=True) == 0
    for bad in ("", "30", "abc", "-5m", "1m1h", "5 m", "0s", "1.5h", "m"):
        with pytest.raises(UsageError):
            parse_duration(bad)
    assert format_duration(5400) == "1h30m" and format_duration(5) == "5s"


def test_claim_refused_with_holder_and_remaining_lease(kbr, monkeypatch):
    assert kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice").code == 0
    before = lock_refs(kbr)
    monkeypatch.setenv("KB_NOW", str(T0 + 60))
    r = kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "bob")
    assert r.code == 1
    assert "locked by alice" in r.stderr and "9m left" in r.stderr
    assert lock_refs(kbr) == before


def test_multi_path_claim_is_all_or_nothing(kbr):
    assert kb_(kbr, "lock", "claim", "Notes/b.md", "--owner", "alice").code == 0
    before = lock_refs(kbr)
    r = kb_(kbr, "lock", "claim", "Notes/a.md", "Notes/b.md", "--owner", "bob")
    assert r.code == 1 and "Notes/b.md is locked by alice" in r.stderr
    assert lock_refs(kbr) == before  # Notes/a.md not locked either
    r = kb_(kbr, "lock", "claim", "Notes/a.md", "Notes/c.md", "--owner", "bob", "--json")
    assert r.code == 0 and len(r.json()["locks"]) == 2


def test_claim_by_holder_extends_and_expired_lock_is_taken_over(kbr, monkeypatch):
    first = kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", "--json").json()["locks"][0]
    monkeypatch.setenv("KB_NOW", str(T0 + 100))
    again = kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", "--json").json()["locks"][0]
    assert again["how"] == "renewed" and again["expires_epoch"] == T0 + 700
    assert again["previous"]["commit"] == first["commit"]
    # expiry: lease ends at T0+700; free only after the 30 s grace margin
    monkeypatch.setenv("KB_NOW", str(T0 + 730))
    assert kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "bob").code == 1
    monkeypatch.setenv("KB_NOW", str(T0 + 731))
    r = kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "bob", "--json")
    assert r.code == 0, r.stderr
    lk = r.json()["locks"][0]
    assert lk["how"] == "expired" and lk["previous"]["owner"] == "alice"
    msg = git(kbr, "log", "-1", "--format=%B", lk["commit"])
    assert f"Kb-Lock-Previous: {again['commit']} (expired)" in msg


# -- release ------------------------------------------------------------------------------


def test_release_commits_only_locked_paths_with_trailer(kbr):
    c = kb_(kbr, "lock", "claim", "Notes/a.md", "Notes/new.md", "--owner", "alice", "--json").json()
    (kbr / "Notes/a.md").write_text("a\nedited\n")
    (kbr / "Notes/new.md").write_text("new\n")
    # the user's other work: a staged change and an unstaged change elsewhere
    (kbr / "Notes/b.md").write_text("b staged\n")
    git(kbr, "add", "Notes/b.md")
    (kbr / "Notes/c.md").write_text("c unstaged\n")
    head = git(kbr, "rev-parse", "HEAD")
    r = kb_(kbr, "lock", "release", "Notes/a.md", "Notes/new.md", "--owner", "alice",
            "-m", "edit a", "--json")
    assert r.code == 0, r.stderr
    res = r.json()
    assert res["commit"] == git(kbr, "rev-parse", "HEAD")
    assert git(kbr, "rev-parse", "HEAD~1") == head
    assert sorted(res["committed"]) == ["Notes/a.md", "Notes/new.md"]
    assert git(kbr, "diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD").splitlines() == \
        ["Notes/a.md", "Notes/new.md"]
    msg = git(kbr, "log", "-1", "--format=%B")
    assert msg.startswith("edit a\n")
    for lk in c["locks"]:
        assert f"Kb-Lock: {lk['commit']}" in msg
    assert lock_refs(kbr) == {}
    # the user's staged and unstaged work is untouched; the released paths are clean
    status = git(kbr, "status", "--porcelain").splitlines()
    assert sorted(status) == [" M Notes/c.md", "M  Notes/b.md"]
    assert git(kbr, "show", ":Notes/b.md") == "b staged"


def test_release_with_nothing_changed_only_deletes_the_ref(kbr):
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice")
    head = git(kbr, "rev-parse", "HEAD")
    r = kb_(kbr, "lock", "release", "Notes/a.md", "--owner", "alice", "--json")
    assert r.code == 0 and r.json()["commit"] is None
    assert git(kbr, "rev-parse", "HEAD") == head and lock_refs(kbr) == {}


def test_release_by_non_holder_or_of_unlocked_path_is_refused(kbr):
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice")
    (kbr / "Notes/a.md").write_text("bob was here\n")
    head, refs = git(kbr, "rev-parse", "HEAD"), lock_refs(kbr)
    r = kb_(kbr, "lock", "release", "Notes/a.md", "--owner", "bob")
    assert r.code == 1 and "locked by alice" in r.stderr and "not by bob" in r.stderr
    r = kb_(kbr, "lock", "release", "Notes/b.md", "--owner", "bob")
    assert r.code == 1 and "not locked" in r.stderr
    assert git(kbr, "rev-parse", "HEAD") == head and lock_refs(kbr) == refs


def test_release_all_and_file_deletion(kbr):
    kb_(kbr, "lock", "claim", "Notes/a.md", "Notes/b.md", "--owner", "alice")
    kb_(kbr, "lock", "claim", "Notes/c.md", "--owner", "bob")
    (kbr / "Notes/a.md").unlink()
    r = kb_(kbr, "lock", "release", "--all", "--owner", "alice", "--json")
    assert r.code == 0, r.stderr
    assert r.json()["committed"] == ["Notes/a.md"]
    assert git(kbr, "ls-tree", "--name-only", "HEAD", "Notes/").splitlines() == ["Notes/b.md", "Notes/c.md"]
    assert list(lock_refs(kbr)) == [ref_of("Notes/c.md")]
    assert git(kbr, "status", "--porcelain") == ""


def test_stolen_lock_cannot_get_an_edit_committed(kbr, monkeypatch):
    """The lock changes between building the commit and the ref transaction
    (a pre-commit hook steals it): the branch does not move."""
    lead_lock = kb_(kbr, "lock", "claim", "Notes/b.md", "--owner", "lead", "--json").json()["locks"][0]
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice")
    hook = kbr / ".git/hooks/pre-commit"
    hook.write_text(f"#!/bin/sh\ngit update-ref {ref_of('Notes/a.md')} {lead_lock['commit']}\n")
    hook.chmod(0o755)
    (kbr / "Notes/a.md").write_text("alice's edit\n")
    head = git(kbr, "rev-parse", "HEAD")
    r = kb_(kbr, "lock", "release", "Notes/a.md", "--owner", "alice")
    assert r.code == 1
    assert "taken over by lead" in r.stderr and "nothing was committed" in r.stderr
    assert git(kbr, "rev-parse", "HEAD") == head
    assert (kbr / "Notes/a.md").read_text() == "alice's edit\n"


def test_pre_commit_hook_sees_the_release_and_the_owner(kbr):
    hook = kbr / ".git/hooks/pre-commit"
    log = kbr.parent / "hook.log"
    hook.write_text(f"#!/bin/sh\necho \"$KB_OWNER $(git diff --cached --name-only)\" >> {log}\n"
                    "grep -q veto Notes/a.md && exit 1\nexit 0\n")
    hook.chmod(0o755)
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice")
    (kbr / "Notes/a.md").write_text("veto\n")
    head = git(kbr, "rev-parse", "HEAD")
    r = kb_(kbr, "lock", "release", "Notes/a.md", "--owner", "alice")
    assert r.code == 1 and "pre-commit hook refused" in r.stderr
    assert git(kbr, "rev-parse", "HEAD") == head and len(lock_refs(kbr)) == 1
    (kbr / "Notes/a.md").write_text("fine\n")
    assert kb_(kbr, "lock", "release", "Notes/a.md", "--owner", "alice").code == 0
    assert log.read_text().splitlines() == ["alice Notes/a.md", "alice Notes/a.md"]


def test_stale_index_lock_is_reported_and_kept(kbr):
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice")
    (kbr / "Notes/a.md").write_text("edit\n")
    (kbr / ".git/index.lock").write_bytes(b"")
    head, refs = git(kbr, "rev-parse", "HEAD"), lock_refs(kbr)
    r = kb_(kbr, "lock", "release", "Notes/a.md", "--owner", "alice")
    assert r.code == 1 and "index.lock" in r.stderr and "never deletes" in r.stderr
    assert (kbr / ".git/index.lock").exists()
    assert git(kbr, "rev-parse", "HEAD") == head and lock_refs(kbr) == refs
    (kbr / ".git/index.lock").unlink()
    assert kb_(kbr, "lock", "release", "Notes/a.md", "--owner", "alice").code == 0


def test_release_on_an_unborn_branch(make_kb, monkeypatch):
    root = make_kb({"Notes/a.md": "a\n"})
    assert kb_(root, "lock", "claim", "Notes/a.md", "--owner", "x").code == 0
    r = kb_(root, "lock", "release", "Notes/a.md", "--owner", "x", "--json")
    assert r.code == 0, r.stderr
    assert git(root, "ls-tree", "--name-only", "-r", "HEAD") == "Notes/a.md"


def test_default_owner_from_git_config(kbr, monkeypatch):
    monkeypatch.delenv("KB_OWNER", raising=False)
    r = kb_(kbr, "lock", "claim", "Notes/a.md", "--json")
    assert r.json()["owner"] == "kb-test@example.invalid"  # user.email
    git(kbr, "config", "kb.owner", "agent-7")
    r = kb_(kbr, "lock", "claim", "Notes/b.md", "--json")
    assert r.json()["owner"] == "agent-7"
    # KB_OWNER comes before git config (what kb passes its own hooks, and the README says)
    monkeypatch.setenv("KB_OWNER", "agent-9")
    r = kb_(kbr, "lock", "claim", "Notes/c.md", "--json")
    assert r.json()["owner"] == "agent-9"
    r = kb_(kbr, "lock", "release", "Notes/c.md", "--json")
    assert r.code == 0, r.stdout


# -- status, renew, steal, prune, project ----------------------------------------------------


def test_status_explains_each_lock(kbr, monkeypatch):
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice")
    kb_(kbr, "lock", "claim", "Notes/b.md", "--owner", "bob", "--ttl", "1m")
    (kbr / "Notes/a.md").write_text("work in progress\n")
    monkeypatch.setenv("KB_NOW", str(T0 + 120))
    r = kb_(kbr, "lock", "status", "--json")
    data = r.json()
    by = {x["path"]: x for x in data["locks"]}
    assert by["Notes/a.md"]["owner"] == "alice" and by["Notes/a.md"]["expired"] is False
    assert by["Notes/a.md"]["modified_since_claim"] is True
    assert by["Notes/b.md"]["expired"] is True and by["Notes/b.md"]["remaining"] == -60
    text = kb_(kbr, "lock", "status").stdout
    assert "Notes/a.md\talice\tuntil" in text and "EXPIRED 1m ago" in text
    assert "uncommitted edits" in text


def test_renew_rules(kbr, monkeypatch):
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice")
    assert kb_(kbr, "lock", "renew", "Notes/a.md", "--owner", "bob").code == 1
    assert kb_(kbr, "lock", "renew", "Notes/b.md", "--owner", "alice").code == 1
    monkeypatch.setenv("KB_NOW", str(T0 + 500))
    r = kb_(kbr, "lock", "renew", "Notes/a.md", "--owner", "alice", "--ttl", "1h", "--json")
    assert r.code == 0 and r.json()["locks"][0]["expires_epoch"] == T0 + 500 + 3600


def test_steal_rules(kbr, monkeypatch):
    kb_(kbr, "lock", "claim", "Notes/a.md", "Notes/b.md", "--owner", "alice")
    refs = lock_refs(kbr)
    r = kb_(kbr, "lock", "steal", "Notes/a.md", "--owner", "bob", "--reason", "stuck")
    assert r.code == 1 and "locked by alice" in r.stderr and "leads" in r.stderr
    assert lock_refs(kbr) == refs
    assert kb_(kbr, "lock", "steal", "Notes/a.md", "--owner", "bob").code == 2  # --reason required
    r = kb_(kbr, "lock", "steal", "Notes/a.md", "--owner", "lead", "--reason", "agent hung", "--json")
    assert r.code == 0, r.stderr
    lk = r.json()["locks"][0]
    assert lk["how"] == "stolen" and lk["previous"]["owner"] == "alice"
    assert "Kb-Lock-Reason: agent hung" in git(kbr, "log", "-1", "--format=%B", lk["commit"])
    monkeypatch.setenv("KB_NOW", str(T0 + 631))  # past alice's lease + grace
    r = kb_(kbr, "lock", "steal", "Notes/b.md", "--owner", "bob", "--reason", "expired", "--json")
    assert r.code == 0 and r.json()["locks"][0]["how"] == "stolen"


def test_prune_deletes_only_expired_locks(kbr, monkeypatch):
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", "--ttl", "1m")
    kb_(kbr, "lock", "claim", "Notes/b.md", "--owner", "bob", "--ttl", "1h")
    monkeypatch.setenv("KB_NOW", str(T0 + 60 + 31))
    r = kb_(kbr, "lock", "prune", "--json")
    assert r.code == 0 and [x["path"] for x in r.json()["pruned"]] == ["Notes/a.md"]
    assert list(lock_refs(kbr)) == [ref_of("Notes/b.md")]


def test_project_lock(kbr, monkeypatch):
    r = kb_(kbr, "project", "lock", "--owner", "s1", "--ttl", "60s", "--json")
    assert r.code == 0 and r.json()["locks"][0]["ref"] == "refs/kb/project-lock"
    msg = git(kbr, "log", "-1", "--format=%B", "refs/kb/project-lock")
    assert "Kb-Lock-Scope: project" in msg and "Kb-Lock-Owner: s1" in msg
    r = kb_(kbr, "project", "lock", "--owner", "s2")
    assert r.code == 1 and "project lock is locked by s1" in r.stderr
    monkeypatch.setenv("KB_NOW", str(T0 + 30))
    r = kb_(kbr, "project", "lock", "--owner", "s1", "--json")  # the holder renews
    assert r.json()["locks"][0]["how"] == "renewed"
    assert kb_(kbr, "project", "unlock", "--owner", "s2").code == 1
    r = kb_(kbr, "project", "lock", "--owner", "s2", "--steal", "override")
    assert r.code == 1  # s2 is not a lead and the lease is live
    r = kb_(kbr, "project", "lock", "--owner", "lead", "--steal", "override", "--json")
    assert r.code == 0 and r.json()["locks"][0]["how"] == "stolen"
    status = kb_(kbr, "lock", "status", "--json").json()
    assert status["project"]["owner"] == "lead" and status["locks"] == []
    assert kb_(kbr, "project", "unlock", "--owner", "lead").code == 0
    assert lock_refs(kbr) == {}
    assert kb_(kbr, "project", "unlock", "--owner", "lead").code == 1


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    ["lock", "claim", "../outside.md", "--owner", "a"],
    ["lock", "claim", "/etc/passwd", "--owner", "a"],
    ["lock", "claim", "Notes/../Notes/a.md", "--owner", "a"],
    ["lock", "claim", "Notes", "--owner", "a"],
    ["lock", "claim", "Notes/a.md", "--owner", "al\nice"],
    ["lock", "claim", "Notes/a.md", "--owner", "al\tice"],
    ["lock", "claim", "Notes/a.md", "--owner", ""],
    ["lock", "claim", "Notes/a.md", "--owner", "a", "--ttl", "soon"],
    ["lock", "claim", "Notes/a.md", "--owner", "a", "--ttl", "30"],
    ["lock", "claim", "Notes/a.md", "--owner", "a", "--ttl", "0s"],
    ["lock", "claim", "Notes/a.md", "--owner", "a", "--remote", "nope"],
    ["lock", "release", "Notes/a.md", "--owner", "a", "--remote", "nope"],
    ["lock", "release", "../x.md", "--owner", "a"],
    ["lock", "release", "--owner", "a"],
    ["lock", "status", "--remote", "nope"],
    ["lock", "steal", "Notes/a.md", "--owner", "b", "--reason", "multi\nline"],
    ["lock", "steal", "Notes/a.md", "--owner", "b", "--reason", "x" * 4_001],
    ["project", "lock", "--owner", "b", "--steal", "y" * 4_001],
    ["lock", "renew", "Notes/a.md", "--owner", "a", "--ttl", "1x"],
    ["project", "lock", "--owner", "a", "--ttl", "forever"],
    ["project", "lock", "--owner", "a", "--remote", "nope"],
])
def test_bad_input_is_one_line_and_changes_nothing(kbr, args):
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "a")  # something to (not) change
    before = tree_snapshot(kbr.parent)
    r = kb_(kbr, *args)
    assert r.code in (1, 2), (r.code, r.stderr)
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert tree_snapshot(kbr.parent) == before


def test_kb_option_and_paths_relative_to_cwd(kbr):
    sub = kbr / "Notes"
    r = kb_(sub, "lock", "claim", "a.md", "--owner", "x", "--json")
    assert r.code == 0 and r.json()["locks"][0]["path"] == "Notes/a.md"


def test_kb_in_a_subfolder_locks_repository_paths(make_kb, tmp_path):
    root = make_kb({"Notes/a.md": "a\n"}, subdir="research", commit=True)
    r = kb_(root, "lock", "claim", "Notes/a.md", "--owner", "x", "--json")
    assert r.json()["locks"][0]["path"] == "research/Notes/a.md"
    r = kb_(root, "lock", "claim", str(root.parent / "outside.md"), "--owner", "x")
    assert r.code == 2 and "outside the knowledge base" in r.stderr


# -- the write transaction refuses a path locked by someone else ------------------------------


def test_transaction_refuses_path_locked_by_another_owner(kbr):
    from kb.errors import RefusedError
    from kb.locks import LockHeld
    from kb.ops.transaction import Transaction
    from kb.repo import open_kb

    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice")
    k = open_kb(kbr)
    head = git(kbr, "rev-parse", "HEAD")
    with pytest.raises(LockHeld) as exc:
        with Transaction(k, "test.edit", owner="bob") as tx:
            tx.write("Notes/a.md", b"bob's edit\n")
    assert "locked by alice" in str(exc.value) and isinstance(exc.value, RefusedError)
    assert (kbr / "Notes/a.md").read_text() == "a\n" and git(kbr, "rev-parse", "HEAD") == head
    # default owner (user.email) is not alice either
    with pytest.raises(LockHeld):
        with Transaction(k, "test.edit") as tx:
            tx.write("Notes/a.md", b"x\n")
    # the holder writes; an unlocked path is free for anyone
    with Transaction(k, "test.edit", owner="alice") as tx:
        tx.write("Notes/a.md", b"alice's edit\n")
    assert tx.result.commit == git(kbr, "rev-parse", "HEAD")
    with Transaction(k, "test.edit", owner="bob") as tx:
        tx.write("Notes/b.md", b"bob's edit\n")
    git(kbr, "config", "kb.owner", "alice")
    with Transaction(k, "test.edit") as tx:
        tx.write("Notes/a.md", b"alice again\n")
    assert tx.result.commit is not None


# -- the pre-commit hook (kb verify --staged, rule KB380) ------------------------------------


def test_hook_refuses_a_commit_to_a_path_locked_by_another_owner(kbr, monkeypatch):
    import subprocess

    assert invoke("hooks", "install", cwd=kbr).code == 0
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice")
    git(kbr, "config", "kb.owner", "bob")
    (kbr / "Notes/a.md").write_text("bob's edit\n")
    (kbr / "Notes/b.md").write_text("bob's other edit\n")
    head = git(kbr, "rev-parse", "HEAD")

    def commit(*paths: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "commit", "-q", "-m", "edit", "--", *paths], cwd=kbr,
                              capture_output=True, text=True, env={**os.environ, **env})

    p = commit("Notes/a.md")
    assert p.returncode != 0
    assert "KB380" in p.stdout + p.stderr and "locked by alice" in p.stdout + p.stderr
    assert git(kbr, "rev-parse", "HEAD") == head
    assert commit("Notes/b.md").returncode == 0            # an unlocked path commits
    r = invoke("verify", "--staged", cwd=kbr)
    assert r.code == 0
    # the holder, named through KB_OWNER (what kb's own commands pass), is not refused
    git(kbr, "add", "Notes/a.md")
    monkeypatch.setenv("KB_OWNER", "bob")
    assert invoke("verify", "--staged", cwd=kbr).code == 1
    monkeypatch.setenv("KB_OWNER", "alice")
    assert invoke("verify", "--staged", cwd=kbr).code == 0
    monkeypatch.delenv("KB_OWNER")
    git(kbr, "reset", "-q", "--", "Notes/a.md")
    # kb's release runs the same hook as alice and passes
    r = kb_(kbr, "lock", "release", "Notes/a.md", "--owner", "alice")
    assert r.code == 0, r.stderr
    assert git(kbr, "show", "HEAD:Notes/a.md") == "bob's edit"
    # an expired lock refuses nothing
    kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", "--ttl", "1m")
    (kbr / "Notes/a.md").write_text("later\n")
    assert commit("Notes/a.md", KB_NOW=str(T0 + 91)).returncode == 0


def test_write_command_of_another_issue_refuses_a_locked_target(make_kb, monkeypatch):
    """`kb hyp add` (a Transaction) refuses with the holder's name; the holder writes."""
    root = make_kb({"tree.md": "# Hypothesis Tree\n"}, commit=True)
    kb_(root, "lock", "claim", "tree.md", "--owner", "alice")
    head = git(root, "rev-parse", "HEAD")
    r = kb_(root, "hyp", "add", "Data loading is slow", "--owner", "bob")
    assert r.code == 1 and "tree.md is locked by alice" in r.stderr
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""
    r = kb_(root, "hyp", "add", "Data loading is slow", "--owner", "alice")
    assert r.code == 0, r.stderr
    st = kb_(root, "lock", "status", "--json").json()["locks"][0]
    assert st["modified_since_claim"] is True and st["notes"] == []   # committed, not pending


def test_release_of_the_tree_carries_the_refreshed_dashboard(tree_kb):
    """kb hyp add --no-commit under a lock on tree.md, then kb lock release tree.md:
    the release commit holds DASHBOARD.md too, so HEAD verifies clean (no stale KB240)."""
    root = tree_kb

    def run(*args: str):
        return invoke(*args, cwd=root)
    assert run("lock", "claim", "tree.md", "--owner", "agent-7").code == 0
    assert run("hyp", "add", "Released with its dashboard", "--owner", "agent-7",
               "--no-commit").code == 0
    r = run("lock", "release", "tree.md", "--owner", "agent-7", "-m", "add H2")
    assert r.code == 0, r.stderr
    files = git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert sorted(files) == ["DASHBOARD.md", "tree.md"]
    assert git(root, "status", "--porcelain") == ""
    v = run("verify", "--rev", "HEAD")
    assert v.code == 0 and "KB240" not in v.stdout + v.stderr


def test_release_of_an_unchanged_tree_commits_nothing_not_even_a_stale_dashboard(tree_kb):
    """The committed DASHBOARD.md is stale (a merge made without kb's drivers left it so);
    releasing an unchanged tree.md only deletes the lock (DESIGN §5): no commit of the
    dashboard alone, and the working tree's dashboard is left as it was."""
    root = tree_kb
    assert kb_(root, "hyp", "add", "First idea").code == 0
    dash = root / "DASHBOARD.md"
    dash.write_text(dash.read_text(encoding="utf-8").replace("- H1: First idea", "- H1: Stale"),
                    encoding="utf-8")
    git(root, "commit", "-qam", "a stale dashboard", "--no-verify")
    stale, head = dash.read_bytes(), git(root, "rev-parse", "HEAD")
    assert kb_(root, "lock", "claim", "tree.md", "--owner", "alice").code == 0
    r = kb_(root, "lock", "release", "tree.md", "--owner", "alice", "--json")
    assert r.code == 0, r.stdout + r.stderr
    assert r.json()["committed"] == [] and r.json()["commit"] is None, r.stdout
    assert git(root, "rev-parse", "HEAD") == head and dash.read_bytes() == stale
    assert git(root, "for-each-ref", "refs/kb/locks") == ""


def test_release_of_the_tree_commits_a_fresh_dashboard(tree_kb):
    """A hand edit of tree.md released under its lock: the commit carries the
    dashboard kb renders for it (as every kb write does), `released` names only the
    locked file, and a refused release leaves DASHBOARD.md as it was."""
    root = tree_kb
    assert kb_(root, "hyp", "add", "First idea").code == 0
    assert kb_(root, "lock", "claim", "tree.md", "--owner", "alice").code == 0
    dash = (root / "DASHBOARD.md").read_bytes()
    text = (root / "tree.md").read_text(encoding="utf-8")
    # a duplicate ID: the format guard refuses, nothing changes
    (root / "tree.md").write_text(text + "\n## H1: Again\nStatus: 待验\nEvidence: (empty)\n",
                                  encoding="utf-8")
    head = git(root, "rev-parse", "HEAD")
    r = kb_(root, "lock", "release", "tree.md", "--owner", "alice", "--json")
    assert r.code == 1 and git(root, "rev-parse", "HEAD") == head, r.stdout
    assert (root / "DASHBOARD.md").read_bytes() == dash
    (root / "tree.md").write_text(text + "\n## H2: By hand\nStatus: 待验\nEvidence: (empty)\n",
                                  encoding="utf-8")
    r = kb_(root, "lock", "release", "tree.md", "--owner", "alice", "--json")
    assert r.code == 0, r.stdout + r.stderr
    data = r.json()
    assert data["released"] == ["tree.md"] and sorted(data["committed"]) == ["DASHBOARD.md", "tree.md"]
    assert "H2" in git(root, "show", "HEAD:DASHBOARD.md")
    v = kb_(root, "verify", "--json")
    assert v.code == 0 and not [d for d in v.json()["diagnostics"] if d["code"] == "KB240"]
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""

# -- signing (issue 11: kb commits are signed whenever git would sign them) ----------------

# A stand-in for gpg: records the key it was asked for, reads the payload, reports a
# signature on the status fd and prints a fixed one (deterministic).
SIGNER = """#!/bin/sh
for a in "$@"; do last="$a"; done
printf '%s\\n' "$last" >> "$0.keys"
cat >/dev/null
printf '\\n[GNUPG:] KEY_CONSIDERED K 0\\n[GNUPG:] BEGIN_SIGNING\\n[GNUPG:] SIG_CREATED D 1 8 00 1 K\\n' >&2
printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nZmFrZQ==\\n-----END PGP SIGNATURE-----\\n'
"""


def _signer(root: Path, tmp_path: Path, body: str) -> Path:
    prog = tmp_path / "signer"
    prog.write_text(body)
    prog.chmod(0o755)
    git(root, "config", "gpg.program", str(prog))
    git(root, "config", "commit.gpgSign", "true")
    return prog


def test_lock_commits_are_signed_when_git_would_sign(kbr, tmp_path):
    """commit.gpgSign=true: the lock record carries a signature, made with the user's own
    identity as the key (the lock commit's author is the owner, not a key holder)."""
    prog = _signer(kbr, tmp_path, SIGNER)
    r = kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", "--json")
    assert r.code == 0, r.stderr
    commit = r.json()["locks"][0]["commit"]
    raw = git(kbr, "cat-file", "commit", commit)
    assert "\ngpgsig -----BEGIN PGP SIGNATURE-----" in raw
    assert "Kb-Lock-Owner: alice" in raw
    me = git(kbr, "var", "GIT_COMMITTER_IDENT").rsplit(">", 1)[0] + ">"
    assert (tmp_path / "signer.keys").read_text().splitlines() == [me]
    # a configured user.signingKey is git's choice, and so kb's
    git(kbr, "config", "user.signingKey", "ABCDEF0123456789")
    assert kb_(kbr, "lock", "claim", "Notes/b.md", "--owner", "alice").code == 0
    assert (tmp_path / "signer.keys").read_text().splitlines()[-1] == "ABCDEF0123456789"
    assert "gpgsig " in git(kbr, "cat-file", "commit", lock_refs(kbr)[ref_of("Notes/b.md")])
    assert prog.exists()


def test_lock_claim_refused_with_gits_reason_when_signing_fails(kbr, tmp_path):
    _signer(kbr, tmp_path, "#!/bin/sh\ncat >/dev/null\necho 'gpg: no secret key' >&2\nexit 2\n")
    r = kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice")
    assert r.code == 1 and "sign" in r.stderr.lower() and "nothing was written" in r.stderr, r.stderr
    assert lock_refs(kbr) == {}


def test_lock_commits_unsigned_without_gpgsign(kbr, tmp_path):
    prog = _signer(kbr, tmp_path, SIGNER)
    git(kbr, "config", "commit.gpgSign", "false")
    r = kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", "--json")
    assert r.code == 0, r.stderr
    assert "gpgsig" not in git(kbr, "cat-file", "commit", r.json()["locks"][0]["commit"])
    assert not (prog.parent / "signer.keys").exists()


@pytest.mark.skipif(not __import__("shutil").which("ssh-keygen"), reason="needs ssh-keygen")
def test_lock_commits_signed_with_ssh_verify(kbr, tmp_path):
    """gpg.format=ssh with a real key: the lock record's signature verifies with git."""
    import subprocess

    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kb-test", "-f", str(key)],
                   check=True, capture_output=True, timeout=60)
    allowed = tmp_path / "allowed"
    allowed.write_text("kb-lock " + (tmp_path / "key.pub").read_text())
    git(kbr, "config", "gpg.format", "ssh")
    git(kbr, "config", "user.signingKey", str(key))
    git(kbr, "config", "gpg.ssh.allowedSignersFile", str(allowed))
    git(kbr, "config", "commit.gpgSign", "true")
    r = kb_(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", "--json")
    assert r.code == 0, r.stderr
    commit = r.json()["locks"][0]["commit"]
    assert "gpgsig -----BEGIN SSH SIGNATURE-----" in git(kbr, "cat-file", "commit", commit)
    proc = subprocess.run(["git", "verify-commit", commit], cwd=kbr, capture_output=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()


def test_kb_owner_is_who_kb_writes_as_through_its_own_hook(tree_kb, monkeypatch):
    """KB_OWNER=alice holds tree.md; `kb hyp add` with no --owner passes the lock check
    and its pre-commit hook judges the commit as alice too (the hook was told "")."""
    root = tree_kb
    assert kb_(root, "hooks", "install").code == 0
    monkeypatch.setenv("KB_OWNER", "alice")
    assert kb_(root, "lock", "claim", "tree.md").code == 0
    r = kb_(root, "hyp", "add", "Alice's idea", "--json")
    assert r.code == 0, r.stdout + r.stderr
    assert "Alice's idea" in git(root, "show", "HEAD:tree.md")
    monkeypatch.setenv("KB_OWNER", "bob")
    r = kb_(root, "hyp", "add", "Bob's idea", "--json")
    assert r.code == 1 and r.json()["error"]["kind"] == "locked", r.stdout


def test_release_of_the_tree_and_the_dashboard_renders_the_dashboard(tree_kb):
    """Both claimed explicitly: the hand-edited tree is released with the dashboard
    kb renders for it, not the stale one on disk."""
    root = tree_kb
    assert kb_(root, "hyp", "add", "First idea").code == 0
    assert kb_(root, "lock", "claim", "tree.md", "DASHBOARD.md", "--owner", "alice").code == 0
    text = (root / "tree.md").read_text(encoding="utf-8")
    (root / "tree.md").write_text(text + "\n## H2: By hand\nStatus: 待验\nEvidence: (empty)\n",
                                  encoding="utf-8")
    r = kb_(root, "lock", "release", "tree.md", "DASHBOARD.md", "--owner", "alice", "--json")
    assert r.code == 0, r.stdout + r.stderr
    data = r.json()
    assert sorted(data["released"]) == ["DASHBOARD.md", "tree.md"]
    assert sorted(data["committed"]) == ["DASHBOARD.md", "tree.md"]
    assert kb_(root, "dashboard", "--check").code == 0


@pytest.mark.parametrize("path", ["Notes/a.md ", "NOTES/A.md", " Notes/a.md", "Notes/a.md\u200b"])
def test_a_claim_of_a_tracked_files_path_misspelt_is_refused(kbr, path):
    """``"Notes/a.md "`` or ``NOTES/A.md`` locked nothing anyone writes, while its owner
    believed the file locked; a path of no file (a card about to be written) is locked."""
    before = lock_refs(kbr)
    r = kb_(kbr, "lock", "claim", path, "--owner", "alice")
    assert r.code == 2 and "did you mean 'Notes/a.md'?" in r.stderr, r.stderr
    assert lock_refs(kbr) == before
    r = kb_(kbr, "lock", "claim", "Notes/new.md", "--owner", "alice")
    assert r.code == 0 and ref_of("Notes/new.md") in lock_refs(kbr), r.stderr
