#!/usr/bin/env python3
"""A KB holding one large ``tree.md`` (issue 18: the tree parser at scale).

    python benchmarks/gen_big_tree.py OUT_DIR [--hypotheses 100000] [--seed 1]

Writes ``kb.toml``, ``.gitignore`` and a ``tree.md`` of exactly N hypotheses
(pre-order, ``##`` to ``######``, Status / Evidence / Children / Parent
anchors, a paragraph of prose under about half of them), and commits it with
pinned identity and dates. No experiments: every hypothesis is 待验 with an
empty Evidence, so ``kb verify`` finds nothing to report beyond
the stale dashboard. About 11 MB at 100,000 hypotheses; a few seconds.
"""
from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_corpus import Prose, gen_tree_ids, git  # noqa: E402


def generate(out: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    prose = Prose(rng)
    ids = gen_tree_ids(rng, n)
    children: dict[str, list[str]] = {h: [] for h in ids}
    for h in ids:
        if "." in h:
            children[h.rsplit(".", 1)[0]].append(h)
    parts = ["# Hypothesis Tree\n"]
    for h in ids:
        depth = h.count(".")
        lines = [f"{'#' * (2 + depth)} {h}: {prose.hypothesis()}", "Status: 待验", "Evidence: (empty)"]
        if children[h]:
            lines.append(f"Children: {', '.join(children[h])}")
        if depth:
            lines.append(f"Parent: {h.rsplit('.', 1)[0]}")
        block = "\n".join(lines)
        if rng.random() < 0.5:
            block += "\n\n" + prose.paragraph(lo=1, hi=2)
        parts.append(block + "\n")
    out.mkdir(parents=True)
    (out / "kb.toml").write_text('[kb]\nlocale = "zh"\n', encoding="utf-8")
    (out / ".gitignore").write_text(".kb/\n", encoding="utf-8")
    (out / "tree.md").write_text("\n".join(parts), encoding="utf-8")
    git(out, "init", "-q", "-b", "main")
    git(out, "config", "gc.auto", "0")
    git(out, "add", "-A")
    git(out, "commit", "-q", "-m", f"big tree: {n} hypotheses")
    git(out, "update-index", "--refresh")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--hypotheses", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--force", action="store_true", help="replace OUT_DIR if it exists")
    a = ap.parse_args(argv)
    if a.out.exists():
        if not a.force:
            print(f"error: {a.out} exists (use --force)", file=sys.stderr)
            return 2
        shutil.rmtree(a.out)
    generate(a.out, a.hypotheses, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
