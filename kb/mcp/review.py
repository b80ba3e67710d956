"""MCP review tools: ``kb diff`` (the research diff) and ``kb log`` (one object's history).
Each returns what the CLI prints with ``--json`` and changes nothing in the KB."""

from typing import Optional

from kb.mcp.registry import Registry
from kb.repo import KnowledgeBase


def diff(kb: KnowledgeBase, range: Optional[str] = None, staged: bool = False,
         findings: bool = True, markdown: bool = False) -> object:
    """The research diff of ``range`` (``A..B``), of the staged index (``staged``), or of
    the working tree (neither); ``markdown`` adds the rendered Markdown as ``markdown``.

    Raises UsageError when both ``range`` and ``staged`` are given, GitError for a range git
    does not know.
    """
    from kb.errors import UsageError
    from kb.review.diff import research_diff
    from kb.review.sides import parse_spec

    a, b = parse_spec((range,) if range else ())
    if staged and a:
        raise UsageError("use either a range or staged")
    source = "range" if a else ("staged" if staged else "worktree")
    d = research_diff(kb, source, a, b, findings=findings)
    if markdown:
        from kb.review.render import render

        d["markdown"] = render(d, "markdown", max_chars=65_000)
    return d


def log(kb: KnowledgeBase, id: str, rev: str = "HEAD") -> object:
    """The history of object ``id`` in the commits reachable from ``rev``, oldest first."""
    from kb.review.log import object_log

    return object_log(kb, id, rev)


def register(reg: Registry) -> None:
    """Register this module's tools on ``reg`` (names, descriptions, read/write annotations)."""
    reg.read("diff", diff, "kb diff: what the research changed in `range` (A..B: B against the "
             "merge base), the staged index (`staged`) or the working tree: hypotheses, "
             "experiments, cards, entries, verdicts, Verified cards, overrides, renumberings, rule "
             "findings; `markdown` adds the PR-comment text.")
    reg.read("log", log, "kb log: the history of object `id` (commits, op, author, time, status "
             "and fields over time, verdicts), oldest first, following renumberings.")
