"""Faults and leases (issue 6).

Faults: the ``kb`` process is killed with SIGKILL at each step of claim and
release (injected from outside kb by ``tests/kb_faults.py``, at the git
command the step runs: kb carries no crash switch of its own): the state
left behind is explained by ``kb lock status`` and recovers by expiry or by
``kb lock steal``; no file is half-written (lock commands never write
working-tree files); a crashed holder of kb's machine lock does not block the
next release (the kernel drops a dead process's flock).

Leases: expiry, renew and steal rules, and clock skew between two clones of
one remote (``KB_NOW``): with a skew smaller than the grace margin, no one
takes a lease over while its holder's clock says it is still running.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from conftest import Result, git, invoke, run_script, source_env

T0 = 1_800_000_000
CONFIG = "[kb]\n\n[locks]\nttl = \"10m\"\ngrace = \"30s\"\nleads = [\"lead\"]\n"


def ref_of(path: str) -> str:
    return "refs/kb/locks/" + hashlib.sha1(path.encode()).hexdigest()


#: Each step of claim and release, as the git command kb_faults kills the process at.
CRASH = {
    "claim:before-ref": "before:update-ref",    # lock commit written, no ref yet
    "claim:after-ref": "after:update-ref",      # ref created, nothing reported
    "claim:after-push": "after:push",           # remote ref created, no local mirror
    "release:during-commit": "after:commit-tree",  # release commit built, no ref moved
    "release:after-ref": "after:update-ref",    # branch and lock refs moved, index not yet
}


def kb(cwd: Path, *args: str, now: int = T0, crash: str | None = None, **env: str):
    e = {"KB_NOW": str(now), **env}
    if not crash:
        return run_script(*args, cwd=cwd, env=e)
    import os
    import subprocess
    import sys

    full = source_env()
    full.update(e)
    faults = Path(__file__).resolve().parent / "kb_faults.py"
    proc = subprocess.run([sys.executable, str(faults), CRASH[crash], "--", *args], cwd=cwd,
                          capture_output=True, env=full, timeout=60)
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def kbi(cwd: Path, *args: str, now: int = T0):
    """In-process run (faster) for tests that need no crash."""
    import os

    old = os.environ.get("KB_NOW")
    os.environ["KB_NOW"] = str(now)
    try:
        return invoke(*args, cwd=cwd)
    finally:
        if old is None:
            del os.environ["KB_NOW"]
        else:
            os.environ["KB_NOW"] = old


@pytest.fixture
def kbr(make_kb) -> Path:
    return make_kb({"Notes/a.md": "a\n", "Notes/b.md": "b\n", "kb.toml": CONFIG}, commit=True)


def refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/kb")


# -- kill -9 at each step ----------------------------------------------------------------


def test_crash_before_the_ref_leaves_no_lock(kbr):
    r = kb(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", crash="claim:before-ref")
    assert r.code == -9
    assert refs(kbr) == ""
    assert "no locks" in kb(kbr, "lock", "status").stdout
    assert kb(kbr, "lock", "claim", "Notes/a.md", "--owner", "bob").code == 0


def test_crash_after_the_ref_recovers_by_expiry_or_steal(kbr):
    r = kb(kbr, "lock", "claim", "Notes/a.md", "Notes/b.md", "--owner", "alice", crash="claim:after-ref")
    assert r.code == -9
    st = kb(kbr, "lock", "status", "--json", now=T0 + 60).json()
    assert [(x["path"], x["owner"], x["expired"]) for x in st["locks"]] == \
        [("Notes/a.md", "alice", False), ("Notes/b.md", "alice", False)]
    refused = kb(kbr, "lock", "claim", "Notes/a.md", "--owner", "bob", now=T0 + 60)
    assert refused.code == 1 and "locked by alice" in refused.stderr
    # recovery 1: a lead steals at once, with a reason
    assert kb(kbr, "lock", "steal", "Notes/a.md", "--owner", "lead", "--reason", "alice crashed",
              now=T0 + 60).code == 0
    # recovery 2: after the lease and the grace margin, anyone takes it over
    text = kb(kbr, "lock", "status", now=T0 + 700).stdout
    assert "Notes/b.md\talice\tEXPIRED" in text and "a claim takes it over" in text
    r = kb(kbr, "lock", "claim", "Notes/b.md", "--owner", "bob", "--json", now=T0 + 631)
    assert r.code == 0 and r.json()["locks"][0]["how"] == "expired"


def test_crash_during_the_release_commit_changes_nothing(kbr):
    assert kb(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice").code == 0
    (kbr / "Notes/a.md").write_bytes(b"a\nalice's edit\n")
    head, before = git(kbr, "rev-parse", "HEAD"), refs(kbr)
    r = kb(kbr, "lock", "release", "Notes/a.md", "--owner", "alice", crash="release:during-commit")
    assert r.code == -9
    assert git(kbr, "rev-parse", "HEAD") == head and refs(kbr) == before
    assert (kbr / "Notes/a.md").read_bytes() == b"a\nalice's edit\n"   # not half-written
    assert git(kbr, "diff", "--cached", "--name-only") == ""           # the index untouched
    st = kb(kbr, "lock", "status", "--json").json()
    assert st["locks"][0]["modified_since_claim"] is True and st["interrupted_release"] is None
    assert "uncommitted edits" in kb(kbr, "lock", "status").stdout
    # the dead process held kb's machine lock: the next release is not blocked
    r = kb(kbr, "lock", "release", "Notes/a.md", "--owner", "alice", "--json")
    assert r.code == 0, r.stderr
    assert git(kbr, "show", "HEAD:Notes/a.md") == "a\nalice's edit"
    assert refs(kbr) == "" and git(kbr, "status", "--porcelain") == ""


def test_crash_after_the_release_ref_update_is_finished_later(kbr):
    assert kb(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice").code == 0
    (kbr / "Notes/a.md").write_bytes(b"edited\n")
    head = git(kbr, "rev-parse", "HEAD")
    r = kb(kbr, "lock", "release", "Notes/a.md", "--owner", "alice", crash="release:after-ref")
    assert r.code == -9
    # both ref updates happened (one transaction): the commit is on the branch, no lock
    assert git(kbr, "rev-parse", "HEAD~1") == head and refs(kbr) == ""
    assert git(kbr, "show", "HEAD:Notes/a.md") == "edited"
    assert (kbr / "Notes/a.md").read_bytes() == b"edited\n"
    # only the index entry is stale; status explains, the next release finishes it
    assert git(kbr, "diff", "--cached", "--name-only") == "Notes/a.md"
    st = kb(kbr, "lock", "status", "--json").json()
    assert st["interrupted_release"]["paths"] == ["Notes/a.md"]
    assert "interrupted release" in kb(kbr, "lock", "status").stdout
    assert kb(kbr, "lock", "release", "--all", "--owner", "alice").code == 0
    assert git(kbr, "status", "--porcelain") == ""
    assert kb(kbr, "lock", "status", "--json").json()["interrupted_release"] is None


def test_crash_leaves_no_half_written_file_and_index_lock_is_not_ours(kbr):
    """kb never writes a locked file; a stale index.lock from a crashed git stays."""
    assert kb(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice").code == 0
    (kbr / "Notes/a.md").write_bytes(b"x" * 100_000)
    (kbr / ".git/index.lock").write_bytes(b"")
    r = kb(kbr, "lock", "release", "Notes/a.md", "--owner", "alice")
    assert r.code == 1 and "index.lock" in r.stderr
    assert (kbr / ".git/index.lock").exists()
    assert (kbr / "Notes/a.md").read_bytes() == b"x" * 100_000


# -- remote faults ---------------------------------------------------------------------------


@pytest.fixture
def two_clones(kbr, tmp_path) -> tuple[Path, Path, Path]:
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(kbr), str(bare))
    a, b = tmp_path / "A", tmp_path / "B"
    for c in (a, b):
        git(tmp_path, "clone", "-q", str(bare), str(c))
    return bare, a, b


def test_remote_claim_killed_after_push_is_visible_on_the_remote(two_clones):
    bare, a, b = two_clones
    r = kb(a, "lock", "claim", "Notes/a.md", "--owner", "alice", "--remote", "origin",
           crash="claim:after-push")
    assert r.code == -9
    assert git(bare, "for-each-ref", "refs/kb") != ""
    st = kb(b, "lock", "status", "--remote", "origin", "--json").json()
    assert [(x["path"], x["owner"]) for x in st["locks"]] == [("Notes/a.md", "alice")]
    refused = kb(b, "lock", "claim", "Notes/a.md", "--owner", "bob", "--remote", "origin")
    assert refused.code == 1 and "locked by alice" in refused.stderr
    r = kb(b, "lock", "claim", "Notes/a.md", "--owner", "bob", "--remote", "origin", now=T0 + 631)
    assert r.code == 0, r.stderr


def test_remote_release_killed_before_push_changes_nothing(two_clones):
    bare, a, b = two_clones
    assert kb(a, "lock", "claim", "Notes/a.md", "--owner", "alice", "--remote", "origin").code == 0
    (a / "Notes/a.md").write_bytes(b"edit\n")
    remote_before = git(bare, "for-each-ref", "--format=%(refname) %(objectname)")
    r = kb(a, "lock", "release", "Notes/a.md", "--owner", "alice", "--remote", "origin",
           crash="release:during-commit")
    assert r.code == -9
    assert git(bare, "for-each-ref", "--format=%(refname) %(objectname)") == remote_before
    r = kb(a, "lock", "release", "Notes/a.md", "--owner", "alice", "--remote", "origin")
    assert r.code == 0, r.stderr
    assert git(bare, "show", "main:Notes/a.md") == "edit"
    assert git(bare, "for-each-ref", "refs/kb") == ""


# -- leases: expiry, renew, steal, clock skew --------------------------------------------------


def test_expiry_is_lease_plus_grace(kbr):
    assert kbi(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", "--ttl", "60s").code == 0
    for t in (T0 + 1, T0 + 60, T0 + 61, T0 + 90):
        r = kbi(kbr, "lock", "claim", "Notes/a.md", "--owner", "bob", now=t)
        assert r.code == 1, t
    assert "grace" in kbi(kbr, "lock", "claim", "Notes/a.md", "--owner", "bob", now=T0 + 75).stderr
    assert kbi(kbr, "lock", "claim", "Notes/a.md", "--owner", "bob", now=T0 + 91).code == 0


def test_renew_keeps_others_out_and_renewing_a_lost_lock_fails(kbr):
    kbi(kbr, "lock", "claim", "Notes/a.md", "--owner", "alice", "--ttl", "60s")
    assert kbi(kbr, "lock", "renew", "Notes/a.md", "--owner", "alice", "--ttl", "60s", now=T0 + 50).code == 0
    assert kbi(kbr, "lock", "claim", "Notes/a.md", "--owner", "bob", now=T0 + 91).code == 1
    assert kbi(kbr, "lock", "claim", "Notes/a.md", "--owner", "bob", now=T0 + 141).code == 0
    r = kbi(kbr, "lock", "renew", "Notes/a.md", "--owner", "alice", now=T0 + 142)
    assert r.code == 1 and "locked by bob" in r.stderr


@pytest.mark.parametrize("skew", [5, -5, 25])
def test_clock_skew_between_clones_never_gives_two_holders(two_clones, skew):
    """A's clock reads true time; B's reads true time + skew. A claims at true T0
    for 60 s. B may take the lock over only once A's own clock says A's lease is
    over, at every instant we try (skew < the 30 s grace)."""
    bare, a, b = two_clones
    assert kbi(a, "lock", "claim", "Notes/a.md", "--owner", "alice", "--ttl", "60s",
              "--remote", "origin", now=T0).code == 0
    # true instants: during A's lease, at its end, through B's view of the grace
    for tau in (T0, T0 + 30, T0 + 59, T0 + 60, T0 + 89 - skew, T0 + 90 - skew):
        r = kbi(b, "lock", "claim", "Notes/a.md", "--owner", "bob", "--ttl", "60s",
                "--remote", "origin", now=tau + skew)
        assert r.code == 1 and "locked by alice" in r.stderr, tau - T0
    took_over = T0 + 91 - skew
    r = kbi(b, "lock", "claim", "Notes/a.md", "--owner", "bob", "--ttl", "60s",
            "--remote", "origin", now=took_over + skew)
    assert r.code == 0, r.stderr
    assert took_over > T0 + 60   # after A's lease, by A's own clock
    # A, late, cannot commit under the lease it lost
    (a / "Notes/a.md").write_bytes(b"late edit\n")
    main = git(bare, "rev-parse", "main")
    r = kbi(a, "lock", "release", "Notes/a.md", "--owner", "alice", "--remote", "origin",
           now=took_over + 1)
    assert r.code == 1 and "by bob" in r.stderr and "nothing was committed" in r.stderr
    assert git(bare, "rev-parse", "main") == main


def test_without_grace_a_fast_clock_would_cut_a_lease_short(make_kb):
    """Why the grace margin exists: with grace 0, a clock 5 s ahead takes the
    lock while the holder's clock still shows 4 s of lease."""
    root = make_kb({"Notes/a.md": "a\n", "kb.toml": "[locks]\ngrace = \"0s\"\n"}, commit=True)
    assert kbi(root, "lock", "claim", "Notes/a.md", "--owner", "alice", "--ttl", "60s").code == 0
    r = kbi(root, "lock", "claim", "Notes/a.md", "--owner", "bob", now=T0 + 56 + 5)
    assert r.code == 0
