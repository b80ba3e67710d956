"""A remote that never answers: every git command kb runs against it gives up in time."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from conftest import git, invoke


@pytest.fixture
def silent_remote(tmp_path: Path):
    """A loopback TCP port that completes connections and then never says a word."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    try:
        yield f"git://127.0.0.1:{srv.getsockname()[1]}/kb.git"
    finally:
        srv.close()


def test_lock_status_against_a_silent_remote_gives_up(make_kb, silent_remote: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_kb({"notes.md": "x\n"}, commit=True)
    git(root, "remote", "add", "blackhole", silent_remote)
    monkeypatch.setenv("KB_GIT_TIMEOUT", "2")
    # status gives up on the fetch in time and shows the locks as last fetched (none here)
    r = invoke("lock", "status", "--remote", "blackhole", "--json", cwd=root)
    assert r.code == 0, (r.code, r.stdout, r.stderr)
    assert "no answer within 2 s" in r.json()["stale"] and r.json()["locks"] == []
    claim = invoke("lock", "claim", "notes.md", "--owner", "z", "--remote", "blackhole", cwd=root)
    assert claim.code == 2 and "no answer within 2 s" in claim.stderr
