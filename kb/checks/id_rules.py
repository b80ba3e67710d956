"""Rules on IDs and paths across files (whole snapshot; DESIGN.md §4).

KB202 duplicate IDs, KB210/KB211/KB212/KB214 references to IDs that do not
exist, KB213 dependency cycles among cards, KB219 paths that cannot be checked
out on every system. Each takes a :class:`kb.checks.facts.Facts` and works from
light rows and links; :func:`anchor_line` finds the line of a card's anchor
(the card rules use it too).
"""

from __future__ import annotations

from kb.checks.diagnostics import diag
from kb.checks.facts import CARD_KINDS, Facts
from kb.checks.registry import snapshot_rule
from kb.numbers import QUOTED_CHARS, quoted
from kb.research import dependencies


@snapshot_rule("KB202", reads="rows")
def duplicate_ids(s: Facts) -> list:
    """KB202: one declaration per ID (per namespace), both locations named."""
    out = []
    for (ns, oid), decls in sorted(s.duplicates().items()):
        if ns == "direction":
            continue
        # Repository paths, as the location before the message (a KB in a folder: sub/tree.md)
        places = [s.kb.prefix + d.where for d in decls]
        for d, here in zip(decls[1:], places[1:]):
            others = [p for p in places if p != here]
            # the first declaration and a few more: 4,000 copies of one heading named every
            # other one in each message (225 MB of report for a 108 KB file)
            named = ", ".join(others[:_PLACES])
            if len(others) > _PLACES:
                named += f", … ({len(others):,} other declarations in all)"
            out.append(diag(d.path, d.line, "KB202",
                            f"{quoted(oid, quote=False)} is declared more than once: at {here} "
                            f"and at {named}; give this one the next free ID"))
    return out


#: The other declarations a KB202 message names at most (the first of them always).
_PLACES = 5


def anchor_line(s: Facts, path: str, obj_id: str, key: str) -> int:
    """The 1-based line of anchor ``key`` (``依赖``, ``被依赖``, …) of object ``obj_id``
    in ``path``; its declaration line without that anchor; 0 when the object is not there
    (:meth:`kb.checks.facts.Facts.anchor_line`: a range's untouched card is not parsed in full)."""
    return s.anchor_line(path, obj_id, key)


@snapshot_rule("KB210", "KB211", "KB212", "KB214", reads="refs")
def missing_references(s: Facts) -> list:
    """KB210 evidence, KB211 tested hypothesis, KB212 dependencies, KB214 可信断言."""
    links = s.links()
    if not links:
        return []
    exps = s.ids("experiment")
    hyps = s.ids("hypothesis")
    cards = s.ids(*CARD_KINDS, "verified")
    verified = s.ids("verified")
    out = []
    q = _shown
    ev_lines: dict[str, dict[str, int]] = {}
    for path, src, dst, kind in sorted(links):
        if kind == "evidence" and dst not in exps:
            if path not in ev_lines:
                ev_lines[path] = {x.id: x.evidence_line or x.line for x in s.light(path)}
            out.append(diag(path, ev_lines[path].get(src, 0), "KB210",
                            f"Evidence of {q(src)} names {q(dst)}, which is not an experiment of "
                            "this KB; create it or correct the ID"))
        elif kind == "tests" and dst not in hyps:
            line = s.declared_line(path, src)
            out.append(diag(path, line, "KB211",
                            f"experiment {q(src)} tests {q(dst)}, which is not a hypothesis of tree.md"))
        elif kind == "depends" and dst not in cards:
            out.append(diag(path, anchor_line(s, path, src, "依赖"), "KB212",
                            f"{q(src, 64)} depends on {q(dst, 64)}, which does not exist; create it "
                            "or correct the ID in 依赖"))
        elif kind == "claims" and dst not in verified:
            out.append(diag(path, anchor_line(s, path, src, "可信断言"), "KB214",
                            f"可信断言 of {q(src, 64)} names {q(dst, 64)}, which has no Verified "
                            "card; only verified claims are trusted"))
    return out


def _shown(oid: str, limit: int = QUOTED_CHARS) -> str:
    """An ID as a message quotes it: an ID of thousands of digits (invalid, read from a file)
    by its start and its length (:func:`kb.numbers.quoted`), as KB201/KB207/KB208 do; a card's
    ID (a name, not a number) with a longer ``limit``."""
    return quoted(oid, limit=limit, quote=False)


@snapshot_rule("KB213", reads="refs")
def dependency_cycles(s: Facts) -> list:
    """KB213: the 依赖 graph has no cycle (each cycle reported once)."""
    graph: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    for path, src, dst, kind in s.links():
        if kind == "depends":
            graph.setdefault(src, []).append(dst)
            where.setdefault(src, path)
    if not graph:
        return []
    out = []
    for comp in dependencies.strongly_connected(graph):
        if len(comp) == 1:
            node = comp[0]
            if node not in graph.get(node, []):
                continue
        first = min(comp, key=dependencies.natural_key)
        cycle = _cycle_path(graph, first, set(comp))
        path = where.get(first, "")
        out.append(diag(path, anchor_line(s, path, first, "依赖"), "KB213",
                        f"dependency cycle: {' -> '.join(cycle)}; remove one dependency"))
    return out


def _cycle_path(graph: dict[str, list[str]], start: str, comp: set[str]) -> list[str]:
    """A shortest cycle through ``start`` inside ``comp`` (BFS), as a node list."""
    prev: dict[str, str] = {}
    queue = [start]
    seen = {start}
    while queue:
        nxt_q = []
        for n in queue:
            for m in graph.get(n, []):
                if m == start:
                    path = [n]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start] if n != start else [start, start]
                if m in comp and m not in seen:
                    seen.add(m)
                    prev[m] = n
                    nxt_q.append(m)
        queue = nxt_q
    return [start, start]


@snapshot_rule("KB219", reads="paths")
def unportable_paths(s: Facts) -> list:
    """KB219: a file name Windows reserves (``CON.md``, ``aux``), or two paths (or two
    folders) that differ only in case or Unicode normalisation (one on macOS/Windows)."""
    from kb.repo import colliding, colliding_folders, unportable

    out = []
    for p in sorted(s.files):
        why = unportable(p)
        if why:
            out.append(diag(p, 1, "KB219", f"{p} cannot be checked out everywhere: {why}"))
    for a, b in colliding(list(s.files)):
        out.append(diag(b, 1, "KB219", f"{b} and {a} differ only in case or Unicode "
                                       "normalisation: macOS and Windows take them for one file"))
    for a, b, p in colliding_folders(list(s.files)):
        out.append(diag(p, 1, "KB219", f"folders {b}/ and {a}/ differ only in case or Unicode "
                                       "normalisation: macOS and Windows take them for one "
                                       f"folder (move {p} into {a}/)"))
    return out
