"""MCP tools of the hypothesis-generation loop and the literature client (``kb gen``, ``kb lit``).

Each wraps one function of :mod:`kb.gen.api` and returns the CLI's ``--json``
object. ``sandbox`` is the run's folder, relative to the KB's folder
(default ``sandbox``); the literature tools record their requests in that
run's current round when it exists, else they cache in ``.kb/lit-cache``.
"""

from pathlib import Path
from typing import Any, Literal, Optional

from kb.mcp.registry import Registry
from kb.repo import KnowledgeBase

# The fixed choices of the CLI's options (click.Choice there), declared as enums in the
# input schemas: an agent sees the valid words, and a wrong one is refused as a usage error
# naming them before the tool runs (gen_schema indexed a dict with it: a KeyError, kind
# internal). tests/test_mcp_enums.py checks each against the library's own list.
#: A gen submission's kind (:data:`kb.gen.models.KINDS`).
GenKind = Literal["candidates", "litscout", "verdict"]
#: How deeply a run evaluates (:data:`kb.gen.store.EVAL_SCALES`).
EvalScale = Literal["low", "medium", "high"]
#: Where lit_search asks (:data:`kb.lit.client.SOURCES`).
LitSource = Literal["s2", "openalex", "both"]
#: How lit_search orders (:data:`kb.lit.client.SORTS`).
LitSort = Literal["relevance", "citations", "date"]
#: What lit_cite lists (:data:`kb.lit.client.DIRECTIONS`).
LitDirection = Literal["references", "citations", "recommend"]


def _sandbox(kb: KnowledgeBase, sandbox: Optional[str]) -> str:
    """The run's folder: ``sandbox`` (default ``sandbox``) inside the KB's folder. Raises
    UsageError for an absolute path, a ``..`` segment, a backslash or a control character,
    the KB's folder itself, a folder in ``.git``, and a path a symlink leads out of the KB:
    over MCP an agent names a run, not a place on the machine (``../../escape`` wrote a
    run's files outside the KB; every other MCP path is confined as well). The CLI's
    ``--sandbox`` is the user's own choice of folder (a run refuses a folder with files in
    it or inside ``.git`` either way: :func:`kb.gen.loop.init_run`)."""
    import os
    from pathlib import PurePosixPath

    from kb.config import outside_reason
    from kb.errors import UsageError

    name = sandbox if sandbox is not None else "sandbox"
    if (outside_reason(name) or "\\" in name or any(ord(c) < 32 or ord(c) == 127 for c in name)
            or set(PurePosixPath(name).parts) <= {"."}):
        raise UsageError(f"sandbox {name[:80]!r}: name a folder inside the KB (a relative path "
                         "without '..', e.g. 'sandbox' or 'runs/q7')")
    full = kb.root / name
    root = os.path.realpath(kb.root)
    real = os.path.realpath(full)
    if not real.startswith(root + os.sep):
        raise UsageError(f"sandbox {name[:80]!r} leads outside the KB (to {real}, through a "
                         "symlink): name a folder inside it")
    return str(full)


def _lit_where(kb: KnowledgeBase, sandbox: Optional[str]) -> dict[str, Optional[str]]:
    """A run's folder when it holds a run, else the KB's own literature cache."""
    from kb.gen.store import RUN_FILE

    folder = Path(_sandbox(kb, sandbox))
    if (folder / RUN_FILE).is_file():
        return {"sandbox": str(folder), "cache_dir": None}
    return {"sandbox": None, "cache_dir": str(kb.top / ".kb" / "lit-cache")}


def gen_init(kb: KnowledgeBase, question: str, sandbox: Optional[str] = None, gen_n: int = 6,
             keep_threshold: float = 65, eval_scale: EvalScale = "medium", budget: int = 6,
             patience: int = 2) -> Any:
    """Tool ``gen_init``: start a generation run in ``sandbox`` (:func:`kb.gen.api.gen_init`).

    Returns the run (``question``, ``gen_n``, ``keep_threshold`` 0–100, …, ``sandbox``). Raises
    UsageError (a bad number), GenConflict (a run exists) or EnvironmentError_ (cannot write).
    """
    from kb.gen import api

    return api.gen_init(question, _sandbox(kb, sandbox), gen_n, keep_threshold, eval_scale, budget,
                        patience)


def gen_status(kb: KnowledgeBase, sandbox: Optional[str] = None) -> Any:
    """Tool ``gen_status``: round, step, pool, gaps and the dry counter of the run.

    Raises UsageError (no run there) or GenError (damaged run files).
    """
    from kb.gen import api

    return api.gen_status(_sandbox(kb, sandbox))


def gen_brief(kb: KnowledgeBase, role: str, sandbox: Optional[str] = None) -> Any:
    """Tool ``gen_brief``: what ``role`` (generator, litscout, judge, ranker) needs now.

    Raises UsageError for an unknown role, GenConflict when another step is due.
    """
    from kb.gen import api

    return api.gen_brief(role, _sandbox(kb, sandbox))


def gen_submit(kb: KnowledgeBase, kind: GenKind, data: dict[str, Any], reason: Optional[str] = None,
               sandbox: Optional[str] = None) -> Any:
    """Tool ``gen_submit``: validate ``data`` as the round's ``kind`` and advance the loop.

    Returns what the step did. Raises GenError listing every problem, GenConflict (another
    step is due, or the run stopped).
    """
    from kb.gen import api

    return api.gen_submit(kind, data=data, reason=reason, sandbox=_sandbox(kb, sandbox))


def gen_report(kb: KnowledgeBase, sandbox: Optional[str] = None) -> Any:
    """Tool ``gen_report``: write the ranked report in the sandbox; returns its path and data.

    Raises GenError / EnvironmentError_ when the run cannot be read or written.
    """
    from kb.gen import api

    return api.gen_report(_sandbox(kb, sandbox))


def gen_schema(kb: KnowledgeBase, kind: Optional[GenKind] = None) -> Any:
    """Tool ``gen_schema``: the JSON Schema of ``kind`` (``{kind: schema}`` of every kind when
    None). An unknown kind never reaches it: the input schema's enum refuses it (kind usage).
    """
    from kb.gen import api

    return api.gen_schema(kind)


def gen_rank(kb: KnowledgeBase, matches: Optional[list[dict[str, Any]]] = None,
             sandbox: Optional[str] = None) -> Any:
    """Tool ``gen_rank``: apply pairwise ``matches`` (Elo 1200, K 32); without them, the
    standings.

    Raises GenError listing every problem of the matches.
    """
    from kb.gen import api

    return api.gen_rank(matches, _sandbox(kb, sandbox))


def gen_adopt(kb: KnowledgeBase, hid: str, parent: Optional[str] = None,
              sandbox: Optional[str] = None, no_commit: bool = False, owner: Optional[str] = None,
              expect: Optional[str] = None) -> Any:
    """Tool ``gen_adopt``: add kept hypothesis ``hid`` to tree.md under ``parent`` (one commit).

    Returns the write's ``OpResult`` (``op``, ``ids``, ``paths``, ``blobs``, ``commit``,
    ``changes``, ``recovered``).
    Raises UsageError, NotFoundError, ConflictError, LockedError, StaleError or RefusedError as
    the operation does; nothing is written then.
    """
    from kb.gen.adopt import adopt
    from kb.gen.loop import open_run

    return adopt(open_run(_sandbox(kb, sandbox)), hid, kb, parent, no_commit=no_commit, owner=owner,
                 expect=expect)


def _with_fallback(call: Any) -> Any:
    """Run a literature call; a LitError's fallback advice goes into the tool error's message
    (the MCP error object has no room for it otherwise)."""
    from kb.lit.errors import LitError

    try:
        return call()
    except LitError as exc:
        raise type(exc)(f"{exc}; fallback: {exc.fallback}", exc.fallback) from None


def lit_search(kb: KnowledgeBase, query: str, limit: int = 12, year: Optional[str] = None,
               min_citations: int = 0, open_access: bool = False, source: LitSource = "both",
               sort: LitSort = "relevance", sandbox: Optional[str] = None) -> Any:
    """Tool ``lit_search``: search papers (``limit`` results, ``year`` a range like ``2020-``).

    Raises LitError (its fallback advice in the message) when every source fails.
    """
    from kb.gen import api

    return _with_fallback(lambda: api.lit_search(query, limit, year, min_citations, open_access,
                                                 source, sort, **_lit_where(kb, sandbox)))


def lit_snippet(kb: KnowledgeBase, query: str, limit: int = 10, sandbox: Optional[str] = None) -> Any:
    """Tool ``lit_snippet``: text snippets of papers matching ``query`` (at most ``limit`` of
    them, whatever the API sent; ``notes`` counts the empty items left out).

    Raises LitError when the source fails, does not answer within ``KB_LIT_TIMEOUT``, or sends
    an answer above ``KB_LIT_MAX_BYTES``.
    """
    from kb.gen import api

    return _with_fallback(lambda: api.lit_snippet(query, limit, **_lit_where(kb, sandbox)))


def lit_cite(kb: KnowledgeBase, paper_id: str, direction: LitDirection = "references", limit: int = 15,
             influential: bool = False, sandbox: Optional[str] = None) -> Any:
    """Tool ``lit_cite``: the ``references`` or ``citations`` of ``paper_id`` (``limit`` of
    them).

    Raises LitError when the source fails.
    """
    from kb.gen import api

    return _with_fallback(lambda: api.lit_cite(paper_id, direction, limit, influential,
                                               **_lit_where(kb, sandbox)))


def lit_paper(kb: KnowledgeBase, arxiv_id: str, sandbox: Optional[str] = None) -> Any:
    """Tool ``lit_paper``: the metadata of arXiv paper ``arxiv_id``.

    Raises LitError when the source fails.
    """
    from kb.gen import api

    return _with_fallback(lambda: api.lit_paper(arxiv_id, **_lit_where(kb, sandbox)))


def lit_keys(kb: KnowledgeBase) -> Any:
    """Tool ``lit_keys``: ``{path, keys: {name: present}}``, the keys file and which literature
    API keys are set (never their values), as ``kb lit keys --json`` prints them.
    """
    from kb.lit.keys import key_presence, keys_path

    return {"path": str(keys_path(kb.top)), "keys": key_presence(kb.top)}


def register(reg: Registry) -> None:
    """Register this module's tools on ``reg`` (names, descriptions, read/write annotations)."""
    reg.write("gen_init", gen_init, "Start a hypothesis-generation run (kb gen init): the sandbox "
              "with loop.run.yaml, ledger.tsv and the literature cache; refused if a run exists.",
              op_result=False)
    reg.read("gen_status", gen_status, "The run's round, next step, pool, gaps and dry counter "
             "(kb gen status).")
    reg.read("gen_brief", gen_brief, "What the next role needs (kb gen brief): role is generator, "
             "litscout, judge or ranker; includes the output's JSON Schema.")
    reg.write("gen_submit", gen_submit, "Submit the round's candidates, litscout or verdict object "
              "(kb gen submit): kb validates it, checks snippets against the round's literature "
              "cache, recomputes totals, applies the novelty cap and gates, and advances the loop.", op_result=False)
    reg.write("gen_report", gen_report, "Write the ranked report hypotheses.md (kb gen report).",
              idempotent=True, op_result=False)
    reg.read("gen_schema", gen_schema, "The JSON Schema of candidates, litscout or verdict "
             "(kb gen schema).")
    reg.write("gen_rank", gen_rank, "Apply pairwise comparisons of pool hypotheses "
              "[{a, b, winner, rationale}] to their Elo ratings (kb gen rank); none: the standings.", op_result=False)
    reg.write("gen_adopt", gen_adopt, "Add a kept hypothesis to tree.md as a normal hypothesis "
              "(kb gen adopt): one commit, provenance in prose and trailers.")
    for name, fn, what in (
            ("lit_search", lit_search, "Search papers on Semantic Scholar and/or OpenAlex"),
            ("lit_snippet", lit_snippet, "Search verbatim passages of papers (Semantic Scholar)"),
            ("lit_cite", lit_cite, "References, citations or recommendations of a paper"),
            ("lit_paper", lit_paper, "arXiv metadata of one arXiv id")):
        reg.write(name, fn, f"{what} (kb lit): cached on disk and recorded in the gen run's current "
                  "round; a failure is a tool error with the fallback advice.", idempotent=True,
                  open_world=True, op_result=False)
    reg.read("lit_keys", lit_keys, "Which literature API keys are set (presence only).")
