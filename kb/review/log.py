"""``kb log ID``: the history of one object, from the commits that touched its file.

For each commit (oldest first) that changed the object — created it, moved
its status, corrected its statement, appended evidence or entries, renumbered
it — one entry: the commit, kb's operation (``Kb-Op``), who, when, the ID it
had then, its status and the fields that changed. Renumberings
(``Kb-Renumber: H7 -> H9``) are followed back along the history graph: the
history of ``H9`` includes that of ``H7`` on the branch where the renumbering
happened, and only there — when two branches both added ``H7`` and ``kb sync``
renumbered one of them, ``kb log H7`` shows the other one alone. Each entry
compares the commit with its own parent (a merge appears only when its result
is none of its parents'). A verdict commit also carries the verification
record it added (votes, verdict, mode, and how the verdict was reached).

In a shallow clone the first fetched commit has no known parent: an object
already there is marked ``boundary`` (not ``created``) and a KB390 warning says
the history is cut.

Shape (:func:`object_log`)::

    {"id", "kind", "path", "aliases": [older IDs], "entries": [
        {"commit", "op", "author", "email", "time", "subject", "id", "change",
         "status", "changes": {field: {"from", "to"}}, "override", "verdict"?}],
     "warnings": [{"code": "KB390", "severity", "commit", "message"}]}
"""

from __future__ import annotations

import json
from typing import Any, Optional

from kb import git, json_input
from kb.errors import NotFoundError
from kb.repo import KnowledgeBase, Snapshot
from kb.review.commits import CommitInfo, log

#: The fields followed over time, per kind (the rest is prose or derived).
TRACKED = {
    "hypothesis": ("statement", "status", "evidence", "parent"),
    "experiment": ("status", "hypothesis", "action", "date", "conclusion"),
    "problem": ("title", "status", "priority", "depends", "plan", "entries"),
    "proposition": ("title", "status", "probability", "priority", "depends", "entries"),
    "method": ("title", "status", "type", "claims", "parents", "submethods", "applications"),
    "verified": ("conclusion", "probability", "object_type"),
    "direction": ("status", "survival", "rounds"),
    "record": ("title", "status"),
}


def _state(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for f in TRACKED.get(kind, ("title", "status")):
        v = fields.get(f)
        if f == "entries":
            v = [f"{e['kind']} {e['number']}｜{e['title']}｜概率{_num(e['probability'])}｜状态{e['status']}"
                 for e in v or ()]
        elif f == "applications":
            v = [f"应用 {a['number']}｜{a['time']}｜问题 {a['problem']}" for a in v or ()]
        elif isinstance(v, tuple):
            v = list(v)
        out[f] = v
    return out


def _num(x: Any) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


ZERO = "0" * 40


def _graph(k: KnowledgeBase, tip: str) -> tuple[list[str], dict[str, list[str]]]:
    """The commits reachable from ``tip``, children before parents (``--topo-order``:
    one line of history is not intermixed with another), and each one's parents."""
    text = git.run(["rev-list", "--topo-order", "--parents", "--end-of-options", tip],
                   k.top).stdout.decode()
    order: list[str] = []
    parents: dict[str, list[str]] = {}
    for line in text.splitlines():
        shas = line.split()
        if shas:
            order.append(shas[0])
            parents[shas[0]] = shas[1:]
    return order, parents


def _parent_id(cur: str, renumbers: list[tuple[str, str]]) -> Optional[str]:
    """The ID the object that is ``cur`` after a commit had in the commit's parents:
    the old ID of a ``Kb-Renumber: old -> cur``; None when the commit renumbered ``cur``
    away (``Kb-Renumber: cur -> new``: the object called ``cur`` after it came from
    another line of history, the one before it was a different object)."""
    for a, b in renumbers:
        if b == cur:
            return a
    for a, _b in renumbers:
        if a == cur:
            return None
    return cur


def _ids(obj_id: str, order: list[str], parents: dict[str, list[str]],
         renumbers: dict[str, list[tuple[str, str]]]) -> dict[str, str]:
    """commit -> the ID the object had in it, following the history graph from the tip
    (``order[0]``): a renumbering changes the ID along its own parent edge only, so two
    parallel branches that both added the same ID keep their objects apart. A commit
    missing from the result does not carry the object."""
    ids: dict[str, str] = {order[0]: obj_id} if order else {}
    for c in order:
        cur = ids.get(c)
        if cur is None:
            continue
        pid = _parent_id(cur, renumbers.get(c, []))
        if pid is None:
            continue
        for p in parents.get(c, ()):
            ids.setdefault(p, pid)  # children come first: the nearest line's name wins
    return ids


def _path_for(k: KnowledgeBase, kind: str, path: str, obj_id: str, alias: str) -> str:
    """Where ``alias`` lived: the same file for tree/registry objects, else the same
    folder with the alias as file name (one object per file)."""
    if kind in ("hypothesis", "record"):
        return path
    folder, _, name = path.rpartition("/")
    if name == f"{obj_id}.md":
        return (folder + "/" if folder else "") + f"{alias}.md"
    return path


#: commit -> {KB-relative path: ([blob in each parent], blob after)}; ZERO: absent.
Raw = dict[str, dict[str, tuple[list[str], str]]]


def _raw(k: KnowledgeBase, rev: str, paths: list[str]) -> Raw:
    """The changes to ``paths`` of every commit that touched them (git's default history
    simplification); a merge lists only the paths it changed from all its parents (``-c``)."""
    proc = git.run(["log", "--format=%x1e%H", "-c", "--raw", "--root", "--no-abbrev", "--no-renames", "-z",
                    "--end-of-options", rev, "--", *(f":(literal){k.repo_path(p)}" for p in paths)],
                   k.top)
    out: Raw = {}
    for rec in proc.stdout.split(b"\x1e"):
        if not rec.strip():
            continue
        # "<sha>\0\n:<meta>\0<path>\0…" (-z ends the format line with NUL); a merge's
        # meta starts with one ':' per parent and lists a mode and a blob per parent.
        parts = rec.split(b"\0")
        sha = parts[0].strip().decode()
        toks = parts[1:]
        i = 0
        while i < len(toks) - 1:
            meta = toks[i].strip().decode("utf-8", "replace")
            if not meta.startswith(":"):
                i += 1
                continue
            n = len(meta) - len(meta.lstrip(":"))
            f = meta.lstrip(":").split()
            blobs = f[n + 1:2 * n + 2]
            rel = k.rel(toks[i + 1].decode("utf-8", "surrogateescape"))
            if rel is not None and len(blobs) == n + 1:
                out.setdefault(sha, {})[rel] = (blobs[:n], blobs[n])
            i += 2
    return out


def _lookup(k: KnowledgeBase, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(commit, KB-relative path) -> blob id (ZERO: no such file), in one ``git cat-file``."""
    if not wanted:
        return {}
    keys = sorted(wanted)
    text = "".join(f"{c}:{k.repo_path(p)}\n" for c, p in keys).encode("utf-8", "surrogateescape")
    lines = git.run(["cat-file", "--batch-check=%(objectname) %(objecttype)"], k.top,
                    input=text).stdout.decode("utf-8", "replace").splitlines()
    out = {}
    for key, line in zip(keys, lines):
        f = line.split()
        out[key] = f[0] if len(f) == 2 and f[1] == "blob" else ZERO
    return out


def object_log(k: KnowledgeBase, obj_id: str, rev: str = "HEAD") -> dict[str, Any]:
    """The history of ``obj_id`` in the commits reachable from ``rev`` (module docstring).

    Raises NotFoundError (kind ``not_found``) when no object has this ID at ``rev`` nor in the
    working tree, UsageError/GitError for a bad ``rev``.
    """
    from kb.checks.targets import open_index, shallow_commits, shallow_note
    from kb.errors import UsageError

    tip = git.rev_parse(rev, k.top)
    if tip is None:
        raise UsageError(f"{rev!r} is not a commit (kb log reads committed history)")
    with open_index(k) as idx:
        idx.refresh()
        found = idx.get(obj_id)
        if not found:
            # (looked up in the KB as it is now: its history is then read from the commits)
            raise NotFoundError(f"no object with ID {obj_id!r} in the KB (try `kb find {obj_id}`)")
        row = next((r for r in found if r.kind != "verified"), found[0])
        kind, path = row.kind, row.path
        order, parents = _graph(k, tip)
        renumbers = {c.commit: c.renumbers
                     for c in log(k.top, [tip, "--grep=Kb-Renumber", "-i"]) if c.renumbers}
        ids = _ids(obj_id, order, parents, renumbers)
        # Older IDs, newest first: those the graph walk met (not every Kb-Renumber of the repository).
        aliases = list(dict.fromkeys(i for c in order if (i := ids.get(c)) and i != obj_id))
        names = [obj_id, *aliases]
        where = {n: _path_for(k, kind, path, obj_id, n) for n in names}
        paths = list(dict.fromkeys(where.values()))
        raw = _raw(k, tip, paths)
        infos = {c.commit: c for c in log(k.top, [tip], [k.repo_path(p) for p in paths])}
        shallow = shallow_commits(k.top)
        rank = {c: i for i, c in enumerate(order)}
        todo = sorted((c for c in raw if c in ids and c in infos), key=lambda c: -rank.get(c, -1))

        # The blob of each (commit, path) read: a path the commit changed from the raw
        # lines, any other from one batch (the commit kept its parent's version).
        def sides(c: str) -> tuple[str, Optional[str], str, str]:
            """The object's ID after ``c`` and in its parents, and the files it lived in."""
            cid = ids[c]
            pid = _parent_id(cid, renumbers.get(c, []))
            return cid, pid, where.get(cid, path), where.get(pid, path) if pid else path

        wanted = set()
        for c in todo:
            cid, pid, p_after, p_before = sides(c)
            for p in (p_after, p_before):
                if p not in raw[c]:
                    wanted.add((c, p))
        known = _lookup(k, wanted)

        def blob(c: str, p: str, parent: Optional[int]) -> str:
            ch = raw[c].get(p)
            if ch is None:
                return known.get((c, p), ZERO)
            return ch[1] if parent is None else (ch[0][parent] if parent < len(ch[0]) else ZERO)

        cache: dict[tuple[str, str, str], Optional[dict[str, Any]]] = {}

        def state(oid: Optional[str], p: str, b: str) -> Optional[dict[str, Any]]:
            if oid is None or b == ZERO:
                return None
            key = (oid, p, b)
            if key not in cache:
                cache[key] = _find(idx, k, kind, oid, p, b)
            return cache[key]

        entries: list[dict[str, Any]] = []
        cut: list[str] = []
        for c in todo:
            info = infos[c]
            cid, pid, p_after, p_before = sides(c)
            after = state(cid, p_after, blob(c, p_after, None))
            n = len(parents.get(c, ()))
            if n > 1:
                # A merge: an entry only when its result is none of its parents' (it combined
                # or resolved changes to the object); compared with the first parent holding it.
                if p_after not in raw[c]:
                    continue
                befores = [state(pid, p_before, blob(c, p_before, i)) for i in range(n)]
                if after in befores:
                    continue
                before = next((b for b in befores if b is not None), None)
            else:
                before = state(pid, p_before, blob(c, p_before, 0)) if n == 1 else None
            boundary = c in shallow and after is not None
            if not boundary and after is None and before is None:
                continue  # not there (yet, or on this line)
            if after == before and cid == pid and (
                    kind in ("hypothesis", "record") and cid not in info.ids or after is None):
                continue  # the commit changed other objects of the same file
            entry = _entry(info, cid, before, after, pid)
            if boundary:
                entry["change"] = "boundary"
                cut.append(c)
            if kind in ("problem", "proposition") and info.op == "verdict":
                entry["verdict"] = _verdict(k, info)
            entries.append(entry)
    warnings = [{"code": "KB390", "severity": "warning", "commit": c,
                 "message": f"the history of {obj_id} is cut: " + shallow_note(c)} for c in cut]
    return {"id": obj_id, "kind": kind, "path": k.repo_path(path), "aliases": aliases,
            "entries": entries, "warnings": warnings}


def _find(idx: Any, k: KnowledgeBase, kind: str, oid: str, p: str, blob: str) -> Optional[dict[str, Any]]:
    """The object's tracked state in this version of ``p`` (None: absent)."""
    from kb.parse import classify

    fmt = classify(p, k.config)
    if fmt is None:
        return None
    idx.ensure(Snapshot(kb=k, kind="commit", files={p: blob}, formats={p: fmt}))
    rows = idx.rows_of(p, blob, obj_id=oid)
    if rows:
        return _state(kind, json.loads(rows[0].data))
    return None


def _entry(c: CommitInfo, oid: str, prev: Optional[dict[str, Any]], state: Optional[dict[str, Any]],
           prev_id: Optional[str]) -> dict[str, Any]:
    if prev is None and state is not None:
        change = "created"
    elif state is None:
        change = "removed"
    elif prev_id is not None and prev_id != oid:
        change = "renumbered"
    elif prev == state:
        change = "edited"  # prose (a log entry, a section) or a derived line, no tracked field
    else:
        change = "changed"
    diff = {}
    if state is not None:
        for f, v in state.items():
            old = (prev or {}).get(f)
            if prev is None or old != v:
                diff[f] = {"from": old, "to": v}
    return {"commit": c.commit, "op": c.op, "author": c.author, "email": c.email, "time": c.time,
            "subject": c.subject, "id": oid, "change": change,
            "status": (state or {}).get("status"), "changes": diff,
            "override": c.overrides.get(oid) or (c.overrides.get(prev_id) if prev_id else None),
            "renumbered_from": prev_id if change == "renumbered" else None}


def _verdict(k: KnowledgeBase, c: CommitInfo) -> list[dict[str, Any]]:
    """The verification records a verdict commit added: {path, r, verdict, mode,
    branch, how, votes} (branch/how: :func:`kb.research.verdict.decided_by`)."""
    from kb.research.verdict import decided_by, parse_record
    from kb.review.sides import records_dir

    folder = k.repo_path(records_dir(k) + "/")
    proc = git.run(["diff-tree", "-r", "-z", "--no-renames", "--diff-filter=A", "--raw", "--no-abbrev",
                    "--root", c.commit, "--", folder], k.top)
    parts = [p for p in proc.stdout.split(b"\0") if p]
    adds = []
    for i in range(len(parts) - 1):
        tok = parts[i].decode("utf-8", "replace")
        if tok.startswith(":"):
            adds.append((parts[i + 1].decode("utf-8", "surrogateescape"), tok.split()[3]))
    data = git.read_blobs([b for _p, b in adds], k.top)
    out = []
    for path, blob in adds:
        try:
            rec = parse_record(path, json_input.loads(data[blob].decode("utf-8")))
        except (KeyError, ValueError, UnicodeDecodeError):
            rec = None
        if rec is not None:
            # mode: the record's rule for a split vote; branch/how: the rule that decided.
            branch, how = decided_by(rec.raw.get("results"), rec.raw.get("mode"))
            out.append({"path": path, "r": rec.r, "verdict": rec.verdict, "mode": rec.raw.get("mode"),
                        "branch": branch, "how": how,
                        "votes": [{"verifier": v.verifier, "result": v.result} for v in rec.results]})
    return out
