"""``kb mcp`` answers an input line that is no JSON-RPC message (the SDK's stdio transport
drops it unanswered): JSON-RPC 2.0's parse error or invalid request on stdout, one line on
stderr naming the line, and the next request is served as usual. A real subprocess; every
read is bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp_types import INVALID_REQUEST, PARSE_ERROR, jsonrpc_message_adapter

from test_mcp import stdio_raw

INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "test", "version": "1"}}})
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def raw_session(cwd: Path, lines: list[str], last_id: int) -> tuple[list[dict[str, Any]], str]:
    """Write ``lines`` to a real ``kb mcp`` (:func:`test_mcp.stdio_raw`): its replies and
    its stderr."""
    text, err = stdio_raw(cwd, "".join(ln + "\n" for ln in lines).encode(), last_id)
    return [json.loads(ln) for ln in text.splitlines()], err


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
    # bytes that are not UTF-8, as the transport decodes them (replacement characters)
    (b'{"jsonrpc": "2.0", \xff}'.decode("utf-8", "replace"), PARSE_ERROR, None,
     "it is not UTF-8 text, so not JSON"),
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
