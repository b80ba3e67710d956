"""Bind and run ``kb serve`` (uvicorn on a socket kb binds itself).

kb binds the socket before the app starts so that ``--port 0`` yields the
real port for the URL and for the Host check (:func:`kb.web.app.allowed_hosts`).
Loopback is the default; another address is used only when asked for with
``--host`` (the README says what that exposes).
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path
from typing import Callable, Iterable, Iterator

from kb.errors import EnvironmentError_, UsageError
from kb.repo import open_kb

__all__ = ["bind", "serve", "is_loopback", "url_for"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: a free port).

    Raises UsageError for a port out of range and EnvironmentError_ when the
    address cannot be bound (in use, not an address of this machine).
    """
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a TCP port (0-65535; 0 picks a free one)")
    host = host.strip("[]")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r} is not an address of this machine: {exc}") from None
    family, _, _, _, addr = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise EnvironmentError_(f"cannot listen on {host}:{port}: {exc.strerror or exc} "
                                "(try another --port, or --port 0 for a free one)") from None
    sock.set_inheritable(True)
    return sock


def url_for(host: str, port: int) -> str:
    """``http://host:port/`` (brackets around an IPv6 address)."""
    host = host.strip("[]")
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def _server_class() -> type:
    """uvicorn's Server, stopping on SIGINT/SIGTERM without re-raising the signal.

    uvicorn re-sends a caught signal after its graceful shutdown (the process
    then dies of it: exit -15, or ``KeyboardInterrupt`` for Ctrl-C); for
    ``kb serve`` stopping is the normal end, exit 0.
    """
    import contextlib
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            sigs = (signal.SIGINT, signal.SIGTERM)
            old = {s: signal.signal(s, self.handle_exit) for s in sigs}
            try:
                yield
            finally:
                for s, h in old.items():
                    signal.signal(s, h)

        def install_signal_handlers(self) -> None:  # uvicorn < 0.29 calls this instead
            for s in (signal.SIGINT, signal.SIGTERM):
                signal.signal(s, self.handle_exit)

    return Server


def serve(kb_path: str | Path | None = None, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          rev: str = "HEAD", allow_hosts: Iterable[str] = (),
          on_ready: Callable[[str, int], None] | None = None) -> None:
    """Serve the KB containing ``kb_path`` until interrupted (SIGINT/SIGTERM).

    ``on_ready(url, port)`` is called once the socket listens. Raises
    UsageError for a bad ``rev`` or address, EnvironmentError_ when the
    port cannot be bound, NotAKnowledgeBase outside a KB.
    """
    import uvicorn

    from kb.web.app import create_app
    from kb.web.guard import allowed_hosts

    _Server = _server_class()

    k = open_kb(Path(kb_path) if kb_path else None)
    sock = bind(host, port)
    try:
        real_port = sock.getsockname()[1]
        app = create_app(k, rev=rev, hosts=allowed_hosts(host.strip("[]"), real_port, allow_hosts),
                         warm=True)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                server_header=False, date_header=False)
        server = _Server(config)
        if on_ready is not None:
            on_ready(url_for(host, real_port), real_port)
        server.run(sockets=[sock])
    finally:
        sock.close()
