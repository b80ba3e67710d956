"""``kb find`` with a text of any length: SQLite's LIKE refuses a pattern past 50,000
bytes (which kb once reported as a broken index cache); the search matches with instr()
on lower(), case-insensitive exactly as LIKE was (ASCII letters fold, other characters
match only themselves). The MCP ``find`` tool runs the same library function."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

CARD = """# 问题｜Élan of the CACHE
- 标题: Élan of the CACHE
- ID: q1
- 类型: 问题
- 状态: 待解决
- 优先级: 2
- 依赖: []
- 被依赖: []
- 来源: 原始
- 计划: 无

## 陈述
{statement}
"""

LONG = "x" * 60_000


@pytest.fixture
def kb(make_kb) -> Path:
    return make_kb({"tree.md": "# Hypothesis Tree\n\n## H1: 50%_of misses come from the PREFIX\n"
                               "Status: 待验\nEvidence: (empty)\n",
                    "Problems/q1.md": CARD.format(statement="Élan: is the cache stale? " + LONG)},
                   commit=True)


def ids(run_kb, kb: Path, text: str) -> list[str]:
    r = run_kb("find", text, "--json", cwd=kb)
    assert r.code == 0, r.stdout + r.stderr
    return [o["id"] for o in r.json()["objects"]]


def test_a_60000_character_text_is_searched(kb: Path, run_kb) -> None:
    r = run_kb("find", "y" * 60_000, "--json", cwd=kb)
    assert r.code == 0, r.stdout[:500] + r.stderr[:500]
    assert r.json()["count"] == 0
    assert ids(run_kb, kb, "stale? " + LONG) == ["q1"]  # and found when it is there
    # the same case rules as a short text: ASCII letters fold, others do not
    assert ids(run_kb, kb, "Élan: IS THE CACHE STALE? " + LONG.upper()) == ["q1"]
    assert ids(run_kb, kb, "élan: is the cache stale? " + LONG) == []


@pytest.mark.parametrize("n", [49_998, 49_999])  # LIKE's pattern "%…%": 50,000 / 50,001 bytes
def test_either_side_of_sqlites_like_limit(kb: Path, run_kb, n: int) -> None:
    assert ids(run_kb, kb, "X" * n) == ["q1"]
    assert ids(run_kb, kb, "x" * (n - 1) + "%") == []


def test_case_insensitive_as_like_was(kb: Path, run_kb) -> None:
    assert ids(run_kb, kb, "cache") == ["q1"]
    assert ids(run_kb, kb, "élan") == []  # non-ASCII letters do not fold (as LIKE)
    assert ids(run_kb, kb, "Élan") == ["q1"]
    assert ids(run_kb, kb, "prefix") == ["H1"]
    assert ids(run_kb, kb, "h1") == ["H1"]
    # LIKE's wildcards are plain characters
    assert ids(run_kb, kb, "50%_of") == ["H1"] and ids(run_kb, kb, "5_%") == []


def test_the_mcp_find_tool_takes_a_long_text(kb: Path, monkeypatch) -> None:
    from mcp import Client

    from kb.mcp import build_server

    monkeypatch.chdir(kb)

    async def session() -> dict:
        async with Client(build_server(kb)) as c:
            res = await c.call_tool("find", {"text": "y" * 60_000})
            assert not res.is_error, res.content[0].text[:500]
            return json.loads(res.content[0].text)

    assert asyncio.run(session())["count"] == 0


def test_the_mcp_find_tool_refuses_a_nul_that_would_match_everything(kb: Path, monkeypatch) -> None:
    """SQLite's text search stops at U+0000: ``"\\u0000"`` searched for the empty text and
    returned every object."""
    from mcp import Client

    from kb.mcp import build_server

    monkeypatch.chdir(kb)

    async def session() -> list:
        async with Client(build_server(kb)) as c:
            out = []
            for text in ("\x00", "cache\x00", "\u200b"):
                res = await c.call_tool("find", {"text": text})
                out.append((res.is_error, res.content[0].text))
            return out

    (e1, t1), (e2, t2), (e3, t3) = asyncio.run(session())
    assert e1 and "U+0000" in t1 and e2 and "U+0000" in t2, (t1, t2)
    assert e3 and "non-empty" in t3, t3
