"""The layers of docs/ARCHITECTURE.md, checked over the source with ``ast``.

Every import counts, at any depth (inside functions and ``if TYPE_CHECKING``
blocks too): an import hidden in a function still ties two modules together.
Three rules: no import cycle among ``kb`` modules, no import running upward
through the layers, no private name (``_x``) imported from another module.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KB = ROOT / "kb"

#: The layers of docs/ARCHITECTURE.md, bottom first: a module imports only from
#: its own layer or below. A name holds its submodules; the longest name wins
#: (``kb.merge.collide`` sits above ``kb.merge``).
LAYERS: list[tuple[str, ...]] = [
    # values, words, errors, pure research rules, the literature client
    ("kb", "kb.model", "kb.vocab", "kb.errors", "kb.clock", "kb.numbers", "kb.chars", "kb.durations", "kb.resources",
     "kb.json_input", "kb.fileio",
     "kb.research",
     "kb.lit"),
    # text -> objects + diagnostics, objects -> text; kb.toml values; the git CLI; forked workers;
    # where the exploration graph shows (names only: kb's merge drivers name TRAIL.md)
    ("kb.text", "kb.parse", "kb.render", "kb.config", "kb.git", "kb.parallel", "kb.merge.markers",
     "kb.trail.files"),
    # KB discovery and snapshots, lock refs, merge drivers
    ("kb.repo", "kb.digests", "kb.locks", "kb.lock_names", "kb.remote_locks", "kb.merge"),
    # derived caches: the index (SQLite, its queries, verify's results) and the
    # exploration graph's log, replay and TRAIL.md text (the rules read both)
    ("kb.index", "kb.index_rows", "kb.index_facts", "kb.index_results", "kb.trail.model", "kb.trail.log",
     "kb.trail.digest", "kb.trail.replay", "kb.trail.render"),
    # the rules (and the ID- and entry-collision finders that kb sync and kb verify share);
    # what git runs as kb's merge drivers (TRAIL.md's replays the merged exploration log)
    ("kb.checks", "kb.merge.collide", "kb.merge.entry_collide", "kb.merge.renumber", "kb.merge.run"),
    # write use cases (kb sync's reading of git's output beside it), reads, read models
    ("kb.ops", "kb.ops.sync_output", "kb.api", "kb.views"),
    # areas built on the pipeline
    ("kb.review", "kb.trail", "kb.gen", "kb.prime", "kb.contract", "kb.outputs", "kb.hooks",
     "kb.lit.context"),
    # long-running front ends
    ("kb.mcp", "kb.web"),
]

# Not yet fixed by this change: each entry goes when the change that fixes it
# lands (the lead empties these sets at merge time; a stale entry fails the
# tests below). Pairs are (importer, imported) modules; private names are
# (importer, imported module, name).
ALLOWED_CYCLE_EDGES: set[tuple[str, str]] = set()
ALLOWED_UPWARD: set[tuple[str, str]] = set()
ALLOWED_PRIVATE: set[tuple[str, str, str]] = set()
ALLOWED_CLI_PRIVATE: set[str] = set()


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for p in sorted(KB.rglob("*.py")):
        parts = list(p.relative_to(ROOT).with_suffix("").parts)
        pkg = parts[-1] == "__init__"
        if pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (p, pkg)
    return out


MODULES = _modules()


def _imports() -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """``(module -> kb modules it imports, private names imported across modules)``."""
    edges: dict[str, set[str]] = {}
    private: list[tuple[str, str, str]] = []
    for mod, (path, pkg) in MODULES.items():
        out = edges.setdefault(mod, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "kb" or a.name.startswith("kb."):
                        out.add(a.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if pkg else mod.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target != "kb" and not target.startswith("kb."):
                    continue
                for a in node.names:
                    if f"{target}.{a.name}" in MODULES:
                        out.add(f"{target}.{a.name}")
                        continue
                    out.add(target)
                    if a.name.startswith("_") and not a.name.startswith("__") and target != mod:
                        private.append((mod, target, a.name))
        out.discard(mod)
    return edges, private


EDGES, PRIVATE = _imports()


def _layer(mod: str) -> int:
    best, best_len = -1, -1
    for i, names in enumerate(LAYERS):
        for name in names:
            if (mod == name or mod.startswith(name + ".")) and len(name) > best_len \
                    and not (name == "kb" and mod != "kb"):
                best, best_len = i, len(name)
    return best


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (the library's own
    Tarjan, over the edges between known modules), each sorted."""
    from kb.research.dependencies import strongly_connected

    graph = {m: sorted(t for t in ts if t in edges) for m, ts in sorted(edges.items())}
    return [sorted(c) for c in strongly_connected(graph) if len(c) > 1]


def test_every_module_has_a_layer():
    missing = sorted(m for m in MODULES if _layer(m) < 0)
    assert missing == [], f"modules outside every layer of docs/ARCHITECTURE.md: {missing}"


def test_no_import_cycle():
    edges = {m: {t for t in ts if (m, t) not in ALLOWED_CYCLE_EDGES} for m, ts in EDGES.items()}
    assert _cycles(edges) == []


def test_the_allowed_cycle_edges_still_exist():
    stale = sorted(e for e in ALLOWED_CYCLE_EDGES if e[1] not in EDGES.get(e[0], ()))
    assert stale == [], f"fixed: remove from ALLOWED_CYCLE_EDGES: {stale}"


def test_no_upward_import():
    up = sorted((m, t) for m, ts in EDGES.items() for t in ts
                if t in MODULES and _layer(t) > _layer(m) and (m, t) not in ALLOWED_UPWARD)
    assert up == [], "imports running upward through the layers of docs/ARCHITECTURE.md"
    stale = sorted(e for e in ALLOWED_UPWARD if e[1] not in EDGES.get(e[0], ()))
    assert stale == [], f"fixed: remove from ALLOWED_UPWARD: {stale}"


def test_no_private_name_imported_across_modules():
    found = sorted(set(PRIVATE) - ALLOWED_PRIVATE)
    assert found == [], "private names imported from another module (make them public)"
    stale = sorted(ALLOWED_PRIVATE - set(PRIVATE))
    assert stale == [], f"fixed: remove from ALLOWED_PRIVATE: {stale}"


def test_the_checker_sees_what_it_checks():
    # An import inside a method counts (Transaction.__enter__ imports kb.locks there).
    src = (KB / "ops" / "transaction.py").read_text(encoding="utf-8")
    assert "\n            from kb.locks import validate_owner" in src
    assert "kb.locks" in EDGES["kb.ops.transaction"]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _layer("kb.ops.transaction") > _layer("kb.index") > _layer("kb.parse.card")
    assert _layer("kb.merge.collide") > _layer("kb.merge.tree")


def test_the_cli_imports_no_private_name():
    found = []
    for path in sorted((ROOT / "cli").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("kb", "kb_cli"):
                found += [f"{path.name}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert sorted(set(found) - ALLOWED_CLI_PRIVATE) == []
    assert sorted(ALLOWED_CLI_PRIVATE - set(found)) == [], "fixed: empty ALLOWED_CLI_PRIVATE"


def test_no_merge_conflict_markers_in_the_source_or_docs():
    """A merge resolved by `git add` with its markers left in would ship them."""
    found = []
    for base in ("kb", "cli", "hooks", "templates", "docs", "benchmarks", "tests"):
        for p in sorted((ROOT / base).rglob("*")):
            if not p.is_file() or p.suffix not in (".py", ".md", ".toml", ".yaml", ".yml", ".sh", ".html"):
                continue
            if "cases" in p.relative_to(ROOT).parts:  # the shared inputs hold markers on purpose
                continue
            for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if line.startswith(("<<<<<<< ", ">>>>>>> ")) and len(line) > 8:
                    found.append(f"{p.relative_to(ROOT)}:{i}")
    assert found == [], found
