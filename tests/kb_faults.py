"""Run ``kb`` with a fault injected from outside the library (tests only).

Usage: ``python kb_faults.py SPEC [SPEC ...] -- KB-ARGS...``. Each SPEC makes
the process kill itself with SIGKILL at one point; kb carries no crash switch
of its own. SPECs:

- ``before:GIT-SUBCOMMAND[#N]`` — just before the N-th (default 1st) git
  command run through :func:`kb.git.run` whose subcommand is GIT-SUBCOMMAND
  (``update-ref``, ``update-index``, ``commit``, ``push``, ``commit-tree``…);
- ``after:GIT-SUBCOMMAND[#N]`` — just after it returned;
- ``commit`` — instead of committing a transaction's files (they are
  written, the journal is on disk, no ref has moved).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any


def _subcommand(args: list[str]) -> str:
    for a in args:
        if not a.startswith("-"):
            return a
    return ""


def _install(specs: list[str]) -> None:
    import kb.git as git

    counts: dict[str, int] = {}
    points: list[tuple[str, str, int]] = []
    for spec in specs:
        if spec == "commit":
            from kb.ops import commit as commit_mod

            def die(*_a: Any, **_k: Any) -> str:
                os.kill(os.getpid(), signal.SIGKILL)
                raise AssertionError("unreachable")

            commit_mod.commit_paths = die  # type: ignore[assignment]
            continue
        when, _, what = spec.partition(":")
        name, _, nth = what.partition("#")
        points.append((when, name, int(nth or 1)))
    if not points:
        return
    real_run = git.run

    def run(args: list[str], *a: Any, **k: Any) -> Any:
        sub = _subcommand(args)
        counts[sub] = counts.get(sub, 0) + 1
        hit = [w for w, n, i in points if n == sub and i == counts[sub]]
        if "before" in hit:
            os.kill(os.getpid(), signal.SIGKILL)
        res = real_run(args, *a, **k)
        if "after" in hit:
            os.kill(os.getpid(), signal.SIGKILL)
        return res

    git.run = run  # type: ignore[assignment]


def main(argv: list[str]) -> int:
    cut = argv.index("--")
    _install(argv[:cut])
    from kb_cli.main import main as kb_main

    return kb_main(argv[cut + 1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
