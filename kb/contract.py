"""The agents' contract: one pydantic model per command's ``--json`` success output.

``kb schema COMMAND WORDS…`` prints the JSON Schema of :data:`OUTPUTS` [words];
``docs/cli.md`` is generated from the commands and these models; the MCP tools
return the same objects. The naming rules (issue "agents as first-class users"):

- times are ISO 8601 (``2026-11-02T10:00:00Z``) with an ``_epoch`` twin in
  seconds where a program computes with them (``expires`` / ``expires_epoch``);
- counts are keyed by the plural kind (``hypotheses``, ``problems``);
- IDs are strings; every read of a file-backed object carries ``blob`` and
  every write result ``blobs`` (the git blob id ``--expect`` takes);
- an error, from any command, is :class:`ErrorOutput`.

Models allow extra fields: an object's own fields (anchors, entries, …) follow
its kind's model in :mod:`kb.model`; the properties named here are always there.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, Field

from kb.errors import ERROR_KINDS
from kb.vocab import display_status
from kb.outputs import OpenModel as _Open, WriteResult  # shared with the areas' contracts

ErrorKind = Literal["usage", "environment", "internal", "refused", "not_found", "conflict",
                    "locked", "stale"]
assert set(ErrorKind.__args__) == set(ERROR_KINDS)  # type: ignore[attr-defined]


class ErrorBody(BaseModel):
    """What went wrong: ``kind`` from the vocabulary of :mod:`kb.errors` and its exit code."""

    message: str
    exit_code: int = Field(description="1 refused, 2 usage or environment, 3 internal")
    kind: ErrorKind


class ErrorOutput(BaseModel):
    """Any command's ``--json`` output when it fails (exit 1, 2 or 3)."""

    error: ErrorBody


class ObjectOut(_Open):
    """One object as reads return it; its kind's fields (kb.model) follow."""

    id: str
    kind: str
    path: str = Field(description="KB-relative path of its file")
    line: int = Field(description="1-based line of its declaration")
    title: Optional[str] = None
    status: Optional[str] = None
    blob: Optional[str] = Field(description="git blob id of the file read (what --expect takes)")


class LsOutput(BaseModel):
    """``kb ls``: the objects of one kind (every kind when ``kind`` is null), one per
    declaration, in the table's order."""

    kind: Optional[str] = Field(description="the plural kind listed (hypotheses, problems, …); "
                                            "null: every kind")
    status: Optional[str] = Field(description="the --status filter as given; null: none")
    count: int = Field(description="number of objects")
    objects: list[ObjectOut]


class FoundObject(BaseModel):
    """One object as ``kb ls`` / ``kb find`` print it: ``id``, ``kind``, ``status`` (the KB's
    locale), ``path`` and 1-based ``line``.
    """

    id: str
    kind: str
    status: Optional[str]
    title: Optional[str]
    path: str
    line: int
    blob: Optional[str]


class FindOutput(BaseModel):
    """``kb find``: the objects whose ID, title or statement contain the text."""

    text: str = Field(description="the text searched for (case-insensitive)")
    count: int = Field(description="number of objects")
    objects: list[FoundObject]


class Declaration(BaseModel):
    """Where an object is declared: ``kind``, KB-relative ``path``, 1-based ``line``."""

    kind: str
    path: str
    line: int


class DiagnosticOut(_Open):
    """One finding of a rule: ``path``, 1-based ``line`` and ``col``, ``code`` (KBnnn),
    ``severity``, ``message``.
    """

    path: str
    line: int
    col: int
    code: str
    severity: str
    message: str


class ShowOutput(ObjectOut):
    """``kb show``: one object with its links (``declarations`` lists duplicates) and the
    parse diagnostics of the file(s) declaring it."""

    declarations: list[Declaration]
    diagnostics: list[DiagnosticOut] = Field(
        description="parse diagnostics the index holds for the file(s) declaring the object "
                    "(errors and warnings, by path and line, as `kb index` reports them); what "
                    "an error could not read is missing from the fields. Empty: read cleanly")
    links_out: list[dict[str, str]]
    links_in: list[dict[str, str]]
    dependencies: list[str]
    dependants: list[str]
    experiments: list[str]


class IndexOutput(BaseModel):
    """``kb index``: counts by plural kind, parse diagnostics."""

    kb: str
    files: int
    parsed: int
    counts: dict[str, int] = Field(description="plural kind -> number of objects")
    seconds: float
    rebuilt: bool
    errors: int
    failed_files: list[str]
    diagnostics: list[DiagnosticOut]


class InitOutput(BaseModel):
    """What ``kb init`` did: the KB ``root``, the files ``written`` and ``appended``
    (KB-relative), whether it ran ``git init``.
    """

    root: str
    written: list[str]
    appended: list[str]
    git_initialised: bool


class DashboardCheck(BaseModel):
    """``kb dashboard --check``."""

    path: str
    stale: bool
    exists: bool


class VerifierRow(BaseModel):
    """One verifier's record: ``accuracy`` in [0, 1], verdicts ``agreed`` with out of
    ``counted``.
    """

    verifier: str
    accuracy: float
    agreed: int
    counted: int
    votes: int


class VerifiersOutput(BaseModel):
    """``kb verifiers``: each verifier's accuracy on settled targets, best first."""

    count: int = Field(description="number of verifiers")
    verifiers: list[VerifierRow]


class BriefOutput(_Open):
    """``kb brief``: the planning state (``omitted`` when --max-chars cut it)."""

    kb: str
    counts: dict[str, int]
    open_problems: list[dict[str, Any]]
    verify_candidates: list[dict[str, Any]]
    settled: list[dict[str, Any]]
    undecided_propositions: list[dict[str, Any]]
    methods: list[dict[str, Any]]


class ReportText(BaseModel):
    """``kb report --stdout``: the report's path and Markdown text (nothing written)."""

    path: str
    text: str


class VerifyOutput(BaseModel):
    """``kb verify``: findings of the rules in one mode."""

    mode: str
    ok: bool
    exit_code: int
    kbs: list[str]
    commits: int
    blocking: int
    counts: dict[str, int] = Field(description="severity -> number of findings")
    notes: list[str]
    error: Optional[ErrorBody] = Field(description="an environment error that stopped the "
                                                   "check (exit 2), else null")
    diagnostics: list[dict[str, Any]]


class RulesOutput(BaseModel):
    """``kb rules``: the rule catalogue."""

    rules: list[dict[str, Any]]
    unknown: list[str]


class AcquiredLock(_Open):
    """A lock taken: its git ``ref``, ``scope`` (file or project), ``path`` (None for the
    project lock), the lock ``commit``.
    """

    ref: str
    scope: str
    path: Optional[str]
    commit: str
    owner: str
    expires: str = Field(description="ISO 8601 UTC")
    expires_epoch: int
    how: str
    previous: Optional[dict[str, Any]]


class LockAcquired(BaseModel):
    """``kb lock claim|renew|steal``, ``kb project lock``."""

    owner: str
    now: str
    now_epoch: int
    remote: Optional[str]
    locks: list[AcquiredLock]
    branch: Optional[str]
    behind: Optional[int]


class LockStateOut(_Open):
    """A lock as ``kb lock status`` lists it: ``ref``, ``scope``, ``path``, ``owner``, expiry
    (ISO 8601 and epoch seconds).
    """

    ref: str
    scope: str
    path: Optional[str]
    owner: str
    commit: str
    expires: str = Field(description="ISO 8601 UTC")
    expires_epoch: int
    expired: bool
    in_grace: bool
    remaining: int = Field(description="seconds of lease left (negative once past)")


class LockStatus(BaseModel):
    """``kb lock status``."""

    now: str
    now_epoch: int
    grace: int
    remote: Optional[str]
    locks: list[LockStateOut]
    project: Optional[LockStateOut]
    interrupted_release: Optional[dict[str, Any]]
    source: str = Field(description="where the locks came from: this clone, remote <name> "
                                    "(fetched now), or remote <name> (as last fetched: why)")
    stale: Optional[str] = Field(None, description="why the remote could not be read: the locks "
                                                   "are its copy as last fetched (else null)")


class SyncOutput(BaseModel):
    """``kb sync``: what was fetched, renumbered, merged and found (``ok`` false: exit 1)."""

    upstream: str
    upstream_commit: str
    dry_run: bool
    fetched: bool
    drivers: dict[str, str] = Field(description="merge driver -> registered | already registered | …")
    attributes_commit: Optional[str] = Field(
        description="the commit adding kb's merge-driver lines .gitattributes lacked, made "
                    "before renumbering and merging (HEAD moved); null when it named them all")
    collisions: list[dict[str, Any]] = Field(description="{id, kind, ours, theirs} per colliding ID")
    renumbered: dict[str, str] = Field(description="old ID -> new ID")
    renumber_commit: Optional[str]
    refs_left: list[dict[str, str]] = Field(
        description="{node, path, ref, old, new} per trail node whose refs name a renumbered "
                    "ID in a log file the upstream holds too: left as they are (old is the "
                    "upstream's object after the merge; new is this branch's object's ID now); "
                    "the refs in the log files only this branch added are renumbered")
    merge: str = Field(description="up to date | fast-forward | merged | conflict | refused (a "
                                   "hook, e.g. kb's pre-merge-commit, refused the merge commit; "
                                   "aborted) | not run")
    merge_commit: Optional[str]
    conflicts: list[str] = Field(description="merge conflict: per conflicting path what kb's merge "
                                             "driver ('kb merge: …') or git ('CONFLICT (file "
                                             "location): …') said of it, else '<path>: conflict'; "
                                             "merge refused: what the hook printed refusing it "
                                             "(kb's diagnostics)")
    notes: list[str] = Field(description="what kb's merge drivers said of a clean merge, as git "
                                         "printed it ('kb merge: Logs/报告.md: kept our side …; "
                                         "run `kb report` to refresh it')")
    dashboard_commit: Optional[str]
    trail_commit: Optional[str] = Field(description="the commit rendering TRAIL.md again when the "
                                                    "merge left it stale (it was fresh before)")
    findings: list[dict[str, Any]] = Field(description="blocking kb verify findings of the result")
    ok: bool


class LockPruned(BaseModel):
    """``kb lock prune``: the expired locks deleted."""

    pruned: list[dict[str, Any]]
    remote: Optional[str]


class HooksOutput(BaseModel):
    """What ``kb hooks install|uninstall|status`` did: ``hooks_dir``, hook name -> action, the
    merge driver's state.
    """

    hooks_dir: str
    hooks: dict[str, str]
    merge_driver: Optional[str]


class CiInit(BaseModel):
    """``kb ci init``: the file written and where CI installs kb from."""

    path: str
    base: str
    install: str = Field(description="what `pip install` takes in CI")
    install_from: str = Field(description="--install, or where this kb came from: index, vcs, url")
    kb_dir: str = Field(description="the KB folder the job runs in, relative to the repository")


class SchemaList(BaseModel):
    """``kb schema`` without a command: every command with a JSON output. ``kb schema
    COMMAND`` (and the MCP ``schema`` tool given a command) prints that command's JSON
    Schema instead, a document the JSON Schema meta-schema describes, not this one."""

    commands: list[str]


class PrimeOutput(BaseModel):
    """``kb prime``: the session-start context for an agent."""

    text: str = Field(description="at most 8,000 characters of Markdown")
    head: Optional[str]


class ServeOutput(BaseModel):
    """``kb serve``: printed once, when the server listens; it then serves until stopped."""

    url: str = Field(description="the base URL, e.g. http://127.0.0.1:8765/")
    host: str
    port: int = Field(description="the port listened on (the free one picked for --port 0)")
    rev: str = Field(description="the revision pages show when a URL names none")


#: command words -> its success model (``None``: no JSON output, e.g. ``kb mcp``).
OUTPUTS: dict[str, Optional[type[BaseModel]]] = {
    "init": InitOutput,
    "index": IndexOutput,
    "ls": LsOutput,
    "show": ShowOutput,
    "find": FindOutput,
    "brief": BriefOutput,
    "verify": VerifyOutput,
    "rules": RulesOutput,
    "verifiers": VerifiersOutput,
    "dashboard": WriteResult,
    "dashboard --check": DashboardCheck,
    "report": WriteResult,
    "report --stdout": ReportText,
    "refresh": WriteResult,
    "promote": WriteResult,
    "verdict": WriteResult,
    "entry add": WriteResult,
    "hyp add": WriteResult, "hyp status": WriteResult, "hyp edit": WriteResult,
    "hyp evidence": WriteResult,
    "exp new": WriteResult, "exp log": WriteResult, "exp update": WriteResult,
    "exp result": WriteResult,
    "problem add": WriteResult, "problem status": WriteResult, "problem plan": WriteResult,
    "problem priority": WriteResult,
    "propo add": WriteResult,
    "method add": WriteResult, "method apply": WriteResult, "method improve": WriteResult,
    "priority adjust": WriteResult,
    "lock claim": LockAcquired, "lock renew": LockAcquired, "lock steal": LockAcquired,
    "lock release": WriteResult, "lock status": LockStatus, "lock prune": LockPruned,
    "project lock": LockAcquired, "project unlock": WriteResult,
    "hooks install": HooksOutput, "hooks uninstall": HooksOutput, "hooks status": HooksOutput,
    "ci init": CiInit,
    "schema": SchemaList,
    "prime": PrimeOutput,
    "mcp": None,
    "sync": SyncOutput,
    "merge-driver": None,
    "serve": ServeOutput,
}

def schema_of(words: str) -> dict[str, Any]:
    """The JSON Schema of ``words``' success output. Raises KeyError for unknown words."""
    model = OUTPUTS[words]
    if model is None:
        return {"title": words, "description": "no JSON output (a protocol server on stdio)"}
    return model.model_json_schema()


def validate_output(words: str, data: Any) -> BaseModel:
    """Validate a command's parsed JSON output against its model (pydantic ValidationError)."""
    model = OUTPUTS[words]
    assert model is not None, words
    return model.model_validate(data)


def ls_data(kind: Optional[str], status: Optional[str], rows: Any, locale: str) -> dict[str, Any]:
    """:class:`LsOutput` of ``kb ls [KIND] [--status]``'s rows (index ``ObjectRow`` values)."""
    objects = []
    for r in rows:
        f = r.fields()
        f.pop("anchor_lines", None)
        f["status"] = display_status(r.kind, r.status, locale)
        f["blob"] = r.blob
        objects.append(f)
    return {"kind": kind, "status": status, "count": len(objects), "objects": objects}


def find_data(text: str, rows: Any) -> dict[str, Any]:
    """:class:`FindOutput` of ``kb find TEXT``'s rows."""
    objects = [{"id": r.id, "kind": r.kind, "status": r.status, "title": r.title, "path": r.path,
                "line": r.line, "blob": r.blob} for r in rows]
    return {"text": text, "count": len(objects), "objects": objects}


def verifiers_data(rows: Any) -> dict[str, Any]:
    """:class:`VerifiersOutput` of :func:`kb.ops.verdict.accuracy_table`'s rows."""
    out = [{"verifier": a.verifier, "accuracy": a.rate, "agreed": a.agreed,
            "counted": a.counted, "votes": a.votes} for a in rows]
    return {"count": len(out), "verifiers": out}


__all__ = ["OUTPUTS", "ErrorOutput", "WriteResult", "schema_of", "validate_output",
           "ls_data", "find_data", "verifiers_data"]


def _area_outputs() -> None:
    """Outputs of commands whose areas keep their own models (kb gen and kb lit,
    kb diff and kb log, kb trail)."""
    from kb.gen.contract import OUTPUTS as GEN
    from kb.review.contract import OUTPUTS as REVIEW
    from kb.trail.contract import OUTPUTS as TRAIL

    OUTPUTS.update(GEN)
    OUTPUTS.update(REVIEW)
    OUTPUTS.update(TRAIL)


_area_outputs()
