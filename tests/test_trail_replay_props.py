"""Replay properties (issue 15): the order files are found or merged in, duplicated files and
incremental extension never change the replayed graph."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from kb.trail.replay import Graph, _extend, finish, replay_blobs


def _log(seed: int, n_batches: int) -> dict[str, bytes]:
    """A random but valid-looking log: adds, sets, moves (some making cycles), links, merges."""
    rnd = random.Random(seed)
    ids: list[str] = []
    files: dict[str, bytes] = {}
    for b in range(n_batches):
        stamp = f"20261201T{b // 3600:02d}{b // 60 % 60:02d}{b % 60:02d}Z"
        bid = f"{stamp}-{rnd.getrandbits(48):012x}"
        ops = []
        for j in range(rnd.randrange(1, 4)):
            r = rnd.random()
            if r < 0.5 or len(ids) < 3:
                nid = f"n{rnd.getrandbits(40):010x}"
                kind = rnd.choice(["topic", "question", "hypothesis", "dead_end", "conclusion"])
                op = {"op": "add", "node": {"id": nid, "kind": kind, "title": f"t{nid}",
                                            "parent": rnd.choice(ids + [None]) if ids else None}}
                ids.append(nid)
            elif r < 0.7:
                op = {"op": "set", "node": rnd.choice(ids),
                      "fields": {"status": rnd.choice(["open", "done", "abandoned"])}}
            elif r < 0.8:
                op = {"op": "move", "node": rnd.choice(ids), "parent": rnd.choice(ids)}
            elif r < 0.9:
                op = {"op": "link", "from": rnd.choice(ids), "to": rnd.choice(ids),
                      "kind": "contradicts"}
            else:
                op = {"op": "merge", "node": rnd.choice(ids), "into": rnd.choice(ids)}
            # Concurrent branches: clocks repeat, so the id decides between them.
            op.update(v=1, id=f"{bid}-{j:04d}", lc=b // 2, at=stamp, actor="a")
            ops.append(json.dumps(op))
        files[f".explore-tree/ops/2026-12/{bid}.jsonl"] = ("\n".join(ops) + "\n").encode()
    return files


def _state(g: Graph) -> str:
    return json.dumps({"n": [n.to_json() for n in g.nodes.values()], "r": g.roots,
                       "e": [e.to_json() for e in g.edges],
                       "p": sorted(p.format() for p in g.problems),
                       # TRAIL.md's header: the count, the last operation and the ids' digest
                       "o": [g.ops, g.last, g.digest]}, sort_keys=True)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), cut=st.integers(0, 40))
def test_replay_is_order_free_idempotent_and_incremental(seed: int, n: int, cut: int) -> None:
    files = _log(seed, n)
    whole = _state(replay_blobs(files))
    names = list(files)
    random.Random(seed).shuffle(names)
    assert _state(replay_blobs({k: files[k] for k in names})) == whole
    # A file seen twice (copied under another folder) counts once.
    dup = dict(files)
    first = sorted(files)[0]
    dup[first.replace("2026-12", "2027-01")] = files[first]
    assert _state(replay_blobs(dup)) == whole
    # Extending a replay of the older files by the newer ones gives the same graph.
    order = sorted(files)
    older, newer = order[:min(cut, len(order))], order[min(cut, len(order)):]
    g = replay_blobs({k: files[k] for k in older})
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        for rel in newer:
            p = Path(d) / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(files[rel])
        ext = _extend(Path(d), g, newer)
    assert ext is not None  # newer files only: the extension applies
    finish(ext)
    assert _state(ext) == whole


def test_the_log_digest_tells_apart_logs_that_end_alike() -> None:
    """Two logs with as many operations and one last operation but different ones before
    it (three clones' merges) have different digests: their TRAIL.md renders differ."""
    files = _log(7, 12)
    order = sorted(files)
    size = {k: files[k].count(b"\n") for k in order[:-1]}  # the last file stays in both
    x, y = next((x, y) for x in size for y in size if x < y and size[x] == size[y])
    a = replay_blobs({k: files[k] for k in order if k != x})
    b = replay_blobs({k: files[k] for k in order if k != y})
    assert (a.ops, a.last) == (b.ops, b.last) and a.digest != b.digest
    both = replay_blobs(files)
    assert both.digest not in (a.digest, b.digest, 0)
