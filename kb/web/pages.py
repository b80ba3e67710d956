"""What each page shows, as plain data, from one commit's :class:`kb.web.source.RevView`.

Every builder reads through the same library calls as the ``--json``
commands: ``Index.extract`` / ``objects`` (``kb ls``),
:func:`kb.api.show_object` on the commit's index (``kb show``), :func:`kb.research.cardview.card_view`
and :func:`kb.views.brief.brief_of` (``kb brief``),
:func:`kb.research.verdict.parse_record` and :func:`~kb.research.verdict.verifier_accuracy`
(``kb verifiers``), :func:`kb.locks.read_locks` (``kb lock status``). The
templates only lay the data out; they escape every string (Jinja2 autoescape).
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from kb.vocab import ACTIVE_HYPOTHESIS, CLOSED_HYPOTHESIS, CONCLUSION, EXPERIMENT_STATUS, \
    HYPOTHESIS_STATUS
from kb.web.source import RevView

__all__ = ["tree_page", "object_page", "board_page", "locks_by_path", "parse_problems",
           "file_notes", "missing_object", "OPEN_DEPTH", "BANNER_MAX"]

#: Tree cards at a depth below this (0 = top level) start unfolded (their children show);
#: deeper ones start folded, so a 5,000-hypothesis tree opens as its two upper levels.
OPEN_DEPTH = 1

#: Diagnostics of one file a page's banner lists (errors first); the rest are counted.
BANNER_MAX = 50


def parse_problems(diags: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The banner of a page drawing on files with parse errors: one entry per file that
    has an error, ``{"path", "errors", "diagnostics": [at most BANNER_MAX, errors first],
    "more"}``, from diagnostics as dicts (``Diagnostic.to_dict``, ``kb show --json``'s).
    A file with warnings only has no entry (nothing of it went unread)."""
    by_path: dict[str, list[dict[str, Any]]] = {}
    for d in diags:
        by_path.setdefault(d["path"], []).append(d)
    out = []
    for path, ds in sorted(by_path.items()):
        errors = sum(d["severity"] == "error" for d in ds)
        if not errors:
            continue
        ds = sorted(ds, key=lambda d: (d["severity"] != "error", d["line"], d["code"]))
        out.append({"path": path, "errors": errors, "diagnostics": ds[:BANNER_MAX],
                    "more": max(len(ds) - BANNER_MAX, 0)})
    return out


def status_class(kind: str, status: str) -> str:
    """A CSS class for a status word (the English word, so colours do not depend on locale)."""
    vocab = {"hypothesis": HYPOTHESIS_STATUS, "experiment": EXPERIMENT_STATUS}.get(kind)
    word = vocab.word(status, "en") if vocab else status
    return "st-" + "".join(c if c.isalnum() else "-" for c in word.lower())[:40]


def status_word(view: RevView, kind: str, status: str) -> str:
    """The status as the KB's locale writes it (``kb ls``'s display)."""
    vocab = {"hypothesis": HYPOTHESIS_STATUS, "experiment": EXPERIMENT_STATUS}.get(kind)
    return vocab.word(status, view.kb.config.locale) if vocab else status


def _list(raw: Any) -> list[str]:
    """A list field as ``Index.extract`` returns it (JSON text, or None)."""
    if not raw:
        return []
    val = json.loads(raw) if isinstance(raw, str) else raw
    return [str(x) for x in val] if isinstance(val, list) else []


def experiments_map(view: RevView) -> dict[str, dict[str, Any]]:
    """Experiment ID -> {id, date, conclusion, conclusion_class, hypothesis, status, path, line}."""
    out: dict[str, dict[str, Any]] = {}
    locale = view.kb.config.locale
    for path, eid, line, status, title, date, concl, hyp in view.extract(
            "experiment", ("date", "conclusion", "hypothesis")):
        if eid in out:
            continue
        canon = CONCLUSION.canonical(concl) if concl else None
        out[eid] = {"id": eid, "date": date, "title": title, "hypothesis": hyp,
                    "status": status_word(view, "experiment", status),
                    "status_class": status_class("experiment", status),
                    "conclusion": CONCLUSION.word(canon, locale) if canon else concl,
                    "conclusion_class": "c-" + (CONCLUSION.word(canon, "en") if canon else "none"),
                    "path": path, "line": line}
    return out


def tree_page(view: RevView) -> dict[str, Any]:
    """The hypothesis tree as cards, with the dashboard's counts.

    Returns ``{"counts": {"total", "active", "closed", "last"}, "events": [...],
    "experiments": n}``. ``events`` is the tree flattened in file order:
    ``("open", card)`` for a card with children (its ``<ul>`` follows),
    ``("leaf", card)`` for a card without, ``("close", None)`` after the last
    child — so the template needs no recursion. A card is ``{id, statement,
    status, status_class, depth, open, path, line, evidence: [exp | {id,
    missing}], n_children, text}`` (``text`` lower-cased for the search box).
    A hypothesis whose parent is not declared is shown at the top level.
    ``problems`` is :func:`parse_problems` of the tree file, ``error_files``
    :meth:`RevView.error_files` (every file of the commit with a parse error).
    """
    rows = view.extract("hypothesis", ("parent", "evidence"))
    exps = experiments_map(view)
    cards: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    kids: dict[str, list[str]] = {}
    active = closed = 0
    for path, hid, line, status, statement, parent, evidence in rows:
        if hid in cards:
            continue  # a duplicate ID: the first declaration (kb verify reports it)
        active += status in ACTIVE_HYPOTHESIS
        closed += status in CLOSED_HYPOTHESIS
        ev = [exps.get(e) or {"id": e, "missing": True} for e in _list(evidence)]
        cards[hid] = {"id": hid, "statement": statement, "parent": parent,
                      "status": status_word(view, "hypothesis", status),
                      "status_class": status_class("hypothesis", status),
                      "path": path, "line": line, "evidence": ev,
                      "text": f"{hid} {statement}".lower()}
        order.append(hid)
    roots = []
    for hid in order:
        p = cards[hid]["parent"]
        if p and p in cards and p != hid:
            kids.setdefault(p, []).append(hid)
        else:
            roots.append(hid)
    events: list[tuple[str, Any]] = []
    seen: set[str] = set()
    # Iterative depth-first walk (a 20-level tree must not hit the recursion limit).
    stack: list[tuple[str, int, bool]] = [(h, 0, False) for h in reversed(roots)]
    while stack:
        hid, depth, done = stack.pop()
        if done:
            events.append(("close", None))
            continue
        if hid in seen:  # a parent cycle: show each card once
            continue
        seen.add(hid)
        card = cards[hid]
        children = [c for c in kids.get(hid, []) if c not in seen]
        card.update(depth=depth, open=depth < OPEN_DEPTH, n_children=len(children))
        if not children:
            events.append(("leaf", card))
            continue
        events.append(("open", card))
        stack.append((hid, depth, True))
        stack.extend((c, depth + 1, False) for c in reversed(children))
    dates = sorted(e["date"] for e in exps.values() if e.get("date"))
    tree_file = view.kb.config.paths["tree"]
    return {"counts": {"total": len(cards), "active": active, "closed": closed,
                       "last": dates[-1] if dates else None},
            "events": events, "experiments": len(exps),
            "problems": parse_problems(d.to_dict() for d in view.file_diagnostics(tree_file)),
            "error_files": view.error_files()}


def locks_by_path(view: RevView) -> dict[str, dict[str, Any]]:
    """Repository path -> lock (``Lock.as_dict`` plus ``describe``) of every held file lock,
    and ``"*"`` for the project lock; locks are refs, read live (not from the commit)."""
    from kb.locks import Settings, clock, read_locks

    now = clock()
    grace = Settings.from_config(view.kb.config.locks).grace
    out: dict[str, dict[str, Any]] = {}
    for lk in read_locks(view.kb.top).values():
        d = lk.as_dict()
        d["describe"] = lk.describe(now, grace)
        out["*" if lk.scope == "project" else (lk.path or "?")] = d
    return out


def object_page(view: RevView, obj_id: str,
                exps: dict[str, dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """One object (``kb show --json``'s declarations) with its file excerpt and lock.

    ``exps`` is :func:`experiments_map` of the view when the caller has it.
    Returns None for an unknown ID; else ``{"id", "decls": [details + {"status_class",
    "excerpt": [(line number, text)], "lock", "repo_path"}], "experiments": {id: exp},
    "duplicate", "problems"}`` (``problems``: :func:`parse_problems` of the declaring
    files' stored diagnostics, ``kb show``'s).
    """
    from kb.api import show_object

    _, decls = show_object(obj_id, idx=view)
    if not decls:
        return None
    locks = locks_by_path(view)
    exps = experiments_map(view) if exps is None else exps
    for d in decls:
        d["status_class"] = status_class(d["kind"], d.get("status", ""))
        d["status"] = status_word(view, d["kind"], d.get("status", ""))
        text = view.read_text(d["path"]) or ""
        lines = text.splitlines()
        first = max(d["line"], 1)
        last = d.get("end_line") or (len(lines) if d["kind"] != "hypothesis" else first)
        if d["kind"] == "hypothesis" and not d.get("end_line"):
            last = first
        d["excerpt"] = [(n, lines[n - 1]) for n in range(first, min(last, len(lines)) + 1)] \
            if d["kind"] == "hypothesis" else list(enumerate(lines, 1))
        d["lock"] = locks.get(view.kb.repo_path(d["path"])) or locks.get("*")
        d["repo_path"] = view.kb.repo_path(d["path"])
    # A settled object and its Verified card share the ID by design (as in `kb show`):
    # only two declarations of one kind are a duplicate.
    kinds = [d["kind"] for d in decls]
    return {"id": obj_id, "decls": decls, "experiments": exps,
            "duplicate": max(kinds.count(x) for x in kinds) > 1,
            "problems": parse_problems(decls[0].get("diagnostics") or [])}


def file_notes(view: RevView, path: str) -> dict[str, Any]:
    """What the page of KB-relative ``path`` says about the file's parse: ``{"problems":
    parse_problems(...) (the error banner, empty without errors), "warnings": [the
    diagnostics as dicts, when the file has warnings but no error]}``, from the
    diagnostics the index stored (``kb index``'s; a file kb does not parse has none)."""
    diags = [d.to_dict() for d in view.file_diagnostics(path)]
    problems = parse_problems(diags)
    return {"problems": problems,
            "warnings": [] if problems else diags[:BANNER_MAX],
            "more": 0 if problems else max(len(diags) - BANNER_MAX, 0)}


def missing_object(view: RevView, obj_id: str) -> dict[str, Any]:
    """The 404 of an ID no readable file declares: ``{"message", "error_files"}``.

    ``error_files`` is :meth:`RevView.error_files` (every file with a parse error, which
    may declare it); the message names those whose name is the ID (a card's ID is its
    file name: ``Problems/<id>.md``), which would declare it were they readable.
    """
    files = view.error_files()
    named = [f["path"] for f in files if f["path"].rsplit("/", 1)[-1].rsplit(".", 1)[0] == obj_id]
    msg = f"no object with ID {obj_id!r} at {view.rev}"
    if named:
        msg += (f"; {', '.join(named)} {'have' if len(named) > 1 else 'has'} parse errors: kb "
                f"could not read {'them' if len(named) > 1 else 'it'}, so "
                f"{'they' if len(named) > 1 else 'it'} may declare {obj_id}")
    elif files:
        msg += f"; {len(files)} file{'s' if len(files) != 1 else ''} with parse errors may declare it"
    return {"message": msg, "error_files": files}


def _records(view: RevView) -> tuple[list[Any], list[dict[str, str]]]:
    """The commit's valid verification records, oldest first, and the record files left
    out as ``{"path", "why"}`` by path, read as ``kb verifiers`` reads them
    (:func:`kb.views.verification.load_records_checked`): not UTF-8, not JSON, or malformed
    (:func:`kb.research.verdict.read_record`), or a verdict ``kb verdict`` could not have
    written (:func:`kb.research.record_faults.record_faults`); what ``kb verify`` reports
    as KB243."""
    from kb.research.record_faults import checked_record, min_votes_of
    from kb.research.verdict import BadRecord, record_order
    from kb.views.verification import records_dir

    folder = records_dir(view.kb)
    need = min_votes_of(view.kb.config)
    out: list[Any] = []
    bad: list[dict[str, str]] = []
    for rel, raw in view.json_blobs(folder):
        rec = checked_record(rel, raw, need)
        if isinstance(rec, BadRecord):
            bad.append({"path": rec.path, "why": rec.why})
        else:
            out.append(rec)
    out.sort(key=record_order)
    return out, bad


def board_page(view: RevView) -> dict[str, Any]:
    """The Vibe Math board: ``kb brief``'s data plus what the brief leaves out.

    Keys: ``brief`` (:func:`kb.views.brief.brief_of`), ``problems`` grouped by
    state (each sorted by priority, ``never`` last), ``graph`` (the dependency
    graph, :func:`kb.web.graph.layout`), ``categories`` (category -> propositions
    with probability), ``methods`` (forest of the 父方法 / 子方法 hierarchy),
    ``verified`` cards, ``records`` (votes, mode, how the verdict was reached,
    transcript), ``bad_records`` (the record files left out: unreadable, malformed, or a
    verdict no vote gives; ``{"path", "why"}``, left out of ``records`` and of the
    accuracy, KB243), ``accuracy`` and
    ``error_files`` (:meth:`RevView.error_files`).
    """
    from kb.research.dependencies import natural_key
    from kb.research.cardview import card_view
    from kb.views.brief import brief_of
    from kb.research.verdict import verifier_accuracy
    from kb.web.graph import layout

    cv = card_view(view)
    brief = brief_of(view.kb, cv)
    states: dict[str, list[dict[str, Any]]] = {}
    for qid in sorted(cv.problems, key=natural_key):
        q = cv.problems[qid]
        states.setdefault(q.get("status") or "(none)", []).append(dict(q, id=qid))
    for qs in states.values():
        qs.sort(key=lambda q: _prio(q.get("priority")) + (natural_key(q["id"]),))
    categories: dict[str, list[dict[str, Any]]] = {}
    for pid in sorted(cv.propositions, key=natural_key):
        p = cv.propositions[pid]
        categories.setdefault(p.get("category") or "(none)", []).append(dict(p, id=pid))
    graph = layout({qid: list(q.get("depends", ())) for qid, q in cv.problems.items()},
                   {**{pid: p.get("title", "") for pid, p in cv.propositions.items()},
                    **{qid: q.get("title", "") for qid, q in cv.problems.items()}},
                   {qid: q.get("status", "") for qid, q in cv.problems.items()})
    records, bad_records = _records(view)
    acc = sorted(verifier_accuracy(records).values(),
                 key=lambda a: (-a.rate, -a.counted, a.verifier))
    return {"brief": brief, "states": sorted(states.items()), "graph": graph,
            "categories": sorted(categories.items()), "methods": _method_forest(cv.methods),
            "verified": [dict(v, id=vid) for vid, v in sorted(cv.verified.items(),
                                                             key=lambda kv: natural_key(kv[0]))],
            "records": [_record_dict(r) for r in reversed(records)],
            "bad_records": bad_records, "accuracy": acc, "error_files": view.error_files()}


def _prio(p: Any) -> tuple[int, int]:
    if isinstance(p, int) and not isinstance(p, bool):
        return (0, p)
    return (2, 0) if p == "never" else (1, 0)


def _record_dict(r: Any) -> dict[str, Any]:
    """A verification record for the page; the transcript as text blocks (a list of
    turns or one string, as Vibe Math and kb write it); ``branch``/``how``: the rule that
    reached the verdict (:func:`kb.research.verdict.decided_by`), ``mode`` the record's
    rule for a split vote."""
    raw = r.raw
    tr = raw.get("transcript")
    turns: list[str] = []
    if isinstance(tr, str) and tr.strip():
        turns = [tr]
    elif isinstance(tr, list):
        for t in tr:
            if isinstance(t, dict):
                who = t.get("verifier") or t.get("role") or t.get("name") or ""
                said = t.get("text") or t.get("content") or t.get("message") or json.dumps(
                    t, ensure_ascii=False)
                turns.append(f"{who}: {said}" if who else str(said))
            else:
                turns.append(str(t))
    from kb.research.verdict import decided_by

    # how: the rule that reached the verdict (a unanimous vote stores mode "forced" too).
    branch, how = decided_by(raw.get("results"), raw.get("mode"))
    return {"path": r.path, "r": r.r, "verdict": r.verdict, "at": r.at, "mode": raw.get("mode") or "",
            "branch": branch, "how": how, "votes": r.results, "transcript": turns}


def _method_forest(methods: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Methods as a forest: roots are methods with no known 父方法; ``children`` from
    both sides (a parent's 子方法 and a child's 父方法), each method once."""
    from kb.research.dependencies import natural_key

    kids: dict[str, set[str]] = {m: set() for m in methods}
    has_parent: set[str] = set()
    for mid, m in methods.items():
        for p in m.get("parents", ()):
            if p in methods and p != mid:
                kids[p].add(mid)
                has_parent.add(mid)
        for c in m.get("submethods", ()):
            if c in methods and c != mid:
                kids[mid].add(c)
                has_parent.add(c)
    seen: set[str] = set()

    def node(mid: str, depth: int) -> dict[str, Any]:
        seen.add(mid)
        m = methods[mid]
        children = [node(c, depth + 1) for c in sorted(kids[mid], key=natural_key)
                    if c not in seen and depth < 50]
        return {"id": mid, "title": m.get("title", ""), "type": m.get("type", ""),
                "status": m.get("status", ""), "claims": list(m.get("claims", ())),
                "applications": len(m.get("applications", ())), "children": children}

    roots = [node(m, 0) for m in sorted(methods, key=natural_key) if m not in has_parent]
    # Methods only reachable through a cycle.
    roots += [node(m, 0) for m in sorted(methods, key=natural_key) if m not in seen]
    return roots


def flatten_forest(nodes: Iterable[dict[str, Any]], depth: int = 0) -> list[tuple[int, dict[str, Any]]]:
    """(depth, node) of a forest in pre-order, for a template without recursion."""
    out: list[tuple[int, dict[str, Any]]] = []
    for n in nodes:
        out.append((depth, n))
        out.extend(flatten_forest(n["children"], depth + 1))
    return out
