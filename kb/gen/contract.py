"""The ``--json`` outputs of ``kb gen`` and ``kb lit`` as pydantic models (the agents' contract).

:data:`OUTPUTS` is merged into :data:`kb.contract.OUTPUTS`, so ``kb schema gen
submit`` prints one of these and ``docs/cli.md`` documents them.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field

from kb.outputs import OpenModel, WriteResult


class GenRun(OpenModel):
    """``kb gen init``: the run's bindings (``literature_tiers``: key presence only)."""

    run_id: str
    question: str
    gen_n: int
    keep_threshold: float
    eval_scale: str
    budget: int
    patience: int
    report: str
    literature_tiers: dict[str, bool]
    created: str = Field(description="ISO 8601 UTC")
    sandbox: str = Field(description="absolute path of the run's folder")


class PoolItem(OpenModel):
    """A kept hypothesis of the pool: ``hid``, ``statement``, ``total`` (the judge's score,
    0–100).
    """

    hid: str
    statement: str
    total: float


class GenStatus(OpenModel):
    """``kb gen status``: the round, the next step, the pool, gaps, dry counter."""

    run_id: str
    question: str
    round: int
    step: Optional[str] = Field(description="candidates | litscout | verdict; null once stopped")
    stopped: Optional[str] = Field(description="saturated | budget, or null")
    dry: int
    patience: int
    budget: int
    pool: list[PoolItem]
    gaps: list[dict[str, Any]]
    trajectory: list[dict[str, Any]]
    adopted: dict[str, str] = Field(description="hid -> tree ID")
    sandbox: str


class GenBrief(OpenModel):
    """``kb gen brief ROLE``: what the role needs; role-specific fields follow."""

    role: str
    round: int
    next_step: Optional[str]
    stopped: Optional[str]
    question: str
    task: str
    pool: list[PoolItem]
    gaps: list[str]


class GenSubmit(OpenModel):
    """``kb gen submit KIND``: what kb decided (candidates: ``accepted``; litscout:
    ``evidence`` key -> verified | web | not-found; verdict: ``verdicts`` as corrected,
    ``corrections``, ``kept``, ``pool_size``, ``dry``, ``stopped``)."""

    kind: str
    round: int


class GenReport(BaseModel):
    """``kb gen report``: the report's path and its hypotheses, best first."""

    path: str
    hypotheses: list[str]
    stopped: Optional[str]


class Rating(BaseModel):
    """A hypothesis in the tournament: ``elo`` (starts at 1200), judge ``total`` (0–100),
    ``matches`` played.
    """

    hid: str
    elo: float
    total: float
    matches: int
    statement: str


class GenRank(BaseModel):
    """``kb gen rank``: matches applied and the standings, best first."""

    applied: int
    ratings: list[Rating]


class GenAdopt(WriteResult):
    """``kb gen adopt``: the hyp.add write result plus ``generated`` (run, hid, round, total)."""

    generated: dict[str, Any]


class GenSchema(OpenModel):
    """``kb gen schema``: JSON Schemas (one, or candidates/litscout/verdict)."""


class LitOutput(BaseModel):
    """``kb lit search|snippet|cite|paper``: the result, network requests made (cache hits
    make none), the cache folder and the gen run/round that recorded the request."""

    result: Any = Field(description="search: {query, papers, sources}; snippet: [{text, kind, "
                                    "paper_id, title}]; cite: [paper]; paper: paper")
    requests: int
    cache_dir: str
    sandbox: Optional[str]
    round: Optional[int]
    notes: list[str] = Field(description="what kb left out of the answer and why ('left out 2 "
                                         "snippet items of the answer with no text …'), else []")


class LitKeys(OpenModel):
    """``kb lit keys``: key presence only, never values (``--init`` adds ``added``)."""

    path: str
    keys: dict[str, bool]


OUTPUTS: dict[str, Optional[type[BaseModel]]] = {
    "gen init": GenRun, "gen status": GenStatus, "gen brief": GenBrief, "gen submit": GenSubmit,
    "gen report": GenReport, "gen rank": GenRank, "gen adopt": GenAdopt, "gen schema": GenSchema,
    "lit search": LitOutput, "lit snippet": LitOutput, "lit cite": LitOutput,
    "lit paper": LitOutput, "lit keys": LitKeys,
}
