"""kb.json_input: JSON from outside kb nested past the decoder's depth is malformed
input (a JSONDecodeError), never a RecursionError; and every ``json.loads`` of kb's
source reads either through it, inside a ``try`` that handles RecursionError itself, or
JSON kb wrote (listed below, with why)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from kb.json_input import loads

ROOT = Path(__file__).resolve().parent.parent

#: ``json.loads`` calls that read JSON kb itself wrote (``module:function``): the index's
#: rows (an object's fields, a stored result or fix), its own results and journals
#: written a moment before. Their nesting is kb's own (a card's frontmatter is read at
#: most 64 levels deep: kb.parse.frontmatter).
OWN_JSON = {
    # the index's rows: an object's fields, a file's or a parse's meta, stored results and fixes
    "kb/index.py:fields", "kb/index.py:file_meta", "kb/index.py:parse_meta",
    "kb/checks/dashboard_rule.py:render_expected", "kb/checks/diagnostics.py:fix_of",
    "kb/checks/facts.py:record_of", "kb/checks/facts.py:evidence", "kb/checks/facts.py:anchor_line",
    "kb/checks/facts.py:records", "kb/checks/file_results.py:rule_rows", "kb/checks/judge.py:_items",
    "kb/checks/record_rules.py:_read_git", "kb/checks/results.py:_load_results",
    "kb/checks/results.py:_refs", "kb/review/log.py:_find", "kb/review/sides.py:_objects",
    "kb/review/sides.py:_fill", "kb/review/sides.py:new_objects_by_id", "kb/web/pages.py:_list",
    # JSON kb made a moment before: a model's own to_json, the trail's verdict and the
    # operations it just serialised, the MCP SDK's rendering of a tool's result
    "kb/model.py:to_dict", "kb/model.py:from_json", "kb/checks/trail_rules.py:stale_trail",
    "kb/trail/ops.py:record", "kb/mcp/registry.py:to_data", "kb/mcp/registry.py:_result",
}


def _json_loads_calls(path: Path) -> list[tuple[str, int, bool]]:
    """``(function, line, guarded)`` of each ``json.loads``/``json.load`` call in ``path``;
    guarded: inside a ``try`` with a handler for RecursionError."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[str, int, bool]] = []

    def walk(node: ast.AST, func: str, guarded: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "json" \
                and node.func.attr in ("loads", "load"):
            out.append((func, node.lineno, guarded))
        if isinstance(node, ast.Try):
            names = {n.id for h in node.handlers for n in ast.walk(h.type) if isinstance(n, ast.Name)} \
                if all(h.type is not None for h in node.handlers) else {"BaseException"}
            inner = guarded or bool(names & {"RecursionError", "Exception", "BaseException"})
            for child in node.body:
                walk(child, func, inner)
            for part in (*node.handlers, *node.orelse, *node.finalbody):
                walk(part, func, guarded)
            return
        for child in ast.iter_child_nodes(node):
            walk(child, func, guarded)

    walk(tree, "<module>", False)
    return out


def test_every_json_loads_of_outside_input_goes_through_json_input():
    """A json.loads outside this module's reach would end a command with exit 3 on
    ``[[[[…`` a thousand deep (a trail log line, a literature API's body, a file named on
    the command line, a gen sandbox file): each reads through kb.json_input.loads, or
    handles RecursionError where it is, or reads JSON kb wrote (OWN_JSON)."""
    bare = []
    seen_own = set()
    for path in sorted([*(ROOT / "kb").rglob("*.py"), *(ROOT / "cli").rglob("*.py")]):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "kb/json_input.py":
            continue
        for func, line, guarded in _json_loads_calls(path):
            where = f"{rel}:{func}"
            if where in OWN_JSON:
                seen_own.add(where)
            elif not guarded:
                bare.append(f"{rel}:{line} ({func})")
    assert bare == [], "json.loads of input kb did not write: use kb.json_input.loads"
    assert seen_own == OWN_JSON  # a listed place that is gone is taken off the list


@pytest.mark.parametrize("data", ["[" * 5000 + "]" * 5000, b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}"])
def test_deep_json_is_a_decode_error(data):
    with pytest.raises(json.JSONDecodeError) as got:
        loads(data)
    assert isinstance(got.value, ValueError) and got.value.msg == "nested too deeply"


def test_json_within_the_depth_reads_as_json_loads_reads_it():
    text = '{"a": [[1, 2.5, null]], "b": "\\u00e9"}'
    assert loads(text) == json.loads(text) == loads(text.encode("utf-8"))
    with pytest.raises(json.JSONDecodeError):
        loads("{torn")
    with pytest.raises(UnicodeDecodeError):
        loads(b'"\xff"')


@pytest.mark.parametrize("data", ['{"t": "a\\ud800b"}', b'["\\udc00"]', '"\\ud83d"'])
def test_half_a_surrogate_pair_is_a_decode_error(data):
    """`"a\\ud800b"` decoded into a string no UTF-8 encoder takes: kb failed later, where it
    wrote or printed it (exit 3). A pair is its character, and stays accepted."""
    with pytest.raises(json.JSONDecodeError, match="lone surrogate"):
        loads(data)
    assert loads('"\\ud83d\\ude00"') == "\U0001F600"
