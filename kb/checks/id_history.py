"""The IDs a KB's history used (DESIGN.md §4 "IDs never reused").

Three reads of ``git log`` up to a commit: the ``Kb-Id:`` and ``Kb-Renumber:`` trailers
of the commits that touched ``tree.md`` or a card folder (every ID kb ever wrote,
``kb sync``'s renumberings both ways), the IDs ``Kb-Override:`` trailers name (an
empty commit's too: the trace of a reset's force push), and the names of the files ever deleted from
the experiments folder or a card folder (a card's or an experiment's file is named by
its ID, whoever deleted it). The allocator (:mod:`kb.ops.history`) never hands one of
them out again; the range check (KB307) refuses one that comes back after it was
gone before the range began.
"""

from __future__ import annotations

import re
from typing import Any

from kb import git
from kb.checks.facts import NAMESPACE


def card_pathspecs(k: Any) -> list[str]:
    """The card folders (problems, propositions, methods) as repository pathspecs."""
    out = []
    for key in ("problems", "propositions", "methods"):
        folder = k.config.paths[key].strip("/")
        if folder not in ("", "."):
            out.append(k.repo_path(folder + "/"))
    return out


def exp_pathspec(k: Any) -> str:
    """The experiments folder as a repository pathspec (the KB's when it is the root)."""
    exp_dir = k.config.paths["experiments"].strip("/")
    return k.repo_path(exp_dir + "/") if exp_dir not in ("", ".") else (k.prefix or ".")


def scan_ids(k: Any, rev: str) -> tuple[set[str], set[str]]:
    """``(trailer IDs, deleted file stems)`` of the commits ``rev`` names (a commit and its
    history, or ``base..head``). Raises GitError when git fails."""
    tree_path = k.repo_path(k.config.paths["tree"])
    cards = card_pathspecs(k)
    out = git.out(["log", "--format=%(trailers:key=Kb-Id,valueonly)"
                   "%(trailers:key=Kb-Renumber,valueonly)", rev, "--", tree_path, *cards], k.top)
    ids = {t for t in out.split() if t != "->"}
    ids |= _overridden(k, rev)
    out = git.out(["log", "--no-renames", "--diff-filter=D", "--name-only", "--format=", rev,
                   "--", exp_pathspec(k), *cards], k.top)
    deleted = set()
    for p in out.splitlines():
        name = p.rsplit("/", 1)[-1]
        if name.endswith(".md"):
            deleted.add(name[:-3])
    return ids, deleted


def _overridden(k: Any, rev: str) -> set[str]:
    """The IDs named by the ``Kb-Override:`` trailers of the commits ``rev`` names that
    touch the KB or nothing: the empty commit of a reset's force push (``git commit
    --allow-empty --trailer "Kb-Override: H3 <reason>"``, the README's way) is the one
    trace of an ID whose commits the push dropped. A rule code or a path key among them
    only makes the allocator skip a word no ID has."""
    from kb.checks.overrides import parse_overrides

    out = git.out(["log", "-E", "--grep=^Kb-Override:", "--no-renames", "--name-only",
                   "--format=%x00%(trailers:key=Kb-Override,valueonly)", rev], k.top)
    ids: set[str] = set()
    for chunk in out.split("\0")[1:]:
        values, _, names = chunk.partition("\n\n")
        touched = names.split()
        if not touched or any(n.startswith(k.prefix) for n in touched):
            ids |= set(parse_overrides(values))
    return ids


_HYPOTHESIS = re.compile(r"H[0-9]+(?:\.[0-9]+)*")
_EXPERIMENT = re.compile(r"E[0-9]{3,}")


def gone_before(k: Any, origin: str, at_origin: Any) -> dict[tuple[str, str], str]:
    """``(namespace, ID) -> where`` of every ID the history up to ``origin`` used that
    ``at_origin`` (the origin's :class:`kb.checks.facts.Facts`) no longer declares: what a
    range starting there must never declare again (KB307's ``removed_before``)."""
    ids, deleted = scan_ids(k, origin)
    where = f"the history before {origin[:10]}"
    out: dict[tuple[str, str], str] = {}
    for i in sorted(ids | deleted):
        kind = "hypothesis" if _HYPOTHESIS.fullmatch(i) else \
            "experiment" if _EXPERIMENT.fullmatch(i) else "problem"
        ns = NAMESPACE[kind]
        kinds = tuple(x for x, n in NAMESPACE.items() if n == ns)
        if not at_origin.find(i, kinds):
            out[(ns, i)] = where
    return out
