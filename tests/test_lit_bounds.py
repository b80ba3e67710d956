"""The literature client's bounds: results cut to --limit, a size bound on answers, one
deadline per request (retries included), and the items it leaves out said, not silent.

Real HTTP servers on 127.0.0.1: tests/litserver.py for the recorded API, and a small one
here for the answers it cannot give (an answer that never comes, one trickling a byte at a
time, one without a Content-Length that never stops growing). Commands that could hang run
in a subprocess with a generous timeout; no test asserts a duration.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import invoke, run_script
from litserver import LitServer

FAST = {"s2": 0.01, "search": 0.01, "default": 0.01}
MIB = 1024 * 1024


@pytest.fixture
def lit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[LitServer]:
    with LitServer() as srv:
        for k, v in srv.env().items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("KB_LIT_BACKOFF", "0.01")
        for k in ("S2_API_KEY", "OPENALEX_EMAIL", "KB_GEN_SANDBOX", "KB_LIT_TIMEOUT",
                  "KB_LIT_MAX_BYTES"):
            monkeypatch.delenv(k, raising=False)
        monkeypatch.chdir(tmp_path)
        yield srv


def _item(i: int) -> dict[str, Any]:
    return {"snippet": {"text": f"Passage {i} on spaced practice.", "snippetKind": "body"},
            "paper": {"paperId": f"p{i}", "title": f"Paper {i}"}}


def _cached(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


# -- results cut to --limit ------------------------------------------------------------------

def test_a_huge_list_is_cut_to_the_limit(lit, tmp_path):
    lit.script("/s2/snippet", [{"data": [_item(i) for i in range(5000)]}])  # ignores limit
    r = invoke("lit", "snippet", "spacing", "--limit", "7", "--json",
               "--cache-dir", str(tmp_path / "c"))
    assert r.code == 0, r.stderr
    data = r.json()
    assert [s["paper_id"] for s in data["result"]] == [f"p{i}" for i in range(7)]
    assert data["notes"] == []
    assert lit.requests[-1]["query"]["limit"] == ["7"]
    # the API's own cap (100) bounds a larger --limit too
    lit.script("/s2/snippet", [{"data": [_item(i) for i in range(5000)]}])
    r = invoke("lit", "snippet", "other", "--limit", "500", "--json",
               "--cache-dir", str(tmp_path / "c"))
    assert r.code == 0 and len(r.json()["result"]) == 100


def test_huge_citation_and_recommendation_lists_are_cut_to_the_limit(lit, tmp_path):
    from kb.lit import LitClient

    paper = {"paperId": "x", "title": "T"}
    lit.script("/s2/paper/", [{"data": [{"isInfluential": False, "citedPaper": paper}] * 300}])
    lit.script("/rec/papers/forpaper/", [{"recommendedPapers": [paper] * 300}])
    c = LitClient(tmp_path / "c", intervals=FAST, keys_root=tmp_path)
    assert len(c.cite("abc", "references", limit=4)) == 4
    assert len(c.cite("abc", "recommend", limit=3)) == 3


def test_mcp_lit_snippet_is_cut_to_its_limit(lit, tmp_path):
    from kb.gen import api

    lit.script("/s2/snippet", [{"data": [_item(i) for i in range(2000)]}])
    got = api.lit_snippet("spacing", limit=5, cache_dir=str(tmp_path / "c"))
    assert len(got["result"]) == 5 and got["notes"] == []


# -- items left out are said, not silent ------------------------------------------------------

NULLS = {"data": [_item(0), None, {"snippet": None, "paper": {"paperId": "q"}},
                  {"snippet": {"text": ""}, "paper": None}, _item(4)]}


def test_null_snippet_items_are_counted_in_json_and_on_stderr(lit, tmp_path):
    lit.script("/s2/snippet", [NULLS])
    r = invoke("lit", "snippet", "spacing", "--json", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 0, r.stderr
    data = r.json()
    assert [s["paper_id"] for s in data["result"]] == ["p0", "p4"]
    assert data["notes"] == ["left out 3 snippet items of the answer with no text "
                             "(null, or no snippet.text)"]
    from kb.contract import validate_output

    validate_output("lit snippet", data)
    lit.script("/s2/snippet", [NULLS])
    r = invoke("lit", "snippet", "again", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 0
    notes = [line for line in r.stderr.splitlines() if line.startswith("kb: note:")]
    assert notes == ["kb: note: left out 3 snippet items of the answer with no text "
                     "(null, or no snippet.text)"]
    assert "Passage 4" in r.stdout and "note" not in r.stdout


def test_items_left_out_do_not_count_against_the_limit(lit, tmp_path):
    """An answer of more items than asked, nulls among the first: kb keeps up to the limit
    of good ones (it left out the nulls, not the good items after them)."""
    lit.script("/s2/snippet", [NULLS])
    r = invoke("lit", "snippet", "spacing", "--limit", "2", "--json",
               "--cache-dir", str(tmp_path / "c"))
    assert r.code == 0, r.stderr
    assert [s["paper_id"] for s in r.json()["result"]] == ["p0", "p4"]


def test_unresolved_citation_edges_are_counted(lit, tmp_path):
    from kb.lit import LitClient

    paper = {"paperId": "x", "title": "T"}
    lit.script("/s2/paper/", [{"data": [{"citingPaper": paper}, {"citingPaper": None}]}])
    c = LitClient(tmp_path / "c", intervals=FAST, keys_root=tmp_path)
    assert len(c.cite("abc", "citations")) == 1
    assert c.notes == ["left out 1 of the citations whose paper Semantic Scholar could not "
                       "resolve (null)"]


# -- a size bound on answers ----------------------------------------------------------------

def test_an_oversized_answer_is_refused_and_not_cached(lit, tmp_path):
    big = {"data": [{"snippet": {"text": "x" * 1000}, "paper": {"paperId": "p"}}] * 9000}  # ~9.5 MB
    lit.script("/s2/snippet", [big])
    cache = tmp_path / "c"
    r = invoke("lit", "snippet", "spacing", "--limit", "5", "--json", "--cache-dir", str(cache))
    assert r.code == 1, r.stderr
    data = r.json()
    assert data["error"]["kind"] == "refused"
    msg = data["error"]["message"]
    assert "the answer is larger than 8,388,608 bytes" in msg and "cached nothing" in msg
    assert "KB_LIT_MAX_BYTES" in msg and "web tools" in data["fallback"]
    assert _cached(cache) == []
    assert len(lit.requests) == 1  # the same answer again would not help: no retry


def test_the_size_bound_is_a_setting(lit, tmp_path, monkeypatch):
    monkeypatch.setenv("KB_LIT_MAX_BYTES", "200")
    r = invoke("lit", "snippet", "spacing", "--json", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 1 and "larger than 200 bytes" in r.json()["error"]["message"]
    monkeypatch.setenv("KB_LIT_MAX_BYTES", "lots")
    r = invoke("lit", "snippet", "spacing", "--json", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 2 and r.json()["error"]["kind"] == "environment"
    assert "KB_LIT_MAX_BYTES='lots'" in r.json()["error"]["message"]


def test_a_cached_answer_above_the_bound_is_a_miss(lit, tmp_path, monkeypatch):
    from kb.lit import LitClient

    c = LitClient(tmp_path / "c", intervals=FAST, keys_root=tmp_path)
    assert c.snippet("spacing") and c.requests == 1
    (entry,) = _cached(tmp_path / "c")
    rec = json.loads(entry.read_text("utf-8"))
    rec["body"]["padding"] = "x" * (9 * MIB)  # cached by a kb without the bound
    entry.write_text(json.dumps(rec), "utf-8")
    c = LitClient(tmp_path / "c", intervals=FAST, keys_root=tmp_path)
    assert c.snippet("spacing") and c.requests == 1  # fetched again, not read whole
    assert entry.stat().st_size < MIB


def test_an_answer_nested_too_deeply_is_a_malformed_answer(lit, tmp_path):
    """`{"data": [[[[…` 5,000 deep ended `kb lit` with exit 3 (RecursionError in Python's
    decoder): it is a response that is not JSON kb reads, exit 1 with the fallback, and
    nothing is cached."""
    cache = tmp_path / "c"
    for args in (["search", "spacing", "--source", "s2"], ["snippet", "spacing"]):
        lit.script("/s2/", [b'{"data": ' + b"[" * 5000 + b"]" * 5000 + b"}"])
        r = invoke("lit", *args, "--json", "--cache-dir", str(cache))
        assert r.code == 1, (args, r.stdout, r.stderr)
        data = r.json()
        assert "not JSON" in data["error"]["message"] and "web tools" in data["fallback"]
    assert _cached(cache) == []


# -- a server of its own: silence, a trickle, an endless stream ------------------------------

class SlowServer:
    """``/silent/…`` accepts and never answers; ``/trickle/…`` sends its headers, then one
    byte every 0.3 s; ``/endless/…`` sends 12 MiB of JSON with no Content-Length. Each
    handler stops when the server stops."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.count = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                outer.count += 1
                try:
                    if self.path.startswith("/silent"):
                        outer.stopping.wait(120)
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    if self.path.startswith("/trickle"):
                        for byte in json.dumps({"data": [_item(0)]}).encode() * 10:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            if outer.stopping.wait(0.3):
                                return
                    else:  # endless: 12 MiB, ended by closing the connection (HTTP/1.0)
                        self.wfile.write(b'{"data": [')
                        chunk = (json.dumps(_item(1)) + ",").encode() * 1000
                        for _ in range(12 * MIB // len(chunk)):
                            if outer.stopping.is_set():
                                return
                            self.wfile.write(chunk)
                        self.wfile.write(json.dumps(_item(2)).encode() + b"]}")
                except OSError:  # the client gave up
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, mode: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{mode}"

    def __enter__(self) -> "SlowServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def slow(lit) -> Iterator[SlowServer]:
    with SlowServer() as srv:
        yield srv


@pytest.mark.parametrize("mode", ["silent", "trickle"])
def test_a_request_ends_at_its_deadline_retries_included(slow, tmp_path, mode):
    cache = tmp_path / "c"
    env = {"KB_LIT_S2_URL": slow.url(mode), "KB_LIT_TIMEOUT": "2"}
    r = run_script("lit", "snippet", "spacing", "--json", "--cache-dir", str(cache),
                   cwd=tmp_path, env=env, timeout=90)
    assert r.code == 1, (r.stdout, r.stderr)
    data = json.loads(r.stdout)
    assert data["error"]["kind"] == "refused" and "web tools" in data["fallback"]
    msg = data["error"]["message"]
    assert "no answer within 2s, the whole wait for one request (KB_LIT_TIMEOUT)" in msg, msg
    assert slow.count == 1  # the one attempt used the whole wait: no retry after it
    assert _cached(cache) == []


def test_an_endless_answer_without_a_length_is_cut_at_the_bound(slow, tmp_path):
    cache = tmp_path / "c"
    r = run_script("lit", "snippet", "spacing", "--limit", "5", "--json", "--cache-dir", str(cache),
                   cwd=tmp_path, env={"KB_LIT_S2_URL": slow.url("endless")}, timeout=90)
    assert r.code == 1, (r.stdout[:300], r.stderr)
    msg = json.loads(r.stdout)["error"]["message"]
    assert "the answer is larger than 8,388,608 bytes; kb stopped reading it" in msg, msg
    assert _cached(cache) == []


def test_a_malformed_timeout_is_an_environment_error(lit, tmp_path, monkeypatch):
    for value in ("soon", "0", "-3", "inf", "1e10", "86401"):  # past a day: an overflow
        monkeypatch.setenv("KB_LIT_TIMEOUT", value)
        r = invoke("lit", "snippet", "spacing", "--json", "--cache-dir", str(tmp_path / "c"))
        assert r.code == 2, (value, r.stdout)
        assert r.json()["error"]["kind"] == "environment"
        assert f"KB_LIT_TIMEOUT={value!r}" in r.json()["error"]["message"]
    assert lit.requests == []


def test_a_password_in_a_base_url_is_never_printed(lit, tmp_path, monkeypatch):
    """`KB_LIT_S2_URL=http://user:secret@host/…`: the retry notes named the host as
    `user:secret@host` and the error gave the whole URL, four times the password in
    human and JSON output. Both show the host, and the user part without the password."""
    lit.script("/s2/", [503, 503, 503, 503])
    monkeypatch.setenv("KB_LIT_S2_URL", lit.base.replace("//", "//user:s3cretpw@") + "/s2")
    for fmt in ([], ["--json"]):
        r = invoke("lit", "search", "spacing", "--source", "s2", *fmt,
                   "--cache-dir", str(tmp_path / "c"))
        assert r.code != 0 and "s3cretpw" not in r.stdout + r.stderr, (r.stdout, r.stderr)
        assert "user:…@127.0.0.1" in r.stdout + r.stderr or "retrying" in r.stderr
        lit.script("/s2/", [503, 503, 503, 503])
    assert [p for p in lit.paths() if p.startswith("/s2/")], "the requests were made"
    # a token alone as the user part; a base URL kb refuses (a port too large); the cache
    # of an answered request: none keeps the secret
    for url in (lit.base.replace("//", "//s3cretpw@") + "/s2",
                "http://user:s3cretpw@127.0.0.1:99999/s2", "http://user:s3cretpw@127.0.0.1/a b"):
        monkeypatch.setenv("KB_LIT_S2_URL", url)
        lit.script("/s2/", [503, 503, 503, 503])
        r = invoke("lit", "search", "spacing", "--source", "s2", "--json",
                   "--cache-dir", str(tmp_path / "c"))
        assert r.code != 0 and "s3cretpw" not in r.stdout + r.stderr, (url, r.stdout, r.stderr)
    monkeypatch.setenv("KB_LIT_S2_URL", lit.base.replace("//", "//user:s3cretpw@") + "/s2")
    lit.script("/s2/", [])  # (the refused URLs never asked: their scripted answers are left)
    r = invoke("lit", "search", "spacing", "--source", "s2", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 0, r.stderr
    cached = _cached(tmp_path / "c")
    assert cached and not any(b"s3cretpw" in p.read_bytes() for p in cached)


def test_a_deadline_the_throttle_uses_up_is_no_connection_failure(lit, tmp_path):
    from kb.lit.errors import LitOffline, LitUnavailable
    from kb.lit.http import Fetcher

    f = Fetcher(tmp_path / "c", intervals={"s2": 30.0}, timeout=0.3)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "throttle-s2.ts").write_text("9999999999\n", "ascii")  # far in the future
    with pytest.raises(LitUnavailable, match=r"no answer within 0.3s.*after 0 attempts; "
                       r"last: the 's2' throttle's turn would come too late") as exc:
        f.get_json(lit.base + "/s2/snippet/search?query=x", "s2")
    assert not isinstance(exc.value, LitOffline) and lit.requests == []


# -- notes on stderr while kb retries or waits (human output only) ---------------------------

def test_retries_and_waits_are_noted_on_stderr_in_human_output_only(lit, slow, tmp_path,
                                                                    monkeypatch):
    import kb.lit.http as http

    lit.script("/s2/snippet", [503])
    r = invoke("lit", "snippet", "spacing", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 0
    host = lit.base.split("//", 1)[1]
    assert f"kb: {host}: HTTP 503; retrying in 0.01s (attempt 2 of 4)" in r.stderr.splitlines()
    lit.script("/s2/snippet", [503])
    r = invoke("lit", "snippet", "spacing again", "--json", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 0 and "retrying" not in r.stderr
    json.loads(r.stdout)  # stdout is the JSON answer only

    monkeypatch.setattr(http, "NOTE_AFTER", 0.2)
    monkeypatch.setenv("KB_LIT_S2_URL", slow.url("silent"))
    monkeypatch.setenv("KB_LIT_TIMEOUT", "1")
    r = invoke("lit", "snippet", "spacing", "--cache-dir", str(tmp_path / "c2"))  # no throttle
    assert r.code == 1, r.stderr
    waits = [line for line in r.stderr.splitlines() if "no answer yet" in line]
    assert waits == [f"kb: {slow.url('').split('//', 1)[1].rstrip('/')}: no answer yet; waiting "
                     "up to 1s in all (KB_LIT_TIMEOUT)"]
