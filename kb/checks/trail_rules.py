"""KB241: TRAIL.md is what ``kb trail render`` gives for the exploration graph's log (issue 15).

Silent when the KB has no TRAIL.md. For the working tree the graph comes
from the replay cache; for the staged index or a commit the log files are
listed and read from git, and the verdict is cached per listing (the blob ids
of TRAIL.md and every log file) in the index's key-value table.
"""

from __future__ import annotations

import hashlib
import weakref

from kb import git
from kb.checks.diagnostics import diag
from kb.checks.facts import Facts
from kb.checks.registry import snapshot_key_part, snapshot_rule
from kb.trail.files import TRAIL_FILE

_LOG_PREFIX = ".explore-tree/ops/"


#: Facts -> (paths, listing): the key part and the rule read the same listing (one git call).
_LISTINGS: "weakref.WeakKeyDictionary[Facts, tuple[tuple[str, ...], dict[str, str]]]" = \
    weakref.WeakKeyDictionary()


def _listing(s: Facts, paths: list[str]) -> dict[str, str]:
    """Repository listing (KB-relative path -> blob id) of ``paths`` in the snapshot."""
    hit = _LISTINGS.get(s)
    if hit is not None and hit[0] == tuple(paths):
        return dict(hit[1])
    found = _list(s, paths)
    _LISTINGS[s] = (tuple(paths), found)
    return dict(found)


def _list(s: Facts, paths: list[str]) -> dict[str, str]:
    kb = s.kb
    spec = ["--", *(kb.repo_path(p) for p in paths)]
    if s.snap.kind == "staged":
        out = git.run(["ls-files", "-s", "-z", *spec], kb.top).stdout
        pairs = []
        for rec in git.split_z(out):
            meta, _, path = rec.partition("\t")
            mode, blob, stage = meta.split(" ")
            if stage == "0":
                pairs.append((path, blob))
    else:
        out = git.run(["ls-tree", "-r", "-z", s.snap.rev or "", *spec], kb.top).stdout
        pairs = []
        for rec in git.split_z(out):
            meta, _, path = rec.partition("\t")
            _, typ, blob = meta.split(" ")
            if typ == "blob":
                pairs.append((path, blob))
    found = {}
    for path, blob in pairs:
        rel = kb.rel(path)
        if rel is not None:
            found[rel] = blob
    return found


def _worktree_key(s: Facts) -> str:
    try:
        trail = git.blob_id((s.kb.root / TRAIL_FILE).read_bytes())
    except OSError:
        return "no-trail"
    from kb.trail import log as oplog

    return trail + "".join(f"|{f.rel}:{f.size}:{f.mtime}" for f in oplog.list_files(s.kb.root))


@snapshot_key_part
def trail_key(s: Facts) -> str:
    """What KB241 reads besides the KB's files: TRAIL.md and the log files (by blob id or,
    in the working tree, by size and mtime)."""
    if s.snap.kind == "worktree":
        return hashlib.sha1(_worktree_key(s).encode("utf-8", "surrogateescape")).hexdigest()
    if s.snap.kind == "commit" and not s.snap.rev:
        return "none"
    files = _listing(s, [TRAIL_FILE, _LOG_PREFIX.rstrip("/")])
    if TRAIL_FILE not in files:
        return "no-trail"
    return hashlib.sha1("\0".join(f"{p}={b}" for p, b in sorted(files.items()))
                        .encode("utf-8", "surrogateescape")).hexdigest()


@snapshot_rule("KB241", volatile=True)
def stale_trail(s: Facts) -> list:
    """KB241: TRAIL.md, when present, is byte for byte what ``kb trail render`` writes."""
    kb = s.kb
    if s.snap.kind == "worktree":
        try:
            have = (kb.root / TRAIL_FILE).read_bytes()
        except OSError:
            return []
        from kb.trail.render import is_stale
        from kb.trail.replay import load

        line = is_stale(load(kb), have)
    else:
        if s.snap.kind == "commit" and not s.snap.rev:
            return []
        files = _listing(s, [TRAIL_FILE, _LOG_PREFIX.rstrip("/")])
        if TRAIL_FILE not in files:
            return []
        key = hashlib.sha1(("trail\0" + "\0".join(f"{p}={b}" for p, b in sorted(files.items())))
                           .encode("utf-8", "surrogateescape")).hexdigest()
        verdict = s.stored(key)
        if verdict is None:
            from kb.trail.render import is_stale
            from kb.trail.replay import replay_blobs

            blobs = git.read_blobs(list(files.values()), kb.top)
            logs = {p: blobs[b] for p, b in files.items()
                    if p.startswith(_LOG_PREFIX) and p.endswith(".jsonl") and b in blobs}
            line = is_stale(replay_blobs(logs), blobs.get(files[TRAIL_FILE], b""))
            verdict = "fresh" if line is None else f"stale:{line}"
            s.store([(key, verdict)])
        line = None if verdict == "fresh" else int(verdict.split(":", 1)[1])
    if line is None:
        return []
    return [diag(TRAIL_FILE, line, "KB241",
                 f"{TRAIL_FILE} is stale: it is not what `kb trail render` renders from the "
                 "exploration graph's log (first difference at this line); run `kb trail render`")]
