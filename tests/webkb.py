"""Helpers for the ``kb serve`` tests: a KB with hostile research text, and a real server.

:func:`build_kb` copies the example KB into a new repository and commits it
on ``main``, then on branch ``feature`` (rewording H2, adding a hostile
hypothesis H3 and a debated verification record); then it edits H1 in the working tree without
committing, so a page that shows the edit read the working tree.
:func:`serve` starts ``kb serve --port 0 --json`` as a process and stops it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import selectors
import shutil
import subprocess
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from conftest import EXAMPLES, commit_all, git, git_init, kb_script, source_env

HOSTILE = ('<script>alert("pwned")</script> see [docs](javascript:alert(1)) '
           '%%{init: {"securityLevel": "loose"}}%% <img src=x onerror=alert(2)>')
OLD_H2 = "Running pytest with pytest-xdist on 4 workers would bring the test step under 12 minutes"
NEW_H2 = "Running pytest-xdist on 4 workers brings the test step under 12 minutes"
UNCOMMITTED = "An uncommitted rewording that no page may show"
RECORD = {
    "r": "r-q2-s1", "verdict": 0.5, "mode": "forced", "at": "2026-11-05T10:00:00",
    "results": [{"verifier": "v1", "result": 1, "reason": "<b>sound</b> argument"},
                {"verifier": "v3", "result": 0, "reason": "step 3 has a gap"}],
    "transcript": [{"verifier": "v1", "text": "Euclid's argument covers every finite list."},
                   {"verifier": "v3", "text": "Only if p1 holds; it does (Verified)."}],
    "history": [],
}


def build_kb(dest: Path) -> Path:
    """The example KB in its own repository, two commits, one uncommitted edit."""
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns(".kb", "__pycache__"))
    git_init(dest)
    commit_all(dest, "example KB")
    git(dest, "checkout", "-q", "-b", "feature")  # the Diff page's default: feature vs main
    tree = dest / "tree.md"
    text = tree.read_text(encoding="utf-8").replace(OLD_H2, NEW_H2)
    text += f"\n## H3: {HOSTILE}\nStatus: 待验\nEvidence: (empty)\n"
    tree.write_text(text, encoding="utf-8")
    rec = dest / "Logs" / "Verification" / "r-q2-s1_20261105T100000.json"
    rec.write_text(json.dumps(RECORD, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if trail_available():
        record_trail(dest)
    commit_all(dest, "reword H2, add H3 and a debated record")
    tree.write_text(tree.read_text(encoding="utf-8").replace(
        "Most of the 40-minute CI run is spent inside pytest, not in setup steps", UNCOMMITTED),
        encoding="utf-8")
    return dest


def trail_available() -> bool:
    from kb.web.trail import available

    return available()


TRAIL_HOSTILE = '<script>alert("trail")</script> Timestamp in the system prompt'


def record_trail(dest: Path) -> dict[str, str]:
    """An exploration graph recorded (not committed) in the KB at ``dest``; name -> node id."""
    from kb.trail import ops

    ids: dict[str, str] = {}

    def add(name: str, **kw: object) -> None:
        ids[name] = ops.add(dest, no_commit=True, **kw).ids[0]  # type: ignore[arg-type]

    add("goal", kind="goal", title="Make the prompt cache hit")
    add("round", kind="step", title="Round 1: read the misses", parent=ids["goal"])
    add("action", kind="action", title="grep for the clock line", parent=ids["round"])
    add("topic", kind="topic", title="Prefix stability", parent=ids["goal"])
    add("h1", kind="hypothesis", title="Tool order changes the prefix", parent=ids["topic"],
        refs=["H1", "tree.md:3", "nowhere.md", "javascript:alert(1)"])
    add("h2", kind="hypothesis", title=TRAIL_HOSTILE, parent=ids["topic"],
        summary="The clock line changes every minute. " * 12, tags=["cache", "prefix"])
    add("ev", kind="evidence", title="Prefix differs by 214 bytes", parent=ids["h2"])
    add("dead", kind="dead_end", title="Sorting the tools did not help", parent=ids["topic"],
        summary="misses stayed at 50%")
    add("concl", kind="conclusion", title="Order is stable", parent=ids["topic"], status="done")
    ops.link(dest, ids["h1"], ids["concl"], "contradicts", "opposite claims", no_commit=True)
    return ids


class Server:
    """A running ``kb serve``: its process, base URL (no trailing slash) and port."""

    def __init__(self, proc: subprocess.Popen[bytes], info: dict) -> None:
        self.proc = proc
        self.url = info["url"].rstrip("/")
        self.port = int(info["port"])
        self.info = info

    def raw_get(self, path: str, host: str | None = None) -> tuple[int, str]:
        """GET ``path`` exactly as given (no client-side normalisation of ``..``), with an
        optional Host header; returns (status, body)."""
        parts = urlsplit(self.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            conn.putrequest("GET", path, skip_host=True)
            conn.putheader("Host", host or parts.netloc)
            conn.endheaders()
            resp = conn.getresponse()
            return resp.status, resp.read().decode("utf-8", "replace")
        finally:
            conn.close()


def _read_json(proc: subprocess.Popen[bytes], timeout: float = 60) -> dict:
    """The JSON object ``kb serve --json`` prints once it listens (bounded wait)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    buf = b""
    deadline = time.monotonic() + timeout
    for _ in range(1000):
        left = deadline - time.monotonic()
        if left <= 0 or not sel.select(left):
            break
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buf += chunk
        with contextlib.suppress(ValueError):
            return json.loads(buf.decode("utf-8"))
    proc.kill()
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    raise AssertionError(f"kb serve did not start: stdout {buf!r}, stderr {err!r}")


@contextlib.contextmanager
def serve(root: Path, *args: str) -> Iterator[Server]:
    """Run ``kb serve --port 0 --json ARGS`` in ``root`` for the ``with`` block."""
    proc = subprocess.Popen([kb_script(), "serve", "--port", "0", "--json", *args], cwd=root,
                            env=source_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            bufsize=0)
    try:
        yield Server(proc, _read_json(proc))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
