"""The write operations of the exploration graph (``kb trail add|link|set|…``).

Each operation is one recording: under kb's write lock it replays the log
(:func:`kb.trail.replay.load`), checks its input, compare-and-swap
(``expect_version``) and write scope, builds its operations, applies them to
the graph in memory (an operation that would not apply is refused), and
writes them as one new log file through :class:`kb.ops.transaction.Transaction`
— the same write path as ``kb hyp add`` — so a recording is one commit that
touches only that file (``no_commit=True`` leaves it uncommitted)::

    from kb.trail.ops import add
    res = add(kb, kind="hypothesis", title="Tool order changes the prefix", parent="n3f9a1c0e5b")
    res.ids, res.commit, res.nodes[0]["version"]

Errors (nothing is written): :class:`kb.errors.UsageError` (exit 2) for an
unknown kind/status/edge kind; :class:`kb.trail.model.TrailError` (exit 1)
with ``code`` ``NOT_FOUND``, ``OUT_OF_SCOPE``, ``LEASE_EXPIRED``, ``LEASED``,
``CYCLE``, ``INVALID``; :class:`kb.trail.model.StaleRevision` (kind
``stale``, ``STALE_REVISION``) when ``expect_version`` is not the node's
version.

Write scopes (seed "写域"): with an ``actor``, a write may touch only a
subtree that actor's live lease covers (``OUT_OF_SCOPE``; its own lease
having run out: ``LEASE_EXPIRED``); creating a new root touches no subtree
and is allowed. ``role`` ``lead`` or ``curator`` is exempt; without an actor
there is no scope check (the recording is attributed to ``KB_OWNER``, else
``git config kb.owner``, else ``user.email``: :func:`kb.locks.default_owner`).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

from kb import clock
from kb.chars import hidden_char
from kb.errors import UsageError
from kb.numbers import quoted
from kb.ops.result import OpResult
from kb.trail import log as oplog
from kb.trail.model import (DEFAULT_LEASE_SECONDS, MAX_LEASE_SECONDS, EDGE_KINDS, KINDS, LEAF_ROOT_KINDS,
                            MAX_CHILDREN_PER_ADD, MAX_DIGEST, MAX_SUMMARY, MAX_TITLE,
                            PRIVILEGED_ROLES, STATUSES, Node, StaleRevision, TrailError,
                            check_choice, clean, clip)
from kb.text import control_char, visible
from kb.trail.replay import Graph, apply_ops, load

OnWait = Callable[[str], None]


class RecordResult(OpResult):
    """What a recording did: kb's one write result (:class:`kb.ops.result.OpResult`)
    whose details are ``nodes`` and ``batch``.

    ``op`` the ``Kb-Op`` value (``trail.add``); ``ids`` the node ids it created or
    changed (first: the main one, also ``id``); ``nodes`` those nodes after the
    write (``Node.to_json`` dicts); ``changes`` one line per change for people;
    ``commit`` the commit id (None with ``no_commit`` or when nothing was
    recorded); ``paths`` the repository paths written (the one log file); ``blobs``
    path -> git blob id; ``batch`` the recording's batch id; ``recovered`` paths
    an interrupted earlier kb write left that were rolled back first.
    """

    @property
    def nodes(self) -> list[dict[str, Any]]:
        """The nodes after the write (``Node.to_json`` dicts); [] when none."""
        return self.details.get("nodes", [])

    @property
    def batch(self) -> str | None:
        """The recording's batch id (its log file's name), or None."""
        return self.details.get("batch")


@dataclass
class Ctx:
    """What a builder sees: the graph under the lock, who acts, and the clock."""

    g: Graph
    actor: str
    explicit_actor: bool
    role: str | None
    at: str
    now: int
    ops: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    summary: str = ""
    taken: set[str] = field(default_factory=set)

    def node(self, nid: Any, what: str = "node") -> Node:
        """The live node ``nid`` names (merges followed), else TrailError NOT_FOUND."""
        if not isinstance(nid, str) or not nid:
            raise UsageError(f"give the {what}'s id")
        n = self.g.resolve(nid)
        if n is None:
            raise TrailError(f"no trail node {nid!r} (kb trail find lists nodes)", "NOT_FOUND",
                             id=nid)
        return n

    def new_id(self) -> str:
        """A fresh random node id (40 bits), unused in the graph and this recording."""
        for _ in range(100):
            nid = "n" + secrets.token_hex(5)
            if nid not in self.g.nodes and nid not in self.taken:
                self.taken.add(nid)
                return nid
        raise TrailError("could not draw an unused node id", "INVALID")  # pragma: no cover

    @property
    def privileged(self) -> bool:
        """Whether the actor's role (``lead``, ``curator``) may write outside its leases."""
        return self.role in PRIVILEGED_ROLES

    def cas(self, n: Node, expect_version: int | None) -> None:
        """Compare-and-swap: refuse when ``expect_version`` is given and not ``n.version``."""
        if expect_version is not None and int(expect_version) != n.version:
            raise StaleRevision(n, int(expect_version))

    def scope(self, n: Node | None) -> None:
        """Write scope: ``n``'s subtree must be covered by the actor's live lease."""
        if not self.explicit_actor or self.privileged or n is None:
            return
        expired: Node | None = None
        for m in [n, *self.g.ancestors(n.id)]:
            if m.owner == self.actor:
                if m.lease_until > self.now:
                    return
                expired = expired or m
        if expired is not None:
            raise TrailError(f"LEASE_EXPIRED: {self.actor}'s lease on {expired.id} ran out at "
                             f"{_iso(expired.lease_until)}; renew it (kb trail assign {expired.id} "
                             f"--owner {self.actor} --renew) — nothing was written",
                             "LEASE_EXPIRED", id=expired.id, lease_until=expired.lease_until)
        holder = next((m for m in [n, *self.g.ancestors(n.id)]
                       if m.owner and m.lease_until > self.now), None)
        who = f" (leased to {holder.owner} on {holder.id})" if holder else ""
        raise TrailError(f"OUT_OF_SCOPE: {n.id} is outside every live lease of {self.actor}{who}; "
                         "claim it first (kb trail assign) — nothing was written",
                         "OUT_OF_SCOPE", id=n.id, actor=self.actor)

    def emit(self, op: dict[str, Any], nid: str | None = None, change: str | None = None) -> None:
        """Queue log operation ``op``; record ``nid`` among the written ids (once) and
        ``change`` among the human change lines.
        """
        self.ops.append(op)
        if nid and nid not in self.ids:
            self.ids.append(nid)
        if change:
            self.changes.append(change)


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _resolve_kb(kb: Any) -> Any:
    from kb.repo import resolve_kb

    return resolve_kb(kb)


def record(kb: Any, op: str, build: Callable[[Ctx], None], *, actor: str | None = None,
           role: str | None = None, no_commit: bool = False, on_wait: OnWait | None = None,
           as_actor: str | None = None) -> RecordResult:
    """Run ``build`` under the write lock and record what it emitted as one log file.

    ``build(ctx)`` reads ``ctx.g``, raises to refuse, and calls ``ctx.emit``.
    Emitting nothing records nothing (no file, no commit). ``as_actor``
    attributes the recording without turning on write scopes (the ingest's
    ``extractor``).
    """
    from kb.locks import default_owner, validate_owner
    from kb.ops.transaction import Transaction

    k = _resolve_kb(kb)
    if role is not None:
        check_choice(role, PRIVILEGED_ROLES + ("agent",), "role")
    who = validate_owner(actor) if actor is not None else (
        as_actor or default_owner(k.top) or "unknown")
    bad = oplog.symlinked(k.root)
    if bad:
        raise TrailError(f"{k.prefix}{bad} is a symbolic link; kb does not write through it "
                         "— nothing was written", "INVALID")
    with Transaction(k, f"trail.{op}", no_commit=no_commit, on_wait=on_wait) as tx:
        g = load(k)
        now = clock.now()
        ctx = Ctx(g=g, actor=who, explicit_actor=actor is not None, role=role,
                  at=now.strftime("%Y-%m-%dT%H:%M:%SZ"), now=int(now.timestamp()))
        build(ctx)
        batch = None
        if ctx.ops:
            batch = oplog.new_batch_id(ctx.at)
            rel = oplog.batch_rel(batch)
            data = oplog.encode_batch(batch, ctx.at, who, ctx.ops, g.clock + 1)
            before = len(g.problems)
            parsed = []
            for i, line in enumerate(data.decode("utf-8").splitlines()):
                rec = json.loads(line)
                rec["_src"] = (rel, i + 1)
                parsed.append(rec)
            apply_ops(g, parsed)
            if len(g.problems) > before:  # never record what replay would skip
                raise TrailError(f"the operation does not apply: {g.problems[-1].message} — "
                                 "nothing was written", "INVALID")
            tx.write(rel, data)
            tx.ids.extend(ctx.ids[:20])
            tx.summary = f"trail {op}: {ctx.summary}" if ctx.summary else f"trail {op}"
    res = tx.result
    nodes = [g.nodes[i].to_json() for i in ctx.ids if i in g.nodes]
    paths = res.paths if res else []
    blobs = {p: tx.blob_id(data) for p in paths} if batch else {}
    return RecordResult(op=f"trail.{op}", id=ctx.ids[0] if ctx.ids else None,
                        ids=list(ctx.ids), paths=list(paths), blobs=blobs,
                        commit=res.commit if res else None, changes=list(ctx.changes),
                        recovered=list(tx.recovered), details={"nodes": nodes, "batch": batch},
                        tx=res)


# -- input checks -------------------------------------------------------------------


def _title(text: Any) -> str:
    """A title given by the caller: one line of text, at most MAX_TITLE characters (its
    white space runs made one space), with a character that shows and no bidirectional or
    other invisible control (:func:`kb.text.control_char`), as ``kb hyp add`` asks of a
    statement. Longer is a usage error, never a silent cut."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError("the title is empty; give one line of text")
    one = " ".join(clean(text).split())
    bad = control_char(one)  # a bidirectional override makes the title read as another
    if bad:
        raise UsageError(f"the title holds the control or invisible character {bad}; remove it "
                         "— nothing was written")
    if not visible(one):
        raise UsageError("the title is empty: it holds only characters that show nothing "
                         f"({hidden_char(one) or 'white space'}) — nothing was written")
    if len(one) > MAX_TITLE:
        raise UsageError(f"the title is {len(one)} characters; a title is at most {MAX_TITLE} "
                         "(put the rest in the summary) — nothing was written")
    return one


def _summary(text: Any, what: str = "summary") -> str:
    """A summary (or a link's note) given by the caller: at most MAX_SUMMARY characters,
    no bidirectional or other invisible control (lines and tabs are its own). Longer is a
    usage error, never a silent cut."""
    if text is None:
        return ""
    if not isinstance(text, str):
        raise UsageError(f"the {what} must be text")
    out = clean(text).strip()
    bad = control_char(out.replace("\n", " ").replace("\t", " ").replace("\r", " "))
    if bad:  # lines and tabs are a summary's; a bidirectional override is not
        raise UsageError(f"the {what} holds the control or invisible character {bad}; remove it "
                         "— nothing was written")
    if len(out) > MAX_SUMMARY:
        raise UsageError(f"the {what} is {len(out)} characters; a {what} is at most "
                         f"{MAX_SUMMARY} — nothing was written")
    return out


def _strings(values: Any, what: str) -> list[str]:
    if values is None:
        return []
    if isinstance(values, str):
        values = [v for v in values.split(",")]
    out = []
    for v in values:
        if not isinstance(v, str):
            raise UsageError(f"each of the {what} must be text")
        v = " ".join(v.split())
        bad = control_char(v)
        if bad:
            raise UsageError(f"{what} {quoted(v, limit=40)} holds the control or invisible "
                             f"character {bad}; remove it — nothing was written")
        if v and v not in out:
            out.append(v)
    return out


def _parent_id(parent: Any) -> str | None:
    if parent is None or parent == "":
        return None
    if not isinstance(parent, str):
        raise UsageError("the parent must be a node id")
    return parent


# -- operations ------------------------------------------------------------------------


def node_spec(ctx: Ctx, d: dict[str, Any], parent: str | None) -> dict[str, Any]:
    """The ``add`` payload of one node description (kind, title, summary, status, tags, refs)."""
    if not isinstance(d, dict):
        raise UsageError("each child must be an object with kind and title")
    kind = check_choice(str(d.get("kind") or ""), KINDS, "node kind")
    status = check_choice(str(d.get("status") or "open"), STATUSES, "status")
    spec = {"id": ctx.new_id(), "kind": kind, "title": _title(d.get("title")),
            "summary": _summary(d.get("summary")), "status": status, "parent": parent,
            "tags": _strings(d.get("tags"), "tags"), "refs": _strings(d.get("refs"), "refs")}
    if d.get("fp"):
        spec["fp"] = str(d["fp"])
    if d.get("source"):
        spec["source"] = str(d["source"])
    return spec


def add(kb: Any, *, kind: str, title: str, summary: str | None = None, parent: str | None = None,
        status: str = "open", tags: Iterable[str] | None = None, refs: Iterable[str] | None = None,
        children: list[dict[str, Any]] | None = None, expect_version: int | None = None,
        **kw: Any) -> RecordResult:
    """Add a node (under ``parent``, or a new root) with up to 20 ``children`` in one call.

    ``children`` are dicts with ``kind``, ``title`` and optionally
    ``summary``, ``status``, ``tags``, ``refs``. ``expect_version`` is checked
    against the parent. Keywords ``actor``, ``role``, ``no_commit``,
    ``on_wait`` as for :func:`record`.
    """
    children = list(children or [])
    if len(children) > MAX_CHILDREN_PER_ADD:
        raise UsageError(f"{len(children)} children: one add takes at most {MAX_CHILDREN_PER_ADD}")

    def build(ctx: Ctx) -> None:
        pid = _parent_id(parent)
        pn = ctx.node(pid, "parent") if pid else None
        if pn is not None:
            ctx.cas(pn, expect_version)
            ctx.scope(pn)
        elif expect_version is not None:
            raise UsageError("--expect-version needs --parent (it is checked against the parent)")
        spec = node_spec(ctx, {"kind": kind, "title": title, "summary": summary, "status": status,
                               "tags": tags, "refs": refs}, pn.id if pn else None)
        ctx.emit({"op": "add", "node": spec}, spec["id"],
                 f"added {spec['id']} {spec['kind']}: {spec['title']}"
                 + (f" (under {pn.id})" if pn else " (a root)"))
        for c in children:
            cs = node_spec(ctx, c, spec["id"])
            ctx.emit({"op": "add", "node": cs}, cs["id"],
                     f"added {cs['id']} {cs['kind']}: {cs['title']} (under {spec['id']})")
        ctx.summary = f"{spec['id']} {spec['kind']}: {clip(spec['title'], 50)}"

    return record(kb, "add", build, **kw)


def link(kb: Any, src: str, dst: str, edge_kind: str, note: str | None = None, *,
         expect_version: int | None = None, **kw: Any) -> RecordResult:
    """Add a side edge ``src -[edge_kind]-> dst`` with an optional note (CAS on ``src``)."""
    check_choice(edge_kind, EDGE_KINDS, "edge kind")

    def build(ctx: Ctx) -> None:
        a, b = ctx.node(src, "from node"), ctx.node(dst, "to node")
        if a.id == b.id:
            raise TrailError(f"a node cannot link to itself ({a.id})", "INVALID")
        ctx.cas(a, expect_version)
        ctx.scope(a)
        ctx.emit({"op": "link", "from": a.id, "to": b.id, "kind": edge_kind,
                  "note": _summary(note, "note")}, a.id, f"linked {a.id} -[{edge_kind}]-> {b.id}")
        if b.id not in ctx.ids:
            ctx.ids.append(b.id)
        ctx.summary = f"{a.id} {edge_kind} {b.id}"

    return record(kb, "link", build, **kw)


def set_fields(kb: Any, nid: str, *, status: str | None = None, title: str | None = None,
               summary: str | None = None, tags: Iterable[str] | None = None,
               refs: Iterable[str] | None = None, expect_version: int | None = None,
               **kw: Any) -> RecordResult:
    """Change a node's status, title, summary, tags or refs (only those given)."""
    fields: dict[str, Any] = {}
    if status is not None:
        fields["status"] = check_choice(status, STATUSES, "status")
    if title is not None:
        fields["title"] = _title(title)
    if summary is not None:
        fields["summary"] = _summary(summary)
    if tags is not None:
        fields["tags"] = _strings(tags, "tags")
    if refs is not None:
        fields["refs"] = _strings(refs, "refs")
    if not fields:
        raise UsageError("nothing to set: give status, title, summary, tags or refs")

    def build(ctx: Ctx) -> None:
        n = ctx.node(nid)
        ctx.cas(n, expect_version)
        ctx.scope(n)
        same = all(getattr(n, k) == v for k, v in fields.items())
        if same:
            ctx.ids.append(n.id)
            ctx.changes.append(f"{n.id} already has {', '.join(fields)}; nothing recorded")
            return
        ctx.emit({"op": "set", "node": n.id, "fields": fields}, n.id,
                 f"{n.id}: set {', '.join(f'{k}={v}' if k == 'status' else k for k, v in fields.items())}")
        ctx.summary = f"{n.id} {', '.join(fields)}"

    return record(kb, "set", build, **kw)


def move(kb: Any, nid: str, parent: str | None, *, expect_version: int | None = None,
         **kw: Any) -> RecordResult:
    """Move a node (and its subtree) under ``parent`` (None or '' = make it a root)."""

    def build(ctx: Ctx) -> None:
        n = ctx.node(nid)
        pid = _parent_id(parent)
        pn = ctx.node(pid, "parent") if pid else None
        ctx.cas(n, expect_version)
        ctx.scope(n)
        if pn is not None:
            ctx.scope(pn)
            if pn.id == n.id or any(a.id == n.id for a in ctx.g.ancestors(pn.id)):
                raise TrailError(f"cannot move {n.id} under {pn.id}: it is inside {n.id}", "CYCLE")
        if n.parent == (pn.id if pn else None):
            ctx.ids.append(n.id)
            ctx.changes.append(f"{n.id} is already there; nothing recorded")
            return
        ctx.emit({"op": "move", "node": n.id, "parent": pn.id if pn else None}, n.id,
                 f"moved {n.id} under {pn.id}" if pn else f"moved {n.id} to the roots")
        ctx.summary = f"{n.id} -> {pn.id if pn else 'root'}"

    return record(kb, "move", build, **kw)


def merge(kb: Any, nid: str, into: str, *, expect_version: int | None = None,
          **kw: Any) -> RecordResult:
    """Fold node ``nid`` into ``into``: children, edges, tags, refs and hits move over."""

    def build(ctx: Ctx) -> None:
        a, b = ctx.node(nid), ctx.node(into, "target")
        if a.id == b.id:
            raise TrailError(f"cannot merge {a.id} into itself", "INVALID")
        if any(x.id == a.id for x in ctx.g.ancestors(b.id)):
            raise TrailError(f"cannot merge {a.id} into {b.id}: {b.id} is inside {a.id}", "CYCLE")
        ctx.cas(a, expect_version)
        ctx.scope(a)
        ctx.scope(b)
        ctx.emit({"op": "merge", "node": a.id, "into": b.id}, b.id, f"merged {a.id} into {b.id}")
        ctx.ids.append(a.id)
        ctx.summary = f"{a.id} into {b.id}"

    return record(kb, "merge", build, **kw)


def promote(kb: Any, nid: str, *, expect_version: int | None = None, **kw: Any) -> RecordResult:
    """Promote a leaf root (question, hypothesis, decision, …) to a topic."""

    def build(ctx: Ctx) -> None:
        n = ctx.node(nid)
        if n.kind in ("topic", "goal"):
            raise TrailError(f"{n.id} is a {n.kind} already; only a leaf becomes a topic", "INVALID")
        ctx.cas(n, expect_version)
        ctx.scope(n)
        ctx.emit({"op": "promote", "node": n.id}, n.id, f"promoted {n.id} ({n.kind}) to a topic")
        ctx.summary = n.id

    return record(kb, "promote", build, **kw)


def archive(kb: Any, nid: str, *, unarchive: bool = False, expect_version: int | None = None,
            **kw: Any) -> RecordResult:
    """Archive a node out of the live views (marked done) or, ``unarchive``, bring it back."""

    def build(ctx: Ctx) -> None:
        n = ctx.node(nid)
        if n.kind == "goal" and not unarchive:
            raise TrailError(f"{n.id} is a goal; archive its leaves instead", "INVALID")
        ctx.cas(n, expect_version)
        ctx.scope(n)
        if n.archived != unarchive:
            ctx.ids.append(n.id)
            ctx.changes.append(f"{n.id} is {'not ' if unarchive else ''}archived already; "
                               "nothing recorded")
            return
        ctx.emit({"op": "archive", "node": n.id, "unarchive": bool(unarchive)}, n.id,
                 f"{'unarchived' if unarchive else 'archived'} {n.id}")
        ctx.summary = n.id

    return record(kb, "unarchive" if unarchive else "archive", build, **kw)


def digest(kb: Any, nid: str, text: str | None = None, *, auto: bool = False,
           expect_version: int | None = None, **kw: Any) -> RecordResult:
    """Write a topic's digest by hand (≤ 120 characters; marked manual), or ``auto`` to
    return it to the template. Every change is kept in its history (≤ 20 versions)."""
    if not auto:
        if not isinstance(text, str) or not text.strip():
            raise UsageError("give the digest text (or --auto for the template)")
        if len(" ".join(text.split())) > MAX_DIGEST:
            raise UsageError(f"a digest is at most {MAX_DIGEST} characters")

    def build(ctx: Ctx) -> None:
        n = ctx.node(nid)
        if n.kind != "topic":
            raise TrailError(f"{n.id} is a {n.kind}; only a topic has a digest "
                             "(kb trail promote makes one)", "INVALID")
        ctx.cas(n, expect_version)
        ctx.scope(n)
        op = {"op": "digest", "node": n.id, "auto": True} if auto else \
            {"op": "digest", "node": n.id, "text": clip(text, MAX_DIGEST)}
        ctx.emit(op, n.id, f"{n.id}: digest {'back to the template' if auto else 'written by hand'}")
        ctx.summary = n.id

    return record(kb, "digest", build, **kw)


def rollback(kb: Any, nid: str, version: int, *, expect_version: int | None = None,
             **kw: Any) -> RecordResult:
    """Roll a topic's digest back to history entry ``version`` (0 = the newest, 1 = the one
    before, …); the digest is then marked manual."""

    def build(ctx: Ctx) -> None:
        n = ctx.node(nid)
        ctx.cas(n, expect_version)
        ctx.scope(n)
        if not isinstance(version, int) or not 0 <= version < len(n.digest_history):
            raise TrailError(f"{n.id} has {len(n.digest_history)} digest version(s); give 0 "
                             f"(newest) to {max(len(n.digest_history) - 1, 0)}", "INVALID")
        entry = n.digest_history[-1 - version]
        ctx.emit({"op": "rollback", "node": n.id, "version": version}, n.id,
                 f"{n.id}: digest rolled back to revision {entry['revision']}: {entry['text']}")
        ctx.summary = f"{n.id} to revision {entry['revision']}"

    return record(kb, "rollback", build, **kw)


def _check_lease(lease_seconds: int) -> None:
    """Raises UsageError unless ``lease_seconds`` is 1 to :data:`MAX_LEASE_SECONDS` (a year): a
    lease of 0 or less is already expired, one past a year's end ends past any date."""
    if lease_seconds <= 0:
        raise UsageError("the lease must be a positive number of seconds")
    if lease_seconds > MAX_LEASE_SECONDS:
        raise UsageError(f"a lease of {quoted(str(lease_seconds // 60), limit=20, quote=False)} "
                         f"minutes is longer than a year ({MAX_LEASE_SECONDS // 60:,} minutes)")


def assign(kb: Any, nid: str, owner: str | None, *, lease_seconds: int = DEFAULT_LEASE_SECONDS,
           renew: bool = False, steal: bool = False, expect_version: int | None = None,
           **kw: Any) -> RecordResult:
    """Claim (``owner``), renew, steal (role lead/curator) or release (``owner`` None) a lease.

    A lease lasts ``lease_seconds`` (30 minutes by default) from now; every
    change bumps the node's ``lease_epoch``. Refused (``LEASED``) when another
    owner's lease is live, unless ``steal`` by a lead or curator.
    """
    from kb.locks import validate_owner

    if owner is not None:
        owner = validate_owner(owner)
    _check_lease(lease_seconds)

    def build(ctx: Ctx) -> None:
        n = ctx.node(nid)
        ctx.cas(n, expect_version)
        live = bool(n.owner) and n.lease_until > ctx.now
        if owner is None:  # release
            if not n.owner:
                raise TrailError(f"{n.id} has no lease to release", "INVALID")
            if ctx.explicit_actor and ctx.actor != n.owner and not ctx.privileged and live:
                raise TrailError(f"{n.id} is leased to {n.owner}; only they, a lead or a curator "
                                 "release it", "LEASED", owner=n.owner)
            ctx.emit({"op": "assign", "node": n.id, "owner": None, "mode": "release"}, n.id,
                     f"released {n.owner}'s lease on {n.id}")
            ctx.summary = f"{n.id} released"
            return
        if renew and n.owner != owner:
            raise TrailError(f"{n.id} is not leased to {owner} (owner: {n.owner or 'none'}); "
                             "renew only your own lease", "INVALID")
        if live and n.owner != owner:
            if not steal:
                raise TrailError(f"{n.id} is leased to {n.owner} until {_iso(n.lease_until)}; "
                                 "wait, or steal it as a lead or curator", "LEASED", owner=n.owner,
                                 lease_until=n.lease_until)
            if not ctx.privileged:
                raise TrailError("stealing a lease needs the role lead or curator", "INVALID")
        mode = "renew" if renew else ("steal" if live and n.owner != owner else "claim")
        until = ctx.now + int(lease_seconds)
        ctx.emit({"op": "assign", "node": n.id, "owner": owner, "until": until, "mode": mode}, n.id,
                 f"{n.id}: {mode} by {owner} until {_iso(until)}")
        ctx.summary = f"{n.id} {mode} {owner}"

    return record(kb, "assign", build, **kw)


def handoff(kb: Any, nid: str, to_actor: str, *, lease_seconds: int = DEFAULT_LEASE_SECONDS,
            expect_version: int | None = None, **kw: Any) -> RecordResult:
    """Move a topic's lease to ``to_actor`` and write a handoff package under the topic.

    The package is a ``note`` tagged ``handoff``: the digest, the open leaves,
    the recent key nodes and the conflicts (contradicting leaves) of the
    subtree. With an actor, the actor must hold the lease (or be a lead or
    curator).
    """
    from kb.locks import validate_owner

    to = validate_owner(to_actor)
    _check_lease(lease_seconds)  # as assign: else the new owner gets a lease already expired

    def build(ctx: Ctx) -> None:
        n = ctx.node(nid)
        ctx.cas(n, expect_version)
        if ctx.explicit_actor and not ctx.privileged and n.owner != ctx.actor:
            raise TrailError(f"{n.id} is leased to {n.owner or 'nobody'}, not {ctx.actor}; only "
                             "the owner, a lead or a curator hands it off", "OUT_OF_SCOPE",
                             owner=n.owner)
        from kb.trail.views import handoff_package

        pkg = handoff_package(ctx.g, n)
        until = ctx.now + int(lease_seconds)
        ctx.emit({"op": "handoff", "node": n.id, "owner": to, "from": n.owner or ctx.actor,
                  "until": until}, n.id, f"{n.id}: lease handed from {n.owner or ctx.actor} to {to}")
        # kb's own title (two actors' names): cut to fit, as a generated title is
        spec = node_spec(ctx, {"kind": "note",
                               "title": clip(f"Handoff {n.owner or ctx.actor} → {to}", MAX_TITLE),
                               "summary": pkg[:MAX_SUMMARY], "tags": ["handoff"]}, n.id)
        ctx.emit({"op": "add", "node": spec}, spec["id"], f"added handoff package {spec['id']}")
        ctx.summary = f"{n.id} to {to}"

    return record(kb, "handoff", build, **kw)


__all__ = ["RecordResult", "record", "add", "link", "set_fields", "move", "merge", "promote",
           "archive", "digest", "rollback", "assign", "handoff", "LEAF_ROOT_KINDS"]
