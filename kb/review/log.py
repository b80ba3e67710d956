"""``kb log ID``: the history of one object, from the commits that touched its file.

For each commit (oldest first) that changed the object — created it, moved
its status, corrected its statement, appended evidence or entries, renumbered
it — one entry: the commit, kb's operation (``Kb-Op``), who, when, the ID it
had then, its status and the fields that changed. Renumberings
(``Kb-Renumber: H7 -> H9``) are followed back: the history of ``H9`` includes
that of ``H7`` before the renumbering. A verdict commit also carries the
verification record it added (votes, verdict, mode).

Shape (:func:`object_log`)::

    {"id", "kind", "path", "aliases": [older IDs], "entries": [
        {"commit", "op", "author", "email", "time", "subject", "id", "change",
         "status", "changes": {field: {"from", "to"}}, "override", "verdict"?}]}
"""

from __future__ import annotations

import json
from typing import Any, Optional

from kb import git
from kb.errors import RefusedError
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


def _aliases(k: KnowledgeBase, obj_id: str, rev: str) -> list[str]:
    """Older IDs of ``obj_id`` through the ``Kb-Renumber`` trailers reachable from ``rev``
    (newest first: the ID it had just before each renumbering)."""
    out: list[str] = []
    cur = obj_id
    renames = [r for c in log(k.top, [rev, "--grep=Kb-Renumber", "-i"]) for r in c.renumbers]
    for _ in range(len(renames)):
        prev = next((a for a, b in renames if b == cur and a not in out and a != obj_id), None)
        if prev is None:
            break
        out.append(prev)
        cur = prev
    return out


def _path_for(k: KnowledgeBase, kind: str, path: str, obj_id: str, alias: str) -> str:
    """Where ``alias`` lived: the same file for tree/registry objects, else the same
    folder with the alias as file name (one object per file)."""
    if kind in ("hypothesis", "record"):
        return path
    folder, _, name = path.rpartition("/")
    if name == f"{obj_id}.md":
        return (folder + "/" if folder else "") + f"{alias}.md"
    return path


def _blobs(k: KnowledgeBase, rev: str, paths: list[str]) -> dict[str, dict[str, Optional[str]]]:
    """commit -> {KB-relative path: blob after the commit (None: deleted)} for ``paths``."""
    proc = git.run(["log", "--format=%x1e%H", "--raw", "--no-abbrev", "--no-renames", "-z", rev, "--",
                    *(f":(literal){k.repo_path(p)}" for p in paths)], k.top)
    out: dict[str, dict[str, Optional[str]]] = {}
    for rec in proc.stdout.split(b"\x1e"):
        if not rec.strip():
            continue
        # "<sha>\0\n:<meta>\0<path>\0…" (-z ends the format line with NUL).
        parts = rec.split(b"\0")
        sha = parts[0].strip().decode()
        toks = parts[1:]
        i = 0
        while i < len(toks) - 1:
            meta = toks[i].strip().decode("utf-8", "replace")
            if not meta.startswith(":"):
                i += 1
                continue
            f = meta[1:].split()
            path = toks[i + 1].decode("utf-8", "surrogateescape")
            rel = k.rel(path)
            if rel is not None:
                out.setdefault(sha, {})[rel] = None if f[4].startswith("D") else f[3]
            i += 2
    return out


def object_log(k: KnowledgeBase, obj_id: str, rev: str = "HEAD") -> dict[str, Any]:
    """The history of ``obj_id`` in the commits reachable from ``rev`` (module docstring).

    Raises RefusedError when no object has this ID at ``rev`` nor in the
    working tree, UsageError/GitError for a bad ``rev``.
    """
    from kb.checks.targets import open_index
    from kb.errors import UsageError

    tip = git.rev_parse(rev, k.top)
    if tip is None:
        raise UsageError(f"{rev!r} is not a commit (kb log reads committed history)")
    with open_index(k) as idx:
        idx.refresh()
        found = idx.get(obj_id)
        if not found:
            raise RefusedError(f"no object with ID {obj_id!r} in the working tree (try `kb find {obj_id}`)")
        row = next((r for r in found if r.kind != "verified"), found[0])
        kind, path = row.kind, row.path
        aliases = _aliases(k, obj_id, tip)
        names = [obj_id, *aliases]
        paths = list(dict.fromkeys(_path_for(k, kind, path, obj_id, a) for a in names))
        blobs = _blobs(k, tip, paths)
        commits = list(reversed(log(k.top, [tip], [k.repo_path(p) for p in paths])))
        renum_at = {c.commit: c.renumbers for c in commits if c.renumbers}
        # Which ID the object had at each commit: walk newest -> oldest.
        id_at: dict[str, str] = {}
        cur = obj_id
        for c in reversed(commits):
            id_at[c.commit] = cur
            for a, b in renum_at.get(c.commit, []):
                if b == cur:
                    cur = a
        entries: list[dict[str, Any]] = []
        prev: Optional[dict[str, Any]] = None
        prev_id: Optional[str] = None
        for c in commits:
            oid = id_at[c.commit]
            if not blobs.get(c.commit):
                continue  # a merge (no --raw lines): its result is its parents' or the next commit's
            state = _find(idx, k, kind, oid, blobs.get(c.commit, {}), paths)
            if state is None and prev is None:
                continue  # not there yet
            if state == prev and oid == prev_id and (
                    kind in ("hypothesis", "record") and oid not in c.ids or state is None):
                continue  # the commit changed other objects of the same file
            entry = _entry(c, oid, prev, state, prev_id)
            if kind in ("problem", "proposition") and c.op == "verdict":
                entry["verdict"] = _verdict(k, c)
            entries.append(entry)
            prev, prev_id = state, oid
    return {"id": obj_id, "kind": kind, "path": k.repo_path(path), "aliases": aliases,
            "entries": entries}


def _find(idx: Any, k: KnowledgeBase, kind: str, oid: str, changed: dict[str, Optional[str]],
          paths: list[str]) -> Optional[dict[str, Any]]:
    """The object's tracked state in this commit's versions of ``paths`` (None: absent).

    A path the commit did not change keeps its state from before, so only the
    changed versions are parsed; a path a commit deleted yields None.
    """
    from kb.parse import classify

    for p, blob in changed.items():
        if blob is None:
            continue
        fmt = classify(p, k.config)
        if fmt is None:
            continue
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
    """The verification records a verdict commit added: {path, r, verdict, mode, votes}."""
    from kb.ops.verdict import parse_record
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
            rec = parse_record(path, json.loads(data[blob].decode("utf-8")))
        except (KeyError, ValueError, UnicodeDecodeError):
            rec = None
        if rec is not None:
            out.append({"path": path, "r": rec.r, "verdict": rec.verdict, "mode": rec.raw.get("mode"),
                        "votes": [{"verifier": v.verifier, "result": v.result} for v in rec.results]})
    return out
