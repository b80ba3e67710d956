"""The MCP server agrees with the CLI where an acceptance test found it did not: arguments
are not coerced into another meaning, ``rules`` refuses what ``kb rules`` refuses, results
carry every field their ``kb schema`` requires, and an unknown prompt is answered without
a traceback on stderr."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from conftest import git, invoke
from test_mcp import INIT, NOW, call, data_of, ex, refused, stdio_session  # noqa: F401 (ex: the fixture)

#: (tool, arguments, the argument named in the refusal, the JSON type sent): each a
#: coercion pydantic's lax mode makes (true -> 1, "no" -> False, "0.9" -> 0.9, …).
ILL_TYPED: list[tuple[str, dict[str, Any], str, str]] = [
    ("verdict", {"target": "q2#解法1", "vote": {"v1": True, "v2": 1}}, "vote.v1", "boolean"),
    ("verdict", {"target": "q2#解法1", "vote": {"v1": False, "v2": 0}}, "vote.v1", "boolean"),
    ("verdict", {"target": "q2#解法1", "vote": {"v1": "0.9", "v2": "1"}}, "vote.v2", "string"),
    ("problem_plan", {"id": "q2", "next_step": "bisect", "no_commit": "yes"}, "no_commit",
     "string"),
    ("problem_plan", {"id": "q2", "next_step": "bisect", "no_commit": "no"}, "no_commit",
     "string"),
    ("problem_plan", {"id": "q2", "next_step": "bisect", "no_commit": 0}, "no_commit",
     "integer"),
    ("hyp_status", {"id": "H1", "status": "被推翻", "force": "true", "reason": "r"}, "force",
     "string"),
    ("brief", {"max_chars": True}, "max_chars", "boolean"),
    ("brief", {"max_chars": "4000"}, "max_chars", "string"),
    ("diff", {"findings": "false"}, "findings", "string"),
    ("lock_release", {"all": 1, "owner": "alice"}, "all", "integer"),
    ("explore_tree", {"action": "trunk", "depth": "2"}, "depth", "string"),
    ("explore_tree_record", {"action": "add", "kind": "goal", "title": "Warm the cache",
                             "expectedRevision": True}, "expectedRevision", "boolean"),
    ("gen_init", {"question": "Why?", "keep_threshold": "65"}, "keep_threshold", "string"),
]


def test_ill_typed_arguments_are_refused_not_coerced(ex: Path) -> None:
    """A boolean for a number, a string for a number or a boolean, a number for a boolean:
    each a usage tool error naming the argument, and nothing written (HEAD, files)."""
    from kb.mcp import build_server

    head = git(ex, "rev-parse", "HEAD")

    async def session() -> list[dict[str, Any]]:
        async with Client(build_server(ex)) as c:
            errs = [await refused(c, tool, **args) for tool, args, _n, _t in ILL_TYPED]
            # a well-typed call still runs (the server answers after every refusal)
            assert (await call(c, "brief", max_chars=4000))["open_problems"] is not None
            return errs

    errs = asyncio.run(session())
    for (tool, args, name, got), err in zip(ILL_TYPED, errs):
        assert (err["kind"], err["exit_code"]) == ("usage", 2), (tool, args, err)
        assert err["message"].startswith(f"{tool}: argument "), err
        assert f"argument {name!r}: " in err["message"] and f"(got {got})" in err["message"], err
    assert git(ex, "rev-parse", "HEAD") == head
    # nothing written, committed or not (.kb/ is the derived index; no gen sandbox)
    assert git(ex, "status", "--porcelain", "--ignored") == "!! .kb/"
    assert "状态: 求解中" in (ex / "Problems/q2.md").read_text(encoding="utf-8")


def test_strict_arguments_keep_the_published_types(ex: Path) -> None:
    """Strict validation is not visible in tools/list: the schemas still say number,
    boolean and integer (with their defaults), as the signatures do."""
    from kb.mcp import build_server

    async def listing() -> dict[str, dict[str, Any]]:
        async with Client(build_server(ex)) as c:
            return {t.name: t.input_schema["properties"] for t in (await c.list_tools()).tools}

    props = asyncio.run(listing())
    assert props["verdict"]["vote"] == {"additionalProperties": {"type": "number"},
                                        "title": "Vote", "type": "object"}
    assert props["verdict"]["no_commit"] == {"default": False, "title": "No Commit",
                                             "type": "boolean"}
    assert props["brief"]["max_chars"] == {"anyOf": [{"type": "integer"}, {"type": "null"}],
                                           "default": None, "title": "Max Chars"}
    assert props["gen_init"]["keep_threshold"] == {"default": 65, "title": "Keep Threshold",
                                                   "type": "number"}
    assert props["explore_tree_record"]["expectedRevision"]["anyOf"] == [
        {"type": "integer"}, {"type": "null"}]
    assert props["explore_tree_record"]["from"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert props["rules"]["codes"]["anyOf"][0] == {"items": {"type": "string"}, "type": "array"}


def test_rules_refuses_unknown_codes_and_families_like_the_cli(ex: Path) -> None:
    from kb.mcp import build_server

    async def session() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with Client(build_server(ex)) as c:
            errs = [await refused(c, "rules", codes=["KB999"]),
                    await refused(c, "rules", codes=["KB240", "kb998"]),
                    await refused(c, "rules", family="bogus")]
            return errs, await call(c, "rules", family="history")

    errs, history = asyncio.run(session())
    assert [(e["kind"], e["exit_code"]) for e in errs] == [("usage", 2)] * 3
    assert "KB999" in errs[0]["message"] and "KB998" in errs[1]["message"]
    assert "KB240" not in errs[1]["message"]
    # family is an enum in the input schema: refused before the tool runs, naming the words
    assert errs[2]["message"].startswith("rules: argument 'family': ")
    assert "'snapshot' or 'history'" in errs[2]["message"]
    assert history["rules"] and {r["family"] for r in history["rules"]} == {"history"}
    # the CLI refuses the same calls as usage errors
    assert invoke("rules", "KB999", "--json").code == 2
    assert invoke("rules", "--family", "bogus").code == 2


def _schema(*command: str) -> dict[str, Any]:
    res = invoke("schema", *command)
    assert res.code == 0, res.stderr
    return json.loads(res.stdout)


def _conforms(data: Any, schema: dict[str, Any]) -> None:
    """``data`` is valid under ``schema`` (with jsonschema when installed, else: every
    required key of the top-level object is present)."""
    try:
        import jsonschema
    except ImportError:
        assert set(schema.get("required", ())) <= set(data), sorted(
            set(schema["required"]) - set(data))
        return
    jsonschema.validate(data, schema)


def test_lock_status_and_lit_keys_results_match_the_cli_schemas(
        ex: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCP results hold every field ``kb schema lock status`` / ``kb schema lit keys``
    require, with the CLI's values."""
    from kb.mcp import build_server

    for k in ("S2_API_KEY", "OPENALEX_EMAIL"):
        monkeypatch.delenv(k, raising=False)

    async def session() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(build_server(ex)) as c:
            await call(c, "lock_claim", paths=["Problems/q2.md"], owner="alice")
            return await call(c, "lock_status"), await call(c, "lit_keys")

    status, keys = asyncio.run(session())
    _conforms(status, _schema("lock", "status"))
    _conforms(keys, _schema("lit", "keys"))
    assert status["locks"][0]["owner"] == "alice"
    cli_status = json.loads(invoke("lock", "status", "--json").stdout)
    assert status["source"] == cli_status["source"] == "this clone"
    assert status.keys() == cli_status.keys()
    assert keys == json.loads(invoke("lit", "keys", "--json").stdout)
    assert keys["path"] == str(ex / "keys.env")


def _stdio(cwd: Path, msgs: list[dict[str, Any]], last_id: int) -> tuple[list[dict[str, Any]], str]:
    """A raw stdio session with a real ``kb mcp``: its replies and its stderr."""
    replies, _, err = stdio_session(cwd, msgs, last_id)
    return replies, err


def test_unknown_prompt_is_an_error_without_a_traceback(ex: Path) -> None:
    """The client gets a JSON-RPC error naming the prompt (invalid params, as the spec
    says); stderr gets no traceback."""
    replies, err = _stdio(ex, [
        *INIT,
        {"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "nope"}},
        {"jsonrpc": "2.0", "id": 3, "method": "prompts/get", "params": {"name": "prime"}},
        # an argument the prompt does not take: code 0 "Error rendering prompt prime" and
        # ~200 lines of traceback on stderr, before
        {"jsonrpc": "2.0", "id": 4, "method": "prompts/get",
         "params": {"name": "prime", "arguments": {"since": "HEAD~1"}}},
    ], last_id=4)
    by_id = {m.get("id"): m for m in replies}
    assert by_id[2]["error"]["code"] == -32602 and "nope" in by_id[2]["error"]["message"]
    assert "kb prime" in by_id[3]["result"]["messages"][0]["content"]["text"]  # still serving
    assert by_id[4]["error"]["code"] == -32602, by_id[4]
    assert "takes no argument 'since'" in by_id[4]["error"]["message"], by_id[4]
    assert "Traceback" not in err and len(err.splitlines()) <= 1, err


def test_prime_outside_a_kb_is_kbs_error_without_a_traceback(tmp_path: Path) -> None:
    """The prime prompt and resource outside a KB answer with kb's message and error object
    (kind environment), not the SDK's generic text, and log no traceback."""
    replies, err = _stdio(tmp_path, [
        *INIT,
        {"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "prime"}},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "kb://prime"}},
    ], last_id=3)
    by_id = {m.get("id"): m for m in replies}
    for i in (2, 3):
        error = by_id[i]["error"]
        assert "no kb.toml" in error["message"], error
        assert error["data"]["kind"] == "environment" and error["data"]["exit_code"] == 2
    assert "Traceback" not in err and len(err.splitlines()) <= 1, err


def test_lock_tools_use_the_configured_lock_remote_like_the_cli(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``[locks] remote`` set, the lock tools act on the remote without ``remote``, as
    ``kb lock …`` does: a claim is seen from the other clone, and lock_status says so."""
    from conftest import make_team
    from kb.mcp import build_server

    monkeypatch.setenv("KB_NOW", "2026-11-29T10:00:00Z")
    team = make_team(tmp_path, monkeypatch, '\n[locks]\nremote = "origin"\n', "shared locks")
    a, b, remote = team["a"], team["b"], team["remote"]

    async def claim() -> None:
        async with Client(build_server(a)) as c:
            await call(c, "lock_claim", paths=["tree.md"], owner="alice")

    async def status() -> dict[str, Any]:
        async with Client(build_server(b)) as c:
            return await call(c, "lock_status")

    asyncio.run(claim())
    assert "refs/kb/locks/" in git(remote, "for-each-ref", "refs/kb/locks")
    st = asyncio.run(status())
    assert st["source"] == "remote origin (fetched now)" and st["remote"] == "origin"
    assert [lk["owner"] for lk in st["locks"]] == ["alice"]
    cli = invoke("lock", "status", "--json", cwd=b).json()
    assert (cli["source"], cli["locks"][0]["ref"]) == (st["source"], st["locks"][0]["ref"])
