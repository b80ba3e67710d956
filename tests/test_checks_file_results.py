"""kb.checks.file_results: the per-file rules on a parse, with or without its rows.

A child of ``kb verify --range`` forked after the tip's tree.md is parsed runs
its per-file rules on the records of the parsed objects (``parsed_rule_rows``, no
JSON written and read); every other path runs them on the objects' stored JSON
(``rule_rows``). Both must give the same rows: every file of the shared cases,
read as every format with per-file rules, the examples and both generated
corpora.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import EXAMPLES, generated_corpus

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"

#: A path of each format the per-file rules read.
PATHS = {"tree": "tree.md", "experiment": "experiments/E0001.md", "problem": "Problems/q1.md",
         "proposition": "Propos/数论/p1.md", "method": "Methods/m1.md",
         "verified": "Verified/命题/p1.md"}


def _both(path: str, data: bytes, fmt: str | None, cfg) -> list[tuple]:
    """Assert both ways give the same rows; return them."""
    from kb.checks.file_results import parsed_rule_rows, rule_rows
    from kb.index_rows import parse_version, rows_and_rules

    blob = "b" * 40
    want = rows_and_rules(cfg, [(path, blob, fmt, data)], rule_rows)[1]
    assert parsed_rule_rows(cfg, path, blob, parse_version(cfg, path, fmt, data), data) == want, path
    return want


def _config():
    from kb.config import Config

    return Config(root=Path("."))


def test_every_shared_case_as_every_ruled_format_gives_the_same_rule_rows() -> None:
    files = sorted(p for p in CASES.rglob("*") if p.is_file() and p.suffix in (".md", ".txt"))
    assert files
    cfg = _config()
    found = 0
    for p in files:
        data = p.read_bytes()
        for fmt, path in PATHS.items():
            found += len(_both(path, data, fmt, cfg))
    assert found > 10  # the cases do make the rules speak


def test_the_examples_give_the_same_rule_rows() -> None:
    from kb.parse import classify

    cfg = _config()
    seen = set()
    for p in sorted(EXAMPLES.rglob("*.md")):
        rel = p.relative_to(EXAMPLES).as_posix()
        fmt = classify(rel, cfg)
        if fmt is not None:
            _both(rel, p.read_bytes(), None, cfg)
            seen.add(fmt)
    assert {"tree", "experiment", "problem"} <= seen


@pytest.mark.parametrize("profile", ["default", "cards"])
def test_the_generated_corpora_give_the_same_rule_rows(tmp_path, profile) -> None:
    out = generated_corpus(tmp_path / "corpus", profile, 0.05)
    from kb.parse import classify

    cfg = _config()
    files = 0
    for p in sorted(out.rglob("*.md")):
        rel = p.relative_to(out).as_posix()
        if classify(rel, cfg) is not None:
            files += 1
            _both(rel, p.read_bytes(), None, cfg)
    assert files > 100


def test_a_record_is_what_the_stored_json_gives() -> None:
    """record_of builds the JSON's records; objects it cannot build so (entries whose
    text the JSON leaves out) go through the JSON."""
    import json

    from kb.checks.facts import Rec, record_of
    from kb.index_rows import object_json
    from kb.parse import parse_file

    cfg = _config()
    objs = []
    for p in sorted(EXAMPLES.rglob("*.md")):
        objs += parse_file(p.relative_to(EXAMPLES).as_posix(), p.read_bytes(), cfg).objects
    assert any(o.__dict__.get("entries") for o in objs)  # the JSON path is taken too
    def shape(v):  # the value with every container's type
        if isinstance(v, dict):
            return (type(v).__name__, sorted((k, shape(x)) for k, x in v.items()))
        if isinstance(v, (list, tuple)):
            return (type(v).__name__, [shape(x) for x in v])
        return (type(v).__name__, v)

    for o in objs:
        got, want = record_of(o), json.loads(object_json(o), object_hook=Rec)
        assert shape(got) == shape(want)


def test_a_records_fields_read_as_its_keys_and_none_when_missing() -> None:
    """Rec's attributes: every field of kb's models (a property, found before the
    failing lookup that ``__getattr__`` follows) and any other key read as
    ``dict.get``; dict's own methods stay methods."""
    import dataclasses

    from kb import model
    from kb.checks.facts import Rec

    names = {f.name for cls in vars(model).values()
             if isinstance(cls, type) and dataclasses.is_dataclass(cls)
             for f in dataclasses.fields(cls)}
    assert {"id", "anchors", "anchor_lines", "children", "line"} <= names
    full = Rec({n: f"v-{n}" for n in names} | {"other": 1})
    empty = Rec()
    for n in sorted(names):
        if n in dir(dict):
            continue
        assert isinstance(getattr(Rec, n), property), n
        assert getattr(full, n) == f"v-{n}" and getattr(empty, n) is None, n
    assert full.other == 1 and empty.other is None
    assert full.get("id") == "v-id" and list(empty.items()) == []
