"""The trail nodes a commit range added or closed (for ``kb trail diff`` and ``kb diff``).

::

    from kb.trail.diff import range_changes
    range_changes(kb, "main", "HEAD")
    # {"base": "…", "head": "…", "added": [short node, …], "closed": [short node, …]}

Both ends are replayed from the log files as committed at that revision (never
the working tree). *Added*: live at ``head``, absent at ``base``. *Closed*:
done, abandoned or archived at ``head`` and open or active (or absent) at
``base``. Raises :class:`kb.errors.UsageError` for a revision git cannot
resolve.
"""

from __future__ import annotations

from typing import Any

from kb import git
from kb.errors import UsageError
from kb.trail.log import OPS_DIR
from kb.trail.replay import Graph, replay_blobs


def graph_at(kb: Any, rev: str) -> Graph:
    """The graph replayed from the log files committed at ``rev``.

    Raises :class:`kb.errors.UsageError` for a ``rev`` that names no commit, quoting it
    as given (:func:`kb.git.revision` refuses an empty one or one starting with ``-``).
    """
    # rev_parse asks git for the commit itself (``^{commit}``): the check comes first, so
    # that a refusal names the user's text, not what kb passes on to git.
    commit = git.rev_parse(git.revision(rev), kb.top)
    if commit is None:
        raise UsageError(f"unknown revision {rev!r}")
    out = git.run(["ls-tree", "-r", "-z", commit, "--", kb.repo_path(OPS_DIR)], kb.top).stdout
    files: dict[str, str] = {}
    for e in git.tree_entries(out):
        rel = kb.rel(e.path)
        if e.type == "blob" and rel is not None and rel.endswith(".jsonl"):
            files[rel] = e.oid
    blobs = git.read_blobs(list(files.values()), kb.top) if files else {}
    return replay_blobs({rel: blobs[b] for rel, b in files.items() if b in blobs})


def range_changes(kb: Any, base: str, head: str = "HEAD") -> dict[str, Any]:
    """The nodes ``base..head`` added or closed (see the module docstring)."""
    from kb.repo import resolve_kb
    from kb.trail.views import short

    k = resolve_kb(kb)
    a, b = graph_at(k, base), graph_at(k, head)
    added, closed = [], []
    for n in b.nodes.values():
        if n.merged_into is not None:
            continue
        old = a.nodes.get(n.id)
        if old is None and not n.archived:
            added.append(short(n))
        if (n.status in ("done", "abandoned") or n.archived) and (
                old is None or (old.status in ("open", "active") and not old.archived)):
            closed.append(short(n))
    return {"base": base, "head": head, "added": added, "closed": closed,
            "problems": [p.to_json() for p in b.problems]}
