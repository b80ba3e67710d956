"""HTTP under the literature client: throttle, retries, on-disk cache (HYPOTHESIS-GEN.md).

- Throttle buckets (minimum seconds between two requests of a bucket):
  ``s2`` 1.1 (Semantic Scholar allows one request per second across its
  endpoints), ``search`` 1.0 (OpenAlex, arXiv), ``default`` 0.2. A bucket is
  enforced across processes: a file lock and a timestamp file in the cache
  folder (``throttle-<bucket>.lock`` / ``.ts``).
- JSON requests: up to 4 attempts, backoff ``base·2^attempt`` seconds after
  failed attempt 0, 1, 2 (2, 4, 8 s; ``KB_LIT_BACKOFF`` sets the base) on 429,
  500, 502, 503, 504, timeouts and network errors; another 4xx, a malformed
  JSON body or an answer of the wrong shape (the caller's ``check``,
  :mod:`kb.lit.shapes`) fails at once. A URL httpx cannot use fails at once too.
- Deadline: 60 s (``KB_LIT_TIMEOUT``, seconds) is the whole wait for one
  request, its attempts, backoff and throttle included, not a limit per socket
  read: a server trickling one byte at a time is cut off at the deadline too
  (the download runs in a worker thread the caller stops waiting for). A retry
  whose backoff would end past the deadline is not made; an attempt that times
  out has used the deadline up. ``on_note`` (the CLI's human output) hears one
  line per retry, and one when a request is still unanswered after 5 s.
- Size: an answer body above 8 MiB (``KB_LIT_MAX_BYTES``) is refused at once,
  never cached: read as a stream and dropped as soon as it passes the bound (or
  when its ``Content-Length`` says it will), so memory stays bounded. The
  largest ordinary answers (1,000 references with abstracts, 50 OpenAlex works)
  are a few MB; parsed, 8 MiB of JSON is already ~100 MB of Python objects.
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
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import urlencode, urlsplit

from kb import json_input
from kb.errors import os_failure
from kb.lit.errors import (LitConfigError, LitNotFound, LitOffline, LitResponseError,
                           LitUnavailable)
from kb.lit.shapes import Check, ShapeError

INTERVALS: dict[str, float] = {"s2": 1.1, "search": 1.0, "default": 0.2}
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
ATTEMPTS = 4
#: Seconds: the whole wait for one request, retries included (``KB_LIT_TIMEOUT``).
TIMEOUT = 60.0
#: Bytes: the largest answer body read (``KB_LIT_MAX_BYTES``).
MAX_BYTES = 8 * 1024 * 1024
#: Seconds a request may stay unanswered before ``on_note`` hears that kb is waiting.
NOTE_AFTER = 5.0
#: Seconds past the deadline the worker's own timeout gets to report (connect or read).
GRACE = 0.25
#: Bytes of an error answer (4xx, 5xx) read for its message.
ERROR_BYTES = 4096

OnKey = Callable[[str], None]
OnNote = Callable[[str], None]


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

    def wait(self, bucket: str, within: float | None = None) -> bool:
        """Sleep until ``bucket``'s interval (seconds) since its last request has passed, then
        record now and return True; with ``within`` (seconds), return False at once, recording
        nothing, when the turn would come later than that (its lock included).

        Shared between processes through a stamp file and a file lock in the folder. Raises
        EnvironmentError_ (:func:`kb.errors.os_failure`) when the folder is not writable.
        """
        interval = self.intervals.get(bucket, self.intervals["default"])
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            return self._wait(bucket, interval, within)
        except OSError as exc:  # a read-only cache folder, …
            raise os_failure(exc, f"write the literature cache {self.folder}") from None

    def _wait(self, bucket: str, interval: float, within: float | None) -> bool:
        from filelock import FileLock, Timeout

        end = None if within is None else time.monotonic() + max(within, 0.0)
        stamp = self.folder / f"throttle-{bucket}.ts"
        lock = FileLock(str(self.folder / f"throttle-{bucket}.lock"),
                        timeout=-1 if within is None else max(within, 0.0))
        try:
            lock.acquire()
        except Timeout:  # other processes' turns come first
            return False
        try:
            try:
                last = float(stamp.read_text(encoding="ascii").strip() or 0)
            except (OSError, ValueError):
                last = 0.0
            # time.time(), not a monotonic clock: the stamp is shared between processes.
            delay = min(last + interval - time.time(), interval)
            if end is not None and delay > end - time.monotonic():
                return False
            if delay > 0:
                time.sleep(delay)
            stamp.write_text(f"{time.time():.6f}\n", encoding="ascii")
            return True
        finally:
            lock.release()


class Cache:
    """The on-disk response cache: ``<folder>/<key>.json`` = ``{key, method, url, status, body}``."""

    def __init__(self, folder: Path, max_bytes: int = MAX_BYTES) -> None:
        self.folder = folder
        self.max_bytes = max_bytes

    def path(self, key: str) -> Path:
        """The file of cache entry ``key``."""
        return self.folder / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached record of ``key`` (``{key, method, url, status, body}``), or None when
        absent, unreadable, or larger than an answer may be (cached by an older kb: read
        whole, it would cost the memory the bound protects).
        """
        try:
            if self.path(key).stat().st_size > self.max_bytes + 65536:  # + the record's fields
                return None
            rec = json_input.loads(self.path(key).read_text(encoding="utf-8"))
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
    """GET with throttle, retries, a deadline, a size bound and cache; ``on_key`` hears every
    cache key served, ``on_note`` every retry and a long wait (one line each).

    ``get_json(url, bucket, headers, check)`` returns the parsed JSON body;
    ``get_text`` the body text (arXiv's Atom). Raises :class:`LitUnavailable`
    when every attempt failed with a retryable status or a network error, or the
    deadline passed; :class:`LitOffline` when no attempt reached the server;
    :class:`LitResponseError` on another 4xx, a malformed JSON body, a body above
    ``max_bytes`` or one ``check`` refuses; and :class:`LitConfigError` when
    ``KB_LIT_BACKOFF``, ``KB_LIT_TIMEOUT``, ``KB_LIT_MAX_BYTES`` or the URL is
    unusable.
    """

    def __init__(self, cache_dir: Path, *, on_key: OnKey | None = None,
                 intervals: Mapping[str, float] | None = None, backoff: float | None = None,
                 timeout: float | None = None, attempts: int = ATTEMPTS,
                 max_bytes: int | None = None, on_note: OnNote | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.backoff = backoff if backoff is not None else _env_backoff()
        self.timeout = timeout if timeout is not None else _env_timeout()
        self.max_bytes = max_bytes if max_bytes is not None else _env_max_bytes()
        self.cache = Cache(cache_dir, self.max_bytes)
        self.throttle = Throttle(cache_dir, intervals)
        self.on_key = on_key
        self.on_note = on_note
        self.attempts = attempts
        self.sleep = sleep
        self.requests = 0  # network requests made (cache hits excluded)

    def get_json(self, url: str, bucket: str, headers: Mapping[str, str] | None = None,
                 check: Check | None = None) -> Any:
        """GET ``url`` (throttled by ``bucket``, cached) and return its parsed JSON body, which
        passed ``check`` (:mod:`kb.lit.shapes`; raises ShapeError on a body of the wrong shape).

        Raises LitUnavailable (every attempt failed, or the deadline passed), LitResponseError
        (another 4xx, bad JSON, a body too large or one ``check`` refuses; nothing cached) or
        LitConfigError (an unusable URL).
        """
        return self._get(url, bucket, headers, as_json=True, check=check)

    def get_text(self, url: str, bucket: str, headers: Mapping[str, str] | None = None,
                 check: Check | None = None) -> str:
        """GET ``url`` (throttled by ``bucket``, cached) and return its body text, which passed
        ``check`` (e.g. :func:`kb.lit.shapes.atom_feed`).

        Raises LitUnavailable (every attempt failed, or the deadline passed), LitResponseError
        (another 4xx, a body too large or one ``check`` refuses; nothing cached) or
        LitConfigError (an unusable URL).
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
            raise LitResponseError(f"GET {redact_url(url)}: the answer is not of the expected "
                                   f"shape: {problem}")
        self.cache.put(key, {"key": key, "method": "GET", "url": redact_url(url), "status": 200,
                             "body": body})
        self._served(key)
        return body

    def _served(self, key: str) -> None:
        if self.on_key is not None:
            self.on_key(key)

    def _note(self, text: str) -> None:
        if self.on_note is not None:
            self.on_note(text)

    def _fetch(self, url: str, bucket: str, headers: Mapping[str, str] | None, as_json: bool) -> Any:
        import httpx

        deadline = time.monotonic() + self.timeout
        # One client for the attempts, made here: its TLS setup takes a moment. A worker still
        # reading when the deadline passes finds its connection closed with the client.
        with httpx.Client(follow_redirects=True) as http:
            return self._attempts(http, url, bucket, headers, as_json, deadline)

    def _attempts(self, http: Any, url: str, bucket: str, headers: Mapping[str, str] | None,
                  as_json: bool, deadline: float) -> Any:
        import httpx

        parts = urlsplit(url)
        # the host and port, never the user and password a base URL may hold
        host = (parts.netloc.rpartition("@")[2] if parts.netloc else "") or redact_url(url)
        last = "no attempt made"
        connected = False  # did any attempt reach the server?
        out_of_time = False  # did the deadline end the attempts?
        made = 0
        for attempt in range(self.attempts):
            if attempt:  # 2, 4, 8 s before the 2nd, 3rd, 4th attempt
                delay = self.backoff * 2 ** (attempt - 1)
                if time.monotonic() + delay >= deadline:  # no time left for another attempt
                    out_of_time = True
                    break
                self._note(f"{host}: {last}; retrying in {delay:g}s (attempt {attempt + 1} of "
                           f"{self.attempts})")
                self.sleep(delay)
            if not self.throttle.wait(bucket, deadline - time.monotonic()):
                out_of_time = True  # the throttle's turn (other processes first) comes too late
                if not made:
                    last = f"the {bucket!r} throttle's turn would come too late"
                break
            self.requests += 1
            made += 1
            try:
                answer = self._attempt(http, url, headers, deadline, host)
            except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
                # keys.base_url checks the base URLs; this catches what slips past it. The
                # same URL fails the same way on every attempt: no retry.
                raise LitConfigError(f"GET {redact_url(url)}: not a usable URL "
                                     f"({redact_url(str(exc))}); check the KB_LIT_*_URL base "
                                     "URLs") from None
            except _TooBig as exc:  # the same answer again on a retry: refused at once
                raise LitResponseError(
                    f"GET {redact_url(url)}: the answer is larger than {self.max_bytes:,} bytes"
                    f"{exc.declared}; kb stopped reading it and cached nothing (ask for fewer "
                    "results with --limit, or raise KB_LIT_MAX_BYTES)") from None
            except _Late:  # the worker is still reading (a trickle): stop waiting for it
                connected = out_of_time = True
                last = "the answer was still arriving"
                break
            except httpx.ConnectError as exc:  # DNS failure or connection refused
                last = f"cannot connect: {exc}"
                if _unresolvable(exc):  # a name that does not resolve will not in seconds
                    break
                continue
            except httpx.TimeoutException as exc:  # each attempt's timeout is the time left
                connected = connected or not isinstance(exc, httpx.ConnectTimeout)
                last = f"timed out ({type(exc).__name__})"
                continue
            except httpx.HTTPError as exc:  # protocol errors
                connected = True
                last = f"network error: {type(exc).__name__}: {exc}"
                continue
            connected = True
            if answer.status in RETRY_STATUS:
                last = f"HTTP {answer.status}"
                continue
            if answer.status >= 400:
                cls = LitNotFound if answer.status == 404 else LitResponseError
                raise cls(f"GET {redact_url(url)}: HTTP {answer.status}: "
                          f"{answer.text()[:200].strip()}")
            if not as_json:
                return answer.text()
            try:
                return json_input.loads(answer.body)
            except ValueError:
                raise LitResponseError(f"GET {redact_url(url)}: the response is not JSON "
                                       f"({answer.text()[:80].strip()!r})") from None
        if made and not connected:
            raise LitOffline(f"GET {redact_url(url)}: no connection to the server ({last}); check the "
                             "network, or the KB_LIT_*_URL base URLs")
        if out_of_time:
            raise LitUnavailable(f"GET {redact_url(url)}: no answer within {self.timeout:g}s, the "
                                 f"whole wait for one request (KB_LIT_TIMEOUT), after {made} "
                                 f"attempt{'s' if made != 1 else ''}; last: {last}")
        raise LitUnavailable(f"GET {redact_url(url)} failed {made} times; last: {last}")

    def _attempt(self, http: Any, url: str, headers: Mapping[str, str] | None, deadline: float,
                 host: str) -> "_Answer":
        """One GET, downloaded by a worker thread; waits for it until ``deadline`` (plus
        :data:`GRACE`, so that the worker's own timeout says which phase was slow).

        Returns the answer; raises what the download raised (httpx's errors, _TooBig), or
        _Late when the worker is still at it (it stops at its next chunk, or its timeout).
        """
        box: dict[str, Any] = {}
        stop = threading.Event()

        def work() -> None:
            try:
                box["answer"] = _download(http, url, dict(headers or {}), deadline,
                                          self.max_bytes, stop)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                box["error"] = exc

        worker = threading.Thread(target=work, name="kb-lit-request", daemon=True)
        worker.start()
        if self.on_note is not None and deadline - time.monotonic() > NOTE_AFTER:
            worker.join(NOTE_AFTER)
            if worker.is_alive():
                self._note(f"{host}: no answer yet; waiting up to {self.timeout:g}s in all "
                           "(KB_LIT_TIMEOUT)")
        worker.join(max(deadline - time.monotonic(), 0.0) + GRACE)
        if worker.is_alive():
            stop.set()
            raise _Late()
        if "error" in box:
            raise box["error"]
        answer: _Answer = box["answer"]
        return answer


@dataclass(frozen=True)
class _Answer:
    """A downloaded answer: its status, body bytes (an error's first bytes) and encoding."""

    status: int
    body: bytes
    encoding: str

    def text(self) -> str:
        """The body as text (undecodable bytes replaced, as httpx does)."""
        try:
            return self.body.decode(self.encoding, errors="replace")
        except LookupError:  # a charset Python does not know
            return self.body.decode("utf-8", errors="replace")


class _TooBig(Exception):
    """An answer body above the bound; ``declared`` is the Content-Length part of the message."""

    def __init__(self, declared: str = "") -> None:
        super().__init__(declared)
        self.declared = declared


class _Late(Exception):
    """The deadline passed while the answer was still arriving."""


def _download(http: Any, url: str, headers: dict[str, str], deadline: float, max_bytes: int,
              stop: threading.Event) -> _Answer:
    """GET ``url`` with the httpx client ``http`` as a stream: at most ``max_bytes`` of body (an
    error answer's first :data:`ERROR_BYTES`), each wait of httpx bounded by the time left
    before ``deadline``, and no chunk read past it (raises _Late) or once ``stop`` is set."""
    left = max(deadline - time.monotonic(), 0.001)
    with http.stream("GET", url, headers=headers, timeout=left) as resp:
        failed = resp.status_code >= 400
        declared = resp.headers.get("content-length", "").strip()
        if not failed and declared.isdigit() and int(declared) > max_bytes:
            raise _TooBig(f" (Content-Length {int(declared):,})")
        limit = ERROR_BYTES if failed else max_bytes
        chunks: list[bytes] = []
        size = 0
        for chunk in resp.iter_bytes():
            if stop.is_set() or time.monotonic() > deadline:
                raise _Late()
            size += len(chunk)
            if size > limit:
                if failed:  # enough for the message
                    chunks.append(chunk[:limit - size + len(chunk)])
                    break
                raise _TooBig()
            chunks.append(chunk)
        return _Answer(resp.status_code, b"".join(chunks), resp.encoding or "utf-8")


def _problem(check: Check | None, body: Any) -> str | None:
    """Why ``check`` refuses ``body`` (its ShapeError's message), or None when it passes."""
    if check is None:
        return None
    try:
        check(body)
    except ShapeError as exc:
        return str(exc)
    return None


#: Seconds: the most a wait setting may say (a day). A socket's timeout and time.sleep
#: overflow far past it (KB_LIT_TIMEOUT=1e10 ended kb lit with exit 3), and no request is
#: worth a longer wait.
MAX_SECONDS = 86_400.0


def _env_seconds(name: str, default: float, zero: bool) -> float:
    """Environment variable ``name``, seconds (unset: ``default``). Raises LitConfigError
    when it is no finite number ≥ 0 (> 0 unless ``zero``) and at most :data:`MAX_SECONDS`:
    time.sleep would raise ValueError or OverflowError on it, mid-retries."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero) or value > MAX_SECONDS:
        raise LitConfigError(f"{name}={raw!r} is not a number of seconds {'>=' if zero else '>'} "
                             f"0 and at most {MAX_SECONDS:,.0f} (a day); unset it for the "
                             f"default {default:g}")
    return value


def _env_backoff() -> float:
    """``KB_LIT_BACKOFF``: the base of the backoff between attempts (seconds ≥ 0; unset: 2)."""
    return _env_seconds("KB_LIT_BACKOFF", 2.0, zero=True)


def _env_timeout() -> float:
    """``KB_LIT_TIMEOUT``: the whole wait for one request (seconds > 0; unset: 60)."""
    return _env_seconds("KB_LIT_TIMEOUT", TIMEOUT, zero=False)


def _env_max_bytes() -> int:
    """``KB_LIT_MAX_BYTES`` (the largest answer body read; unset: 8 MiB). Raises
    LitConfigError when it is no whole number > 0."""
    raw = os.environ.get("KB_LIT_MAX_BYTES", "").strip()
    if not raw:
        return MAX_BYTES
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise LitConfigError(f"KB_LIT_MAX_BYTES={raw!r} is not a whole number of bytes > 0; "
                             f"unset it for the default {MAX_BYTES:,}")
    return int(raw)


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


def redact_url(url: str) -> str:
    """The URL for messages and the cache: the ``mailto`` value is personal and the URL's
    user part (``https://user:secret@host/…``, ``https://TOKEN@host/…``, a base URL of
    ``KB_LIT_*_URL``) a secret, so both are hidden: ``user:…@``, ``…@``. Any text that may
    hold the URL (an httpx message) goes through it too."""
    import re

    url = re.sub(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s?#]*)@",
                 lambda m: m.group(1) + (m.group(2).split(":", 1)[0] + ":…" if ":" in m.group(2)
                                         else "…") + "@", url)
    return re.sub(r"(mailto=)[^&\s]+", r"\1…", url)
