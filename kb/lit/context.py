"""Which cache a literature command uses, and which gen round hears about it.

``open_client(cache_dir=None, sandbox=None)``:

- ``cache_dir`` given: that folder, no round bookkeeping;
- else a generation run (``sandbox``, ``$KB_GEN_SANDBOX``, the current
  folder or ``./sandbox`` holding ``loop.run.yaml``): its
  ``literature/.cache``, and every cache key served (fetched or cached) is
  recorded in the current round's ``cache-keys.txt`` — what makes the
  LiteratureScout's snippets checkable;
- else ``.kb/lit-cache`` at the project root (git-ignored with ``.kb/``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kb.lit.client import LitClient
from kb.lit.keys import project_root


def open_client(cache_dir: str | Path | None = None, sandbox: str | Path | None = None,
                **kw: Any) -> tuple[LitClient, dict[str, Any]]:
    """A :class:`LitClient` and ``{"cache_dir", "sandbox", "round"}`` describing its context."""
    from kb.gen.store import Sandbox, find_sandbox

    if cache_dir is not None and sandbox is None:
        return LitClient(cache_dir, **kw), {"cache_dir": str(cache_dir), "sandbox": None, "round": None}
    found = find_sandbox(sandbox, required=sandbox is not None)
    if found is not None:
        sb = Sandbox(found)
        folder = Path(cache_dir) if cache_dir is not None else sb.cache_dir
        client = LitClient(folder, on_key=sb.record_cache_key, **kw)
        return client, {"cache_dir": str(folder), "sandbox": str(found),
                        "round": None if sb.state.get("stopped") else sb.round}
    folder = project_root() / ".kb" / "lit-cache"
    return LitClient(folder, **kw), {"cache_dir": str(folder), "sandbox": None, "round": None}
