"""Hypothesis and experiment IDs: the ones ever used (git history) and the next one.

ID allocation (DESIGN.md §4 "IDs never reused"): a new ID is one more than the
largest of its siblings among the IDs in the current tree *and* the IDs
named in the ``Kb-Id:`` and ``Kb-Renumber:`` trailers of the commits that
touched ``tree.md`` (``git log --format=%(trailers:key=Kb-Id,valueonly) -- tree.md``;
``kb sync`` names the IDs it renumbered to as ``Kb-Renumber: H7 -> H9``), so an
ID that kb ever wrote is never handed out again even after its block was
removed. An ID that only ever existed in a hand-made commit and was deleted
again is not seen (a scan of every past version of ``tree.md`` would cost
seconds on a long history; ``kb verify``'s history rule catches such a
reuse). The scan is cached in ``.kb/history-ids.json`` and extended
incrementally from the cached commit.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

from kb import git, json_input
from kb.chars import HIDDEN_CHARS, WIDE_SPACE_CHARS
from kb.checks.id_history import card_pathspecs, exp_pathspec, scan_ids
from kb.errors import RefusedError
from kb.numbers import small_int
from kb.repo import KnowledgeBase
from kb.text import compute_mask


def history_ids(k: KnowledgeBase) -> tuple[set[str], set[str]]:
    """``(trailer IDs, deleted experiment stems)`` (see :func:`history_ids_with_head`)."""
    ids, deleted, _ = history_ids_with_head(k)
    return ids, deleted


def _cache_file(k: KnowledgeBase) -> Path:
    return k.root / ".kb" / "history-ids.json"


#: Bumped when what the scan collects changes: a cache of another version is
#: read again from the history (v2: the ``Kb-Renumber:`` trailers too; v3: the card
#: folders' commits and deleted cards too).
_CACHE_VERSION = 3


def _history_key(k: KnowledgeBase) -> str:
    tree_path = k.repo_path(k.config.paths["tree"])
    return "\0".join([tree_path, exp_pathspec(k), *card_pathspecs(k), f"v{_CACHE_VERSION}"])


_CACHE_HEADS = 16  # commits remembered (a reset or a branch switch still hits)


def _write_cache(k: KnowledgeBase, head: str, ids: Iterable[str], deleted: Iterable[str]) -> None:
    cache = _read_cache(k) or {"key": _history_key(k), "heads": {}}
    heads = {h: v for h, v in cache["heads"].items() if h != head}
    heads[head] = {"ids": sorted(set(ids)), "deleted": sorted(set(deleted))}
    heads = dict(list(heads.items())[-_CACHE_HEADS:])
    cache_file = _cache_file(k)
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_name(f"history-ids.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": _history_key(k), "heads": heads}), encoding="utf-8")
        tmp.replace(cache_file)
    except OSError:
        pass


def _read_cache(k: KnowledgeBase) -> dict[str, Any] | None:
    try:
        cache = json_input.loads(_cache_file(k).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(cache, dict) and cache.get("key") == _history_key(k) \
            and isinstance(cache.get("heads"), dict):
        return cache
    return None


def note_commit(k: KnowledgeBase, parent: str, commit: str, ids: Iterable[str]) -> None:
    """Extend the history cache by kb's own commit (its Kb-Id values when it touched the tree)."""
    cache = _read_cache(k)
    if cache is None or parent not in cache["heads"]:
        return
    old = cache["heads"][parent]
    _write_cache(k, commit, [*old.get("ids", []), *ids], old.get("deleted", []))


def history_ids_with_head(k: KnowledgeBase) -> tuple[set[str], set[str], str | None]:
    """``(trailer IDs, deleted experiment stems, HEAD)`` from the history of HEAD.

    The first set holds every ``Kb-Id:`` value of the commits that touched
    ``tree.md`` or a card folder, and both IDs of each of their ``Kb-Renumber: <old> ->
    <new>`` values; the second the names (without ``.md``) of every file ever deleted
    from the experiments folder or a card folder (a card's name is its ID); the third
    the HEAD they were read at.
    Cached in ``.kb/history-ids.json`` for the last few commits seen, and
    extended incrementally from a cached commit that is an ancestor of HEAD.
    """
    head = git.rev_parse("HEAD", k.top)
    if head is None:
        return set(), set(), None
    ids: set[str] = set()
    deleted: set[str] = set()
    rev = head
    cache = _read_cache(k)
    if cache is not None:
        hit = cache["heads"].get(head)
        if hit is not None:
            return set(hit.get("ids", [])), set(hit.get("deleted", [])), head
        for base in reversed(list(cache["heads"])):
            anc = git.run(["merge-base", "--is-ancestor", base, head], k.top, check=False)
            if anc.returncode == 0:
                ids = set(cache["heads"][base].get("ids", []))
                deleted = set(cache["heads"][base].get("deleted", []))
                rev = f"{base}..{head}"
                break
    more_ids, more_deleted = scan_ids(k, rev)
    ids |= more_ids
    deleted |= more_deleted
    _write_cache(k, head, ids, deleted)
    return ids, deleted, head


#: A line that may carry an ID kb does not read as a declaration: a heading (indented by up
#: to three spaces, as Markdown still reads it: KB128), a table row, or a list item starting
#: in bold.
_CARRIER = re.compile(r"^(?:[ ]{0,3}#{1,6}[ \t]|[ \t]*\||[ \t]*[-*+][ \t]+\*\*)")
_ANY_ID = re.compile(r"(?<![\w.])H[0-9]+(?:\.[0-9]+)*(?![\w])")


def ids_in_headings(lines: Iterable[str]) -> set[str]:
    """The first hypothesis-shaped ID on each heading, table row or bold list item
    of the tree, read or not (``## **H5** …``, ``| H6 | … |``): a new hypothesis
    never takes an ID the file already shows somewhere a reader would see it as
    one, even where kb's parser does not. Only the first: an ID further along the
    line is a mention (``## H3: Compare with H50``), not the line's own, and took
    the next new ID to H51. Examples are not declarations (case MD-03): fenced and
    indented code and HTML blocks (comments) are skipped, with the parser's own mask."""
    lines = list(lines)
    out: set[str] = set()
    for line, masked in zip(lines, compute_mask(lines)):
        if not line.isascii():
            # `## H\u200b1: …` and `\ufeff## H2: …` show H1 and H2 (KB119 says so)
            line = HIDDEN_CHARS.sub("", line).lstrip(WIDE_SPACE_CHARS)
        if not masked and _CARRIER.match(line):
            m = _ANY_ID.search(line)
            if m is not None:
                out.add(m.group(0))
    return out


def next_hypothesis_id(k: KnowledgeBase, existing: Iterable[str], parent: str | None,
                       history: Iterable[str] = ()) -> str:
    """``H<max+1>`` (top level) or ``<parent>.<max+1>`` over ``existing`` and ``history``.

    Raises RefusedError when the KB sets its own ID grammar (kb.toml's ``[kb] id_grammar``)
    and that grammar does not read the ID (kb numbers only H<n>(.<n>)*).
    """
    pat = re.compile((re.escape(parent) + r"\.") if parent else "H")
    nums = [0]
    for i in (*existing, *history):
        m = pat.match(i)
        if m and i[m.end():].isdecimal() and (n := small_int(i[m.end():])) is not None:
            nums.append(n)  # a number too long to be one (KB201) numbers nothing after it
    n = max(nums) + 1
    new = f"{parent}.{n}" if parent else f"H{n}"
    # A grammar of the KB's own may still read kb's numbering (`H\d+(\.\d+)*`): only
    # an ID it would not read as one is refused.
    if k.config.custom_grammar and not re.fullmatch(k.config.id_grammar, new):
        raise RefusedError(f"kb numbers new hypotheses as H<n>(.<n>)* ({new} here), and this KB's "
                           f"[kb] id_grammar in kb.toml does not read {new} as an ID; add the "
                           "hypothesis to tree.md by hand")
    return new



__all__ = ["history_ids", "history_ids_with_head", "note_commit", "ids_in_headings",
           "next_hypothesis_id"]
