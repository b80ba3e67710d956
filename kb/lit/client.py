"""The literature client: search, snippet, cite, paper (HYPOTHESIS-GEN.md endpoints).

``LitClient(cache_dir, on_key=None, intervals=None, backoff=None, timeout=None,
on_note=None)``; the base URLs come from ``KB_LIT_S2_URL``,
``KB_LIT_S2_RECOMMEND_URL``, ``KB_LIT_OPENALEX_URL`` and ``KB_LIT_ARXIV_URL``
(defaults: the public APIs), the whole wait for one request from
``KB_LIT_TIMEOUT`` (seconds, default 60), the largest answer body from
``KB_LIT_MAX_BYTES`` (default 8 MiB; :mod:`kb.lit.http`), the keys from
:mod:`kb.lit.keys`. Every answer is checked against its endpoint's shape
(:mod:`kb.lit.shapes`) before it is read or cached, so the parsing below may
trust it. A list is cut to the number asked for, whatever the API sent; the
items a method leaves out as empty (a null snippet, an edge without its paper)
are counted in ``notes``, one line per call. Every method returns JSON-ready
data and raises only :class:`kb.lit.errors.LitError` subclasses (and
UsageError for a bad argument).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Mapping

from kb.errors import UsageError
from kb.lit import papers as P
from kb.lit import shapes
from kb.lit.errors import LitConfigError, LitError, LitNotFound, LitUnavailable
from kb.lit.http import Fetcher, build_url
from kb.lit.keys import base_url, load_keys

S2_FIELDS = ("title,abstract,tldr,year,citationCount,influentialCitationCount,venue,"
             "externalIds,openAccessPdf,authors.name")
#: references/citations have no ``tldr`` and take ``authors``, not ``authors.name``.
S2_EDGE_FIELDS = ("isInfluential,title,abstract,year,citationCount,influentialCitationCount,"
                  "venue,externalIds,openAccessPdf,authors")
S2_EDGE_CAP = 1000
SOURCES = ("s2", "openalex", "both")
DIRECTIONS = ("references", "citations", "recommend")
SORTS = {"relevance": None, "citations": "cited_by_count:desc", "date": "publication_date:desc"}


def parse_years(year: str | None) -> tuple[int | None, int | None]:
    """``"2019"``, ``"2019-2023"``, ``"2019-"``, ``"-2023"`` -> (from, to); None -> (None, None).

    Raises UsageError for any other text, and for a range whose from-year is after its to-year
    (the APIs answer one with nothing, or with an error, instead of saying why)."""
    if not year:
        return None, None
    m = re.fullmatch(r"\s*(\d{4})?\s*(-)?\s*(\d{4})?\s*", year)
    if not m or not (m.group(1) or m.group(3)) or (m.group(3) and not m.group(2)):
        raise UsageError(f"--year {year!r}: write 2019, 2019-2023, 2019- or -2023")
    lo = int(m.group(1)) if m.group(1) else None
    hi = int(m.group(3)) if m.group(3) else (lo if not m.group(2) else None)
    if lo is not None and hi is not None and lo > hi:
        raise UsageError(f"--year {year!r}: the from-year {lo} is after the to-year {hi}; "
                         f"write {hi}-{lo}")
    return lo, hi


class LitClient:
    """See the module docstring. ``requests`` counts network requests made; ``notes`` says
    what the calls left out of the answers (``on_note`` hears retries and long waits)."""

    def __init__(self, cache_dir: str | Path, *, on_key: Callable[[str], None] | None = None,
                 intervals: Mapping[str, float] | None = None, backoff: float | None = None,
                 timeout: float | None = None, keys_root: str | Path | None = None,
                 on_note: Callable[[str], None] | None = None) -> None:
        self.fetcher = Fetcher(Path(cache_dir), on_key=on_key, intervals=intervals,
                               backoff=backoff, timeout=timeout, on_note=on_note)
        self.keys = load_keys(Path(keys_root) if keys_root is not None else None)
        self.notes: list[str] = []

    @property
    def requests(self) -> int:
        """Network requests made so far (cache hits excluded)."""
        return self.fetcher.requests

    # -- Semantic Scholar -------------------------------------------------------

    def _s2_headers(self) -> dict[str, str]:
        key = self.keys.get("S2_API_KEY")
        return {"x-api-key": key} if key else {}

    def _s2(self, path: str, params: Mapping[str, Any], shape: shapes.Shape,
            base_var: str = "KB_LIT_S2_URL") -> dict[str, Any]:
        """The answer (an object fitting ``shape``) of a Semantic Scholar GET."""
        url = build_url(base_url(base_var), path, params)
        data: dict[str, Any] = self.fetcher.get_json(url, "s2", self._s2_headers(),
                                                     check=shapes.checker(shape))
        return data

    def s2_search(self, query: str, limit: int = 12, year: str | None = None,
                  min_citations: int = 0, open_access: bool = False) -> list[dict[str, Any]]:
        """Semantic Scholar paper search; over-fetches and filters citations locally."""
        _query(query)
        lo, hi = parse_years(year)
        yr = None if lo is None and hi is None else f"{lo or ''}-{hi or ''}" if lo != hi else str(lo)
        params = {"query": query, "fields": S2_FIELDS, "limit": min(max(3 * limit, limit), 100),
                  "year": yr, "openAccessPdf": "" if open_access else None}
        data = self._s2("/paper/search", params, shapes.S2_SEARCH)
        out = [P.from_s2(p) for p in data.get("data") or []]
        out = [p for p in out if (p["citations"] or 0) >= min_citations]
        return out[:limit]

    def snippet(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Semantic Scholar snippet search: ``[{text, kind, paper_id, title}]`` (limit ≤ 100)."""
        _positive(limit, "--limit")
        _query(query)
        asked = min(limit, 100)
        data = self._s2("/snippet/search", {"query": query, "limit": asked}, shapes.S2_SNIPPET)
        out: list[dict[str, Any]] = []
        empty = 0
        for item in data.get("data") or []:  # the API may send more than asked (and nulls)
            if len(out) >= asked:
                break
            snip = (item or {}).get("snippet") or {}  # null items and fields: S2_SNIPPET allows them
            pap = (item or {}).get("paper") or {}
            if not snip.get("text"):
                empty += 1
                continue
            out.append({"text": snip["text"], "kind": snip.get("snippetKind") or snip.get("section"),
                        "paper_id": pap.get("paperId") or pap.get("corpusId"),
                        "title": pap.get("title")})
        if empty:
            self.notes.append(f"left out {empty} snippet item{'s' if empty != 1 else ''} of the "
                              "answer with no text (null, or no snippet.text)")
        return out

    def cite(self, paper_id: str, direction: str = "references", limit: int = 15,
             influential_only: bool = False) -> list[dict[str, Any]]:
        """References, citations or recommendations of ``paper_id`` (S2), normalised."""
        _positive(limit, "--limit")
        if direction not in DIRECTIONS:
            raise UsageError(f"direction {direction!r}: use one of {', '.join(DIRECTIONS)}")
        pid = _paper_id(paper_id)
        if direction == "recommend":
            asked = min(limit, 500)
            data = self._s2(f"/papers/forpaper/{pid}", {"fields": S2_FIELDS, "limit": asked},
                            shapes.S2_RECOMMEND, "KB_LIT_S2_RECOMMEND_URL")
            return [P.from_s2(p) for p in (data.get("recommendedPapers") or [])[:asked]]
        nested = "citedPaper" if direction == "references" else "citingPaper"
        asked = min(limit, S2_EDGE_CAP)
        data = self._s2(f"/paper/{pid}/{direction}",
                        {"fields": S2_EDGE_FIELDS, "limit": asked}, shapes.S2_EDGES)
        out: list[dict[str, Any]] = []
        unresolved = 0
        for edge in data.get("data") or []:  # the API may send more than asked (and nulls)
            if len(out) >= asked:
                break
            if edge.get(nested) is None:  # S2 nulls the paper of an edge it cannot resolve
                unresolved += 1
                continue
            if influential_only and not edge.get("isInfluential"):
                continue
            p = P.from_s2(edge[nested])
            p["influential"] = bool(edge.get("isInfluential"))
            out.append(p)
        if unresolved:
            self.notes.append(f"left out {unresolved} of the {direction} whose paper Semantic "
                              "Scholar could not resolve (null)")
        return out

    # -- OpenAlex and arXiv -----------------------------------------------------

    def openalex_search(self, query: str, limit: int = 12, year: str | None = None,
                        min_citations: int = 0, open_access: bool = False,
                        sort: str = "relevance") -> list[dict[str, Any]]:
        """OpenAlex works search (``per-page`` ≤ 50), normalised."""
        _query(query)
        if sort not in SORTS:
            raise UsageError(f"--sort {sort!r}: use one of {', '.join(SORTS)}")
        lo, hi = parse_years(year)
        filters = []
        if lo:
            filters.append(f"from_publication_date:{lo}-01-01")
        if hi:
            filters.append(f"to_publication_date:{hi}-12-31")
        if min_citations > 0:
            filters.append(f"cited_by_count:>{min_citations - 1}")
        if open_access:
            filters.append("is_oa:true")
        params = {"search": query, "per-page": min(limit, 50),
                  "filter": ",".join(filters) or None, "sort": SORTS[sort],
                  "mailto": self.keys.get("OPENALEX_EMAIL")}
        url = build_url(base_url("KB_LIT_OPENALEX_URL"), "/works", params)
        data = self.fetcher.get_json(url, "search", check=shapes.checker(shapes.OPENALEX_WORKS))
        return [P.from_openalex(w) for w in data.get("results") or []][:limit]

    def paper(self, arxiv_id: str) -> dict[str, Any]:
        """arXiv metadata (title, summary, authors, …) of one arXiv id, normalised."""
        aid = re.sub(r"^(arxiv:|https?://arxiv\.org/(abs|pdf)/)", "", arxiv_id.strip(), flags=re.I)
        aid = re.sub(r"\.pdf$", "", aid)
        if not re.fullmatch(r"\d{4}\.\d{4,5}(v\d+)?|[a-z\-]+(\.[A-Z]{2})?/\d{7}(v\d+)?", aid):
            raise UsageError(f"{arxiv_id!r} is not an arXiv id (e.g. 2101.00001 or hep-th/9901001)")
        url = build_url(base_url("KB_LIT_ARXIV_URL"), "", {"id_list": aid})
        text = self.fetcher.get_text(url, "search", check=shapes.atom_feed)
        found = P.from_arxiv_atom(text)  # an Atom feed: shapes.atom_feed parsed it already
        if not found:
            raise LitNotFound(f"arXiv has no paper {aid}", fallback="check the id")
        return found[0]

    # -- both sources -----------------------------------------------------------

    def search(self, query: str, limit: int = 12, year: str | None = None, min_citations: int = 0,
               open_access: bool = False, source: str = "both",
               sort: str = "relevance") -> dict[str, Any]:
        """Search ``source`` (s2 | openalex | both), de-duplicated (S2 first).

        Returns ``{"query", "papers": [...], "sources": {name: "ok" | error message}}``.
        With ``both`` a failing source is recorded and the other still answers;
        when every asked source fails, the last error is raised (with the fallback).
        """
        _positive(limit, "--limit")
        _query(query)
        parse_years(year)  # refused before the first source is asked, not recorded as its failure
        if source not in SOURCES:
            raise UsageError(f"--source {source!r}: use one of {', '.join(SOURCES)}")
        names = ["s2", "openalex"] if source == "both" else [source]
        found: list[dict[str, Any]] = []
        status: dict[str, str] = {}
        last: LitError | None = None
        for name in names:
            try:
                if name == "s2":
                    found += self.s2_search(query, limit, year, min_citations, open_access)
                else:
                    found += self.openalex_search(query, limit, year, min_citations, open_access, sort)
                status[name] = "ok"
            except LitConfigError:
                raise  # a setting to fix, not a source that is down: no quiet half answer
            except LitError as exc:
                status[name] = str(exc)
                last = exc
        if last is not None and all(v != "ok" for v in status.values()):
            raise last
        return {"query": query, "papers": P.dedupe(found)[: limit * len(names)], "sources": status}


def _positive(n: int, what: str) -> None:
    if n < 1:
        raise UsageError(f"{what} must be at least 1, not {n}")


def _query(query: str) -> None:
    """Refuse a blank query: the APIs would answer it (cached, counted) with papers unrelated to
    anything, or with an error blamed on the source."""
    if not query.strip():
        raise UsageError("empty query: give the words to search for")


def _paper_id(pid: str) -> str:
    """An S2 paper id as the API takes it (``649def34…``, ``DOI:…``, ``ARXIV:…``, ``CorpusId:…``)."""
    pid = pid.strip()
    # a control character would make httpx refuse the URL (InvalidURL) instead
    if not pid or any(c.isspace() or not c.isprintable() for c in pid) or "?" in pid or "#" in pid:
        raise UsageError(f"{pid!r} is not a paper id (an S2 id, DOI:…, ARXIV:…, CorpusId:…)")
    return pid


__all__ = ["LitClient", "LitUnavailable", "parse_years"]
