"""What changed between two snapshots of a KB: read from git, and as the history rules see it.

Changes are :class:`RawChange` values (KB-relative path, old and new blob
ids) read from ``git diff-*``; :func:`patch_files` applies them to a
``{path: blob}`` map, so a snapshot is derived from a neighbour without
listing a tree. A :class:`Change` is a base snapshot, a new one and the
changed paths between them: what the history rules (KB3xx) take.
Errors: :class:`kb.errors.GitError` when git fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional

from kb import git
from kb.checks.diagnostics import diag
from kb.checks.facts import Facts, Light
from kb.fileio import special_file

ZERO = "0" * 40


@dataclass(frozen=True)
class RawChange:
    """One changed path of a KB between two snapshots (KB-relative path).

    ``old`` / ``new`` are blob ids (None: absent on that side). It covers every
    path of the KB, also files kb does not parse (a file under Verified/ with
    any name), so rules decided on blob ids see them all.
    """

    path: str
    old: Optional[str]
    new: Optional[str]
    #: whether each side is a symlink (git's mode 120000: the blob is the link's text)
    old_link: bool = False
    new_link: bool = False


#: ``id`` of a file version's Light list (:meth:`Facts.light`, shared by every
#: snapshot of a run) -> (that list, its kind -> {(namespace, id): first declaration});
#: the last few, as :data:`kb.checks.facts._LIGHT_CACHE` keeps the lists.
_BY_KIND: dict[int, tuple[list, dict[str, dict[tuple[str, str], Light]]]] = {}


def _file_by_kind(side: Facts, path: str) -> dict[str, dict[tuple[str, str], Light]]:
    """The objects of ``path`` in ``side`` by kind, each ID's first declaration (in
    line order): read-only, shared while ``side.light(path)`` is the same list."""
    rows = side.light(path)
    hit = _BY_KIND.get(id(rows))
    if hit is not None and hit[0] is rows:
        return hit[1]
    out: dict[str, dict[tuple[str, str], Light]] = {}
    for x in rows:
        out.setdefault(x.kind, {}).setdefault((x.ns, x.id), x)
    _BY_KIND[id(rows)] = (rows, out)  # the list is held: its id is not reused meanwhile
    while len(_BY_KIND) > 8:
        _BY_KIND.pop(next(iter(_BY_KIND)))
    return out


def _add_new(into: dict, more: dict) -> None:
    """Add to ``into`` the items of ``more`` whose key it lacks, in ``more``'s order
    (the first declaration of an ID stays). Kinds mostly have namespaces of their own:
    then one C-level update (a tree's thousands of hypotheses merged per commit)."""
    if into.keys().isdisjoint(more):
        into.update(more)
    else:
        into |= {k: v for k, v in more.items() if k not in into}


class Change:
    """A base snapshot and a new one, for the history rules.

    ``changes`` are the changed paths (blob ids of both sides); ``paths`` the
    ones kb parses. ``overrides`` maps an ID to the reason of a
    ``Kb-Override:`` that names it. ``commit`` is the new commit (None for the
    staged index or the working tree). ``origin`` is the snapshot a range
    started from (IDs that existed before the range), or None.
    """

    def __init__(self, base: Facts, new: Facts, mode: str, changes: list[RawChange],
                 overrides: Optional[dict[str, str]] = None, commit: Optional[str] = None,
                 origin: Optional[Facts] = None, base_config: Any = None,
                 new_config: Any = None,
                 removed_before: Optional[Mapping[tuple[str, str], str]] = None) -> None:
        self.base = base
        self.new = new
        self.mode = mode
        self.changes = changes
        self.overrides = overrides or {}
        self.commit = commit
        self.origin = origin
        self.removed_before = removed_before or {}
        self.kb = new.kb
        # The rules that judge a change come from its base (HEAD, or the parent
        # commit): a change cannot switch off the rules it is judged by.
        # ``new_config`` is the change's own kb.toml (KB309 compares the two).
        self.config = base_config if base_config is not None else new.config
        self.new_config = new_config if new_config is not None else new.config
        self.paths = sorted({c.path for c in changes
                             if c.path in base.files or c.path in new.files})
        self._lights: dict[tuple[int, tuple[str, ...]], dict[tuple[str, str], Light]] = {}
        self._by_kind: dict[int, dict[str, dict[tuple[str, str], Light]]] = {}
        #: Results several rules compute alike for this change, by name
        #: (:func:`kb.checks.unread_records.moved_records`).
        self.memo: dict[str, Any] = {}
        #: The base as first read (through the new side's kb.toml), when :meth:`read_as_own`
        #: gave the rules each side as its own kb.toml reads it (None: not so read).
        self.through_new: Optional[Facts] = None
        self._deleted: Optional[set[str]] = None  # (:meth:`now_at`'s, built when first asked)

    def read_as_own(self, base: Facts, new: Facts) -> "Change":
        """This change with its sides read as their own kb.toml's ``[paths]`` read them
        (``base`` with :attr:`config`'s, ``new`` with :attr:`new_config`'s:
        :func:`kb.checks.unread_records.own_reading`). Read through one kb.toml, a change
        that moves a key (``tree = "tree2.md"`` with ``git mv``) had nothing in its base
        where the move put the records: every record looked new, and a statement, a
        status, Evidence or a recorded result rewritten in the same commit passed
        unjudged; a range's earlier commit read through a tip that moved a key later had
        its records on neither side. Read as their own, each record meets its old version
        by ID; :meth:`now_at` pairs a file with where the move carried it, and what the
        move leaves unread is judged on the base as first read (:attr:`through_new`)."""
        other = Change(base, new, self.mode, self.changes, self.overrides, self.commit,
                       self.origin, self.config, self.new_config, self.removed_before)
        other.through_new = self.base
        return other

    def now_at(self, path: str) -> Optional[str]:
        """Where the base's file ``path`` is in the new side: ``path`` itself, or the place
        a ``[paths]`` move of this change carried it to (``experiments/E001.md`` ->
        ``exps/E001.md`` when ``paths.experiments`` moved so: the change deletes the one and
        the new side holds the other); None otherwise."""
        if path in self.new.files:
            return path
        old, new = self.config.paths, self.new_config.paths
        if old == new:
            return None  # no [paths] move (the usual case: one dict comparison)
        if self._deleted is None:
            self._deleted = {ch.path for ch in self.changes if ch.new is None}
        if path not in self._deleted:
            return None  # still where it was (left behind: no longer read), not carried
        for key, was in old.items():
            now = new.get(key)
            if now is None or now == was:
                continue
            a, b = was.strip().strip("/"), now.strip().strip("/")
            if path == a:
                moved = b
            elif a in ("", ".") or path.startswith(a + "/"):
                rest = path if a in ("", ".") else path[len(a) + 1:]
                moved = rest if b in ("", ".") else f"{b}/{rest}"
            else:
                continue
            if moved in self.new.files:
                return moved
        return None

    def lights(self, side: Facts, kinds: Iterable[str]) -> dict[tuple[str, str], Light]:
        """(namespace, id) -> object of ``kinds`` in the changed files of one side
        (the first declaration when an ID is declared twice)."""
        key = (id(side), tuple(sorted(kinds)))
        hit = self._lights.get(key)
        if hit is not None:
            return hit
        by_kind = self._by_kind.get(id(side))
        if by_kind is None:
            by_kind = {}
            for p in self.paths:
                if p in side.files:
                    # each file's (kind -> first declaration of each ID), shared by the
                    # Changes of a run that read the same version (a range's tree.md
                    # is the new side of one commit and the base of the next)
                    for kind, objs in _file_by_kind(side, p).items():
                        have = by_kind.get(kind)
                        if have is None:
                            by_kind[kind] = dict(objs)
                        else:
                            _add_new(have, objs)
            self._by_kind[id(side)] = by_kind
        out: dict[tuple[str, str], Light] = {}
        for k in key[1]:
            objs = by_kind.get(k)
            if not objs:
                continue
            if out:
                _add_new(out, objs)
            else:
                out = dict(objs)
        self._lights[key] = out
        return out

    def violation(self, obj_id: str, path: str, line: int, code: str, message: str,
                  fix: Optional[tuple[int, str, str]] = None, renumbered: bool = True) -> Any:
        """A history diagnostic about ``obj_id``: an error, or an ``info`` note when
        a ``Kb-Override:`` names the ID (the change is accepted, and said so).

        ``renumbered`` False: the change is not what a ``Kb-Renumber:`` of the ID makes
        (the rule checked), so such a trailer does not accept it -- it would tell a
        reviewer a mechanical renumbering happened."""
        from kb.checks.overrides import renumbered_to

        reason = self.overrides.get(obj_id)
        new_id = renumbered_to(reason) if reason is not None and not renumbered else None
        if new_id is not None:
            return diag(path, line, code, f"{message} (the commit's Kb-Renumber: {obj_id} -> "
                        f"{new_id} does not accept it: this is no part of that renumbering)",
                        fix=fix)
        if reason is not None:
            return diag(path, line, code, f"{message} — accepted: Kb-Override: {obj_id} {reason}".rstrip(),
                        severity="info", fix=fix)
        return diag(path, line, code, message, fix=fix)


def raw_changes(data: bytes, kb: Any) -> list[Any]:
    """Parse ``git diff-* --raw -z`` output into RawChanges of ``kb`` (KB-relative)."""
    parts = data.split(b"\0")
    out = []
    i = 0
    while i < len(parts) - 1:
        meta = parts[i].decode()
        if not meta.startswith(":"):
            i += 1
            continue
        fields = meta[1:].split()
        status = fields[4]
        n = 2 if status[:1] in ("R", "C") else 1
        paths = [parts[i + 1 + j].decode("utf-8", "surrogateescape") for j in range(n)]
        i += 1 + n
        old, new = fields[2], fields[3]
        rel = kb.rel(paths[-1])
        if rel is None:
            continue
        out.append(RawChange(rel, None if old == ZERO or fields[0] == "000000" else old,
                             None if status == "D" or fields[1] == "000000" else (new if new != ZERO else ""),
                             fields[0] == "120000", fields[1] == "120000"))
    return out


def retargeted_links(old: Any, new: Any, changes: list[Any]) -> list[Any]:
    """RawChanges of the symlinks whose own entry ``changes`` leaves alone but which read
    as another version between snapshots ``old`` and ``new`` (their target was edited,
    added or removed): git's diff lists the target, not the link, yet the file kb reads
    under the link's path changed. Blob ids are the versions read (``Snapshot.files``)."""
    if not (new.links or old.links):
        return []
    listed = {c.path for c in changes}
    return [RawChange(p, old.files.get(p), new.files.get(p))
            for p in sorted(set(new.links) | set(old.links))
            if p not in listed and old.files.get(p) != new.files.get(p)]


def diff_commits(kb: Any, old: Optional[str], new: str) -> list[Any]:
    """Changed paths of ``kb`` between two commits (``old`` None: the empty tree)."""
    spec = ["--", kb.prefix] if kb.prefix else []
    proc = git.run(["diff-tree", "-r", "-z", "--raw", "--no-renames", old or git.EMPTY_TREE, new, *spec],
                   kb.top)
    return raw_changes(proc.stdout, kb)


def diff_many(kb: Any, pairs: list[tuple[str, Optional[str]]]) -> dict[str, list[Any]]:
    """Changed paths of ``kb`` for many (commit, first parent or None) pairs, in one
    ``git diff-tree --stdin`` call: commit -> changes (absent: nothing changed)."""
    if not pairs:
        return {}
    spec = ["--", kb.prefix] if kb.prefix else []
    data = "".join(f"{c} {p}\n" if p else f"{c}\n" for c, p in pairs).encode()
    proc = git.run(["diff-tree", "-r", "-z", "--raw", "--no-renames", "--root", "--stdin", *spec],
                   kb.top, input=data)
    out: dict[str, list[Any]] = {}
    chunks: dict[str, list[bytes]] = {}
    cur: Optional[list[bytes]] = None
    parts = proc.stdout.split(b"\0")
    i = 0
    while i < len(parts):
        tok = parts[i]
        if tok.startswith(b":"):
            if cur is not None:
                status = tok.split()[-1][:1]
                n = 2 if status in (b"R", b"C") else 1
                cur.extend(parts[i:i + 1 + n])
                i += 1 + n
                continue
        elif len(tok.strip()) >= 40 and re.fullmatch(rb"[0-9a-f]{40,64}", tok.strip()):
            cur = chunks.setdefault(tok.strip().decode(), [])
        i += 1
    for c, toks in chunks.items():
        out[c] = raw_changes(b"\0".join(toks) + b"\0", kb)
    return out


def diff_staged(kb: Any, head: Optional[str]) -> list[Any]:
    """Changed paths of ``kb`` between HEAD (or nothing) and the staged index."""
    spec = ["--", kb.prefix] if kb.prefix else []
    proc = git.run(["diff-index", "--cached", "-z", "--raw", "--no-renames",
                    head or git.EMPTY_TREE, *spec], kb.top)
    return raw_changes(proc.stdout, kb)


def records_prefix(config: Any) -> str:
    """The verification records' folder as a KB path prefix: ``<logs>/Verification/``."""
    logs = config.paths["logs"].strip("/")
    return ("" if logs in ("", ".") else logs + "/") + "Verification/"


def kept_prefixes(config: Any) -> tuple[str, str]:
    """The folders of the files kept as committed, as KB path prefixes: Verified/ (KB304;
    ``""`` when it is the KB's root) and the verification records (KB310). (The
    exploration graph's log, KB313, is kept too: :func:`worktree_kept` adds its fixed
    folder.)"""
    folder = config.paths["verified"].strip("/")
    return ("" if folder in ("", ".") else folder + "/"), records_prefix(config)


def verified_prefix(config: Any) -> str:
    """The Verified cards' folder of ``config`` as a KB path prefix (``""``: the KB's root)."""
    return kept_prefixes(config)[0]


def folder_moves(c: Change, prefix_of: Callable[[Any], str]) -> dict[str, tuple[RawChange, RawChange]]:
    """Files a ``[paths]`` move of the folder ``prefix_of(config)`` names carried along in
    change ``c``: old path -> (its deletion, the file added at the same place under the
    new folder; its blob may differ). {} when the change does not move that folder."""
    old_prefix, new_prefix = prefix_of(c.config), prefix_of(c.new_config)
    if old_prefix == new_prefix:
        return {}
    by_path = {ch.path: ch for ch in c.changes}
    out = {}
    for ch in c.changes:
        if ch.old is not None and ch.new is None and ch.path.startswith(old_prefix):
            dest = by_path.get(new_prefix + ch.path[len(old_prefix):])
            if dest is not None and dest.old is None and dest.new is not None:
                out[ch.path] = (ch, dest)
    return out


def worktree_kept(kb: Any, head: Optional[str], base_config: Any = None) -> list[Any]:
    """Changes between HEAD and the working tree, on blob ids, of the files kept as
    committed: under Verified/ (KB304), the verification records (KB310) and the
    exploration graph's log (KB313), which kb does not parse as cards (a record and a
    log file are JSON) and so never lists in a snapshot. The folders
    are those of the working tree's kb.toml and of ``base_config`` (HEAD's, when a
    ``[paths]`` move put them elsewhere: the files left behind are listed too).

    ``git diff-index`` says which files may differ; a file whose stat info
    changed is re-hashed by ``git hash-object`` with git's own filters
    (``core.autocrlf``), so CRLF bytes in the working tree of an untouched
    file are not a modification (case WIN-01).
    """
    if head is None:
        return []
    from kb.trail.log import OPS_DIR

    folders = {*kept_prefixes(kb.config), OPS_DIR + "/"}
    if base_config is not None:
        folders.update(kept_prefixes(base_config))
    specs = sorted(kb.prefix + f for f in folders)
    if "" in specs:  # Verified/ at the KB's root of a KB at the top: every path
        specs = ["."]
    proc = git.run(["diff-index", "-z", "--raw", "--no-renames", head, "--", *specs], kb.top)
    changes = raw_changes(proc.stdout, kb)
    dirty = [c for c in changes if c.old and c.new == ""]
    out = [c for c in changes if c.new != ""]
    # git hash-object waits forever on a FIFO in a kept file's place: no file is there
    special = [c for c in dirty if special_file(kb.root / c.path)]
    out += [RawChange(c.path, c.old, None) for c in special]
    dirty = [c for c in dirty if c not in special]
    if dirty:
        paths = "\n".join(kb.prefix + c.path for c in dirty) + "\n"
        hashed = git.run(["hash-object", "--stdin-paths"], kb.top,
                         input=paths.encode("utf-8", "surrogateescape")).stdout.decode().split()
        for c, h in zip(dirty, hashed):
            if h != c.old:
                out.append(RawChange(c.path, c.old, h))
    return out


def touches_links(changes: Iterable[Any]) -> bool:
    """Whether a side of any of ``changes`` is a symlink. A snapshot patched across one
    (:func:`patch_files`) resolves the link without the commit's tree, so a target outside
    the KB's files reads as dangling: such callers read the commit's listing instead."""
    return any(c.old_link or c.new_link for c in changes)


def undo(source: Any, changes: list[Any], kb: Any, rev: Optional[str]) -> Any:
    """The snapshot of commit ``rev``: ``source`` (a :class:`kb.repo.Snapshot`) with
    ``changes`` (from ``rev`` to ``source``) undone, derived from it
    (:func:`kb.repo.derived_snapshot`: what differs is then found in those paths only)."""
    from kb.repo import derived_snapshot

    files, fmts = patch_files(source.files, source.formats, changes, kb, forward=False)
    return derived_snapshot(source, files, fmts, [c.path for c in changes], rev)


def patch_files(files: dict[str, str], formats: dict[str, str], changes: Iterable[Any], kb: Any,
                forward: bool) -> tuple[dict[str, str], dict[str, str]]:
    """Apply ``changes`` to a {path: blob} map (``forward``: old -> new, else new -> old)."""
    from kb.parse import classify

    files, formats = dict(files), dict(formats)
    links: dict[str, str] = {}
    for c in changes:
        want = c.new if forward else c.old
        if not want:
            files.pop(c.path, None)
            formats.pop(c.path, None)
            continue
        fmt = formats.get(c.path) or classify(c.path, kb.config)
        if fmt is None:
            continue
        files[c.path] = want
        formats[c.path] = fmt
        if c.new_link if forward else c.old_link:
            links[c.path] = want
    if links:
        # Symlinks judged as the snapshots judge them (kb.repo.resolve_links): an inside
        # link reads as its target in this map; the others are never read.
        from kb.repo import resolve_links

        resolve_links(kb, "commit", None, links, files)
    return files, formats
