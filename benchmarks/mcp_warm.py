#!/usr/bin/env python3
"""The warm MCP server (issue 14): one ``kb mcp`` process, many tool calls.

    python benchmarks/mcp_warm.py KB_DIR ROUNDS KB_CMD...

Starts ``KB_CMD mcp`` in KB_DIR over stdio with the official SDK's client,
times the first read call (imports, index refresh) and then ROUNDS read calls
(``show`` of a problem, ``find``) and ROUNDS write calls (``problem_plan`` on
one card: one transaction and one commit each), from the client's side of the
pipe. Targets on the 7.5k corpus: a read ≤ 50 ms after the first, a write ≤
0.3 s. On Linux it also reports the CPU time of a write: the server's own and
that of the git processes it ran (``/proc``), which depends far less on the
machine's load than the wall time. The last stdout line is the summary run.py
shows under its table; ``--json`` prints the figures as JSON instead. The KB is
written to: run it on a clone (run.py does).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from typing import Any, Optional

READ_MS = 50.0
WRITE_S = 0.3


def server_cpu() -> Optional[float]:
    """CPU seconds of this process's children (the server) and of the processes they
    waited for (git), from /proc (Linux); None elsewhere."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total, found = 0, False
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # ppid; then utime stime cutime cstime
            total += sum(int(x) for x in fields[11:15])
            found = True
    return total / tick if found else None


async def session(kb_dir: str, rounds: int, kb_cmd: list[str]) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=kb_cmd[0], args=[*kb_cmd[1:], "mcp"], cwd=kb_dir)
    out: dict[str, Any] = {"rounds": rounds}
    async with Client(params) as c:

        async def timed(name: str, args: dict[str, Any]) -> float:
            t0 = time.perf_counter()
            res = await c.call_tool(name, args)
            dt = time.perf_counter() - t0
            if res.is_error:
                raise SystemExit(f"{name} failed: {res.content[0].text}")
            return dt

        out["first_read_s"] = await timed("show", {"id": "q1"})
        reads = [await timed("show", {"id": f"q{1 + i % 50}"}) for i in range(rounds)]
        finds = [await timed("find", {"text": f"q{1 + i}"}) for i in range(rounds)]
        await timed("problem_plan", {"id": "q1", "next_step": "bench warm-up"})
        cpu0 = server_cpu()
        writes = [await timed("problem_plan", {"id": "q1", "next_step": f"bench step {i}"})
                  for i in range(rounds)]
        cpu1 = server_cpu()
    if cpu0 is not None and cpu1 is not None:
        out["write_cpu_ms"] = (cpu1 - cpu0) / rounds * 1000
    out["read_ms"] = {"median": statistics.median(reads) * 1000, "max": max(reads) * 1000}
    out["find_ms"] = {"median": statistics.median(finds) * 1000, "max": max(finds) * 1000}
    out["write_s"] = {"median": statistics.median(writes), "max": max(writes)}
    return out


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    argv = [a for a in argv if a != "--json"]
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    kb_dir, rounds, kb_cmd = argv[0], int(argv[1]), argv[2:]
    fig = asyncio.run(session(kb_dir, rounds, kb_cmd))
    if as_json:
        print(json.dumps(fig, indent=2))
        return 0
    r, w = fig["read_ms"]["median"], fig["write_s"]["median"]
    print(f"first read {fig['first_read_s']:.2f} s; then show median {r:.1f} ms "
          f"({'PASS' if r <= READ_MS else 'MISS'} ≤ {READ_MS:g} ms), find median "
          f"{fig['find_ms']['median']:.1f} ms; write median {w:.3f} s "
          f"({'PASS' if w <= WRITE_S else 'MISS'} ≤ {WRITE_S:g} s)"
          + (f", {fig['write_cpu_ms']:.0f} ms CPU (server and git)" if "write_cpu_ms" in fig else "")
          + f"; {fig['rounds']} calls each")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
