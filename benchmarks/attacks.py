#!/usr/bin/env python3
"""Re-run the adversarial attacks of issue 11, bounded, and count what broke.

    python benchmarks/attacks.py [--kills 40] [--readers 8] [--rounds 10]
                                 [--writers 8] [--seed 1] [--json FILE]

Three attacks on throw-away repositories (pinned identity, no user config):

- kills: a write command (``hyp add``, ``exp new``, ``lock claim`` then
  ``lock release``, ``dashboard``) is started and its whole process group
  (kb and the git processes it runs) is killed with SIGKILL after a random
  delay. Like a user would, the script then removes the lock files a killed
  git left (``index.lock``, ``HEAD.lock``, ``packed-refs.lock``, ``refs/**.lock``:
  kb names them and never deletes them), lets the lock holder release again,
  and (except after a release) runs a read, ``kb ls``, which must recover too: it
  lists exactly HEAD's hypotheses and leaves ``git status`` clean; then it runs
  the next kb write. Checked after it:
  the working tree equals HEAD (``git status`` clean), no
  ``next-index-*.lock`` litter, ``git fsck`` clean, ``kb verify`` passes,
  and every hypothesis ID ever committed (``Kb-Id`` trailers) is still in
  HEAD's tree (nothing lost);
- readers: ``--readers`` processes of mixed ``ls``/``index``/``show``/
  ``verify`` start together after each edit (every 3rd round also deletes
  the cache), ``--rounds`` times; every answer must equal a single process's
  answer on a twin repository, and none may exit 3;
- writers: ``--writers`` ``kb hyp add`` start together; every one must get
  a different ID and every ID must be in the tree.

Prints one line per attack (runs, failures, data lost) and exits 1 when
anything failed. Timings are not asserted; this is a robustness check.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {
    "GIT_AUTHOR_NAME": "Attack", "GIT_AUTHOR_EMAIL": "attack@example.invalid",
    "GIT_COMMITTER_NAME": "Attack", "GIT_COMMITTER_EMAIL": "attack@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "KB_TODAY": "2026-11-29",
}


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "PYTHONPATH"}
    env.update(ENV)
    env["HOME"] = str(home)
    return env


def kb_cmd() -> list[str]:
    found = shutil.which("kb", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                     os.environ.get("PATH", "")]))
    return [found] if found else [sys.executable, "-c",
                                  "import sys; from kb_cli.main import main; sys.exit(main())"]


class Lab:
    def __init__(self, base: Path) -> None:
        self.base = base
        home = base / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n[user]\n\tname = Attack\n"
                                         "\temail = attack@example.invalid\n")
        self.env = _env(home)
        self.kb = kb_cmd()

    def run(self, cwd: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([*self.kb, *args], cwd=cwd, env=self.env, capture_output=True,
                              timeout=timeout)

    def git(self, cwd: Path, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=cwd, env=self.env, capture_output=True)

    def new_kb(self, name: str) -> Path:
        root = self.base / name
        root.mkdir()
        self.git(root, "init", "-q")
        r = self.run(root, "init")
        assert r.returncode == 0, r.stderr
        self.git(root, "add", "-A")
        self.git(root, "commit", "-qm", "kb init")
        for s in ("Loading is the bottleneck", "Caching helps"):
            assert self.run(root, "hyp", "add", s).returncode == 0
        return root


# -- kills -------------------------------------------------------------------------------


def _ids_committed(lab: Lab, root: Path) -> set[str]:
    out = lab.git(root, "log", "--format=%(trailers:key=Kb-Id,valueonly)").stdout.decode()
    return {x for x in out.split() if x.startswith("H")}


def _ids_in_head(lab: Lab, root: Path) -> set[str]:
    import re

    text = lab.git(root, "show", "HEAD:tree.md").stdout.decode("utf-8", "replace")
    return set(re.findall(r"^#+ (H[0-9.]+):", text, re.M))


def attack_kills(lab: Lab, n: int, rng: random.Random) -> dict:
    root = lab.new_kb("kills")
    fails: list[str] = []
    lost = 0
    locks_removed = 0
    read_recovered = 0
    for i in range(n):
        kind = rng.choice(["hyp", "exp", "release", "dashboard"])
        if kind == "hyp":
            args = ["hyp", "add", f"Killed statement {i}"]
        elif kind == "exp":
            args = ["exp", "new", "--hyp", "H1", f"killed run {i}"]
        elif kind == "dashboard":
            (root / "tree.md").open("a").close()
            args = ["dashboard"]
        else:
            lab.run(root, "lock", "claim", "tree.md", "--owner", "attack")
            with (root / "tree.md").open("a", encoding="utf-8") as fh:
                # prose, not a new ID: a hand-written ID could collide with one kb
                # allocated meanwhile, which the release's guard rightly refuses
                fh.write(f"\nEdited by hand while holding the lock, run {i}.\n")
            args = ["lock", "release", "tree.md", "--owner", "attack"]
        p = subprocess.Popen([*lab.kb, *args], cwd=root, env=lab.env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.0, 0.8))
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        gd = root / ".git"
        # The user's part after a crash (kb never deletes git's lock files, it
        # names them): remove the ones the killed git processes left.
        for stale in [gd / "index.lock", gd / "HEAD.lock", gd / "packed-refs.lock",
                      *(gd / "refs").rglob("*.lock")]:
            if stale.exists():
                stale.unlink()
                locks_removed += 1
        if kind == "release":
            # the holder releases again (a killed release keeps the lock, or finishes)
            r = lab.run(root, "lock", "release", "--all", "--owner", "attack")
            if r.returncode != 0:
                fails.append(f"run {i} ({kind}): release again failed: {r.stderr.decode()[-300:]}")
        if kind != "release":
            # A read first: it recovers too, and answers what HEAD holds (a write
            # rolled back, or landed), with a clean status after it.
            r = lab.run(root, "ls", "hypotheses", "--json")
            if r.returncode != 0:
                fails.append(f"run {i} ({kind}): kb ls exit {r.returncode}: "
                             f"{r.stderr.decode()[-300:]}")
            else:
                read_recovered += b"interrupted kb write" in r.stderr
                listed = {h["id"] for h in json.loads(r.stdout or b'{"objects": []}')["objects"]}
                if listed != _ids_in_head(lab, root):
                    fails.append(f"run {i} ({kind}): kb ls after the kill listed "
                                 f"{sorted(listed ^ _ids_in_head(lab, root))} not as in HEAD")
                st = lab.git(root, "status", "--porcelain").stdout.decode()
                if st.strip():
                    fails.append(f"run {i} ({kind}): not clean after a read: {st.strip()[:200]}")
        # the next kb write recovers; then the checks
        r = lab.run(root, "hyp", "add", f"After kill {i}")
        if r.returncode != 0:
            fails.append(f"run {i} ({kind}): the next write failed: {r.stderr.decode()[-300:]}")
            continue
        st = lab.git(root, "status", "--porcelain").stdout.decode()
        if st.strip():
            fails.append(f"run {i} ({kind}): not clean after recovery: {st.strip()[:200]}")
            lab.git(root, "reset", "-q", "--hard")
        if list((root / ".git").glob("next-index-*.lock")):
            fails.append(f"run {i} ({kind}): next-index litter")
        fsck = lab.git(root, "fsck", "--no-dangling")
        if fsck.returncode != 0:
            fails.append(f"run {i} ({kind}): git fsck: {fsck.stderr.decode()[:200]}")
        v = lab.run(root, "verify")
        if v.returncode != 0:
            fails.append(f"run {i} ({kind}): kb verify exit {v.returncode}: "
                         f"{(v.stdout + v.stderr).decode()[-300:]}")
        missing = _ids_committed(lab, root) - _ids_in_head(lab, root)
        if missing:
            lost += len(missing)
            fails.append(f"run {i} ({kind}): lost {sorted(missing)}")
    return {"attack": "kills", "runs": n, "failures": len(fails), "data_lost": lost,
            "git_locks_removed_by_user": locks_removed, "reads_that_recovered": read_recovered,
            "details": fails[:20]}


# -- readers -----------------------------------------------------------------------------

READ_CMDS = (["ls", "--json"], ["index", "--json"], ["show", "H1", "--json"], ["verify", "--json"])


def _normal(cmd: list[str], out: bytes) -> object:
    try:
        data = json.loads(out)
    except ValueError:
        return None
    if cmd[0] == "index" and isinstance(data, dict):
        for k in ("seconds", "parsed", "rebuilt", "kb"):
            data.pop(k, None)
    return data


def attack_readers(lab: Lab, procs: int, rounds: int) -> dict:
    race, twin = lab.new_kb("race"), lab.new_kb("twin")
    fails: list[str] = []
    for rnd in range(rounds):
        for root in (race, twin):
            with (root / "tree.md").open("a", encoding="utf-8") as fh:
                fh.write(f"\n## H{100 + rnd}: Round {rnd}\nStatus: 待验\nEvidence: (empty)\n")
            if rnd % 3 == 0:
                shutil.rmtree(root / ".kb", ignore_errors=True)
        want = {}
        for cmd in READ_CMDS:
            r = lab.run(twin, *cmd)
            want[cmd[0]] = (r.returncode, _normal(cmd, r.stdout))
        ps = [(READ_CMDS[(rnd + i) % 4], subprocess.Popen(
            [*lab.kb, *READ_CMDS[(rnd + i) % 4]], cwd=race, env=lab.env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)) for i in range(procs)]
        for cmd, p in ps:
            out, err = p.communicate(timeout=300)
            if (p.returncode, _normal(cmd, out)) != want[cmd[0]]:
                fails.append(f"round {rnd} {cmd[0]}: exit {p.returncode} {err.decode()[-200:]}")
    return {"attack": "readers", "runs": procs * rounds, "failures": len(fails), "data_lost": 0,
            "details": fails[:20]}


# -- writers -----------------------------------------------------------------------------


def attack_writers(lab: Lab, n: int) -> dict:
    root = lab.new_kb("writers")
    ps = [subprocess.Popen([*lab.kb, "hyp", "add", f"Racer {i}", "--json"], cwd=root, env=lab.env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(n)]
    ids, fails = [], []
    for p in ps:
        out, err = p.communicate(timeout=600)
        if p.returncode != 0:
            fails.append(f"exit {p.returncode}: {err.decode()[-200:]}")
            continue
        ids.append(json.loads(out)["id"])
    if len(set(ids)) != len(ids):
        fails.append(f"duplicate IDs: {sorted(ids)}")
    lost = len(set(ids) - _ids_in_head(lab, root))
    if lab.git(root, "status", "--porcelain").stdout.strip():
        fails.append("not clean after the race")
    return {"attack": "writers", "runs": n, "failures": len(fails), "data_lost": lost,
            "details": fails[:20]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=40)
    ap.add_argument("--readers", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="kb-attacks-"))
    try:
        lab = Lab(base)
        results = [attack_kills(lab, a.kills, random.Random(a.seed)),
                   attack_readers(lab, a.readers, a.rounds),
                   attack_writers(lab, a.writers)]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for r in results:
        extra = f", git lock files removed by the user {r['git_locks_removed_by_user']}x" \
            if "git_locks_removed_by_user" in r else ""
        if "reads_that_recovered" in r:
            extra += f", reads that recovered a killed write {r['reads_that_recovered']}"
        print(f"{r['attack']}: {r['runs']} runs, {r['failures']} failures, "
              f"{r['data_lost']} IDs lost{extra}")
        for d in r["details"]:
            print(f"  - {d}")
    if a.json:
        a.json.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return 1 if any(r["failures"] or r["data_lost"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
