"""A verifier's name is one line of research text: ``kb mcp``'s verdict tool refuses one longer
than :data:`kb.text.LINE_MAX` as a usage error, before anything is written. A real
subprocess; every read is bounded."""

from __future__ import annotations

import json
from pathlib import Path

from kb.text import LINE_MAX
from test_mcp import stdio_raw
from test_mcp_bad_lines import INIT, INITIALIZED


def test_a_verifier_name_longer_than_a_line_is_refused(example_kb: Path) -> None:
    from conftest import git

    head = git(example_kb, "rev-parse", "HEAD")
    long = "v" * (LINE_MAX + 1)
    call = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "verdict", "arguments": {"target": "q2#解法1", "vote": {long: 1, "v2": 1}}}})
    text, _ = stdio_raw(example_kb, "".join(ln + "\n" for ln in (INIT, INITIALIZED, call)).encode(), 2)
    reply = next(r for r in map(json.loads, text.splitlines()) if r.get("id") == 2)
    assert reply["result"]["isError"], reply
    error = json.loads(reply["result"]["content"][0]["text"])["error"]
    assert error["kind"] == "usage" and f"{LINE_MAX + 1:,} characters long" in error["message"]
    assert long not in error["message"]  # the refusal does not echo the name
    assert git(example_kb, "rev-parse", "HEAD") == head
    assert git(example_kb, "status", "--porcelain") == ""
