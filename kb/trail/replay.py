"""Replay: the operation log -> the current graph, deterministic and idempotent.

:func:`load` is the one reader every view and write uses::

    g = load(kb)            # Graph: nodes, edges, problems
    g.nodes["n3f9a1c0e5b"].version

Operations are applied in :func:`sort_key` order (logical clock, then id; see
:mod:`kb.trail.log`); an id seen twice counts once. An operation that cannot apply (its node is unknown, a move
would make a cycle — possible once two branches are merged) is skipped and
reported as a :class:`LogProblem`, never a crash. After each recording (batch)
the digests of the topics it touched are re-synthesised (:mod:`kb.trail.digest`),
so full and incremental replays reach the same state.

The result is cached in ``.kb/trail-graph.marshal`` (never committed; plain
data in Python's marshal format, rebuilt when another Python wrote it): keyed by
every log file's path, size and mtime. When only files whose operations all
sort after the cached last one were added (the common case: a new recording),
only those are applied; otherwise the log is replayed from scratch.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from hashlib import blake2b
from operator import itemgetter
from pathlib import Path
from typing import Any

from kb.trail import log as oplog
from kb.trail.digest import synthesise
from kb.numbers import quoted
from kb.trail.model import (EDGE_KINDS, KINDS, LAST_EPOCH, MAX_DIGEST_HISTORY, MAX_NODES,
                            STATUSES, Edge, LogProblem, Node, clip, MAX_SUMMARY, MAX_TITLE,
                            node_row)

CACHE_NAME = "trail-graph.marshal"
CACHE_FORMAT = 8
_PY = sys.version


@dataclass
class Graph:
    """The replayed graph.

    ``nodes`` by id (merged-away nodes stay, with ``merged_into`` set);
    ``roots`` the ids without a parent in creation order; ``edges`` in log
    order; ``fps`` ingest fingerprint -> node id; ``problems`` the skipped
    entries and operations; ``ops`` the number of operations applied;
    ``last`` the :func:`sort_key` of the last operation; ``digest`` the XOR of
    :func:`op_digest` over the ids of the operations applied (order-free, so an
    incremental replay keeps it); ``clock`` the
    largest logical clock seen; ``seen`` the ids of the operations applied by
    this replay (idempotence; not cached: an incremental replay only applies
    operations sorting after ``last``, which cannot have been seen);
    ``sightings`` ``"<node id> <session>"`` for each ingested node and transcript
    session that yielded it (a session counts one hit per node, however often it is
    ingested); ``hidden`` the done leaves archived out of the live views because the
    graph passed ``max_nodes`` (computed by :func:`finish`); ``files`` the
    cache key (log file -> [size, mtime]).
    """

    nodes: dict[str, Node] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    fps: dict[str, str] = field(default_factory=dict)
    sightings: set[str] = field(default_factory=set)
    problems: list[LogProblem] = field(default_factory=list)
    ops: int = 0
    last: str = ""
    digest: int = 0
    clock: int = 0
    seen: set[str] = field(default_factory=set)
    hidden: set[str] = field(default_factory=set)
    files: dict[str, list[int]] = field(default_factory=dict)
    _dirty: set[str] = field(default_factory=set)

    # -- lookups -------------------------------------------------------------------
    def resolve(self, nid: str) -> Node | None:
        """The node ``nid`` names, following merges; None if unknown."""
        n = self.nodes.get(nid)
        for _ in range(64):  # bounded: merge chains are short
            if n is None or n.merged_into is None:
                return n
            n = self.nodes.get(n.merged_into)
        return n

    def live(self, n: Node) -> bool:
        """Shown in the live views: not merged away, not archived, not over maxNodes."""
        return n.merged_into is None and not n.archived and n.id not in self.hidden

    def ancestors(self, nid: str) -> list[Node]:
        """The node's parents up to its root (nearest first)."""
        out: list[Node] = []
        n = self.nodes.get(nid)
        guard = len(self.nodes) + 1
        while n is not None and n.parent is not None and guard:
            n = self.nodes.get(n.parent)
            if n is not None:
                out.append(n)
            guard -= 1
        return out

    def topic_of(self, nid: str) -> Node | None:
        """The nearest topic at or above ``nid``."""
        n = self.nodes.get(nid)
        if n is not None and n.kind == "topic":
            return n
        return next((a for a in self.ancestors(nid) if a.kind == "topic"), None)

    # -- applying ------------------------------------------------------------------
    def touch(self, n: Node, op: dict[str, Any], bump: bool = True) -> None:
        """Record that ``op`` changed ``n`` (version, updated by/at, its topic's digest)."""
        if bump:
            n.version += 1
        n.updated_by = op.get("actor") or n.updated_by
        n.updated_at = op.get("at") or n.updated_at
        self._mark(n.id)

    def _mark(self, nid: str) -> None:
        # The topic above is found once per batch (end_batch), not once per operation.
        self._dirty.add(nid)

    def end_batch(self, at: str) -> None:
        """Re-synthesise the digests of the topics the batch touched."""
        if not self._dirty:
            return
        nodes = self.nodes
        # The topic above each touched node, one walk up per node with the walks shared
        # (memo: node id -> its topic id or None); bounded by the graph's size.
        memo: dict[str, str | None] = {}
        topics: set[str] = set()
        for nid in self._dirty:
            path: list[str] = []
            found: str | None = None
            n = nodes.get(nid)
            guard = len(nodes) + 1
            while n is not None and guard:
                if n.id in memo:
                    found = memo[n.id]
                    break
                path.append(n.id)
                if n.kind == "topic":
                    found = n.id
                    break
                n = nodes.get(n.parent) if n.parent is not None else None
                guard -= 1
            for p in path:
                memo[p] = found
            if found is not None:
                topics.add(found)
        for tid in sorted(topics):
            t = nodes[tid]
            if t.digest_manual:
                continue
            text = synthesise(nodes, t)
            if text != t.digest:
                set_digest(t, text, "template", at)
        self._dirty.clear()


def set_digest(t: Node, text: str, source: str, at: str) -> None:
    """Set a topic's digest and keep it in its history (≤ 20 versions, newest last)."""
    t.digest = text
    t.digest_revision += 1
    t.digest_history.append({"revision": t.digest_revision, "text": text, "source": source,
                             "at": at})
    del t.digest_history[:-MAX_DIGEST_HISTORY]


def sort_key(op: dict[str, Any]) -> str:
    """The replay order of an operation: its logical clock, then its id.

    ``lc`` is a Lamport clock: a recording takes one more than the largest
    clock in the log it replayed under the write lock, so everything a writer
    saw sorts before what it writes, even within one second; concurrent
    recordings on two branches are ordered by clock, then time, then the
    random part of the batch id — the same on every machine.
    """
    lc = op.get("lc")
    return f"{lc if isinstance(lc, int) and lc >= 0 else 0:012d} {op['id']}"


# -- operations ----------------------------------------------------------------------


def _node(g: Graph, op: dict[str, Any], key: str = "node") -> Node:
    n = g.resolve(op[key])
    if n is None:
        raise _Skip(f"unknown node {op[key]}")
    return n


class _Skip(Exception):
    pass


def _would_cycle(g: Graph, nid: str, parent: str | None) -> bool:
    if parent is None:
        return False
    if parent == nid:
        return True
    return any(a.id == nid for a in g.ancestors(parent))


def _detach(g: Graph, n: Node) -> None:
    if n.parent is None:
        if n.id in g.roots:
            g.roots.remove(n.id)
    else:
        p = g.nodes.get(n.parent)
        if p is not None and n.id in p.children:
            p.children.remove(n.id)
            g._mark(p.id)


def _attach(g: Graph, n: Node, parent: str | None) -> None:
    n.parent = parent
    if parent is None:
        g.roots.append(n.id)
    else:
        g.nodes[parent].children.append(n.id)
        g._mark(parent)


def _op_add(g: Graph, op: dict[str, Any]) -> str | None:
    d = op["node"]
    nid = d["id"]
    nodes = g.nodes
    fp = d.get("fp") or ""
    session = op.get("session")
    have = nodes.get(nid) or (nodes.get(g.fps[fp]) if fp and fp in g.fps else None)
    if have is not None:
        # The same node recorded twice (e.g. ingested on two branches): a hit, unless
        # the same transcript session already saw it (see _op_hit).
        _sighting(g, have, session)
        return None
    bad = _unknown_value(d.get("kind"), KINDS, "kind") or \
        _unknown_value(d.get("status") or "open", STATUSES, "status")
    if bad is not None or not isinstance(d.get("title"), str):
        return bad or "a node needs a title (text)"
    parent = d.get("parent")
    if parent is not None:
        pn = nodes.get(parent)
        if pn is None or pn.merged_into is not None:
            pn = g.resolve(parent)
            if pn is None:
                return f"unknown parent {parent}"
        parent = pn.id
    at = op.get("at", "")
    actor = op.get("actor", "")
    title = d["title"]
    if len(title) > MAX_TITLE:
        title = clip(title, MAX_TITLE)
    summary = d.get("summary") or ""
    if len(summary) > MAX_SUMMARY:
        summary = summary[:MAX_SUMMARY]
    tags = d.get("tags")
    refs = d.get("refs")
    # Positional, in field order (one call per added node of a cold replay).
    n = Node(nid, d["kind"], title, summary, d.get("status") or "open", None, [],
             list(tags) if tags else [], list(refs) if refs else [], actor, at, actor, at,
             1, 1, False, "", False, 0, [], None, 0, 0, None, fp, d.get("source") or "",
             len(nodes))
    nodes[nid] = n
    if fp:
        g.fps[fp] = nid
    if session:
        g.sightings.add(f"{nid} {session}")
    _attach(g, n, parent)  # marks the parent, whose topic is the new node's
    if n.kind == "topic":
        g._dirty.add(nid)  # its own digest ("no leaves yet")
    return None


def _unknown_value(value: Any, allowed: tuple[str, ...], what: str) -> str | None:
    """A log problem for a ``what`` (a node's kind or status, a link's kind) that kb's
    commands never write (they refuse it: kb.trail.model.check_choice), else None. Written by
    hand, `wizard` nodes and `bogus` statuses were applied, and `kb trail check` said
    nothing; the views then showed `? n… topic:` rows."""
    if isinstance(value, str) and value in allowed:
        return None
    shown = quoted(str(value), limit=30, quote=False) if isinstance(value, str) else type(value).__name__
    return f"unknown {what} {shown} (accepted: {' '.join(allowed)})"


def _op_link(g: Graph, op: dict[str, Any]) -> str | None:
    bad = _unknown_value(op.get("kind"), EDGE_KINDS, "link kind")
    if bad is not None:
        return bad
    a, b = _node(g, op, "from"), _node(g, op, "to")
    g.edges.append(Edge(id=op["id"], src=a.id, dst=b.id, kind=op["kind"], note=op.get("note") or "",
                        by=op.get("actor", ""), at=op.get("at", "")))
    g.touch(a, op)
    g._mark(b.id)
    return None


_SETTABLE = ("status", "title", "summary", "tags", "refs")


def _op_set(g: Graph, op: dict[str, Any]) -> str | None:
    n = _node(g, op)
    for k, v in op["fields"].items():  # every field checked before any is set
        if k not in _SETTABLE:
            return f"field {k!r} cannot be set"
        if k == "status" and (bad := _unknown_value(v, STATUSES, "status")) is not None:
            return bad
        if k == "title" and not isinstance(v, str):
            return "a node's title is text"
    for k, v in op["fields"].items():
        if k == "title":
            v = clip(v, MAX_TITLE)
        elif k == "summary":
            v = (v or "")[:MAX_SUMMARY]
        elif k in ("tags", "refs"):
            v = list(v)
        setattr(n, k, v)
    g.touch(n, op)
    return None


def _op_move(g: Graph, op: dict[str, Any]) -> str | None:
    n = _node(g, op)
    parent = op.get("parent")
    if parent is not None:
        pn = g.resolve(parent)
        if pn is None:
            return f"unknown parent {parent}"
        parent = pn.id
    if _would_cycle(g, n.id, parent):
        return f"moving {n.id} under {parent} would make a cycle"
    g._mark(n.id)
    _detach(g, n)
    _attach(g, n, parent)
    g.touch(n, op)
    return None


def _op_merge(g: Graph, op: dict[str, Any]) -> str | None:
    src, dst = _node(g, op), _node(g, op, "into")
    if src.id == dst.id:
        return None
    if _would_cycle(g, src.id, dst.id):
        return f"{dst.id} is inside {src.id}"
    for cid in list(src.children):
        c = g.nodes[cid]
        src.children.remove(cid)
        c.parent = dst.id
        dst.children.append(cid)
    for e in g.edges:
        if e.src == src.id:
            e.src = dst.id
        if e.dst == src.id:
            e.dst = dst.id
    g._mark(src.id)
    _detach(g, src)
    src.parent = dst.id  # stays addressable: node/path of a merged id lead to dst
    src.merged_into = dst.id
    dst.hits += src.hits
    for t in src.tags:
        if t not in dst.tags:
            dst.tags.append(t)
    for r in src.refs:
        if r not in dst.refs:
            dst.refs.append(r)
    g.touch(src, op)
    g.touch(dst, op)
    return None


def _op_promote(g: Graph, op: dict[str, Any]) -> str | None:
    n = _node(g, op)
    n.kind = "topic"
    g.touch(n, op)
    g._dirty.add(n.id)
    return None


def _op_archive(g: Graph, op: dict[str, Any]) -> str | None:
    n = _node(g, op)
    if op.get("unarchive"):
        n.archived = False
    else:
        n.archived = True
        n.status = "done" if n.status in ("open", "active") else n.status
    g.touch(n, op)
    return None


def _op_digest(g: Graph, op: dict[str, Any]) -> str | None:
    n = _node(g, op)
    if op.get("auto"):
        n.digest_manual = False
        text = synthesise(g.nodes, n)
        set_digest(n, text, "template", op.get("at", ""))
    else:
        n.digest_manual = True
        set_digest(n, op["text"], "manual", op.get("at", ""))
    g.touch(n, op)
    return None


def _op_rollback(g: Graph, op: dict[str, Any]) -> str | None:
    n = _node(g, op)
    back = int(op["version"])
    if not 0 <= back < len(n.digest_history):
        return f"{n.id} has no digest version {back}"
    entry = n.digest_history[-1 - back]
    n.digest_manual = True
    set_digest(n, entry["text"], f"rollback:{entry['revision']}", op.get("at", ""))
    g.touch(n, op)
    return None


def _op_assign(g: Graph, op: dict[str, Any]) -> str | None:
    n = _node(g, op)
    owner = op.get("owner")
    until = 0
    if owner:
        raw = op.get("until") or 0
        try:
            until = int(raw)
        except (TypeError, ValueError, OverflowError):  # text, a list; inf
            until = -1
        if not 0 <= until <= LAST_EPOCH or isinstance(raw, bool):
            return (f"lease end {quoted(str(raw), limit=30, quote=False)} is no time kb reads "
                    "(whole epoch seconds up to 9999-12-31)")
    n.owner = owner
    n.lease_until = until
    n.lease_epoch += 1
    g.touch(n, op)
    return None


def _sighting(g: Graph, n: Node, session: Any) -> None:
    """``n`` was seen again: its ``hits`` grows once per transcript session (an operation
    without a session, as older logs and hand-written ones have, always counts)."""
    if session:
        key = f"{n.id} {session}"
        if key in g.sightings:
            return
        g.sightings.add(key)
    n.hits += 1


def _op_hit(g: Graph, op: dict[str, Any]) -> str | None:
    session = op.get("session")
    for nid in op["nodes"]:
        n = g.resolve(nid)
        if n is not None:
            _sighting(g, n, session)
    return None


_APPLY = {"add": _op_add, "link": _op_link, "set": _op_set, "move": _op_move,
          "merge": _op_merge, "promote": _op_promote, "archive": _op_archive,
          "digest": _op_digest, "rollback": _op_rollback, "assign": _op_assign,
          "handoff": _op_assign, "hit": _op_hit}


def op_digest(oid: str) -> int:
    """A 64-bit hash of one operation id (BLAKE2b): :attr:`Graph.digest` XORs them, so two
    logs holding different sets of operations have different digests whatever their order
    (with odds of 2**-64 against), and TRAIL.md's renders of them differ."""
    return int.from_bytes(blake2b(oid.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")


def apply_ops(g: Graph, ops: list[dict[str, Any]]) -> None:
    """Apply ``ops`` to ``g`` in place; returns nothing, raises nothing.

    ``ops`` are parsed log records (dicts as :mod:`kb.trail.log` reads them, each with
    ``id``, ``op`` and the operation's fields; optional ``_k`` its :func:`sort_key`,
    ``_src`` its (path, line)), already in replay order. Each batch is closed with
    :meth:`Graph.end_batch`. An operation id seen before counts once; one that cannot
    apply becomes a :class:`LogProblem` in ``g.problems``. Used by replay and by a
    recording (which applies its own operations before writing them). One flat loop: it
    runs once per operation of a cold replay (50,000 and more)."""
    seen = g.seen
    problems = g.problems
    batch = None
    at = ""
    last, clock, count, digest = g.last, g.clock, g.ops, g.digest
    for op in ops:
        oid = op["id"]
        b = oid.rsplit("-", 1)[0]
        if b != batch and batch is not None:
            g.end_batch(at)
        batch, at = b, op.get("at", "")
        if oid in seen:
            continue
        seen.add(oid)
        count += 1
        digest ^= op_digest(oid)
        key = op.get("_k") or sort_key(op)
        if key > last:
            last = key
        lc = op.get("lc")
        if isinstance(lc, int) and lc > clock:
            clock = lc
        name = op["op"]
        fn = _APPLY.get(name)
        if fn is None:
            src = op.get("_src", ("?", 0))
            problems.append(LogProblem(src[0], src[1], f"unknown operation {name!r}; skipped"))
            continue
        try:
            msg = fn(g, op)
        except _Skip as exc:
            msg = str(exc)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            msg = f"malformed {name} operation ({type(exc).__name__}: {exc})"
        if msg:
            src = op.get("_src", ("?", 0))
            problems.append(LogProblem(src[0], src[1], f"{name} {oid}: {msg}; skipped"))
    g.last, g.clock, g.ops, g.digest = last, clock, count, digest
    if batch is not None:
        g.end_batch(at)


def finish(g: Graph, max_nodes: int = MAX_NODES) -> None:
    """Compute ``hidden``: past ``max_nodes`` live nodes, the oldest done leaves leave the live views."""
    g.hidden = set()
    live = [n for n in g.nodes.values() if n.merged_into is None and not n.archived]
    excess = len(live) - max_nodes
    if excess <= 0:
        return
    leaves = [n for n in live if n.status == "done" and not n.children and n.kind != "goal"]
    leaves.sort(key=lambda n: (n.updated_at, n.seq))
    g.hidden = {n.id for n in leaves[:excess]}


# -- loading and the cache -------------------------------------------------------------


def replay_files(root: Path, rels: list[str], g: Graph | None = None) -> Graph:
    """Replay the named log files (KB-relative) into ``g`` (a new graph by default)."""
    g = g or Graph()
    ops = oplog.read_files(root, rels, g.problems)
    _sort(ops)
    apply_ops(g, ops)
    return g


def _sort(ops: list[dict[str, Any]]) -> None:
    """Sort ``ops`` into replay order, each keeping its key as ``_k``."""
    for o in ops:  # sort_key, inlined (one call less per operation)
        lc = o.get("lc")
        o["_k"] = f"{lc if isinstance(lc, int) and lc >= 0 else 0:012d} {o['id']}"
    ops.sort(key=itemgetter("_k"))


def replay_blobs(files: dict[str, bytes]) -> Graph:
    """Replay log files given as bytes (KB-relative path -> bytes), e.g. read from a commit."""
    g = Graph()
    ops = oplog.parse_files([(rel, files[rel]) for rel in sorted(files)], g.problems)
    _sort(ops)
    apply_ops(g, ops)
    finish(g)
    return g


def kb_root(kb: Any) -> Path:
    """The folder of the KB that ``kb`` names, for reading its trail.

    ``kb``: a :class:`kb.repo.KnowledgeBase` (its ``root``), a path (str or PathLike)
    inside a KB, or None (the current directory). A path leads to the nearest folder at
    or above it holding ``kb.toml``, the rule of :func:`kb.repo.find_root`, here without
    importing kb.repo, reading kb.toml or asking git (a view reads only the log files of
    the working tree; this keeps ~20 ms of imports and a git process out of every view).
    Raises what :func:`kb.repo.open_kb` raises when no KB is there (NotAKnowledgeBase).
    """
    if kb is not None and not isinstance(kb, (str, os.PathLike)):
        return kb.root
    start = Path(kb) if kb else Path.cwd()
    if start.exists():
        cur = (start if start.is_dir() else start.parent).resolve()
        for d in (cur, *cur.parents):
            if (d / "kb.toml").is_file():
                return d
    from kb.repo import open_kb  # no KB here: its error (or, after a race, its root)

    return open_kb(start).root


def load(kb: Any, *, use_cache: bool = True, max_nodes: int = MAX_NODES) -> Graph:
    """See :func:`_load`; the cyclic garbage collector is paused meanwhile (replay and the
    cache allocate hundreds of thousands of objects and no cycles: the collector's passes
    over them cost more than the replay itself)."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        return _load(kb, use_cache=use_cache, max_nodes=max_nodes)
    finally:
        if was:
            gc.enable()


def _load(kb: Any, *, use_cache: bool = True, max_nodes: int = MAX_NODES) -> Graph:
    """The current graph of the KB ``kb`` (a :class:`kb.repo.KnowledgeBase`, or the KB's
    folder as a :class:`~pathlib.Path`, e.g. from :func:`kb_root`).

    Reads the log files in the working tree (committed or not), through the
    cache when it is still valid. Never raises for bad log content; see
    ``Graph.problems``.
    """
    root: Path = kb if isinstance(kb, Path) else kb.root
    files = oplog.list_files(root)
    key = {f.rel: [f.size, f.mtime] for f in files}
    cache = root / ".kb" / CACHE_NAME
    g: Graph | None = None
    if use_cache:
        g = _read_cache(cache)
        if g is not None:
            if g.files == key:
                finish(g, max_nodes)
                return g
            new = [r for r in key if r not in g.files]
            g = _extend(root, g, new) if all(g.files.get(r) == key.get(r) for r in g.files) \
                else None
    if g is None:
        g = replay_files(root, list(key))
    bad = oplog.symlinked(root)
    if bad and not any(p.path == bad for p in g.problems):
        g.problems.append(LogProblem(bad, 0, "a symbolic link: kb does not read the log "
                                             "through it"))
    g.files = key
    finish(g, max_nodes)
    if use_cache:
        _write_cache(cache, g)
    return g


def _extend(root: Path, g: Graph, new: list[str]) -> Graph | None:
    """Apply the files ``new`` to the cached ``g`` when every operation in them sorts after
    the last one applied (else None: replay from scratch)."""
    probs: list[LogProblem] = []
    ops = oplog.read_files(root, new, probs)
    _sort(ops)
    if ops and ops[0]["_k"] <= g.last:
        return None
    g.problems.extend(probs)
    apply_ops(g, ops)
    return g


def _read_cache(path: Path) -> Graph | None:
    """The cached graph, or None (absent, damaged, or written by another format or Python)."""
    import marshal

    try:
        data = marshal.loads(path.read_bytes())
        if data.get("format") != CACHE_FORMAT or data.get("python") != _PY:
            return None
        nodes = {}
        for row in data["nodes"]:
            n = Node(*row)
            nodes[n.id] = n
        g = Graph(nodes=nodes, roots=data["roots"],
                  edges=[Edge(*e) for e in data["edges"]],
                  problems=[LogProblem(*p) for p in data["problems"]], ops=data["ops"],
                  last=data["last"], digest=data["digest"], clock=data["clock"], files=data["files"])
        g.fps = data["fps"]
        g.sightings = set(data["sightings"])
        return g
    except (OSError, ValueError, EOFError, KeyError, TypeError, AttributeError):
        return None  # no cache, or a damaged one: replay


def _write_cache(path: Path, g: Graph) -> None:
    """Write the cache atomically (marshal: plain data only, read back ~10x faster than JSON)."""
    import marshal
    import tempfile  # here: a view with a valid cache never writes it

    data = {"format": CACHE_FORMAT, "python": _PY, "files": g.files, "ops": g.ops,
            "last": g.last, "digest": g.digest, "clock": g.clock, "roots": g.roots,
            "nodes": list(map(node_row, g.nodes.values())),
            "edges": [(e.id, e.src, e.dst, e.kind, e.note, e.by, e.at) for e in g.edges],
            "problems": [(p.path, p.line, p.message) for p in g.problems], "fps": g.fps,
            # a list: marshal sorts a set's items (deterministic output), ~10x slower
            "sightings": list(g.sightings)}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        gi = path.parent / ".gitignore"
        if not gi.exists():
            gi.write_text("*\n", encoding="utf-8")  # the cache is never committed
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trail-", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps(data, 2))  # version 2: no reference table, ~2x faster to write
        os.replace(tmp, path)
    except (OSError, ValueError):
        pass  # a cache: failing to write it costs the next reader a replay, nothing more


def topics_under(g: Graph, root: Node) -> list[Node]:
    """The live topics below ``root`` (not ``root`` itself) in pre-order, looking through
    goals, topics and steps: the trunk of :func:`trunk` and of TRAIL.md. Raises nothing."""
    out: list[Node] = []
    stack = [c for c in reversed(root.children)]
    guard = len(g.nodes) + 1
    while stack and guard:
        guard -= 1
        k = g.nodes.get(stack.pop())
        if k is None or not g.live(k):
            continue
        if k.kind == "topic":
            out.append(k)
        if k.kind in ("topic", "goal", "step"):
            stack.extend(reversed(k.children))
    return out
