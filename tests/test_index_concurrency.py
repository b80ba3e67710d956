"""Concurrent readers of one index (issue 11): racing ``kb`` processes give the
answers of a single process, every round, and never a crash.

The reference answers come from a twin repository with the same edits, read
by one process at a time, so a cache broken by the race cannot also corrupt
the reference.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import commit_all, git_init, kb_script

#: 8 processes x 20 rounds (issue 11).
PROCESSES = 8
ROUNDS = 20
COMMANDS = (["ls", "--json"], ["index", "--json"], ["show", "H1", "--json"],
            ["verify", "--json"])


def _normal(cmd: list[str], out: str) -> object:
    """The command's answer without what legitimately differs between runs."""
    data = json.loads(out)
    if cmd[0] == "index":
        for key in ("seconds", "parsed", "rebuilt", "kb"):
            data.pop(key, None)
    return data


def _run(cmd: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([kb_script(), *cmd], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def _edit(root: Path, rnd: int) -> None:
    """An edit between rounds: a new hypothesis; every 5th round also a cold cache."""
    with (root / "tree.md").open("a", encoding="utf-8") as fh:
        fh.write(f"\n## H{100 + rnd}: Round {rnd} adds a hypothesis\nStatus: 待验证\n")
    if rnd % 5 == 0:
        shutil.rmtree(root / ".kb", ignore_errors=True)


@pytest.mark.slow
def test_racing_readers_answer_like_one_process(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[1] / "examples"
    race, twin = tmp_path / "race", tmp_path / "twin"
    for dest in (race, twin):
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".kb", "__pycache__"))
        git_init(dest)
        commit_all(dest, "example KB")
    failures: list[str] = []
    for rnd in range(ROUNDS):
        _edit(race, rnd)
        _edit(twin, rnd)
        want = {}
        for cmd in COMMANDS:
            p = _run(cmd, twin)
            out, err = p.communicate(timeout=120)
            assert p.returncode in (0, 1), err.decode()
            want[cmd[0]] = (p.returncode, _normal(cmd, out.decode()))
        procs = [(COMMANDS[(rnd + i) % len(COMMANDS)], _run(COMMANDS[(rnd + i) % len(COMMANDS)], race))
                 for i in range(PROCESSES)]
        for cmd, p in procs:
            out, err = p.communicate(timeout=300)
            got = (p.returncode, _normal(cmd, out.decode()) if out.strip() else None)
            if got != want[cmd[0]]:
                failures.append(f"round {rnd} {' '.join(cmd)}: exit {p.returncode}, "
                                f"{err.decode().strip()[:300]}")
    assert not failures, f"{len(failures)} of {ROUNDS * PROCESSES} answers differ:\n" + \
        "\n".join(failures[:20])
