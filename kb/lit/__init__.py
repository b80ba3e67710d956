"""The literature client (issue 17; HYPOTHESIS-GEN.md "The literature client").

Semantic Scholar Graph API (paper search, snippet search, references,
citations, recommendations), OpenAlex (a second source and the fallback) and
arXiv metadata by id, over httpx, with the cross-process S2 throttle, retries
with backoff, an on-disk cache keyed by request and de-duplication::

    from kb.lit import LitClient
    client = LitClient(cache_dir=".lit-cache")
    papers = client.search("spaced repetition motor skills", limit=12, source="both")
    snippets = client.snippet("spacing effect procedural memory", limit=10)

Every function returns plain JSON-ready dicts; every failure is a
:class:`kb.lit.errors.LitError` (exit 1) carrying the fallback advice.
"""

from __future__ import annotations

from kb.lit.client import LitClient
from kb.lit.errors import LitError, LitNotFound, LitResponseError, LitUnavailable

__all__ = ["LitClient", "LitError", "LitNotFound", "LitResponseError", "LitUnavailable"]
