#!/usr/bin/env python3
"""kb serve benchmark (issue 16): server time of each page on the generated corpus.

    python benchmarks/web.py [--corpus DIR] [--scale 1] [--runs 5] [--json FILE]

Starts ``kb serve --port 0 --json`` in the corpus (after one ``kb index``, as a
user would have), requests each page ``--runs`` times and reads the server's
own time from the ``Server-Timing: app;dur=<ms>`` header (request to response
start, without the network and the browser; and the CPU time it took, the
stable figure on a shared machine). ``kb serve`` builds the Tree and Board
data of its revision in the background as it starts; the first request (an
object page, its own line) waits for that; each page's "first" is then its
first rendering, later ones reuse it (a commit never changes). The target: ≤ 0.5 s per page on the 7.5k-file corpus
(5,000 hypotheses).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import child_env, default_corpus, ensure_corpus  # noqa: E402

PAGES = ["/tree", "/board", "/o/H1", "/o/H1.1.1", "/o/E0001", "/o/q1", "/file/tree.md"]
TARGET_MS = 500.0


def server_ms(headers: dict[str, str]) -> tuple[float, float]:
    """(wall, cpu) milliseconds from ``Server-Timing: app;dur=W, cpu;dur=C``."""
    raw = headers.get("server-timing", "")
    got = {}
    for metric in raw.split(","):
        name, _, rest = metric.strip().partition(";")
        if rest.startswith("dur="):
            got[name] = float(rest[4:])
    if "app" not in got or "cpu" not in got:
        raise SystemExit(f"error: no Server-Timing header ({raw!r})")
    return got["app"], got["cpu"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path)
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kb-cmd", default=None, help="kb executable (default: next to this Python)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    import httpx

    corpus = a.corpus or default_corpus(a.scale, 1)
    if a.corpus is None:
        ensure_corpus(corpus, a.scale, 1, False)
    kb = a.kb_cmd.split() if a.kb_cmd else [str(Path(sys.executable).with_name("kb"))]
    env = child_env()
    subprocess.run([*kb, "index"], cwd=corpus, env=env, capture_output=True)
    proc = subprocess.Popen([*kb, "serve", "--port", "0", "--json"], cwd=corpus, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        buf = line
        while line and not buf.rstrip().endswith("}"):
            line = proc.stdout.readline() if proc.stdout else ""
            buf += line
        if not buf:
            raise SystemExit(f"error: kb serve did not start: {proc.stderr.read() if proc.stderr else ''}")
        url = json.loads(buf)["url"].rstrip("/")
        rows = []
        with httpx.Client(timeout=120) as client:
            # kb serve builds the Tree and Board data of its revision as it starts; a first
            # request waits for that: reported on its own line.
            r = client.get(url + "/o/q2")
            startup = server_ms(dict(r.headers))
            for page in PAGES:
                times, size = [], 0
                for _ in range(max(1, a.runs)):
                    t0 = time.perf_counter()
                    r = client.get(url + page)
                    wall = (time.perf_counter() - t0) * 1000
                    if r.status_code != 200:
                        raise SystemExit(f"error: {page}: HTTP {r.status_code}")
                    times.append(server_ms(dict(r.headers)))
                    size = len(r.content)
                (first, first_cpu), later = times[0], times[1:] or times[:1]
                rows.append({"page": page, "first_ms": round(first, 1),
                             "first_cpu_ms": round(first_cpu, 1),
                             "median_ms": round(statistics.median(t for t, _ in later), 1),
                             "median_cpu_ms": round(statistics.median(c for _, c in later), 1),
                             "max_ms": round(max(t for t, _ in later), 1), "bytes": size,
                             "ok": first <= TARGET_MS and max(t for t, _ in later) <= TARGET_MS})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"corpus {corpus} ({os.cpu_count()} cores, load {load:.1f}); server time in ms "
          f"(wall, and CPU in parentheses), target ≤ {TARGET_MS:.0f} wall")
    print(f"{'page':<16}{'first':>16}{'median':>16}{'max':>9}{'KB':>7}  result")
    print(f"{'(start-up)':<16}{f'{startup[0]} ({startup[1]})':>16}  the first request waits for "
          "the commit's Tree and Board data")
    for r in rows:
        first = f"{r['first_ms']} ({r['first_cpu_ms']})"
        median = f"{r['median_ms']} ({r['median_cpu_ms']})"
        print(f"{r['page']:<16}{first:>16}{median:>16}{r['max_ms']:>9}"
              f"{r['bytes'] // 1024:>7}  {'PASS' if r['ok'] else 'MISS'}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
