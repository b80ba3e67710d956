"""Parse diagnostics quote the user's text as written, never with ``repr``.

``repr`` shows a full-width space (U+3000) as ``'\\u3000'`` and wraps a text holding a
``'`` in double quotes, so the message no longer shows what the file or kb.toml says.
KB116 quotes the separators of ``[kb] heading_separators`` as KB309 does (in backticks,
as kb.toml writes them) and each look-alike heading in single quotes; every other parse
diagnostic (kb/parse/) quotes in single quotes, as written (:func:`kb.numbers.quoted`).
"""

from __future__ import annotations

from pathlib import Path

from conftest import config_for, invoke
from kb.numbers import quoted
from kb.parse import parse_file

CFG = config_for(Path("/kb"))


def _one(text: str, path: str, code: str, cfg=CFG) -> str:
    found = [d for d in parse_file(path, text.encode("utf-8"), cfg).diagnostics if d.code == code]
    assert len(found) == 1, [d.format() for d in parse_file(path, text.encode("utf-8"), cfg).diagnostics]
    return found[0].message


def test_kb116_quotes_separators_and_headings_as_written() -> None:
    cfg = config_for(Path("/kb"), {"kb": {"heading_separators": ["'", "\u3000|"]}})
    msg = _one("# T\n\n### K1. first\n\n### K2： second\n", "tree.md", "KB116", cfg)
    assert "with separator `'` or `\u3000|` ('K1.' at line 3, 'K2：' at line 5)" in msg, msg
    assert "\\u3000" not in msg and '"' not in msg, msg


def test_kb116_in_the_cli_says_the_separator_as_kb_toml_writes_it(make_kb) -> None:
    root = make_kb({"tree.md": "# T\n\n## K1. kay\nStatus: 待验\n"},
                   config="[kb]\nheading_separators = [\"\u3000:\", \"'\"]\n", commit=True)
    r = invoke("verify", "--json", cwd=root)
    found = [d["message"] for d in r.json()["diagnostics"] if d["code"] == "KB116"]
    assert found and "separator `\u3000:` or `'` ('K1.' at line 3)" in found[0], found


def test_other_parse_diagnostics_quote_as_written() -> None:
    # KB131: an experiment's date holding a quote
    exp = "# E001: H1 - try\n\n**Hypothesis**: H1\n**Status**: 进行中\n**Date**: it's today\n"
    assert "not 'it's today'" in _one(exp, "experiments/E001.md", "KB131")
    # KB124 (kb.numbers.quoted): a card's probability holding a full-width space
    card = ("# 命题｜p\n- 标题: p\n- ID: p1\n- 类型: 命题\n- 状态: 未定论\n- 概率: 0\u30005\n"
            "- 优先级: 1\n- 依赖: []\n- 价值/关键性: 0.5\n\n## 陈述\nx\n")
    assert "not '0\u30005'" in _one(card, "Propos/alg/p1.md", "KB124")
    # KB121: a list anchor that cannot be read, holding a quote
    bad = card.replace("- 依赖: []", "- 依赖: [\"p2\", it's]")
    assert "is not a JSON array of IDs: '[\"p2\", it's]'" in _one(bad, "Propos/alg/p1.md", "KB121")
    # KB111: a bold anchor, quoted with its fix as written
    tree = "# T\n\n## H1: x\nStatus: 待验\n**Note**: it's\n"
    msg = _one(tree, "tree.md", "KB111")
    assert "bold anchor '**Note**: it's'" in msg and "write 'Note: it's'" in msg, msg
    # KB113: a heading with no space after '##', its fix as written
    msg = _one("# T\n\n##H1: it's\nStatus: 待验\n", "tree.md", "KB113")
    assert msg.endswith("write '## H1: it's'"), msg


def test_quoted_quotes_as_written() -> None:
    assert quoted("it's") == "'it's'" and quoted("a\u3000b") == "'a\u3000b'"
    assert quoted("\u3000" * 30) == "'" + "\u3000" * 20 + "…' (30 characters)"
