"""The ``--json`` output models of the review commands (``kb diff``, ``kb log``), for
:mod:`kb.contract` (``kb schema diff``, ``docs/cli.md``, the MCP tools' results)."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class DiffOutput(_Open):
    """``kb diff``: what the research changed (kb.review.diff.research_diff)."""

    kb: str = Field(description="the KB folder, '.' at the top of the repository")
    source: Literal["range", "staged", "worktree"]
    base: Optional[str] = Field(description="the before commit (merge base of A and B; HEAD), "
                                            "null for the empty history")
    tip: str = Field(description="the after commit, or 'staged' / 'worktree'")
    commits: list[dict[str, Any]] = Field(description="the range's commits, oldest first: commit, "
                                                      "parents, author, email, time, subject, op, "
                                                      "ids, overrides, renumbers")
    hypotheses: dict[str, list[dict[str, Any]]] = Field(
        description="added, removed, corrected, status (with evidence), evidence, renumbered")
    experiments: dict[str, list[dict[str, Any]]] = Field(
        description="added, finished (conclusion, data), conclusion_changed, logged, edited "
                    "(fields, sections: the `## ` sections whose text changed), removed")
    cards: dict[str, list[dict[str, Any]]] = Field(
        description="added, removed, status, settled (moved into a settled state, or added "
                    "settled; record: whether a verification record the range adds is about "
                    "it; KB312), priorities, dependencies, entries_added, "
                    "entries_changed, probabilities, applications, edited (fields: those no other "
                    "list names; sections: the `## ` sections whose text changed)")
    verified: dict[str, list[dict[str, Any]]] = Field(description="added, changed")
    verdicts: list[dict[str, Any]] = Field(
        description="records added (not those a [paths] move carried unchanged): r, target, "
                    "verdict, votes, invalid (why no verdict could have written it, KB243; "
                    "null when valid), branch (the rule that reached the "
                    "verdict: unanimous, consensus, split; none without votes), how (as kb "
                    "verdict says it: 'consensus', 'split, forced'), mode (the record's rule "
                    "for a split vote, stored whichever rule decided; null when absent)")
    records_changed: list[dict[str, Any]] = Field(
        description="verification records modified or deleted (append-only, KB310): path, "
                    "deleted, commits")
    renumberings: list[dict[str, Any]] = Field(description="{from, to, commit} (Kb-Renumber)")
    overrides: list[dict[str, Any]] = Field(description="{id, reason, commit} (Kb-Override; "
                                                        "commit null: KB_OVERRIDE)")
    trail: Optional[dict[str, list[dict[str, Any]]]] = Field(
        description="exploration-graph nodes added and closed (ranges only), else null")
    unreadable: list[dict[str, Any]] = Field(description="changed files kb cannot read")
    findings: Optional[list[dict[str, Any]]] = Field(description="rule findings (kb verify's "
                                                                 "diagnostics); null with --no-findings")
    findings_summary: Optional[dict[str, Any]]
    mermaid: Optional[dict[str, Any]] = Field(description="lines, shown, left_out, note, changed; "
                                                          "null when no hypothesis changed")
    empty: bool


class LogEntry(_Open):
    """One commit of an object's history."""

    commit: str
    op: Optional[str] = Field(description="Kb-Op, null for a commit made by hand")
    author: str
    email: str
    time: str = Field(description="author date, ISO 8601")
    subject: str
    id: str = Field(description="the object's ID in that commit (before a renumbering: the old one)")
    change: Literal["created", "changed", "edited", "renumbered", "removed", "boundary"] = Field(
        description="boundary: the object is in the first commit of a shallow clone, whose "
                    "history is not fetched (not 'created': it may be older; see warnings)")
    status: Optional[str]
    changes: dict[str, dict[str, Any]] = Field(description="field -> {from, to}")
    override: Optional[str]


class LogOutput(_Open):
    """``kb log ID``: the object's history, oldest first."""

    id: str
    kind: str
    path: str
    aliases: list[str] = Field(description="older IDs (Kb-Renumber), newest first")
    entries: list[LogEntry]
    warnings: list[dict[str, Any]] = Field(description="{code, severity, commit, message}: KB390 "
                                                       "when a shallow clone cuts the history")


OUTPUTS: dict[str, Optional[type[BaseModel]]] = {"diff": DiffOutput, "log": LogOutput}
