"""Render ``DASHBOARD.md`` (DESIGN.md §2.3, seed hypothesis-tree.md "updateDashboard").

Deterministic: the same tree and experiments give the same bytes on every
machine and every day (no clock is read). The Mermaid map stays within
Mermaid's default limits (500 edges, 50,000 characters) by showing the upper
levels of the tree and saying how many deeper hypotheses it leaves out.
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING, Iterable, Sequence

from kb.vocab import ACTIVE_HYPOTHESIS, CLOSED_HYPOTHESIS, HYPOTHESIS_STATUS

if TYPE_CHECKING:  # annotations only: the renderer reads fields, light records will do
    from kb.model import Experiment, Hypothesis

MAX_EDGES = 500
MAX_CHARS = 50_000
LABEL_CHARS = 60
DEFAULT_NEXT_STEPS = ["", "- (write the next steps here; `kb dashboard` keeps this section as it is)"]

#: Mermaid class of each hypothesis status (the dashboard and the review graph).
STATUS_CLASSES = {
    "待验": "untested", "进行中": "inprogress", "被支持": "supported", "被推翻": "refuted",
}
#: The classDef lines of those classes.
CLASS_STYLES = [
    "classDef untested fill:#f5f5f5,stroke:#999,color:#333",
    "classDef inprogress fill:#fff4cc,stroke:#d4a000,color:#333",
    "classDef supported fill:#d9f2d9,stroke:#2e8b2e,color:#333",
    "classDef refuted fill:#f8d7da,stroke:#c0392b,color:#333",
    "classDef unknown fill:#ffffff,stroke:#333,stroke-dasharray:3 3,color:#333",
]


def _node(hid: str) -> str:
    return "n_" + hid.replace(".", "_").replace("-", "_")


#: Characters a quoted Mermaid label shows as themselves.
_MERMAID_SAFE = frozenset(" .,:-_…()/")
#: One character a Mermaid label does not show as itself: neither alphanumeric
#: (``str.isalnum``, which is what ``\w`` matches besides ``_``) nor in
#: :data:`_MERMAID_SAFE`.
_MERMAID_UNSAFE = re.compile(r"[^\w .,:\-…()/]")

#: Each character :func:`markdown_text` changes, and what it becomes.
_MARKDOWN_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;",
                                   **{c: "\\" + c for c in "\\`*_[]~|!#"}})


def _entity(m: re.Match[str]) -> str:
    return f"#{ord(m.group())};"


def mermaid_text(text: str) -> str:
    """``text`` for a Mermaid label, shown exactly: every character but letters,
    digits and spaces becomes a numeric entity (``#35;``), so nothing in it is
    read as syntax, a directive (``%%{…}%%``), Markdown, HTML or an entity
    (a literal ``#lt;`` stays those four characters)."""
    # One regex pass, not a Python step per character: the dashboard labels
    # thousands of hypotheses on every check of a changed tree (KB240).
    return _MERMAID_UNSAFE.sub(_entity, text)


def markdown_text(text: str) -> str:
    """``text`` for a Markdown list item, shown exactly: HTML is escaped (``&lt;``)
    and Markdown punctuation backslash-escaped, so no link, image, emphasis, code
    or tag a statement holds is rendered as one."""
    return text.translate(_MARKDOWN_ESCAPES)


def _label(h: Hypothesis, locale: str) -> str:
    text = h.statement if len(h.statement) <= LABEL_CHARS else h.statement[: LABEL_CHARS - 1] + "…"
    word = HYPOTHESIS_STATUS.word(h.status, locale)
    return f'{mermaid_text(h.id)}: {mermaid_text(text)}<br/>{mermaid_text(word)}'


def mermaid(hypotheses: Sequence[Hypothesis], locale: str = "zh") -> tuple[list[str], int]:
    """Mermaid lines for the tree and the number of hypotheses left out.

    Shows the deepest levels that fit: every hypothesis down to depth D and
    every edge whose two ends are shown, for the largest D within the limits.
    The size only grows with D, so depths are tried from the top down to the
    first that does not fit, and only the lines of the depths tried are built.
    """
    seen: set[str] = set()
    # A duplicated ID is one node (the first declaration): Mermaid would draw two.
    hypotheses = [h for h in hypotheses if not (h.id in seen or seen.add(h.id))]  # type: ignore[func-returns-value]
    ids = {h.id for h in hypotheses}
    depth_of = [h.id.count(".") + 1 for h in hypotheses]
    max_depth = max(depth_of, default=0)
    nodes_at: list[list[int]] = [[] for _ in range(max_depth + 1)]
    edges_at: list[list[int]] = [[] for _ in range(max_depth + 1)]
    edge_depth: dict[int, int] = {}
    for i, h in enumerate(hypotheses):
        nodes_at[depth_of[i]].append(i)
        if h.parent and h.parent in ids:
            edge_depth[i] = max(depth_of[i], h.parent.count(".") + 1)
            if edge_depth[i] <= max_depth:
                edges_at[edge_depth[i]].append(i)
    styles = ["  " + s for s in CLASS_STYLES]
    chars = sum(len(x) + 1 for x in ["```mermaid", "graph TD", *styles, "```"])
    n_edges = 0
    node_line: dict[int, str] = {}
    edge_line: dict[int, str] = {}
    best = 0
    for depth in range(1, max_depth + 1):
        if n_edges + len(edges_at[depth]) > MAX_EDGES:
            break  # too many edges whatever the labels: no line of this depth is built
        for i in nodes_at[depth]:
            h = hypotheses[i]
            node_line[i] = f'  {_node(h.id)}["{_label(h, locale)}"]:::{STATUS_CLASSES.get(h.status, "unknown")}'
            chars += len(node_line[i]) + 1
        for i in edges_at[depth]:
            h = hypotheses[i]
            edge_line[i] = f"  {_node(h.parent)} --> {_node(h.id)}"  # type: ignore[arg-type]
            chars += len(edge_line[i]) + 1
            n_edges += 1
        if n_edges > MAX_EDGES or chars > MAX_CHARS:
            break
        best = depth
    if not best:
        return ["```mermaid", "graph TD", "```"], len(hypotheses)
    lines = ["```mermaid", "graph TD"]
    lines += [node_line[i] for i in range(len(hypotheses)) if depth_of[i] <= best]
    lines += [edge_line[i] for i in range(len(hypotheses))
              if i in edge_depth and edge_depth[i] <= best]
    lines += styles
    lines.append("```")
    return lines, sum(1 for d in depth_of if d > best)


def render_dashboard(
    hypotheses: Iterable[Hypothesis],
    experiments: Iterable[Experiment],
    next_steps: list[str] | None = None,
    locale: str = "zh",
    newline: str = "\n",
) -> str:
    """The full text of DASHBOARD.md.

    ``next_steps`` are the lines of the existing ``## Next Steps`` section
    (kept verbatim); None writes the default placeholder.
    """
    hyps = list(hypotheses)
    active = [h for h in hyps if h.status in ACTIVE_HYPOTHESIS]
    closed = [h for h in hyps if h.status in CLOSED_HYPOTHESIS]
    dates = sorted(e.date for e in experiments if e.date)
    noun = "hypothesis" if len(active) == 1 else "hypotheses"
    head = f"**Active**: {len(active)} {noun} | **Closed**: {len(closed)}"
    if dates:
        head += f" | **Last**: {dates[-1]}"
    out = [
        "# Research Dashboard",
        "",
        "<!-- Generated by `kb dashboard` from the hypothesis tree and the experiments. "
        "Edit only the Next Steps section; kb keeps it verbatim. -->",
        "",
        head,
        "",
        "## Active Hypotheses",
        "",
    ]
    if active:
        out += [f"- {h.id}: {markdown_text(h.statement)} ({HYPOTHESIS_STATUS.word(h.status, locale)})"
                for h in active]
    else:
        out.append("(none)")
    out += ["", "## Hypothesis Map", ""]
    if hyps:
        lines, left_out = mermaid(hyps, locale)
        out += lines
        if left_out:
            out += ["", f"{left_out} deeper hypotheses are not shown (Mermaid's size limits); "
                    "see tree.md."]
    else:
        out.append("(no hypotheses yet)")
    out += ["", "## Next Steps"]
    steps = DEFAULT_NEXT_STEPS if next_steps is None else next_steps
    out += steps
    text = "\n".join(out)
    if not text.endswith("\n"):
        text += "\n"
    return text.replace("\n", newline) if newline != "\n" else text
