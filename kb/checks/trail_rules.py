"""KB241: TRAIL.md is what ``kb trail render`` gives for the exploration graph's log (issue 15);
KB242: the log has no torn or corrupt entry (what ``kb trail check`` lists).

Silent when the KB has neither TRAIL.md nor a log file. For the working tree the graph comes
from the replay cache; for the staged index or a commit the log files are
listed and read from git, and the verdict is cached per listing (the blob ids
of TRAIL.md and every log file) in the index's key-value table.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from typing import Any, Optional

from kb import git
from kb.checks.diagnostics import diag
from kb.checks.facts import Facts
from kb.checks.registry import snapshot_key_part, snapshot_rule
from kb.fileio import read_regular
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


#: The pathspec of the listing (the key the rule and the key part read it under).
_SPEC = (TRAIL_FILE, _LOG_PREFIX.rstrip("/"))


def _is_trail(path: str) -> bool:
    """Whether a KB-relative path is one the listing's pathspec matches."""
    return any(path == x or path.startswith(x + "/") for x in _SPEC)


def from_staged_listing(kb: Any, data: bytes) -> Optional[tuple[dict[str, str], dict[str, str]]]:
    """The listing of :data:`_SPEC` read out of the KB's whole ``git ls-files -s -z`` output
    (:func:`kb.repo.staged_entries`): (every stage-0 entry, the blobs only: what ``git
    ls-tree -r`` lists of a commit with the same entries); None when git must list them."""
    from kb.repo import staged_entries

    found = staged_entries(kb, data, _SPEC)
    if found is None:
        return None
    staged = {rel: blob for rel, (_mode, blob) in found.items()}
    blobs = {rel: blob for rel, (mode, blob) in found.items() if mode != "160000"}
    return staged, blobs


def prime_staged(new: Facts, base: Facts, data: bytes, changes: list[Any]) -> None:
    """Give the pre-commit check's two snapshots their listing of TRAIL.md and the log
    files from the staged listing it already read (``data``): the staged index's, and
    HEAD's when the change leaves every such path as it is (else git lists HEAD's)."""
    found = from_staged_listing(new.kb, data)
    if found is None:
        return
    staged, blobs = found
    _LISTINGS[new] = (_SPEC, staged)
    if base.snap.rev and not any(_is_trail(c.path) for c in changes):
        _LISTINGS[base] = (_SPEC, blobs)


def prime_earlier(earlier: Facts, later: Facts, changes: list[Any]) -> None:
    """The listing of a commit that differs from ``later``'s (listed already) by
    ``changes`` (KB-relative), when they leave every listed path as it is."""
    hit = _LISTINGS.get(later)
    if hit is not None and hit[0] == _SPEC and not any(_is_trail(c.path) for c in changes):
        _LISTINGS[earlier] = hit


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
        pairs = [(e.path, e.oid) for e in git.tree_entries(out) if e.type == "blob"]
    found = {}
    for path, blob in pairs:
        rel = kb.rel(path)
        if rel is not None:
            found[rel] = blob
    return found


def _worktree_key(s: Facts) -> str:
    from kb.trail import log as oplog

    try:
        trail = git.blob_id(read_regular(s.kb.root / TRAIL_FILE))
    except OSError:
        trail = "no-trail"
    logs = "".join(f"|{f.rel}:{f.size}:{f.mtime}" for f in oplog.list_files(s.kb.root))
    return trail + logs + ("|link" if oplog.symlinked(s.kb.root) else "")


@snapshot_key_part
def trail_key(s: Facts) -> str:
    """What KB241 reads besides the KB's files: TRAIL.md and the log files (by blob id or,
    in the working tree, by size and mtime)."""
    if s.snap.kind == "worktree":
        return hashlib.sha1(_worktree_key(s).encode("utf-8", "surrogateescape")).hexdigest()
    if s.snap.kind == "commit" and not s.snap.rev:
        return "none"
    files = _listing(s, [TRAIL_FILE, _LOG_PREFIX.rstrip("/")])
    if not files:
        return "no-trail"
    return hashlib.sha1("\0".join(f"{p}={b}" for p, b in sorted(files.items()))
                        .encode("utf-8", "surrogateescape")).hexdigest()


@snapshot_rule("KB241", "KB242", volatile=True)
def stale_trail(s: Facts) -> list:
    """KB241: TRAIL.md, when present, is byte for byte what ``kb trail render`` writes;
    KB242: each torn or corrupt entry of the log (or operation replay cannot apply), at its
    file and line, as ``kb trail check`` lists them."""
    kb = s.kb
    problems: list[tuple[str, int, str]] = []
    line = None
    if s.snap.kind == "worktree":
        from kb.trail import log as oplog

        try:
            have: Optional[bytes] = read_regular(kb.root / TRAIL_FILE)
        except OSError:
            have = None
        if have is None and not oplog.list_files(kb.root) and not oplog.symlinked(kb.root):
            return []  # no trail here: nothing read beyond one listing of the log folder
        from kb.trail.replay import load

        g = load(kb)
        problems = [(p.path, p.line, p.message) for p in g.problems]
        if have is not None:
            from kb.trail.render import is_stale

            line = is_stale(g, have)
    else:
        if s.snap.kind == "commit" and not s.snap.rev:
            return []
        files = _listing(s, [TRAIL_FILE, _LOG_PREFIX.rstrip("/")])
        if not files:
            return []
        key = hashlib.sha1(("trail2\0" + "\0".join(f"{p}={b}" for p, b in sorted(files.items())))
                           .encode("utf-8", "surrogateescape")).hexdigest()
        verdict = s.stored(key)
        if verdict is None:
            from kb.trail.replay import replay_blobs

            blobs = git.read_blobs(list(files.values()), kb.top)
            logs = {p: blobs[b] for p, b in files.items()
                    if p.startswith(_LOG_PREFIX) and p.endswith(".jsonl") and b in blobs}
            g = replay_blobs(logs)
            stale = None
            if TRAIL_FILE in files:
                from kb.trail.render import is_stale

                stale = is_stale(g, blobs.get(files[TRAIL_FILE], b""))
            verdict = json.dumps({"stale": stale,
                                  "problems": [[p.path, p.line, p.message] for p in g.problems]})
            s.store([(key, verdict)])
        got = json.loads(verdict)
        line = got["stale"]
        problems = [tuple(p) for p in got["problems"]]
    out = [diag(path, ln, "KB242",
                f"the exploration graph's log: {msg}; "
                "`kb trail check` lists every problem")
           for path, ln, msg in problems]
    if line is not None:
        out.append(diag(TRAIL_FILE, line, "KB241",
                        f"{TRAIL_FILE} is stale: it is not what `kb trail render` renders from the "
                        "exploration graph's log (first difference at this line); run "
                        "`kb trail render`"))
    return out
