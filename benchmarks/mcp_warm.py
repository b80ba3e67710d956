#!/usr/bin/env python3
"""The warm MCP server (issue 14): one ``kb mcp`` process, many tool calls.

    python benchmarks/mcp_warm.py KB_DIR ROUNDS KB_CMD...

Starts ``KB_CMD mcp`` in KB_DIR over stdio with the official SDK's client,
times the first read call (imports, index refresh) and then ROUNDS read calls
(``show`` of a problem, ``find``) and ROUNDS write calls (``problem_plan`` on
one card: one transaction and one commit each), from the client's side of the
pipe. Targets on the 7.5k corpus: a read ≤ 50 ms after the first, a write ≤
0.3 s. The last stdout line is the summary run.py shows under its table;
``--json`` prints the figures as JSON instead. The KB is written to: run it on a
clone (run.py does).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

READ_MS = 50.0
WRITE_S = 0.3


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
        writes = [await timed("problem_plan", {"id": "q1", "next_step": f"bench step {i}"})
                  for i in range(rounds)]
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
          f"({'PASS' if w <= WRITE_S else 'MISS'} ≤ {WRITE_S:g} s); {fig['rounds']} calls each")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
