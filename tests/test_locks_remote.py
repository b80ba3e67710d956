"""Locks on a shared remote (issue 6): a bare repository is the only
coordinator. Claim = push with ``--force-with-lease=<ref>:`` (create only if
absent); release = one ``git push --atomic`` of the branch and the ref
deletion with a lease on the lock's value; status ``--remote`` fetches fresh
with pruning.

The distributed race: 4 clones race for the same file each round
(``KB_LOCK_DIST_ROUNDS`` rounds, default 4): exactly one wins, the others are
told the winner's name; then every clone edits its own file and the winner
the shared one, and all release concurrently, pulling (rebase) when the
remote branch moved. After a final pull every clone has every edit.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, invoke, kb_script

ROUNDS = int(os.environ.get("KB_LOCK_DIST_ROUNDS", "4"))


def ref_of(path: str) -> str:
    return "refs/kb/locks/" + hashlib.sha1(path.encode()).hexdigest()


def remote_refs(bare: Path) -> str:
    return git(bare, "for-each-ref", "--format=%(refname) %(objectname)", "refs/kb")


@pytest.fixture
def cluster(make_kb, tmp_path):
    """A KB pushed to a bare remote and ``clones(n)`` making clones of it."""
    files = {"shared.md": "", "Notes/a.md": "a\n", "kb.toml": "[kb]\n\n[locks]\nleads = [\"lead\"]\n"}
    files |= {f"own{i}.md": "" for i in range(4)}
    origin = make_kb(files, commit=True)
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(origin), str(bare))

    def clones(n: int) -> list[Path]:
        out = []
        for i in range(n):
            c = tmp_path / f"clone{i}"
            git(tmp_path, "clone", "-q", str(bare), str(c))
            out.append(c)
        return out

    return bare, clones


def test_remote_claim_release_and_pull(cluster):
    bare, clones = cluster
    a, b = clones(2)
    r = invoke("lock", "claim", "Notes/a.md", "--owner", "alice", "--remote", "origin", "--json", cwd=a)
    assert r.code == 0, r.stderr
    lock = r.json()["locks"][0]["commit"]
    assert remote_refs(bare) == f"{ref_of('Notes/a.md')} {lock}"
    # the local copy, in the remote's namespace: never among this clone's own locks
    copy = ref_of("Notes/a.md").replace("refs/kb/", "refs/kb/remote-locks/origin/")
    assert git(a, "rev-parse", copy) == lock and git(a, "for-each-ref", "refs/kb/locks") == ""
    r = invoke("lock", "claim", "Notes/a.md", "--owner", "bob", "--remote", "origin", cwd=b)
    assert r.code == 1 and "locked by alice" in r.stderr
    assert remote_refs(bare) == f"{ref_of('Notes/a.md')} {lock}"

    (a / "Notes/a.md").write_text("a\nalice\n")
    main_before = git(bare, "rev-parse", "main")
    r = invoke("lock", "release", "Notes/a.md", "--owner", "alice", "--remote", "origin", "--json", cwd=a)
    assert r.code == 0, r.stderr
    commit = r.json()["commit"]
    assert git(bare, "rev-parse", "main") == commit and git(bare, "rev-parse", "main~1") == main_before
    assert f"Kb-Lock: {lock}" in git(bare, "log", "-1", "--format=%B", "main")
    assert remote_refs(bare) == ""
    assert git(a, "rev-parse", "HEAD") == commit and git(a, "status", "--porcelain") == ""
    assert git(a, "for-each-ref", "refs/kb") == ""

    # bob wins now, and is told to pull before editing
    r = invoke("lock", "claim", "Notes/a.md", "--owner", "bob", "--remote", "origin", cwd=b)
    assert r.code == 0 and "pull before editing" in r.stderr
    (b / "Notes/a.md").write_text("a\nbob without pulling\n")
    r = invoke("lock", "release", "Notes/a.md", "--owner", "bob", "--remote", "origin", cwd=b)
    assert r.code == 1 and "git pull --rebase" in r.stderr
    assert git(bare, "rev-parse", "main") == commit and remote_refs(bare) != ""
    git(b, "checkout", "--", "Notes/a.md")
    git(b, "pull", "-q", "--ff-only", "origin", "main")
    (b / "Notes/a.md").write_text("a\nalice\nbob\n")
    r = invoke("lock", "release", "Notes/a.md", "--owner", "bob", "--remote", "origin", cwd=b)
    assert r.code == 0, r.stderr
    assert git(bare, "show", "main:Notes/a.md") == "a\nalice\nbob" and remote_refs(bare) == ""


def test_release_pushes_the_holders_own_commit_of_the_locked_file(cluster):
    """The holder committed the change with plain git: the release still publishes
    it with the lock's deletion (one atomic push), so the next holder edits the new
    version (it used to delete the lock and leave the change unpushed)."""
    bare, clones = cluster
    (a,) = clones(1)
    assert invoke("lock", "claim", "Notes/a.md", "--owner", "alice", "--remote", "origin", cwd=a).code == 0
    (a / "Notes/a.md").write_text("a\nalice by hand\n")
    git(a, "commit", "-q", "--no-verify", "-am", "by hand")
    head = git(a, "rev-parse", "HEAD")
    r = invoke("lock", "release", "Notes/a.md", "--owner", "alice", "--remote", "origin", "--json", cwd=a)
    assert r.code == 0, r.stdout + r.stderr
    assert git(bare, "rev-parse", "main") == head and remote_refs(bare) == ""
    assert git(a, "rev-parse", "refs/remotes/origin/main") == head


def test_release_of_a_committed_change_behind_the_remote_says_pull_first(cluster):
    """The holder's change is committed already (by hand, or by a kb write) and the
    remote's branch moved on meanwhile: the release says to pull first (it said "the
    branch kept moving … try again" after 8 tries, and trying again never helps)."""
    bare, clones = cluster
    a, b = clones(2)
    assert invoke("lock", "claim", "Notes/a.md", "--owner", "alice", "--remote", "origin", cwd=a).code == 0
    (a / "Notes/a.md").write_text("a\nalice by hand\n")
    git(a, "commit", "-q", "--no-verify", "-am", "by hand")
    (b / "shared.md").write_text("bob\n")
    git(b, "commit", "-q", "--no-verify", "-am", "bob's other work")
    git(b, "push", "-q", "origin", "main")
    main = git(bare, "rev-parse", "main")
    r = invoke("lock", "release", "Notes/a.md", "--owner", "alice", "--remote", "origin", cwd=a)
    assert r.code == 1 and "pull them first" in r.stderr and "kept moving" not in r.stderr, r.stderr
    assert git(bare, "rev-parse", "main") == main and remote_refs(bare) != ""  # locks kept
    git(a, "pull", "-q", "--rebase", "origin", "main")
    r = invoke("lock", "release", "Notes/a.md", "--owner", "alice", "--remote", "origin", cwd=a)
    assert r.code == 0, r.stderr
    assert remote_refs(bare) == "" and "alice by hand" in git(bare, "show", "main:Notes/a.md")


def test_lock_stolen_on_the_remote_during_release_pushes_nothing(cluster):
    """The lease on the lock's value makes the atomic push refuse the branch too."""
    bare, clones = cluster
    a, b = clones(2)
    lead = invoke("lock", "claim", "own0.md", "--owner", "lead", "--remote", "origin", "--json", cwd=b)
    lead_commit = lead.json()["locks"][0]["commit"]
    assert invoke("lock", "claim", "Notes/a.md", "--owner", "alice", "--remote", "origin", cwd=a).code == 0
    git(a, "fetch", "-q", "origin", f"{ref_of('own0.md')}")
    hook = a / ".git/hooks/pre-commit"   # runs between the sync and the push
    hook.write_text(f"#!/bin/sh\ngit push -q --force origin {lead_commit}:{ref_of('Notes/a.md')}\n")
    hook.chmod(0o755)
    (a / "Notes/a.md").write_text("alice's edit\n")
    main = git(bare, "rev-parse", "main")
    r = invoke("lock", "release", "Notes/a.md", "--owner", "alice", "--remote", "origin", cwd=a)
    assert r.code == 1 and "taken over by lead" in r.stderr and "nothing was committed" in r.stderr
    assert git(bare, "rev-parse", "main") == main
    assert git(bare, "rev-parse", ref_of("Notes/a.md")) == lead_commit
    assert git(a, "rev-parse", "HEAD") == main


def test_status_remote_fetches_fresh_with_pruning(cluster):
    bare, clones = cluster
    a, b, c = clones(3)
    for who, clone, path in (("alice", a, "own0.md"), ("bob", b, "own1.md")):
        assert invoke("lock", "claim", path, "--owner", who, "--remote", "origin", cwd=clone).code == 0
    st = invoke("lock", "status", "--remote", "origin", "--json", cwd=c).json()
    assert sorted((x["path"], x["owner"]) for x in st["locks"]) == [("own0.md", "alice"), ("own1.md", "bob")]
    assert invoke("lock", "release", "own0.md", "--owner", "alice", "--remote", "origin", cwd=a).code == 0
    assert len(git(c, "for-each-ref", "refs/kb").splitlines()) == 2   # stale mirror ...
    st = invoke("lock", "status", "--remote", "origin", "--json", cwd=c).json()
    assert [(x["path"], x["owner"]) for x in st["locks"]] == [("own1.md", "bob")]
    assert len(git(c, "for-each-ref", "refs/kb").splitlines()) == 1   # ... pruned


def test_remote_renew_steal_prune_and_project_lock(cluster, monkeypatch):
    bare, clones = cluster
    a, b = clones(2)
    t0 = 1_800_000_000
    monkeypatch.setenv("KB_NOW", str(t0))
    assert invoke("lock", "claim", "own0.md", "own1.md", "--owner", "alice", "--ttl", "1m",
                  "--remote", "origin", cwd=a).code == 0
    r = invoke("lock", "renew", "own0.md", "--owner", "alice", "--ttl", "1h", "--remote", "origin",
               "--json", cwd=a)
    assert r.code == 0 and r.json()["locks"][0]["expires_epoch"] == t0 + 3600
    assert invoke("lock", "renew", "own0.md", "--owner", "bob", "--remote", "origin", cwd=b).code == 1
    r = invoke("lock", "steal", "own0.md", "--owner", "bob", "--reason", "x", "--remote", "origin", cwd=b)
    assert r.code == 1
    monkeypatch.setenv("KB_NOW", str(t0 + 200))   # own1.md expired (1m + 30s grace)
    r = invoke("lock", "prune", "--remote", "origin", "--json", cwd=b)
    assert [x["path"] for x in r.json()["pruned"]] == ["own1.md"]
    assert remote_refs(bare).splitlines()[0].startswith(ref_of("own0.md"))
    assert len(remote_refs(bare).splitlines()) == 1
    r = invoke("lock", "steal", "own0.md", "--owner", "lead", "--reason", "reassigned",
               "--remote", "origin", "--json", cwd=b)
    assert r.code == 0 and r.json()["locks"][0]["previous"]["owner"] == "alice"
    # the project lease on the remote
    assert invoke("project", "lock", "--owner", "s1", "--remote", "origin", cwd=a).code == 0
    r = invoke("project", "lock", "--owner", "s2", "--remote", "origin", cwd=b)
    assert r.code == 1 and "s1" in r.stderr
    assert "refs/kb/project-lock" in remote_refs(bare)
    assert invoke("project", "unlock", "--owner", "s1", "--remote", "origin", cwd=a).code == 0
    assert "refs/kb/project-lock" not in remote_refs(bare)
    assert invoke("project", "lock", "--owner", "s2", "--remote", "origin", cwd=b).code == 0


# -- the distributed race ---------------------------------------------------------------------

EDITOR = r"""
import subprocess, sys
from pathlib import Path
from kb.errors import RefusedError
from kb.repo import open_kb
from kb.ops.lock_claim import claim
from kb.ops.lock_release import release

root, owner, rnd, own, winner = Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1"
kb = open_kb(root)

def pull():
    subprocess.run(["git", "pull", "-q", "--rebase", "--autostash", "origin", "main"], cwd=root,
                   check=True, capture_output=True)

def append(path, line):
    f = root / path
    f.write_text(f.read_text() + line + "\n")

claim(kb, [own], owner=owner, remote="origin", cwd=root)
pull()   # the lock holders fetch the last edits before editing
paths = [own]
append(own, f"{owner} round {rnd}")
if winner:
    append("shared.md", f"round {rnd} by {owner}")
    paths.append("shared.md")
for attempt in range(40):
    try:
        release(kb, paths, owner=owner, remote="origin", message=f"{owner} round {rnd}", cwd=root)
        break
    except RefusedError as exc:
        if "pull them first" not in str(exc):
            raise
        pull()
else:
    sys.exit("never released")
print(attempt)
"""


@pytest.mark.slow
def test_four_clones_race_through_a_bare_remote(cluster, capsys):
    bare, clones = cluster
    cs = clones(4)
    owners = [f"c{i}" for i in range(4)]
    env = dict(os.environ)
    env.pop("KB_NOW", None)
    script = kb_script()
    winners = []
    retries = 0
    for rnd in range(ROUNDS):
        procs = [subprocess.Popen([script, "lock", "claim", "shared.md", "--owner", o, "--remote",
                                   "origin", "--ttl", "5m"], cwd=c, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for c, o in zip(cs, owners)]
        results = [(p.wait(timeout=120), p.stderr.read().decode()) for p in procs]
        won = [i for i, (code, _) in enumerate(results) if code == 0]
        assert len(won) == 1, results                        # exactly one wins
        w = won[0]
        winners.append(owners[w])
        for i, (code, err) in enumerate(results):
            if i != w:
                assert code == 1 and f"locked by {owners[w]}" in err, err   # the holder's name
        editors = [subprocess.Popen([sys.executable, "-c", EDITOR, str(c), o, str(rnd), f"own{i}.md",
                                     "1" if i == w else "0"], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                   for i, (c, o) in enumerate(zip(cs, owners))]
        for p in editors:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err.decode()
            retries += int(out)
        assert remote_refs(bare) == ""

    heads = set()
    for c in cs:
        git(c, "pull", "-q", "--ff-only", "origin", "main")
        assert git(c, "status", "--porcelain") == ""
        heads.add(git(c, "rev-parse", "HEAD"))
        assert git(c, "show", "HEAD:shared.md").splitlines() == \
            [f"round {r} by {winners[r]}" for r in range(ROUNDS)]
        for i, o in enumerate(owners):
            assert (c / f"own{i}.md").read_text().splitlines() == [f"{o} round {r}" for r in range(ROUNDS)]
    assert heads == {git(bare, "rev-parse", "main")}
    from kb_cli.main import COMMANDS
    if "verify" in COMMANDS:
        first = git(cs[0], "rev-list", "--max-parents=0", "HEAD")
        r = invoke("verify", "--range", f"{first}..HEAD", cwd=cs[0])
        assert r.code == 0, r.stdout + r.stderr
    with capsys.disabled():
        print(f"\n[lock distributed] 4 clones x {ROUNDS} rounds: winners {winners}, "
              f"{retries} release retries after pull --rebase")


def test_remote_lock_commands_never_touch_this_clones_own_locks(cluster):
    """`kb lock status --remote` (a read) and a refused `kb lock claim --remote` copy the
    remote's locks into refs/kb/remote-locks/<remote>/ only: after the holder releases,
    the copy never blocks a write of this clone (no lock remote configured), and the
    fetch's pruning never deletes a lock this clone holds itself."""
    bare, clones = cluster
    a, d = clones(2)
    (a / "tree.md").write_text("# Hypothesis Tree\n", encoding="utf-8")
    git(a, "add", "tree.md")
    git(a, "commit", "-q", "-m", "tree")
    git(a, "push", "-q", "origin", "HEAD")
    git(d, "pull", "-q", "--ff-only")
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", "--remote", "origin", cwd=a).code == 0
    assert invoke("lock", "claim", "own3.md", "--owner", "dave", cwd=d).code == 0  # dave's own
    st = invoke("lock", "status", "--remote", "origin", "--json", cwd=d)
    assert [(x["path"], x["owner"]) for x in st.json()["locks"]] == [("tree.md", "alice")]
    r = invoke("lock", "claim", "tree.md", "--owner", "dave", "--remote", "origin", cwd=d)
    assert r.code == 1 and "locked by alice" in r.stderr
    mine = invoke("lock", "status", "--json", cwd=d).json()["locks"]
    assert [(x["path"], x["owner"]) for x in mine] == [("own3.md", "dave")]
    assert invoke("lock", "release", "tree.md", "--owner", "alice", "--remote", "origin",
                  cwd=a).code == 0
    r = invoke("hyp", "add", "Dave's idea", "--owner", "dave", cwd=d)
    assert r.code == 0, r.stderr
    assert "## H1: Dave's idea" in (d / "tree.md").read_text(encoding="utf-8")


def test_offline_message_names_the_lock_remote_as_configured(tree_kb: Path) -> None:
    """An unreachable lock remote is named with its URL as configured, port included: git's
    own reason for a git:// URL names the host alone ("unable to connect to 127.0.0.1:")."""
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"git://127.0.0.1:{port}/team/kb.git"
    git(tree_kb, "remote", "add", "origin", url)
    git(tree_kb, "config", "kb.lockRemote", "origin")
    head = git(tree_kb, "rev-parse", "HEAD")
    r = invoke("hyp", "add", "Offline idea", "--owner", "bob", cwd=tree_kb)
    assert r.code == 1, (r.stdout, r.stderr)
    assert f"cannot read the locks of the lock remote origin at {url} (" in r.stderr, r.stderr
    assert "unable to connect to 127.0.0.1: " in r.stderr  # git's reason, not cut at its line end
    assert git(tree_kb, "rev-parse", "HEAD") == head
    git(tree_kb, "config", "kb.lockOffline", "warn")
    r = invoke("hyp", "add", "Offline idea", "--owner", "bob", cwd=tree_kb)
    assert r.code == 0 and f"warning: cannot read the locks of the lock remote origin at {url} (" \
        in r.stderr, r.stderr
