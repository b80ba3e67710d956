"""JSON output models of ``kb trail …`` (one pydantic model per command's ``--json``).

:data:`OUTPUTS` maps command words (``"trail add"``, ``"trail render --check"``) to
the model of its success output, in the form of kb's agents' contract, so that
``kb schema`` and the MCP tools describe the trail commands like every other
command. Models allow extra fields; the properties named here are always
there. An error is kb's ``{"error": {"message", "exit_code", "kind"}}``.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from kb.outputs import WriteResult


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class TrailNode(_Open):
    """A node in full (``kb trail node``; the ``nodes`` of a write result)."""

    id: str
    kind: str
    title: str
    summary: str
    status: str
    parent: Optional[str]
    tags: list[str]
    refs: list[str]
    created_by: str
    created_at: str
    updated_by: str
    updated_at: str
    version: int = Field(description="the compare-and-swap token of --expect-version")
    hits: int = Field(description="1, plus one for each other transcript session (or "
                                  "session-less recording) that yielded the node again")
    archived: bool
    digest: str
    digest_manual: bool
    digest_history: list[dict[str, Any]]
    owner: Optional[str]
    lease_until: int = Field(description="epoch seconds; 0 without a lease")
    lease_epoch: int


class ShortNode(_Open):
    """A node in lists: id, kind, title, status, parent, version, hits (owner when leased)."""

    id: str
    kind: str
    title: str
    status: str
    parent: Optional[str]
    version: int
    hits: int


class LogProblemOut(BaseModel):
    """A torn or corrupt log entry (or a skipped transcript line); it was skipped."""
    path: str = Field(description="KB-relative log file")
    line: int = Field(description="1-based; 0: the whole file")
    message: str


class TrailWriteResult(WriteResult):
    """kb's one write result (``kb.ops.result.OpResult.to_json``, the model
    :class:`kb.outputs.WriteResult`), operation fields after these."""


class TrailWrite(TrailWriteResult):
    """Every recording (add, link, set, move, merge, promote, archive, digest, rollback,
    assign, handoff): kb's write result plus the nodes after the write."""

    nodes: list[TrailNode]
    batch: Optional[str] = Field(description="the recording's batch id (its log file's name)")


class TrailIngest(TrailWriteResult):
    """``kb trail ingest``: kb's write result plus what the transcript gave. An identical
    transcript ingested again records nothing (``commit`` null, ``paths`` empty)."""

    batch: Optional[str] = Field(description="the recording's batch id; null when nothing "
                                             "was recorded")
    added: int = Field(description="nodes added")
    hits: int = Field(description="existing nodes this transcript's session saw for the "
                                  "first time (their hits grew by one)")
    problems: list[LogProblemOut] = Field(description="transcript lines skipped")
    report: dict[str, Any] = Field(description="session, format, and per turn the chosen "
                                               "thoughts (kind, score, text) and folded count")


class TrailRender(TrailWriteResult):
    """``kb trail render``: kb's write result plus TRAIL.md's path and whether it changed."""

    path: str = Field(description="KB-relative path of TRAIL.md")
    changed: bool = Field(description="false: already up to date (nothing written)")


class TrailRenderCheck(BaseModel):
    """``kb trail render --check``: whether TRAIL.md is missing or stale (nothing written).

    ``line`` is the first line that differs (1 when the file is missing), null when up to date.
    """
    path: str
    exists: bool
    stale: bool
    line: Optional[int]


class _View(_Open):
    view: str
    log_problems: Optional[list[LogProblemOut]] = None


class Overview(_View):
    """``kb trail overview``: goal, focus, recent nodes, open questions (process noise
    folded into ``open_folded`` counts), dead ends, artifacts, conclusions."""
    goal: Optional[ShortNode]
    focus: Optional[ShortNode]
    recent: list[ShortNode]
    open: list[ShortNode]
    open_total: int
    open_folded: dict[str, int]
    dead_ends: list[ShortNode]
    artifacts: list[ShortNode]
    conclusions: list[ShortNode]


class TrunkTopic(_Open):
    """A topic of ``kb trail trunk``: digest, progress counts by status, owner,
    whether a contradiction sits under it, its leaf roots."""
    id: str
    title: str
    digest: str
    progress: dict[str, int]
    owner: Optional[str]
    conflict: bool
    leaves: list[ShortNode]
    archived_leaves: int


class TrunkGoal(BaseModel):
    """A goal of ``kb trail trunk`` and its topics."""
    goal: Optional[ShortNode]
    topics: list[TrunkTopic]


class Trunk(_View):
    """``kb trail trunk``: goal → topic → leaf roots, and the open topics without a
    live lease (``claimable``, expired ones first)."""
    goals: list[TrunkGoal]
    claimable: list[dict[str, Any]]


class Brief(_View):
    """``kb trail brief``: a research brief (goal, trunk digests, open leaf roots, next)."""
    text: str = Field(description="at most 400 characters")
    chars: int


class Suggestion(BaseModel):
    """One next step of ``kb trail frontier``."""
    action: str = Field(description="verify, resolve, claim, converge or switch")
    id: str
    title: str
    reason: str
    track: str = Field(description="current or switch")


class Frontier(_View):
    """``kb trail frontier``: next-step suggestions and the live dead ends to avoid."""
    suggestions: list[Suggestion]
    avoid: list[dict[str, Any]]


class Stats(_View):
    """``kb trail stats``: counts of the live graph, by kind, status, edge kind and actor."""
    nodes: int = Field(description="live nodes")
    by_kind: dict[str, int]
    by_status: dict[str, int]
    edges: dict[str, int]
    actors: dict[str, dict[str, int]]
    duplicates: dict[str, int]


class Find(_View):
    """``kb trail find``: nodes matching every word of ``query``, best first."""
    query: str
    total: int
    results: list[ShortNode]


class NodeView(TrailNode):
    """``kb trail node``: one node in full, its children, side edges and path from the root."""
    view: str
    children: list[ShortNode]  # type: ignore[assignment]
    edges: dict[str, list[dict[str, Any]]]
    path: list[ShortNode]


class PathView(_View):
    """``kb trail path``: the nodes from the root down to ``id``."""
    id: str
    path: list[ShortNode]


class TreeView(_View):
    """``kb trail tree``: the live forest (or one subtree) to ``depth`` levels."""
    depth: int
    roots: list[dict[str, Any]]


class SubtreeView(_View):
    """``kb trail subtree``: a node's details and its subtree."""
    node: NodeView
    tree: dict[str, Any]


class Snapshot(_View):
    """``kb trail snapshot``: the live graph for a panel (the seed's
    ``/explore-tree/snapshot``), at most ``limit`` nodes plus their ancestors."""
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    roots: list[str]
    focus: Optional[str]
    truncated: bool


class Check(BaseModel):
    """``kb trail check``: operations replayed, nodes in the graph, and the log problems found."""
    operations: int
    nodes: int
    problems: list[LogProblemOut]


class Diff(_Open):
    """``kb trail diff``: nodes added and closed between revisions ``base`` and ``head``."""
    base: str
    head: str
    added: list[ShortNode]
    closed: list[ShortNode]


#: command words -> the model of its ``--json`` success output.
OUTPUTS: dict[str, type[BaseModel]] = {
    **{f"trail {w}": TrailWrite for w in ("add", "link", "set", "move", "merge", "promote",
                                         "archive", "digest", "rollback", "assign", "handoff")},
    "trail ingest": TrailIngest, "trail render": TrailRender,
    "trail render --check": TrailRenderCheck,
    "trail overview": Overview, "trail trunk": Trunk, "trail brief": Brief,
    "trail frontier": Frontier, "trail stats": Stats, "trail find": Find, "trail node": NodeView,
    "trail path": PathView, "trail tree": TreeView, "trail subtree": SubtreeView,
    "trail snapshot": Snapshot, "trail check": Check, "trail diff": Diff,
}
