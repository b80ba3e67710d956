"""A full team scenario over a real transport (issue: team work, priority 6).

A bare repository is served by ``git daemon --enable=receive-pack`` on a free
loopback port (started and stopped here, every wait bounded) and also used
through its file path. Three clones work on parallel branches with
hypotheses, sub-hypotheses, experiments and cards; branches are merged
locally with kb's drivers and "on the server" without them (a clone that
never registered the drivers); ``kb sync`` repairs the collisions; locks are
claimed concurrently, one clone never fetched lock refs, and an expired lock
is stolen. Afterwards: no lost edit, no duplicate ID, ``kb verify --range``
clean over the whole history, ``git fsck`` clean.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import git, invoke, run_script

NOW = 1_800_000_000


def _ok(*args: str, cwd: Path) -> str:
    res = invoke(*args, cwd=cwd)
    assert res.code == 0, (args, res.stdout, res.stderr)
    return res.stdout


def _tree_ids(text: str) -> list[str]:
    return [ln.split(":", 1)[0].lstrip("#").strip() for ln in text.splitlines()
            if ln.startswith("##") and ":" in ln]


def test_three_clones_over_git_daemon_and_file_paths(daemon: tuple[str, Path], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from kb.ops.init import init_kb

    url, bare = daemon
    monkeypatch.setenv("KB_TODAY", "2026-11-29")
    monkeypatch.setenv("KB_NOW", str(NOW))
    # lead: over git://, creates the KB.
    lead = tmp_path / "lead"
    git(tmp_path, "clone", "-q", url, str(lead))
    init_kb(lead)
    git(lead, "add", "-A")
    git(lead, "commit", "-q", "-m", "kb init")
    git(lead, "push", "-q", "origin", "main")
    root_commit = git(lead, "rev-parse", "HEAD")
    # agent1 over git://, agent2 over the file path; both share locks through origin.
    a1, a2 = tmp_path / "agent1", tmp_path / "agent2"
    git(tmp_path, "clone", "-q", url, str(a1))
    git(tmp_path, "clone", "-q", str(bare), str(a2))
    for clone, who in ((lead, "lead"), (a1, "agent1"), (a2, "agent2")):
        git(clone, "config", "kb.lockRemote", "origin")
        git(clone, "config", "kb.owner", who)
    _ok("hooks", "install", cwd=a1)  # a1: drivers + refspecs; a2 never fetched lock refs
    # "server": a plain clone with no kb drivers, where the merge button is pressed.
    server = tmp_path / "server"
    git(tmp_path, "clone", "-q", str(bare), str(server))
    assert git(server, "config", "--get-regexp", "^merge\\.", check=False) == ""

    # -- parallel work on three branches from the same main -------------------------
    git(a1, "checkout", "-q", "-b", "feat-a")
    _ok("hyp", "add", "Agent1 idea", cwd=a1)
    _ok("hyp", "add", "Agent1 sub-idea", "--parent", "H1", cwd=a1)
    _ok("exp", "new", "--hyp", "H1.1", "Agent1 measures", cwd=a1)
    _ok("hyp", "evidence", "H1.1", "E001", cwd=a1)
    _ok("problem", "add", "q1", "Agent1 problem", cwd=a1)
    git(a2, "checkout", "-q", "-b", "feat-b")
    _ok("hyp", "add", "Agent2 idea", cwd=a2)
    _ok("exp", "new", "--hyp", "H1", "Agent2 measures", cwd=a2)
    _ok("problem", "add", "q1", "Agent2 problem", cwd=a2)
    _ok("hyp", "add", "Lead idea", cwd=lead)
    git(lead, "push", "-q", "origin", "main")

    # -- CI's view: each branch collides with main --------------------------------------
    for clone, branch in ((a1, "feat-a"), (a2, "feat-b")):
        git(clone, "fetch", "-q", "origin")
        res = invoke("verify", "--range", f"origin/main..{branch}", "--against", "origin/main",
                     "--json", cwd=clone)
        assert res.code == 1 and any(d["code"] == "KB350" for d in res.json()["diagnostics"])

    # -- agent2 first tries a local merge with the driver: one clear conflict -----------
    from kb.merge.drivers import register

    register(a2)
    merge = subprocess.run(["git", "merge", "--no-edit", "origin/main"], cwd=a2, capture_output=True)
    assert merge.returncode != 0 and b"H1 was added on both sides" in merge.stderr
    res = invoke("verify", "--json", cwd=a2)
    assert {d["code"] for d in res.json()["diagnostics"] if d["path"] == "tree.md"} == {"KB190"}
    assert invoke("hyp", "add", "During the merge", cwd=a2).code == 1  # refused, says why
    git(a2, "merge", "--abort")

    # -- both repair with kb sync and push; the server merges without drivers ------------
    for clone, branch in ((a1, "feat-a"), (a2, "feat-b")):
        res = invoke("sync", "origin/main", "--json", cwd=clone)
        assert res.code == 0, res.stdout + res.stderr
        assert res.json()["renumbered"], res.stdout
        assert invoke("verify", "--range", f"origin/main..{branch}", "--against", "origin/main",
                      cwd=clone).code == 0
        git(clone, "push", "-q", "origin", branch)
        git(server, "fetch", "-q", "origin")
        git(server, "checkout", "-q", "main")
        git(server, "reset", "-q", "--hard", "origin/main")
        git(server, "merge", "--no-ff", "--no-edit", f"origin/{branch}")  # no driver, no conflict
        git(server, "push", "-q", "origin", "main")
        git(a2, "fetch", "-q", "origin")  # a2 syncs against the newest main next

    # -- locks: concurrent claims, a clone without lock refs, a stolen expired lock ------
    git(lead, "pull", "-q", "--ff-only")
    target = "experiments/E001.md"
    env = {"KB_NOW": str(NOW), "KB_TODAY": "2026-11-29"}
    procs = [subprocess.Popen([*_script(), "lock", "claim", target, "--owner", who, "--ttl", "10m",
                               "--json"], cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**_environ(), **env})
             for clone, who in ((a1, "agent1"), (a2, "agent2"))]
    codes = [p.wait(timeout=120) for p in procs]
    assert sorted(codes) == [0, 1], [p.stderr.read() for p in procs if p.stderr]
    winner = "agent1" if codes[0] == 0 else "agent2"
    loser_clone = a2 if winner == "agent1" else a1
    # The lead never fetched any lock ref; its write to the locked file is refused.
    assert git(lead, "for-each-ref", "refs/kb/locks") == ""
    res = invoke("exp", "log", "E001", "lead's note", cwd=lead)
    assert res.code == 1 and f"locked by {winner}" in res.stderr
    # After the lease (and grace) the loser steals it and writes.
    later = {"KB_NOW": str(NOW + 3600)}
    res = run_script("lock", "steal", target, "--reason", "holder went quiet", cwd=loser_clone,
                     env={**env, **later})
    assert res.code == 0, res.stderr
    monkeypatch.setenv("KB_NOW", str(NOW + 3600))
    git(loser_clone, "checkout", "-q", "main")
    git(loser_clone, "pull", "-q", "--ff-only", "origin", "main")
    loser = "agent2" if winner == "agent1" else "agent1"
    # Edit under the lock; the release commits it and pushes branch + lock deletion atomically.
    _ok("exp", "log", "E001", f"{loser}'s note after the steal", "--owner", loser, "--no-commit",
        cwd=loser_clone)
    res = run_script("lock", "release", target, "--owner", loser, cwd=loser_clone, env={**env, **later})
    assert res.code == 0, res.stderr

    # -- afterwards ---------------------------------------------------------------------
    git(lead, "pull", "-q", "--ff-only")
    tree = (lead / "tree.md").read_text(encoding="utf-8")
    for statement in ("Lead idea", "Agent1 idea", "Agent1 sub-idea", "Agent2 idea"):
        assert statement in tree, statement  # no lost edit
    ids = _tree_ids(tree)
    assert len(ids) == len(set(ids)) == 4
    exps = sorted(p.name for p in (lead / "experiments").glob("E*.md"))
    assert exps == ["E001.md", "E002.md"]
    texts = [(lead / "experiments" / e).read_text(encoding="utf-8") for e in exps]
    assert sum("Agent1 measures" in t for t in texts) == 1 and sum("Agent2 measures" in t for t in texts) == 1
    assert any("after the steal" in t for t in texts)
    problems = {p.name: p.read_text(encoding="utf-8") for p in (lead / "Problems").glob("*.md")}
    titles = Counter(t for text in problems.values() for t in ("Agent1 problem", "Agent2 problem") if t in text)
    assert titles == Counter({"Agent1 problem": 1, "Agent2 problem": 1}) and len(problems) == 2
    res = invoke("verify", "--json", cwd=lead)
    assert res.code == 0 and not [d for d in res.json()["diagnostics"] if d["severity"] == "error"]
    res = invoke("verify", "--range", f"{root_commit}..HEAD", "--json", cwd=lead)
    assert res.code == 0, json.dumps(res.json()["diagnostics"], ensure_ascii=False)[:2000]
    for repo in (bare, lead, a1, a2, server):
        fsck = subprocess.run(["git", "fsck", "--no-progress", "--no-dangling"], cwd=repo,
                              capture_output=True)
        assert fsck.returncode == 0, (repo.name, fsck.stdout, fsck.stderr)


def _script() -> list[str]:
    from conftest import kb_script

    return [kb_script()]


def _environ() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env
