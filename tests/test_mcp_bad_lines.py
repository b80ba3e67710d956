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


def _call(rid: int, tool: str, args: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                       "params": {"name": tool, "arguments": args}})


def test_text_that_is_not_unicode_is_refused_with_the_requests_id(example_kb: Path) -> None:
    """A request whose bytes are not UTF-8 (valid JSON once decoded with replacement
    characters, as the SDK did, so problem_add committed "caf\ufffd") and one holding a lone
    surrogate escape (valid RFC 8259, no text; the SDK answered id null) are refused with
    their own id; nothing is written, and the next requests are served (a surrogate pair,
    an emoji, is text)."""
    from conftest import git

    head = git(example_kb, "rev-parse", "HEAD")
    latin1 = _call(78, "problem_add", {"id": "q50", "statement": "caf\x00 latin1 \x01"}).encode() \
        .replace(b"\\u0000", b"\xe9").replace(b"\\u0001", b"\xff")
    assert b"caf\xe9 latin1 \xff" in latin1  # raw bytes, not JSON escapes
    lone = _call(77, "show", {"id": "X"}).replace('"X"', '"\\ud800"')
    lone_hyp = _call(80, "hyp_add", {"statement": "X"}).replace('"X"', '"cut \\ud83d"')
    pair = _call(79, "problem_add", {"id": "q51", "statement": "X"}).replace(
        '"X"', '"caf\\u00e9 \\ud83d\\ude00"')
    data = b"".join(ln + b"\n" for ln in (
        INIT.encode(), INITIALIZED.encode(), latin1, lone.encode(), lone_hyp.encode(),
        pair.encode()))
    text, err = stdio_raw(example_kb, data, 79, ids=frozenset({77, 78, 80}))
    replies = [json.loads(ln) for ln in text.splitlines()]
    by_id = {r["id"]: r for r in replies}
    assert None not in by_id, replies  # every refusal carries its request's id
    bad = by_id[78]["error"]
    assert bad["code"] == PARSE_ERROR and bad["data"] == {"line": 3}
    assert "it is not UTF-8 text, so not JSON (byte 0xe9 at column " in bad["message"]
    for rid, line in ((77, 4), (80, 5)):
        error = by_id[rid]["error"]
        assert error["code"] == INVALID_REQUEST and error["data"] == {"line": line}
        assert "lone surrogate escape \\ud8" in error["message"], error
        assert "no Unicode text" in error["message"]
    assert not by_id[79]["result"].get("isError"), by_id[79]
    said = [ln for ln in err.splitlines() if ln.startswith("kb mcp: input line")]
    assert [ln.split(" was ")[0] for ln in said] == [f"kb mcp: input line {n}" for n in (3, 4, 5)]
    # only the well-formed request wrote: q51 with its emoji, no q50, no hypothesis
    assert git(example_kb, "rev-list", "--count", f"{head}..HEAD") == "1"
    assert not (example_kb / "Problems/q50.md").exists()
    card = (example_kb / "Problems/q51.md").read_text(encoding="utf-8")
    assert "café 😀" in card and "\ufffd" not in card
    assert git(example_kb, "status", "--porcelain") == ""


@pytest.mark.parametrize(("line", "code", "rid", "words"), [
    # bytes that are not UTF-8 as kb's own reading of stdin keeps them (surrogateescape)
    (b'{"jsonrpc": "2.0", "id": 78, "method": "ping", "params": {"s": "caf\xe9"}}'
     .decode("utf-8", "surrogateescape"), PARSE_ERROR, 78,
     "it is not UTF-8 text, so not JSON (byte 0xe9 at column 68)"),
    (b'{"jsonrpc": "2.0", "id": "\xff", "method": "ping"}'.decode("utf-8", "surrogateescape"),
     PARSE_ERROR, None, "not UTF-8"),  # the id itself is no text: null
    (b'{"jsonrpc": "2.0", \xff}'.decode("utf-8", "surrogateescape"), PARSE_ERROR, None,
     "not UTF-8"),
    ('{"jsonrpc": "2.0", "id": 77, "method": "ping", "params": {"s": "\\ud800"}}',
     INVALID_REQUEST, 77, "lone surrogate escape \\ud800"),
    ('{"jsonrpc": "2.0", "id": "r", "method": "ping", "params": {"\\udc00": 1}}',
     INVALID_REQUEST, "r", "lone surrogate escape \\udc00"),  # in a key
    ('{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', INVALID_REQUEST, None,
     "lone surrogate"),
    ('{"jsonrpc": "2.0", "method": "ping", "params": {"s": "\\ud800"}}', INVALID_REQUEST, None,
     "lone surrogate"),  # a notification has no id to answer with
    ('{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"s": "\\ud800"', PARSE_ERROR,
     None, "not JSON"),  # cut short as well: not JSON
])
def test_describe_names_text_that_is_not_unicode(line: str, code: int, rid: Any,
                                                 words: str) -> None:
    from kb.mcp.stdio import describe

    with pytest.raises(Exception) as caught:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    got = describe(caught.value)
    assert got[0] == code and got[2] == rid and words in got[1], got


def test_stdin_is_claimed_children_read_eof(tmp_path: Path) -> None:
    """kb reads the protocol from a private copy of fd 0 and points fd 0 at the null device
    while serving (as the SDK's transport did), so a child (git, a hook) never reads a
    request; afterwards fd 0 is the wire again. A real process with a pipe on its stdin."""
    import subprocess
    import sys

    from conftest import source_env

    script = (
        "import os, stat, subprocess, sys\n"
        "from kb.mcp.stdio import claim_stdin\n"
        "pipe = lambda: stat.S_ISFIFO(os.fstat(0).st_mode)\n"
        "before = pipe()\n"
        "wire, release = claim_stdin()\n"
        "during = pipe()\n"
        "child = subprocess.run([sys.executable, '-c', 'import sys; print(len(sys.stdin.buffer.read()))'],"
        " capture_output=True, text=True).stdout.strip()\n"
        "lines = [wire.readline(), wire.readline()]\n"
        "release()\n"
        "print(before, during, child, lines, pipe())\n")
    out = subprocess.run([sys.executable, "-c", script], input=b"one\ntwo\n", cwd=tmp_path,
                         capture_output=True, env=source_env(), timeout=60)
    assert out.returncode == 0, out.stderr
    # fd 0 was the pipe, then not while claimed (the child read 0 bytes), then the pipe
    # again; every line went to the wire
    assert out.stdout.decode().strip() == "True False 0 [b'one\\n', b'two\\n'] True"
