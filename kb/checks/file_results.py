"""Per-file rule results computed right after a parse, from the rows being stored.

``kb verify`` keeps the results of the per-file rules (KB2xx rules that read
one file) by blob in the index (:mod:`kb.index_results`;
:func:`kb.checks.results.file_rule_results`). Computed there, a cold check
reads every object's JSON back from the index and runs the rules in one
process. A check that parses many versions first (``verify --range`` on a
fresh clone) runs them here instead, in the parse workers, on the rows they
are about to return (:meth:`kb.index.Index.ensure_versions` takes
:func:`rule_rows` and stores its rows with the parses): the same rules on the
same JSON, so the same results.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from kb.checks.diagnostics import LightDiagnostic
from kb.checks.facts import FileFacts, Rec, record_of
from kb.checks.registry import FILE_RULES, load_rules

#: Formats the per-file rules read (the others have none).
RULED = ("tree", "experiment", "problem", "proposition", "method", "verified")


class _OneFile:
    """The part of :class:`kb.checks.facts.Facts` a per-file rule reads, for one file."""

    def __init__(self, config: Any, path: str, objects: list[Any], data: Optional[bytes]) -> None:
        self.config = config
        self._path = path
        self._objects = objects
        self._data = data

    def records(self, path: str) -> list[Any]:
        return self._objects if path == self._path else []

    def read(self, path: str) -> Optional[bytes]:
        return self._data if path == self._path else None


def rule_rows(config: Any, path: str, blob: str, fmt: Optional[str], object_rows: list[tuple],
              data: Optional[bytes]) -> list[tuple]:
    """``kb_check_diags`` rows ``(path, blob, line, col, code, severity, message, fix JSON)``
    of the per-file rules on one parsed file; ``object_rows`` are its ``objects`` rows
    (``data`` JSON last). Empty for formats without per-file rules."""
    if fmt not in RULED:
        return []
    # as Facts.full_rows reads them: one per place, in line order
    objects = [json.loads(r[-1], object_hook=Rec)
               for r in sorted(dict.fromkeys(object_rows), key=lambda r: r[6])]
    return _rules_on(config, path, blob, fmt, objects, data)


def parsed_rule_rows(config: Any, path: str, blob: str, res: Any, data: bytes) -> list[tuple]:
    """:func:`rule_rows` of file ``path`` at ``blob`` (bytes ``data``) from its parse
    ``res`` (a :class:`kb.model.ParseResult`): the rules read the records of the parsed
    objects (:func:`kb.checks.facts.record_of`), equal to those its stored JSON gives,
    with no JSON written and read (a forked child checking the tip's tree.md that
    ``kb verify --range`` parsed before the fork)."""
    if res.kind not in RULED:
        return []
    objects = [record_of(o) for o in sorted(res.objects, key=lambda o: o.line)]
    return _rules_on(config, path, blob, res.kind, objects, data)


def _rules_on(config: Any, path: str, blob: str, fmt: str, objects: list[Any],
              data: Optional[bytes]) -> list[tuple]:
    """The per-file rules on one file's records, as ``kb_check_diags`` rows."""
    load_rules()
    ff = FileFacts(_OneFile(config, path, objects, data), path, fmt)  # type: ignore[arg-type]
    out = []
    for rule in FILE_RULES:
        for d in rule.func(ff):
            x = LightDiagnostic.of(d)
            out.append((path, blob, x.line, x.col, x.code, x.severity, x.message, x.fix_json()))
    return out

