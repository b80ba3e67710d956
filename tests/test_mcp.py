"""``kb mcp``: the SDK's in-memory client against the server (every tool once, a write
seen by the next read, a stale expect and a locked file refused as tool errors), and
one real stdio session with the ``kb`` console script."""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from conftest import git, kb_script, source_env

NOW = "2026-11-02T10:00:00"


@pytest.fixture
def ex(example_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_NOW", NOW)
    monkeypatch.chdir(example_kb)
    return example_kb


def data_of(res: Any) -> Any:
    assert len(res.content) == 1 and res.content[0].type == "text"
    return json.loads(res.content[0].text)


async def call(client: Client, tool: str, /, **args: Any) -> Any:
    res = await client.call_tool(tool, args)
    assert not res.is_error, (tool, res.content[0].text)
    return data_of(res)


async def refused(client: Client, tool: str, /, **args: Any) -> dict[str, Any]:
    res = await client.call_tool(tool, args)
    assert res.is_error, (tool, res.content)
    return data_of(res)["error"]


#: (tool, arguments) run in order against the example KB: every tool once.
SCENARIO: list[tuple[str, dict[str, Any]]] = [
    ("index", {}), ("ls", {"kind": "problems"}), ("find", {"text": "prime"}),
    ("brief", {"max_chars": 4000}), ("report_text", {}), ("verify", {}),
    ("rules", {"codes": ["KB240"]}), ("verifiers", {}), ("prime", {}),
    ("schema", {"command": "lock status"}), ("dashboard_check", {}),
    ("hyp_status", {"id": "H2", "status": "进行中"}),
    ("exp_new", {"hyp": "H2", "action": "run with 4 workers"}),
    ("exp_log", {"id": "E005", "text": "ran it"}),
    ("exp_update", {"id": "E005", "text": "pytest -n 4", "section": "方法"}),
    ("exp_result", {"id": "E005", "data": "11 minutes", "conclusion": "支持", "reason": "under 12"}),
    ("hyp_evidence", {"id": "H1", "experiment": "E005"}),
    ("hyp_edit", {"id": "H2", "statement": "pytest-xdist on 4 workers brings the test step "
                  "under 12 minutes", "reason": "wording"}),
    ("dashboard", {}),
    ("problem_add", {"id": "q9", "statement": "Is the cache ever stale?", "depends": ["p1"]}),
    ("problem_status", {"id": "q9", "status": "死路"}),
    ("problem_plan", {"id": "q2", "next_step": "bisect"}),
    ("problem_priority", {"id": "q2", "priority": "3"}),
    ("propo_add", {"category": "数论", "id": "p9", "statement": "Every prime above 2 is odd"}),
    ("entry_add", {"id": "p9", "kind": "证明", "title": "parity", "text": "2 | even", "prob": "0.8"}),
    ("verdict", {"target": "p9#证明1", "vote": {"v1": 1, "v2": 1}}),
    ("method_add", {"id": "m9", "name": "Parity argument"}),
    ("method_apply", {"id": "m9", "effect": "settled p9", "problem": "q2"}),
    ("method_improve", {"id": "m9", "reason": "clearer", "text": "state the parity"}),
    ("priority_adjust", {"mode": "survival-map", "dry_run": True}),
    ("promote", {}), ("refresh", {"check": True}), ("report", {}),
    ("lock_claim", {"paths": ["Problems/q2.md"], "owner": "alice"}),
    ("lock_renew", {"paths": ["Problems/q2.md"], "owner": "alice"}),
    ("lock_status", {}),
    ("lock_release", {"paths": ["Problems/q2.md"], "owner": "alice"}),
    ("lock_prune", {}),
    ("project_lock", {"owner": "alice"}), ("project_unlock", {"owner": "alice"}),
    ("diff", {"range": "HEAD~5..HEAD", "markdown": True}), ("log", {"id": "E005"}),
    ("explore_tree_record", {"action": "add", "kind": "goal", "title": "Warm the cache"}),
    ("explore_tree", {"action": "trunk"}),
]


def test_tools_are_static_named_and_annotated(ex: Path, tmp_path: Path) -> None:
    from kb.mcp import build_server

    async def listing(server: Any) -> list[Any]:
        async with Client(server) as c:
            return (await c.list_tools()).tools

    inside = asyncio.run(listing(build_server(ex)))
    outside = asyncio.run(listing(build_server(tmp_path)))  # not a KB: same list
    assert [t.model_dump() for t in inside] == [t.model_dump() for t in outside]
    by = {t.name: t for t in inside}
    assert {"hyp_add", "hyp_status", "exp_new", "show", "ls", "verify", "lock_claim",
            "lock_release", "problem_add", "verdict"} <= by.keys()
    for t in inside:
        a = t.annotations
        assert a is not None and a.read_only_hint is not None, t.name
        if a.read_only_hint:
            assert not a.destructive_hint, t.name
    assert by["ls"].annotations.read_only_hint and not by["hyp_add"].annotations.read_only_hint
    assert by["lock_release"].annotations.destructive_hint
    assert not by["hyp_add"].annotations.idempotent_hint
    assert set(by["hyp_add"].input_schema["properties"]) == {
        "statement", "parent", "no_commit", "owner", "expect"}
    assert by["hyp_add"].input_schema["required"] == ["statement"]
    # nothing of the KB leaks into the descriptions
    assert all("examples" not in (t.description or "") for t in inside)


def test_every_tool_once_and_writes_are_read_back(ex: Path) -> None:
    from kb.mcp import build_server

    server = build_server(ex)

    async def session() -> set[str]:
        called: set[str] = set()
        async with Client(server) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            added = await call(c, "hyp_add", statement="Warm caches halve the load time",
                               parent="H1")
            called.add("hyp_add")
            assert added["op"] == "hyp.add" and added["commit"] == git(ex, "rev-parse", "HEAD")
            shown = await call(c, "show", id=added["id"])
            called.add("show")
            assert shown["statement"] == "Warm caches halve the load time"
            assert shown["blob"] == added["blobs"]["tree.md"]
            for name, args in SCENARIO:
                out = await call(c, name, **args)
                called.add(name)
                if name in ("problem_add", "exp_new", "verdict", "lock_release"):
                    assert {"op", "ids", "paths", "blobs", "commit", "changes",
                            "recovered"} <= out.keys(), name
            await call(c, "lock_claim", paths=["Problems/q2.md"], owner="alice")
            err = await refused(c, "lock_steal", paths=["Problems/q2.md"], reason="mine",
                                owner="bob")
            called.add("lock_steal")
            assert err["kind"] == "locked" and "alice" in err["message"]
            # the example KB has no remote: sync has no upstream (tests/test_paths_move_sync.py
            # syncs two clones through it)
            err = await refused(c, "sync")
            called.add("sync")
            assert err["kind"] == "usage", err
            listed = await call(c, "ls", kind="problems")
            assert "q9" in [o["id"] for o in listed["objects"]]  # a write, then a read that sees it
            assert listed["kind"] == "problems" and listed["count"] == len(listed["objects"])
            return tools - called

    # the gen_* / lit_* tools need a run and a literature server: tests/test_gen_mcp.py
    assert {t for t in asyncio.run(session()) if not t.startswith(("gen_", "lit_"))} == set()
    assert git(ex, "status", "--porcelain") == ""


def test_stale_expect_and_locked_file_are_tool_errors(ex: Path) -> None:
    from kb.mcp import build_server

    async def session() -> None:
        async with Client(build_server(ex)) as c:
            blob = (await call(c, "show", id="q2"))["blob"]
            done = await call(c, "problem_plan", id="q2", next_step="bisect", expect=blob)
            err = await refused(c, "problem_plan", id="q2", next_step="again", expect=blob)
            assert err["kind"] == "stale" and err["exit_code"] == 1
            new_blob = done["blobs"]["Problems/q2.md"]
            await call(c, "lock_claim", paths=["Problems/q2.md"], owner="alice")
            err = await refused(c, "problem_plan", id="q2", next_step="mine", owner="bob",
                                expect=new_blob)
            assert err["kind"] == "locked" and "alice" in err["message"]
            err = await refused(c, "show", id="NOPE")
            assert err["kind"] == "not_found"
            err = await refused(c, "hyp_status", id="H1", status="maybe")
            assert err["kind"] == "usage" and err["exit_code"] == 2
            # a status no problem can have: the usage error `kb ls` gives, not an empty list
            err = await refused(c, "ls", kind="problems", status="solved")
            assert err["kind"] == "usage" and "已解决" in err["message"]
            assert (await call(c, "ls", kind="directions", status="active"))["objects"]
            err = await refused(c, "ls", status="bogus")  # every kind: no kind has the word
            assert err["kind"] == "usage"
            # the server survived every error
            assert (await call(c, "ls", kind="problems"))["objects"]

    asyncio.run(session())
    assert "- 计划: bisect\n" in (ex / "Problems/q2.md").read_text(encoding="utf-8")


def test_bad_arguments_and_unknown_tools_are_usage_errors(ex: Path) -> None:
    """What the SDK rejects before a tool runs (a missing, ill-typed or unknown argument,
    an unknown tool) comes back as kb's error object of kind usage; nothing is written
    and the server answers the next call."""
    from kb.contract import ErrorOutput
    from kb.mcp import build_server

    head = git(ex, "rev-parse", "HEAD")

    async def session() -> list[dict[str, Any]]:
        errs = []
        async with Client(build_server(ex)) as c:
            for tool, args in [("hyp_add", {}), ("hyp_add", {"statement": 3}),
                               ("brief", {"max_chars": "many"}), ("rules", {"codes": "KB240"}),
                               ("no_such_tool", {}),
                               ("hyp_add", {"statement": "Typos are refused", "expcet": "abc"})]:
                res = await c.call_tool(tool, args)
                assert res.is_error, (tool, args)
                ErrorOutput.model_validate(data_of(res))
                errs.append(data_of(res)["error"])
            assert (await call(c, "show", id="H1"))["id"] == "H1"  # still serving
        return errs

    errs = asyncio.run(session())
    assert [(e["kind"], e["exit_code"]) for e in errs] == [("usage", 2)] * 6
    missing, typed, number, listed, tool, unknown = (e["message"] for e in errs)
    assert missing == "hyp_add: missing required argument 'statement'"
    assert typed.startswith("hyp_add: argument 'statement': ") and "(got integer)" in typed
    assert number.startswith("brief: argument 'max_chars': ") and "(got string)" in number
    assert listed.startswith("rules: argument 'codes': ") and "(got string)" in listed
    assert tool == "no tool named 'no_such_tool' (tools/list gives the tools)"
    assert unknown.startswith("hyp_add: unknown argument 'expcet' (it takes: expect, ")
    assert git(ex, "rev-parse", "HEAD") == head and git(ex, "status", "--porcelain") == ""


def test_outside_a_kb_every_call_is_an_environment_error(tmp_path: Path) -> None:
    from kb.mcp import build_server

    async def session() -> dict[str, Any]:
        async with Client(build_server(tmp_path)) as c:
            return await refused(c, "ls")

    assert asyncio.run(session())["kind"] == "environment"


def test_prime_resource_and_prompt(ex: Path) -> None:
    from kb.mcp import build_server
    from kb.prime import LIMIT

    async def session() -> tuple[str, str]:
        async with Client(build_server(ex)) as c:
            res = await c.read_resource("kb://prime")
            prompt = await c.get_prompt("prime")
            return res.contents[0].text, prompt.messages[0].content.text

    text, prompt = asyncio.run(session())
    assert text.startswith("# kb prime") and "Open problems by priority" in text and "q2" in text
    assert len(text) <= LIMIT and prompt == text


def test_stdio_session_with_the_console_script(ex: Path) -> None:
    """A real subprocess: only protocol on stdout, even when a commit runs the
    pre-commit hook (git's and the hook's output go to stderr)."""
    from conftest import invoke

    assert invoke("hooks", "install", cwd=ex).code == 0
    git(ex, "add", "-A")
    git(ex, "commit", "-qm", "hooks", "--allow-empty")
    env = source_env()
    env["KB_NOW"] = NOW
    params = StdioServerParameters(command=kb_script(), args=["mcp"], cwd=str(ex), env=env)

    async def session() -> tuple[list[str], dict[str, Any]]:
        async with Client(params) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            added = await call(c, "problem_add", id="q9", statement="Is it stale?")
            return names, added

    names, added = asyncio.run(session())
    assert "hyp_add" in names and added["commit"] == git(ex, "rev-parse", "HEAD")
    assert "Kb-Op: problem.add" in git(ex, "log", "-1", "--format=%B")
    assert (ex / ".git/hooks/pre-commit").exists()  # the commit ran kb's hook, quietly


#: The opening of a raw stdio session: initialize (id 1), then initialized.
INIT = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def stdio_raw(cwd: Path, data: bytes, last_id: int,
              env: dict[str, str] | None = None, ids: frozenset[int] = frozenset()
              ) -> tuple[str, str]:
    """Write ``data`` to a real ``kb mcp`` process's stdin, read its stdout until the
    replies to ``last_id`` and every one of ``ids`` came (bounded: 60 s), then close stdin
    (60 s more): its whole stdout and its stderr. The server answers requests as they end,
    not in their order (and answers those still running when stdin closes: kb.mcp.stdio's
    drain; the wait keeps each reply's arrival in the bound)."""
    proc = subprocess.Popen([kb_script(), "mcp"], cwd=cwd, env=env or source_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(data)
        proc.stdin.flush()
        out = b""
        deadline = time.monotonic() + 60
        marks = [f'"id":{i},'.encode() for i in {last_id, *ids}]
        while not all(m in out.replace(b" ", b"") for m in marks) \
                and time.monotonic() < deadline:
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
    return (out + rest).decode("utf-8"), err.decode("utf-8", "replace")


def stdio_session(cwd: Path, msgs: list[dict[str, Any]], last_id: int
                  ) -> tuple[list[dict[str, Any]], str, str]:
    """Send ``msgs`` to a real ``kb mcp`` process over stdio (:func:`stdio_raw`): its
    JSON-RPC replies (every stdout line parsed as JSON), its whole stdout and its stderr."""
    env = source_env()
    env["KB_NOW"] = NOW
    text, err = stdio_raw(cwd, b"".join(json.dumps(m).encode() + b"\n" for m in msgs), last_id, env,
                          frozenset(m["id"] for m in msgs if isinstance(m.get("id"), int)))
    return [json.loads(ln) for ln in text.splitlines()], text, err


def test_only_protocol_on_stdout_even_when_a_hook_prints(ex: Path) -> None:
    """A raw stdio session: a pre-commit hook that prints to stdout runs during a write
    tool; every stdout line is still a JSON-RPC message."""
    hook = ex / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho HOOK NOISE\necho hook-err >&2\ntouch .git/hook-ran\nexit 0\n",
                    encoding="utf-8")
    hook.chmod(0o755)
    replies, out, _ = stdio_session(ex, [*INIT, {
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "problem_plan", "arguments": {"id": "q2", "next_step": "raw"}}}], 2)
    assert all(m.get("jsonrpc") == "2.0" for m in replies)  # every line is JSON-RPC
    call = next(m for m in replies if m.get("id") == 2)
    assert not call["result"].get("isError"), call
    assert (ex / ".git/hook-ran").exists() and "HOOK NOISE" not in out
    assert "- 计划: raw\n" in (ex / "Problems/q2.md").read_text(encoding="utf-8")


def test_warm_reads_see_changes_made_outside_the_server(ex: Path) -> None:
    """The warm index skips its refresh only while git sees no change: a hand edit (twice
    to the same file), a new file and a commit made between calls are all read back."""
    from kb.mcp import build_server

    card = ex / "Problems/q2.md"

    def retitle(title: str) -> None:
        lines = card.read_text(encoding="utf-8").split("\n")
        lines[0], lines[1] = f"# 问题｜{title}", f"- 标题: {title}"
        card.write_text("\n".join(lines), encoding="utf-8")

    async def session() -> None:
        async with Client(build_server(ex)) as c:
            assert (await call(c, "show", id="q2"))["title"] == "Infinitude of primes"
            retitle("Edited once")
            assert (await call(c, "show", id="q2"))["title"] == "Edited once"
            retitle("Edited twice")  # the same file again: still listed by diff-files
            assert (await call(c, "show", id="q2"))["title"] == "Edited twice"
            git(ex, "commit", "-qam", "retitle")
            shown = await call(c, "show", id="q2")
            assert shown["blob"] == git(ex, "rev-parse", "HEAD:Problems/q2.md")
            new = ex / "Problems/q77.md"
            new.write_bytes(card.read_bytes().replace(b"q2", b"q77"))
            assert [o["id"] for o in (await call(c, "find", text="q77"))["objects"]] == ["q77"]
            new.unlink()
            assert await call(c, "find", text="q77") == {"text": "q77", "count": 0, "objects": []}

    asyncio.run(session())


def test_trail_tools_take_the_seed_names(ex: Path) -> None:
    """explore_tree_record's parameters are the seed's (``from``, ``edgeKind``, ``parentId``)."""
    from kb.mcp import build_server

    async def session() -> dict[str, Any]:
        async with Client(build_server(ex)) as c:
            props = {t.name: t for t in (await c.list_tools()).tools}[
                "explore_tree_record"].input_schema["properties"]
            assert {"from", "to", "edgeKind", "parentId", "expectedRevision"} <= props.keys()
            a = (await call(c, "explore_tree_record", action="add", kind="question",
                            title="Why is CI slow?"))["data"]["id"]
            b = (await call(c, "explore_tree_record", action="add", kind="hypothesis",
                            title="pytest dominates", parentId=a))["data"]["id"]
            c2 = (await call(c, "explore_tree_record", action="add", kind="hypothesis",
                             title="setup dominates", parentId=a))["data"]["id"]
            await call(c, "explore_tree_record", **{"action": "link", "from": b, "to": c2,
                                                    "edgeKind": "contradicts"})
            node = await call(c, "explore_tree", action="node", id=b)
            err = await refused(c, "explore_tree_record", action="link", to=c2, edgeKind="nope",
                                **{"from": b})
            assert err["kind"] == "usage"
            return node

    node = asyncio.run(session())
    assert "contradicts" in json.dumps(node)


def test_numbers_come_as_json_numbers_or_their_text(ex: Path) -> None:
    """A probability, value, priority or threshold is a JSON number (what clients that
    generate arguments send) or the text the card holds; a boolean is neither. The
    verdict tool takes the target card's ``expect`` as every card write does."""
    from kb.mcp import build_server

    async def session() -> None:
        async with Client(build_server(ex)) as c:
            await call(c, "problem_add", id="q9", statement="Is it stale?", priority=5)
            await call(c, "problem_priority", id="q9", priority=3)
            await call(c, "propo_add", category="数论", id="p9", statement="Odd primes",
                       prob=0.25, value=1, priority=2)
            await call(c, "entry_add", id="p9", kind="证明", title="parity", text="2 | n",
                       prob=0.8)
            err = await refused(c, "entry_add", id="p9", kind="证明", title="t", text="x",
                                prob=True)
            assert err["kind"] == "usage" and "(got boolean)" in err["message"]
            blob = (await call(c, "show", id="p9"))["blob"]
            await call(c, "entry_add", id="p9", kind="证明", title="again", text="y",
                       prob="0.70")
            err = await refused(c, "verdict", target="p9#证明1", vote={"v1": 1, "v2": 1},
                                expect=blob)
            assert err["kind"] == "stale", err
            await call(c, "promote", threshold=0.9, no_commit=True)

    asyncio.run(session())
    problem = (ex / "Problems" / "q9.md").read_text(encoding="utf-8")
    assert "- 优先级: 3\n" in problem
    card = next((ex / "Propos").rglob("p9.md")).read_text(encoding="utf-8")
    assert "### 证明 1｜parity｜概率0.8｜" in card and "### 证明 2｜again｜概率0.7｜" in card
    assert "- 概率: 0.25\n" in card and "- 价值/关键性: 1\n" in card, card
