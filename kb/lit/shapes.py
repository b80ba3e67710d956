"""The shapes of the literature APIs' answers, checked before kb reads or caches one.

An API can answer 200 with JSON that is valid but not what kb reads (``{"data": "oops"}``,
a list where an object belongs, a number as a string). Each endpoint has one shape here;
:func:`check` walks an answer against it and raises :class:`ShapeError` naming the first
place that does not fit. The fetcher turns that into a
:class:`kb.lit.errors.LitResponseError` and caches nothing (kb/lit/http.py).

A shape is one of:

- ``str``, ``int`` (never a bool), ``bool``, or a tuple of those: a JSON scalar;
- ``{name: shape}``: a JSON object; each named field may be absent or null (the APIs omit
  and null fields freely), else it must fit its shape; other fields are not looked at;
- :class:`Required` ``(shape)``, as a field's shape: a field the endpoint always sends, so it
  must be there and not null. An answer without it is no answer, but (say) an error note
  served with 200 (``{"error": "rate limited"}``), whose "no data" must not pass for an
  empty result and be cached for ever; the message quotes the answer;
- ``[shape]``: a JSON array whose items all fit ``shape`` (null items only with
  :class:`Maybe`);
- :class:`MapOf` ``(shape)``: a JSON object with any keys, every value fitting ``shape``;
- :class:`Maybe` ``(shape)``: ``shape`` or null (for array items).

Only the fields kb reads are described (kb/lit/papers.py, kb/lit/client.py), and each
endpoint's top-level fields that every answer carries (its API's documented response),
marked :class:`Required`.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any, Callable, Union

Shape = Union[type, tuple, dict, list, "MapOf", "Maybe", "Required"]
#: A check of one answer (parsed JSON, or text): returns nothing, raises ShapeError.
Check = Callable[[Any], None]


class ShapeError(ValueError):
    """An answer does not fit its shape; the message names where (``data[2].year``) and why."""


@dataclass(frozen=True)
class MapOf:
    """A JSON object with arbitrary keys whose values all fit ``value``."""

    value: Shape


@dataclass(frozen=True)
class Maybe:
    """``shape`` or null (object fields are nullable anyway; this is for array items)."""

    shape: Shape


@dataclass(frozen=True)
class Required:
    """An object field that fits ``shape`` and is always there: absent or null fails.

    For the fields an endpoint sends in every answer, empty ones included (S2 search's
    ``total``, OpenAlex's ``meta`` and ``results``). Anywhere else it is just ``shape``.
    """

    shape: Shape


_NAMES = {str: "a string", int: "an integer", bool: "true or false", dict: "an object",
          list: "an array", float: "a number", type(None): "null"}


def _got(value: Any) -> str:
    """``an integer (5)``: the JSON type of ``value`` and a short view of it."""
    shown = json.dumps(value, ensure_ascii=False)[:40]
    return f"{_NAMES.get(type(value), type(value).__name__)} ({shown})"


def _quote(value: Any, limit: int = 160) -> str:
    """``value`` as compact JSON, cut to ``limit`` characters (the message quotes an answer)."""
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= limit else shown[:limit - 1] + "…"


def _fits(value: Any, kind: type) -> bool:
    if kind is int:  # JSON true/false are bools, and bool is an int in Python
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def check(value: Any, shape: Shape, where: str = "the answer") -> None:
    """Raise ShapeError unless ``value`` (parsed JSON) fits ``shape`` (see the module docstring).

    ``where`` names ``value`` in the message; the root must not be null.
    """
    if isinstance(shape, Maybe):
        if value is not None:
            check(value, shape.shape, where)
    elif isinstance(shape, Required):  # not as a field: its presence is the object's to check
        check(value, shape.shape, where)
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            raise ShapeError(f"{where}: expected an object, got {_got(value)}")
        for name, sub in shape.items():
            if value.get(name) is not None:
                check(value[name], sub, name if where == "the answer" else f"{where}.{name}")
        # after the fields that are there: a wrong one is the more precise report
        missing = [name for name, sub in shape.items()
                   if isinstance(sub, Required) and value.get(name) is None]
        if missing:
            names = " and ".join(f'"{name}"' for name in missing)
            raise ShapeError(f"{where}: no {names}, which every answer of this endpoint has; "
                             f"got {_quote(value)}")
    elif isinstance(shape, list):
        if not isinstance(value, list):
            raise ShapeError(f"{where}: expected an array, got {_got(value)}")
        for i, item in enumerate(value):
            check(item, shape[0], f"{where}[{i}]")
    elif isinstance(shape, MapOf):
        if not isinstance(value, dict):
            raise ShapeError(f"{where}: expected an object, got {_got(value)}")
        for key, item in value.items():
            check(item, shape.value, f"{where}.{key}")
    else:
        kinds = shape if isinstance(shape, tuple) else (shape,)
        if not any(_fits(value, k) for k in kinds):
            want = " or ".join(_NAMES.get(k, k.__name__) for k in kinds)
            raise ShapeError(f"{where}: expected {want}, got {_got(value)}")


def checker(shape: Shape) -> Check:
    """The :data:`Check` of ``shape`` that :class:`kb.lit.http.Fetcher` runs on an answer."""
    return lambda body: check(body, shape)

# -- Semantic Scholar (graph/v1 and recommendations/v1) -------------------------------

#: A paper of search, references/citations (nested) and recommendations (papers.from_s2).
S2_PAPER: dict[str, Shape] = {
    "paperId": str, "title": str, "abstract": str, "year": int, "venue": str,
    "citationCount": int, "influentialCitationCount": int,
    "externalIds": {"ArXiv": str, "DOI": str}, "tldr": {"text": str},
    "openAccessPdf": {"url": str}, "authors": [{"name": str}],
}
#: ``/paper/search``: ``total`` and ``offset`` always, ``data`` only when something matched.
S2_SEARCH: dict[str, Shape] = {"total": Required(int), "data": [S2_PAPER]}
#: ``/snippet/search``: ``data`` always (``[]`` when nothing matched).
S2_SNIPPET: dict[str, Shape] = {"data": Required([Maybe({
    "snippet": {"text": str, "snippetKind": str, "section": str},
    "paper": {"title": str, "paperId": str, "corpusId": (str, int)},
})])}
#: ``/paper/{id}/references`` (``citedPaper``) and ``/citations`` (``citingPaper``): ``data``
#: always (``[]`` past the last edge).
S2_EDGES: dict[str, Shape] = {"data": Required([{"isInfluential": bool, "citedPaper": S2_PAPER,
                                                  "citingPaper": S2_PAPER}])}
#: ``/papers/forpaper/{id}``: ``recommendedPapers`` always.
S2_RECOMMEND: dict[str, Shape] = {"recommendedPapers": Required([S2_PAPER])}

# -- OpenAlex ---------------------------------------------------------------------------

#: A work (papers.from_openalex); the abstract arrives as ``{word: [positions]}``.
OPENALEX_WORK: dict[str, Shape] = {
    "id": str, "doi": str, "display_name": str, "title": str, "publication_year": int,
    "cited_by_count": int, "ids": {"arxiv": str},
    "locations": [Maybe({"source": {"display_name": str}, "landing_page_url": str})],
    "primary_location": {"source": {"display_name": str}}, "open_access": {"oa_url": str},
    "authorships": [Maybe({"author": {"display_name": str}})],
    "abstract_inverted_index": MapOf([int]),
}
#: ``/works``: a list answer always has ``meta`` (the count, the page) and ``results``.
OPENALEX_WORKS: dict[str, Shape] = {"meta": Required({}), "results": Required([OPENALEX_WORK])}

# -- arXiv ------------------------------------------------------------------------------

_ATOM_FEED = "{http://www.w3.org/2005/Atom}feed"


def atom_feed(text: Any) -> None:
    """Raise ShapeError unless ``text`` is an Atom feed (arXiv's answer; papers.from_arxiv_atom)."""
    if not isinstance(text, str):
        raise ShapeError(f"expected the text of an Atom feed, got {_got(text)}")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ShapeError(f"not XML ({exc}): {text[:80].strip()!r}") from None
    if root.tag != _ATOM_FEED:
        raise ShapeError(f"not an Atom feed (the root element is <{root.tag}>)")
