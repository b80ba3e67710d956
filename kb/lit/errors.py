"""Errors of the literature client: httpx's exceptions never escape kb.lit."""

from __future__ import annotations

from kb.errors import RefusedError

#: What an agent should do when the literature APIs cannot answer (HYPOTHESIS-GEN.md).
FALLBACK = ("the literature APIs did not answer; use your web tools (web search / fetch) "
            "instead and mark that evidence source \"web\" with its URL")


class LitError(RefusedError):
    """A literature request failed for good (exit 1, nothing written); ``fallback`` says
    what to do instead."""

    kind = "refused"
    exit_code = 1

    def __init__(self, message: str, fallback: str = FALLBACK) -> None:
        super().__init__(message)
        self.fallback = fallback

    def to_json(self) -> dict[str, object]:
        """``{"error": {"message", "exit_code", "kind"}, "fallback": …}``."""
        return {"error": {"message": str(self), "exit_code": self.exit_code, "kind": self.kind},
                "fallback": self.fallback}


class LitUnavailable(LitError):
    """Retries exhausted: 429 / 5xx / network errors or timeouts on every attempt."""


class LitOffline(LitUnavailable):
    """No connection could be made on any attempt (the host name does not resolve, or
    nothing listens): the machine cannot reach the API, kind ``environment``, exit 2."""

    kind = "environment"
    exit_code = 2


#: What to do when a literature setting (``KB_LIT_*``) is unusable.
CONFIG_FALLBACK = ("fix the setting named above, or unset it for kb's default; meanwhile use your web "
                   "tools (web search / fetch) and mark that evidence source \"web\" with its URL")


class LitConfigError(LitError):
    """A ``KB_LIT_*`` setting is unusable (a malformed base URL, a backoff that is no number):
    kind ``environment``, exit 2, raised before any request (retrying cannot help)."""

    kind = "environment"
    exit_code = 2

    def __init__(self, message: str, fallback: str = CONFIG_FALLBACK) -> None:
        super().__init__(message, fallback)


class LitResponseError(LitError):
    """The API answered, but not usefully: a 4xx other than 429, or a malformed body (not
    JSON, or JSON of the wrong shape: :mod:`kb.lit.shapes`)."""


class LitNotFound(LitResponseError):
    """The API does not know the paper (HTTP 404, or no arXiv entry): kind ``not_found``."""

    kind = "not_found"
