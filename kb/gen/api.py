"""The loop and the literature client as plain functions, for MCP tools and scripts.

Each takes JSON-ready arguments and returns JSON-ready data (errors are
:class:`kb.errors.KbError` subclasses with ``exit_code``; a literature
failure is a :class:`kb.lit.errors.LitError` carrying ``fallback``).
:data:`TOOLS` maps a tool name to its function; the docstrings are the tool
descriptions.
"""

from __future__ import annotations

from typing import Any, Callable


def gen_init(question: str, sandbox: str | None = None, gen_n: int = 6, keep_threshold: float = 65,
             eval_scale: str = "medium", budget: int = 6, patience: int = 2) -> dict[str, Any]:
    """Start a hypothesis-generation run in ``sandbox`` (default ./sandbox); returns its bindings."""
    from kb.gen.loop import init_run

    return init_run(sandbox, question, gen_n=gen_n, keep_threshold=keep_threshold,
                    eval_scale=eval_scale, budget=budget, patience=patience)


def gen_status(sandbox: str | None = None) -> dict[str, Any]:
    """The run's round, next step, pool, gaps, dry counter and stop reason."""
    from kb.gen.loop import status

    return status(sandbox)


def gen_brief(role: str, sandbox: str | None = None) -> dict[str, Any]:
    """What the next role (generator, litscout, judge, ranker) needs, with its output schema."""
    from kb.gen.brief import brief
    from kb.gen.loop import open_run

    return brief(open_run(sandbox), role)


def gen_submit(kind: str, data: Any = None, file: str | None = None, reason: str | None = None,
               sandbox: str | None = None) -> dict[str, Any]:
    """Submit the round's candidates, litscout or verdict (``data`` object or ``file`` path);
    kb validates it, computes totals and gates, and advances the loop."""
    from kb.gen.loop import submit

    return submit(sandbox, kind, file, reason, data=data)


def gen_report(sandbox: str | None = None) -> dict[str, Any]:
    """Write the ranked report (hypotheses.md in the sandbox); returns its path and order."""
    from kb.gen.loop import open_run
    from kb.gen.report import write_report

    return write_report(open_run(sandbox))


def gen_schema(kind: str | None = None) -> dict[str, Any]:
    """The JSON Schema of candidates, litscout or verdict (all three without ``kind``).
    Raises :class:`kb.errors.UsageError` for another ``kind``."""
    from kb.errors import UsageError
    from kb.gen.models import schemas

    all_ = schemas()
    if kind and kind not in all_:
        raise UsageError(f"no such schema kind: use one of {', '.join(sorted(all_))}")
    return all_[kind] if kind else all_


def gen_rank(matches: list[dict[str, Any]] | None = None, sandbox: str | None = None) -> dict[str, Any]:
    """Apply pairwise comparisons ``[{a, b, winner, rationale}]`` (Elo 1200, K 32); without
    matches return the standings."""
    from kb.gen.loop import open_run
    from kb.gen.rank import standings, submit_matches

    sb = open_run(sandbox)
    if not matches:
        return {"applied": 0, "ratings": standings(sb)}
    return submit_matches(sb, data={"matches": matches})


def gen_adopt(hid: str, parent: str | None = None, kb: str | None = None,
              sandbox: str | None = None) -> dict[str, Any]:
    """Add kept hypothesis ``hid`` to tree.md (one commit, provenance in prose and trailers)."""
    from kb.gen.adopt import adopt
    from kb.gen.loop import open_run

    return adopt(open_run(sandbox), hid, kb, parent).to_json()


def _lit(sandbox: str | None, cache_dir: str | None, call: Callable[[Any], Any]) -> dict[str, Any]:
    from kb.lit.context import open_client

    client, ctx = open_client(cache_dir, sandbox)
    result = call(client)
    return {"result": result, "requests": client.requests, **ctx, "notes": client.notes}


def lit_search(query: str, limit: int = 12, year: str | None = None, min_citations: int = 0,
               open_access: bool = False, source: str = "both", sort: str = "relevance",
               sandbox: str | None = None, cache_dir: str | None = None) -> dict[str, Any]:
    """Search papers on Semantic Scholar and/or OpenAlex (de-duplicated, cached)."""
    return _lit(sandbox, cache_dir,
                lambda c: c.search(query, limit, year, min_citations, open_access, source, sort))


def lit_snippet(query: str, limit: int = 10, sandbox: str | None = None,
                cache_dir: str | None = None) -> dict[str, Any]:
    """Search verbatim passages of papers (Semantic Scholar snippet search)."""
    return _lit(sandbox, cache_dir, lambda c: c.snippet(query, limit))


def lit_cite(paper_id: str, direction: str = "references", limit: int = 15, influential: bool = False,
             sandbox: str | None = None, cache_dir: str | None = None) -> dict[str, Any]:
    """References, citations or recommendations of a Semantic Scholar paper."""
    return _lit(sandbox, cache_dir, lambda c: c.cite(paper_id, direction, limit, influential))


def lit_paper(arxiv_id: str, sandbox: str | None = None, cache_dir: str | None = None) -> dict[str, Any]:
    """arXiv metadata (title, abstract, authors) of one arXiv id."""
    return _lit(sandbox, cache_dir, lambda c: c.paper(arxiv_id))


def lit_keys() -> dict[str, Any]:
    """Which literature API keys are set (presence only, never values)."""
    from kb.lit.keys import key_presence

    return {"keys": key_presence()}


TOOLS: dict[str, Callable[..., dict[str, Any]]] = {
    f.__name__: f for f in (gen_init, gen_status, gen_brief, gen_submit, gen_report, gen_schema,
                            gen_rank, gen_adopt, lit_search, lit_snippet, lit_cite, lit_paper, lit_keys)
}
