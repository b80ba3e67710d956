"""The Trail page's data: the exploration graph of one commit (seed ``explore-tree``, issue 15).

The graph is replayed from the commit's operation log (``.explore-tree/ops/``
read from git objects) by :func:`kb.trail.replay.replay_blobs`, the same
replay ``kb trail`` runs on the working tree; the frontier and stats are
:func:`kb.trail.views.frontier` / :func:`~kb.trail.views.stats`, as in
``kb trail frontier --json``. The page draws it in the browser (``kb.js``):
the server sends the live nodes once as JSON (``/trail.json``) and the page
polls it to follow the graph as it grows. When kb is installed without
:mod:`kb.trail`, :func:`available` is False and the page does not exist.
"""

from __future__ import annotations

from typing import Any, Callable

from kb import git
from kb.web.source import RevView

__all__ = ["available", "graph_at", "trail_data"]

#: Node fields the page uses (a node's full record is ``kb trail node ID --json``).
FIELDS = ("id", "kind", "title", "summary", "status", "tags", "refs", "digest", "owner", "hits",
          "created_at", "updated_at", "created_by", "source", "seq")


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
    for rec in git.split_z(proc.stdout):
        meta, _, name = rec.partition("\t")
        parts = meta.split(" ")
        if len(parts) == 3 and parts[1] == "blob" and name.endswith(".jsonl"):
            entries[view.kb.rel(name) or name] = parts[2]
    blobs = git.read_blobs(list(entries.values()), view.kb.top) if entries else {}
    return replay_blobs({rel: blobs.get(b, b"") for rel, b in entries.items()})


def trail_data(view: RevView, g: Any, ref_url: Callable[[str], str | None]) -> dict[str, Any]:
    """JSON for the page: ``{"commit", "nodes": [...], "roots", "edges", "frontier", "stats",
    "leaf_root_kinds", "kinds", "ref_urls": {ref: url}, "problems"}``.

    ``nodes`` are the live nodes (:meth:`Graph.live`) in creation order with
    :data:`FIELDS`, ``parent`` (None when the parent is not live) and
    ``children`` (live ones); ``ref_urls`` maps each ref that names an object
    or a file of the KB at this commit to its page (others stay text).
    """
    from kb.trail.model import KINDS, LEAF_ROOT_KINDS
    from kb.trail.views import frontier, stats

    live = {nid: n for nid, n in g.nodes.items() if g.live(n)}
    nodes = []
    refs: dict[str, str] = {}
    for n in sorted(live.values(), key=lambda n: n.seq):
        d = {f: getattr(n, f) for f in FIELDS}
        d["parent"] = n.parent if n.parent in live else None
        d["children"] = [c for c in n.children if c in live]
        nodes.append(d)
        for r in n.refs:
            if r not in refs:
                url = ref_url(r)
                if url:
                    refs[r] = url
    edges = [e.to_json() for e in g.edges if e.src in live and e.dst in live]
    return {"commit": view.commit, "nodes": nodes,
            "roots": [d["id"] for d in nodes if d["parent"] is None], "edges": edges,
            "frontier": frontier(g), "stats": stats(g), "kinds": list(KINDS),
            "leaf_root_kinds": list(LEAF_ROOT_KINDS), "ref_urls": refs,
            "problems": len(g.problems)}
