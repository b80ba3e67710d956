"""A local stand-in for Semantic Scholar, OpenAlex and arXiv, for the literature tests.

``LitServer`` serves the recorded responses in ``tests/data/lit`` on
127.0.0.1 (an ephemeral port) from a thread, and records every request
(arrival time, path, query, headers). ``script(path_prefix, [429, 200])``
makes the next requests under a path answer those statuses in turn (200 =
the recorded response; ``"garbage"`` a body that is not JSON; ``"slow"`` the
recorded response after a second; a dict or list: 200 with that value as the
JSON body). Use as a context manager; ``env()`` gives the
``KB_LIT_*`` variables pointing the client at it.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

DATA = Path(__file__).resolve().parent / "data" / "lit"

#: path prefix -> (recorded file, content type)
ROUTES = [
    ("/s2/paper/search", "s2_search.json", "application/json"),
    ("/s2/snippet/search", "s2_snippet.json", "application/json"),
    ("/s2/paper/", "s2_references.json", "application/json"),  # /paper/{id}/references
    ("/rec/papers/forpaper/", "s2_recommend.json", "application/json"),
    ("/openalex/works", "openalex_works.json", "application/json"),
    ("/arxiv", "arxiv_2101.00001.xml", "application/atom+xml"),
]


class LitServer:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.scripts: dict[str, list[object]] = {}
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                parts = urlsplit(self.path)
                with outer.lock:
                    outer.requests.append({"t": time.time(), "path": parts.path,
                                           "query": parse_qs(parts.query, keep_blank_values=True),
                                           "headers": dict(self.headers.items())})
                    status: object = 200
                    for prefix, seq in outer.scripts.items():
                        if parts.path.startswith(prefix) and seq:
                            status = seq.pop(0)
                            break
                if status == "slow":  # answer after the client's timeout
                    time.sleep(1.0)
                    status = 200
                if status == "garbage":
                    return self._send(200, b"<html>not json</html>", "application/json")
                if isinstance(status, bytes):  # a body as it is (JSON too deep to dump here)
                    return self._send(200, status, "application/json")
                if isinstance(status, (dict, list)):  # valid JSON, of whatever shape
                    return self._send(200, json.dumps(status).encode("utf-8"), "application/json")
                if status != 200:
                    return self._send(int(str(status)), b'{"message": "scripted"}', "application/json")
                for prefix, name, ctype in ROUTES:
                    if parts.path.startswith(prefix):
                        if parts.path.endswith("/citations"):
                            name = "s2_citations.json"
                        return self._send(200, (DATA / name).read_bytes(), ctype)
                self._send(404, b'{"error": "no such route"}', "application/json")

            def _send(self, code: int, body: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def env(self) -> dict[str, str]:
        return {"KB_LIT_S2_URL": self.base + "/s2", "KB_LIT_S2_RECOMMEND_URL": self.base + "/rec",
                "KB_LIT_OPENALEX_URL": self.base + "/openalex", "KB_LIT_ARXIV_URL": self.base + "/arxiv"}

    def script(self, prefix: str, statuses: list[object]) -> None:
        with self.lock:
            self.scripts[prefix] = list(statuses)

    def paths(self) -> list[str]:
        with self.lock:
            return [r["path"] for r in self.requests]

    def __enter__(self) -> "LitServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))
