"""What a verify run reports: :class:`Finding` and :class:`Report`.

A finding is one diagnostic placed in the repository (repository-relative
path, the KB it belongs to, blocking or pre-existing); :func:`findings`
turns rule diagnostics into findings, :func:`sort_findings` orders them
for display.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from kb.checks.diagnostics import LightDiagnostic as _D


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
        """The finding as JSON data (``kb verify --json``'s ``diagnostics`` items)."""
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
        """The findings that fail the run."""
        return [f for f in self.findings if f.blocking]

    @property
    def exit_code(self) -> int:
        """0 clean, 1 blocking findings, 2 an environment error (``env_error``)."""
        if self.env_error:
            return 2
        return 1 if self.blocking else 0

    def merge(self, other: "Report") -> None:
        """Add ``other``'s findings, KBs, notes and commits to this report."""
        self.findings.extend(other.findings)
        self.kbs.extend(k for k in other.kbs if k not in self.kbs)
        self.notes.extend(other.notes)
        self.commits += other.commits
        self.env_error = self.env_error or other.env_error


def findings(diags: Iterable[_D], k: Any, family: str, *, commit: Optional[str] = None,
             blocking: Optional[set[int]] = None, pre: Optional[set[int]] = None,
             all_errors_block: bool = False) -> list[Finding]:
    """Findings of KB ``k`` from rule diagnostics (KB-relative paths) of ``family``
    (``snapshot`` or ``history``). ``blocking`` / ``pre`` are ``id()`` sets of the
    diagnostics that block / were already in the base; ``all_errors_block`` makes
    every error block instead."""
    out = []
    for d in diags:
        out.append(Finding(
            path=k.prefix + d.path if d.path else k.prefix.rstrip("/"), line=d.line, col=d.col,
            code=d.code, severity=d.severity, message=d.message, family=family,
            kb=k.prefix.rstrip("/") or ".", kb_path=d.path, kb_root=str(k.root), fix=d.fix,
            commit=commit, pre_existing=bool(pre and id(d) in pre),
            blocking=(d.severity == "error") if all_errors_block else bool(blocking and id(d) in blocking)))
    return out


def config_findings(k: Any, snap: Any, before: Optional[dict[str, str]] = None) -> list[Finding]:
    """The diagnostics of KB ``k``'s kb.toml as findings of the snapshot ``snap`` (a
    :class:`kb.repo.Snapshot`): warnings (KB001, an unknown key or rule code; KB004, a
    tree path the snapshot does not hold) and errors, which block in every mode (KB002: a
    file path that is a directory, so nothing of it is read), and KB005 for each folder of
    the layout that is a symlink (:func:`folder_link_findings`, judged against ``before``)."""
    from kb.checks.config_rules import tree_missing, unknown_codes

    diags = [*k.config.warnings, *unknown_codes(k.config), *tree_missing(k.config, snap.files)]
    out = findings([_D.of(w) for w in diags], k, "snapshot", all_errors_block=True)
    return out + folder_link_findings(k, snap, before) if snap.folder_links else out


def folder_link_findings(k: Any, snap: Any, before: Optional[dict[str, str]]) -> list[Finding]:
    """KB005 for each symlink ``snap`` lists at a folder of KB ``k``'s layout. ``before``
    holds the base snapshot's such links (path -> the link's blob id): one it holds as
    it is is pre-existing and does not block, as a file's pre-existing KB106 does not
    (a link committed once must not refuse every later commit); None (the working tree)
    blocks every error."""
    from kb.checks.config_rules import folder_links

    diags = [_D.of(d) for d in folder_links(snap)]
    if before is None:
        return findings(diags, k, "snapshot", all_errors_block=True)
    held = snap.folder_links
    pre = {id(d) for d in diags if d.path in before and before[d.path] == held.get(d.path)}
    blocking = {id(d) for d in diags if d.severity == "error" and id(d) not in pre}
    return findings(diags, k, "snapshot", blocking=blocking, pre=pre)


def name_findings(k: Any, listing: bytes) -> list[Finding]:
    """KB133 for each ``.md`` file of KB ``k`` in git's ``-z`` ``listing`` (``ls-files``
    records, with or without ``-s``) whose name is not UTF-8: kb does not read it (its
    name cannot go into the index), and says so instead of failing or keeping silent."""
    from kb.parse import not_utf8

    out = []
    for rec in listing.decode("utf-8", "surrogateescape").split("\0"):
        path = rec.rpartition("\t")[2]
        rel = k.rel(path) if path else None
        if rel is None or not rel.endswith(".md") or not not_utf8(rel):
            continue
        shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        out.append(_D(shown, 1, 1, "KB133", "warning",
                      f"{shown}: the file's name is not UTF-8, so kb does not read it; rename "
                      f"it (git mv) to a UTF-8 name", None))
    return findings(out, k, "snapshot") if out else []


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Blocking first, then other errors, warnings, info; by path and line within."""
    rank = {"error": 0, "warning": 1, "info": 2}
    return sorted(findings, key=lambda f: (not f.blocking, rank.get(f.severity, 3), f.path,
                                           f.line, f.code, f.commit or ""))
