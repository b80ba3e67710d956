"""Parsers build models with ``build`` (no validation) for speed; every object they
build must still pass pydantic validation unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.config import config_from_dict
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
        again = type(obj).model_validate(obj.model_dump())
        assert again == obj


def test_build_equals_model_construct_and_validation() -> None:
    """_Frozen.build gives the same instance as model_construct (and as validation)."""
    from kb.model import Entry, Hypothesis

    kw = dict(id="H1", path="tree.md", line=3, statement="s", level=2, status="待验",
              evidence=("E001",))
    a, b = Hypothesis.build(**kw), Hypothesis.model_construct(**kw)
    assert a == b and a.model_dump() == b.model_dump() == Hypothesis(**kw).model_dump()
    assert a.model_fields_set == b.model_fields_set
    assert a.anchors == {} and a.anchors is not Hypothesis.build(**kw).anchors
    e = Entry.build(kind="解法", number=1, title="t", probability=0.5, status="未定论", line=9)
    assert e == Entry(kind="解法", number=1, title="t", probability=0.5, status="未定论", line=9)
    with pytest.raises(TypeError):
        Entry.build(kind="解法", nonsense=1)
