"""What the rules read: one snapshot, answered from the index (DESIGN.md §6).

:class:`Facts` wraps a :class:`kb.repo.Snapshot` whose blobs the index has
parsed. Whole-snapshot questions (every ID, every reference) are answered
from light rows (``id kind status path line``) and the ``links`` table, never
by building thousands of models; models are built only for the files
a rule looks at closely (a changed file). A snapshot that differs from an
already loaded one in a few files is *derived* from it, so a second snapshot
of the same KB costs what its changed files cost.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple, Optional

from kb import git, index_facts, index_results
from kb.fileio import READ_FLAGS, read_fd
from kb.index_facts import SnapshotTable

__all__ = ["NAMESPACE", "CARD_KINDS", "XREF_LINKS", "Rec", "Obj", "Light", "Facts", "FileFacts",
           "checkout_bytes", "known_history", "light_versions", "record_of", "reset_run_cache"]

if TYPE_CHECKING:  # pragma: no cover
    from kb.index import Index, ObjectRow
    from kb.repo import KnowledgeBase, Snapshot

#: Object kind -> ID namespace (cards of the three kinds share one; Verified
#: cards carry the ID of the object they settle, so they have their own).
NAMESPACE = {
    "hypothesis": "hypothesis", "experiment": "experiment", "problem": "card",
    "proposition": "card", "method": "card", "verified": "verified",
    "direction": "direction", "record": "record",
}
CARD_KINDS = ("problem", "proposition", "method")
#: Link kinds the cross-file rules read.
XREF_LINKS = ("evidence", "tests", "depends", "depended_by", "claims", "parent_method", "submethod")


class Rec(dict):
    """A JSON object whose keys read as attributes (a missing key reads as None)."""

    __slots__ = ()

    # ``dict.get`` itself, not a method calling it: the rules read a tree's
    # thousands of records field by field, and a Python frame per read cost a
    # fifth of the tree's per-file rules.
    __getattr__ = dict.get


def _field_properties() -> None:
    """Every field of kb's models a property of :class:`Rec` reading its key (None when
    missing, as ``__getattr__``). ``__getattr__`` runs only after the normal lookup has
    failed and raised an AttributeError; for a tree's thousands of records that cost
    more than the rules' own work (KB204: ~10 µs a hypothesis). A property is found
    first, and ``methodcaller`` runs no Python frame. Names of dict's own methods are
    left as they are."""
    import dataclasses
    import operator

    from kb import model

    names = {f.name for cls in vars(model).values()
             if isinstance(cls, type) and dataclasses.is_dataclass(cls)
             for f in dataclasses.fields(cls)}
    for name in sorted(names - set(dir(dict))):
        setattr(Rec, name, property(operator.methodcaller("get", name)))


_field_properties()


def record_of(obj: Any) -> Rec:
    """The record :meth:`Facts.records` reads for a parsed object -- its ``objects`` JSON
    (:func:`kb.index_rows.result_rows`) loaded into :class:`Rec` -- built from the
    object itself, without writing and reading the JSON (a tree of thousands of
    hypotheses checked right after its parse: issue 18). Models become records of
    their fields, tuples lists; an object holding anything else (entries, whose
    stored JSON leaves their text out; a key that is not a string; another type)
    goes through its JSON."""
    try:
        if obj.__dict__.get("entries"):
            raise TypeError("entries")
        return _record(obj.__dict__)
    except TypeError:
        from kb.index_rows import object_json

        return json.loads(object_json(obj), object_hook=Rec)


def _record(fields: dict) -> Rec:
    out = Rec()
    for key, v in fields.items():
        if type(key) is not str:
            raise TypeError("key")
        t = type(v)
        if t is str or t is int or t is bool or t is float or v is None:
            out[key] = v
        else:
            out[key] = _value(v)
    return out


def _value(v: Any) -> Any:
    t = type(v)
    if t is str or t is int or t is bool or t is float or v is None:
        return v
    if t is tuple or t is list:
        return [_value(x) for x in v]
    if t is dict:
        return _record(v)
    from kb.model import json_default

    return _record(json_default(v))  # a model's fields, as its JSON holds them; else TypeError


class Obj(NamedTuple):
    """A light object row: enough for IDs and references across a snapshot."""

    id: str
    kind: str
    status: str
    path: str
    line: int
    blob: str

    @property
    def where(self) -> str:
        """``path:line`` of the object's declaration (1-based line), as diagnostics name it."""
        return f"{self.path}:{self.line}"


class Light(NamedTuple):
    """What history rules compare for one object (read with SQLite's json_extract).

    ``statement`` is a hypothesis's or card's statement, an experiment's title.

    ``evidence_json`` is the raw JSON array; :attr:`evidence` parses it.
    """

    id: str
    kind: str
    ns: str
    status: str
    path: str
    line: int
    statement: str
    evidence_json: str
    evidence_line: int
    status_line: int
    hypothesis: str

    @property
    def evidence(self) -> tuple[str, ...]:
        """The evidence IDs (``evidence_json`` parsed), in file order; () when none."""
        return tuple(json.loads(self.evidence_json)) if self.evidence_json else ()


#: (index file, path, blob) -> Light rows; cleared at the start of every verify run.
_LIGHT_CACHE: dict[tuple[str, str, str], list[Light]] = {}


def _from_checkout(root: Path, files: dict[str, str]) -> tuple[dict[str, bytes], dict[str, str]]:
    """Of ``files`` (path -> blob id), the bytes the checkout holds as that blob, and the
    rest (path -> blob id) to read from git."""
    out: dict[str, bytes] = {}
    rest: dict[str, str] = {}
    for p, blob in files.items():
        data = checkout_bytes(root, p, blob)
        if data is None:
            rest[p] = blob
        else:
            out[p] = data
    return out, rest


def checkout_bytes(root: Path, path: str, blob: str) -> Optional[bytes]:
    """The bytes of the regular file ``root / path`` when they are blob ``blob`` (git's
    SHA-1, or SHA-256 for a 64-digit id), else None: a symlink, a special file, a
    missing or unreadable file, or other content. What git would give, read cheaper
    (string paths and raw descriptors: a fresh-clone range check reads every file)."""
    full = os.path.join(root, path)
    try:
        if not _NOFOLLOW and not stat.S_ISREG(os.lstat(full).st_mode):
            return None
        fd = os.open(full, READ_FLAGS | _NOFOLLOW)
    except OSError:
        return None
    try:
        # kb.fileio's one reader of work-tree bytes: one fstat and one read of a regular
        # file, any other kind refused (SpecialFileError, IsADirectoryError: OSErrors)
        data = read_fd(fd, full)
    except OSError:
        return None
    finally:
        os.close(fd)
    h = (hashlib.sha256 if len(blob) == 64 else hashlib.sha1)(b"blob %d\0" % len(data))
    h.update(data)  # no copy of the file's bytes behind the header
    return data if h.hexdigest() == blob else None


#: ``Obj._make`` and ``Light._make`` without their Python frame and length check (the
#: rows are the index's, of the right length): a snapshot builds thousands at once.
_MAKE_OBJ = functools.partial(tuple.__new__, Obj)
_MAKE_LIGHT = functools.partial(tuple.__new__, Light)


def _path_of(row: "Obj") -> str:
    return row.path


def _first(row: tuple) -> Any:
    return row[0]


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


#: Light rows of file versions not parsed in full, per index (``id(index)``):
#: ``{(path, blob): (objects, links, anchor lines)}`` (:mod:`kb.parse.light`). A range
#: check registers its untouched cards here (:func:`light_versions`); every
#: :class:`Facts` of that index answers from them as from the index's rows, and
#: parses such a file in full when a rule asks for more (its JSON, its metadata).
_LIGHT_ROWS: dict[int, dict[tuple[str, str], Any]] = {}
#: The same rows by object ID, per index: ``{id: [row, …]}`` (for point queries).
_LIGHT_BY_ID: dict[int, dict[str, list[tuple]]] = {}


def _light_by_id(index: "Index") -> dict[str, list[tuple]]:
    """The light rows of :class:`light_versions` for ``index`` by object ID, built on
    first use: a range check's history rules ask for a few IDs, in the process that
    runs them (:func:`kb.checks.verify_range._at_once`), and its snapshot rules none."""
    key = id(index)
    by_id = _LIGHT_BY_ID.get(key)
    if by_id is None:
        by_id = {}
        for res in _LIGHT_ROWS.get(key, {}).values():
            for r in res[0]:
                by_id.setdefault(r[0], []).append(r)
        _LIGHT_BY_ID[key] = by_id
    return by_id


class light_versions:
    """Context manager: ``rows`` (``{(path, blob): light result}``) stand for those file
    versions' parses in every :class:`Facts` of ``index`` until the block ends."""

    def __init__(self, index: "Index", rows: dict[tuple[str, str], Any]) -> None:
        self.index = index
        self.rows = rows

    def __enter__(self) -> dict[tuple[str, str], Any]:
        _LIGHT_ROWS[id(self.index)] = self.rows
        _LIGHT_BY_ID.pop(id(self.index), None)  # built when first asked (_light_by_id)
        return self.rows

    def __exit__(self, *exc: Any) -> None:
        _LIGHT_ROWS.pop(id(self.index), None)
        _LIGHT_BY_ID.pop(id(self.index), None)


#: History rows (:func:`kb.index_facts.history_rows`) of file versions the index
#: stores, known already, per index: ``{(path, blob): rows}``. A range check derives
#: its tree versions one from another and knows their rows so
#: (:func:`kb.checks.tree_versions.splice_tree_version`); :meth:`Facts.light` takes
#: them from here instead of reading every object's JSON again.
_KNOWN_HISTORY: dict[int, dict[tuple[str, str], list[tuple]]] = {}


class known_history:
    """Context manager: ``rows`` (``{(path, blob): history rows}``, equal to what
    :func:`kb.index_facts.history_rows` reads of those stored versions) answer
    :meth:`Facts.light` for ``index`` until the block ends."""

    def __init__(self, index: "Index", rows: dict[tuple[str, str], list[tuple]]) -> None:
        self.index = index
        self.rows = rows

    def __enter__(self) -> dict[tuple[str, str], list[tuple]]:
        _KNOWN_HISTORY[id(self.index)] = self.rows
        return self.rows

    def __exit__(self, *exc: Any) -> None:
        _KNOWN_HISTORY.pop(id(self.index), None)


def reset_run_cache() -> None:
    """Forget the history rows shared by the snapshots of a run (a new run starts)."""
    _LIGHT_CACHE.clear()


class Facts:
    """One snapshot of one KB as the rules see it (read through ``index``).

    ``label`` names the snapshot in messages (``HEAD``, ``the staged index``,
    a short commit id, ``the working tree``). The index parses what it lacks:
    every file (the default), the files that differ from ``derive_from``, or
    only the paths in ``ensure`` (history checks of one commit of a range).
    """

    def __init__(self, index: "Index", snap: "Snapshot", label: str,
                 derive_from: Optional["Facts"] = None,
                 ensure: Optional[Iterable[str]] = None) -> None:
        self.index = index
        self.snap = snap
        self.kb: "KnowledgeBase" = snap.kb
        self.config = snap.kb.config
        self.files = snap.files
        self.formats = snap.formats
        self.label = label
        self._parent = derive_from
        self._differing: Optional[list[str]] = None  # :meth:`_differs`, once
        self._rows: Optional[list[Obj]] = None
        self._links: Optional[list[tuple[str, str, str, str]]] = None
        self._by_ns: Optional[dict[tuple[str, str], list[Obj]]] = None
        self._ids: Optional[dict[str, set[str]]] = None
        self._by_kind: Optional[dict[str, list[Obj]]] = None
        self._table = SnapshotTable(index, self.files)
        #: The key its results are stored under (set by :func:`kb.checks.results.snapshot_key`).
        self.results_key: Optional[str] = None
        self._full: dict[str, list["ObjectRow"]] = {}
        self._models: dict[str, list[Any]] = {}
        self._light: dict[str, list[Light]] = {}
        self._lightkeys: Optional[list[tuple[str, str]]] = None
        self._fields: dict[tuple[str, str], list[tuple[str, Any]]] = {}
        if ensure is not None:
            self._ensure({p: self.files[p] for p in ensure if p in self.files})
        elif derive_from is not None:
            from kb.repo import differing_paths

            near = differing_paths(snap, derive_from.snap)
            if near is not None:  # derived from it: the paths patched are all that may differ
                changed = {p: self.files[p] for p in near if p in self.files}
            else:
                changed = {p: self.files[p] for p in self._differs()}
            self._ensure(changed)
        if ensure is None and derive_from is None:
            lt = self._lt()
            if lt:
                # The few files not read light, looked up alone: the snapshot's table
                # is made when a rule needs it (a range check's snapshot and history
                # rules each make their own, in a process of their own).
                rest = {p: b for p, b in self.files.items() if (p, b) not in lt}
                missing = SnapshotTable(index, rest).unparsed() if len(rest) > 256 else list(rest)
                self._ensure({p: rest[p] for p in missing})
            elif len(self.files) > 256:
                # What the cache lacks, found by SQLite (the index would load every
                # (path, blob) it holds into Python to find out), in the runs of files
                # not known to be parsed whole (the digests are the results key's).
                from kb.digests import file_runs

                missing = index_facts.unparsed_runs(index, self.files, file_runs(snap), self._table)
                self._ensure({p: self.files[p] for p in missing})
            else:
                index.ensure(snap)

    # -- loading ---------------------------------------------------------------
    def table(self) -> SnapshotTable:
        """The snapshot as a temporary table of the index (for whole-snapshot queries:
        the cost follows the snapshot, not what else the cache holds)."""
        return self._table

    def _lt(self) -> Optional[dict[tuple[str, str], Any]]:
        """The light rows registered for this index (:class:`light_versions`), or None."""
        return _LIGHT_ROWS.get(id(self.index)) if _LIGHT_ROWS else None

    def _light_files(self) -> list[tuple[str, str]]:
        """(path, blob) of this snapshot's files that had light rows only when first
        asked (one may have been parsed in full since: check it is still in :meth:`_lt`)."""
        if self._lightkeys is None:
            lt = self._lt()
            self._lightkeys = [(p, b) for p, b in self.files.items() if (p, b) in lt] if lt else []
        return self._lightkeys

    def _full_parse(self, paths: Iterable[str]) -> None:
        """Parse in full those of ``paths`` that have light rows only (a rule asks for
        their JSON or metadata); they are then read from the index like any other. A
        tree version the index holds derived (:meth:`kb.index.Index.put_derived`) is
        stored instead."""
        lt = self._lt()
        if not lt:
            return
        todo = [(p, self.files[p]) for p in paths if (p, self.files.get(p)) in lt]
        if todo:
            self.index.ensure_versions([(p, b, self.formats[p]) for p, b in todo])
            for key in todo:
                lt.pop(key, None)
            if any(self.index.derived(p, b) for p, b in todo):
                self.index.store_derived()

    def _held(self) -> bool:
        """Whether the joins may leave out the versions the index holds unstored
        (:meth:`kb.index.Index.put_derived`): those of this snapshot all have light
        rows here, added by the caller. False stores them first."""
        held = self.index.held()
        if not held:
            return True
        lt = self._lt() or {}
        files = self.files
        return all(files.get(p) != b or (p, b) in lt for p, b in held)

    def _ensure(self, subset: dict[str, str]) -> None:
        if not subset:
            return
        from kb.repo import Snapshot

        part = Snapshot(kb=self.kb, kind=self.snap.kind, rev=self.snap.rev,
                        files=dict(subset), formats={p: self.formats[p] for p in subset})
        self.index.ensure(part)

    def _differs(self) -> list[str]:
        """The paths whose blob differs from the snapshot this one derives from, in this
        one's order (a pass over every file: computed once)."""
        if self._differing is None:
            other = self._parent.files if self._parent else {}
            self._differing = [p for p, b in self.files.items() if other.get(p) != b]
        return self._differing

    def rows(self) -> list[Obj]:
        """Every object of the snapshot (light rows): by path, each file's in line order (a
        snapshot derived from another: its rows, then those of the files that differ)."""
        if self._rows is None:
            files = self.files
            make = _MAKE_OBJ
            lt = self._lt() or {}
            if self._parent is not None:
                rows = [r for r in self._parent.rows() if files.get(r.path) == r.blob]
                for p in self._differs():
                    have = lt.get((p, files[p]))
                    rows.extend(map(make, have[0] if have else
                                    index_facts.version_objects(self.index, p, files[p])))
            else:
                rows = list(map(make, self._table.objects(held=self._held())))
                for key in self._light_files():
                    have = lt.get(key)
                    if have is not None:
                        rows.extend(map(make, have[0]))
                # By path, each file's in its own order: the same whatever order the
                # index stored the files in (a cold or warm index, light rows or not).
                rows.sort(key=_path_of)
            # Two racing processes may have stored one parse twice: one object per place.
            self._rows = list(dict.fromkeys(rows))
        return self._rows

    def links(self) -> list[tuple[str, str, str, str]]:
        """(path, src, dst, kind) of the cross-file link kinds (:data:`XREF_LINKS`)."""
        if self._links is None:
            files = self.files
            lt = self._lt() or {}
            if self._parent is not None:
                links = [x for x in self._parent.links() if files.get(x[0]) == self._parent.files.get(x[0])]
                for p in self._differs():
                    have = lt.get((p, files[p]))
                    if have:
                        links.extend(x for x in have[1] if x[3] in XREF_LINKS)
                        continue
                    links.extend((p, s, d, k) for s, d, k in
                                 index_facts.version_links(self.index, p, files[p], XREF_LINKS))
            else:
                links = self._table.links(XREF_LINKS, held=self._held())
                for key in self._light_files():
                    have = lt.get(key)
                    if have is not None:
                        links.extend(x for x in have[1] if x[3] in XREF_LINKS)
                links.sort(key=_first)  # by path, as rows()
            self._links = list(dict.fromkeys(links))
        return self._links

    def duplicates(self) -> dict[tuple[str, str], list[Obj]]:
        """(namespace, id) -> declarations, for the IDs declared more than once
        (in path and line order)."""
        if self._by_ns is not None:
            return {k: v for k, v in self._by_ns.items() if len(v) > 1}
        ns = NAMESPACE
        seen: set[tuple[str, str]] = set()
        dup: set[tuple[str, str]] = set()
        add = seen.add
        for r in self.rows():
            key = (ns.get(r.kind, r.kind), r.id)
            if key in seen:
                dup.add(key)
            else:
                add(key)
        out: dict[tuple[str, str], list[Obj]] = {k: [] for k in dup}
        if dup:
            for r in self.rows():
                key = (ns.get(r.kind, r.kind), r.id)
                if key in out:
                    out[key].append(r)
            for v in out.values():
                v.sort(key=lambda r: (r.path, r.line))
        return out

    def by_ns(self) -> dict[tuple[str, str], list[Obj]]:
        """(namespace, id) -> its declarations, in path and line order."""
        if self._by_ns is None:
            out: dict[tuple[str, str], list[Obj]] = {}
            ns = NAMESPACE
            for r in self.rows():
                key = (ns.get(r.kind, r.kind), r.id)
                have = out.get(key)
                if have is None:
                    out[key] = [r]
                else:
                    have.append(r)
            for v in out.values():
                if len(v) > 1:
                    v.sort(key=lambda r: (r.path, r.line))
            self._by_ns = out
        return self._by_ns

    def _kinds(self) -> dict[str, list[Obj]]:
        if self._by_kind is None:
            by_kind: dict[str, list[Obj]] = {}
            for r in self.rows():
                have = by_kind.get(r.kind)
                if have is None:
                    by_kind[r.kind] = [r]
                else:
                    have.append(r)
            self._by_kind = by_kind
        return self._by_kind

    def ids(self, *kinds: str) -> set[str]:
        """IDs of objects of ``kinds`` (all kinds when none given)."""
        groups = self._kinds()
        if self._ids is None:
            self._ids = {k: {r.id for r in v} for k, v in groups.items()}
        if not kinds:
            return set().union(*self._ids.values())
        return set().union(*(self._ids.get(k, set()) for k in kinds))

    def of_kind(self, *kinds: str) -> list[Obj]:
        """The objects of ``kinds`` (kb.model kind names), in :meth:`rows` order; [] for an unknown kind."""
        groups = self._kinds()
        if len(kinds) == 1:
            return list(groups.get(kinds[0], ()))
        return [r for k in kinds for r in groups.get(k, ())]

    def kind_ids(self, kind: str) -> set[str]:
        """IDs of one kind (a targeted query when the rows are not loaded)."""
        if self._rows is not None or self._parent is not None:
            return self.ids(kind)
        out = self._table.ids_of_kind(kind, held=self._held())
        lt = self._lt()
        for key in self._light_files():
            have = lt.get(key) if lt else None
            if have is not None:
                out.update(r[0] for r in have[0] if r[1] == kind)
        return out

    def find(self, obj_id: str, kinds: Iterable[str]) -> list[Obj]:
        """Declarations of ``obj_id`` among ``kinds`` (a point query; no full load)."""
        kinds = tuple(kinds)
        if self._rows is not None:
            return [r for r in self._rows if r.id == obj_id and r.kind in kinds]
        files = self.files
        out = [Obj(i, k, s, p, ln, b) for p, b, i, k, s, ln in
               index_facts.declarations(self.index, obj_id, kinds) if files.get(p) == b]
        if self._lt():
            out.extend(Obj._make(r) for r in _light_by_id(self.index).get(obj_id, ())
                       if r[1] in kinds and files.get(r[3]) == r[5])
        return list(dict.fromkeys(out))

    def anchor_line(self, path: str, obj_id: str, key: str) -> int:
        """The 1-based line of anchor ``key`` of object ``obj_id`` in ``path``; its
        declaration line when it has no such anchor; 0 when it is not declared there."""
        have = (self._lt() or {}).get((path, self.files.get(path)))  # type: ignore[arg-type]
        if have is not None and have[2] is not None:  # a card's (a derived tree's: None)
            for r in have[0]:
                if r[0] == obj_id:
                    return have[2].get(key, r[4])
            return 0
        for r in self.full_rows(path):
            if r.id == obj_id:
                data = json.loads(r.data)
                return (data.get("anchor_lines") or {}).get(key, r.line)
        return 0

    def declared_line(self, path: str, obj_id: str) -> int:
        """The line of the first declaration of ``obj_id`` in ``path`` (0: none)."""
        have = (self._lt() or {}).get((path, self.files.get(path)))  # type: ignore[arg-type]
        if have is not None:
            return next((r[4] for r in have[0] if r[0] == obj_id), 0)
        return next((r.line for r in self.full_rows(path) if r.id == obj_id), 0)

    # -- one file in detail ----------------------------------------------------
    def paths(self, fmt: str) -> list[str]:
        """Paths of the snapshot with format ``fmt`` (``tree``, ``experiment``, …)."""
        return sorted(p for p, f in self.formats.items() if f == fmt)

    def full_rows(self, path: str) -> list["ObjectRow"]:
        """The objects of ``path`` with their JSON, in line order."""
        if path not in self._full:
            self._full_parse([path])
            blob = self.files.get(path)
            rows = [] if blob is None else self.index.rows_of(path, blob)
            self._full[path] = list(dict.fromkeys(rows))
        return self._full[path]

    def forget(self, path: str) -> None:
        """Drop what was loaded for ``path`` (rows with JSON, records)."""
        self._full.pop(path, None)
        self._models.pop(path, None)

    def records(self, path: str) -> list["Rec"]:
        """The objects of ``path`` as attribute-access records of their JSON
        (``h.id``, ``h.anchor_lines``, ``e.probability``): no model is built."""
        if path not in self._models:
            self._models[path] = [json.loads(r.data, object_hook=Rec) for r in self.full_rows(path)]
        return self._models[path]

    def light(self, path: str) -> list[Light]:
        """History view of the objects of ``path`` (no models built; the last few
        file versions are shared by every snapshot of the run)."""
        if path not in self._light:
            blob = self.files.get(path)
            known = _KNOWN_HISTORY.get(id(self.index), {}).get((path, blob)) \
                if _KNOWN_HISTORY and blob is not None else None
            if known is None:  # a version with light rows only: its JSON is read
                self._full_parse([path])
            out: list[Light] = []
            key = (str(self.index.path), path, blob)
            if blob is not None and key in _LIGHT_CACHE:
                self._light[path] = _LIGHT_CACHE[key]
                return self._light[path]
            if blob is not None:
                if known is None:
                    known = index_facts.history_rows(self.index, path, blob)
                make, ns = _MAKE_LIGHT, NAMESPACE.get  # thousands a tree version
                out = [make((i, k, ns(k, k), s, path, ln, stmt or "", ev or "", evl or 0,
                             stl or 0, hyp or ""))
                       for (i, k, s, ln, stmt, ev, evl, stl, hyp) in known]
            self._light[path] = list(dict.fromkeys(out))
            if blob is not None:
                _LIGHT_CACHE[key] = self._light[path]
                while len(_LIGHT_CACHE) > 8:
                    _LIGHT_CACHE.pop(next(iter(_LIGHT_CACHE)))
        return self._light[path]

    def meta(self, path: str) -> dict[str, Any]:
        """The parse metadata of ``path`` (newline, bom, next_steps, …)."""
        blob = self.files.get(path)
        if blob is None:
            return {}
        if not self.index.derived(path, blob):  # a held tree version's is known
            self._full_parse([path])
        return self.index.parse_meta(path, blob) or {}

    def read(self, path: str) -> Optional[bytes]:
        """The bytes of ``path`` in this snapshot (None when absent)."""
        if path not in self.files:
            return None
        return self.read_many([path]).get(path)

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The bytes of many paths at once (one request to git): path -> bytes, absent
        paths left out. A rule with fix text for hundreds of files reads them so.

        A staged or committed version is taken from the checkout when the file
        there holds exactly that blob (:func:`checkout_bytes`), else from git."""
        want = [p for p in dict.fromkeys(paths) if p in self.files]
        if self.snap.kind == "worktree":
            return self.snap.read(want)
        out, rest = _from_checkout(self.kb.root, {p: self.files[p] for p in want})
        if rest:
            out.update(self.snap.read(list(rest)))
        return out

    def read_listed(self, files: dict[str, str]) -> dict[str, bytes]:
        """The bytes of files listed apart from the KB's (verification records: path ->
        blob id, in the working tree a ``size:mtime_ns`` stamp), as :meth:`read_many`
        reads: from the checkout when it holds that blob, else one request to git; from
        disk in the working tree (never through a link leaving it). Unreadable: left out."""
        if self.snap.kind == "worktree":
            from kb.repo import read_worktree

            return read_worktree(self.kb, list(files))[0]
        out, rest = _from_checkout(self.kb.root, files)
        if rest:
            blobs = git.read_blobs(list(rest.values()), self.kb.top)
            out.update({p: blobs[b] for p, b in rest.items() if b in blobs})
        return out

    def parse_diagnostics(self, paths: Optional[Iterable[str]] = None) -> list[tuple]:
        """Parse diagnostics (raw rows: path, line, col, code, severity, message, fix JSON).

        ``paths`` limits the query (the default is every file of the snapshot).
        """
        files = self.files
        if paths is None:
            rows = self._table.parse_diagnostics()
        else:
            rows = []
            for p in paths:
                if p in files:
                    rows.extend((p, *r) for r in index_facts.version_diagnostics(self.index, p, files[p]))
        return list(dict.fromkeys(rows))

    # -- whole-snapshot reads a rule needs ----------------------------------------
    def field_of_kind(self, kind: str, field: str) -> list[tuple[str, Any]]:
        """``(path, value of the JSON field)`` of every object of ``kind`` (a file with
        light rows that carry ``field``, an experiment's ``date``, is not parsed for it)."""
        rows = self._fields.get((kind, field))
        if rows is None:  # kept: KB240 reads the experiments' dates twice
            extra = self._full_kind(kind, field)
            rows = self._table.field_of_kind(kind, field)
            if extra:
                rows = sorted(rows + extra, key=_first)
            self._fields[(kind, field)] = rows
        return list(rows)

    def data_of_kind(self, kind: str) -> list[tuple[str, str]]:
        """``(path, object JSON)`` of every object of ``kind``."""
        self._full_kind(kind)
        return self._table.data_of_kind(kind)

    def _full_kind(self, kind: str, field: Optional[str] = None) -> list[tuple[str, Any]]:
        """Parse in full the files with light rows only that declare objects of ``kind``,
        but for those whose light reading carries ``field`` (its fourth item, a dict):
        returns ``(path, value)`` of those objects instead."""
        light = self._light_files()
        extra: list[tuple[str, Any]] = []
        if light:
            lt = self._lt() or {}
            todo = []
            for p, b in light:
                have = lt.get((p, b))
                if have is None:
                    continue
                for r in have[0]:  # a loop, not any() over a generator: thousands of files
                    if r[1] == kind:
                        break
                else:
                    continue
                if field is not None and len(have) > 3 and field in have[3]:
                    extra.extend((p, have[3][field]) for r in have[0] if r[1] == kind)
                else:
                    todo.append(p)
            self._full_parse(todo)
        return extra

    def hypotheses_brief(self, path: str) -> list[tuple[str, str, str, Optional[str]]]:
        """``(id, statement, status, parent)`` of the hypotheses of tree file ``path``."""
        blob = self.files.get(path)
        return [] if blob is None else index_facts.hypotheses_brief(self.index, path, blob)

    # -- values rules keep between runs (a cache: lost values are computed again) ---
    def stored(self, key: str) -> Optional[str]:
        """The value a rule stored under ``key`` (:func:`kb.index_results.get`), or None."""
        return index_results.get(self.index, key)

    def store(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Store ``(key, value)`` pairs for later runs (a failure is skipped)."""
        index_results.put(self.index, pairs)


@dataclass
class FileFacts:
    """One parsed file of a snapshot, for the per-file rules."""

    facts: Facts
    path: str
    fmt: str

    @property
    def config(self) -> Any:
        """The snapshot's :class:`kb.config.Config` (from its kb.toml)."""
        return self.facts.config

    @property
    def objects(self) -> list[Rec]:
        """The objects parsed from this file, in line order (:meth:`Facts.records`)."""
        return self.facts.records(self.path)

    _lines: Optional[list[str]] = None

    def line_text(self, lineno: int) -> Optional[str]:
        """Line ``lineno`` (1-based) of the file without its ending, for fixes."""
        if self._lines is None:
            data = self.facts.read(self.path)
            if data is None:
                self._lines = []
            else:
                text = data.decode("utf-8", "replace")
                if text.startswith("\ufeff"):
                    text = text[1:]
                lines = text.split("\n")
                self._lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        if 1 <= lineno <= len(self._lines):
            return self._lines[lineno - 1]
        return None
