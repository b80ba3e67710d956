"""The research diff of a range (``kb diff``): what the research changed, as plain data.

Built from the parsed objects of the two sides (:mod:`kb.review.sides`) and
kb's commit trailers (:mod:`kb.review.commits`), never from textual diffs of
Markdown. Only what the range changed appears: an object whose anchors are
the same on both sides is not listed (a prose-only edit of a card or an
experiment is listed once, as ``edited``).

:func:`research_diff` returns a dict (JSON-ready, schema below); the CLI, an
MCP tool and a web page render that same dict (:mod:`kb.review.render`)::

    {"kb", "source", "base", "tip", "commits": [CommitInfo.as_dict()],
     "hypotheses": {"added", "removed", "corrected", "status", "evidence"},
     "experiments": {"added", "finished", "conclusion_changed", "logged", "edited", "removed"},
     "cards": {"added", "removed", "status", "settled", "priorities", "dependencies",
               "entries_added", "entries_changed", "probabilities", "applications", "edited"},
     "verified": {"added", "changed"}, "verdicts": [...],
     "records_changed": [{"path", "deleted", "commits"}],  # records modified/deleted (KB310)
     "renumberings": [{"from", "to", "commit"}], "overrides": [{"id", "reason", "commit"}],
     "trail": {"added", "closed"} | None,
     "unreadable": [{"path", "line", "code", "message"}],  # changed files kb cannot read
     "findings": [Finding.as_dict()] | None, "findings_summary": {...} | None,
     "mermaid": {"lines", "shown", "left_out", "note"} | None, "empty": bool}
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

from kb import git, json_input
from kb.errors import UsageError
from kb.repo import KnowledgeBase
from kb.review.sides import Sides, open_sides, records_dir

CARD_KINDS = ("problem", "proposition", "method", "direction", "record")
#: Statuses that settle a card (VIBEMATH-V3.md): a Verified card goes with each.
SETTLED = {"problem": ("已解决",), "proposition": ("已验证·真", "已验证·假")}
_DATA = re.compile(r"^\s*\*\*(?:数据|Data)\*\*\s*[:：]\s*(?P<v>.*?)\s*$")


def research_diff(k: KnowledgeBase, source: str = "worktree", a: Optional[str] = None,
                  b: Optional[str] = None, *, findings: bool = True,
                  environ: Optional[dict[str, str]] = None, against: Optional[str] = None,
                  rewrite: bool = False) -> dict[str, Any]:
    """The research diff of ``k`` for ``source`` (``range`` with ``a``..``b``,
    ``staged`` or ``worktree``), as a dict (module docstring).

    ``findings`` also runs the rules over the same change (``kb verify`` in the
    matching mode) and lists their errors and warnings with file and line; for a
    range, ``against`` and ``rewrite`` judge it as ``kb verify --range a..b --against
    …`` / ``--rewrite`` do (what a pull request's or a push's CI job runs), so the
    diff's rules line says what the job's check says.
    Raises UsageError (bad range, a revision starting with ``-``, or
    ``against``/``rewrite`` without a range), EnvironmentError_ (git failures).
    """
    from kb.checks.targets import open_index

    if source != "range" and (against or rewrite):
        raise UsageError("--against and --rewrite judge a range (kb diff A..B)")
    if against is not None:  # refused before any work, not after the diff is built
        git.revision(against, "--against")
    with open_index(k) as idx:
        s = open_sides(k, idx, source, a, b, environ, rewrite)
        out = _build(s)
    if findings:
        out["findings"], out["findings_summary"] = _findings(k, s, environ, a, against, rewrite)
    out["empty"] = _is_empty(out)
    return out


def _build(s: Sides) -> dict[str, Any]:
    ren = _renumbers(s)
    old, new = dict(s.old_objects), dict(s.new_objects)
    pairs: list[tuple[tuple[str, str], tuple[str, str]]] = []
    for (kind, oid), fields in list(old.items()):
        key_new = (kind, ren.get(oid, oid))
        if key_new not in new and (kind, oid) in new:
            key_new = (kind, oid)  # a Kb-Renumber naming it renumbered nothing here
        if key_new in new:
            pairs.append(((kind, oid), key_new))
    paired_new, paired_old = {p[1] for p in pairs}, {p[0] for p in pairs}
    added = [k for k in new if k not in paired_new]
    blind = {u["path"] for u in s.unreadable}
    removed = [k for k in old if k not in paired_old and old[k]["path"] not in blind]
    by_id = _commits_by_id(s)
    overrides = _overrides(s)
    ctx = _Ctx(s, by_id, overrides, ren)
    out: dict[str, Any] = {
        "kb": s.kb.prefix.rstrip("/") or ".", "source": s.source, "base": s.base, "tip": s.tip,
        "commits": [c.as_dict() for c in s.commits],
        "hypotheses": _hypotheses(ctx, old, new, pairs, added, removed),
        "experiments": _experiments(ctx, old, new, pairs, added, removed),
        "cards": _cards(ctx, old, new, pairs, added, removed),
        "verified": _verified(ctx, old, new, pairs, added, removed),
        "verdicts": _verdicts(ctx),
        "records_changed": _records_changed(ctx),
        "renumberings": [{"from": a, "to": b, "commit": c.commit}
                         for c in s.commits for a, b in c.renumbers],
        "overrides": [{"id": i, "reason": r, "commit": c} for (i, c), r in overrides.items()],
        "trail": _trail(s),
        "unreadable": s.unreadable,
        "findings": None, "findings_summary": None,
    }
    _mark_records(out["cards"]["settled"], out["verdicts"], new)
    from kb.review.mermaid import changed_tree

    out["mermaid"] = changed_tree(s, new, out["hypotheses"], s.kb.config.locale)
    _locale_words(out, s.kb.config.locale)
    return out


def _locale_words(out: dict[str, Any], locale: str) -> None:
    """Hypothesis and experiment statuses and conclusions in the KB's own words
    (DESIGN.md §3: JSON speaks the KB's vocabulary); cards have one vocabulary."""
    from kb.vocab import CONCLUSION, EXPERIMENT_STATUS, HYPOTHESIS_STATUS

    def w(vocab: Any, v: Any) -> Any:
        return vocab.word(v, locale) if isinstance(v, str) and vocab.canonical(v) else v

    h = out["hypotheses"]
    for x in h["added"] + h["removed"]:
        x["status"] = w(HYPOTHESIS_STATUS, x["status"])
    for x in h["status"]:
        x["from"], x["to"] = w(HYPOTHESIS_STATUS, x["from"]), w(HYPOTHESIS_STATUS, x["to"])
        for e in x["evidence"]:
            if "status" in e:
                e["status"] = w(EXPERIMENT_STATUS, e["status"])
                e["conclusion"] = w(CONCLUSION, e["conclusion"])
    e = out["experiments"]
    for x in e["added"] + e["finished"]:
        x["status"] = w(EXPERIMENT_STATUS, x["status"])
        if "conclusion" in x:
            x["conclusion"] = w(CONCLUSION, x["conclusion"])
    for x in e["conclusion_changed"]:
        x["from"], x["to"] = w(CONCLUSION, x["from"]), w(CONCLUSION, x["to"])


class _Ctx:
    """What every section needs: the sides, commits by ID, overrides, renumberings."""

    def __init__(self, s: Sides, by_id: dict[str, list[str]],
                 overrides: dict[tuple[str, Optional[str]], str], ren: dict[str, str]) -> None:
        self.s, self.by_id, self.overrides, self.ren = s, by_id, overrides, ren
        self.back = {v: k for k, v in ren.items()}
        self.op_of = {c.commit: c.op for c in s.commits}

    def commits(self, oid: str, path: Optional[str] = None) -> list[str]:
        """Commits that named ``oid`` (Kb-Id) or changed its file (one object per file)."""
        out = list(self.by_id.get(oid, []))
        if oid in self.back:
            out = self.by_id.get(self.back[oid], []) + out
        if path is not None:
            rel = self.s.kb.rel(path)
            out += self.s.path_commits.get(rel or "", [])
        return list(dict.fromkeys(out))

    def reason(self, oid: str, op: Optional[str] = None) -> Optional[str]:
        """The override reason naming ``oid`` (or its old number) in the range, if any. With
        ``op`` (``hyp.status``, ``hyp.edit``), an override a kb command of another kind wrote
        is not this change's: `kb hyp edit H1 … --reason typo` labelled a plain status move
        of H1 in the same range "override: typo". A hand-made commit's override (no
        ``Kb-Op``) and ``KB_OVERRIDE``'s may be any change's."""
        for (i, c), r in self.overrides.items():
            if i != oid and i != self.back.get(oid):
                continue
            made_by = self.op_of.get(c) if c is not None else None
            if op is None or made_by is None or made_by == op:
                return r
        return None


def _renumbers(s: Sides) -> dict[str, str]:
    """Old ID -> final ID over the range's ``Kb-Renumber`` trailers (chains composed)."""
    out: dict[str, str] = {}
    for c in s.commits:
        for a, b in c.renumbers:
            for k, v in list(out.items()):
                if v == a:
                    out[k] = b
            out.setdefault(a, b)
    return out


def _commits_by_id(s: Sides) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for c in s.commits:
        for i in c.ids:
            out.setdefault(i, []).append(c.commit)
    return out


def _overrides(s: Sides) -> dict[tuple[str, Optional[str]], str]:
    out: dict[tuple[str, Optional[str]], str] = {}
    for c in s.commits:
        for i, r in c.overrides.items():
            out[(i, c.commit)] = r
    for i, r in s.overrides_env.items():
        out[(i, None)] = r
    return out


def _hypotheses(ctx: _Ctx, old: dict, new: dict, pairs: list, added: list, removed: list) -> dict[str, list]:
    out: dict[str, list] = {"added": [], "removed": [], "corrected": [], "status": [],
                            "evidence": [], "renumbered": []}
    for key in added:
        if key[0] == "hypothesis":
            h = new[key]
            out["added"].append({"id": h["id"], "parent": h.get("parent"), "statement": h["statement"],
                                 "status": h["status"], "path": h["path"], "line": h["line"],
                                 "commits": ctx.commits(h["id"])})
    for key in removed:
        if key[0] == "hypothesis":
            h = old[key]
            out["removed"].append({"id": h["id"], "statement": h["statement"], "status": h["status"],
                                   "reason": ctx.reason(h["id"])})
    cited: list[str] = []
    moves = []
    for ok, nk in pairs:
        if ok[0] != "hypothesis":
            continue
        o, n = old[ok], new[nk]
        hid = n["id"]
        where = {"path": n["path"], "line": n["line"], "commits": ctx.commits(hid)}
        if ok[1] != nk[1]:
            out["renumbered"].append({"from": ok[1], "to": hid, **where})
        if o["statement"] != n["statement"]:
            out["corrected"].append({"id": hid, "from": o["statement"], "to": n["statement"],
                                     "reason": ctx.reason(hid, "hyp.edit"), **where})
        ev_old, ev_new = list(o.get("evidence") or ()), list(n.get("evidence") or ())
        appended = [e for e in ev_new if e not in ev_old]
        dropped = [e for e in ev_old if e not in ev_new]
        if appended or dropped:
            out["evidence"].append({"id": hid, "added": appended, "removed": dropped, **where})
        if o["status"] != n["status"]:
            because = appended or ev_new
            cited += because
            moves.append((hid, o["status"], n["status"], because, where))
    exps = _experiment_states(ctx, cited)
    for hid, frm, to, because, where in moves:
        out["status"].append({"id": hid, "from": frm, "to": to,
                              "reason": ctx.reason(hid, "hyp.status"),
                              "evidence": [exps.get(e, {"id": e}) for e in because], **where})
    return out


def _experiment_states(ctx: _Ctx, ids: list[str]) -> dict[str, dict[str, Any]]:
    """ID -> {id, status, conclusion, hypothesis, action, data} on the after side."""
    if not ids:
        return {}
    known = {k[1]: v for k, v in ctx.s.new_objects.items() if k[0] == "experiment"}
    folder = ctx.s.kb.config.paths["experiments"].strip("/")
    missing = [i for i in dict.fromkeys(ids) if i not in known]
    paths = [(f"{folder}/" if folder not in ("", ".") else "") + f"{i}.md" for i in missing]
    known.update({i: f for i, f in ctx.s.lookup(paths).items() if f.get("kind") == "experiment"})
    out = {}
    for i in ids:
        e = known.get(i)
        if e is not None:
            out[i] = {"id": i, "status": e["status"], "conclusion": e.get("conclusion"),
                      "hypothesis": e.get("hypothesis"), "action": e.get("action", ""),
                      "path": e["path"], "line": e["line"]}
    return out


def _sections_changed(ctx: _Ctx, rel: str, was: Optional[str] = None) -> list[str]:
    """The ``## `` sections of file ``rel`` whose text differs between the two sides of
    the diff (new side's order, then those only the old side has); [] when the file did
    not change or a side cannot be read. ``was``: the old side's path of the file, when a
    ``[paths]`` move carried it to ``rel``."""
    old, new = ctx.s.changes.get(rel, (None, None))
    if was is not None and was != rel:
        old = ctx.s.changes.get(was, (None, None))[0]
    if not old or not new:
        return []
    data = ctx.s.read([old, new])
    if old not in data or new not in data:
        return []
    before, after = _sections(data[old]), _sections(data[new])
    names = list(dict.fromkeys([*after, *before]))
    return [x for x in names if before.get(x) != after.get(x)]


def _sections(data: bytes) -> dict[str, list[str]]:
    """``## `` heading -> its lines (a heading written twice: both bodies, in order)."""
    out: dict[str, list[str]] = {}
    name: Optional[str] = None
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            out.setdefault(name, [])
        elif name is not None:
            out[name].append(line.rstrip())
    return {k: [ln for ln in v if ln] for k, v in out.items()}


def _data_line(ctx: _Ctx, rel: str, blob: Optional[str]) -> Optional[str]:
    """The ``**数据**`` anchor of an experiment's ``## 结果`` section, read from that version."""
    if not blob:
        return None
    data = ctx.s.read([blob]).get(blob)
    if data is None:
        return None
    section = ""
    for line in data.decode("utf-8", "replace").splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        if section in ("结果", "Result", "Results"):
            m = _DATA.match(line)
            if m:
                return m.group("v")
    return None


def _experiments(ctx: _Ctx, old: dict, new: dict, pairs: list, added: list, removed: list) -> dict[str, list]:
    out: dict[str, list] = {"added": [], "finished": [], "conclusion_changed": [], "logged": [],
                            "edited": [], "removed": []}
    for key in added:
        if key[0] == "experiment":
            e = new[key]
            out["added"].append({"id": e["id"], "hypothesis": e.get("hypothesis"), "action": e.get("action", ""),
                                 "status": e["status"], "date": e.get("date"), "path": e["path"],
                                 "line": e["line"], "commits": ctx.commits(e["id"], e["path"])})
    for key in removed:
        if key[0] == "experiment":
            out["removed"].append({"id": key[1], "path": old[key]["path"], "reason": ctx.reason(key[1])})
    done = {"已完成", "completed"}
    finishing = [new[k] for k in added if k[0] == "experiment" and (new[k]["status"] in done or new[k].get("conclusion"))]
    for ok, nk in pairs:
        if ok[0] != "experiment":
            continue
        o, n = old[ok], new[nk]
        eid = n["id"]
        rel = ctx.s.kb.rel(n["path"]) or n["path"]
        old_rel = ctx.s.kb.rel(o["path"]) or o["path"]
        was = ctx.s.changes.get(old_rel, (None, None))[0]
        if o["path"] != n["path"] and was is not None and was == ctx.s.changes.get(rel, (None, None))[1]:
            continue  # the same bytes at another place: moved (a [paths] move), not edited
        where = {"path": n["path"], "line": n["line"], "commits": ctx.commits(eid, n["path"])}
        # The `## ` sections whose text changed, but what the lists below say already (the
        # result a finished experiment records now, the log entries `kb exp log` appends): a
        # design edited after the result was read as "text only", or not at all. A result
        # recorded before and edited (its data rewritten) is a section edit to review.
        said = ({"结果", "Result", "Results"} if not o.get("conclusion") else set()) | \
            ({"执行记录"} if _log_count(ctx, eid) else set())
        sections = [x for x in _sections_changed(ctx, rel, old_rel) if x not in said]
        if (o["status"] != n["status"] and n["status"] in done) or (n.get("conclusion") and not o.get("conclusion")):
            finishing.append(n)
            if sections:
                out["edited"].append({"id": eid, "fields": [], "sections": sections, **where})
        elif o.get("conclusion") and n.get("conclusion") != o.get("conclusion"):
            out["conclusion_changed"].append({"id": eid, "from": o.get("conclusion"), "to": n.get("conclusion"),
                                              "reason": ctx.reason(eid), **where})
        elif not _same(o, n):
            out["edited"].append({"id": eid, "fields": _changed_fields(o, n), "sections": sections,
                                  **where})
        elif sections or not _log_count(ctx, eid):
            out["edited"].append({"id": eid, "fields": [], "sections": sections, **where})
    for n in finishing:
        rel = ctx.s.kb.rel(n["path"]) or n["path"]
        out["finished"].append({"id": n["id"], "hypothesis": n.get("hypothesis"), "status": n["status"],
                                "conclusion": n.get("conclusion"),
                                "data": _data_line(ctx, rel, ctx.s.changes.get(rel, (None, None))[1]),
                                "path": n["path"], "line": n.get("conclusion_line") or n["line"],
                                "commits": ctx.commits(n["id"], n["path"])})
    # Log entries appended (kb exp log), whatever else happened to the experiment.
    for key, n in new.items():
        if key[0] == "experiment" and (count := _log_count(ctx, key[1])):
            out["logged"].append({"id": key[1], "entries": count, "path": n["path"], "line": n["line"],
                                  "commits": ctx.commits(key[1], n["path"])})
    return out


_VOLATILE = {"path", "line", "end_line", "anchor_lines", "conclusion_line"}


def _log_count(ctx: _Ctx, eid: str) -> int:
    """How many commits of the range appended to the log of ``eid`` (``Kb-Op: exp.log``)."""
    return sum(1 for c in ctx.s.commits if c.op == "exp.log" and eid in c.ids)


def _changed_fields(o: dict, n: dict) -> list[str]:
    return sorted(k for k in set(o) | set(n) if k not in _VOLATILE and k != "anchors"
                  and o.get(k) != n.get(k))


def _same(o: dict, n: dict) -> bool:
    """Same anchors (what kb reads) on both sides, line numbers aside."""
    return {k: v for k, v in o.items() if k not in _VOLATILE} == \
        {k: v for k, v in n.items() if k not in _VOLATILE}


def _entry_key(e: dict) -> tuple[str, int]:
    return (e["kind"], e["number"])


def _cards(ctx: _Ctx, old: dict, new: dict, pairs: list, added: list, removed: list) -> dict[str, list]:
    out: dict[str, list] = {k: [] for k in ("added", "removed", "status", "settled", "priorities",
                                             "dependencies", "entries_added", "entries_changed",
                                             "probabilities", "applications", "edited")}
    for key in added:
        if key[0] in CARD_KINDS:
            c = new[key]
            out["added"].append({"id": c["id"], "kind": key[0], "title": c.get("title", ""),
                                 "status": c["status"], "category": c.get("category"),
                                 "path": c["path"], "line": c["line"],
                                 "commits": ctx.commits(c["id"], c["path"])})
            for e in c.get("entries") or ():
                out["entries_added"].append(_entry(c, e, ctx))
            if c["status"] in SETTLED.get(key[0], ()):
                # a card the range adds already settled settles as much as one moved there
                out["settled"].append({"id": c["id"], "status": c["status"], "kind": key[0],
                                       "path": c["path"], "line": c["line"],
                                       "commits": ctx.commits(c["id"], c["path"])})
    for key in removed:
        if key[0] in CARD_KINDS:
            out["removed"].append({"id": key[1], "kind": key[0], "path": old[key]["path"],
                                   "reason": ctx.reason(key[1])})
    for ok, nk in pairs:
        kind = ok[0]
        if kind not in CARD_KINDS:
            continue
        o, n = old[ok], new[nk]
        cid = n["id"]
        where = {"kind": kind, "path": n["path"], "line": n["line"], "commits": ctx.commits(cid, n["path"])}
        listed = False
        if o["status"] != n["status"]:
            out["status"].append({"id": cid, "from": o["status"], "to": n["status"],
                                  "reason": ctx.reason(cid), **where})
            if n["status"] in SETTLED.get(kind, ()) and o["status"] not in SETTLED.get(kind, ()):
                out["settled"].append({"id": cid, "status": n["status"], **where})
            listed = True
        if o.get("priority") != n.get("priority"):
            out["priorities"].append({"id": cid, "from": o.get("priority"), "to": n.get("priority"), **where})
            listed = True
        do, dn = list(o.get("depends") or ()), list(n.get("depends") or ())
        if do != dn:
            out["dependencies"].append({"id": cid, "added": [d for d in dn if d not in do],
                                        "removed": [d for d in do if d not in dn], **where})
            listed = True
        if o.get("probability") != n.get("probability"):
            out["probabilities"].append({"id": cid, "from": o.get("probability"),
                                         "to": n.get("probability"), **where})
            listed = True
        eo = {_entry_key(e): e for e in o.get("entries") or ()}
        for e in n.get("entries") or ():
            prev = eo.get(_entry_key(e))
            if prev is None:
                out["entries_added"].append(_entry(n, e, ctx))
                listed = True
            elif (prev["probability"], prev["status"], prev["title"]) != (e["probability"], e["status"], e["title"]):
                out["entries_changed"].append({**_entry(n, e, ctx), "from": {
                    "probability": prev["probability"], "status": prev["status"], "title": prev["title"]}})
                listed = True
        ao = {a["number"] for a in o.get("applications") or ()}
        for a in n.get("applications") or ():
            if a["number"] not in ao:
                out["applications"].append({"id": cid, "number": a["number"], "problem": a["problem"],
                                            "direction": a.get("direction", ""), "time": a["time"], **where})
                listed = True
        # Fields no list above reports (价值/关键性, 计划, 来源, the statement…): named,
        # so that a changed anchor never reads as a change of prose.
        rest = [f for f in _changed_fields(o, n) if f not in _CARD_LISTED]
        if rest or (not listed and (kind != "record" or not _same(o, n))):
            rel = ctx.s.kb.rel(n["path"]) or n["path"]
            out["edited"].append({"id": cid, "fields": rest,
                                  "sections": _sections_changed(ctx, rel), **where})
    return out


#: Card fields the lists of :func:`_cards` other than ``edited`` report.
_CARD_LISTED = frozenset({"status", "priority", "depends", "probability", "entries", "applications"})


def _entry(card: dict, e: dict, ctx: _Ctx) -> dict[str, Any]:
    return {"id": card["id"], "kind": card["kind"], "entry": e["kind"], "number": e["number"],
            "title": e["title"], "probability": e["probability"], "status": e["status"],
            "path": card["path"], "line": e["line"], "commits": ctx.commits(card["id"], card["path"])}


def _verified(ctx: _Ctx, old: dict, new: dict, pairs: list, added: list, removed: list) -> dict[str, list]:
    out: dict[str, list] = {"added": [], "changed": []}
    moved = _moved_here(ctx.s)
    for key in added:
        if key[0] == "verified":
            v = new[key]
            if (ctx.s.kb.rel(v["path"]) or v["path"]) in moved:
                continue  # moved with its folder: no new settlement
            out["added"].append({"id": v["id"], "object_type": v.get("object_type", ""),
                                 "conclusion": v.get("conclusion", ""), "probability": v.get("probability"),
                                 "path": v["path"], "line": v["line"], "commits": ctx.commits(v["id"], v["path"])})
    folder = ctx.s.kb.config.paths["verified"].strip("/") + "/"
    for path, (o, n) in sorted(ctx.s.changes.items()):
        if o and path.startswith(folder):
            out["changed"].append({"path": ctx.s.kb.repo_path(path), "deleted": n is None,
                                   "commits": ctx.s.path_commits.get(path, [])})
    return out


def _verdicts(ctx: _Ctx) -> list[dict[str, Any]]:
    """Verification records added by the range: target, verdict, votes, mode (the record's
    rule for a split vote), branch and how (the rule that reached this verdict, as
    ``kb verdict`` says it: :func:`kb.research.verdict.decided_by`)."""
    folder = records_dir(ctx.s.kb) + "/"
    moved = _moved_here(ctx.s)
    added = {p: n for p, (o, n) in ctx.s.changes.items() if n and not o and p.startswith(folder)
             and p.endswith(".json") and p not in moved}
    if not added:
        return []
    from kb.research.record_faults import min_votes_of, record_faults
    from kb.research.verdict import decided_by, parse_record  # only then: it imports the card writers

    data = ctx.s.read(list(added.values()))
    out = []
    for path, blob in sorted(added.items()):
        raw = data.get(blob)
        try:
            rec = parse_record(path, json_input.loads(raw.decode("utf-8"))) if raw is not None else None
        except (ValueError, UnicodeDecodeError):
            rec = None
        if rec is None:
            out.append({"path": ctx.s.kb.repo_path(path), "error": "not a readable verification record"})
            continue
        branch, how = decided_by(rec.raw.get("results"), rec.raw.get("mode"))
        faults = record_faults(rec, min_votes_of(ctx.s.kb.config))
        out.append({"r": rec.r, "target": _target(rec.r), "verdict": rec.verdict,
                    "invalid": "; ".join(faults) or None,
                    "mode": rec.raw.get("mode"), "branch": branch, "how": how, "at": rec.at,
                    "votes": [{"verifier": v.verifier, "result": v.result, "reason": v.reason}
                              for v in rec.results],
                    "path": ctx.s.kb.repo_path(path), "commits": ctx.s.path_commits.get(path, [])})
    return out


def _moved_here(s: Sides) -> set[str]:
    """KB paths the range added holding bytes a path it removed held: files moved unchanged
    (a ``[paths]`` move of Verified/ or the records folder), no new verdict or card."""
    gone = {o for o, n in s.changes.values() if o and not n}
    return {p for p, (o, n) in s.changes.items() if n and not o and n in gone} if gone else set()


def _mark_records(settled: list[dict[str, Any]], verdicts: list[dict[str, Any]],
                  new: dict[tuple[str, str], dict[str, Any]]) -> None:
    """Set ``record`` on each settlement: whether a verification record the range adds is
    about it — a verdict on the object, on a solution of the problem that judges it
    (判断命题 / 来源命题), or, for a judge problem, on its proposition. A settlement
    without one is what KB312 refuses; the diff lists it for review (the rule itself,
    which also reads older records and the direction, is in the findings)."""
    if not settled:
        return
    about = {v["target"].split("#", 1)[0] for v in verdicts
             if v.get("target") and not v.get("invalid")}  # (an invalid one settles nothing)

    def anchor(kind: str, oid: str, key: str) -> str:
        anchors = (new.get((kind, oid)) or {}).get("anchors") or {}
        return str(anchors.get(key, "") or "").strip()

    # a judge problem's solution is a verdict on its proposition
    about |= {anchor("problem", q, "判断命题") or anchor("problem", q, "来源命题") for q in set(about)}
    for x in settled:
        judged = anchor("problem", x["id"], "判断命题") if x["kind"] == "problem" else ""
        x["record"] = x["id"] in about or bool(judged and judged in about)


def _records_changed(ctx: _Ctx) -> list[dict[str, Any]]:
    """Verification records the range modified or deleted (records are append-only: KB310),
    which a reviewer must see although no object of the index changed."""
    folder = records_dir(ctx.s.kb) + "/"
    return [{"path": ctx.s.kb.repo_path(p), "deleted": n is None,
             "commits": ctx.s.path_commits.get(p, [])}
            for p, (o, n) in sorted(ctx.s.changes.items())
            if o and o != n and p.startswith(folder)]


def _target(r: str) -> str:
    """``r-q1-s2`` -> ``q1#解法2``, ``r-p3-pf1`` -> ``p3#证明1``, ``r-p3-rf1`` -> ``p3#证伪1``, ``r-p3`` -> ``p3``."""
    m = re.fullmatch(r"r-(.+?)(?:-(s|pf|rf)(\d+))?", r)
    if not m:
        return r
    kind = {"s": "解法", "pf": "证明", "rf": "证伪"}.get(m.group(2) or "")
    return f"{m.group(1)}#{kind}{m.group(3)}" if kind else m.group(1)


def _trail(s: Sides) -> Optional[dict[str, list]]:
    """Exploration-graph nodes the range added and closed (``kb.trail.diff.range_changes``),
    when this kb has the exploration graph and the range touched its operation log;
    None otherwise (staged and working-tree diffs: the graph is read from commits)."""
    try:
        from kb.trail.log import OPS_DIR  # type: ignore[import-not-found]
    except ImportError:
        return None
    if s.source != "range" or not s.base:
        return None
    folder = OPS_DIR.strip("/") + "/"
    if not any(p.startswith(folder) for p in s.changes):
        return {"added": [], "closed": []}
    from kb.trail.diff import range_changes  # type: ignore[import-not-found]

    got = range_changes(s.kb, s.base, s.tip)
    return {"added": got.get("added", []), "closed": got.get("closed", [])}


def _findings(k: KnowledgeBase, s: Sides, environ: Optional[dict[str, str]], a: Optional[str] = None,
              against: Optional[str] = None, rewrite: bool = False) -> tuple[list, dict]:
    from kb.checks.report import sort_findings
    from kb.checks.verify_range import verify_commit_range
    from kb.checks.verify_staged import verify_staged
    from kb.checks.verify_worktree import verify_worktree

    kb_dir = Path(k.root)
    if s.source == "range":
        # (--rewrite: from A itself, the old tip, which is no ancestor of B after a rewrite)
        start = a if rewrite and a else s.base
        rep = verify_commit_range(kb_dir, start, s.tip, kb_dir, against=against,
                                  rewrite=rewrite) if s.commits or rewrite else None
    elif s.source == "staged":
        rep = verify_staged(kb_dir, kb_dir, environ)
    else:
        rep = verify_worktree(kb_dir, kb_dir, environ)
    if rep is None:
        return [], {"errors": 0, "warnings": 0, "blocking": 0, "exit_code": 0}
    fs = [f for f in sort_findings(rep.findings) if f.severity in ("error", "warning")]
    summary = {"errors": sum(1 for f in fs if f.severity == "error"),
               "warnings": sum(1 for f in fs if f.severity == "warning"),
               "blocking": len(rep.blocking), "exit_code": rep.exit_code, "notes": rep.notes}
    return [f.as_dict() for f in fs], summary


def _is_empty(out: dict[str, Any]) -> bool:
    for sec in ("hypotheses", "experiments", "cards", "verified"):
        if any(out[sec].values()):
            return False
    return not (out["verdicts"] or out["records_changed"] or out["renumberings"] or out["overrides"] or out["unreadable"]
                or (out["trail"] and any(out["trail"].values())))
