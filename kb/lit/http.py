"""HTTP under the literature client: throttle, retries, on-disk cache (HYPOTHESIS-GEN.md).

- Throttle buckets (minimum seconds between two requests of a bucket):
  ``s2`` 1.1 (Semantic Scholar allows one request per second across its
  endpoints), ``search`` 1.0 (OpenAlex, arXiv), ``default`` 0.2. A bucket is
  enforced across processes: a file lock and a timestamp file in the cache
  folder (``throttle-<bucket>.lock`` / ``.ts``).
- JSON requests: 60 s timeout, 4 attempts, backoff ``base·2^attempt`` seconds
  after failed attempt 0, 1, 2 (2, 4, 8 s; ``KB_LIT_BACKOFF`` sets the base) on
  429, 500, 502, 503, 504, timeouts and network errors; another 4xx, a
  malformed JSON body or an answer of the wrong shape (the caller's ``check``,
  :mod:`kb.lit.shapes`) fails at once. A URL httpx cannot use fails at once too.
- Cache: one file per request, key = the first 32 hex digits of SHA-256 over
  ``method + "\\n" + url + "\\n" + json(body, sorted keys)``; written after each
  success (an answer that passed its check), never expires. A hit makes no
  request and waits for no throttle; a cached body that fails the check (cached
  by an older kb) is a miss.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import urlencode

from kb.errors import os_failure
from kb.lit.errors import (LitConfigError, LitNotFound, LitOffline, LitResponseError,
                           LitUnavailable)
from kb.lit.shapes import Check, ShapeError

INTERVALS: dict[str, float] = {"s2": 1.1, "search": 1.0, "default": 0.2}
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
ATTEMPTS = 4
TIMEOUT = 60.0

OnKey = Callable[[str], None]


def cache_key(method: str, url: str, body: Any = None) -> str:
    """The request's cache key: 32 hex digits (see the module docstring)."""
    raw = f"{method.upper()}\n{url}\n{json.dumps(body, sort_keys=True)}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def build_url(base: str, path: str, params: Mapping[str, Any] | None = None) -> str:
    """``base + path`` with ``params`` (None values dropped) in the given order."""
    url = base + path
    items = [(k, v) for k, v in (params or {}).items() if v is not None]
    return url + ("?" + urlencode(items) if items else "")


class Throttle:
    """Minimum spacing between requests of one bucket, across processes.

    ``wait(bucket)`` blocks until ``interval`` seconds have passed since the
    last request of the bucket (by any process sharing ``folder``), then
    records now as that bucket's last request.
    """

    def __init__(self, folder: Path, intervals: Mapping[str, float] | None = None) -> None:
        self.folder = folder
        self.intervals = dict(INTERVALS, **(intervals or {}))

    def wait(self, bucket: str) -> None:
        """Sleep until ``bucket``'s interval (seconds) since its last request has passed, then
        record now.

        Shared between processes through a stamp file and a file lock in the folder. Raises
        EnvironmentError_ (:func:`kb.errors.os_failure`) when the folder is not writable.
        """
        interval = self.intervals.get(bucket, self.intervals["default"])
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._wait(bucket, interval)
        except OSError as exc:  # a read-only cache folder, …
            raise os_failure(exc, f"write the literature cache {self.folder}") from None

    def _wait(self, bucket: str, interval: float) -> None:
        from filelock import FileLock

        stamp = self.folder / f"throttle-{bucket}.ts"
        with FileLock(str(self.folder / f"throttle-{bucket}.lock")):
            try:
                last = float(stamp.read_text(encoding="ascii").strip() or 0)
            except (OSError, ValueError):
                last = 0.0
            # time.time(), not a monotonic clock: the stamp is shared between processes.
            delay = last + interval - time.time()
            if delay > 0:
                time.sleep(min(delay, interval))
            stamp.write_text(f"{time.time():.6f}\n", encoding="ascii")


class Cache:
    """The on-disk response cache: ``<folder>/<key>.json`` = ``{key, method, url, status, body}``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, key: str) -> Path:
        """The file of cache entry ``key``."""
        return self.folder / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached record of ``key`` (``{key, method, url, status, body}``), or None when
        absent or unreadable.
        """
        try:
            rec = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return rec if isinstance(rec, dict) and "body" in rec else None  # else: not a record

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Store ``record`` under ``key`` (atomically: a temporary file and a rename).

        Raises EnvironmentError_ (:func:`kb.errors.os_failure`) when the folder is not writable.
        """
        tmp = self.path(key).with_suffix(f".tmp{os.getpid()}")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(record, ensure_ascii=False, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path(key))
        except OSError as exc:
            raise os_failure(exc, f"write the literature cache {self.folder}") from None


class Fetcher:
    """GET with throttle, retries, cache; ``on_key`` hears every cache key served.

    ``get_json(url, bucket, headers, check)`` returns the parsed JSON body;
    ``get_text`` the body text (arXiv's Atom). Raises :class:`LitUnavailable`
    when every attempt failed with a retryable status or a network error,
    :class:`LitResponseError` on another 4xx, a malformed JSON body or a body
    ``check`` refuses, and :class:`LitConfigError` when ``KB_LIT_BACKOFF`` or the
    URL is unusable.
    """

    def __init__(self, cache_dir: Path, *, on_key: OnKey | None = None,
                 intervals: Mapping[str, float] | None = None, backoff: float | None = None,
                 timeout: float = TIMEOUT, attempts: int = ATTEMPTS,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.cache = Cache(cache_dir)
        self.throttle = Throttle(cache_dir, intervals)
        self.on_key = on_key
        self.backoff = backoff if backoff is not None else _env_backoff()
        self.timeout = timeout
        self.attempts = attempts
        self.sleep = sleep
        self.requests = 0  # network requests made (cache hits excluded)

    def get_json(self, url: str, bucket: str, headers: Mapping[str, str] | None = None,
                 check: Check | None = None) -> Any:
        """GET ``url`` (throttled by ``bucket``, cached) and return its parsed JSON body, which
        passed ``check`` (:mod:`kb.lit.shapes`; raises ShapeError on a body of the wrong shape).

        Raises LitUnavailable (every attempt failed), LitResponseError (another 4xx, bad JSON,
        a body ``check`` refuses; nothing cached) or LitConfigError (an unusable URL).
        """
        return self._get(url, bucket, headers, as_json=True, check=check)

    def get_text(self, url: str, bucket: str, headers: Mapping[str, str] | None = None,
                 check: Check | None = None) -> str:
        """GET ``url`` (throttled by ``bucket``, cached) and return its body text, which passed
        ``check`` (e.g. :func:`kb.lit.shapes.atom_feed`).

        Raises LitUnavailable (every attempt failed), LitResponseError (another 4xx, a body
        ``check`` refuses; nothing cached) or LitConfigError (an unusable URL).
        """
        return self._get(url, bucket, headers, as_json=False, check=check)

    def _get(self, url: str, bucket: str, headers: Mapping[str, str] | None, as_json: bool,
             check: Check | None) -> Any:
        key = cache_key("GET", url)
        hit = self.cache.get(key)
        # A cached body that fails the check was cached before bodies were checked: a miss,
        # so that one bad answer does not fail the same call for ever.
        if hit is not None and _problem(check, hit["body"]) is None:
            self._served(key)
            return hit["body"]
        body = self._fetch(url, bucket, headers, as_json)
        problem = _problem(check, body)
        if problem is not None:  # like a malformed body: not retried, and never cached
            raise LitResponseError(f"GET {_redact(url)}: the answer is not of the expected "
                                   f"shape: {problem}")
        self.cache.put(key, {"key": key, "method": "GET", "url": url, "status": 200, "body": body})
        self._served(key)
        return body

    def _served(self, key: str) -> None:
        if self.on_key is not None:
            self.on_key(key)

    def _fetch(self, url: str, bucket: str, headers: Mapping[str, str] | None, as_json: bool) -> Any:
        import httpx

        last = "no attempt made"
        connected = False  # did any attempt reach the server?
        with httpx.Client(timeout=self.timeout, follow_redirects=True) as http:
            for attempt in range(self.attempts):
                if attempt:  # 2, 4, 8 s before the 2nd, 3rd, 4th attempt
                    self.sleep(self.backoff * 2 ** (attempt - 1))
                self.throttle.wait(bucket)
                self.requests += 1
                try:
                    resp = http.get(url, headers=dict(headers or {}))
                except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
                    # keys.base_url checks the base URLs; this catches what slips past it. The
                    # same URL fails the same way on every attempt: no retry.
                    raise LitConfigError(f"GET {_redact(url)}: not a usable URL ({exc}); check the "
                                         "KB_LIT_*_URL base URLs") from None
                except httpx.ConnectError as exc:  # DNS failure or connection refused
                    last = f"cannot connect: {exc}"
                    if _unresolvable(exc):  # a name that does not resolve will not in seconds
                        break
                    continue
                except httpx.TimeoutException as exc:
                    connected = connected or not isinstance(exc, httpx.ConnectTimeout)
                    last = f"timed out after {self.timeout:g}s ({type(exc).__name__})"
                    continue
                except httpx.HTTPError as exc:  # protocol errors
                    connected = True
                    last = f"network error: {type(exc).__name__}: {exc}"
                    continue
                connected = True
                if resp.status_code in RETRY_STATUS:
                    last = f"HTTP {resp.status_code}"
                    continue
                if resp.status_code >= 400:
                    cls = LitNotFound if resp.status_code == 404 else LitResponseError
                    raise cls(f"GET {_redact(url)}: HTTP {resp.status_code}: "
                                           f"{resp.text[:200].strip()}")
                if not as_json:
                    return resp.text
                try:
                    return resp.json()
                except ValueError:
                    raise LitResponseError(f"GET {_redact(url)}: the response is not JSON "
                                           f"({resp.text[:80].strip()!r})") from None
        if not connected:
            raise LitOffline(f"GET {_redact(url)}: no connection to the server ({last}); check the "
                             "network, or the KB_LIT_*_URL base URLs")
        raise LitUnavailable(f"GET {_redact(url)} failed {self.attempts} times; last: {last}")


def _problem(check: Check | None, body: Any) -> str | None:
    """Why ``check`` refuses ``body`` (its ShapeError's message), or None when it passes."""
    if check is None:
        return None
    try:
        check(body)
    except ShapeError as exc:
        return str(exc)
    return None


def _env_backoff() -> float:
    """``KB_LIT_BACKOFF`` (seconds; unset: 2.0). Raises LitConfigError when it is no finite
    number ≥ 0 (time.sleep would raise ValueError or OverflowError on it, mid-retries)."""
    raw = os.environ.get("KB_LIT_BACKOFF", "").strip()
    if not raw:
        return 2.0
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise LitConfigError(f"KB_LIT_BACKOFF={raw!r} is not a number of seconds >= 0; "
                             "unset it for the default 2")
    return value


def _unresolvable(exc: BaseException) -> bool:
    """Whether a connection error is a host name that does not resolve (``socket.gaierror``)."""
    import socket

    seen: BaseException | None = exc
    for _ in range(8):  # the cause chain: httpx → httpcore → socket
        if seen is None:
            return False
        if isinstance(seen, socket.gaierror):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _redact(url: str) -> str:
    """The URL for messages: the ``mailto`` value is personal, so it is hidden."""
    import re

    return re.sub(r"(mailto=)[^&]+", r"\1…", url)
