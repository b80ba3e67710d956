"""The three hand-off files of a round as pydantic models (HYPOTHESIS-GEN.md schemas).

``candidates.json`` (Generator), ``litscout.json`` (LiteratureScout) and
``verdict.json`` (Judge). The exported JSON Schemas (:func:`schemas`) have
exactly the fields of the spec: no additional properties anywhere, the
spec's required lists, integer scores 0–5, a total 0–100. Integers and
booleans are strict (``4.0`` is not a score, ``"true"`` not a keep).
Rules a schema cannot express live in :mod:`kb.gen.rules`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kb import json_input
from kb.gen.errors import GenError, GenNoFile

StrictInt = Annotated[int, Field(strict=True)]
Score = Annotated[int, Field(strict=True, ge=0, le=5)]
Text = Annotated[str, Field(strict=True)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# -- candidates.json -------------------------------------------------------------------


class Candidate(_Model):
    """One proposed hypothesis; ``hid`` is ``r<round>h<n>``, ``kind`` free text."""

    hid: Text
    statement: Text
    kind: Text
    rationale: Text
    how_to_test: Text


class Candidates(_Model):
    """``{round, candidates: [...]}`` (the Generator's output)."""

    round: StrictInt
    candidates: list[Candidate]


# -- litscout.json ---------------------------------------------------------------------


class Point(_Model):
    """A claim and the evidence keys that back it."""

    claim: Text
    cites: list[Text]


class Evaluation(_Model):
    """The grounding of one candidate: novelty, closest prior work, support, gap, testability."""

    hid: Text
    novelty_assessment: Literal["novel", "incremental", "already-established", "unknown"]
    closest_prior_work: list[Point]
    support: list[Point]
    gap: list[Point]
    testability_note: Text


class Evidence(_Model):
    """A retrieved passage: ``snippet`` is verbatim; ``id`` the paper id (or the URL for web)."""

    key: Text
    title: Text
    source: Literal["s2", "arxiv", "web"]
    # optional, but a string when given (no null, no default in the schema)
    id: Text = Field(default=None, json_schema_extra=lambda s: s.pop("default", None))  # type: ignore[assignment]
    snippet: Text


class LitScout(_Model):
    """``{round, evaluations, evidence}`` (the LiteratureScout's output)."""

    round: StrictInt
    evaluations: list[Evaluation]
    evidence: list[Evidence]


# -- verdict.json ----------------------------------------------------------------------


class Scores(_Model):
    """The five rubric scores, integers 0–5."""

    novelty: Score
    grounding: Score
    testability: Score
    specificity: Score
    significance: Score


class Verdict(_Model):
    """The Judge's decision on one candidate."""

    hid: Text
    scores: Scores
    total: Annotated[float, Field(ge=0, le=100)]
    keep: Annotated[bool, Field(strict=True)]
    rationale: Text
    gate_failures: list[Text] = Field(default_factory=list)
    duplicate_of: Optional[Text] = None


class Verdicts(_Model):
    """``{round, verdicts: [...]}`` (the Judge's output)."""

    round: StrictInt
    verdicts: list[Verdict]


#: submit kind -> (model, file name in the round folder)
KINDS: dict[str, tuple[type[_Model], str]] = {
    "candidates": (Candidates, "candidates.json"),
    "litscout": (LitScout, "litscout.json"),
    "verdict": (Verdicts, "verdict.json"),
}


def schemas() -> dict[str, dict[str, Any]]:
    """``{kind: JSON Schema}`` for candidates, litscout and verdict (draft 2020-12 via pydantic)."""
    return {kind: model.model_json_schema() for kind, (model, _name) in KINDS.items()}


def json_path(loc: tuple[Any, ...]) -> str:
    """``("evaluations", 0, "hid")`` -> ``$.evaluations[0].hid``."""
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def load(kind: str, path: Path, data: Any = None) -> tuple[Any, _Model]:
    """Read ``path`` as JSON (or take ``data``: a JSON text or an already parsed value,
    ``path`` then only names it in messages) and validate it as ``kind``.

    Returns ``(raw, model)``. Raises :class:`GenError` listing every problem as
    ``file: $.json.path: what`` (a JSON syntax error as ``file:line:col``).
    """
    model, _ = KINDS[kind]
    if data is None or isinstance(data, str):
        try:
            text = path.read_text(encoding="utf-8") if data is None else data
        except FileNotFoundError:
            raise GenNoFile(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise GenError(f"{path}: cannot read it ({exc})") from None
        try:
            raw = json_input.loads(text)
        except json.JSONDecodeError as exc:
            raise GenError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
        except (ValueError, RecursionError):  # a number too long for int(), nesting too deep
            raise GenError(f"{path}: not JSON kb can read (a number too long or a nesting too "
                           "deep)") from None
    else:
        raw = data
    try:
        return raw, model.model_validate(raw)
    except ValidationError as exc:
        problems = [f"{path}: {json_path(tuple(e['loc']))}: {e['msg']}" for e in exc.errors()]
        raise GenError(f"{path}: does not match the {kind} schema "
                       f"({len(problems)} problem{'s' if len(problems) != 1 else ''})",
                       problems) from None
