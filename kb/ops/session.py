"""The write session of the hypothesis-tree use cases (``kb hyp``, ``kb exp``, ``kb dashboard``).

A :class:`Session` is a :class:`kb.ops.transaction.Transaction` plus the index
refreshed under its write lock: under the lock it refreshes the index, the
operation edits ``tree.md`` by splicing only the lines that change
(:class:`kb.ops.tree_edit.TreeEdit`), refreshes ``DASHBOARD.md``, and commits
its own paths as one commit with ``Kb-Op`` / ``Kb-Id`` (and ``Kb-Override``)
trailers, returning one :class:`kb.ops.result.OpResult`. The card use cases
use :func:`kb.ops.workspace.run_op` over the same transaction.

Also here: the argument checks every tree write shares (:func:`kb.text.one_line`,
:func:`expect_map`, :func:`short`).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from kb.index import Index
from kb.ops.history import history_ids_with_head, note_commit
from kb.ops.result import OpResult, expect_blob
from kb.ops.transaction import Transaction
from kb.ops.tree_edit import TreeEdit
from kb.repo import KnowledgeBase, resolve_kb

OnWait = Callable[[str], None]


def expect_map(k: KnowledgeBase, expect: Any, primary: str) -> dict[str, str]:
    """``--expect``: a blob id for ``primary``, ``PATH=BLOB``, or a mapping path -> blob.

    Raises UsageError for a value that is not a 40-hex-digit blob id or a ``PATH=BLOB`` pair
    (:func:`kb.ops.result.expect_blob`; an empty one too).
    """
    if expect is None:
        return {}
    items: Iterable[tuple[str, str]]
    if isinstance(expect, Mapping):
        items = expect.items()
    else:
        items = []
        for part in str(expect).split(","):
            path, eq, blob = part.strip().rpartition("=")
            items.append((path if eq else primary, blob))
    out = {}
    for path, blob in items:
        out[path.strip() or primary] = expect_blob(blob)
    return out


def short(text: str, n: int = 60) -> str:
    """``text`` cut to ``n`` characters with ``…`` (commit summaries)."""
    return text if len(text) <= n else text[: n - 1] + "…"


class Session:
    """A :class:`Transaction` plus the index refreshed under its lock.

    Use as a context manager; operations build their edits inside it and the
    commit happens on a clean exit (see kb.ops.transaction).
    """

    def __init__(self, kb: Any, op: str, *, summary: str = "", no_commit: bool = False,
                 owner: str | None = None, on_wait: OnWait | None = None,
                 overrides: Iterable[tuple[str, str]] = ()) -> None:
        self.kb = resolve_kb(kb)
        self.tx = Transaction(self.kb, op, summary, no_commit=no_commit, owner=owner,
                              overrides=list(overrides), on_wait=on_wait)
        self.idx: Any = None
        self._tree: TreeEdit | None = None
        self.history_head: str | None = None  # HEAD when history_ids() read the history

    def history(self) -> tuple[set[str], set[str]]:
        """:func:`kb.ops.history.history_ids` of this KB (remembering HEAD to extend the cache after the commit)."""
        ids, deleted, self.history_head = history_ids_with_head(self.kb)
        return ids, deleted

    def __enter__(self) -> "Session":
        self.tx.__enter__()
        try:
            self.idx = Index(self.kb)
            paths = self.kb.config.paths
            # The tree workflow reads the tree, the experiments and the dashboard only.
            self.idx.refresh(only=[paths["tree"], paths["experiments"], paths["dashboard"]])
        except BaseException as exc:
            if self.idx is not None:
                self.idx.close()
            self.tx.__exit__(type(exc), exc, None)
            raise
        return self

    def __exit__(self, et: Any, e: Any, tb: Any) -> None:
        try:
            self.tx.__exit__(et, e, tb)
            res = self.tx.result
            if et is None and res is not None and res.commit and self.history_head:
                tree_path = self.kb.repo_path(self.kb.config.paths["tree"])
                note_commit(self.kb, self.history_head, res.commit,
                            res.ids if tree_path in res.paths else [])
        finally:
            self.idx.close()

    @property
    def config(self) -> Any:
        """The KB's configuration (kb.toml)."""
        return self.kb.config

    @property
    def locale(self) -> str:
        """The KB's locale (``zh`` or ``en``): the words written into tree.md."""
        return self.kb.config.locale

    def tree(self) -> TreeEdit:
        """``tree.md`` in this session (opened once, refused when it has format errors)."""
        if self._tree is None:
            self._tree = TreeEdit(self)
        return self._tree

    def result(self, op: str, main_id: str, changes: list[str],
               details: dict[str, Any] | None = None) -> OpResult:
        """The :class:`OpResult` of this session's transaction (after the ``with`` block)."""
        return OpResult.of(self.tx, op, main_id, changes, details)


__all__ = ["Session", "OnWait", "expect_map", "short"]
