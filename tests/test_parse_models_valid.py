"""Parsers build models with ``build`` (no validation) for speed; every object they
build must still pass pydantic validation unchanged, and survive the index's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pydantic
import pytest

from kb.config import config_from_dict
from kb.model import (MODEL_BY_KIND, Diagnostic, Entry, Fix, Hypothesis, ParseResult, Problem,
                      json_schema, validate)
from kb.parse import classify, parse_file

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _files() -> list[Path]:
    return sorted(p for p in EXAMPLES.rglob("*.md") if p.name != "README.md" or p.parent != EXAMPLES)


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_parsed_objects_validate(path: Path) -> None:
    cfg = config_from_dict(EXAMPLES, {"kb": {}})
    rel = path.relative_to(EXAMPLES).as_posix()
    res = parse_file(rel, path.read_bytes(), cfg)
    if classify(rel, cfg) not in (None, "dashboard", "progress"):
        assert res.objects, rel
    for obj in res.objects:
        assert validate(type(obj), obj.to_dict()) == obj
        assert type(obj).from_json(obj.to_json()) == obj
    for d in res.diagnostics:
        assert validate(Diagnostic, d.to_dict()) == d == Diagnostic.from_json(d.to_json())


def test_build_fills_defaults_and_refuses_unknown_fields() -> None:
    """build gives the instance the dataclass constructor (and validation) gives."""
    kw = dict(id="H1", path="tree.md", line=3, statement="s", level=2, status="待验",
              evidence=("E001",))
    a = Hypothesis.build(**kw)
    assert a == Hypothesis(**kw) == validate(Hypothesis, kw)
    assert a.anchors == {} and a.anchors is not Hypothesis.build(**kw).anchors
    e = Entry.build(kind="解法", number=1, title="t", probability=0.5, status="未定论", line=9)
    assert e == Entry(kind="解法", number=1, title="t", probability=0.5, status="未定论", line=9)
    with pytest.raises(TypeError):
        Entry.build(kind="解法", nonsense=1)


def test_models_are_frozen_values() -> None:
    h = Hypothesis.build(id="H1", path="tree.md", line=3, statement="s", level=2)
    with pytest.raises(AttributeError):
        h.status = "被支持"  # type: ignore[misc]
    h2 = h.replace(status="被支持")
    assert (h.status, h2.status, h2.id) == ("", "被支持", "H1") and h2 != h


def test_json_round_trip_rebuilds_nested_models_and_tuples() -> None:
    p = Problem.build(id="q1", path="Problems/q1.md", line=1, depends=("q2",), entries=(
        Entry.build(kind="解法", number=1, title="t", probability=0.9, status="未定论", line=5),))
    back = Problem.from_json(p.to_json())
    assert back == p and isinstance(back.entries[0], Entry) and isinstance(back.depends, tuple)
    d = Diagnostic(path="a.md", line=2, code="KB110", severity="warning", message="m",
                   fix=Fix(line=2, old="x", new="y"))
    assert Diagnostic.from_json(d.to_json()) == d and isinstance(Diagnostic.from_json(d.to_json()).fix, Fix)
    assert json.loads(d.to_json())["fix"] == {"line": 2, "old": "x", "new": "y"}


def test_validation_rejects_bad_values_and_unknown_fields() -> None:
    with pytest.raises(pydantic.ValidationError, match="severity"):
        validate(Diagnostic, {"path": "a", "code": "KB1", "severity": "fatal", "message": "m"})
    with pytest.raises(pydantic.ValidationError, match="nonsense"):
        validate(Fix, {"line": 1, "old": "a", "new": "b", "nonsense": 1})
    with pytest.raises(pydantic.ValidationError, match="level"):
        validate(Hypothesis, {"id": "H1", "path": "t", "line": 1, "statement": "s"})


def test_json_schema_of_every_model() -> None:
    for cls in [*MODEL_BY_KIND.values(), Diagnostic, ParseResult]:
        schema = json_schema(cls)
        assert schema["type"] == "object" and "path" in schema["properties"], cls
    assert json_schema(Hypothesis)["properties"]["kind"]["const"] == "hypothesis"
