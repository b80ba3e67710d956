#!/usr/bin/env python3
"""The scaling table of issue 18: every case on several corpora, each paired with the floor.

    python benchmarks/scaling.py [--columns 1k,7.5k,7.5k-cards,tree-100k] [--runs 5]
                                 [--out DIR] [--kb-cmd CMD] [--only CASES]

Runs ``run.py`` once per column (each column its own generated corpus, cached in
$TMPDIR like run.py's) with ``--json``, then prints one table: a row per case, a
column per corpus, each cell ``median s (×floor range) peak MB`` plus the git
processes the command started and PASS/MISS against that corpus's targets.

Columns: ``1k`` (--scale 0.133, the only one with the peer), ``7.5k`` (scale 1),
``30k`` (scale 4), ``100k`` (scale 13.3), ``7.5k-cards`` and ``30k-cards``,
``100k-cards`` (the second corpus: --profile cards), ``tree-66k`` and
``tree-100k`` (a KB holding one tree.md of that many hypotheses). The 30k and
100k corpora take minutes to generate and a machine of their own to time.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

COLUMNS: dict[str, list[str]] = {
    "1k": ["--scale", "0.133"],
    "7.5k": ["--scale", "1", "--skip-peer"],
    "30k": ["--scale", "4", "--skip-peer"],
    "100k": ["--scale", "13.3", "--skip-peer"],
    "7.5k-cards": ["--scale", "1", "--profile", "cards", "--skip-peer"],
    "30k-cards": ["--scale", "4", "--profile", "cards", "--skip-peer"],
    "100k-cards": ["--scale", "13.3", "--profile", "cards", "--skip-peer"],
    "tree-66k": ["--big-tree", "66500"],
    "tree-100k": ["--big-tree", "100000"],
}


def cell(case: dict) -> str:
    if not case.get("times"):
        return {"failed": "FAIL", "skipped": "skip", "unavailable": "n/a"}.get(case["status"], "-")
    parts = [f"{case['median']:.2f}s"]
    rng = case.get("ratio_range")
    if case.get("ratio") is not None and case["name"] != "floor":
        parts.append(f"{case['ratio']:.1f}×" + (f" ({rng[0]:.1f}–{rng[1]:.1f})" if rng else ""))
    if case.get("overhead") is not None:
        parts.append(f"+{case['overhead']:.2f}s")
    parts.append(f"{case['peak_rss_mb']:.0f}MB")
    if case.get("git_processes") is not None:
        parts.append(f"git {case['git_processes']}")
    if case.get("verdict") in ("PASS", "MISS", "FAIL"):
        parts.append(case["verdict"])
    return " ".join(parts)


def rejudge(col: str, doc: dict) -> None:
    """Judge every case of ``doc`` again by run.py's current targets (a JSON file
    written by an older run.py keeps its figures, not its verdicts)."""
    sys.path.insert(0, str(HERE))
    import run

    size = run.size_of(doc["corpus"]["files"], col.startswith("tree-"))
    cases = {c.name: c for c in run.CASES}
    for res in doc["cases"]:
        case = cases.get(res["name"])
        if case is not None and res.get("times"):
            res["target"] = run.targets_for(case, size)
            res["verdict"], res["misses"] = run.judge(res, res["target"])


def table(docs: dict[str, dict]) -> str:
    names: list[str] = []
    for doc in docs.values():
        for c in doc["cases"]:
            if c["name"] not in names:
                names.append(c["name"])
    head = ["case", *(f"{col} ({doc['corpus']['files']} files)" for col, doc in docs.items())]
    rows = [head]
    for name in names:
        row = [name]
        for doc in docs.values():
            found = next((c for c in doc["cases"] if c["name"] == name), None)
            row.append(cell(found) if found else "")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--columns", default="1k,7.5k,7.5k-cards,tree-100k",
                    help=f"comma-separated, from: {', '.join(COLUMNS)}")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("bench-scaling"),
                    help="folder for each column's JSON")
    ap.add_argument("--kb-cmd", default=None)
    ap.add_argument("--only", default=None, help="case names for run.py (comma-separated)")
    ap.add_argument("--table-only", action="store_true",
                    help="print the table from the JSON files already in --out")
    a = ap.parse_args(argv)
    cols = [c.strip() for c in a.columns.split(",") if c.strip()]
    bad = [c for c in cols if c not in COLUMNS]
    if bad:
        print(f"error: unknown column(s) {', '.join(bad)}; known: {', '.join(COLUMNS)}", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    failed = False
    for col in cols:
        dest = a.out / f"{col}.json"
        if a.table_only:
            continue
        argv2 = [sys.executable, str(HERE / "run.py"), *COLUMNS[col], "--runs", str(a.runs),
                 "--reset", "--json", str(dest)]
        if a.kb_cmd:
            argv2 += ["--kb-cmd", a.kb_cmd]
        if a.only:
            argv2 += ["--only", a.only]
        print(f"== {col}: {' '.join(argv2[2:])}", file=sys.stderr, flush=True)
        failed |= subprocess.run(argv2, stdout=sys.stderr).returncode != 0
    docs = {}
    for col in cols:
        dest = a.out / f"{col}.json"
        if dest.exists():
            docs[col] = json.loads(dest.read_text(encoding="utf-8"))
            rejudge(col, docs[col])
    if docs:
        first = next(iter(docs.values()))
        print(f"{first['machine']['cpus']} CPUs, Python {first['machine']['python']}, "
              f"{first['kb']['version']}; cell: median (×floor: median of paired runs, range) "
              "peak RSS, git processes, verdict")
        print(table(docs))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
