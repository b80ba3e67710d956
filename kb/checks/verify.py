"""``kb verify``: run the rules over snapshots (DESIGN.md §4).

Modes:

- ``worktree`` — the KB containing the current directory, working tree vs
  HEAD; everything is reported and every error fails.
- ``staged`` — the pre-commit hook: the staged index (``GIT_INDEX_FILE`` is
  honoured, so ``git commit -a`` and ``git commit <paths>`` are checked as
  committed) vs HEAD (empty history when HEAD is unborn), every KB of the
  repository.
- ``rev`` — one commit vs its first parent.
- ``range`` — every commit of ``A..B``, each vs its first parent, plus the
  final snapshot (CI and pre-push; catches ``--no-verify`` commits and IDs
  allocated twice on parallel branches at their merge).

``git commit --amend``: git does not tell the hook, so the staged index is
compared with HEAD (the commit being replaced); what that commit changed was
checked when it was made, and CI checks the amended commit against its parent.
A merge being committed (``pre-merge-commit``, or ``git commit`` with
``MERGE_HEAD``) accepts the ``Kb-Override:`` trailers of the merged commits.

In ``staged``, ``rev`` and ``range`` a run fails on every history violation
and on the snapshot errors the change introduces; errors already present in
the base are listed as pre-existing without failing. Verify is read-only:
it never writes tracked files, the git index or refs, and never takes git's
index lock (it may update the cache under ``.kb/``).
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from kb import git
from kb.errors import EnvironmentError_, GitError, KbError, UsageError

ZERO = "0" * 40
MODES = ("worktree", "staged", "rev", "range")
_RULED = ("tree", "experiment", "problem", "proposition", "method", "verified")


# ---------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class Finding:
    """One diagnostic of a verify run, placed in the repository.

    ``path`` is repository-relative (what git and CI annotations use);
    ``kb_path`` is KB-relative and ``kb_root`` the KB folder (for ``--fix``).
    ``fix`` is ``(line, old, new)`` or None. ``blocking`` findings fail the
    run; ``pre_existing`` errors were already in the base snapshot.
    """

    path: str
    line: int
    col: int
    code: str
    severity: str
    message: str
    family: str
    kb: str = ""
    kb_path: str = ""
    kb_root: str = ""
    fix: Optional[tuple[int, str, str]] = None
    commit: Optional[str] = None
    pre_existing: bool = False
    blocking: bool = False

    def format(self) -> str:
        """``path:line:col: CODE [severity] message`` (plus the commit and status)."""
        where = f"[{self.commit[:10]}] " if self.commit else ""
        tail = " (pre-existing)" if self.pre_existing else ""
        return f"{self.path}:{self.line}:{self.col}: {self.code} [{self.severity}] {where}{self.message}{tail}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path, "line": self.line, "col": self.col, "code": self.code,
            "severity": self.severity, "message": self.message, "family": self.family,
            "kb": self.kb, "commit": self.commit, "pre_existing": self.pre_existing,
            "blocking": self.blocking,
            "fix": ({"line": self.fix[0], "old": self.fix[1], "new": self.fix[2]}
                    if self.fix else None),
        }

    def diagnostic(self) -> Any:
        """The finding as a :class:`kb.model.Diagnostic` (repository-relative path)."""
        from kb.model import Diagnostic, Fix

        return Diagnostic(path=self.path, line=self.line, col=self.col, code=self.code,
                          severity=self.severity, message=self.message,  # type: ignore[arg-type]
                          fix=Fix(line=self.fix[0], old=self.fix[1], new=self.fix[2]) if self.fix else None)


@dataclass
class Report:
    """What a verify run found. ``exit_code``: 0 clean, 1 violations, 2 environment."""

    mode: str
    findings: list[Finding] = field(default_factory=list)
    kbs: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    env_error: Optional[str] = None
    commits: int = 0

    @property
    def blocking(self) -> list[Finding]:
        return [f for f in self.findings if f.blocking]

    @property
    def exit_code(self) -> int:
        if self.env_error:
            return 2
        return 1 if self.blocking else 0

    def merge(self, other: "Report") -> None:
        self.findings.extend(other.findings)
        self.kbs.extend(k for k in other.kbs if k not in self.kbs)
        self.notes.extend(other.notes)
        self.commits += other.commits
        self.env_error = self.env_error or other.env_error


from kb.checks.facts import LightDiagnostic as _D  # noqa: E402


def _fix_of(raw: Optional[str]) -> Optional[tuple[int, str, str]]:
    if not raw:
        return None
    import json

    f = json.loads(raw)
    return (f["line"], f["old"], f["new"])


# ---------------------------------------------------------------------------
# rules over one snapshot


_CACHE_SCHEMA = """
CREATE TABLE IF NOT EXISTS kb_check_kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS kb_check_files (path TEXT NOT NULL, blob TEXT NOT NULL,
                                           PRIMARY KEY (path, blob));
CREATE TABLE IF NOT EXISTS kb_check_diags (path TEXT NOT NULL, blob TEXT NOT NULL,
    line INTEGER NOT NULL, col INTEGER NOT NULL, code TEXT NOT NULL, severity TEXT NOT NULL,
    message TEXT NOT NULL, fix TEXT);
CREATE INDEX IF NOT EXISTS kb_check_diags_pb ON kb_check_diags (path, blob);
"""


def _prepare_cache(db: sqlite3.Connection) -> bool:
    """Create kb's verify cache tables (in the index database); False if impossible."""
    from kb.checks.registry import rules_fingerprint

    try:
        db.executescript(_CACHE_SCHEMA)
        fp = rules_fingerprint()
        row = db.execute("SELECT value FROM kb_check_kv WHERE key='rules'").fetchone()
        if row is None or row[0] != fp:
            with db:
                db.execute("DELETE FROM kb_check_files")
                db.execute("DELETE FROM kb_check_diags")
                db.execute("DELETE FROM kb_check_kv")
                db.execute("INSERT INTO kb_check_kv VALUES ('rules', ?)", (fp,))
        return True
    except sqlite3.Error:
        return False


def _file_rule_results(facts: Any, paths: Optional[list[str]] = None) -> list[_D]:
    """Per-file rule diagnostics of every file (or of ``paths``), from the cache or
    computed (then cached)."""
    import json

    from kb.checks.facts import FileFacts
    from kb.checks.registry import FILE_RULES

    db = facts.db
    files, formats = facts.files, facts.formats
    scope = list(files) if paths is None else [p for p in paths if p in files]
    cached = _prepare_cache(db)
    if not cached:
        missing = scope
    elif len(scope) > 64:
        missing = [p for (p,) in db.execute(
            f"SELECT s.path FROM {facts.table()} s LEFT JOIN kb_check_files c "
            "ON c.path = s.path AND c.blob = s.blob WHERE c.path IS NULL")]
    else:
        missing = [p for p in scope if db.execute(
            "SELECT 1 FROM kb_check_files WHERE path=? AND blob=?", (p, files[p])).fetchone() is None]
    todo = [p for p in missing if formats.get(p) in _RULED]
    fresh: list[tuple] = []
    out: list[_D] = []
    keep = facts.config.paths["tree"]
    for p in todo:
        ff = FileFacts(facts, p, formats[p])
        for rule in FILE_RULES:
            for d in rule.func(ff):
                x = _D.of(d)
                out.append(x)
                fresh.append((p, files[p], x.line, x.col, x.code, x.severity, x.message,
                              json.dumps({"line": x.fix[0], "old": x.fix[1], "new": x.fix[2]},
                                         ensure_ascii=False) if x.fix else None))
        if p != keep:  # a cold sweep of a large KB must not hold every file's objects
            facts.forget(p)
    if cached and todo:
        try:
            with db:
                db.executemany("INSERT OR IGNORE INTO kb_check_files VALUES (?, ?)",
                               [(p, files[p]) for p in todo])
                db.executemany("INSERT INTO kb_check_diags VALUES (?,?,?,?,?,?,?,?)", fresh)
        except sqlite3.Error:
            pass
    if cached:
        todo_set = set(todo)
        if len(scope) > 64:
            rows = facts.join("kb_check_diags", "t.path, t.blob, t.line, t.col, t.code, t.severity, "
                                                "t.message, t.fix")
        else:
            rows = [(p, files[p], *r) for p in scope for r in db.execute(
                "SELECT line, col, code, severity, message, fix FROM kb_check_diags "
                "WHERE path=? AND blob=?", (p, files[p]))]
        seen = set()
        for p, b, ln, col, code, sev, msg, fx in rows:
            if p in todo_set or files.get(p) != b or (p, ln, col, code, msg) in seen:
                continue
            seen.add((p, ln, col, code, msg))
            out.append(_D(p, ln, col, code, sev, msg, _fix_of(fx)))
    return out


# -- whole-snapshot results, cached per snapshot ------------------------------------
#
# The results of a snapshot are stored under a hash of its {path: blob} map. A
# snapshot that differs from a stored one only in files whose index facts (the
# objects' JSON and the links) are identical on both sides -- prose appended to
# an experiment, a card's free sections -- inherits the stored cross-file
# results; only its changed files' parse and per-file results are read, and the
# "volatile" rules (the dashboard, which reads file bytes) run again. The
# common pre-commit check then costs what its change costs.


def _snap_key(facts: Any) -> str:
    key = getattr(facts, "_snap_key", None)
    if key is None:
        import hashlib

        from kb.checks.registry import KEY_PARTS, load_rules

        load_rules()
        body = "\n".join(f"{p}\0{b}" for p, b in sorted(facts.files.items()))
        body += "".join("\n\1" + part(facts) for part in KEY_PARTS)
        key = "snap:" + hashlib.sha1(body.encode("utf-8", "surrogateescape")).hexdigest()
        facts._snap_key = key
    return key


def _load_results(facts: Any, key: str) -> Optional[list[tuple[str, _D]]]:
    import json

    try:
        row = facts.db.execute("SELECT value FROM kb_check_kv WHERE key=?", (key,)).fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    try:
        # Used again: keep it among the most recent (HEAD's results are the base of
        # every pre-commit check; evicted, every check would redo the whole KB).
        with facts.db:
            facts.db.execute("INSERT OR REPLACE INTO kb_check_kv VALUES (?, ?)", (key, row[0]))
    except sqlite3.Error:
        pass
    out = []
    for origin, p, ln, col, code, sev, msg, fx in json.loads(row[0]):
        out.append((origin, _D(p, ln, col, code, sev, msg, tuple(fx) if fx else None)))
    return out


_KEEP_SNAPSHOTS = 8


def _store_results(facts: Any, key: str, results: list[tuple[str, _D]]) -> None:
    """Store the results of a snapshot (the few most recently stored or used are kept)."""
    import json

    data = json.dumps([[o, *d] for o, d in results], ensure_ascii=False)
    try:
        with facts.db:
            facts.db.execute("INSERT OR REPLACE INTO kb_check_kv VALUES (?, ?)", (key, data))
            facts.db.execute(
                "DELETE FROM kb_check_kv WHERE key LIKE 'snap:%' AND rowid NOT IN (SELECT rowid "
                f"FROM kb_check_kv WHERE key LIKE 'snap:%' ORDER BY rowid DESC LIMIT {_KEEP_SNAPSHOTS})")
    except sqlite3.Error:
        pass


def _neutral(facts: Any, base: Any, changed: list[str]) -> bool:
    """True when every changed path has the same objects (JSON) and links on both sides."""
    db = facts.db
    for p in changed:
        a, b = facts.files.get(p), base.files.get(p)
        if a is None or b is None or facts.formats.get(p) != base.formats.get(p):
            return False
        q_obj = "SELECT id, kind, status, title, line, data FROM objects WHERE path=? AND blob=?"
        q_lnk = "SELECT src, dst, kind FROM links WHERE path=? AND blob=?"
        if sorted(set(db.execute(q_obj, (p, a)))) != sorted(set(db.execute(q_obj, (p, b)))):
            return False
        if sorted(set(db.execute(q_lnk, (p, a)))) != sorted(set(db.execute(q_lnk, (p, b)))):
            return False
    return True


def _parse_rows(facts: Any, paths: Optional[list[str]] = None) -> list[_D]:
    return [_D(p, ln, col, code, sev, msg, _fix_of(fx))
            for p, ln, col, code, sev, msg, fx in facts.parse_diagnostics(paths)]


def _raw_snapshot(facts: Any, base: Optional[Any],
                  earlier: Optional[Any] = None) -> list[tuple[str, _D]]:
    """(origin, diagnostic) of every snapshot rule: origin ``p`` parse, ``f`` per-file
    rule, ``x`` cross-file rule, ``v`` volatile cross-file rule."""
    from kb.checks.registry import SNAPSHOT_RULES, enabled, load_rules

    load_rules()
    cfg = facts.config
    _prepare_cache(facts.db)
    key = _snap_key(facts)
    hit = _load_results(facts, key)
    if hit is not None:
        return hit
    volatile = [r for r in SNAPSHOT_RULES if r.volatile and enabled(r, cfg)]
    stable = [r for r in SNAPSHOT_RULES if not r.volatile and enabled(r, cfg)]
    inherited = None
    src, prev = base, None
    if base is not None:
        prev = _load_results(base, _snap_key(base))
        if prev is None and earlier is not None:
            # The base was never checked (a pull, a merge, a --no-verify commit): the
            # state checked before it may be, and differ from this one only in prose.
            src = earlier()
            prev = _load_results(src, _snap_key(src)) if src is not None else None
    if src is not None and prev is not None:
        changed = sorted(p for p in set(facts.files) | set(src.files)
                         if facts.files.get(p) != src.files.get(p))
        if _neutral(facts, src, changed):
            cset = set(changed)
            inherited = [(o, d) for o, d in prev if o == "x" or (o in "pf" and d.path not in cset)]
            inherited += [("p", d) for d in _parse_rows(facts, changed)]
            inherited += [("f", d) for d in _file_rule_results(facts, changed)]
    if inherited is not None:
        out = inherited
    else:
        out = [("p", d) for d in _parse_rows(facts)]
        out += [("f", d) for d in _file_rule_results(facts)]
        for rule in stable:
            out.extend(("x", _D.of(d)) for d in rule.func(facts))
    for rule in volatile:
        out.extend(("v", _D.of(d)) for d in rule.func(facts))
    _store_results(facts, key, out)
    return out


def snapshot_diagnostics(facts: Any, base: Optional[Any] = None,
                         earlier: Optional[Any] = None) -> list[_D]:
    """Every snapshot diagnostic of ``facts`` (parse + KB2xx), config severities applied.

    ``base`` is a snapshot whose stored results may be inherited (see above);
    ``earlier`` (a callable returning Facts or None) offers another one when
    the base's results are not stored.
    """
    from kb.checks.catalogue import effective_severity

    cfg = facts.config
    out = []
    raw = _raw_snapshot(facts, base, earlier)
    if any(d.code == "KB190" for _, d in raw):
        # A conflicted file is read as empty: what follows from that (a stale
        # dashboard) is noise until the conflict is resolved.
        raw = [(k, d) for k, d in raw if d.code != "KB240"]
    for _, d in raw:
        sev = effective_severity(d.code, d.severity, cfg)
        if sev is not None:
            out.append(d if sev == d.severity else d._replace(severity=sev))
    return out


def history_diagnostics(change: Any) -> list[_D]:
    """Every history diagnostic of ``change`` (config severities applied)."""
    from kb.checks.catalogue import effective_severity
    from kb.checks.registry import HISTORY_RULES, enabled, load_rules

    load_rules()
    cfg = change.config
    out = []
    # A file with conflict markers is one KB190 (kb.merge.markers), read as
    # empty: the objects it seems to lose are not reported as removed.
    conflicted = {p for p in change.paths if p in change.new.files
                  and change.new.meta(p).get("conflict")}
    for rule in HISTORY_RULES:
        if rule.modes is not None and change.mode not in rule.modes:
            continue
        if not enabled(rule, cfg):
            continue
        for d in rule.func(change):
            x = _D.of(d)
            if x.path in conflicted:
                continue
            if x.severity == "info":  # accepted by an override: never raised by config
                out.append(x)
                continue
            sev = effective_severity(x.code, x.severity, cfg)
            if sev is not None:
                out.append(x if sev == x.severity else x._replace(severity=sev))
    return out


_LOCATIONS = re.compile(r"(?<=\.md):\d+|\blines? \d+(?:(?:, | and )\d+)*")


def _key(d: _D) -> tuple[str, str, str]:
    """Identity of a diagnostic across two snapshots (line numbers left out)."""
    return (d.code, d.path, _LOCATIONS.sub("", d.message))


def split_introduced(new: list[_D], base: list[_D]) -> tuple[list[_D], list[_D]]:
    """(introduced, pre-existing) errors of ``new`` compared with ``base``."""
    budget = Counter(_key(d) for d in base if d.severity == "error")
    introduced, pre = [], []
    for d in new:
        if d.severity != "error":
            continue
        k = _key(d)
        if budget[k] > 0:
            budget[k] -= 1
            pre.append(d)
        else:
            introduced.append(d)
    return introduced, pre


# ---------------------------------------------------------------------------
# git


def _raw(data: bytes, kb: Any) -> list[Any]:
    """Parse ``git diff-* --raw -z`` output into RawChanges of ``kb`` (KB-relative)."""
    from kb.checks.facts import RawChange

    parts = data.split(b"\0")
    out = []
    i = 0
    while i < len(parts) - 1:
        meta = parts[i].decode()
        if not meta.startswith(":"):
            i += 1
            continue
        fields = meta[1:].split()
        status = fields[4]
        n = 2 if status[:1] in ("R", "C") else 1
        paths = [parts[i + 1 + j].decode("utf-8", "surrogateescape") for j in range(n)]
        i += 1 + n
        old, new = fields[2], fields[3]
        rel = kb.rel(paths[-1])
        if rel is None:
            continue
        out.append(RawChange(rel, None if old == ZERO or fields[0] == "000000" else old,
                             None if status == "D" or fields[1] == "000000" else (new if new != ZERO else "")))
    return out


def diff_commits(kb: Any, old: Optional[str], new: str) -> list[Any]:
    """Changed paths of ``kb`` between two commits (``old`` None: the empty tree)."""
    spec = ["--", kb.prefix] if kb.prefix else []
    proc = git.run(["diff-tree", "-r", "-z", "--raw", "--no-renames", old or git.EMPTY_TREE, new, *spec],
                   kb.top)
    return _raw(proc.stdout, kb)


def diff_many(kb: Any, pairs: list[tuple[str, Optional[str]]]) -> dict[str, list[Any]]:
    """Changed paths of ``kb`` for many (commit, first parent or None) pairs, in one
    ``git diff-tree --stdin`` call: commit -> changes (absent: nothing changed)."""
    if not pairs:
        return {}
    spec = ["--", kb.prefix] if kb.prefix else []
    data = "".join(f"{c} {p}\n" if p else f"{c}\n" for c, p in pairs).encode()
    proc = git.run(["diff-tree", "-r", "-z", "--raw", "--no-renames", "--root", "--stdin", *spec],
                   kb.top, input=data)
    out: dict[str, list[Any]] = {}
    chunks: dict[str, list[bytes]] = {}
    cur: Optional[list[bytes]] = None
    parts = proc.stdout.split(b"\0")
    i = 0
    while i < len(parts):
        tok = parts[i]
        if tok.startswith(b":"):
            if cur is not None:
                status = tok.split()[-1][:1]
                n = 2 if status in (b"R", b"C") else 1
                cur.extend(parts[i:i + 1 + n])
                i += 1 + n
                continue
        elif len(tok.strip()) >= 40 and re.fullmatch(rb"[0-9a-f]{40,64}", tok.strip()):
            cur = chunks.setdefault(tok.strip().decode(), [])
        i += 1
    for c, toks in chunks.items():
        out[c] = _raw(b"\0".join(toks) + b"\0", kb)
    return out


def diff_staged(kb: Any, head: Optional[str]) -> list[Any]:
    """Changed paths of ``kb`` between HEAD (or nothing) and the staged index."""
    spec = ["--", kb.prefix] if kb.prefix else []
    proc = git.run(["diff-index", "--cached", "-z", "--raw", "--no-renames",
                    head or git.EMPTY_TREE, *spec], kb.top)
    return _raw(proc.stdout, kb)


def _worktree_verified(kb: Any, head: Optional[str]) -> list[Any]:
    """Changes under Verified/ between HEAD and the working tree, on blob ids.

    ``git diff-index`` says which files may differ; a file whose stat info
    changed is re-hashed by ``git hash-object`` with git's own filters
    (``core.autocrlf``), so CRLF bytes in the working tree of an untouched
    file are not a modification (case WIN-01).
    """
    from kb.checks.facts import RawChange

    if head is None:
        return []
    folder = kb.config.paths["verified"].strip("/")
    spec = kb.prefix + (folder + "/" if folder not in ("", ".") else "")
    proc = git.run(["diff-index", "-z", "--raw", "--no-renames", head, "--", spec or "."], kb.top)
    changes = _raw(proc.stdout, kb)
    dirty = [c for c in changes if c.old and c.new == ""]
    out = [c for c in changes if c.new != ""]
    if dirty:
        paths = "\n".join(kb.prefix + c.path for c in dirty) + "\n"
        hashed = git.run(["hash-object", "--stdin-paths"], kb.top,
                         input=paths.encode("utf-8", "surrogateescape")).stdout.decode().split()
        for c, h in zip(dirty, hashed):
            if h != c.old:
                out.append(RawChange(c.path, c.old, h))
    return out


def parse_overrides(text: str) -> dict[str, str]:
    """``ID reason`` lines (``KB_OVERRIDE``, trailer values) -> {ID: reason}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if line.lower().startswith("kb-override:"):
            line = line.split(":", 1)[1].strip()
        if not line:
            continue
        first, _, reason = line.partition(" ")
        for oid in first.split(","):
            if oid:
                out[oid] = reason.strip()
    return out


def trailers(top: Path, revs: list[str]) -> dict[str, dict[str, str]]:
    """commit -> {ID: reason} of its ``Kb-Override:`` trailers, for ``git log revs``.

    A ``Kb-Renumber: H7 -> H9`` trailer (``kb sync``) accepts the change to the
    old ID the same way (``renumbered to H9``).
    """
    proc = git.run(["log", "--format=%H%x1f%(trailers:key=Kb-Override,valueonly)%x1f"
                    "%(trailers:key=Kb-Renumber,valueonly)%x1e", *revs, "--"], top)
    out = {}
    for rec in proc.stdout.decode("utf-8", "replace").split("\x1e"):
        rec = rec.strip("\n")
        if not rec:
            continue
        sha, _, rest = rec.partition("\x1f")
        vals, _, renumbers = rest.partition("\x1f")
        ov = parse_overrides(vals)
        ov.update(parse_renumbers(renumbers))
        out[sha.strip()] = ov
    return out


def parse_renumbers(text: str) -> dict[str, str]:
    """``H7 -> H9`` lines (``Kb-Renumber`` trailer values) -> {old ID: reason}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        old, sep, new = line.strip().partition("->")
        if sep and old.strip() and new.strip():
            out[old.strip()] = f"renumbered to {new.strip()} (Kb-Renumber)"
    return out


def _shallow(top: Path) -> set[str]:
    """Commit ids at the boundary of a shallow clone (empty for a full clone)."""
    if git.out(["rev-parse", "--is-shallow-repository"], top) != "true":
        return set()
    p = Path(git.out(["rev-parse", "--git-path", "shallow"], top))
    if not p.is_absolute():
        p = top / p
    try:
        return set(p.read_text().split())
    except OSError:
        return set()


def _shallow_note(commit: str) -> str:
    return (f"history checks need full history: commit {commit[:12]} is the boundary of a shallow "
            "clone, so its parent is unknown and nothing it added can be judged; run "
            "`git fetch --unshallow` (GitHub Actions: actions/checkout with fetch-depth: 0)")


# ---------------------------------------------------------------------------
# knowledge bases


def _kb_at(top: Path, prefix: str, blob_rev: Optional[str]) -> Any:
    """The KB at repository folder ``prefix`` (config from disk, else from ``blob_rev``:
    a commit, or ``""`` for the staged index)."""
    from kb.config import config_from_dict, load_config
    from kb.errors import ConfigError
    from kb.repo import KnowledgeBase

    root = top / prefix if prefix else top
    if (root / "kb.toml").is_file():
        cfg = load_config(root)
    else:
        import tomllib

        spec = f"{blob_rev}:{prefix}kb.toml" if blob_rev else f":{prefix}kb.toml"
        data = git.run(["cat-file", "blob", spec], top).stdout
        try:
            cfg = config_from_dict(root, tomllib.loads(data.decode("utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{prefix}kb.toml is not valid TOML: {exc}") from None
    return KnowledgeBase(root=root, top=top, prefix=prefix, config=cfg)


_CONFIGS: dict[tuple[str, str, str], Any] = {}


def _config_at(k: Any, rev: Optional[str]) -> Any:
    """The KB's configuration as of ``rev`` (a commit, or ``":"`` for the staged
    index), or None when kb.toml is absent there or unreadable (the caller
    then falls back to the configuration it has)."""
    if rev is None:
        return None
    from kb.config import config_from_dict, tomllib

    spec = f"{rev}{'' if rev == ':' else ':'}{k.prefix}kb.toml"
    key = (str(k.top), k.prefix, spec)
    if rev == ":":
        _CONFIGS.pop(key, None)  # the staged index changes; commits do not
    if key not in _CONFIGS:
        if rev == ":" or "\n" in spec:
            proc = git.run(["cat-file", "blob", spec], k.top, check=False)
            data = proc.stdout if proc.returncode == 0 else None
        else:
            # A commit's kb.toml through the process's one cat-file (a range reads one
            # per commit: no process per commit).
            data = git.read_blobs([spec], k.top).get(spec)
        cfg = None
        if data is not None:
            try:
                text = data.decode("utf-8")
                cfg = config_from_dict(k.root, tomllib.loads(text), text)
            except (tomllib.TOMLDecodeError, UnicodeDecodeError, KbError):
                cfg = None
        _CONFIGS[key] = cfg
    return _CONFIGS[key]


def _index(k: Any) -> Any:
    from kb.index import Index

    if k.root.is_dir() and (k.root / "kb.toml").is_file():
        return Index(k)
    import hashlib

    where = git.git_dir(k.top) / "kb-verify" / hashlib.sha1(k.prefix.encode()).hexdigest()[:16]
    return Index(k, where / "index.sqlite")


def _staged_kbs(top: Path) -> list[str]:
    proc = git.run(["ls-files", "-z", "--cached", "--", ":(glob)**/kb.toml"], top)
    return sorted({p[: -len("kb.toml")] for p in git.split_z(proc.stdout)
                   if p == "kb.toml" or p.endswith("/kb.toml")})


def _top(start: Path) -> Path:
    """The work tree top; in a bare repository (a server's pre-receive hook) its git dir."""
    top = git.toplevel(start)
    if top is None:
        bare = git.run(["rev-parse", "--is-bare-repository"], start, check=False)
        if bare.returncode == 0 and bare.stdout.strip() == b"true":
            return git.git_dir(Path(start)).resolve()
        raise EnvironmentError_(f"{start.resolve()} is not inside a git work tree")
    return top.resolve()


def _patch(files: dict[str, str], formats: dict[str, str], changes: Iterable[Any], kb: Any,
           forward: bool) -> tuple[dict[str, str], dict[str, str]]:
    """Apply ``changes`` to a {path: blob} map (``forward``: old -> new, else new -> old)."""
    from kb.parse import classify

    files, formats = dict(files), dict(formats)
    for c in changes:
        want = c.new if forward else c.old
        if not want:
            files.pop(c.path, None)
            formats.pop(c.path, None)
            continue
        fmt = formats.get(c.path) or classify(c.path, kb.config)
        if fmt is None:
            continue
        files[c.path] = want
        formats[c.path] = fmt
    return files, formats


def _findings(diags: Iterable[_D], k: Any, family: str, *, commit: Optional[str] = None,
              blocking: Optional[set[int]] = None, pre: Optional[set[int]] = None,
              all_errors_block: bool = False) -> list[Finding]:
    out = []
    for d in diags:
        out.append(Finding(
            path=k.prefix + d.path if d.path else k.prefix.rstrip("/"), line=d.line, col=d.col,
            code=d.code, severity=d.severity, message=d.message, family=family,
            kb=k.prefix.rstrip("/") or ".", kb_path=d.path, kb_root=str(k.root), fix=d.fix,
            commit=commit, pre_existing=bool(pre and id(d) in pre),
            blocking=(d.severity == "error") if all_errors_block else bool(blocking and id(d) in blocking)))
    return out


def _config_findings(k: Any) -> list[Finding]:
    return _findings([_D.of(w) for w in k.config.warnings], k, "snapshot")


def _check_snapshots(k: Any, new_f: Any, base_f: Optional[Any], strict: bool,
                     earlier: Optional[Any] = None) -> list[Finding]:
    """Snapshot findings of ``new_f``; with ``strict``, only errors absent from
    ``base_f`` block (the others are marked pre-existing)."""
    diags = snapshot_diagnostics(new_f, base_f, earlier)
    if not strict:
        return _findings(diags, k, "snapshot", all_errors_block=True)
    errors = [d for d in diags if d.severity == "error"]
    if not errors:
        return _findings(diags, k, "snapshot")
    base = snapshot_diagnostics(base_f) if base_f is not None else []
    introduced, pre = split_introduced(diags, base)
    return _findings(diags, k, "snapshot", blocking={id(d) for d in introduced},
                     pre={id(d) for d in pre})


def _history(change: Any, k: Any, commit: Optional[str]) -> list[Finding]:
    return _findings(history_diagnostics(change), k, "history", commit=commit,
                     all_errors_block=True)


# ---------------------------------------------------------------------------
# modes


def verify_worktree(start: Path, kb_path: Optional[Path] = None,
                    environ: Optional[Mapping[str, str]] = None) -> Report:
    """``kb verify``: the working tree of one KB vs HEAD; every error fails."""
    from kb.checks.facts import Change, Facts, RawChange
    from kb.repo import commit_snapshot, empty_snapshot, open_kb

    env = os.environ if environ is None else environ
    k = open_kb(kb_path or start)
    report = Report(mode="worktree", kbs=[k.prefix.rstrip("/") or "."])
    with _index(k) as idx:
        idx.refresh(check=True)  # verify reads everything: check every cached parse too
        new = idx.worktree()
        new_f = Facts(idx, new, "the working tree", ensure=())
        head = git.rev_parse("HEAD", k.top)
        base = commit_snapshot(k, head) if head else empty_snapshot(k)
        base_f = Facts(idx, base, "HEAD", derive_from=new_f)
        folder = k.config.paths["verified"].strip("/")
        vprefix = "" if folder in ("", ".") else folder + "/"
        changes = [RawChange(p, base.files.get(p), new.files.get(p))
                   for p in sorted(set(new.files) | set(base.files))
                   if base.files.get(p) != new.files.get(p) and not p.startswith(vprefix)]
        changes += _worktree_verified(k, head)
        overrides = parse_overrides(env.get("KB_OVERRIDE", ""))
        change = Change(base_f, new_f, "worktree", changes, overrides,
                        base_config=_config_at(k, head), new_config=k.config)
        report.findings += _config_findings(k)
        report.findings += _check_snapshots(k, new_f, base_f, strict=False)
        report.findings += _history(change, k, None)
    report.findings += _driver_findings(k)
    if head is None:
        report.notes.append("HEAD has no commit yet: history is empty")
    return report


def _driver_findings(k: Any) -> list[Finding]:
    """KB245: ``.gitattributes`` names a kb merge driver this clone has not
    registered (git would merge that file line by line; issue: team work)."""
    from kb.checks.catalogue import effective_severity
    from kb.merge.drivers import missing_drivers

    sev = effective_severity("KB245", "warning", k.config)
    if sev is None:
        return []
    diags = [_D(m.path, m.line, 1, "KB245", sev,
                f"{m.path} names the merge driver {m.driver}, which this clone has not registered: "
                "git merges the file line by line instead (conflicts kb would avoid); run "
                "`kb hooks install` (or `kb sync`) to register kb's drivers", None)
             for m in missing_drivers(k.top, k.root)]
    return _findings(diags, k, "snapshot")


def _merge_heads(top: Path, env: Mapping[str, str]) -> list[str]:
    """The commits a merge being committed brings in (see :func:`_merge_overrides`);
    ``GITHEAD_<sha>`` (set by ``git merge`` for its strategies and hooks) counts too."""
    gdir = git.git_dir(top)
    heads: list[str] = []
    try:
        heads += (gdir / "MERGE_HEAD").read_text().split()
    except OSError:
        pass
    action = env.get("GIT_REFLOG_ACTION", "")
    if not heads and action.startswith("merge "):
        for name in action.split()[1:]:
            if not name.startswith("-"):
                sha = git.rev_parse(name, top)
                if sha:
                    heads.append(sha)
    elif not heads and action.startswith("pull"):
        try:
            for line in (gdir / "FETCH_HEAD").read_text().splitlines():
                parts = line.split("\t")
                if parts and parts[0] and (len(parts) < 2 or "not-for-merge" not in parts[1]):
                    heads.append(parts[0].strip())
        except OSError:
            pass
    if not heads:
        heads = [k[len("GITHEAD_"):] for k in env if k.startswith("GITHEAD_")
                 and git.rev_parse(k[len("GITHEAD_"):], top)]
    return heads


def _merge_overrides(top: Path, env: Mapping[str, str]) -> dict[str, str]:
    """Overrides of the commits that a merge (or cherry-pick) being committed brings in.

    A merge concluded by ``git commit`` has ``MERGE_HEAD``; the
    ``pre-merge-commit`` hook of ``git merge`` / ``git pull`` has none yet, so
    the merged commits come from ``GIT_REFLOG_ACTION`` (``merge <names>``) or
    ``FETCH_HEAD`` (``pull``).
    """
    gdir = git.git_dir(top)
    heads = _merge_heads(top, env)
    out: dict[str, str] = {}
    for h in heads:
        for ov in trailers(top, [f"HEAD..{h}"]).values():
            out.update(ov)
    try:
        pick = (gdir / "CHERRY_PICK_HEAD").read_text().split()
    except OSError:
        pick = []
    if pick:
        for ov in trailers(top, ["-1", pick[0]]).values():
            out.update(ov)
    return out


def verify_staged(start: Path, kb_path: Optional[Path] = None,
                  environ: Optional[Mapping[str, str]] = None) -> Report:
    """The pre-commit hook: the staged index vs HEAD, every KB of the repository."""
    from kb.checks.facts import Change, Facts
    from kb.repo import Snapshot, staged_snapshot

    env = os.environ if environ is None else environ
    top = _top(start)
    prefixes = _selected(top, kb_path, _staged_kbs(top))
    head = git.rev_parse("HEAD", top)
    report = Report(mode="staged")
    if head is None:
        report.notes.append("HEAD has no commit yet: history is empty (first commit)")
    overrides = parse_overrides(env.get("KB_OVERRIDE", ""))
    merging: list[str] = []
    if head is not None:
        overrides.update(_merge_overrides(top, env))
        merging = [h for h in _merge_heads(top, env) if h != head]
    for prefix in prefixes:
        k = _kb_at(top, prefix, "")
        report.kbs.append(prefix.rstrip("/") or ".")
        with _index(k) as idx:
            new = staged_snapshot(k)
            changes = diff_staged(k, head)
            bfiles, bfmts = _patch(new.files, new.formats, changes, k, forward=False)
            base = Snapshot(kb=k, kind="commit", files=bfiles, formats=bfmts, rev=head)
            new_f = Facts(idx, new, "the staged index")
            base_f = Facts(idx, base, "HEAD" if head else "the empty history", derive_from=new_f)
            change = Change(base_f, new_f, "staged", changes, overrides,
                            base_config=_config_at(k, head), new_config=_config_at(k, ":"))
            report.findings += _config_findings(k)
            found = _history(change, k, None)
            if found and merging:
                # Only the allocation order (KB307) is judged against every merged head:
                # the merged commits are not checked here (pre-push and CI check them),
                # so what they bring in is still this merge's to answer for.
                found = _judged_by_all_parents(found, idx, k, None, merging, new, "staged",
                                               overrides, None, diff=lambda p: diff_staged(k, p),
                                               codes={"KB307"})
            report.findings += found
            report.findings += _check_snapshots(k, new_f, base_f, strict=True,
                                                earlier=lambda: _before_head(idx, k, base_f))
    return report


#: Above this many changed paths between HEAD and the state before it, a search for
#: reusable results costs about what the full check costs.
_EARLIER_MAX_CHANGES = 400


def _before_head(idx: Any, k: Any, head_f: Any) -> Optional[Any]:
    """Facts of the commit HEAD pointed at before it last moved (``HEAD@{1}``: the state
    before a pull, a merge or a reset), built from HEAD's without parsing; None when
    there is none, it is far away, or a version it holds is not in the index."""
    from kb.checks.facts import Facts
    from kb.repo import Snapshot

    head = head_f.snap.rev
    if not head:
        return None
    proc = git.run(["rev-parse", "--verify", "--quiet", "HEAD@{1}^{commit}"], k.top, check=False)
    before = proc.stdout.decode().strip()
    if proc.returncode != 0 or not before or before == head:
        return None
    changes = diff_commits(k, before, head)
    if len(changes) > _EARLIER_MAX_CHANGES:
        return None
    files, fmts = _patch(head_f.files, head_f.formats, changes, k, forward=False)
    if any(c.old and c.path in files and not idx.has_parse(c.path, c.old) for c in changes):
        return None
    return Facts(idx, Snapshot(kb=k, kind="commit", files=files, formats=fmts, rev=before),
                 before[:10], ensure=())


def _selected(top: Path, kb_path: Optional[Path], found: list[str]) -> list[str]:
    """The KB prefixes to check: every one found, or the one ``--kb`` names."""
    if kb_path is None:
        return found
    from kb.repo import find_root

    root = find_root(Path(kb_path))
    if root is None:
        from kb.errors import NotAKnowledgeBase

        raise NotAKnowledgeBase(f"no kb.toml in {Path(kb_path).resolve()} or any parent folder")
    rel = root.resolve().relative_to(top).as_posix()
    return ["" if rel == "." else rel + "/"]


def _parents(top: Path, commit: str) -> list[str]:
    line = git.out(["rev-list", "--parents", "-n", "1", commit], top)
    return line.split()[1:]


def verify_rev(start: Path, rev: str, kb_path: Optional[Path] = None) -> Report:
    """One commit vs its first parent (CI)."""
    top = _top(start)
    sha = git.rev_parse(rev, top)
    if sha is None:
        raise UsageError(f"{rev!r} is not a commit")
    parents = _parents(top, sha)
    return _verify_commits(top, [(sha, parents)], sha, parents[0] if parents else None, kb_path,
                           mode="rev", trailer_spec=["-1", sha])


def verify_range(start: Path, spec: str, kb_path: Optional[Path] = None) -> Report:
    """Every commit of ``A..B`` (each vs its first parent) plus the final snapshot."""
    if "..." in spec or ".." not in spec:
        raise UsageError(f"--range takes A..B (two commits), not {spec!r}")
    a, _, b = spec.partition("..")
    return verify_commit_range(start, a or None, b or "HEAD", kb_path, allow_root=False)


def verify_commit_range(start: Path, a: Optional[str], b: str, kb_path: Optional[Path] = None,
                        allow_root: bool = True, against: Optional[str] = None) -> Report:
    """``a..b`` (``a`` None: every commit reachable from ``b``, from the root).

    ``against`` names the branch the range is meant to merge into: IDs the range
    adds (``b`` against its merge-base with ``against``) that ``against`` already
    holds with other content are KB350 errors (:mod:`kb.merge.collide`).
    """
    top = _top(start)
    tip = git.rev_parse(b, top)
    if tip is None:
        raise UsageError(f"{b!r} is not a commit")
    target = None
    if against is not None:
        target = git.rev_parse(against, top)
        if target is None:
            raise UsageError(f"--against {against!r} is not a commit here (fetch it first, e.g. "
                             "`git fetch origin`)")
    base = None
    if a is not None:
        base = git.rev_parse(a, top)
        if base is None:
            hint = (" (this is a shallow clone: fetch full history with `git fetch --unshallow`, "
                    "or fetch-depth: 0 in actions/checkout)" if _shallow(top) else
                    " (fetch it first, e.g. `git fetch origin`)")
            raise UsageError(f"{a!r} is not a commit here{hint}")
    elif not allow_root:
        raise UsageError("--range needs A..B")
    spec = [f"{base}..{tip}"] if base else [tip]
    try:
        lines = git.out(["rev-list", "--reverse", "--topo-order", "--parents", *spec], top)
    except GitError as exc:
        raise EnvironmentError_(f"cannot list the commits of the range: {exc.stderr}") from None
    commits = [(ln.split()[0], ln.split()[1:]) for ln in lines.splitlines() if ln.strip()]
    origin = None
    if base is not None:
        mb = git.run(["merge-base", base, tip], top, check=False)
        origin = mb.stdout.decode().strip() or base if mb.returncode == 0 else base
    report = _verify_commits(top, commits, tip, origin, kb_path, mode="range", trailer_spec=spec)
    if target is not None:
        _against(top, report, tip, target, against or target, kb_path)
    return report


def _against(top: Path, report: Report, tip: str, target: str, label: str,
             kb_path: Optional[Path]) -> None:
    """Add the KB350 collisions of ``tip`` with ``target`` to ``report``."""
    from kb.checks.facts import Facts
    from kb.merge.collide import collision_diagnostics, find_collisions
    from kb.repo import commit_snapshot, find_all_kbs

    mb = git.run(["merge-base", tip, target], top, check=False)
    base = mb.stdout.decode().strip() if mb.returncode == 0 else ""
    for prefix in _selected(top, kb_path, sorted(set(find_all_kbs(top, tip)))):
        try:
            k = _kb_at(top, prefix, tip)
        except GitError:
            continue
        with _index(k) as idx:
            tip_f = Facts(idx, commit_snapshot(k, tip), tip[:10])
            target_f = Facts(idx, commit_snapshot(k, target), label)
            base_f = Facts(idx, commit_snapshot(k, base), base[:10]) if base else None
            diags = collision_diagnostics(find_collisions(tip_f, base_f, target_f), label)
            report.findings += _findings([_D.of(d) for d in diags], k, "history", commit=tip,
                                         all_errors_block=True)


def _verify_commits(top: Path, commits: list[tuple[str, list[str]]], tip: str,
                    origin: Optional[str], kb_path: Optional[Path], mode: str,
                    trailer_spec: list[str]) -> Report:
    """History rules for each commit (vs its first parent), then snapshot rules on
    ``tip`` with pre-existing errors judged against ``origin`` (None: empty)."""
    from kb.checks.facts import Change, Facts
    from kb.repo import Snapshot, commit_snapshot, find_all_kbs

    report = Report(mode=mode, commits=len(commits))
    shallow = _shallow(top)
    found = set(find_all_kbs(top, tip))
    if origin:
        found |= set(find_all_kbs(top, origin))
    prefixes = _selected(top, kb_path, sorted(found))
    shas = [c for c, _ in commits]
    ovs: dict[str, dict[str, str]] = trailers(top, trailer_spec) if shas else {}
    merge_ovs: dict[str, dict[str, str]] = {}
    for c, parents in commits:
        if len(parents) > 1:
            acc: dict[str, str] = {}
            for ov in trailers(top, [f"{parents[0]}..{c}"]).values():
                acc.update(ov)
            merge_ovs[c] = acc
    bad = [c for c, parents in commits if c in shallow]
    for c in bad:
        report.notes.append(_shallow_note(c))
    if bad:
        report.env_error = _shallow_note(bad[0])
    children = Counter(p[0] for _, p in commits if p)
    # The "existed before the range" check (KB307) applies to commits made on
    # top of the origin; a branch commit made in parallel (merged with its
    # target later, e.g. by kb sync) never saw the origin's IDs.
    after_origin: Optional[set[str]] = None
    if origin and shas:
        anc = git.run(["rev-list", "--ancestry-path", f"{origin}..{tip}"], top, check=False)
        after_origin = set(anc.stdout.decode().split()) if anc.returncode == 0 else None
    for prefix in prefixes:
        try:
            k = _kb_at(top, prefix, tip)
        except GitError:
            continue  # the KB does not exist at the tip (deleted): nothing to read its config from
        report.kbs.append(prefix.rstrip("/") or ".")
        with _index(k) as idx:
            tip_snap = commit_snapshot(k, tip)
            diffs = diff_many(k, [(c, parents[0] if parents else None) for c, parents in commits
                                  if c not in shallow])
            _prefetch(idx, k, tip_snap, [diffs.get(c, []) for c, _ in commits])
            tip_f = Facts(idx, tip_snap, tip[:10])
            origin_f = None
            if origin:
                ch = diff_commits(k, origin, tip)
                ofiles, ofmts = _patch(tip_snap.files, tip_snap.formats, ch, k, forward=False)
                origin_f = Facts(idx, Snapshot(kb=k, kind="commit", files=ofiles, formats=ofmts,
                                               rev=origin), origin[:10], derive_from=tip_f)
            maps: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
            left = dict(children)
            for c, parents in commits:
                parent = parents[0] if parents else None
                if c in shallow:
                    report.findings.append(Finding(
                        path=k.prefix + "kb.toml", line=0, col=1, code="KB390", severity="error",
                        message=_shallow_note(c), family="history", kb=k.prefix.rstrip("/") or ".",
                        commit=c, blocking=True))
                    continue
                changes = diffs.get(c, [])
                if parent in maps:
                    pfiles, pfmts = maps[parent]
                    nfiles, nfmts = _patch(pfiles, pfmts, changes, k, forward=True)
                elif c == tip:
                    nfiles, nfmts = tip_snap.files, tip_snap.formats
                else:
                    snap = commit_snapshot(k, c)
                    nfiles, nfmts = snap.files, snap.formats
                if left.get(c):
                    maps[c] = (nfiles, nfmts)
                if parent in maps:
                    left[parent] -= 1
                    pfiles, pfmts = maps[parent] if left[parent] > 0 else maps.pop(parent)
                else:
                    pfiles, pfmts = _patch(nfiles, nfmts, changes, k, forward=False)
                if not changes:
                    continue
                touched = [ch.path for ch in changes]
                new = Snapshot(kb=k, kind="commit", files=nfiles, formats=nfmts, rev=c)
                old = Snapshot(kb=k, kind="commit", files=pfiles, formats=pfmts, rev=parent)
                new_f = tip_f if c == tip else Facts(idx, new, c[:10], ensure=touched)
                old_f = Facts(idx, old, parent[:10] if parent else "the empty history", ensure=touched)
                overrides = dict(ovs.get(c, {}))
                overrides.update(merge_ovs.get(c, {}))
                seen_origin = origin_f if after_origin is None or c in after_origin else None
                change = Change(old_f, new_f, mode, changes, overrides, commit=c, origin=seen_origin,
                                base_config=_config_at(k, parent), new_config=_config_at(k, c))
                found = _history(change, k, c)
                if len(parents) > 1 and found:
                    found = _judged_by_all_parents(found, idx, k, c, parents[1:], new, mode,
                                                   overrides, origin_f)
                report.findings += found
            report.findings += _config_findings(k)
            report.findings += _check_snapshots(k, tip_f, origin_f, strict=True) if origin_f is not None \
                else _check_snapshots(k, tip_f, _empty_facts(idx, k), strict=True)
    return report


_ID_TOKEN = re.compile(r"[A-Za-z][\w.-]*\d[\w.-]*")


def _finding_key(f: Finding) -> tuple[str, str, str]:
    """What a history finding is about: code, path and the first ID-like word of
    its message (messages name their base snapshot, which differs per parent)."""
    m = _ID_TOKEN.search(f.message)
    return f.code, f.path, m.group(0) if m else ""


def _judged_by_all_parents(found: list[Finding], idx: Any, k: Any, commit: Optional[str],
                           others: list[str], new: Any, mode: str, overrides: dict[str, str],
                           origin_f: Any, diff: Any = None,
                           codes: Optional[set[str]] = None) -> list[Finding]:
    """Keep the findings of a merge commit (judged against its first parent)
    that it also earns against every other parent: what a merge takes over
    from one of its parents is that parent's change, checked on its own path
    (issue: team work — a renumbered branch merged with its target passes)."""
    from kb.checks.facts import Change, Facts
    from kb.repo import commit_snapshot

    keep = {_finding_key(f) for f in found}
    new_f = None
    for p in others:
        changes = diff(p) if diff is not None else diff_commits(k, p, commit)
        if not changes:
            return []
        touched = [ch.path for ch in changes]
        if new_f is None:
            new_f = Facts(idx, new, commit[:10] if commit else "the staged index", ensure=touched)
        old_f = Facts(idx, commit_snapshot(k, p), p[:10], ensure=touched)
        change = Change(old_f, new_f, mode, changes, overrides, commit=commit, origin=origin_f)
        keep &= {_finding_key(f) for f in _history(change, k, commit)}
    return [f for f in found if _finding_key(f) in keep or f.severity == "info"
            or (codes is not None and f.code not in codes)]


def _prefetch(idx: Any, k: Any, tip: Any, diffs: list[list[Any]]) -> None:
    """Parse every file version a range check reads before the commits are walked: the
    tip's files and both sides of every change (``diffs``: the commits' changes, oldest
    first). A CI clone starts with no cache; one commit at a time, the parent parsed
    them serially, tree.md from scratch each time. Here the versions are parsed in one
    pass (in parallel), except the tree versions that follow an earlier one: those are
    derived from it (:mod:`kb.checks.tree_versions`), one after the other."""
    from kb.checks.tree_versions import splice_tree_version
    from kb.parse import classify

    tree_steps: list[tuple[str, str, str]] = []
    derived: set[tuple[str, str]] = set()
    items = []
    for changes in diffs:
        for ch in changes:
            fmt = tip.formats.get(ch.path) or classify(ch.path, k.config)
            if fmt is None:
                continue
            if fmt == "tree" and ch.old and ch.new:
                tree_steps.append((ch.path, ch.old, ch.new))
                if (ch.path, ch.old) not in derived:
                    items.append((ch.path, ch.old, fmt))
                derived.add((ch.path, ch.new))
                continue
            items += [(ch.path, b, fmt) for b in (ch.old, ch.new) if b]
    items += [(p, b, tip.formats[p]) for p, b in tip.files.items() if (p, b) not in derived]
    from kb.checks.file_results import store

    # The per-file rules run in the parse workers (the tip's results are needed anyway).
    idx.ensure_versions([it for it in items if (it[0], it[1]) not in derived],
                        store_rules=store if _prepare_cache(idx.db) else None)
    if not tree_steps:
        return
    blobs = git.read_blobs([b for _, old, new in tree_steps for b in (old, new)], k.top)
    for path, old, new in tree_steps:
        if old in blobs and new in blobs and idx.has_parse(path, old):
            if splice_tree_version(k, idx, path, old, blobs[old], new, blobs[new]):
                continue
        idx.ensure_versions([(path, new, "tree")])


def _empty_facts(idx: Any, k: Any) -> Any:
    from kb.checks.facts import Facts
    from kb.repo import empty_snapshot

    return Facts(idx, empty_snapshot(k), "the empty history", ensure=())


# ---------------------------------------------------------------------------
# choosing the mode


@dataclass(frozen=True)
class Mode:
    """A resolved verify mode: ``kind`` in :data:`MODES` and its arguments."""

    kind: str
    rev: Optional[str] = None
    base: Optional[str] = None
    tip: Optional[str] = None
    source: str = "options"
    against: Optional[str] = None


def resolve_mode(staged: bool = False, rev: Optional[str] = None, range_: Optional[str] = None,
                 environ: Optional[Mapping[str, str]] = None) -> Mode:
    """The mode from the options, else from the pre-commit framework's variables.

    The framework does not expand variables in ``args``, so kb reads them:
    ``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF`` (pre-push) give a range;
    a pre-push of a whole new history (no refs) checks from the root;
    ``PRE_COMMIT_HOOK_STAGE`` (when set) or ``PRE_COMMIT=1`` otherwise mean
    the staged index.
    """
    given = sum(1 for x in (staged, rev, range_) if x)
    if given > 1:
        raise UsageError("use one of --staged, --rev and --range")
    if staged:
        return Mode("staged")
    if rev:
        return Mode("rev", rev=rev)
    if range_:
        if "..." in range_ or ".." not in range_:
            raise UsageError(f"--range takes A..B, not {range_!r}")
        a, _, b = range_.partition("..")
        if not a:
            raise UsageError(f"--range takes A..B, not {range_!r}")
        return Mode("range", base=a, tip=b or "HEAD")
    env = os.environ if environ is None else environ
    stage = env.get("PRE_COMMIT_HOOK_STAGE", "")
    frm, to = env.get("PRE_COMMIT_FROM_REF"), env.get("PRE_COMMIT_TO_REF")
    if frm and to and stage not in ("pre-commit", "commit", "pre-merge-commit"):
        return Mode("range", base=frm, tip=to, source="pre-commit framework")
    if stage in ("pre-push", "push") or (env.get("PRE_COMMIT") == "1" and env.get("PRE_COMMIT_REMOTE_NAME")
                                         and env.get("PRE_COMMIT_LOCAL_BRANCH")):
        branch = env.get("PRE_COMMIT_LOCAL_BRANCH") or "HEAD"
        return Mode("range", base=None, tip=branch, source="pre-commit framework")
    if stage or env.get("PRE_COMMIT") == "1":
        return Mode("staged", source="pre-commit framework")
    return Mode("worktree")


def run(mode: Mode, start: Optional[Path] = None, kb_path: Optional[Path] = None,
        environ: Optional[Mapping[str, str]] = None) -> Report:
    """Run ``kb verify`` in ``mode`` from folder ``start`` (default: the current one)."""
    from kb.checks import facts

    facts._LIGHT_CACHE.clear()
    start = Path(start) if start else Path.cwd()
    if mode.kind == "worktree":
        return verify_worktree(start, kb_path, environ)
    if mode.kind == "staged":
        return verify_staged(start, kb_path, environ)
    if mode.kind == "rev":
        return verify_rev(start, mode.rev or "HEAD", kb_path)
    if mode.kind == "range":
        return verify_commit_range(start, mode.base, mode.tip or "HEAD", kb_path,
                                   allow_root=mode.base is None, against=mode.against)
    raise UsageError(f"unknown verify mode {mode.kind!r}")


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Blocking first, then other errors, warnings, info; by path and line within."""
    rank = {"error": 0, "warning": 1, "info": 2}
    return sorted(findings, key=lambda f: (not f.blocking, rank.get(f.severity, 3), f.path,
                                           f.line, f.code, f.commit or ""))
