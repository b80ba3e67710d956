"""``kb trail render``: write TRAIL.md (one commit ``trail.render``), through kb's one
write path. The text itself is :func:`kb.trail.render.render` (pure); this module is
the write, kept apart so the renderer sits below the rules that judge it (KB241)."""

from __future__ import annotations

from typing import Any

from kb.ops.result import OpResult
from kb.ops.transaction import Transaction
from kb.repo import resolve_kb
from kb.trail.files import TRAIL_FILE
from kb.trail.render import file_bytes, render
from kb.trail.replay import load


def render_kb(kb: Any, *, no_commit: bool = False, on_wait: Any = None) -> Any:
    """Write TRAIL.md at the KB root (one commit ``trail.render``, or left uncommitted).

    Returns kb's write result (:class:`kb.ops.result.OpResult`, ``op``
    ``trail.render``, ``id`` None) whose details are ``path`` and ``changed``; an
    up-to-date file is not rewritten (no commit, ``paths`` empty).
    """
    k = resolve_kb(kb)
    with Transaction(k, "trail.render", "trail render: TRAIL.md", no_commit=no_commit,
                     on_wait=on_wait) as tx:
        old = tx.read(TRAIL_FILE)
        data = file_bytes(render(load(k)), old)
        changed = old != data
        if changed:
            tx.write(TRAIL_FILE, data)
    path = k.prefix + TRAIL_FILE
    return OpResult.of(tx, op="trail.render",
                       changes=[f"wrote {path}"] if changed else [f"{path} is up to date"],
                       details={"path": path, "changed": changed})


__all__ = ["render_kb"]
