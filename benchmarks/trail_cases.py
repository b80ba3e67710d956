"""Benchmark cases of the exploration graph (issue 15), added to run.py's CASES.

Targets (issue 15 "Speed"): on a 5,000-node graph every view answers in ≤ 0.3 s
as a whole process (``trail-<view>``, warm ``.kb/`` cache, as an agent calls
them one after another); replaying a 50,000-operation log cold takes ≤ 2 s
(``trail-replay-50k``: ``kb trail stats`` after removing the cache; the
process's start and the cache write are included). The graphs come from
``gen_trail.py`` (deterministic) into private folders made in setup and
removed in teardown; the corpus is not touched.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
VIEWS = ("overview", "trunk", "brief", "frontier", "stats", "find", "node", "path", "tree",
         "subtree")


def trail_dir(nodes: bool) -> Path:
    return Path(tempfile.gettempdir()) / f"kb-bench-trail-{'5k' if nodes else '50k'}-{os.getpid()}"


def _gen(nodes: bool) -> None:
    d = trail_dir(nodes)
    arg = ["--nodes", "5000"] if nodes else ["--ops", "50000"]
    subprocess.run([sys.executable, str(HERE / "gen_trail.py"), str(d), *arg], check=True,
                   capture_output=True)


def _first_topic(d: Path) -> str:
    import json

    for f in sorted((d / ".explore-tree" / "ops").rglob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            op = json.loads(line)
            if op["op"] == "add" and op["node"]["kind"] == "topic":
                return op["node"]["id"]
    raise RuntimeError("the generated graph has no topic")


def cases(Case: Any, T: Callable[..., dict]) -> list:
    """The trail cases, built with run.py's ``Case`` and ``T``."""
    small = trail_dir(True)

    def setup_5k(c: Any) -> None:
        _gen(True)

    def teardown_5k(c: Any) -> None:
        shutil.rmtree(small, ignore_errors=True)

    def setup_50k(c: Any) -> None:
        _gen(False)

    def teardown_50k(c: Any) -> None:
        shutil.rmtree(trail_dir(False), ignore_errors=True)

    def rm_trail_cache(c: Any) -> None:
        (trail_dir(False) / ".kb" / "trail-graph.marshal").unlink(missing_ok=True)

    def view_cmd(view: str) -> Callable[[Any], list[str]]:
        def cmd(c: Any) -> list[str]:
            if view == "find":
                extra = ["component 42"]
            elif view in ("node", "path", "subtree"):
                if not (small / ".explore-tree").is_dir():  # the command is built before setup
                    _gen(True)
                extra = [_first_topic(small)]  # the same graph (and id) on every generation
            else:
                extra = []
            return c.kb + ["trail", view, *extra, "--json", "--kb", str(small)]
        return cmd

    out = []
    for view in VIEWS:
        out.append(Case(f"trail-{view}", view_cmd(view),
                        f"kb trail {view} --json on a 5,000-node graph (warm .kb cache)",
                        setup=setup_5k, teardown=teardown_5k,
                        targets={"small": T(s=0.3, mb=150), "large": T(s=0.3, mb=150)}))
    out.append(Case("trail-replay-50k",
                    lambda c: c.kb + ["trail", "stats", "--json", "--kb", str(trail_dir(False))],
                    "kb trail stats after rm .kb/trail-graph.marshal: cold replay of a "
                    "50,000-operation log (~5,100 files)",
                    setup=setup_50k, before_each=rm_trail_cache, teardown=teardown_50k,
                    targets={"small": T(s=2.0, mb=300), "large": T(s=2.0, mb=300)}))
    return out
