"""Snapshot rules (KB2xx): properties of one snapshot (DESIGN.md §4).

Per-file rules take a :class:`kb.checks.facts.FileFacts` whose ``objects``
are the file's objects as attribute-access records (the index's JSON; no
model is built on this path). Whole-snapshot rules take a
:class:`kb.checks.facts.Facts` and work from light rows and links.
Every diagnostic names the file and line, and what fixes it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath
from typing import Any, Optional

from kb.checks.diagnostics import diag
from kb.checks.facts import CARD_KINDS, FileFacts, Facts, Obj
from kb.checks.registry import file_rule, snapshot_rule
from kb.research import dependencies
from kb.vocab import (
    CONCLUSION,
    ENTRY_STATUS,
    EXPERIMENT_STATUS,
    HYPOTHESIS_STATUS,
    METHOD_STATUS,
    PROBLEM_STATUS,
    PROPOSITION_STATUS,
)

def parent_id(hid: str) -> Optional[str]:
    """``H1.2.3`` -> ``H1.2``; a top-level ID -> None."""
    return hid.rsplit(".", 1)[0] if "." in hid else None


def depth(hid: str) -> int:
    """Number of components of a hypothesis ID (``H1`` 1, ``H1.2`` 2)."""
    return hid.count(".") + 1


def natural(s: str) -> list[Any]:
    """A natural-order sort key: ``s`` split into text and int runs (``H2`` < ``H10``)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


# ---------------------------------------------------------------------------
# tree.md (per file)


@file_rule("KB201")
def id_grammar(f: FileFacts) -> list:
    """KB201: every hypothesis ID matches ``[kb] id_grammar``."""
    if f.fmt != "tree":
        return []
    grammar = f.config.id_grammar
    pat = re.compile(grammar)
    out = []
    for h in f.objects:
        if pat.fullmatch(h.id):
            continue
        hint = ""
        if not f.config.custom_grammar and re.fullmatch(r"H[0-9]+(?:\.[0-9]+)*", h.id):
            parts = h.id[1:].split(".")
            if all(int(p) > 0 for p in parts):
                hint = f" (leading zeros: the ID would be {'H' + '.'.join(str(int(p)) for p in parts)})"
            else:
                hint = " (numbers start at 1)"
        out.append(diag(h.path, h.line, "KB201",
                        f"{h.id} does not match the ID grammar `{grammar}`{hint}; IDs are "
                        "H<n>(.<n>)* with n >= 1 and no leading zeros, or set [kb] id_grammar "
                        "in kb.toml"))
    return out


@file_rule("KB203")
def heading_level(f: FileFacts) -> list:
    """KB203: ``H1`` is ``##``, ``H1.1`` is ``###`` … (a custom grammar: relative to
    the level of the file's first top-level declaration)."""
    if f.fmt != "tree":
        return []
    hyps = f.objects
    base = 2
    if f.config.custom_grammar:
        tops = [h for h in hyps if depth(h.id) == 1]
        if not tops:
            return []
        base = tops[0].level
    out = []
    for h in hyps:
        want = base + depth(h.id) - 1
        if h.level == want:
            continue
        fix = None
        old = f.line_text(h.line)
        if old is not None and old.startswith("#" * h.level) and want <= 64:
            fix = (h.line, old, "#" * want + old[h.level:])
        out.append(diag(h.path, h.line, "KB203",
                        f"{h.id} is declared with a level-{h.level} heading ({'#' * h.level}); "
                        f"an ID of depth {depth(h.id)} takes {'#' * want} (kb verify --fix)",
                        fix=fix))
    return out


def _block_end(h: Any) -> int:
    lines = list((h.anchor_lines or {}).values())
    return max(lines) if lines else h.line


@file_rule("KB204")
def parent_children(f: FileFacts) -> list:
    """KB204: ``Parent:`` / ``Children:`` agree with the IDs (they are derived)."""
    if f.fmt != "tree":
        return []
    hyps = f.objects
    declared = {h.id for h in hyps}
    kids: dict[str, list[str]] = {}
    for h in hyps:
        p = parent_id(h.id)
        if p is not None:
            kids.setdefault(p, [])
            if h.id not in kids[p]:
                kids[p].append(h.id)
    out = []
    seen: set[str] = set()
    for h in hyps:
        if h.id in seen:
            continue  # a duplicate declaration (KB202 says so)
        seen.add(h.id)
        lines = h.anchor_lines or {}
        want_parent = parent_id(h.id)
        have_parent = (h.anchors or {}).get("Parent")
        if want_parent is None:
            if have_parent is not None and have_parent.strip():
                out.append(diag(h.path, lines.get("Parent", h.line), "KB204",
                                f"{h.id} is a top-level hypothesis but has 'Parent: {have_parent.strip()}'; "
                                "remove the Parent: line"))
        else:
            if want_parent not in declared:
                out.append(diag(h.path, h.line, "KB204",
                                f"the parent {want_parent} of {h.id} is not declared in the tree; "
                                f"declare {want_parent} or renumber {h.id}"))
            if have_parent is None:
                end = _block_end(h)
                old = f.line_text(end)
                fix = (end, old, f"{old}\nParent: {want_parent}") if old is not None else None
                out.append(diag(h.path, h.line, "KB204",
                                f"{h.id} has no 'Parent: {want_parent}' line (kb verify --fix)",
                                fix=fix))
            elif have_parent.strip() != want_parent:
                ln = lines.get("Parent", h.line)
                old = f.line_text(ln)
                fix = (ln, old, f"Parent: {want_parent}") if old is not None else None
                out.append(diag(h.path, ln, "KB204",
                                f"{h.id} has 'Parent: {have_parent.strip()}'; its parent is "
                                f"{want_parent} (kb verify --fix)", fix=fix))
        want_kids = kids.get(h.id, [])
        have_kids = list(h.children or [])
        if want_kids:
            if not h.has_children_line:
                end = _block_end(h)
                old = f.line_text(end)
                new_line = "Children: " + ", ".join(want_kids)
                fix = (end, old, f"{old}\n{new_line}") if old is not None else None
                out.append(diag(h.path, h.line, "KB204",
                                f"{h.id} has children but no '{new_line}' line (kb verify --fix)",
                                fix=fix))
            elif have_kids != want_kids:
                ln = lines.get("Children", h.line)
                old = f.line_text(ln)
                new_line = "Children: " + ", ".join(want_kids)
                fix = (ln, old, new_line) if old is not None else None
                missing = [k for k in want_kids if k not in have_kids]
                extra = [k for k in have_kids if k not in want_kids]
                what = []
                if missing:
                    what.append(f"misses {', '.join(missing)}")
                if extra:
                    what.append(f"names {', '.join(extra)}, not a declared child")
                if not what:
                    what.append("is not in tree order")
                out.append(diag(h.path, ln, "KB204",
                                f"'Children:' of {h.id} {' and '.join(what)}; write '{new_line}' "
                                "(kb verify --fix)", fix=fix))
        elif have_kids:
            out.append(diag(h.path, lines.get("Children", h.line), "KB204",
                            f"'Children:' of {h.id} names {', '.join(have_kids)}, but no child of "
                            f"{h.id} is declared; remove them from the line"))
    return out


@file_rule("KB205")
def status_words(f: FileFacts) -> list:
    """KB205: status (and conclusion) words come from their vocabulary."""
    out = []
    for o in f.objects:
        lines = o.anchor_lines or {}
        if o.kind == "hypothesis":
            if o.status and o.status not in HYPOTHESIS_STATUS.zh_to_en:
                out.append(diag(o.path, lines.get("Status", o.line), "KB205",
                                f"unknown status {o.status!r} of {o.id}; use one of "
                                f"{HYPOTHESIS_STATUS.accepted()}"))
        elif o.kind == "experiment":
            if o.status and o.status not in EXPERIMENT_STATUS.zh_to_en:
                out.append(diag(o.path, lines.get("Status", o.line), "KB205",
                                f"unknown status {o.status!r} of {o.id}; use one of "
                                f"{EXPERIMENT_STATUS.accepted()}"))
            if o.conclusion and o.conclusion not in CONCLUSION.zh_to_en:
                out.append(diag(o.path, o.conclusion_line or o.line, "KB205",
                                f"unknown conclusion {o.conclusion!r} of {o.id}; the **结论** line "
                                f"starts with one of {CONCLUSION.accepted()}"))
        elif o.kind in ("problem", "proposition", "method"):
            vocab = {"problem": PROBLEM_STATUS, "proposition": PROPOSITION_STATUS,
                     "method": METHOD_STATUS}[o.kind]
            if o.status and o.status not in vocab:
                out.append(diag(o.path, lines.get("状态", o.line), "KB205",
                                f"unknown 状态 {o.status!r} of {o.kind} {o.id}; use one of "
                                f"{', '.join(vocab)}"))
            for e in o.entries or []:
                if e.status and e.status not in ENTRY_STATUS:
                    out.append(diag(o.path, e.line, "KB205",
                                    f"unknown entry status {e.status!r}; use one of "
                                    f"{', '.join(ENTRY_STATUS)}"))
        elif o.kind == "verified":
            if o.conclusion and o.conclusion not in ("真", "假"):
                out.append(diag(o.path, lines.get("结论", o.line), "KB205",
                                f"unknown 结论 {o.conclusion!r} of verified card {o.id}; use 真 or 假"))
    return out


@file_rule("KB206")
def settled_without_evidence(f: FileFacts) -> list:
    """KB206: 被支持 / 被推翻 needs at least one experiment in Evidence."""
    if f.fmt != "tree":
        return []
    out = []
    for h in f.objects:
        if h.status in ("被支持", "被推翻") and not h.evidence:
            word = HYPOTHESIS_STATUS.word(h.status, f.config.locale)
            out.append(diag(h.path, (h.anchor_lines or {}).get("Evidence", (h.anchor_lines or {}).get("Status", h.line)),
                            "KB206", f"{h.id} is {word} but its Evidence is empty; name the "
                            "experiments that decided it"))
    return out


@file_rule("KB207", "KB208")
def experiment_rules(f: FileFacts) -> list:
    """KB207: a finished experiment has a conclusion; KB208: file name = ID."""
    if f.fmt != "experiment":
        return []
    out = []
    for e in f.objects:
        if e.status == "已完成" and e.conclusion is None:
            sections = e.sections or []
            if e.conclusion_line:
                out.append(diag(e.path, e.conclusion_line, "KB207",
                                f"{e.id} is 已完成 but its **结论** line has no conclusion word; "
                                "start it with 支持, 推翻 or 不确定"))
            elif "结果" not in sections:
                out.append(diag(e.path, (e.anchor_lines or {}).get("Status", e.line), "KB207",
                                f"{e.id} is 已完成 but has no '## 结果' section with a '**结论**' line"))
        stem = PurePosixPath(e.path).stem
        if e.id != stem:
            out.append(diag(e.path, e.line, "KB208",
                            f"experiment {e.id} is in {PurePosixPath(e.path).name}; an experiment "
                            f"file is named <ID>.md ({e.id}.md)"))
    return out


@file_rule("KB209", "KB218")
def card_rules(f: FileFacts) -> list:
    """KB209: a card's ``- ID:`` equals its file name; KB218: probabilities in [0,1]."""
    out = []
    for o in f.objects:
        if o.kind not in ("problem", "proposition", "method", "verified"):
            continue
        lines = o.anchor_lines or {}
        anchor_id = (o.anchors or {}).get("ID")
        if anchor_id is not None and anchor_id.strip() and anchor_id.strip() != o.id:
            out.append(diag(o.path, lines.get("ID", o.line), "KB209",
                            f"'- ID: {anchor_id.strip()}' disagrees with the file name: the ID of "
                            f"{PurePosixPath(o.path).name} is {o.id}"))
        for key, attr in (("概率", "probability"), ("价值/关键性", "value")):
            x = o.get(attr)
            if isinstance(x, (int, float)) and not 0 <= x <= 1:
                out.append(diag(o.path, lines.get(key, o.line), "KB218",
                                f"{key} of {o.id} is {x}, outside [0,1] (kb never clamps it)"))
        for e in o.entries or []:
            x = e.probability
            if isinstance(x, (int, float)) and not 0 <= x <= 1:
                out.append(diag(o.path, e.line, "KB218",
                                f"entry probability {x} is outside [0,1] (kb never clamps it; "
                                "Vibe Math would read it as settled)"))
    return out


# ---------------------------------------------------------------------------
# across files (whole snapshot)


@snapshot_rule("KB202")
def duplicate_ids(s: Facts) -> list:
    """KB202: one declaration per ID (per namespace), both locations named."""
    out = []
    for (ns, oid), decls in sorted(s.duplicates().items()):
        if ns == "direction":
            continue
        places = [d.where for d in decls]
        for d in decls[1:]:
            others = ", ".join(p for p in places if p != d.where)
            out.append(diag(d.path, d.line, "KB202",
                            f"{oid} is declared more than once: at {d.where} and at {others}; "
                            "give this one the next free ID"))
    return out


def _anchor_line(s: Facts, path: str, obj_id: str, key: str) -> int:
    for r in s.full_rows(path):
        if r.id == obj_id:
            import json

            data = json.loads(r.data)
            return (data.get("anchor_lines") or {}).get(key, r.line)
    return 0


@snapshot_rule("KB210", "KB211", "KB212", "KB214")
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
    ev_lines: dict[str, dict[str, int]] = {}
    for path, src, dst, kind in sorted(links):
        if kind == "evidence" and dst not in exps:
            if path not in ev_lines:
                ev_lines[path] = {x.id: x.evidence_line or x.line for x in s.light(path)}
            out.append(diag(path, ev_lines[path].get(src, 0), "KB210",
                            f"Evidence of {src} names {dst}, which is not an experiment of this KB; "
                            "create it or correct the ID"))
        elif kind == "tests" and dst not in hyps:
            line = next((r.line for r in s.full_rows(path) if r.id == src), 0)
            out.append(diag(path, line, "KB211",
                            f"experiment {src} tests {dst}, which is not a hypothesis of tree.md"))
        elif kind == "depends" and dst not in cards:
            out.append(diag(path, _anchor_line(s, path, src, "依赖"), "KB212",
                            f"{src} depends on {dst}, which does not exist; create it or correct "
                            "the ID in 依赖"))
        elif kind == "claims" and dst not in verified:
            out.append(diag(path, _anchor_line(s, path, src, "可信断言"), "KB214",
                            f"可信断言 of {src} names {dst}, which has no Verified card; only "
                            "verified claims are trusted"))
    return out


@snapshot_rule("KB213")
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
    for comp in _sccs(graph):
        if len(comp) == 1:
            node = comp[0]
            if node not in graph.get(node, []):
                continue
        first = min(comp, key=natural)
        cycle = _cycle_path(graph, first, set(comp))
        path = where.get(first, "")
        out.append(diag(path, _anchor_line(s, path, first, "依赖"), "KB213",
                        f"dependency cycle: {' -> '.join(cycle)}; remove one dependency"))
    return out


def _sccs(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, [])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(graph.get(nxt, []))))
                    advanced = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == node:
                        break
                out.append(comp)
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


@snapshot_rule("KB215")
def method_hierarchy(s: Facts) -> list:
    """KB215: 上级体系 and 子方法 name each other."""
    parents: set[tuple[str, str]] = set()   # (child, parent) from the child's 上级体系
    subs: set[tuple[str, str]] = set()      # (child, parent) from the parent's 子方法
    where: dict[str, str] = {}
    for path, src, dst, kind in s.links():
        if kind == "parent_method":
            parents.add((src, dst))
            where.setdefault(src, path)
        elif kind == "submethod":
            subs.add((dst, src))
            where.setdefault(src, path)
    if not parents and not subs:
        return []
    methods = s.ids("method")
    out = []
    for child, parent in sorted(parents - subs):
        path = where[child]
        if parent not in methods:
            msg = f"上级体系 of {child} names {parent}, which is not a method"
        else:
            msg = (f"{child} names {parent} in 上级体系, but 子方法 of {parent} does not name "
                   f"{child}; add it there")
        out.append(diag(path, _anchor_line(s, path, child, "上级体系"), "KB215", msg))
    for child, parent in sorted(subs - parents):
        path = where[parent]
        if child not in methods:
            msg = f"子方法 of {parent} names {child}, which is not a method"
        else:
            msg = (f"{parent} names {child} in 子方法, but 上级体系 of {child} does not name "
                   f"{parent}; add it there")
        out.append(diag(path, _anchor_line(s, path, parent, "子方法"), "KB215", msg))
    return out


@snapshot_rule("KB216")
def depended_by(s: Facts) -> list:
    """KB216: a problem's 被依赖 is the reverse of the problems' 依赖 lists."""
    problems = {r.id: r for r in s.of_kind("problem")}
    if not problems:
        return []
    depends: dict[str, list[str]] = {pid: [] for pid in problems}
    declared: dict[str, set[str]] = {}
    for path, src, dst, kind in s.links():
        if kind == "depends" and src in problems and problems[src].path == path:
            depends[src].append(dst)
        elif kind == "depended_by" and src in problems:
            declared.setdefault(src, set()).add(dst)
    derived = dependencies.reverse_dependencies(depends)
    out = []
    differ = [pid for pid in problems if set(derived[pid]) != declared.get(pid, set())]
    from kb.parse.common import dump_list

    differ.sort(key=natural)
    lines_of = {pid: _anchor_line(s, problems[pid].path, pid, "被依赖") for pid in differ}
    # The fix texts' files in one read (hand-kept KBs carry hundreds of these warnings).
    texts = s.read_many(problems[pid].path for pid in differ
                        if lines_of[pid] and lines_of[pid] != problems[pid].line)
    for pid in differ:
        row = problems[pid]
        want = derived[pid]
        ln = lines_of[pid]
        fix = None
        if ln and ln != row.line:
            data = texts.get(row.path)
            if data is not None:
                lines = data.decode("utf-8", "replace").lstrip("\ufeff").split("\n")
                if ln <= len(lines):
                    old = lines[ln - 1].rstrip("\r")
                    prefix = old.split(":", 1)[0] if ":" in old else old.split("：", 1)[0]
                    fix = (ln, old, f"{prefix}: {dump_list(want)}")
            out.append(diag(row.path, ln, "KB216",
                            f"被依赖 of {pid} should be {dump_list(want)} (the problems whose 依赖 "
                            "names it); kb verify --fix writes it", fix=fix))
        else:
            out.append(diag(row.path, row.line, "KB216",
                            f"{pid} has no 被依赖 line; the problems depending on it are "
                            f"{dump_list(want)}"))
    return out


@snapshot_rule("KB217")
def verified_cards(s: Facts) -> list:
    """KB217: every Verified card has its settled object, and every settled object its card."""
    vpath = s.config.paths["verified"].strip("/")
    cards: dict[tuple[str, str], Obj] = {}
    for r in s.of_kind("verified"):
        folder = r.path[len(vpath) + 1:].split("/", 1)[0] if r.path.startswith(vpath + "/") else ""
        cards[(folder, r.id)] = r
    settled = {("命题", r.id): r for r in s.of_kind("proposition") if r.status in ("已验证·真", "已验证·假")}
    settled.update({("问题", r.id): r for r in s.of_kind("problem") if r.status == "已解决"})
    if not cards and not settled:
        return []
    objects = {(("命题" if r.kind == "proposition" else "问题"), r.id): r
               for r in s.of_kind("proposition", "problem")}
    out = []
    for key, card in sorted(cards.items()):
        if key in settled:
            continue
        obj = objects.get(key)
        why = "does not exist" if obj is None else f"is not settled (状态 {obj.status})"
        out.append(diag(card.path, card.line, "KB217",
                        f"Verified card {card.id}: its {'proposition' if key[0] == '命题' else 'problem'} "
                        f"{why}"))
    for key, obj in sorted(settled.items()):
        if key not in cards:
            out.append(diag(obj.path, obj.line, "KB217",
                            f"{obj.id} is {obj.status} but has no Verified card "
                            f"({vpath}/{key[0]}/{obj.id}.md)"))
    return out


# ---------------------------------------------------------------------------
# DASHBOARD.md


def _experiment_key(s: Facts) -> str:
    h = hashlib.sha1()
    for p in s.paths("experiment"):
        h.update(f"{p}\0{s.files[p]}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


class _Fields(dict):
    """An object's JSON with attribute access that raises on a missing field, so
    that a renderer needing more than the model's fields falls back to models."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def render_expected(s: Facts) -> Optional[str]:
    """What ``kb dashboard`` renders for this snapshot (None without a DASHBOARD.md).

    ``render_dashboard`` reads the objects' fields only, so it is given the
    index's JSON of the Hypothesis and Experiment models (no model is built on
    the hook's path); if it ever needs more, the models themselves are built.
    """
    import json

    dash = s.config.paths["dashboard"]
    if dash not in s.files:
        return None
    from kb.render.dashboard import render_dashboard

    tree = s.config.paths["tree"]
    meta = s.meta(dash)
    steps = meta.get("next_steps")
    newline = meta.get("newline") or "\n"
    locale = s.config.locale
    formats = s.formats
    tree_blob = s.files.get(tree)
    # 1. the fields the renderer reads today, straight from SQLite (strict views:
    #    a field it starts reading later raises and we fall back to the full JSON).
    try:
        hyps = [] if tree_blob is None else [_Fields(id=i, statement=st, status=su, parent=pa)
                                             for i, st, su, pa in s.hypotheses_brief(tree)]
        exps = [_Fields(date=d) for p, d in sorted(s.field_of_kind("experiment", "date"))
                if formats.get(p) == "experiment"]
        return render_dashboard(hyps, exps, steps, locale, newline)
    except (AttributeError, TypeError):
        pass
    hyp_rows = [r for r in s.full_rows(tree) if r.kind == "hypothesis"] if tree_blob else []
    exp_rows = [(p, data) for p, data in s.data_of_kind("experiment") if formats.get(p) == "experiment"]
    # 2. the whole JSON of the models; 3. the models themselves.
    try:
        hyps = [json.loads(r.data, object_hook=_Fields) for r in hyp_rows]
        exps = [json.loads(d, object_hook=_Fields) for _, d in sorted(exp_rows)]
        return render_dashboard(hyps, exps, steps, locale, newline)
    except (AttributeError, TypeError):
        from kb.model import Experiment, Hypothesis

        hyps = [Hypothesis.from_json(r.data) for r in hyp_rows]
        exps = [Experiment.from_json(d) for _, d in sorted(exp_rows)]
        return render_dashboard(hyps, exps, steps, locale, newline)


def _first_difference(a: str, b: str) -> int:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return i + 1
    return min(len(la), len(lb)) + 1


@snapshot_rule("KB240", volatile=True)
def stale_dashboard(s: Facts) -> list:
    """KB240: DASHBOARD.md is byte for byte what ``kb dashboard`` renders.

    Silent when the KB has no DASHBOARD.md. Cached per (tree, dashboard,
    experiments) blob ids, then per latest experiment date: the dashboard
    depends on the experiments only through that date.
    """
    import kb

    dash = s.config.paths["dashboard"]
    if dash not in s.files:
        return []
    tree = s.config.paths["tree"]
    base = f"dash\0{kb.__version__}\0{s.config.locale}\0{s.files.get(tree, '')}\0{s.files[dash]}"
    key1 = hashlib.sha1(f"{base}\0{_experiment_key(s)}".encode("utf-8", "surrogateescape")).hexdigest()
    verdict = s.stored(key1)
    if verdict is None:
        formats = s.formats
        dates = [d for p, d in s.field_of_kind("experiment", "date")
                 if d and formats.get(p) == "experiment"]
        key2 = hashlib.sha1(f"{base}\0{max(dates, default='')}".encode("utf-8", "surrogateescape")).hexdigest()
        verdict = s.stored(key2)
        if verdict is None:
            want = render_expected(s)
            have = (s.read(dash) or b"").removeprefix(b"\xef\xbb\xbf")
            if want is None or have == want.encode("utf-8"):
                verdict = "fresh"
            else:
                verdict = f"stale:{_first_difference(have.decode('utf-8', 'replace'), want)}"
        s.store([(key1, verdict), (key2, verdict)])
    if verdict == "fresh":
        return []
    line = int(verdict.split(":", 1)[1]) if ":" in verdict else 1
    return [diag(dash, line, "KB240",
                 f"{dash} is stale: it is not what `kb dashboard` renders from {tree} and the "
                 "experiments (first difference at this line); run `kb dashboard` and commit it")]


@snapshot_rule("KB219")
def unportable_paths(s: Facts) -> list:
    """KB219: a file name Windows reserves (``CON.md``, ``aux``), or two paths that
    differ only in case or Unicode normalisation (one file on macOS/Windows)."""
    from kb.repo import colliding, unportable

    out = []
    for p in sorted(s.files):
        why = unportable(p)
        if why:
            out.append(diag(p, 1, "KB219", f"{p} cannot be checked out everywhere: {why}"))
    for a, b in colliding(list(s.files)):
        out.append(diag(b, 1, "KB219", f"{b} and {a} differ only in case or Unicode "
                                       "normalisation: macOS and Windows take them for one file"))
    return out
