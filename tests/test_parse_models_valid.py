"""Parsers build models with ``model_construct`` for speed; every object they
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
