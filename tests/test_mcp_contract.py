"""The MCP tools keep the contract the server states: a word outside a fixed choice is a
usage error naming the words (gen_schema's kind was a KeyError, kind internal), the input
schemas declare those choices as enums, the tools whose CLI command takes ``--expect``
on one file take ``expect`` (exp_new, dashboard did not), and the instructions name
exactly which write tools return the write result and which take ``expect``."""

from __future__ import annotations

import asyncio
import typing
from pathlib import Path
from typing import Any

from mcp import Client

from conftest import git, invoke
from test_mcp import SCENARIO, call, ex, refused  # noqa: F401 (ex: the fixture)

#: The keys of a write result (kb.ops.result.OpResult).
OP_KEYS = {"op", "id", "ids", "paths", "blobs", "commit", "changes", "recovered"}


def _listing(kb: Path) -> tuple[dict[str, Any], str]:
    """The tools by name and the server's instructions (what initialize returns)."""
    from kb.mcp import build_server

    async def session() -> tuple[dict[str, Any], str]:
        async with Client(build_server(kb)) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            return tools, c.instructions or ""

    return asyncio.run(session())


def _enum(prop: dict[str, Any]) -> list[str]:
    """The enum of a property schema (inside ``anyOf`` for an optional one)."""
    for part in [prop, *prop.get("anyOf", [])]:
        if "enum" in part:
            return list(part["enum"])
    raise AssertionError(f"no enum in {prop}")


def test_a_bad_choice_is_a_usage_error_naming_the_words(ex: Path) -> None:
    """gen_schema with an unknown kind: kind usage (exit 2, as `kb gen schema bogus`), the
    valid kinds named, nothing logged as a bug; the same for every fixed choice."""
    from kb.mcp import build_server

    head = git(ex, "rev-parse", "HEAD")

    async def session() -> list[dict[str, Any]]:
        async with Client(build_server(ex)) as c:
            errs = [await refused(c, "gen_schema", kind="bogus"),
                    await refused(c, "gen_submit", kind="bogus", data={}),
                    await refused(c, "gen_init", question="Why?", eval_scale="huge"),
                    await refused(c, "lit_search", query="x", source="arxiv"),
                    await refused(c, "lit_search", query="x", sort="random"),
                    await refused(c, "lit_cite", paper_id="x", direction="sideways")]
            # a valid kind still answers, and no kind gives every schema
            assert (await call(c, "gen_schema", kind="verdict"))["type"] == "object"
            assert set(await call(c, "gen_schema")) == {"candidates", "litscout", "verdict"}
            return errs

    errs = asyncio.run(session())
    assert [(e["kind"], e["exit_code"]) for e in errs] == [("usage", 2)] * len(errs)
    assert errs[0]["message"].startswith("gen_schema: argument 'kind': ")
    assert "'candidates', 'litscout' or 'verdict'" in errs[0]["message"]
    assert "'low', 'medium' or 'high'" in errs[2]["message"]
    assert "'references', 'citations' or 'recommend'" in errs[5]["message"]
    assert git(ex, "rev-parse", "HEAD") == head
    assert not (ex / "sandbox").exists()  # gen_init wrote no run
    assert invoke("gen", "schema", "bogus").code == 2  # the CLI's answer to the same word


def test_fixed_choices_are_enums_equal_to_the_librarys_lists(ex: Path) -> None:
    """The input schemas declare each fixed choice as an enum, and each enum is the list
    the library checks against (so neither can drift from the other)."""
    from kb.checks.catalogue import Family
    from kb.gen.models import KINDS
    from kb.gen.store import EVAL_SCALES
    from kb.lit.client import DIRECTIONS, SORTS, SOURCES

    tools, _ = _listing(ex)

    def enum(tool: str, arg: str) -> list[str]:
        return _enum(tools[tool].input_schema["properties"][arg])

    assert enum("gen_schema", "kind") == enum("gen_submit", "kind") == list(KINDS)
    assert enum("gen_init", "eval_scale") == list(EVAL_SCALES)
    assert enum("lit_search", "source") == list(SOURCES)
    assert enum("lit_search", "sort") == list(SORTS)
    assert enum("lit_cite", "direction") == list(DIRECTIONS)
    assert enum("rules", "family") == list(typing.get_args(Family))


#: The tools taking ``expect``: those whose CLI command takes --expect for the one file it
#: edits. Creating a card (problem/propo/method add) or rewriting many (promote, priority
#: adjust, refresh, report) is refused --expect by the CLI and the library alike.
EXPECT_TOOLS = {"hyp_add", "hyp_status", "hyp_edit", "hyp_evidence", "exp_new", "exp_log",
                "exp_update", "exp_result", "dashboard", "problem_status", "problem_plan",
                "problem_priority", "entry_add", "method_apply", "method_improve", "verdict",
                "gen_adopt"}


def test_instructions_name_the_write_shapes_and_expect_exactly(ex: Path) -> None:
    """Every write tool the instructions list as returning {op, …} does (each run once on
    the example KB), the others do not, and the tools named as taking `expect` are exactly
    those that take it."""
    from kb.mcp import build_server

    tools, text = _listing(ex)
    writes = {n for n, t in tools.items() if not t.annotations.read_only_hint}
    takes = {n for n, t in tools.items() if "expect" in t.input_schema["properties"]}
    assert takes == EXPECT_TOOLS

    def listed(after: str, until: str) -> set[str]:
        part = text.split(after, 1)[1].split(until, 1)[0]
        return {w.strip(" .") for w in part.split(",")}

    ops = listed("changes, recovered}: ", ". The other")
    others = listed("The other write tools (", ")")
    assert ops | others == writes and not ops & others
    assert listed("the tools taking it: ", ". A tool") == EXPECT_TOOLS
    assert "Every write tool" not in text  # the old promise some tools did not keep

    ran: dict[str, dict[str, Any]] = {}

    async def session() -> None:
        async with Client(build_server(ex)) as c:
            for name, args in SCENARIO:
                if name in writes:
                    ran[name] = await call(c, name, **args)

    asyncio.run(session())
    assert ran.keys() & others, "the scenario runs some writes with their own shape"
    for name, out in ran.items():
        if name in ops:
            assert OP_KEYS <= out.keys(), name
        else:
            assert "op" not in out or not OP_KEYS <= out.keys(), name


def test_exp_new_and_dashboard_take_expect(ex: Path) -> None:
    """A stale `expect` refuses exp_new (tree.md's blob) and dashboard (DASHBOARD.md's), as
    `kb exp new --expect` and `kb dashboard --expect` do; the current blob lets them write."""
    from kb.mcp import build_server

    old = "0" * 40  # a blob id no file has

    async def session() -> list[dict[str, Any]]:
        async with Client(build_server(ex)) as c:
            head = git(ex, "rev-parse", "HEAD")
            errs = [await refused(c, "exp_new", hyp="H2", action="rerun", expect=old)]
            assert git(ex, "rev-parse", "HEAD") == head and git(ex, "status", "--porcelain") == ""
            tree = (await call(c, "show", id="H2"))["blob"]
            made = await call(c, "exp_new", hyp="H2", action="rerun", expect=tree)
            assert made["op"] == "exp.new" and made["commit"] == git(ex, "rev-parse", "HEAD")
            # a hand edit, committed, makes DASHBOARD.md stale: the dashboard has a write to guard
            dash_md = ex / "DASHBOARD.md"
            dash_md.write_text(dash_md.read_text(encoding="utf-8").replace(
                "**Active**: 2 hypotheses", "**Active**: 9 hypotheses"), encoding="utf-8")
            git(ex, "commit", "-qam", "hand edit")
            head = git(ex, "rev-parse", "HEAD")
            errs.append(await refused(c, "dashboard", expect=old))
            assert git(ex, "rev-parse", "HEAD") == head and git(ex, "status", "--porcelain") == ""
            dash = git(ex, "rev-parse", "HEAD:DASHBOARD.md")
            assert (await call(c, "dashboard", expect=dash))["changed"] is True
            return errs

    errs = asyncio.run(session())
    assert [(e["kind"], e["exit_code"]) for e in errs] == [("stale", 1)] * 2


def test_entry_and_method_text_stay_required(ex: Path) -> None:
    """`text` is required over MCP: the library needs the text or a file holding it, and a
    tool takes the text itself (the CLI's --text-file names a file on the caller's disk)."""
    tools, _ = _listing(ex)
    assert "text" in tools["entry_add"].input_schema["required"]
    assert "text" in tools["method_improve"].input_schema["required"]
