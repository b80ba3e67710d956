"""The web view's data source: one commit of the KB, read from git objects (issue 16).

A page is never rendered from the working tree (which may hold half-written
files): every request names a revision (``?rev=``, default ``HEAD``), which
is resolved to a commit id, and everything on the page comes from that
commit's tree through the index cache, keyed by blob id::

    src = Source(kb)
    rows = src.call("HEAD", lambda view: view.objects("hypothesis"))
    details = src.call("HEAD", lambda view: show_object("H1", idx=view)[1])  # as `kb show --json`

:class:`RevView` is a :class:`kb.index_facts.SnapshotIndex` whose "current files" are the
commit's (a connection-local temporary table) instead of the indexed working
tree, so kb's own readers (:func:`kb.api.show_object`,
:func:`kb.research.cardview.card_view`, ``Index.extract``) run on it unchanged.
Parsing a commit's files fills the same cache ``kb index`` uses (a cache,
never the KB); nothing in the repository is written.

Errors: :class:`kb.errors.UsageError` for a revision that does not name a
commit.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from kb import git
from kb.errors import UsageError
from kb.index_facts import SnapshotIndex
from kb.repo import KnowledgeBase, commit_snapshot

__all__ = ["Source", "RevView", "safe_rel"]

T = TypeVar("T")

#: A revision as people type it: refs, ``HEAD~2``, ``main@{1}``, ids. No option-like
#: start (``-``), no whitespace or control characters, no ``..`` ranges.
_REV = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./@{}~^+-]{0,199}$")


def safe_rel(path: str) -> str | None:
    """``path`` when it is a plain KB-relative path, else None.

    Refused: empty, absolute, ``\\``, NUL or control characters, and any
    ``.``/``..``/empty segment — the web view serves no path outside the KB.
    """
    if not path or path.startswith("/") or "\\" in path or any(ord(c) < 32 for c in path):
        return None
    if any(seg in ("", ".", "..") for seg in path.split("/")):
        return None
    return path


class RevView(SnapshotIndex):
    """The index restricted to one commit's files (see the module docstring).

    ``commit`` is the full commit id, ``rev`` what was asked for, ``snap``
    the commit's :class:`kb.repo.Snapshot`.
    """

    def __init__(self, k: KnowledgeBase, rev: str, commit: str) -> None:
        # Kept between requests (the connection holds the commit's temporary table) and
        # used only on Source's one worker thread (SQLite connections stay in theirs).
        self.rev = rev
        self.commit = commit
        super().__init__(k, commit_snapshot(k, commit))

    def refresh(self, only: list[str] | None = None) -> Any:  # pragma: no cover - guard
        """Refused: a commit's view never changes (raises TypeError, a bug if reached)."""
        raise TypeError("a commit's view is immutable; it has nothing to refresh")

    def diagnostics(self) -> list[Any]:
        """Parse diagnostics of the commit's files, sorted by path and line."""
        out = []
        for path in sorted(self.snap.files):
            out.extend(self.diagnostics_of(path, self.snap.files[path]))
        return out

    def error_files(self) -> list[dict[str, Any]]:
        """The files of the commit whose stored parse has an error, by path: ``{"path",
        "errors" (how many), "line" (the first), "code" (its code)}``. Read from the
        diagnostics the index stored with each parse (nothing is parsed again); what
        ``kb ls`` counts in its "N file(s) have errors" note, for this commit."""
        out: list[dict[str, Any]] = []
        for path, line, code in self.error_rows():
            if out and out[-1]["path"] == path:
                out[-1]["errors"] += 1
            else:
                out.append({"path": path, "errors": 1, "line": line, "code": code})
        return out

    def file_diagnostics(self, path: str) -> list[Any]:
        """The stored parse diagnostics of KB-relative ``path`` at the commit (errors
        first, then by line); empty when the commit has no such file."""
        blob = self.snap.files.get(path)
        diags = self.diagnostics_of(path, blob) if blob else []
        return sorted(diags, key=lambda d: (d.severity != "error", d.line, d.code))

    def current_blob(self, path: str) -> str | None:
        """The blob id of KB-relative ``path`` in the commit (a file kb reads), or None."""
        return self.snap.files.get(path)

    def read_text(self, path: str) -> str | None:
        """The text of KB-relative ``path`` at the commit, or None when it is not a
        file of the KB there (any tracked file under the KB folder counts)."""
        rel = safe_rel(path)
        if rel is None:
            return None
        spec = self.kb.repo_path(rel)
        proc = git.run(["ls-tree", "-z", self.commit, "--", f":(literal){spec}"], self.kb.top,
                       check=False)
        if proc.returncode != 0:
            return None
        found = list(git.tree_entries(proc.stdout))
        if len(found) != 1:
            return None
        mode, typ, blob, name = found[0]
        if typ != "blob" or name != spec or mode == "120000":
            return None  # a folder, a submodule or a symlink (it could point outside)
        return self.blob_text(blob)

    #: blob id -> text of the last few files read (tree.md is megabytes; blobs never change).
    _texts: OrderedDict[str, str] = OrderedDict()
    _texts_lock = threading.Lock()

    def blob_text(self, blob: str) -> str:
        """A blob's text (UTF-8, undecodable bytes replaced, BOM dropped); the last 8 kept."""
        with self._texts_lock:
            if blob in self._texts:
                self._texts.move_to_end(blob)
                return self._texts[blob]
        data = git.read_blobs([blob], self.kb.top).get(blob, b"")
        text = data.decode("utf-8", "replace").lstrip("\ufeff")
        with self._texts_lock:
            self._texts[blob] = text
            while len(self._texts) > 8:
                self._texts.popitem(last=False)
        return text

    def json_blobs(self, folder: str) -> Iterator[tuple[str, bytes]]:
        """(KB-relative path, bytes) of every ``*.json`` file directly in ``folder`` at the
        commit, by path (a folder or a symlink named ``*.json`` is no file: skipped, as
        KB243 lists the records)."""
        spec = self.kb.repo_path(folder.strip("/")) + "/"
        proc = git.run(["ls-tree", "-z", self.commit, "--", spec], self.kb.top, check=False)
        entries = [(e.path, e.oid) for e in git.tree_entries(proc.stdout)
                   if e.type == "blob" and e.mode != "120000" and e.path.endswith(".json")]
        blobs = git.read_blobs([b for _, b in entries], self.kb.top) if entries else {}
        for name, blob in sorted(entries):
            yield self.kb.rel(name) or name, blobs.get(blob, b"")

    def json_files(self, folder: str) -> Iterator[tuple[str, Any]]:
        """(KB-relative path, parsed JSON) of every ``*.json`` directly in ``folder`` at
        the commit; a file that is not UTF-8 JSON is skipped (:meth:`json_blobs` has it)."""
        for rel, raw in self.json_blobs(folder):
            try:
                data = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                continue
            yield rel, data


class Source:
    """Resolves revisions of one KB and keeps :class:`RevView` objects of recent commits.

    Every use of a view runs on one worker thread (:meth:`call`): requests are
    served one at a time on the index, and each SQLite connection stays in the
    thread that opened it. A view is kept per commit (a commit never changes);
    on each use its parses are checked again (:meth:`kb.index.Index.ensure`),
    because a ``kb index`` in another process drops the parses of blobs its
    working tree no longer has.
    """

    KEEP = 3

    def __init__(self, k: KnowledgeBase, default_rev: str = "HEAD") -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.kb = k
        self.default_rev = default_rev
        self.views: OrderedDict[str, RevView] = OrderedDict()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-serve-index")

    def resolve(self, rev: str | None) -> tuple[str, str]:
        """``(rev, commit id)`` for ``rev`` (None: the default). Raises UsageError."""
        rev = (rev or self.default_rev).strip()
        if not _REV.match(rev) or ".." in rev:
            raise UsageError(f"not a revision: {rev!r}")
        proc = git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
                       self.kb.top, check=False)
        commit = proc.stdout.decode().strip()
        if proc.returncode != 0 or not commit:
            raise UsageError(f"no commit {rev!r} in {self.kb.top} (is anything committed yet?)")
        return rev, commit

    def call(self, rev: str | None, fn: Callable[[RevView], T]) -> T:
        """``fn(view of rev's commit)`` on the worker thread; its result or its exception."""
        return self._worker.submit(lambda: fn(self._open(rev))).result()

    def _open(self, rev: str | None) -> RevView:
        name, commit = self.resolve(rev)
        view = self.views.get(commit)
        if view is None:
            view = RevView(self.kb, name, commit)
            self.views[commit] = view
            while len(self.views) > self.KEEP:
                self.views.popitem(last=False)[1].close()
        else:
            self.views.move_to_end(commit)
            view.ensure(view.snap)
        view.rev = name
        return view

    def close(self) -> None:
        """Close every view and its database connection (on the worker thread)."""
        def shut() -> None:
            for v in self.views.values():
                v.close()
            self.views.clear()

        self._worker.submit(shut).result()
        self._worker.shutdown()


def kb_root_label(k: KnowledgeBase) -> str:
    """A short name for the KB in page titles: its folder's name."""
    return Path(k.root).name or str(k.root)
