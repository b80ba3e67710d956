"""kb promote never copies a proposition card's format errors into a commit of its own.

A card with a probability outside [0, 1] (KB218, never clamped) or a malformed
entry (KB123) is skipped, named with its first error; the valid ones are still
promoted, and kb's commit passes the range check CI runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, write_files

NOW = "1793613600"  # 2026-11-02T10:00:00Z


def card(pid: str, probability: str, entry: str) -> str:
    """A hand-written proposition card (value 0.9: above the threshold) with one entry line."""
    return f"""# 命题｜bad card {pid}
- 标题: bad card {pid}
- ID: {pid}
- 类型: 命题
- 状态: 未定论
- 概率: {probability}
- 优先级: 1
- 依赖: []
- 价值/关键性: 0.9

## 陈述
x

## 证明尝试
{entry}
y

## 证伪尝试
"""


#: 概率 1.5 at line 6 and an entry at 2 (both KB218); an entry probability that is no number.
OUT_OF_RANGE = card("p7", "1.5", "### 证明 1｜t｜概率2｜状态未定论")
MALFORMED = card("p9", "0.5", "### 证明 1｜t｜概率abc｜状态未定论")


@pytest.fixture
def ex(example_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_NOW", NOW)
    write_files(example_kb, {"Propos/数论/p7.md": OUT_OF_RANGE, "Propos/数论/p9.md": MALFORMED})
    commit_all(example_kb, "hand-written cards")
    return example_kb


def test_promote_skips_cards_with_format_errors(ex: Path) -> None:
    head = git(ex, "rev-parse", "HEAD")
    r = invoke("promote", cwd=ex)
    assert r.code == 0, r.stderr
    out = r.stdout + r.stderr
    # named: the card, the first error's line and code
    assert "p7: not promoted (Propos/数论/p7.md:6 KB218: 概率 of p7 is 1.5" in out, out
    assert "2 format error(s)" in out
    assert "p9: not promoted (Propos/数论/p9.md:15 KB123: entry probability 'abc'" in out, out
    assert not (ex / "Problems/q-promoted-p7.md").exists()
    assert not (ex / "Problems/q-promoted-p9.md").exists()
    assert git(ex, "rev-parse", "HEAD") == head and git(ex, "status", "--porcelain") == ""


def test_promote_still_promotes_valid_cards_and_its_commit_passes_the_range_check(ex: Path) -> None:
    from kb.ops.propositions import add_proposition

    add_proposition(ex, "数论", "p8", "Valid.", probability=0.4, value=0.9)
    head = git(ex, "rev-parse", "HEAD")
    r = invoke("promote", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    data = r.json()
    assert [m["id"] for m in data["promoted"]] == ["q-promoted-p8"]
    assert [(s["id"], s["code"], s["path"], s["line"]) for s in data["skipped"]] == [
        ("p7", "KB218", "Propos/数论/p7.md", 6), ("p9", "KB123", "Propos/数论/p9.md", 15)]
    assert git(ex, "rev-parse", "HEAD~1") == head
    assert git(ex, "show", "--name-only", "--format=", "HEAD").split() == ["Problems/q-promoted-p8.md"]
    r = invoke("verify", "--range", "HEAD~1..HEAD", cwd=ex)
    assert r.code == 0, r.stdout + r.stderr


def test_a_rule_the_kb_turned_into_a_warning_does_not_block(ex: Path) -> None:
    """kb.toml's severities apply, as in kb verify: KB218 as a warning lets p7 through."""
    toml = ex / "kb.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[rules.severity]\nKB218 = "warning"\n',
                    encoding="utf-8")
    commit_all(ex, "KB218 is a warning here")
    r = invoke("promote", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    assert [m["id"] for m in r.json()["promoted"]] == ["q-promoted-p7"]
    assert [s["id"] for s in r.json()["skipped"]] == ["p9"]
