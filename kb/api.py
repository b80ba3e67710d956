"""Read use cases behind ``kb index``, ``kb ls``, ``kb show`` and ``kb find``.

Every function opens the KB containing ``path`` (default: the current
directory), refreshes the index incrementally and answers from it. They raise
:class:`kb.errors.KbError` subclasses for environment problems and return
plain data for the CLI (or an agent) to format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kb.errors import UsageError
from typing import TYPE_CHECKING

from kb.index import Index, ObjectRow, RefreshStats, note
from kb.repo import KnowledgeBase, open_kb
from kb.vocab import KIND_PLURALS

if TYPE_CHECKING:
    from kb.model import Diagnostic

KIND_ORDER = ("hypothesis", "experiment", "problem", "proposition", "method", "verified",
              "direction", "record")


@dataclass
class IndexReport:
    """Result of :func:`index_kb`: counts per kind (display order) and diagnostics."""

    root: Path
    stats: RefreshStats
    counts: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)


class _Kept:
    """A caller's open index, used in a ``with`` block without closing it."""

    def __init__(self, idx: Index) -> None:
        self.idx = idx

    def __enter__(self) -> Index:
        return self.idx

    def __exit__(self, *exc: object) -> None:
        return None


def _open(path: str | Path | None, idx: Index | None = None) -> tuple[KnowledgeBase, Any]:
    """The KB and a refreshed index; with ``idx`` (a long-running server's, already
    refreshed) that one, left open."""
    if idx is not None:
        return idx.kb, _Kept(idx)
    k = open_kb(Path(path) if path else None)
    idx = Index(k)
    idx.refresh()
    return k, idx


def index_kb(path: str | Path | None = None) -> IndexReport:
    """Index the KB incrementally; return counts and every parse diagnostic."""
    k = open_kb(Path(path) if path else None)
    with Index(k) as idx:
        stats = idx.refresh(check=True)  # `kb index`: every cached parse's check too
        raw = idx.counts()
        counts = {kind: raw[kind] for kind in KIND_ORDER if raw.get(kind)}
        diags = list(k.config.warnings) + idx.diagnostics()
    return IndexReport(root=k.root, stats=stats, counts=counts, diagnostics=diags)


def _priority_key(row: ObjectRow) -> tuple[int, int, str]:
    p = row.fields().get("priority")
    if p == "never":
        return (2, 0, row.id)
    if isinstance(p, int):
        return (0, p, row.id)
    return (1, 0, row.id)


def _natural(obj_id: str) -> list[Any]:
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", obj_id)]


def list_objects(kind: str | None = None, status: str | None = None,
                 path: str | Path | None = None,
                 idx: Index | None = None, with_data: bool = True) -> tuple[KnowledgeBase, list[ObjectRow]]:
    """Objects of one kind (an ``ls`` name such as ``problems``), optionally by status.

    Problems are sorted by priority with ``never`` last; hypotheses in tree
    order; other kinds by natural ID order. ``status`` accepts either
    language for hypotheses and experiments. Raises UsageError for an
    unknown kind. ``with_data=False`` leaves every row's JSON out (``data``
    is ``"{}"``): ID, kind, status, title, path and line only, for listings of
    100,000 rows (the problems' priority order still reads it).
    """
    one = None
    if kind:
        one = KIND_PLURALS.get(kind) or (kind if kind in KIND_ORDER else None)
        if one is None:
            raise UsageError(f"unknown kind {kind!r}; use one of: {', '.join(KIND_PLURALS)}")
    if status:
        from kb.vocab import EXPERIMENT_STATUS, HYPOTHESIS_STATUS

        vocab = EXPERIMENT_STATUS if one == "experiment" else HYPOTHESIS_STATUS
        status = vocab.canonical(status) or status
    k, opened = _open(path, idx)
    with opened as ix:
        rows = ix.objects(one, status, with_data=with_data or one in (None, "problem"))
        _note_unreadable(ix)
    if one == "problem":
        rows.sort(key=_priority_key)
    elif one != "hypothesis":
        rows.sort(key=lambda r: (KIND_ORDER.index(r.kind), _natural(r.id)))
    return k, rows


def _note_unreadable(ix: Index) -> None:
    """One note when files kb cannot read may hide objects from a listing."""
    n, first = ix.unreadable()
    bad = [d for d in ix.kb.config.warnings if d.severity == "error"]
    if bad:  # a configuration error (a file path that is a directory) hides more
        n, first = n + 1, first or f"kb.toml:{bad[0].line} {bad[0].code}"
    if n:
        note(f"kb: {n} file(s) have errors and may hold objects not listed (first: {first}); "
             f"`kb index` lists them")


def show_object(obj_id: str, path: str | Path | None = None,
                idx: Index | None = None) -> tuple[KnowledgeBase, list[dict[str, Any]]]:
    """Everything known about ``obj_id``: fields, file and line, entries, links.

    Returns one dict per declaration (several when the ID is duplicated);
    an empty list when the ID is unknown. Links: ``parent``, ``children``,
    ``evidence``, ``dependencies``, ``dependants`` and every other link kind
    in ``links_out`` / ``links_in``.
    """
    k, opened = _open(path, idx)
    with opened as ix:
        rows = ix.get(obj_id)
        out_links, in_links = ix.links(obj_id)
        # Experiments that name this hypothesis; problems that depend on it.
    result = []
    for r in rows:
        data = r.fields()
        data.pop("anchor_lines", None)
        links = {
            "links_out": [{"to": d, "kind": kd} for _, d, kd in out_links],
            "links_in": [{"from": s, "kind": kd} for s, _, kd in in_links],
            "dependencies": [d for _, d, kd in out_links if kd == "depends"],
            "dependants": sorted({s for s, _, kd in in_links if kd == "depends"}),
            "experiments": sorted({s for s, _, kd in in_links if kd == "tests"}),
        }
        data.update(links)
        data["path"] = r.path
        data["line"] = r.line
        data["blob"] = r.blob  # what --expect takes for an edit of this file
        result.append(data)
    return k, result


def find_objects(text: str, path: str | Path | None = None,
                 idx: Index | None = None) -> tuple[KnowledgeBase, list[ObjectRow]]:
    """Objects whose ID, title or statement contains ``text`` (case-insensitive)."""
    if not text.strip():
        raise UsageError("kb find needs a non-empty TEXT")
    k, opened = _open(path, idx)
    with opened as ix:
        found = ix.search(text)
        _note_unreadable(ix)
        return k, found
