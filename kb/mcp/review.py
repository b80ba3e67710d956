"""MCP read tools of the review area: ``kb diff`` and ``kb log`` (kb.review)."""

from typing import Optional

from kb.errors import UsageError
from kb.mcp.registry import Registry
from kb.repo import KnowledgeBase

REQUIRES = "kb.review"


def diff(kb: KnowledgeBase, revs: Optional[list[str]] = None, staged: bool = False,
         no_findings: bool = False) -> object:
    from kb.review.diff import research_diff
    from kb.review.sides import parse_spec

    a, b = parse_spec(tuple(revs or ()))
    if staged and a:
        raise UsageError("use either a range or staged")
    source = "range" if a else ("staged" if staged else "worktree")
    return research_diff(kb, source, a, b, findings=not no_findings)


def log(kb: KnowledgeBase, id: str, rev: str = "HEAD") -> object:
    from kb.review.log import object_log

    return object_log(kb, id, rev)


def register(reg: Registry) -> None:
    reg.read("diff", diff, "kb diff: what the research changed — hypotheses, experiments, "
             "cards, entries, verdicts, settled objects, overrides and rule findings — for a "
             "range (revs ['A..B'] or ['A', 'B']), the staged index (staged) or the working tree.")
    reg.read("log", log, "kb log: the history of object `id`, oldest first: every commit that "
             "changed it, kb's operation, who, when and the fields that changed.")
