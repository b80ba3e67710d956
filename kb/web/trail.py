"""The Trail page's data: the exploration graph of one commit (seed ``explore-tree``, issue 15).

The graph is replayed from the commit's operation log (``.explore-tree/ops/``
read from git objects) by :func:`kb.trail.replay.replay_blobs`, the same
replay ``kb trail`` runs on the working tree; the page's data is
:func:`kb.trail.views.snapshot`, as in ``kb trail snapshot --json``. The page draws it in the browser (``kb.js``):
the server sends the live nodes once as JSON (``/trail.json``) and the page
polls it to follow the graph as it grows. When kb is installed without
:mod:`kb.trail`, :func:`available` is False and the page does not exist.
"""

from __future__ import annotations

from typing import Any, Callable

from kb import git
from kb.web.source import RevView

__all__ = ["available", "graph_at", "trail_data"]

def available() -> bool:
    """True when :mod:`kb.trail` (the exploration graph) is installed with kb."""
    try:
        import kb.trail.replay  # noqa: F401
        import kb.trail.views  # noqa: F401
    except ImportError:
        return False
    return True


def graph_at(view: RevView) -> Any:
    """The :class:`kb.trail.replay.Graph` of the view's commit (log files from git objects)."""
    from kb.trail.log import OPS_DIR
    from kb.trail.replay import replay_blobs

    spec = view.kb.repo_path(OPS_DIR) + "/"
    proc = git.run(["ls-tree", "-r", "-z", view.commit, "--", spec], view.kb.top, check=False)
    entries: dict[str, str] = {}
    for e in git.tree_entries(proc.stdout):
        if e.type == "blob" and e.path.endswith(".jsonl"):
            entries[view.kb.rel(e.path) or e.path] = e.oid
    blobs = git.read_blobs(list(entries.values()), view.kb.top) if entries else {}
    return replay_blobs({rel: blobs.get(b, b"") for rel, b in entries.items()})


def trail_data(view: RevView, g: Any, ref_url: Callable[[str], str | None]) -> dict[str, Any]:
    """``kb trail snapshot --json`` of the commit's graph (:func:`kb.trail.views.snapshot`,
    the seed's panel data: nodes, side edges, roots, focus, frontier, stats), plus what
    the page adds: ``commit``, ``kinds``, ``leaf_root_kinds``, ``problems`` (log entries
    skipped) and ``ref_urls`` — each ref that names an object or a file of the KB at
    this commit, mapped to its page (other refs stay text).
    """
    from kb.trail.model import KINDS, LEAF_ROOT_KINDS, MAX_NODES
    from kb.trail.views import snapshot

    data = snapshot(g, limit=MAX_NODES)
    refs: dict[str, str] = {}
    for n in data["nodes"]:
        for r in n.get("refs", ()):
            if r not in refs:
                url = ref_url(r)
                if url:
                    refs[r] = url
    data.update(commit=view.commit, kinds=list(KINDS), leaf_root_kinds=list(LEAF_ROOT_KINDS),
                ref_urls=refs, problems=len(g.problems))
    return data
