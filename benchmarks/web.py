#!/usr/bin/env python3
"""kb serve benchmark (issue 16): server time of each page on the generated corpus.

    python benchmarks/web.py [--corpus DIR] [--scale 1] [--runs 5] [--json FILE]

Starts ``kb serve --port 0 --json`` in the corpus (after one ``kb index``, as a
user would have), requests each page ``--runs`` times and reads the server's
own time from the ``Server-Timing: app;dur=<ms>`` header (request to response
start, without the network and the browser). The first request of a page
includes building its data for the commit; later ones reuse it (a commit
never changes). The target: ≤ 0.5 s per page on the 7.5k-file corpus
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


def server_ms(headers: dict[str, str]) -> float:
    raw = headers.get("server-timing", "")
    for part in raw.split(";"):
        if part.strip().startswith("dur="):
            return float(part.strip()[4:])
    raise SystemExit(f"error: no Server-Timing header ({raw!r})")


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
            for page in PAGES:
                times, size = [], 0
                for _ in range(max(1, a.runs)):
                    t0 = time.perf_counter()
                    r = client.get(url + page)
                    wall = (time.perf_counter() - t0) * 1000
                    if r.status_code != 200:
                        raise SystemExit(f"error: {page}: HTTP {r.status_code}")
                    times.append((server_ms(dict(r.headers)), wall))
                    size = len(r.content)
                first = times[0][0]
                later = [t for t, _ in times[1:]] or [first]
                rows.append({"page": page, "first_ms": round(first, 1),
                             "median_ms": round(statistics.median(later), 1),
                             "max_ms": round(max(later), 1), "bytes": size,
                             "ok": first <= TARGET_MS and max(later) <= TARGET_MS})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"corpus {corpus} ({os.cpu_count()} cores); server time in ms, target ≤ {TARGET_MS:.0f}")
    print(f"{'page':<16}{'first':>9}{'median':>9}{'max':>9}{'KB':>9}  result")
    for r in rows:
        print(f"{r['page']:<16}{r['first_ms']:>9}{r['median_ms']:>9}{r['max_ms']:>9}"
              f"{r['bytes'] // 1024:>9}  {'PASS' if r['ok'] else 'MISS'}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
