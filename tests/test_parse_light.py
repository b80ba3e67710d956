"""kb.parse.light: a card read light says what its full parse says, or nothing.

Every card of the shared cases, of both generated corpora and of hand-made
tricky variants is read both ways: light_card returns None or exactly the
full parse's object rows (id kind status path line blob), links and anchor
lines, and then the full parse has no diagnostic.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import generated_corpus

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"


def _full(path: str, blob: str, data: bytes, fmt: str):
    from kb.config import Config
    from kb.index_rows import result_rows
    from kb.parse import parse_file

    _, objs, links, diags = result_rows(path, blob, parse_file(path, data, Config(root=Path(".")), fmt))
    rows = [(r[2], r[3], r[4], r[0], r[6], r[1]) for r in objs]
    import json

    anchors = [json.loads(r[-1]).get("anchor_lines") or {} for r in objs]
    return rows, [(r[0], r[2], r[3], r[4]) for r in links], anchors, diags


def _same_or_none(path: str, data: bytes, fmt: str) -> bool:
    """Assert the light reading of one version; True when it was light."""
    from kb.git import object_id
    from kb.parse.light import light_card

    blob = object_id("blob", data, like="0" * 40)
    got = light_card(path, blob, data, fmt)
    if got is None:
        return False
    rows, links, anchors, diags = _full(path, blob, data, fmt)
    assert diags == [], (path, fmt, diags)
    assert got[0] == rows, path
    assert got[1] == links, path
    assert [got[2]] == anchors, path
    return True


CARD = """# 问题｜A problem

- 标题: A problem
- 状态: 求解中
- 优先级: 3
- 依赖: ["q2","q3"]
- 被依赖: []

## 陈述

Text.

### 解法 1｜first｜概率0.2｜状态未定论
body
"""

PATHS = {"problem": "Problems/q1.md", "proposition": "Propos/数论/p1.md",
         "method": "Methods/m1.md", "verified": "Verified/命题/p1.md"}


def _variants() -> list[tuple[str, str]]:
    """Cards a light reading must get right or refuse: each a small fault or oddity."""
    out = [("problem", CARD)]
    swap = [
        ("- 状态: 求解中", "- 状态：求解中"),            # KB110
        ("- 优先级: 3", "- 优先级: x"),                   # KB125
        ("- 依赖: [\"q2\",\"q3\"]", "- 依赖: q2, q3"),    # KB120
        ("- 依赖: [\"q2\",\"q3\"]", "- 依赖: [q2"),       # KB121
        ("- 依赖: [\"q2\",\"q3\"]", "- 依赖: [[q2]], [[q3]]"),  # wiki links
        ("- 被依赖: []", "- 被依赖: []\n- 状态: 已解决"),   # KB112
        ("# 问题｜A problem", "# 命题｜A problem"),        # KB141
        ("# 问题｜A problem", "A problem"),                # KB140
        ("概率0.2", "概率x"),                              # KB123
        ("｜状态未定论", ""),                              # KB122
        ("Text.", "```\n## not a heading\n```"),          # a fence
        ("Text.", "    indented code"),                   # indented code
        ("Text.", "<div>\n- 状态: 假\n</div>"),          # HTML
        ("Text.", "```\n# a comment\nx = 1\n```"),       # code read by neither
        ("Text.", "```\n### 解法 9｜x｜概率y｜状态z\n```"),  # a masked entry line
        ("Text.", "```\n- 状态: 假\n```"),                # a masked anchor line
        ("Text.", "    - 依赖: [q9]"),                   # indented code, read by neither
        ("## 陈述", "```\n## 陈述\n```\n## 陈述"),        # a masked `## ` line
        ("### 解法 1｜first｜概率0.2｜状态未定论", "  ```\n### 解法 1｜first｜概率0.2｜状态未定论\n  ```"),
        ("## 陈述", "### 陈述"),                          # no `## `: header to the end
        ("- 标题: A problem\n", ""),
        ("\n## 陈述\n\nText.\n", "\n"),
        ("- 被依赖: []", "- 被依赖: []\n\n### 解法 2｜above｜概率0.1｜状态未定论"),  # KB127
        ("Text.", "> ### 解法 2｜quoted｜概率0.1｜状态未定论"),  # KB128
        ("Text.", "- ### 解法 2｜listed｜概率0.1｜状态未定论"),  # KB128
        ("Text.", "<!-- never closed\n\n## 证明尝试\nx"),  # KB129
        ("body\n", "body\n\n```\nnever closed\n"),  # KB129
        # KB129: not a fence (a backtick in its info string), then one never closed
        # before a last blank line (markdown-it's path)
        ("body\n", "body\n``` a`b\n```\n### 解法 2｜hidden｜概率0.1｜状态未定论\n\n"),
        ("### 解法 1｜first｜概率0.2｜状态未定论", "### 解法 1 ｜ first ｜ 概率0.2 ｜ 状态未定论"),  # KB122
        ("body\n", "body\n\n### 解法 01｜again｜概率0.3｜状态未定论\n"),  # KB142
    ]
    for a, b in swap:
        assert a in CARD
        out.append(("problem", CARD.replace(a, b, 1)))
    out.append(("problem", "---\nid: q9\n---\n" + CARD))                  # frontmatter
    out.append(("problem", "\ufeff" + CARD))                              # BOM
    out.append(("problem", CARD.replace("\n", "\r\n")))                   # CRLF
    out.append(("problem", CARD + "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n"))
    out.append(("problem", CARD + "\x00"))
    out.append(("problem", "\n\n" + CARD))
    out.append(("problem", CARD.rstrip("\n")))
    out.append(("problem", "# 问题｜only a title\n"))                    # KB126
    out.append(("proposition", CARD.replace("问题｜", "命题｜") + "- 概率: 0.4\n"))
    out.append(("proposition", CARD.replace("问题｜", "命题｜").replace(
        "- 优先级: 3", "- 概率: 0.4\n- 价值/关键性: 2\n- 来源问题: q7")))
    out.append(("proposition", CARD.replace("问题｜", "命题｜").replace("- 优先级: 3", "- 概率: x")))
    out.append(("method", "# 方法｜m\n- 状态: 有效\n- 可信断言: [\"p1\"]\n- 上级体系: [\"m0\"]\n"
                          "- 子方法: []\n- 相关: [\"m3\"]\n\n### 应用 1｜t｜问题 q1\n"))
    method = "# 方法｜m\n- 状态: 经验\n- 可信断言: [\"p1\"]\n\n## 应用记录\n\n"
    out.append(("method", method + "### 应用 1｜2026-11-02 10:00:00｜问题 q1 方向 d1\n"))
    out.append(("method", method + "### 应用 2｜q2\n"))  # KB122
    out.append(("method", method + "### 应用 3 ｜ 2026-11-02 10:00:00 ｜ 问题 q2\n"))  # KB122
    out.append(("verified", "# 已验证｜p1\n- 类型: 命题\n- 结论: 已验证·真\n- 概率: 1\n"))
    out.append(("verified", "# 已验证｜p1\n- 类型: 命题\n- 概率: one\n"))
    return out


def test_light_cards_equal_their_full_parse_or_are_refused() -> None:
    light = 0
    refused = 0
    for fmt, text in _variants():
        if _same_or_none(PATHS[fmt], text.encode("utf-8"), fmt):
            light += 1
        else:
            refused += 1
    assert light >= 6 and refused >= 20  # both ways are exercised


def test_a_masked_heading_or_anchor_line_after_the_header_is_read_light() -> None:
    """A fence in a section holding a `## ` heading or a `- key: value` line (a log
    excerpt, say) leaves the header and the entry lines as they are: read light, equal
    to the full parse. A masked `### ` entry line is still refused."""
    fenced = ["```\n## raw log excerpt\nstep 1  loss 2.5\n```",
              "```\n- 状态: 假\n```",
              "<div>\n## in HTML\n</div>",
              "~~~\n## a\n- 依赖: [\"q9\"]\n~~~\n\n## 证明\n\n```\n## b\n```"]
    for text in fenced:
        card = CARD.replace("Text.", text, 1)
        assert _same_or_none(PATHS["problem"], card.encode("utf-8"), "problem"), text
    entry = CARD.replace("Text.", "```\n### 解法 9｜x｜概率0.1｜状态未定论\n```", 1)
    assert not _same_or_none(PATHS["problem"], entry.encode("utf-8"), "problem")


def test_light_reading_of_the_shared_cases_as_every_card_format() -> None:
    files = sorted(p for p in CASES.rglob("*") if p.is_file() and p.suffix in (".md", ".txt"))
    assert files
    for p in files:
        data = p.read_bytes()
        for fmt, path in PATHS.items():
            _same_or_none(path, data, fmt)


@pytest.mark.parametrize("profile", ["default", "cards"])
def test_light_reading_of_every_card_and_experiment_of_the_generated_corpora(tmp_path, profile) -> None:
    out = generated_corpus(tmp_path / "corpus", profile, 0.1)
    from kb.config import Config
    from kb.parse import classify

    cfg = Config(root=Path("."))
    light: dict[str, int] = {"card": 0, "experiment": 0}
    total = dict.fromkeys(light, 0)
    for p in sorted(out.rglob("*.md")):
        rel = p.relative_to(out).as_posix()
        fmt = classify(rel, cfg)
        if fmt == "experiment":
            total["experiment"] += 1
            light["experiment"] += _exp_same_or_none(rel, p.read_bytes())
        elif fmt in PATHS:
            total["card"] += 1
            light["card"] += _same_or_none(rel, p.read_bytes(), fmt)
    for kind in total:
        assert total[kind] > 100 and light[kind] > total[kind] // 2, kind


# -- experiments (kb.parse.light.light_experiment) ------------------------------------

EXP = """# E0007: H1.2 - Measure the decode cost

**Hypothesis**: H1.2 prefetching hides the decode cost
**Date**: 2024-01-02
**Status**: 已完成

## 实验设计

**目标**: text

## 结果

**数据**: 5613 samples/s
**结论**: 支持 — it does.
"""


def _exp_same_or_none(path: str, data: bytes) -> bool:
    """Assert the light reading of one experiment version; True when it was light."""
    import json

    from kb.config import Config
    from kb.git import object_id
    from kb.index_rows import result_rows
    from kb.parse import parse_file
    from kb.parse.light import light_experiment, light_read

    blob = object_id("blob", data, like="0" * 40)
    got = light_experiment(path, blob, data)
    assert got == light_read(path, blob, data, "experiment")
    if got is None:
        return False
    rows, links, anchors, diags = _full(path, blob, data, "experiment")
    assert diags == [], (path, diags)
    assert got[0] == rows, path
    assert got[1] == links, path
    assert [got[2]] == anchors, path
    _, objs, _, _ = result_rows(path, blob, parse_file(path, data, Config(root=Path(".")), "experiment"))
    assert [got[3]] == [{"date": json.loads(r[-1]).get("date")} for r in objs], path
    return True


def _exp_variants() -> list[str]:
    out = [EXP]
    swap = [
        ("# E0007: H1.2", "# E0007：H1.2"),                 # KB110 in the title
        ("# E0007: H1.2 - Measure", "# Measure"),             # KB130
        ("# E0007: H1.2 - Measure the decode cost\n", ""),   # no title
        ("**Date**: 2024-01-02", "**Date**: 2 Jan 2024"),    # KB131
        ("**Date**: 2024-01-02", "**Date**：2024-01-02"),     # KB110
        ("**Status**: 已完成", "**Status**: 已完成\n**Status**: 进行中"),  # KB112
        ("**结论**: 支持 — it does.", ""),                     # KB132
        ("**结论**: 支持 — it does.", "**结论**: 支持\n**结论**: 推翻"),  # KB112
        ("**结论**: 支持 — it does.", "**结论**: maybe"),       # an unknown word, kept
        ("**Hypothesis**: H1.2 prefetching hides the decode cost\n", ""),  # the title's
        ("# E0007: H1.2 - Measure the decode cost", "# E0007: H1.2"),
        ("# E0007: H1.2 - Measure the decode cost", "# E0007:"),
        ("**Hypothesis**: H1.2 prefetching", "**Hypothesis**: \u3000"),
        ("**Status**: 已完成", "**Status**: done"),
        ("**目标**: text", "```\n# E9: H9 - inside\n```"),  # a fence
        ("**目标**: text", "    **Status**: 进行中"),         # indented code
        ("**目标**: text", "<div>\n**结论**: 推翻\n</div>"),   # HTML
        ("**目标**: text", "```\n**Status**: 进行中\n```"),    # masked: no KB112
        ("**目标**: text", "  ```\n**Status**: 进行中\n  ```"),  # an indented fence
        ("**目标**: text", "```\n**Status**: 进行中"),           # never closed
        ("**目标**: text", "- item\n\n    ```\n    **Status**: x\n    ```"),  # in a list
    ]
    for a, b in swap:
        assert a in EXP
        out.append(EXP.replace(a, b, 1))
    out.append("---\nid: E0007\n---\n" + EXP)
    out.append("\ufeff" + EXP)
    out.append(EXP.replace("\n", "\r\n"))
    out.append(EXP + "<<<<<<< ours\na\n=======\nb\n>>>>>>> theirs\n")
    out.append(EXP + "\x00")
    out.append("\n\n" + EXP)
    out.append(EXP.rstrip("\n"))
    out.append("# E0007: H1.2 - only a title\n")                        # KB126
    out.append("# E0007: H1.2 - t\n\n## 结果\n\n**结论**: 推翻\n")          # a conclusion only
    return out


def test_light_experiments_equal_their_full_parse_or_are_refused() -> None:
    light = refused = 0
    for text in _exp_variants():
        if _exp_same_or_none("experiments/E0007.md", text.encode("utf-8")):
            light += 1
        else:
            refused += 1
    assert light >= 12 and refused >= 12


def test_light_reading_of_the_shared_cases_as_experiments() -> None:
    files = sorted(p for p in CASES.rglob("*") if p.is_file() and p.suffix in (".md", ".txt"))
    assert files
    for p in files:
        _exp_same_or_none("experiments/" + (p.name if p.name.startswith("E") else "E0001.md"),
                          p.read_bytes())
