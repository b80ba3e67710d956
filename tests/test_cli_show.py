"""``kb show`` reports what kb could not read of the object's own file: the parse
diagnostics the index stored for it, after the object on stderr (errors always, warnings
when few) and as ``diagnostics`` in ``--json`` (the contract's ShowOutput); the exit
code stays 0 (the object was shown). The MCP ``show`` tool carries the same list."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

#: A problem card whose title is given twice (KB112), whose second entry has a NaN
#: probability (KB123) and whose third entry line cannot be read (KB122): `kb show` lists
#: only the first entry, and must say why the others are missing.
BAD_CARD = """# 问题｜Cache staleness
- 标题: Cache staleness
- 标题: Stale cache
- ID: q1
- 类型: 问题
- 状态: 待解决
- 优先级: 2
- 依赖: []
- 被依赖: []
- 来源: 原始
- 计划: 无

## 陈述
Is the cache ever stale?

## 解法候选
### 解法 1｜TTL｜概率0.4｜状态待验
a
### 解法 2｜versioned keys｜概率nan｜状态待验
b
### 解法 three｜no number
c
"""

CLEAN_CARD = BAD_CARD.replace("- 标题: Stale cache\n", "").replace("概率nan", "概率0.2") \
    .replace("### 解法 three｜no number\nc\n", "").replace("q1", "q2")


@pytest.fixture
def kb(make_kb) -> Path:
    return make_kb({"tree.md": "# Hypothesis Tree\n", "Problems/q1.md": BAD_CARD,
                    "Problems/q2.md": CLEAN_CARD}, commit=True)


def test_show_prints_the_files_parse_errors_after_the_object(kb: Path, run_kb) -> None:
    r = run_kb("show", "q1", cwd=kb)
    assert r.code == 0, r.stderr
    assert "解法 1｜TTL" in r.stdout and "KB1" not in r.stdout  # the object on stdout only
    lines = r.stderr.splitlines()
    assert lines[0].startswith("kb: 3 parse error(s) in Problems/q1.md")
    assert lines[1:] == [
        "kb: Problems/q1.md:3:1: KB112 [error] anchor '标题' of Problems/q1.md is given twice "
        "(lines 2 and 3); keep one",
        "kb: Problems/q1.md:19:1: KB123 [error] entry probability 'nan' is not a number",
        "kb: Problems/q1.md:21:1: KB122 [error] malformed entry line, so it is not read; write "
        "'### 解法 N｜<title>｜概率<0..1>｜状态未定论'",
    ]


def test_show_json_carries_the_diagnostics(kb: Path, run_kb) -> None:
    from kb.contract import schema_of, validate_output

    r = run_kb("show", "q1", "--json", cwd=kb)
    assert r.code == 0 and r.stderr == ""
    data = r.json()
    validate_output("show", data)
    assert [(d["path"], d["line"], d["code"], d["severity"]) for d in data["diagnostics"]] == [
        ("Problems/q1.md", 3, "KB112", "error"), ("Problems/q1.md", 19, "KB123", "error"),
        ("Problems/q1.md", 21, "KB122", "error")]
    assert "diagnostics" in schema_of("show")["required"]


def test_a_clean_file_shows_nothing_more(kb: Path, run_kb) -> None:
    r = run_kb("show", "q2", cwd=kb)
    assert r.code == 0 and r.stderr == ""
    assert run_kb("show", "q2", "--json", cwd=kb).json()["diagnostics"] == []


def test_many_warnings_are_counted_not_listed(capsys: pytest.CaptureFixture[str]) -> None:
    from kb_cli.show import WARNINGS_SHOWN, report_diagnostics

    def diag(line: int, severity: str) -> dict:
        return {"path": "Problems/q1.md", "line": line, "col": 1, "code": "KB199",
                "severity": severity, "message": "m"}

    report_diagnostics([diag(n, "warning") for n in range(1, WARNINGS_SHOWN + 1)])
    assert len(capsys.readouterr().err.splitlines()) == WARNINGS_SHOWN
    report_diagnostics([diag(1, "error")] + [diag(n, "warning") for n in range(2, 40)])
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("kb: 1 parse error(s) in Problems/q1.md") and len(err) == 3
    assert err[2] == "kb: and 38 warning(s) in the same file(s); `kb index` lists them"


def test_the_mcp_show_tool_carries_the_diagnostics(kb: Path, monkeypatch) -> None:
    from mcp import Client

    from kb.mcp import build_server

    monkeypatch.chdir(kb)

    async def session() -> dict:
        async with Client(build_server(kb)) as c:
            res = await c.call_tool("show", {"id": "q1"})
            assert not res.is_error
            return json.loads(res.content[0].text)

    shown = asyncio.run(session())
    assert [d["code"] for d in shown["diagnostics"]] == ["KB112", "KB123", "KB122"]
