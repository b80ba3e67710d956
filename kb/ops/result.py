"""The one result type of every write operation, and the options every write takes.

Tree operations (``kb hyp``, ``kb exp``, ``kb dashboard``), card operations
(``kb problem``, ``propo``, ``method``, ``entry``, ``verdict``, ``promote``,
``priority``, ``refresh``, ``report``) and ``kb lock release`` all return an
:class:`OpResult`; the CLI prints it with one printer and agents read its
:meth:`OpResult.to_json`::

    {"op": "hyp.add", "id": "H1.3", "ids": ["H1.3"], "paths": ["tree.md", …],
     "blobs": {"tree.md": "<40 hex>"}, "commit": "<40 hex>" | null,
     "changes": ["added H1.3 …"], "recovered": [], …operation fields}

``blobs`` maps each written repository path to its new git blob id, which is
what ``--expect`` takes for the next edit of that file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

from kb.errors import UsageError

OnWait = Callable[[str], None]
Expect = Union[str, Mapping[str, str], None]


def expect_blob(value: Any) -> str:
    """One ``expect`` blob id, lower-cased: what every write (CLI ``--expect``, MCP
    ``expect``) checks before it reads a file.

    Raises UsageError unless ``value`` is a git blob id (40 or 64 hex digits). An empty or
    blank value is refused too, never read as "no check": a caller that meant to guard its
    write would otherwise write unguarded.
    """
    blob = str(value).strip().lower()
    want = "a git blob id (40 hex digits), e.g. the `blob` field of `kb show --json`"
    if not blob:
        raise UsageError(f"--expect is empty: it needs {want}")
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", blob):
        raise UsageError(f"--expect needs {want}; not {str(value)!r}")
    return blob


@dataclass(frozen=True)
class WriteOptions:
    """What every write command takes besides its own arguments.

    ``no_commit``: write the files, leave them uncommitted; ``owner``: who
    acts (lock owner; default ``KB_OWNER``, else ``git config kb.owner``, else
    ``user.email``: :func:`kb.locks.default_owner`);
    ``expect``: the blob id the caller read of the target file (compare and
    swap), or a mapping KB path -> blob id; ``on_wait``: told once what the
    write waits for when the write lock is busy.
    """

    no_commit: bool = False
    owner: str | None = None
    expect: Expect = None
    on_wait: OnWait | None = None

    def kwargs(self, expect: bool = True) -> dict[str, Any]:
        """The library keywords (``no_commit``, ``owner``, ``expect``, ``on_wait``)."""
        out: dict[str, Any] = {"no_commit": self.no_commit, "owner": self.owner,
                               "on_wait": self.on_wait}
        if expect:
            out["expect"] = self.expect
        return out


@dataclass
class TxResult:
    """What a transaction did. ``commit`` is None with ``no_commit`` or no change;
    ``blobs`` maps each written repository path to its new git blob id."""

    op: str
    ids: list[str]
    paths: list[str]
    commit: str | None
    message: str
    blobs: dict[str, str] = field(default_factory=dict)


@dataclass
class OpResult:
    """What a write operation did (or, for dry runs, would do).

    ``op``: the ``Kb-Op`` value (``hyp.add``); ``id``: the main object (the
    new hypothesis, the card, …) or None; ``ids``: the ``Kb-Id`` values;
    ``paths``: repository paths written (empty when nothing changed);
    ``blobs``: path -> new git blob id of each written file; ``commit``: the
    new commit, None with ``no_commit``, when nothing changed, or for a dry
    run; ``changes``: one human line per change; ``recovered``: paths an
    interrupted earlier write left behind that this one rolled back first;
    ``details``: the operation's own JSON fields; ``tx``: the transaction's
    result (None for a dry run).
    """

    op: str
    id: str | None = None
    ids: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    blobs: dict[str, str] = field(default_factory=dict)
    commit: str | None = None
    changes: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    tx: "TxResult | None" = None

    @property
    def data(self) -> dict[str, Any]:
        """The operation's own fields (an alias of ``details``)."""
        return self.details

    @property
    def lines(self) -> list[str]:
        """The human lines (an alias of ``changes``)."""
        return self.changes

    @classmethod
    def of(cls, tx: Any, op: str | None = None, main_id: str | None = None,
           changes: list[str] | None = None, details: dict[str, Any] | None = None) -> "OpResult":
        """The result of the finished :class:`kb.ops.transaction.Transaction` ``tx``
        (committed, or nothing changed)."""
        res = tx.result or TxResult(tx.op, list(tx.ids), [], None, "")
        return cls(op=op or res.op, id=main_id, ids=list(res.ids), paths=list(res.paths),
                   blobs=dict(res.blobs), commit=res.commit, changes=list(changes or []),
                   recovered=list(tx.recovered), details=dict(details or {}), tx=res)

    @classmethod
    def dry(cls, op: str, changes: list[str], details: dict[str, Any]) -> "OpResult":
        """A result for a dry run or check: nothing written."""
        return cls(op=op, changes=changes, details=details)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of the module docstring (operation fields after the common ones)."""
        data: dict[str, Any] = {"op": self.op, "id": self.id, "ids": self.ids,
                                "paths": self.paths, "blobs": self.blobs, "commit": self.commit,
                                "changes": self.changes, "recovered": self.recovered}
        for key, value in self.details.items():
            data.setdefault(key, value)
        return data


__all__ = ["OpResult", "TxResult", "WriteOptions", "OnWait", "Expect"]
