#!/usr/bin/env python3
"""Generate an exploration-graph log for the benchmark (issue 15), deterministically.

    python benchmarks/gen_trail.py OUT_DIR --nodes 5000            # a 5,000-node graph
    python benchmarks/gen_trail.py OUT_DIR --ops 50000             # a 50,000-operation log

OUT_DIR becomes a git work tree holding a KB (``kb.toml``) and, under
``.explore-tree/ops/``, the log as kb writes it: one file per recording. The
mix follows real use: about a third of the recordings are single operations
by agents and people (with ``--ops``: 60% ``add`` of a topic — about one per
hundred nodes — or of a leaf under a topic, 25% ``set``, 8% ``link``, 4%
``move``, 3% ``assign``; with ``--nodes`` only adds), the rest are ingest
batches of 10–19 operations (a step under the goal and its thoughts, with
fingerprints and a session, as ``kb trail ingest`` writes them). Same arguments, same bytes
(seeded random, pinned times); the log is left uncommitted (kb reads the
working tree).
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

KINDS = ("question", "hypothesis", "evidence", "decision", "dead_end", "conclusion", "note",
         "action", "artifact", "step")
STATUSES = ("open", "active", "done", "abandoned")
EDGES = ("supports", "contradicts", "refines", "depends", "related")


def generate(out: Path, nodes: int | None, ops: int | None, seed: int = 1) -> dict:
    rnd = random.Random(seed)
    if out.exists():
        shutil.rmtree(out)
    (out / ".explore-tree" / "ops").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(out)], check=True)
    (out / "kb.toml").write_text("[kb]\n", encoding="utf-8")
    (out / ".gitignore").write_text(".kb/\n", encoding="utf-8")
    ids: list[str] = []
    topics: list[str] = []
    records: list[list[dict]] = []
    n_ops = 0
    t = [0]

    def node_id() -> str:
        return "n%010x" % rnd.getrandbits(40)

    def add(kind: str, parent: str | None, status: str = "open") -> dict:
        nid = node_id()
        ids.append(nid)
        if kind == "topic":
            topics.append(nid)
        return {"op": "add", "node": {"id": nid, "kind": kind, "parent": parent, "status": status,
                                      "title": f"{kind} {len(ids)}: generated thought about "
                                               f"component {rnd.randrange(500)}",
                                      "summary": "Generated for the benchmark. " * rnd.randrange(4),
                                      "tags": [], "refs": []}}

    def more() -> bool:
        return (nodes is not None and len(ids) < nodes) or (ops is not None and n_ops < ops)

    goal = add("goal", None, "active")
    records.append([goal])
    n_ops += 1
    while more():
        if rnd.random() < 0.35:  # a single recording
            r = rnd.random()
            if nodes is not None or r < 0.6 or len(ids) < 50:
                if rnd.random() < 0.03 or not topics:  # about one topic per 100 nodes
                    batch = [add("topic", goal["node"]["id"])]
                else:
                    parent = rnd.choice(topics) if topics else goal["node"]["id"]
                    batch = [add(rnd.choice(KINDS), parent, rnd.choice(STATUSES))]
            elif r < 0.85:
                batch = [{"op": "set", "node": rnd.choice(ids),
                          "fields": {"status": rnd.choice(STATUSES)}}]
            elif r < 0.93:
                batch = [{"op": "link", "from": rnd.choice(ids), "to": rnd.choice(ids),
                          "kind": rnd.choice(EDGES), "note": ""}]
            elif r < 0.97:
                batch = [{"op": "move", "node": rnd.choice(ids[1:]),
                          "parent": rnd.choice(topics) if topics else None}]
            else:
                batch = [{"op": "assign", "node": rnd.choice(topics or ids),
                          "owner": f"agent-{rnd.randrange(5)}", "until": 1796119200 + 1800}]
        else:  # an ingest batch: a step under the goal with its thoughts (as kb trail ingest)
            parent = goal["node"]["id"]
            want = rnd.randrange(9, 19)
            if nodes is not None:
                want = min(want, nodes - len(ids) - 1)
            step = add("step", parent, "done")
            batch = [step] + [add(rnd.choice(KINDS[:6]), step["node"]["id"], rnd.choice(STATUSES))
                              for _ in range(max(want, 0))]
            session = "s%08x" % rnd.getrandbits(32)
            for op in batch:  # as ingest writes them: a fingerprint and the session
                op["node"].update(fp="%020x" % rnd.getrandbits(80), source="extractor")
                op["session"] = session
        records.append(batch)
        n_ops += len(batch)
        if ops is not None and n_ops > ops:
            over = n_ops - ops
            records[-1] = batch[:len(batch) - over]
            n_ops = ops
    files = 0
    for i, batch in enumerate(records):
        if not batch:
            continue
        t[0] += 1
        sec = t[0]
        stamp = f"2026-11-{1 + sec // 86400:02d}T{sec % 86400 // 3600:02d}:" \
                f"{sec % 3600 // 60:02d}:{sec % 60:02d}Z"
        bid = stamp.replace("-", "").replace(":", "") + "-%012x" % rnd.getrandbits(48)
        month = out / ".explore-tree" / "ops" / "2026-11"
        month.mkdir(exist_ok=True)
        lines = []
        for j, op in enumerate(batch):
            rec = {"v": 1, "id": f"{bid}-{j:04d}", "lc": i + 1, "at": stamp, "actor": "bench"}
            rec.update(op)
            lines.append(json.dumps(rec, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
        (month / f"{bid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        files += 1
    return {"files": files, "operations": n_ops, "nodes": len(ids)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--nodes", type=int)
    ap.add_argument("--ops", type=int)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if (a.nodes is None) == (a.ops is None):
        ap.error("give --nodes N or --ops N")
    print(json.dumps(generate(a.out, a.nodes, a.ops, a.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
