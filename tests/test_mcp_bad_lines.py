"""``kb mcp`` answers an input line that is no JSON-RPC message (the SDK's stdio transport
drops it unanswered): JSON-RPC 2.0's parse error or invalid request on stdout, one line on
stderr naming the line, and the next request is served as usual. A real subprocess; every
read is bounded."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from mcp_types import INVALID_REQUEST, PARSE_ERROR, jsonrpc_message_adapter

from conftest import kb_script, source_env

INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "test", "version": "1"}}})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def raw_session(cwd: Path, lines: list[str], last_id: int) -> tuple[list[dict[str, Any]], str]:
    """Write ``lines`` to a real ``kb mcp``, read stdout until the reply to ``last_id``
    (at most 60 s), close stdin (at most 60 s more): its replies and its stderr."""
    proc = subprocess.Popen([kb_script(), "mcp"], cwd=cwd, env=source_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("".join(ln + "\n" for ln in lines).encode())
        proc.stdin.flush()
        out = b""
        deadline = time.monotonic() + 60
        while f'"id":{last_id},'.encode() not in out and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                out += chunk
        rest, err = proc.communicate(timeout=60)  # closes stdin: the server ends
    finally:
        proc.kill()
        proc.wait(timeout=10)
    return [json.loads(ln) for ln in (out + rest).decode().splitlines()], err.decode()


def test_bad_lines_are_answered_and_serving_goes_on(example_kb: Path) -> None:
    lines = ["this is not json", INIT, INITIALIZED, "",
             '{"jsonrpc": "2.0", "id": 7, "method": 5}',  # a request whose id is readable
             "[1, 2]",  # a batch: MCP takes none
             '{"jsonrpc": "2.0", "method": "ping"',  # cut short
             json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
             json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                         "params": {"name": "ls", "arguments": {"kind": "problems"}}})]
    replies, err = raw_session(example_kb, lines, 3)
    for r in replies:  # every stdout line is a JSON-RPC message
        jsonrpc_message_adapter.validate_python(r)
    errors = [r for r in replies if "error" in r]
    assert [(r["id"], r["error"]["code"], r["error"]["data"]) for r in errors] == [
        (None, PARSE_ERROR, {"line": 1}),
        (7, INVALID_REQUEST, {"line": 5}),
        (None, INVALID_REQUEST, {"line": 6}),
        (None, PARSE_ERROR, {"line": 7}),
    ]
    assert errors[0]["error"]["message"].startswith("Parse error: input line 1 was not read: it is not JSON")
    assert "method: Input should be a valid string" in errors[1]["error"]["message"]
    assert "array" in errors[2]["error"]["message"]
    # the blank line 4 holds no message: no answer, no diagnostic
    by_id = {r["id"]: r for r in replies if "result" in r}
    assert by_id[1]["result"]["serverInfo"]["name"] == "kb"
    assert by_id[2]["result"] == {}
    assert not by_id[3]["result"].get("isError") and "q2" in by_id[3]["result"]["content"][0]["text"]
    said = [ln for ln in err.splitlines() if ln.startswith("kb mcp: input line")]
    assert [ln.split(" was ")[0] for ln in said] == [f"kb mcp: input line {n}" for n in (1, 5, 6, 7)]
    assert "not JSON" in said[0] and "(-32700), still serving" in said[0]
    assert "(-32600), still serving" in said[1]


@pytest.mark.parametrize(("line", "code", "rid", "words"), [
    ("nope", PARSE_ERROR, None, "not JSON (expected ident at column 2)"),
    ('{"a": 1}', INVALID_REQUEST, None, "jsonrpc: Field required"),
    ('{"jsonrpc": "1.0", "id": "x", "method": "ping"}', INVALID_REQUEST, "x",
     "jsonrpc: Input should be '2.0'"),
    ('{"jsonrpc": "2.0", "method": 5}', INVALID_REQUEST, None, "notification (method"),
    ('{"jsonrpc": "2.0", "id": 3, "result": 5}', INVALID_REQUEST, None, "response (result"),
    ("5", INVALID_REQUEST, None, "it is a number"),
    ("null", INVALID_REQUEST, None, "it is null"),
])
def test_describe_says_what_was_wrong(line: str, code: int, rid: Any, words: str) -> None:
    from kb.mcp.stdio import describe

    with pytest.raises(Exception) as caught:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    got = describe(caught.value)
    assert got[0] == code and got[2] == rid and words in got[1], got
