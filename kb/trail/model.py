"""The exploration graph's vocabulary, node and edge records, and errors (issue 15).

Source: the seed ``explore-tree`` (a research-trajectory plugin) and DESIGN.md §8–§9.
A graph is a forest of :class:`Node` (one parent each, ``parent`` None for a
root) plus side :class:`Edge` records of eight kinds. Nodes and edges are
plain mutable dataclasses so that replaying 50,000 operations stays cheap;
views hand out ``to_json()`` dicts, never these objects.

Node IDs are ``n`` + 10 lowercase hex digits drawn at random (40 bits), or
derived from an ingested thought's fingerprint: collision-free across
branches and machines without any coordination (DESIGN.md §9).
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Any

from kb.errors import RefusedError, UsageError

#: Node kinds (seed §3.1).
KINDS = ("goal", "topic", "question", "hypothesis", "step", "action", "evidence", "decision",
         "dead_end", "conclusion", "artifact", "note")
#: Node statuses.
STATUSES = ("open", "active", "done", "abandoned")
#: Side-edge kinds.
EDGE_KINDS = ("supports", "contradicts", "refines", "depends", "replaces", "duplicates",
              "continues", "related")
#: Leaf roots: the kinds that hang under a topic in the trunk (seed §3.1.1).
LEAF_ROOT_KINDS = ("question", "hypothesis", "decision", "conclusion", "dead_end")
#: Thought kinds the ingest classifier chooses between.
THOUGHT_KINDS = ("question", "hypothesis", "evidence", "decision", "dead_end", "conclusion")
#: Roles exempt from write scopes and allowed to steal a lease.
PRIVILEGED_ROLES = ("lead", "curator")

MAX_TITLE = 120
MAX_SUMMARY = 1200
MAX_DIGEST = 120
MAX_DIGEST_HISTORY = 20
MAX_CHILDREN_PER_ADD = 20
MAX_NODES = 5000
DEFAULT_LEASE_SECONDS = 30 * 60
#: The longest lease (seconds): a year, as a lock's TTL (kb.durations). A longer one is an
#: owner, not a lease; 99,999,999,999 minutes ended kb trail assign with exit 3 (a year past
#: what a date holds).
MAX_LEASE_SECONDS = 366 * 24 * 3600
#: The last second a lease may end at (epoch seconds; 9999-12-31T23:59:59Z, the last one a
#: date shows): a hand-written ``until`` past it is a log problem, not an exit 3 where
#: TRAIL.md or a view writes the date.
LAST_EPOCH = 253_402_300_799
SCHEMA_VERSION = 1


@dataclass(slots=True)
class Node:
    """One node of the graph.

    Times are ISO 8601 UTC strings (``2026-12-01T07:22:13Z``); ``lease_until``
    is epoch seconds (0 when no lease). ``version`` starts at 1 and grows by
    one with every operation that changes the node (the CAS token of
    ``--expect-version``). ``digest_history`` holds up to 20 dicts
    ``{"revision", "text", "source", "at"}``, newest last. ``merged_into``
    names the node a ``merge`` folded this one into (it then leaves the live
    views). ``fp`` is the ingest fingerprint ('' for a hand-written node).
    """

    id: str
    kind: str
    title: str
    summary: str = ""
    status: str = "open"
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    created_by: str = ""
    created_at: str = ""
    updated_by: str = ""
    updated_at: str = ""
    version: int = 1
    hits: int = 1
    archived: bool = False
    digest: str = ""
    digest_manual: bool = False
    digest_revision: int = 0
    digest_history: list[dict[str, Any]] = field(default_factory=list)
    owner: str | None = None
    lease_until: int = 0
    lease_epoch: int = 0
    merged_into: str | None = None
    fp: str = ""
    source: str = ""
    seq: int = 0

    def to_json(self) -> dict[str, Any]:
        """Every field as a JSON-ready dict (lists copied)."""
        return {
            "id": self.id, "kind": self.kind, "title": self.title, "summary": self.summary,
            "status": self.status, "parent": self.parent, "children": list(self.children),
            "tags": list(self.tags), "refs": list(self.refs), "created_by": self.created_by,
            "created_at": self.created_at, "updated_by": self.updated_by,
            "updated_at": self.updated_at, "version": self.version, "hits": self.hits,
            "archived": self.archived, "digest": self.digest,
            "digest_manual": self.digest_manual, "digest_revision": self.digest_revision,
            "digest_history": [dict(h) for h in self.digest_history], "owner": self.owner,
            "lease_until": self.lease_until, "lease_epoch": self.lease_epoch,
            "merged_into": self.merged_into, "fp": self.fp, "source": self.source,
            "seq": self.seq,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Node":
        """Inverse of :meth:`to_json`."""
        return cls(**d)

    def to_row(self) -> tuple[Any, ...]:
        """The fields as a tuple in declaration order (the cache format)."""
        return node_row(self)


NODE_FIELDS = tuple(Node.__dataclass_fields__)
#: ``node_row(n)``: a node's fields in declaration order, read by one C-level call
#: (the cache writes 50,000 rows and more).
node_row = operator.attrgetter(*NODE_FIELDS)


@dataclass(slots=True)
class Edge:
    """A side edge ``src -[kind]-> dst`` with an optional note; ``id`` is the op id."""

    id: str
    src: str
    dst: str
    kind: str
    note: str = ""
    by: str = ""
    at: str = ""

    def to_json(self) -> dict[str, Any]:
        """The edge as in the log and JSON output: ``{id, from, to, kind, note, by, at}``."""
        return {"id": self.id, "from": self.src, "to": self.dst, "kind": self.kind,
                "note": self.note, "by": self.by, "at": self.at}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Edge":
        """The edge from :meth:`to_json`'s dict (``note``, ``by``, ``at`` optional); KeyError
        when ``id``, ``from``, ``to`` or ``kind`` is missing.
        """
        return cls(id=d["id"], src=d["from"], dst=d["to"], kind=d["kind"], note=d.get("note", ""),
                   by=d.get("by", ""), at=d.get("at", ""))


@dataclass(frozen=True)
class LogProblem:
    """A torn or corrupt log entry (or an operation replay could not apply).

    ``path`` is the KB-relative log file, ``line`` 1-based (0: the whole
    file), ``message`` what is wrong; the entry was skipped.
    """

    path: str
    line: int
    message: str

    def to_json(self) -> dict[str, Any]:
        """``{path, line, message}`` (the ``log_problems`` entries of the views)."""
        return {"path": self.path, "line": self.line, "message": self.message}

    def format(self) -> str:
        """``path:line: message``, for people."""
        return f"{self.path}:{self.line}: {self.message}"


class TrailError(RefusedError):
    """A trail write was refused; nothing was written (exit 1).

    ``code`` is the seed's word (``OUT_OF_SCOPE``, ``LEASE_EXPIRED``,
    ``NOT_FOUND``, ``LEASED``, …), ``kind`` the JSON error kind it maps to
    (:data:`KINDS`), ``details`` extra data for the tools.
    """

    kind = "refused"
    #: The JSON error kind of a code (kb's error vocabulary); others are ``refused``.
    KINDS = {"NOT_FOUND": "not_found", "LEASED": "locked", "STALE_REVISION": "stale"}

    def __init__(self, message: str, code: str = "REFUSED", **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.kind = self.KINDS.get(code, "refused")
        self.details = details


class StaleRevision(TrailError):
    """``--expect-version`` no longer matches (error kind ``stale``, exit 1)."""

    def __init__(self, node: Node, expected: int) -> None:
        super().__init__(
            f"STALE_REVISION: {node.id} is at version {node.version}, not {expected} "
            f"(updated by {node.updated_by or 'unknown'}; digest: {node.digest or '-'}); "
            "read it again and retry — nothing was written",
            "STALE_REVISION", id=node.id, current_version=node.version, expected_version=expected,
            current_digest=node.digest, updated_by=node.updated_by)


def check_choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    """``value`` if it is one of ``allowed``, else UsageError listing them."""
    if value not in allowed:
        raise UsageError(f"unknown {what} {value!r}; accepted: {' '.join(allowed)}")
    return value


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean(text: str | None) -> str:
    """``text`` without control characters other than tab and newlines."""
    return _CONTROL.sub("", text or "")


def clip(text: str | None, limit: int) -> str:
    """``text`` on one line of white space, without control characters, cut to ``limit``
    characters (… marks a cut)."""
    t = " ".join(clean(text).split())
    return t if len(t) <= limit else t[: limit - 1].rstrip() + "…"
