"""``kb serve``'s guard: the Host check, read-only methods and security headers (issue 16).

:class:`Guard` wraps the application: a request whose ``Host`` header is not
one of :func:`allowed_hosts` gets 421 (DNS rebinding: a hostile page's domain
resolved to 127.0.0.1 still sends its own name), any method but GET/HEAD
gets 405, and every response carries a strict Content-Security-Policy (no
inline script or style, nothing from another origin) and a ``Server-Timing``
header with the server's wall and CPU time in milliseconds (read by
benchmarks/web.py: on a loaded machine the CPU time is the stable figure).
"""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable, Iterable

__all__ = ["Guard", "allowed_hosts", "CSP"]

Scope = dict[str, Any]
ASGI = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (git)."""
    import os

    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> set[str]:
    """The ``Host`` header values accepted for a server bound to ``host``:``port``.

    Loopback binds accept ``127.0.0.1``, ``localhost`` and ``[::1]``; a
    wildcard bind (``0.0.0.0``, ``::``) also the machine's host names; any
    bind its own address and the names in ``extra`` (``--allow-host``).
    Each with ``:port``, and bare when the port is 80.
    """
    import socket

    names = {"127.0.0.1", "localhost", "[::1]"}
    names.add(f"[{host}]" if ":" in host else host)
    if host in ("0.0.0.0", "::", ""):
        for n in (socket.gethostname(), socket.getfqdn()):
            if n:
                names.add(n)
    names.update(extra)
    out = {f"{n.lower()}:{port}" for n in names}
    if port == 80:
        out.update(n.lower() for n in names)
    return out


class Guard:
    """ASGI middleware: Host check, read-only methods, security headers on every response."""

    def __init__(self, app: ASGI, hosts: set[str]) -> None:
        self.app, self.hosts = app, hosts

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1").strip().lower()
        if host not in self.hosts:
            return await _plain(send, 421, f"kb serve: Host {host!r} is not served here "
                                           "(only the address it is bound to).\n")
        if scope["method"] not in ("GET", "HEAD"):
            return await _plain(send, 405, "kb serve is read-only: only GET and HEAD.\n",
                                [(b"allow", b"GET, HEAD")])

        t0, c0 = time.perf_counter(), _cpu()

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                # Server time (ms) from request to response start, wall and CPU (this
                # process and its git children): the benchmark reads them.
                dur = (f"app;dur={(time.perf_counter() - t0) * 1000:.1f}, "
                       f"cpu;dur={(_cpu() - c0) * 1000:.1f}").encode()
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS,
                                      (b"server-timing", dur)]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _plain(send: Any, status: int, text: str,
                 extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            *SECURITY_HEADERS, *(extra or [])]})
    await send({"type": "http.response.body", "body": body})
