"""The rules of the loop that the schemas cannot express (HYPOTHESIS-GEN.md, issue 17).

- the Judge's total: ``100 × (0.30·novelty + 0.25·grounding + 0.20·testability
  + 0.15·specificity + 0.10·significance) / 5``, one decimal;
- near-duplicates: Jaccard similarity ≥ 0.85 over English words and Chinese
  character bigrams;
- the verbatim check: a snippet must occur, whitespace-normalised, in a
  response stored in the round's literature cache.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from kb.research import similarity

WEIGHTS: dict[str, float] = {"novelty": 0.30, "grounding": 0.25, "testability": 0.20,
                             "specificity": 0.15, "significance": 0.10}
NEAR_DUPLICATE = 0.85
NOVELTY_CAP = 2



def total(scores: Mapping[str, int]) -> float:
    """The rubric total (0–100, rounded to one decimal) of the five scores (0–5 each)."""
    raw = 100 * sum(WEIGHTS[k] * scores[k] for k in WEIGHTS) / 5
    return round(raw + 1e-9, 1)


def tokens(text: str) -> frozenset[str]:
    """English words and Chinese bigrams (:func:`kb.research.similarity.tokens`)."""
    return similarity.tokens(text)


def jaccard(a: str, b: str) -> float:
    """|A ∩ B| / |A ∪ B| of the :func:`tokens` of two texts (0 when both are empty)."""
    return similarity.jaccard(tokens(a), tokens(b), both_empty=0.0)


def normalise_ws(text: str) -> str:
    """Runs of whitespace as one space, ends stripped."""
    return " ".join(text.split())


def strings_of(value: Any) -> Iterable[str]:
    """Every string inside a JSON value (object values and keys' values, list items)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings_of(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_of(v)


def corpus_of(bodies: Iterable[Any]) -> list[str]:
    """Whitespace-normalised strings of cached response bodies, for :func:`occurs`.

    An Atom (XML) body is searched as its text with the tags removed, so a
    summary quoted from arXiv matches.
    """
    out = []
    for body in bodies:
        for index in _inverted_indexes(body):  # OpenAlex abstracts arrive as word -> positions
            from kb.lit.papers import inverted_abstract

            out.append(normalise_ws(inverted_abstract(index) or ""))
        for s in strings_of(body):
            if s.lstrip().startswith("<"):
                import html

                s = html.unescape(re.sub(r"<[^>]+>", " ", s))
            out.append(normalise_ws(s))
    return out


def _inverted_indexes(value: Any) -> Iterable[dict[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "abstract_inverted_index" and isinstance(v, dict):
                yield v
            else:
                yield from _inverted_indexes(v)
    elif isinstance(value, list):
        for v in value:
            yield from _inverted_indexes(v)


def occurs(snippet: str, corpus: Iterable[str]) -> bool:
    """True when the whitespace-normalised ``snippet`` is a substring of one corpus string."""
    needle = normalise_ws(snippet)
    if not needle:
        return False
    return any(needle in hay for hay in corpus)


def is_url(text: str | None) -> bool:
    """True when ``text`` is one http(s) URL without spaces."""
    return bool(text) and re.match(r"https?://\S+$", text or "") is not None
