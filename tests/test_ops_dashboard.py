"""DASHBOARD.md: refresh, --check, Next Steps kept verbatim (issue 4)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from conftest import commit_all, git
from kb.errors import RefusedError
from kb.ops import dashboard as dash
from kb.ops import hypotheses as tr
from test_ops_tree import assert_verifies, message, text, unchanged

STEPS = "## Next Steps\n\n- 先跑 E002，再决定 H1.2   \n\n```\n## not a heading (fenced)\n```\n"


def test_refresh_check_and_next_steps_verbatim(tree_kb: Path) -> None:
    root = tree_kb
    tr.add_hypothesis(root, "A")
    p = root / "DASHBOARD.md"
    p.write_text(p.read_text(encoding="utf-8").split("## Next Steps")[0] + STEPS, encoding="utf-8")
    commit_all(root, "write next steps")
    assert dash.is_stale(root).stale is False  # only Next Steps changed: still current
    tr.add_hypothesis(root, "B")
    assert p.read_text(encoding="utf-8").endswith(STEPS)
    # a hand edit of the generated part makes it stale; kb dashboard repairs it
    p.write_text(p.read_text(encoding="utf-8").replace("**Active**: 2", "**Active**: 7"), encoding="utf-8")
    commit_all(root, "bad hand edit")
    check = dash.is_stale(root)
    assert check.stale and "**Active**: 2 hypotheses" in check.expected
    r = dash.refresh_dashboard(root)
    assert r.commit and r.paths == ["DASHBOARD.md"] and "Kb-Op: dashboard" in message(root)
    assert not dash.is_stale(root).stale and p.read_text(encoding="utf-8").endswith(STEPS)
    again = dash.refresh_dashboard(root)
    assert again.commit is None and "up to date" in again.changes[0]
    assert_verifies(root)


def test_crlf_and_bom_of_the_dashboard_are_kept(tree_kb: Path) -> None:
    root = tree_kb
    p = root / "DASHBOARD.md"
    crlf = p.read_bytes().replace(b"\n", b"\r\n")
    p.write_bytes(b"\xef\xbb\xbf" + crlf)
    commit_all(root, "CRLF + BOM dashboard")
    tr.add_hypothesis(root, "A")
    data = p.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf# Research Dashboard\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert b"- H1: A (\xe5\xbe\x85\xe9\xaa\x8c)\r\n" in data
    assert not dash.is_stale(root).stale
    assert_verifies(root)


def test_dirty_dashboard_blocks_the_write(tree_kb: Path) -> None:
    root = tree_kb
    with open(root / "DASHBOARD.md", "a", encoding="utf-8") as f:
        f.write("- a next step being typed\n")
    with unchanged(root):
        with pytest.raises(RefusedError, match="DASHBOARD.md has uncommitted changes"):
            tr.add_hypothesis(root, "A")
    r = tr.add_hypothesis(root, "A", no_commit=True)  # --no-commit writes it, Next Steps kept
    assert r.commit is None
    assert text(root, "DASHBOARD.md").endswith("- a next step being typed\n")


def test_check_on_a_snapshot(tree_kb: Path) -> None:
    from kb.repo import commit_snapshot, open_kb, staged_snapshot

    root = tree_kb
    tr.add_hypothesis(root, "A")
    k = open_kb(root)
    assert not dash.is_stale(k, commit_snapshot(k, "HEAD")).stale
    tr.add_hypothesis(root, "B", no_commit=True)
    assert dash.is_stale(k, commit_snapshot(k, "HEAD")).stale is False
    git(root, "add", "tree.md")  # the tree without its dashboard
    assert dash.is_stale(k, staged_snapshot(k)).stale is True


def _rendered_cases() -> list[tuple[list, list, list | None, str]]:
    from kb.model import Hypothesis
    from kb.ops.dashboard import ExperimentView

    hyps = [Hypothesis(id="H1", path="t", line=1, statement="a <b> \"c\"", status="待验", level=2),
            Hypothesis(id="H1.1", path="t", line=5, statement="```", status="进行中", level=3,
                       parent="H1"),
            Hypothesis(id="H2", path="t", line=9, statement="<!-- x -->", status="被支持", level=2)]
    exps = [ExperimentView("E001", "2026-01-02"), ExperimentView("E002", None)]
    return [([], [], None, "\n"), (hyps, exps, None, "\n"), (hyps, exps, STEPS.splitlines()[1:], "\r\n"),
            (hyps[:1], [], ["", "```", "## fenced", "```"], "\n")]


@pytest.mark.parametrize("case", range(4))
def test_rendered_parse_equals_a_real_parse(case: int, tmp_path: Path) -> None:
    """kb stores the index entry of a dashboard it rendered without parsing it:
    that entry must be what parse_file gives."""
    from conftest import config_for
    from kb.parse import parse_file
    from kb.render.dashboard import render_dashboard

    hyps, exps, steps, nl = _rendered_cases()[case]
    for bom in (False, True):
        text_ = render_dashboard(hyps, exps, steps, "zh", nl)
        data = (b"\xef\xbb\xbf" if bom else b"") + text_.encode("utf-8")
        real = parse_file("DASHBOARD.md", data, config_for(tmp_path), "dashboard")
        assert dash.rendered_parse("DASHBOARD.md", steps, nl, bom) == real


def _mermaid_reference(hypotheses, locale="zh"):
    """The straightforward definition (one full rendering per depth tried)."""
    from kb.render.dashboard import CLASS_STYLES as _STYLE, MAX_CHARS, MAX_EDGES, STATUS_CLASSES as _CLASSES, _label, _node

    first: dict = {}
    for h in hypotheses:  # a duplicated ID is one node: its first declaration
        first.setdefault(h.id, h)
    hypotheses = list(first.values())
    ids = {h.id for h in hypotheses}
    max_depth = max((h.id.count(".") + 1 for h in hypotheses), default=0)
    for depth in range(max_depth, 0, -1):
        shown = [h for h in hypotheses if h.id.count(".") + 1 <= depth]
        lines = ["```mermaid", "graph TD"]
        edges = 0
        for h in shown:
            lines.append(f'  {_node(h.id)}["{_label(h, locale)}"]:::{_CLASSES.get(h.status, "unknown")}')
        for h in shown:
            if h.parent and h.parent in ids and h.parent.count(".") + 1 <= depth:
                lines.append(f"  {_node(h.parent)} --> {_node(h.id)}")
                edges += 1
        lines.extend("  " + s for s in _STYLE)
        lines.append("```")
        if edges <= MAX_EDGES and sum(len(x) + 1 for x in lines) <= MAX_CHARS:
            return lines, len(hypotheses) - len(shown)
    return ["```mermaid", "graph TD", "```"], len(hypotheses)


@pytest.mark.parametrize("n", [0, 1, 30, 400, 900])
def test_mermaid_matches_its_definition(n: int) -> None:
    from kb.ops.tree_edit import Node
    from kb.render.dashboard import mermaid

    rng = random.Random(n)
    nodes: list = []
    tops = 0
    while len(nodes) < n:
        if not nodes or rng.random() < 0.3:
            tops += 1
            hid, parent = f"H{tops}", None
        else:
            parent = rng.choice(nodes).id
            if parent.count(".") >= 5:
                continue
            hid = f"{parent}.{sum(1 for x in nodes if x.parent == parent) + 1}"
            if rng.random() < 0.1:  # a Parent: anchor that disagrees with the ID
                parent = rng.choice(nodes).id
        status = rng.choice(["待验", "进行中", "被支持", "被推翻", "odd"])
        nodes.append(Node(hid, len(nodes), status, hid.count(".") + 2, 0,
                          "statement " * rng.randint(1, 9), parent))
    assert mermaid(nodes) == _mermaid_reference(nodes)


def test_label_and_list_escapes_match_their_definitions() -> None:
    """``mermaid_text`` and ``markdown_text`` (one regex pass, one translate) equal
    their definitions, character by character, over all of Unicode and mixed text."""
    import re

    from kb.render.dashboard import _MERMAID_SAFE, markdown_text, mermaid_text

    def mermaid_def(text: str) -> str:
        return "".join(c if c.isalnum() or c in _MERMAID_SAFE else f"#{ord(c)};" for c in text)

    def markdown_def(text: str) -> str:
        text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return re.sub(r"([\\`*_\[\]~|!#])", r"\\\1", text)

    every = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000)
    assert mermaid_text(every) == mermaid_def(every)
    assert markdown_text(every) == markdown_def(every)
    rng = random.Random(3)
    pool = list("&<>\\`*_[]~|!#;%{}\"' .,:-…()/aZ9中文٣ⅷ") + ["&amp;", "#lt;", "\u0301", "\U0001F600"]
    for _ in range(2000):
        t = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 24)))
        assert (mermaid_text(t), markdown_text(t)) == (mermaid_def(t), markdown_def(t))
