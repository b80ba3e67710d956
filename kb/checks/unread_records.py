"""Records a change of kb.toml's ``[paths]`` stops reading (KB301), or carries along (KB307).

Both sides of a change are read through one kb.toml (the staged index's, the working
tree's, a range's tip's), so a record the base's own kb.toml read where the new one
reads something else or nothing (a folder setting moved, its files left behind) is on
neither side and no rule saw it go. Only when ``[paths]`` differs between the base's
kb.toml and the change's, the base commit's files at the old and the new place of each
key that moved are listed from git, and those the two files classify differently are
parsed with the base's configuration. A record found there is *carried* when the new
side still declares its ID (the folder moved with it), else *unread*: KB301 reports it
as it reports a deletion. Cost: nothing unless ``[paths]`` changed (the hook's hot path),
then what those folders hold.

The snapshot rules meet the same blind spot: an error of the new side (tree.md's Evidence
naming an experiment left behind) is pre-existing when the base has it, and the base
read through the new kb.toml has it too. :func:`own_reading` gives the base as its own
``[paths]`` read it, which :func:`kb.checks.judge.check_snapshots` judges against when the
change moves a ``[paths]`` key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping, NamedTuple, Optional

from kb import git
from kb.checks.facts import NAMESPACE
from kb.parse import classify, parse_file

#: Formats whose records KB301 guards -> the ``[paths]`` key that places them.
_KEY_OF = {"tree": "tree", "experiment": "experiments", "problem": "problems",
           "proposition": "propositions", "method": "methods"}
#: Kinds of object KB301 guards (history_rules.KINDS; not imported: that module imports this).
_GUARDED = ("hypothesis", "experiment", "problem", "proposition", "method")


class Unread(NamedTuple):
    """A record the base's kb.toml read that the change's kb.toml no longer reads."""

    id: str
    kind: str
    path: str  # KB-relative, where the base declared it
    line: int
    key: str  # the [paths] key whose move hides it
    was: str  # that key's value in the base's kb.toml
    now: str  # and in the change's
    kept: bool  # its file is still there (left behind), not deleted by the change


class Moved(NamedTuple):
    """What a ``[paths]`` change did to the records its base read at the places it moved."""

    #: (namespace, ID) of the records the new side still declares: moved, not new (KB307)
    carried: frozenset[tuple[str, str]]
    unread: tuple[Unread, ...]
    #: (namespace, ID) of a carried record -> its status in the base (KB312: settled before)
    was: Mapping[tuple[str, str], Optional[str]] = MappingProxyType({})


_NONE = Moved(frozenset(), ())


def moved_keys(old: Any, new: Any) -> list[str]:
    """The ``[paths]`` keys whose value differs between configurations ``old`` and ``new``."""
    if old is None or new is None or old is new or old.paths == new.paths:
        return []
    return sorted(k for k in set(old.paths) | set(new.paths) if old.paths.get(k) != new.paths.get(k))


def moved_records(c: Any) -> Moved:
    """What the ``[paths]`` change of :class:`kb.checks.changes.Change` ``c`` does to the
    records its base read: carried along, or no longer read. Raises GitError when git fails."""
    keys = moved_keys(c.config, c.new_config)
    base = c.through_new or c.base  # (the base as the change's kb.toml reads it)
    rev = base.snap.rev
    if not keys or rev is None:
        return _NONE  # kb.toml's [paths] as they were (the hot path), or no history
    # KB301, KB307 and the range's memory of removed IDs (removed_ids) ask in turn
    found = c.memo.get("moved_records")
    if found is None:
        found = c.memo["moved_records"] = _judge(c, base, keys, rev)
    return found


def _judge(c: Any, base: Any, keys: list[str], rev: str) -> Moved:
    old, new = c.config, c.new_config
    places = {v for k in keys for v in (old.paths.get(k), new.paths.get(k)) if v is not None}
    # Only a file the two configurations read differently can lose its records; one
    # both read alike is judged by the other rules.
    at_risk = {p: (b, fmt) for p, b in _listing(c.kb, rev, places).items()
               if (fmt := classify(p, old)) in _KEY_OF and fmt != classify(p, new)}
    if not at_risk:
        return _NONE
    kept_by_commit = _own_reading(c, keys)
    deleted = {ch.path for ch in c.changes if ch.new is None}
    blobs = git.read_blobs([b for b, _ in at_risk.values()], c.kb.top)
    carried: set[tuple[str, str]] = set()
    was: dict[tuple[str, str], Optional[str]] = {}
    unread: dict[tuple[str, str], Unread] = {}
    for path, (blob, fmt) in sorted(at_risk.items()):
        data = blobs.get(blob)
        if data is None:
            continue
        for obj in parse_file(path, data, old, fmt).objects:
            if obj.kind not in _GUARDED:
                continue
            ns = NAMESPACE[obj.kind]
            kinds = tuple(k for k, v in NAMESPACE.items() if v == ns)
            if (ns, obj.id) in carried or (ns, obj.id) in unread or base.find(obj.id, kinds):
                continue  # (read in the base by the new kb.toml too: KB301 judges it as usual)
            if (c.new.find(obj.id, kinds) if kept_by_commit is None
                    else (ns, obj.id) in kept_by_commit):
                carried.add((ns, obj.id))
                was[(ns, obj.id)] = getattr(obj, "status", None)
                continue
            key = _blamed(path, fmt, keys, new)
            unread[(ns, obj.id)] = Unread(obj.id, obj.kind, path, obj.line, key,
                                          str(old.paths.get(key)), str(new.paths.get(key)),
                                          path not in deleted)
    return Moved(frozenset(carried), tuple(unread.values()), MappingProxyType(was))


def _own_reading(c: Any, keys: list[str]) -> Optional[set[tuple[str, str]]]:
    """None when the new side is read with the change's own ``[paths]`` (the staged index,
    the working tree, a range's tip): its facts say what it declares. A range reads its
    earlier commits through the tip's kb.toml; when that one moved a path again, the
    commit's own files at the changed places, read with its own kb.toml, say it instead."""
    new = c.new_config
    if c.new.config.paths == new.paths or c.commit is None:
        return None
    places = {v for k in keys for v in (c.config.paths.get(k), new.paths.get(k)) if v is not None}
    files = {p: b for p, b in _listing(c.kb, c.commit, places).items()
             if classify(p, new) in _KEY_OF}
    blobs = git.read_blobs(files.values(), c.kb.top)
    return {(NAMESPACE[o.kind], o.id) for p, b in files.items() if b in blobs
            for o in parse_file(p, blobs[b], new).objects if o.kind in _GUARDED}


@contextmanager
def own_reading(base_f: Any, paths: dict[str, str]) -> Iterator[Optional[Any]]:
    """Yield the commit of :class:`kb.checks.facts.Facts` ``base_f`` read with its own
    ``[paths]`` (``paths``, from its kb.toml), every other setting as ``base_f`` was read
    (severities, disabled rules, the ID grammar: only the layout differs); None
    when ``base_f`` is no commit (the empty history). Raises GitError when git fails.

    The files both layouts read alike are ``base_f``'s, parsed already; the others (a
    moved key's old folder) are parsed into ``base_f``'s index -- the layout it was read
    with does not read them, so their parses meet no other reading there. When the two
    layouts read one file as different formats (an old folder the new layout calls
    misplaced), that file's parse in the index is the other layout's (one parse per path
    and blob): the base is then read apart, into an index of its own, thrown away after."""
    from kb.checks.facts import Facts
    from kb.checks.results import snapshot_key
    from kb.repo import commit_snapshot

    rev = base_f.snap.rev
    if rev is None:
        yield None
        return
    k = dataclasses.replace(base_f.kb, config=dataclasses.replace(base_f.config, paths=dict(paths)))
    snap = commit_snapshot(k, rev)
    theirs = base_f.formats
    if all(theirs.get(p, fmt) == fmt for p, fmt in snap.formats.items()):
        own = Facts(base_f.index, snap, base_f.label, derive_from=base_f)
        # its stored results apart from those of the same files under another layout
        layout = json.dumps(paths, sort_keys=True).encode("utf-8", "surrogateescape")
        own.results_key = f"{snapshot_key(own)}:paths:{hashlib.sha1(layout).hexdigest()}"
        yield own
        return
    import tempfile
    from pathlib import Path

    from kb.index import Index

    with tempfile.TemporaryDirectory(prefix="kb-layout-") as folder, \
            Index(k, Path(folder) / "index.sqlite") as idx:
        yield Facts(idx, snap, base_f.label)


@contextmanager
def own_layout(facts: Any) -> Iterator[Any]:
    """Yield :class:`kb.checks.facts.Facts` ``facts`` of a commit read as that commit's own
    kb.toml's ``[paths]`` reads it (:func:`own_reading`): ``facts`` itself when it has no
    commit or its kb.toml places files alike (the usual case: one cached kb.toml read and
    two dicts compared); else a second parse only of what a moved key places."""
    from kb.checks.targets import config_at

    rev = facts.snap.rev
    cfg = config_at(facts.kb, rev) if rev else None
    if cfg is None or cfg.paths == facts.config.paths:
        yield facts
        return
    with own_reading(facts, cfg.paths) as own:
        yield own if own is not None else facts


@contextmanager
def commit_facts(idx: Any, k: Any, rev: str, label: str) -> Iterator[Any]:
    """Yield :class:`kb.checks.facts.Facts` of commit ``rev`` of KB ``k`` (index ``idx``)
    read as ``rev``'s own kb.toml's ``[paths]`` reads it (:func:`own_layout`): the IDs one
    side of a merge declares where its layout puts them (upstream moved ``tree.md`` to
    ``hyp.md``: the upstream's hypotheses are in ``hyp.md``). Every other setting is ``k``'s."""
    from kb.checks.facts import Facts
    from kb.repo import commit_snapshot

    with own_layout(Facts(idx, commit_snapshot(k, rev), label)) as facts:
        yield facts


def _inside(path: str, place: str) -> bool:
    folder = place.strip().strip("/")
    return folder in ("", ".") or path == folder or path.startswith(folder + "/")


def _blamed(path: str, fmt: str, keys: list[str], new: Any) -> str:
    """The moved key that hides ``path``: the key of its own records when that moved,
    else one whose new place now covers the file (it reads the file as something else)."""
    own = _KEY_OF[fmt]
    if own in keys:
        return own
    return next((k for k in keys if _inside(path, new.paths.get(k) or "")), keys[0])


def _listing(kb: Any, rev: str, places: Iterable[str]) -> dict[str, str]:
    """KB-relative path -> blob id of the files of commit ``rev`` at ``places`` (folders or
    files of ``[paths]``); symlinks are left out (their targets are listed where they lie)."""
    specs = set()
    for place in places:
        rel = place.strip().strip("/")
        specs.add(kb.repo_path(rel) if rel not in ("", ".") else (kb.prefix or "."))
    # --literal-pathspecs: a folder named with *, ? or [ is a name, not a pattern
    proc = git.run(["--literal-pathspecs", "ls-tree", "-r", "-z", rev, "--", *sorted(specs)],
                   kb.top)
    out = {}
    for e in git.tree_entries(proc.stdout):
        if e.type != "blob" or e.mode == "120000":
            continue
        rel = kb.rel(e.path)
        if rel is not None:
            out[rel] = e.oid
    return out
