"""``kb mcp`` answers a request whose id MCP does not take (null, a number that is no integer,
a boolean, an object, an array): the SDK's parser reads it as a notification and it went
unanswered, so the client waited forever. A notification (no ``id`` member) and a client's
response stay unanswered; integer and string ids are served as before. A request sent before
``initialize`` is refused with an error saying so. A real subprocess; every read is bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, jsonrpc_message_adapter

from test_mcp import stdio_raw
from test_mcp_bad_lines import INIT, INITIALIZED


def _msg(rid: Any = "absent", method: str = "ping", **rest: Any) -> str:
    """One JSON-RPC line; ``rid`` "absent": no id member at all (a notification)."""
    out: dict[str, Any] = {"jsonrpc": "2.0"}
    if rid != "absent":
        out["id"] = rid
    if method:
        out["method"] = method
    return json.dumps({**out, **rest})


def _session(cwd: Path, lines: list[str], last_id: int, ids: frozenset[int] = frozenset()
             ) -> tuple[list[dict[str, Any]], list[str]]:
    """The replies of a real ``kb mcp`` to ``lines`` and its stderr lines about input lines."""
    text, err = stdio_raw(cwd, "".join(ln + "\n" for ln in lines).encode(), last_id, ids=ids)
    replies = [json.loads(ln) for ln in text.splitlines()]
    for r in replies:  # every stdout line is a JSON-RPC message
        jsonrpc_message_adapter.validate_python(r)
    return replies, [ln for ln in err.splitlines() if ln.startswith("kb mcp: input line")]


def test_requests_with_ids_mcp_does_not_take_are_answered(example_kb: Path) -> None:
    from conftest import git

    head = git(example_kb, "rev-parse", "HEAD")
    lines = [INIT, INITIALIZED,
             _msg(None),  # 3: null (JSON-RPC discourages it, MCP forbids it)
             _msg({"a": 1}),  # 4
             _msg(5.5),  # 5: JSON-RPC: SHOULD NOT hold a fraction; MCP: an integer
             '{"jsonrpc": "2.0", "id": 5.0, "method": "ping"}',  # 6: written as no integer
             _msg(True),  # 7
             _msg([1]),  # 8
             "",  # 9: blank, no message
             _msg(None, "tools/call", params={"name": "problem_add", "arguments": {
                 "id": "q60", "statement": "must not be written"}}),  # 10: nothing runs
             _msg(),  # 11: a notification: no answer
             _msg(99, "", result={}),  # 12: a client's response to no request: no answer
             _msg(None, "", error={"code": -32700, "message": "x"}),  # 13: a client's error
             _msg(None, "", result={}),  # 14: a malformed response: said, never answered
             _msg(5), _msg("s"), _msg(-3), _msg(2 ** 70),  # integer and string ids work
             _msg(6, "tools/call", params={"name": "ls", "arguments": {"kind": "problems"}})]
    replies, said = _session(example_kb, lines, 6, frozenset({1, 5, -3}))
    bad = [3, 4, 5, 6, 7, 8, 10]
    errors = [r for r in replies if "error" in r]
    assert [(r["id"], r["error"]["code"], r["error"]["data"]) for r in errors] == [
        (None, INVALID_REQUEST, {"line": n}) for n in bad], replies
    words = [r["error"]["message"] for r in errors]
    assert all(w.startswith(f"Invalid Request: input line {n} was not read: it is not a valid "
                            "JSON-RPC 2.0 request (its id is ") for w, n in zip(words, bad))
    assert all("MCP takes a string or an integer id" in w and w.endswith("nothing of it was run")
               for w in words)
    assert ["null", "an object", "the number 5.5, not an integer",
            "the number 5.0, written with a fraction or an exponent", "a boolean", "an array",
            "null"] == [w.split("(its id is ")[1].split(";")[0] for w in words]
    by_id = {r["id"]: r for r in replies if "result" in r}
    assert set(by_id) == {1, 5, "s", -3, 2 ** 70, 6}, replies  # nothing else answered
    assert all(by_id[i]["result"] == {} for i in (5, "s", -3, 2 ** 70))
    listed = by_id[6]["result"]
    assert not listed.get("isError") and "q2" in listed["content"][0]["text"]
    assert [ln.split(" was ")[0] for ln in said] == [f"kb mcp: input line {n}" for n in bad + [14]]
    assert all("(-32600), still serving" in ln for ln in said[:-1])
    assert said[-1].endswith("not answered (a response), still serving"), said
    # the tools/call with id null wrote nothing
    assert git(example_kb, "rev-parse", "HEAD") == head
    assert not (example_kb / "Problems/q60.md").exists()


@pytest.mark.parametrize(("line", "what"), [
    ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', "null"),
    ('{"jsonrpc": "2.0", "id": 1e3, "method": "ping"}', "the number 1000.0, written with"),
    ('{"jsonrpc": "2.0", "id": -0.5, "method": "ping"}', "the number -0.5, not an integer"),
    ('{"jsonrpc": "2.0", "id": {}, "method": "x"}', "an object"),
    ('{"jsonrpc": "2.0", "id": false, "method": "x"}', "a boolean"),
    ('{"jsonrpc": "2.0", "method": "notifications/initialized"}', None),  # no id member
    ('{"jsonrpc": "2.0", "method": "x", "params": {"id": null}}', None),  # a param's id
])
def test_id_problem_names_the_id(line: str, what: Optional[str]) -> None:
    from kb.mcp.stdio import id_problem

    got = id_problem(line)
    assert (got is None) if what is None else (got is not None and f"its id is {what}" in got), got


def test_a_request_before_initialize_says_so(example_kb: Path) -> None:
    """The SDK answered a request before ``initialize`` with -32602 "Invalid request
    parameters" and empty data, which names no cause. Ping and an unknown method are
    answered as before; after initialize, malformed params keep the SDK's own answer."""
    lines = [_msg(1, "tools/list"),
             _msg(2, "resources/read", params={"uri": "kb://prime"}),
             _msg(3),  # ping needs no session
             _msg(4, "no/such/method"),
             INIT.replace('"id": 1', '"id": 5'), INITIALIZED,
             _msg(6, "tools/call", params={"arguments": {}}),  # no tool name
             _msg(7, "tools/list")]
    replies, said = _session(example_kb, lines, 7, frozenset({1, 2, 3, 4, 5, 6}))
    by_id = {r["id"]: r for r in replies}
    for rid, method in ((1, "tools/list"), (2, "resources/read")):
        error = by_id[rid]["error"]
        assert error == {"code": INVALID_PARAMS, "data": {"method": method},
                         "message": "The session is not initialized: send initialize first "
                                    f"({method} was not run)"}, error
    assert by_id[3]["result"] == {}
    assert by_id[4]["error"]["code"] == METHOD_NOT_FOUND
    assert by_id[5]["result"]["serverInfo"]["name"] == "kb"
    assert by_id[6]["error"]["code"] == INVALID_PARAMS
    assert "not initialized" not in by_id[6]["error"]["message"]
    assert "ls" in {t["name"] for t in by_id[7]["result"]["tools"]}
    assert said == []  # a protocol error, not an unreadable line


def test_a_write_sent_down_a_pipe_that_then_closes_is_answered(example_kb: Path) -> None:
    """``printf '…hyp_add…' | kb mcp``: stdin ends while the write runs. The SDK cancelled
    what was still running at the end of input, so the commit landed and the client was
    told nothing; now kb mcp answers every request it read before it exits."""
    import subprocess

    from conftest import git, kb_script, source_env

    lines = [INIT, INITIALIZED, _msg(1, "tools/call", params={
        "name": "hyp_add", "arguments": {"statement": "sent before the pipe closed"}})]
    proc = subprocess.run([kb_script(), "mcp"], cwd=example_kb, env=source_env(), timeout=120,
                          input="".join(ln + "\n" for ln in lines).encode(), capture_output=True)
    replies = {r.get("id"): r for r in map(json.loads, proc.stdout.decode().splitlines())}
    assert 1 in replies and "error" not in replies[1], (proc.stdout[-2000:], proc.stderr[-2000:])
    text = json.loads(replies[1]["result"]["content"][0]["text"])
    assert git(example_kb, "log", "-1", "--format=%s") == f"hyp add {text['id']}: sent before the pipe closed"
