"""The trail modules import downward only (issue #10): digest is below replay (no cycle
digest ⇄ replay, not even through an import inside a function or under TYPE_CHECKING)."""

from __future__ import annotations

import ast
from pathlib import Path

import kb.trail

TRAIL = Path(kb.trail.__file__).resolve().parent


def trail_imports(path: Path) -> set[str]:
    """Every ``kb.trail.*`` module ``path`` imports, at any depth of its code."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "kb.trail":
                out.update(f"kb.trail.{a.name}" for a in node.names)
            elif node.module.startswith("kb.trail."):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("kb.trail."))
    return out


def test_digest_and_replay_do_not_import_each_other_both_ways() -> None:
    graph = {f"kb.trail.{p.stem}": trail_imports(p) for p in TRAIL.glob("*.py")}
    assert "kb.trail.digest" in graph["kb.trail.replay"]  # replay uses the template
    assert graph["kb.trail.digest"] <= {"kb.trail.model"}

    def reaches(a: str, b: str) -> bool:
        todo, seen = [a], set()
        while todo:  # bounded: each module is visited once
            m = todo.pop()
            if m == b:
                return True
            if m not in seen:
                seen.add(m)
                todo.extend(graph.get(m, ()))
        return False

    assert not reaches("kb.trail.digest", "kb.trail.replay")
    assert not reaches("kb.trail.model", "kb.trail.replay")


def test_no_import_cycle_among_the_trail_modules() -> None:
    graph = {f"kb.trail.{p.stem}": trail_imports(p) for p in TRAIL.glob("*.py")}
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:  # depth ≤ the number of modules
        if state.get(m) == 2:
            return
        assert state.get(m) != 1, "import cycle: " + " -> ".join(stack + [m])
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            visit(n, stack + [m])
        state[m] = 2
        order.append(m)

    for m in sorted(graph):
        visit(m, [])
    assert order.index("kb.trail.digest") < order.index("kb.trail.replay")
