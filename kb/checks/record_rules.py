"""KB243: every verification record (``Logs/Verification/*.json``) is one kb can read.

Records are JSON that kb does not index, so they are in no snapshot: the rule lists
the records folder itself, as ``kb verifiers`` reads it (the ``*.json`` files directly
in it). In the working tree it reads the files on disk (untracked ones too); in the
staged index or a commit it lists them with git and caches its verdict per listing
(the blob ids) in the index's key-value table. Each file is judged by
:func:`kb.research.verdict.read_record`, the reader of every other front end, so
what this rule warns of is exactly what accuracy, verdict weights and reports leave
out. A record kb reads is then judged as a verdict
(:func:`kb.research.record_faults.record_faults`): a verifier
named twice, fewer verifiers than ``[verdict] min_votes`` (never fewer than 2), or a
verdict the rule (:func:`kb.research.verdict.compute_verdict`) cannot give for its
results under its mode — what ``kb verdict`` never writes, so a hand-written record. Such a
record settles nothing (KB312 reads it through ``record_faults`` too). A warning, not
an error: records are append-only (KB310), so a committed broken record cannot be edited
away, and it must not block every later merge (a settlement resting on it is KB312's
error, in the change that makes it).
"""

from __future__ import annotations

import hashlib
import json
import weakref
from typing import Optional

from kb import git
from kb.checks.changes import records_prefix
from kb.checks.diagnostics import LightDiagnostic, diag
from kb.checks.facts import Facts
from kb.checks.registry import snapshot_key_part, snapshot_rule
from kb.fileio import read_regular
from kb.research.record_faults import min_votes_of, record_faults

#: Facts -> its listing of the records folder (KB path -> blob id; in the working
#: tree ``size:mtime``): the key part and the rule read it once.
_LISTINGS: "weakref.WeakKeyDictionary[Facts, dict[str, str]]" = weakref.WeakKeyDictionary()


def _is_record(path: str, folder: str) -> bool:
    """Whether KB path ``path`` is a ``*.json`` directly in ``folder`` (``…/Verification/``)."""
    return path.startswith(folder) and path.endswith(".json") and "/" not in path[len(folder):]


def _git_listing(s: Facts, folder: str) -> dict[str, str]:
    """The record files of a staged index or commit: KB path -> blob id (regular files:
    a symlink's or submodule's entry is no record git holds)."""
    kb = s.kb
    spec = ["--", kb.repo_path(folder)]
    entries: list[tuple[str, str, str]] = []  # (mode, blob, repository path)
    if s.snap.kind == "staged":
        out = git.run(["ls-files", "-s", "-z", *spec], kb.top).stdout
        for rec in git.split_z(out):
            meta, _, path = rec.partition("\t")
            mode, blob, stage = meta.split(" ")  # ls-files -s: "<mode> <blob> <stage>"
            if stage == "0":
                entries.append((mode, blob, path))
    else:
        out = git.run(["ls-tree", "-r", "-z", s.snap.rev or "", *spec], kb.top).stdout
        entries = [(e.mode, e.oid, e.path) for e in git.tree_entries(out)]
    found: dict[str, str] = {}
    for mode, blob, path in entries:
        if mode not in ("100644", "100755"):
            continue
        rel = kb.rel(path)
        if rel is not None and _is_record(rel, folder):
            found[rel] = blob
    return found


def prime_staged(new: Facts, base: Facts, data: bytes, changes: list) -> None:
    """Give the pre-commit check's two snapshots their record listing out of the staged
    listing it already read (``data``, ``git ls-files -s -z``): the staged index's, and
    HEAD's when the change touches no record (else git lists HEAD's). No git process."""
    from kb.repo import staged_entries

    folder = records_prefix(new.config)
    entries = staged_entries(new.kb, data, (folder,))
    if entries is None:
        return  # git lists them (a prefix git reads as a pattern)
    found = {rel: blob for rel, (mode, blob) in entries.items()
             if mode in ("100644", "100755") and _is_record(rel, folder)}
    _LISTINGS[new] = found
    if base.snap.rev and not any(c.path.startswith(folder) for c in changes):
        _LISTINGS[base] = found


def prime_earlier(earlier: Facts, later: Facts, changes: list) -> None:
    """The record listing of a commit that differs from ``later``'s (listed already) by
    ``changes`` (KB-relative), when they touch no record: the hook's earlier HEAD."""
    hit = _LISTINGS.get(later)
    if hit is not None and not any(c.path.startswith(records_prefix(later.config))
                                   for c in changes):
        _LISTINGS[earlier] = hit


def _disk_listing(s: Facts, folder: str) -> dict[str, str]:
    """The record files in the working tree: KB path -> ``size:mtime_ns`` (what the
    snapshot key changes with; the rule reads the files themselves)."""
    base = s.kb.root / folder
    found: dict[str, str] = {}
    try:
        names = sorted(base.glob("*.json")) if base.is_dir() else []
        for p in names:
            if p.is_file():
                st = p.stat()
                found[folder + p.name] = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:  # an unreadable folder: kb verifiers says so; nothing to judge here
        return found
    return found


def _listing(s: Facts) -> dict[str, str]:
    """The snapshot's record files (:func:`_git_listing` or :func:`_disk_listing`), once."""
    hit = _LISTINGS.get(s)
    if hit is None:
        folder = records_prefix(s.config)
        if s.snap.kind == "worktree":
            hit = _disk_listing(s, folder)
        elif s.snap.kind == "commit" and not s.snap.rev:
            hit = {}
        else:
            hit = _git_listing(s, folder)
        _LISTINGS[s] = hit
    return hit


def record_files(s: Facts) -> dict[str, str]:
    """The verification record files of snapshot ``s``: KB path -> blob id (in the working
    tree ``size:mtime_ns``; the files are read from disk there). Listed once per snapshot
    (no git process for the staged index the hook primed; one ``git ls-tree`` for a commit)."""
    return _listing(s)


@snapshot_key_part
def records_key(s: Facts) -> str:
    """What KB243 reads besides the KB's files: the record files (by blob id or, in the
    working tree, by size and mtime)."""
    files = _listing(s)
    if not files:
        return "no-records"
    return hashlib.sha1("\0".join(f"{p}={b}" for p, b in sorted(files.items()))
                        .encode("utf-8", "surrogateescape")).hexdigest()


def _judge(paths: dict[str, bytes], min_votes: int) -> list[list[str]]:
    """``[path, why, what]`` of each record file left out (:func:`kb.research.verdict.read_record`;
    ``what`` ``malformed``) or read but no verdict kb could write (:func:`record_faults`;
    ``what`` ``fault``)."""
    from kb.research.verdict import BadRecord, read_record

    out = []
    for path in sorted(paths):
        rec = read_record(path, paths[path])
        if isinstance(rec, BadRecord):
            out.append([path, rec.why, "malformed"])
            continue
        faults = record_faults(rec, min_votes)
        if faults:
            out.append([path, "; ".join(faults), "fault"])
    return out


def _read_disk(s: Facts, files: dict[str, str]) -> list[list[str]]:
    """The verdict on the working tree's record files, read from disk (an unreadable
    file is left out by ``kb verifiers`` too, and said so here)."""
    data: dict[str, bytes] = {}
    bad = []
    for path in files:
        try:
            data[path] = read_regular(s.kb.root / path)
        except OSError as exc:
            bad.append([path, f"not readable ({exc.strerror or exc})", "malformed"])
    return sorted(bad + _judge(data, min_votes_of(s.config)))


def _read_git(s: Facts, files: dict[str, str]) -> list[list[str]]:
    """The verdict on a staged index's or commit's record files, cached per listing and
    ``min_votes`` (what the judgement reads besides the files)."""
    need = min_votes_of(s.config)
    key = hashlib.sha1((f"records2\0{need}\0" + "\0".join(f"{p}={b}" for p, b in sorted(files.items())))
                       .encode("utf-8", "surrogateescape")).hexdigest()
    stored: Optional[str] = s.stored(key)
    if stored is not None:
        return json.loads(stored)
    blobs = git.read_blobs(list(files.values()), s.kb.top)
    got = _judge({p: blobs[b] for p, b in files.items() if b in blobs}, need)
    s.store([(key, json.dumps(got, ensure_ascii=False))])
    return got


@snapshot_rule("KB243", volatile=True)
def malformed_records(s: Facts) -> list[LightDiagnostic]:
    """KB243: each verification record that is not JSON or not a valid record
    (:func:`kb.research.verdict.record_problems`), or whose votes cannot give its verdict
    (:func:`kb.research.record_faults.record_faults`), at its line 1, saying what is wrong.
    kb leaves both out of verifiers' accuracy, verdict weights and reports; neither settles
    anything (KB312)."""
    files = _listing(s)
    if not files:
        return []
    bad = _read_disk(s, files) if s.snap.kind == "worktree" else _read_git(s, files)
    out = []
    for path, why, what in bad:
        if what == "fault":
            msg = (f"verification record that no verdict could write: {why}; `kb verdict` "
                   "writes no such record: it settles nothing (KB312) and is left out of "
                   "verifiers' accuracy (kb verifiers) and verdict weights")
        else:
            msg = (f"malformed verification record: {why}; the record is left out of "
                   "verifiers' accuracy (kb verifiers), verdict weights and reports")
        out.append(diag(path, 1, "KB243", msg))
    return out


__all__ = ["record_files", "records_key", "malformed_records", "prime_staged", "prime_earlier"]
