"""The tree.md merge driver places an added block where its side placed it.

Top-level blocks need not be in ID order: ``kb sync`` renumbers a branch's new
``H1`` to ``H3`` and leaves it where it was, above ``H2``. A block added on one
side (a child, a grandchild, a top-level block) lands in the merged file in its
parent's section, after the same neighbour as in that side's file — never in
another block's section because its ID sorts before a block further up.

Every test runs ``git merge`` in a real repository with kb's registered driver
(``kb init``), adds hypotheses with ``kb hyp add`` and checks the merged file,
``kb verify`` and the next ``kb hyp add``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, write_files

HEAD = "# Hypothesis Tree\n\n"


def _top(n: int, what: str) -> str:
    return f"## H{n}: {what}\nStatus: 待验\nEvidence: (empty)\n"


H1, H2, H3 = _top(1, "Loading is the bottleneck"), _top(2, "Mixed precision slows convergence"), \
    _top(3, "Batch size hides the stall")
#: The order `kb sync` leaves after renumbering a branch's new H1 to H3.
OUT_OF_ORDER = HEAD + "\n".join([H1, H3, H2])


def _kb(tmp_path: Path, tree: str) -> Path:
    """A committed KB (kb init: the drivers registered) whose tree.md is ``tree``, on main."""
    from kb.ops.init import init_kb

    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    init_kb(root)
    write_files(root, {"tree.md": tree})
    assert invoke("dashboard", "--no-commit", cwd=root).code in (0, 1)
    commit_all(root, "base")
    return root


def _add(root: Path, statement: str, parent: str = "") -> None:
    args = ["hyp", "add", statement] + (["--parent", parent] if parent else [])
    res = invoke(*args, cwd=root)
    assert res.code == 0, res.stdout


def _tree(root: Path) -> str:
    return (root / "tree.md").read_text(encoding="utf-8")


def _order(text: str) -> list[str]:
    """The declared IDs in file order."""
    return [ln.split(":")[0].lstrip("#").strip() for ln in text.splitlines()
            if ln.startswith("##") and ": " in ln]


def _misplaced(order: list[str]) -> list[str]:
    """IDs whose block is not in their parent's section (the declaration before
    a child is its parent or one of the parent's descendants)."""
    bad = []
    for n, hid in enumerate(order):
        if "." not in hid:
            continue
        parent = hid.rsplit(".", 1)[0]
        prev = order[n - 1] if n else ""
        if prev != parent and not prev.startswith(parent + "."):
            bad.append(hid)
    return bad


def _merge(root: Path, branch: str) -> str:
    proc = subprocess.run(["git", "merge", "--no-edit", branch], cwd=root, capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert git(root, "status", "--porcelain") == ""
    text = _tree(root)
    assert "<<<<<<<" not in text
    return text


def _verify_clean(root: Path) -> None:
    res = invoke("verify", "--json", cwd=root)
    assert res.code == 0 and res.json()["diagnostics"] == [], res.stdout


def _side_and_main(root: Path, side_adds: list[tuple[str, str]],
                   main_adds: list[tuple[str, str]]) -> None:
    """Branch ``side`` off main and add ``(statement, parent)`` there; back on main, add
    ``main_adds``; end on main."""
    git(root, "checkout", "-qb", "side")
    for statement, parent in side_adds:
        _add(root, statement, parent)
    git(root, "checkout", "-q", "main")
    for statement, parent in main_adds:
        _add(root, statement, parent)


@pytest.mark.parametrize("into", ["main", "side"])
@pytest.mark.parametrize("parent", ["H1", "H3", "H2"])  # first, middle and last block
def test_a_child_added_on_one_side_stays_in_its_parents_section(
        tmp_path: Path, parent: str, into: str) -> None:
    root = _kb(tmp_path, OUT_OF_ORDER)
    _side_and_main(root, [(f"child of {parent}", parent)], [("D", "")])
    if into == "side":
        git(root, "checkout", "-q", "side")
    text = _merge(root, "main" if into == "side" else "side")
    child = f"{parent}.1"
    want = {"H1": ["H1", "H1.1", "H3", "H2", "H4"], "H3": ["H1", "H3", "H3.1", "H2", "H4"],
            "H2": ["H1", "H3", "H2", "H2.1", "H4"]}[parent]
    assert _order(text) == want, text
    assert f"### {child}: child of {parent}\nStatus: 待验\nEvidence: (empty)\nParent: {parent}\n" in text
    _verify_clean(root)
    # The next child of H1 is written at the end of H1's section, after nobody else's block.
    _add(root, "next child of H1", "H1")
    order = _order(_tree(root))
    assert _misplaced(order) == [], order
    assert order[order.index("H1") + 1:][:2] in (["H1.1", "H1.2"], ["H1.1", "H3"])
    _verify_clean(root)


def test_the_reported_case_child_of_the_last_block_with_a_top_level_block_appended(
        tmp_path: Path) -> None:
    """tree.md ## H1 / ## H3 / ## H2; side: a child of H2; main: a new top-level block."""
    root = _kb(tmp_path, OUT_OF_ORDER)
    _side_and_main(root, [("child of H2", "H2")], [("D", "")])
    text = _merge(root, "side")
    assert _order(text) == ["H1", "H3", "H2", "H2.1", "H4"], text
    assert ("## H2: Mixed precision slows convergence\nStatus: 待验\nEvidence: (empty)\n"
            "Children: H2.1\n\n### H2.1: child of H2\n") in text
    _verify_clean(root)
    _add(root, "child of H1", "H1")
    assert _order(_tree(root)) == ["H1", "H1.1", "H3", "H2", "H2.1", "H4"]
    _verify_clean(root)


@pytest.mark.parametrize("into", ["main", "side"])
def test_nested_children_added_on_one_side(tmp_path: Path, into: str) -> None:
    root = _kb(tmp_path, OUT_OF_ORDER)
    _side_and_main(root, [("child of H3", "H3"), ("grandchild of H3", "H3.1"), ("child of H2", "H2"),
                          ("grandchild of H2", "H2.1")], [("D", "")])
    if into == "side":
        git(root, "checkout", "-q", "side")
    text = _merge(root, "main" if into == "side" else "side")
    assert _order(text) == ["H1", "H3", "H3.1", "H3.1.1", "H2", "H2.1", "H2.1.1", "H4"], text
    _verify_clean(root)


def test_a_grandchild_added_on_one_side_a_child_of_the_same_parent_on_the_other(
        tmp_path: Path) -> None:
    """Base: H1 / H3 / H2 / H2.1. Side: H2.1.1 (end of H2.1's section); main: H2.2 (end of
    H2's section, after H2.1). The grandchild goes under H2.1, before H2.2."""
    root = _kb(tmp_path, OUT_OF_ORDER)
    _add(root, "child of H2", "H2")
    _side_and_main(root, [("grandchild of H2", "H2.1")], [("second child of H2", "H2"), ("D", "")])
    text = _merge(root, "side")
    assert _order(text) == ["H1", "H3", "H2", "H2.1", "H2.1.1", "H2.2", "H4"], text
    _verify_clean(root)


@pytest.mark.parametrize("into", ["main", "side"])
def test_both_sides_add_children_to_different_parents(tmp_path: Path, into: str) -> None:
    root = _kb(tmp_path, OUT_OF_ORDER)
    _side_and_main(root, [("child of H2", "H2"), ("child of H1", "H1")],
                   [("child of H3", "H3"), ("D", ""), ("child of D", "H4")])
    if into == "side":
        git(root, "checkout", "-q", "side")
    text = _merge(root, "main" if into == "side" else "side")
    assert _order(text) == ["H1", "H1.1", "H3", "H3.1", "H2", "H2.1", "H4", "H4.1"], text
    assert "Children: H1.1\n" in text and "Children: H2.1\n" in text and "Children: H3.1\n" in text
    _verify_clean(root)


@pytest.mark.parametrize("into", ["main", "side"])
def test_both_sides_add_children_to_the_same_parent_in_id_order(tmp_path: Path, into: str) -> None:
    """A child of H3 (the middle block) on each side, IDs distinct (side's H3.2, as `kb sync`
    leaves a renumbered one): both stay in H3's section, in ID order."""
    root = _kb(tmp_path, OUT_OF_ORDER)
    git(root, "checkout", "-qb", "side")
    child = "### H3.2: side's child of H3\nStatus: 待验\nEvidence: (empty)\nParent: H3\n"
    write_files(root, {"tree.md": HEAD + "\n".join([H1, H3 + "Children: H3.2\n", child, H2])})
    commit_all(root, "side: H3.2")
    git(root, "checkout", "-q", "main")
    _add(root, "main's child of H3", "H3")
    if into == "side":
        git(root, "checkout", "-q", "side")
    text = _merge(root, "main" if into == "side" else "side")
    assert _order(text) == ["H1", "H3", "H3.1", "H3.2", "H2"], text
    assert "Children: H3.1, H3.2\n" in text


@pytest.mark.parametrize("into", ["main", "side"])
def test_blocks_out_of_order_on_one_side_only(tmp_path: Path, into: str) -> None:
    """Base H1 / H2 in order. Main puts a new H3 above H2 (as `kb sync` leaves a renumbered
    block) and adds a child to H1; side adds a child to H2 at the end of the file."""
    root = _kb(tmp_path, HEAD + "\n".join([H1, H2]))
    git(root, "checkout", "-qb", "side")
    _add(root, "child of H2", "H2")
    git(root, "checkout", "-q", "main")
    write_files(root, {"tree.md": HEAD + "\n".join([H1, H3, H2])})
    commit_all(root, "main: H3 above H2")
    _add(root, "child of H1", "H1")
    if into == "side":
        git(root, "checkout", "-q", "side")
    text = _merge(root, "main" if into == "side" else "side")
    assert _order(text) == ["H1", "H1.1", "H3", "H2", "H2.1"], text
    _verify_clean(root)
    _add(root, "child of H3", "H3")
    assert _order(_tree(root)) == ["H1", "H1.1", "H3", "H3.1", "H2", "H2.1"]
