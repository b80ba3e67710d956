"""Normalised papers and de-duplication (HYPOTHESIS-GEN.md "Normalised paper").

A paper is a dict with ``source, paper_id, title, authors`` (at most 6
names), ``year, venue, citations, influential_citations, tldr, abstract``
(at most 1,200 characters), ``arxiv_id, doi, pdf_url``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any, Iterable

MAX_AUTHORS = 6
MAX_ABSTRACT = 1200
FIELDS = ("source", "paper_id", "title", "authors", "year", "venue", "citations",
          "influential_citations", "tldr", "abstract", "arxiv_id", "doi", "pdf_url")


def _abstract(text: Any) -> str | None:
    if not text:
        return None
    text = str(text).strip()
    return text[:MAX_ABSTRACT] if text else None


def paper(**kw: Any) -> dict[str, Any]:
    """A normalised paper with every field (missing ones None)."""
    out = {f: kw.get(f) for f in FIELDS}
    out["authors"] = [a for a in (kw.get("authors") or []) if a][:MAX_AUTHORS]
    out["abstract"] = _abstract(kw.get("abstract"))
    return out


def from_s2(p: dict[str, Any]) -> dict[str, Any]:
    """A Semantic Scholar paper object (search, references, citations, recommendations)."""
    ext = p.get("externalIds") or {}
    tldr = p.get("tldr") or {}
    pdf = p.get("openAccessPdf") or {}
    return paper(source="s2", paper_id=p.get("paperId"), title=p.get("title"),
                 authors=[a.get("name") for a in p.get("authors") or [] if isinstance(a, dict)],
                 year=p.get("year"), venue=p.get("venue") or None,
                 citations=p.get("citationCount"),
                 influential_citations=p.get("influentialCitationCount"),
                 tldr=tldr.get("text") if isinstance(tldr, dict) else None,
                 abstract=p.get("abstract"), arxiv_id=ext.get("ArXiv"), doi=ext.get("DOI"),
                 pdf_url=pdf.get("url") if isinstance(pdf, dict) else None)


def inverted_abstract(index: dict[str, list[int]] | None) -> str | None:
    """OpenAlex's ``abstract_inverted_index`` back to text (words by position)."""
    if not index:
        return None
    at: dict[int, str] = {}
    for word, positions in index.items():
        for pos in positions or []:
            at[int(pos)] = word
    return " ".join(at[i] for i in sorted(at)) or None


def from_openalex(w: dict[str, Any]) -> dict[str, Any]:
    """An OpenAlex work."""
    doi = w.get("doi") or None
    if doi:
        doi = re.sub(r"^https?://(dx\.)?doi\.org/", "", doi, flags=re.I)
    ids = w.get("ids") or {}
    arxiv = None
    for loc in w.get("locations") or []:
        src = ((loc or {}).get("source") or {}).get("display_name") or ""
        m = re.search(r"arxiv\.org/(?:abs|pdf)/([^v?#/]+(?:/\d+)?)", (loc or {}).get("landing_page_url") or "")
        if m and "arxiv" in src.lower():
            arxiv = m.group(1)
    venue = (((w.get("primary_location") or {}).get("source") or {}).get("display_name"))
    oa = w.get("open_access") or {}
    return paper(source="openalex", paper_id=(w.get("id") or "").rsplit("/", 1)[-1] or None,
                 title=w.get("display_name") or w.get("title"),
                 authors=[((a or {}).get("author") or {}).get("display_name")
                          for a in w.get("authorships") or []],
                 year=w.get("publication_year"), venue=venue,
                 citations=w.get("cited_by_count"), influential_citations=None, tldr=None,
                 abstract=inverted_abstract(w.get("abstract_inverted_index")),
                 arxiv_id=arxiv or ids.get("arxiv"), doi=doi, pdf_url=oa.get("oa_url"))


_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"


def from_arxiv_atom(text: str) -> list[dict[str, Any]]:
    """Papers of an arXiv API Atom feed (title, summary, authors, year, doi, pdf link).

    Raises ValueError when the feed is not XML.
    """
    root = ET.fromstring(text)
    out = []
    for e in root.findall(f"{_ATOM}entry"):
        def t(tag: str, ns: str = _ATOM) -> str | None:
            el = e.find(f"{ns}{tag}")
            return " ".join(el.text.split()) if el is not None and el.text else None

        ident = t("id") or ""
        m = re.search(r"arxiv\.org/abs/(.+?)(v\d+)?$", ident)
        pdf = next((ln.get("href") for ln in e.findall(f"{_ATOM}link")
                    if ln.get("title") == "pdf" or ln.get("type") == "application/pdf"), None)
        published = t("published") or ""
        out.append(paper(source="arxiv", paper_id=m.group(1) if m else ident or None,
                         title=t("title"),
                         authors=[" ".join((a.findtext(f"{_ATOM}name") or "").split())
                                  for a in e.findall(f"{_ATOM}author")],
                         year=int(published[:4]) if published[:4].isdecimal() else None,
                         venue="arXiv", abstract=t("summary"), arxiv_id=m.group(1) if m else None,
                         doi=t("doi", _ARXIV), pdf_url=pdf))
    return [p for p in out if p["title"] and p["title"].lower() != "error"]


def dedupe_key(p: dict[str, Any]) -> str:
    """``doi:<lower doi>``, else ``title:<first 60 alphanumerics of the lower-cased title>``."""
    doi = (p.get("doi") or "").strip().lower()
    if doi:
        return "doi:" + doi
    title = re.sub(r"[^0-9a-z]", "", (p.get("title") or "").lower())
    return "title:" + title[:60]


def dedupe(papers: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Papers with duplicates (by :func:`dedupe_key`) removed; the first occurrence wins.

    Papers sharing a DOI are one; a paper without a DOI matches another by
    normalised title, and so does a paper with a DOI whose title matches a
    DOI-less one already kept.
    """
    seen: set[str] = set()
    out = []
    for p in papers:
        keys = {dedupe_key(p)}
        if (p.get("title") or "").strip():
            keys.add("title:" + re.sub(r"[^0-9a-z]", "", p["title"].lower())[:60])
        if keys & seen:
            continue
        seen |= keys
        out.append(p)
    return out
