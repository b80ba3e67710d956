"""The two sides of a research diff: what changed between two snapshots of a KB.

A side is the parsed objects of the *changed* files only (KB-relative path ->
blob id, parsed through the index cache), so a diff costs what the range
changed, not what the KB holds. Sources (DESIGN.md §3 snapshots):

- a commit range ``A..B``: before = ``merge-base(A, B)`` (what a pull request
  is compared with), after = ``B``, the commits ``A..B`` in between;
- ``staged``: HEAD -> the staged index (``GIT_INDEX_FILE`` honoured);
- ``worktree``: HEAD -> the working tree (as ``kb index`` sees it).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from kb import git
from kb.errors import EnvironmentError_, GitError, UsageError, os_failure
from kb.repo import KnowledgeBase, Snapshot, commit_snapshot, staged_snapshot
from kb.index_facts import changed_objects, first_diagnostics, objects_with_ids
from kb.review.commits import CommitInfo, log

SOURCES = ("range", "staged", "worktree")


@dataclass
class Sides:
    """Changed files of a KB and the commits that changed them.

    ``changes`` maps a KB-relative path to ``(old blob, new blob)`` (None:
    absent on that side), for every changed file (not only those kb parses).
    ``old_objects`` / ``new_objects`` map ``(kind, id)`` to the object's fields
    (``kb.model`` JSON, plus ``path``/``line``) in the changed files.
    ``path_commits`` maps a changed path to the commits (oldest first) that
    changed it; ``tip_rev`` is the after commit (None for staged/worktree).
    """

    kb: KnowledgeBase
    source: str
    base: Optional[str]
    tip: str
    tip_rev: Optional[str]
    commits: list[CommitInfo] = field(default_factory=list)
    changes: dict[str, tuple[Optional[str], Optional[str]]] = field(default_factory=dict)
    old_objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    new_objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    path_commits: dict[str, list[str]] = field(default_factory=dict)
    overrides_env: dict[str, str] = field(default_factory=dict)
    new_files: dict[str, str] = field(default_factory=dict)
    unreadable: list[dict[str, Any]] = field(default_factory=list)
    #: the KB as the before side's own kb.toml reads it (None: as ``kb``, the after
    #: side's): a ``[paths]`` move in between reads each side where its files are
    old_kb: Optional[KnowledgeBase] = None
    _index: Any = None

    @property
    def before_kb(self) -> KnowledgeBase:
        """The KB as the before side reads it (:attr:`old_kb`, else :attr:`kb`)."""
        return self.old_kb or self.kb

    def read(self, blobs: list[str]) -> dict[str, bytes]:
        """Blob id -> bytes (blobs of the working tree are hashed files on disk: read by path)."""
        out = git.read_blobs(blobs, self.kb.top)
        missing = set(blobs) - set(out) if self.source == "worktree" else set()
        for p, (_old, new) in self.changes.items() if missing else ():
            if new in missing:  # hashed, not written to git's objects: the file itself
                with contextlib.suppress(OSError):
                    out[new] = (self.kb.root / p).read_bytes()
        return out

    def lookup(self, paths: list[str]) -> dict[str, dict[str, Any]]:
        """Objects (by ID) of ``paths`` (KB-relative) on the after side, changed or not.

        Used for context the range did not change (the experiments cited as
        evidence of a status move). Missing paths are skipped.
        """
        from kb.parse import classify

        want = [p for p in dict.fromkeys(paths) if classify(p, self.kb.config)]
        if not want:
            return {}
        if self.source == "range":
            spec = [f":(literal){self.kb.repo_path(p)}" for p in want]
            proc = git.run(["ls-tree", "-z", self.tip_rev or "HEAD", "--", *spec], self.kb.top)
            files = {}
            for e in git.tree_entries(proc.stdout):
                rel = self.kb.rel(e.path)
                if rel is not None:
                    files[rel] = e.oid
        elif self.source == "staged":
            files = {p: b for p, b in staged_snapshot(self.kb).files.items() if p in set(want)}
        else:
            wt = self._index.worktree()
            files = {p: wt.files[p] for p in want if p in wt.files}
        objs: dict[str, dict[str, Any]] = {}
        for _key, fields in _objects(self._index, self.kb, files).items():
            objs.setdefault(fields["id"], fields)
        return objs


def _objects(idx: Any, k: KnowledgeBase, files: dict[str, str]) -> dict[tuple[str, str], dict[str, Any]]:
    """``(kind, id)`` -> fields of every object of these file versions (parsed once, cached)."""
    from kb.parse import classify

    fmts = {p: f for p in files if (f := classify(p, k.config))}
    files = {p: b for p, b in files.items() if p in fmts}
    if not files:
        return {}
    snap = Snapshot(kb=k, kind="commit", files=files, formats=fmts)
    idx.ensure(snap)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path, blob in sorted(files.items()):
        for row in idx.rows_of(path, blob):
            fields = json.loads(row.data)
            fields["path"], fields["line"] = k.repo_path(path), row.line
            out.setdefault((row.kind, row.id), fields)
    return out


def _read_as(k: KnowledgeBase, rev: Optional[str]) -> KnowledgeBase:
    """``k`` with the kb.toml of ``rev`` (a commit, ``":"`` the staged index; None or no
    readable kb.toml there: ``k`` as it is). A diff reads each side as its own kb.toml does,
    not as the working tree's (an unstaged edit, or the branch checked out, must not change
    what a range holds)."""
    from kb.checks.targets import as_committed, config_at

    return as_committed(k, config_at(k, rev)) if rev else k


def _raw_changes(k: KnowledgeBase, args: list[str]) -> dict[str, tuple[Optional[str], Optional[str]]]:
    """``git diff-tree``/``diff-index`` ``--raw -z`` of the KB as path -> (old, new)."""
    from kb.checks.changes import raw_changes

    spec = ["--", k.prefix] if k.prefix else []
    proc = git.run([*args, "-r", "-z", "--raw", "--no-renames", "--no-abbrev", *spec]
                   if args[0] == "diff-tree" else [*args, "-z", "--raw", "--no-renames", "--no-abbrev", *spec],
                   k.top)
    return {c.path: (c.old, c.new or None) for c in raw_changes(proc.stdout, k)}


def range_sides(k: KnowledgeBase, a: str, b: str, idx: Any, rewrite: bool = False) -> Sides:
    """``A..B``: merge-base(A, B) -> B, with the commits of ``A..B`` (oldest first); with
    ``rewrite`` (B replaces A: one branch's old and new tip after a force push, a rebase, a
    reset) A -> B itself, as ``kb verify --rewrite`` judges it. From the merge base, a reset
    that dropped commits showed nothing: the base of A and B is B.

    Raises UsageError when A or B is not a commit (with a hint for shallow clones) or
    starts with ``-`` (git would read it as an option: :func:`kb.git.revision`).
    """
    a, b = git.revision(a, "the range start"), git.revision(b, "the range end")
    both = git.run(["rev-parse", "--quiet", "--end-of-options", f"{a}^{{commit}}", f"{b}^{{commit}}"],
                   k.top, check=False)
    # Without --verify, git before 2.44 echoes the --end-of-options marker itself.
    shas = [w for w in both.stdout.decode().split() if w != "--end-of-options"]
    if both.returncode == 0 and len(shas) == 2:
        base, tip = shas  # one git process for both (a hook runs this on every commit)
    else:
        base, tip = git.rev_parse(a, k.top), git.rev_parse(b, k.top)
    for name, sha in ((a, base), (b, tip)):
        if sha is None:
            raise UsageError(f"{name!r} is not a commit here (fetch it first, e.g. `git fetch origin`;"
                             " in CI fetch full history: actions/checkout with fetch-depth: 0)")
    if rewrite:
        origin = base
    else:
        mb = git.run(["merge-base", base, tip], k.top, check=False)  # type: ignore[list-item]
        origin = mb.stdout.decode().strip() if mb.returncode == 0 and mb.stdout.strip() else base
    # The commits with the paths each changed, in the same git process.
    commits = log(k.top, ["--reverse", "--topo-order", f"{base}..{tip}"], changes=True)
    old_k = _read_as(k, origin)
    k = _read_as(k, tip)
    s = Sides(kb=k, source="range", base=origin, tip=tip, tip_rev=tip, commits=commits,  # type: ignore[arg-type]
              old_kb=old_k, _index=idx)
    s.changes = _raw_changes(k, ["diff-tree", origin, tip])  # type: ignore[list-item]
    for c in commits:
        for p in c.changed:
            rel = k.rel(p)
            if rel is not None and rel in s.changes:
                s.path_commits.setdefault(rel, []).append(c.commit)
    _fill(s, idx)
    return s


def staged_sides(k: KnowledgeBase, idx: Any, environ: dict[str, str]) -> Sides:
    """HEAD (or nothing) -> the staged index; overrides from ``KB_OVERRIDE``."""
    from kb.checks.overrides import parse_overrides

    head = git.rev_parse("HEAD", k.top)
    changes = _raw_changes(k, ["diff-index", "--cached", head or git.EMPTY_TREE])
    old_k = _read_as(k, head)
    s = Sides(kb=_read_as(k, ":" if head is None or "kb.toml" in changes else head), source="staged",
              base=head, tip="staged", tip_rev=None, old_kb=old_k, _index=idx)
    s.changes = changes
    s.overrides_env = parse_overrides(environ.get("KB_OVERRIDE", ""))
    _fill(s, idx)
    return s


def worktree_sides(k: KnowledgeBase, idx: Any, environ: dict[str, str]) -> Sides:
    """HEAD (or nothing) -> the working tree: the files kb reads, plus changed and
    untracked verification records (``Logs/Verification/*.json``)."""
    from kb.checks.overrides import parse_overrides
    from kb.checks.targets import with_own_layout

    head = git.rev_parse("HEAD", k.top)
    idx.refresh()
    new = idx.worktree()
    old_k = _read_as(k, head)
    # HEAD's own kb.toml may read files the working tree's does not (an uncommitted move)
    old = with_own_layout(k, head, old_k.config, commit_snapshot(k, head).files) if head else {}
    s = Sides(kb=k, source="worktree", base=head, tip="worktree", tip_rev=None,
              old_kb=old_k, _index=idx)
    for p in sorted(set(new.files) | set(old)):
        if old.get(p) != new.files.get(p):
            s.changes[p] = (old.get(p), new.files.get(p))
    s.changes.update(_worktree_records(k, head))
    s.overrides_env = parse_overrides(environ.get("KB_OVERRIDE", ""))
    _fill(s, idx)
    return s


def _worktree_records(k: KnowledgeBase, head: Optional[str]) -> dict[str, tuple[Optional[str], Optional[str]]]:
    """Verification records changed in the working tree (new blobs hashed from disk and
    written to git's object store so that they read like any other blob)."""
    folder = records_dir(k)
    spec = k.repo_path(folder + "/")
    out: dict[str, tuple[Optional[str], Optional[str]]] = {}
    paths: list[str] = []
    if head:
        proc = git.run(["diff-index", "-z", "--name-only", head, "--", spec], k.top)
        paths += list(git.split_z(proc.stdout))
    proc = git.run(["ls-files", "-z", "--others", "--exclude-standard", "--", spec], k.top)
    paths += list(git.split_z(proc.stdout))
    paths = [p for p in dict.fromkeys(paths) if p.endswith(".json")]
    if not paths:
        return out
    old = {}
    if head:
        proc = git.run(["ls-tree", "-z", head, "--", *(f":(literal){p}" for p in paths)], k.top)
        old = {e.path: e.oid for e in git.tree_entries(proc.stdout)}
    for p in paths:
        full = k.top / p
        new = None
        try:
            is_file = full.is_file()
        except OSError as exc:  # a folder on the way that the user may not enter
            raise os_failure(exc, f"read the verification record {p}") from None
        if is_file:
            new = git.out(["hash-object", "-w", "--", p], k.top, write=True)
        rel = k.rel(p)
        if rel is not None and old.get(p) != new:
            out[rel] = (old.get(p), new)
    return out


def records_dir(k: KnowledgeBase) -> str:
    """KB-relative folder of the verification records (``Logs/Verification``)."""
    return f"{k.config.paths['logs'].strip('/')}/Verification"


#: Fields that move with the lines around an object, not with the object itself.
_MOVING = ("$.line", "$.end_line", "$.anchor_lines", "$.conclusion_line")


def _fill(s: Sides, idx: Any) -> None:
    """Objects of the changed files, both sides; of a tree or registry file changed on
    both sides only the objects whose fields differ (compared inside SQLite: a
    5,000-hypothesis tree.md with one new hypothesis costs no 10,000 JSON loads)."""
    from kb.parse import classify

    k, old_k = s.kb, s.before_kb
    old = {p: o for p, (o, _n) in s.changes.items() if o and classify(p, old_k.config)}
    new = {p: n for p, (_o, n) in s.changes.items() if n and classify(p, k.config)}
    for files, side_k in ((old, old_k), (new, k)):
        if files:
            idx.ensure(Snapshot(kb=side_k, kind="commit", files=files,
                                formats={p: classify(p, side_k.config) or "" for p in files}))
    # Files holding many objects (tree.md, registries) changed on both sides: only the
    # objects that differ. A card or an experiment is one object: always both versions,
    # so that an edit of its prose (a log entry) is seen too.
    both = {p for p in set(old) & set(new) if classify(p, k.config) in ("tree", "registry")
            and classify(p, old_k.config) == classify(p, k.config)}
    s.old_objects = _objects(idx, old_k, {p: b for p, b in old.items() if p not in both})
    s.new_objects = _objects(idx, k, {p: b for p, b in new.items() if p not in both})
    for p in sorted(both):
        for side, a, b in ((s.old_objects, old[p], new[p]), (s.new_objects, new[p], old[p])):
            for kind, oid, line, data in changed_objects(idx, p, a, b, _MOVING):
                fields = json.loads(data)
                fields["path"], fields["line"] = k.repo_path(p), line
                side.setdefault((kind, oid), fields)
    s.new_files = new
    # A changed file kb cannot read on the after side (not UTF-8, too deep): its objects
    # are unknown there, not removed. One query per 400 changed files, not one per file.
    first: dict[str, tuple[int, str, str]] = {}
    items = sorted(new.items())
    for p, line, code, message in first_diagnostics(idx, items, UNREADABLE):
        first.setdefault(p, (line, code, message))
    for p, _blob in items:
        if p in first:
            line, code, message = first[p]
            s.unreadable.append({"path": k.repo_path(p), "line": line, "code": code, "message": message})


#: Parse diagnostics that mean kb read nothing of a file.
UNREADABLE = ("KB101", "KB199")


def new_objects_by_id(s: Sides, kind: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Objects of ``kind`` with these IDs in the after side's changed files, changed or not
    (the unchanged ancestors a diagram needs for context)."""
    idx = s._index
    out: dict[str, dict[str, Any]] = {}
    want = [i for i in dict.fromkeys(ids)]
    for p, blob in sorted(s.new_files.items()):
        for oid, line, data in objects_with_ids(idx, p, blob, kind, want):
            if oid not in out:
                fields = json.loads(data)
                fields["path"], fields["line"] = s.kb.repo_path(p), line
                out[oid] = fields
    return out


def open_sides(k: KnowledgeBase, idx: Any, source: str, a: Optional[str] = None,
               b: Optional[str] = None, environ: Optional[dict[str, str]] = None,
               rewrite: bool = False) -> Sides:
    """The sides for ``source`` in :data:`SOURCES` (``a``/``b`` for a range; ``rewrite``:
    :func:`range_sides`).

    Raises UsageError for an unknown source or a bad range, EnvironmentError_
    when git cannot list the range.
    """
    import os

    env = dict(os.environ if environ is None else environ)
    if source == "range":
        if not a:
            raise UsageError("a range needs A..B (or A B)")
        try:
            return range_sides(k, a, b or "HEAD", idx, rewrite)
        except UsageError:
            raise
        except GitError as exc:
            raise EnvironmentError_(f"cannot list the commits of {a}..{b or 'HEAD'}: {exc}") from None
    if source == "staged":
        return staged_sides(k, idx, env)
    if source == "worktree":
        return worktree_sides(k, idx, env)
    raise UsageError(f"unknown diff source {source!r}; use one of {', '.join(SOURCES)}")


def parse_spec(args: tuple[str, ...]) -> tuple[Optional[str], Optional[str]]:
    """``("A..B",)`` or ``("A", "B")`` or ``("A",)`` (A..HEAD) -> (A, B); ``()`` -> (None, None).

    Raises UsageError for ``A...B``, for more than two arguments, and for an end
    starting with ``-`` (git would read it as an option: :func:`kb.git.revision`).
    """
    if not args:
        return None, None
    if len(args) > 2:
        raise UsageError("give a range as A..B or A B")
    if len(args) == 2:
        return git.revision(args[0], "the range start"), git.revision(args[1], "the range end")
    spec = args[0]
    if "..." in spec:
        raise UsageError(f"{spec!r}: use A..B (kb compares B with the merge base of A and B)")
    if ".." in spec:
        a, _, b = spec.partition("..")
        if not a:
            raise UsageError(f"{spec!r}: the range needs a start (A..B)")
        return git.revision(a, "the range start"), git.revision(b or "HEAD", "the range end")
    return git.revision(spec, "the range start"), "HEAD"


def top_of(start: Path) -> Path:
    """The top of the git work tree holding ``start``.

    Raises EnvironmentError_ when ``start`` is not inside one.
    """
    top = git.toplevel(start)
    if top is None:
        raise EnvironmentError_(f"{start} is not inside a git work tree")
    return top
