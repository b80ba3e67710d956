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
    """Index the KB incrementally; return counts and every parse diagnostic.

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails.
    """
    k = open_kb(Path(path) if path else None)
    with Index(k) as idx:
        stats = idx.refresh(check=True)  # `kb index`: every cached parse's check too
        raw = idx.counts()
        counts = {kind: raw[kind] for kind in KIND_ORDER if raw.get(kind)}
        config = sorted([*k.config.warnings, *_config_checks(k, idx)], key=lambda d: d.line)
        diags = config + idx.diagnostics()
    return IndexReport(root=k.root, stats=stats, counts=counts, diagnostics=diags)


def _config_checks(k: KnowledgeBase, idx: Index) -> list[Any]:
    """KB001 for rule codes kb does not have, KB004 for a tree path the working tree does
    not hold, KB005 for a folder of the layout that is a symlink there
    (:mod:`kb.checks.config_rules`), imported only when kb.toml names codes or moves the
    tree, or the working tree holds such a link: a cold ``kb index`` imports no rule module."""
    from kb.config import DEFAULT_PATHS

    cfg = k.config
    tree = cfg.paths["tree"]
    if not (cfg.disabled_rules or cfg.severity or tree != DEFAULT_PATHS["tree"] or idx.folder_links):
        return []
    from kb.checks.config_rules import tree_missing, unknown_codes

    held = () if idx.current_blob(tree) is None else (tree,)
    return unknown_codes(cfg) + tree_missing(cfg, held) + _folder_links(idx)


def _folder_links(idx: Index) -> list[Any]:
    """KB005 for each symlink at a folder of the layout that the index's last refresh of
    the working tree listed (:attr:`Index.folder_links`; none: nothing imported)."""
    if not idx.folder_links:
        return []
    from kb.checks.config_rules import folder_links
    from kb.repo import Snapshot

    return folder_links(Snapshot(kb=idx.kb, kind="worktree", folder_links=idx.folder_links))


def _priority_key(row: ObjectRow) -> tuple[int, int, str]:
    p = row.fields().get("priority")
    if p == "never":
        return (2, 0, row.id)
    if isinstance(p, int):
        return (0, p, row.id)
    return (1, 0, row.id)


def list_objects(kind: str | None = None, status: str | None = None,
                 path: str | Path | None = None,
                 idx: Index | None = None, with_data: bool = True) -> tuple[KnowledgeBase, list[ObjectRow]]:
    """Objects of one kind (an ``ls`` name such as ``problems``), optionally by status.

    Problems are sorted by priority with ``never`` last; hypotheses in tree
    order; other kinds by natural ID order. ``status`` accepts either
    language for hypotheses and experiments (:func:`kb.vocab.status_word`).
    Raises UsageError for an unknown kind, or a status word no object of
    the kind can have. ``with_data=False`` leaves every row's JSON out (``data``
    is ``"{}"``): ID, kind, status, title, path and line only, for listings of
    100,000 rows (the problems' priority order still reads it).
    """
    one = None
    if kind:
        one = KIND_PLURALS.get(kind) or (kind if kind in KIND_ORDER else None)
        if one is None:
            raise UsageError(f"unknown kind {kind!r}; use one of: {', '.join(KIND_PLURALS)}")
    if status:
        from kb.vocab import status_word

        status = status_word(one, status)
    k, opened = _open(path, idx)
    with opened as ix:
        rows = ix.objects(one, status, with_data=with_data or one in (None, "problem"))
        _note_unreadable(ix, hypotheses=one in (None, "hypothesis"))
    if status and one is None and not rows:
        from kb.vocab import known_status

        if not known_status(status):  # none listed for a word no kind has reads as "none has it"
            raise UsageError(f"unknown status {status!r}: no kind of object has it (kb ls KIND "
                             "--status names the words of a kind)")
    if one == "problem":
        rows.sort(key=_priority_key)
    elif one != "hypothesis":
        from kb.research.dependencies import natural_key

        rows.sort(key=lambda r: (KIND_ORDER.index(r.kind), natural_key(r.id)))
    return k, rows


def _note_unreadable(ix: Index, hypotheses: bool = True) -> None:
    """One note when files kb cannot read may hide objects from a listing; another when
    kb.toml moves the tree to a file that is not there (KB004) and the listing may hold
    hypotheses (``hypotheses``): an empty listing is no answer then."""
    n, first = ix.unreadable()
    bad = [d for d in ix.kb.config.warnings if d.severity == "error"]
    if bad:  # a configuration error (a file path that is a directory) hides more
        n, first = n + 1, first or f"kb.toml:{bad[0].line} {bad[0].code}"
    if n:
        note(f"kb: {n} file(s) have errors and may hold objects not listed (first: {first}); "
             f"`kb index` lists them")
    for d in _folder_links(ix):  # a folder of cards that is a symlink: none of its cards listed
        note(f"kb: {d.path}:{d.line}: {d.code} [{d.severity}] {d.message}")
    from kb.config import DEFAULT_PATHS

    tree = ix.kb.config.paths["tree"]
    if hypotheses and tree != DEFAULT_PATHS["tree"] and ix.current_blob(tree) is None:
        from kb.checks.config_rules import tree_missing

        for d in tree_missing(ix.kb.config, ()):
            note(f"kb: kb.toml:{d.line}: {d.code} [{d.severity}] {d.message}")


def show_object(obj_id: str, path: str | Path | None = None,
                idx: Index | None = None) -> tuple[KnowledgeBase, list[dict[str, Any]]]:
    """Everything known about ``obj_id``: fields, file and line, entries, links.

    Returns one dict per declaration (several when the ID is duplicated);
    an empty list when the ID is unknown. Links: ``parent``, ``children``,
    ``evidence``, ``dependencies``, ``dependants`` and every other link kind
    in ``links_out`` / ``links_in``.

    Every dict also carries ``diagnostics``: the parse diagnostics the index stored for
    the file version(s) declaring the object (:meth:`kb.model.Diagnostic.to_dict`, by
    path and line; nothing is parsed or checked again) — what kb could not read of
    them, which the fields may therefore lack.

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails. An unknown ID is an empty list, not an error.
    """
    k, opened = _open(path, idx)
    with opened as ix:
        rows = ix.get(obj_id)
        out_links, in_links = ix.links(obj_id)
        # Experiments that name this hypothesis; problems that depend on it.
        diags = [d.to_dict() for pb in sorted({(r.path, r.blob) for r in rows})
                 for d in ix.diagnostics_of(*pb)]
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
        data["diagnostics"] = [dict(d) for d in diags]
        result.append(data)
    return k, result


def find_objects(text: str, path: str | Path | None = None,
                 idx: Index | None = None) -> tuple[KnowledgeBase, list[ObjectRow]]:
    """Objects whose ID, title or statement contains ``text`` (case-insensitive).

    Raises UsageError for an empty ``text`` (or one of characters that show nothing) and
    for one holding a control character (SQLite's text search stops at U+0000: it would
    match every object); EnvironmentError_ (NotAKnowledgeBase) outside a KB.
    """
    from kb.text import control_char, visible

    if not visible(text):
        raise UsageError("kb find needs a non-empty TEXT")
    bad = control_char(text)
    if bad is not None:
        raise UsageError(f"kb find's TEXT contains the control character {bad}; search for the "
                         "text without it")
    k, opened = _open(path, idx)
    with opened as ix:
        found = ix.search(text)
        _note_unreadable(ix)
        return k, found


def _journal_nearby(start: Path) -> Path | None:
    """Where a killed kb write's journal would be, found without running git (a read
    pays one ``stat`` when there is none); None when the git folder is not found."""
    from kb.ops.recovery import JOURNAL_NAME

    for d in (start, *start.parents):
        dot = d / ".git"
        if dot.is_dir():
            return dot / JOURNAL_NAME
        if dot.is_file():
            try:
                line = dot.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError):
                return None
            if not line.startswith("gitdir:"):
                return None
            gd = Path(line[len("gitdir:"):].strip())
            return (gd if gd.is_absolute() else (d / gd).resolve()) / JOURNAL_NAME
    return None


def _litter(gd: Path) -> bool:
    """True when a killed ``git commit`` left a ``next-index-*.lock`` in ``gd``."""
    try:
        return any(gd.glob("next-index-*.lock"))
    except OSError:
        return False


def _sweep_litter(k: KnowledgeBase) -> None:
    """Remove dead git processes' ``next-index-*.lock`` under the write lock (never
    while a kb writer runs: its git may be alive); silently, it is kb's own litter."""
    from kb import git
    from kb.errors import KbError
    from kb.ops.recovery import remove_index_litter
    from kb.ops.transaction import acquire_write_lock, release_write_lock

    try:
        lock = acquire_write_lock(git.common_dir(k.top), "litter before a read", timeout=0)
    except KbError:  # busy (a writer is alive), or .git not writable: leave it
        return
    try:
        remove_index_litter(k.top)
    finally:
        release_write_lock(lock)


def settle_interrupted_write(start: str | Path | None = None) -> str | None:
    """Before a read: finish what a killed kb write left behind; a note for the user, or None.

    A write killed between its file writes and its commit leaves a journal in
    ``.git/`` (:mod:`kb.ops.recovery`); the next *write* rolls it back. A read
    that answered from the working tree meanwhile would list what was never
    committed, so a read does the same recovery first, under the write lock
    taken without waiting: a busy lock means a writer is alive and the journal
    is its own (nothing to do; this is also the case in the hooks of kb's own
    commit). Inside a git hook of another commit (``GIT_INDEX_FILE`` is set: git
    holds its index), or when the recovery cannot run, nothing is touched and
    the note says so; the answer then shows the working tree as it is.

    Never raises: a recovery that cannot run is said in the note.
    """
    import os

    here = Path(start) if start else Path.cwd()
    if not os.environ.get("GIT_DIR"):
        near = _journal_nearby(here.resolve())
        if near is None or not (near.exists() or _litter(near.parent)):
            return None  # the usual case: nothing left, and the write machinery never imported
    from kb import git
    from kb.errors import KbError, LockedError
    from kb.ops.recovery import JOURNAL_NAME, read_journal, recover
    from kb.ops.transaction import acquire_write_lock, release_write_lock
    try:
        k = open_kb(here)
        gd = git.git_dir(k.top)
    except KbError:
        return None  # not a KB: the command itself says so
    journal = gd / JOURNAL_NAME
    if not journal.exists():
        if _litter(gd) and not os.environ.get("GIT_INDEX_FILE"):
            _sweep_litter(k)
        return None
    unsettled = ("an interrupted kb write (a process killed before its commit) left "
                 f"{journal}; answers show the working tree as it is until a kb command "
                 "outside git recovers it")
    try:
        lock = acquire_write_lock(git.common_dir(k.top), "recovery before a read", timeout=0)
    except LockedError:
        return None  # a live writer (perhaps the kb write whose hook runs this): its journal
    except KbError as exc:  # no permission on .git, a folder in the lock's place, …
        return f"{unsettled} ({exc})"
    try:
        if not journal.exists():
            return None  # the writer finished between the check and the lock
        if os.environ.get("GIT_INDEX_FILE"):
            return unsettled  # a hook of a plain `git commit`: git holds the index
        read = read_journal(journal)
        was = read.get("head") if read is not None else None
        landed = was is not None and git.rev_parse("HEAD", k.top) != was
        restored = recover(k)
    except KbError as exc:
        return f"{unsettled} ({exc})"
    finally:
        release_write_lock(lock)
    if restored:
        return ("kb rolled back an interrupted kb write (a process killed before its commit): "
                f"restored {', '.join(restored)}")
    if landed:
        return ("kb finished an interrupted kb write whose commit had landed: git's index now "
                "matches HEAD for its files")
    return None  # nothing of it was left in the working tree: the journal is gone, say nothing
