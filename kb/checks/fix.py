"""``kb verify --fix``: apply the fixes diagnostics carry, to working-tree files.

Only when a person asks, in the working-tree mode (the hook never fixes).
A :class:`kb.model.Fix` replaces one whole line and applies only while the
line still reads ``old``; lines are edited by splicing (every other byte,
the BOM and each line's ending survive) and files are written atomically.
A stale DASHBOARD.md (KB240) is regenerated with the renderer ``kb
dashboard`` uses — not from a tree kb cannot read, which ``kb dashboard``
refuses too (the reason is listed with the skipped fixes).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from kb.checks.report import Finding
from kb.fileio import read_regular, special_file


@dataclass
class FixResult:
    """What ``--fix`` changed: KB-relative paths per KB root, and counts.

    ``skipped_at`` names each skipped fix as ``path:line: why``.
    """

    applied: int = 0
    skipped: int = 0
    files: list[str] = field(default_factory=list)
    skipped_at: list[str] = field(default_factory=list)


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".kb-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        except OSError:
            pass
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _linked(path: Path, kb_root: Path) -> bool:
    """Whether ``path`` (a file of the KB at ``kb_root``) is a symlink or lies under a
    folder of the KB that is one: kb writes nothing through a link, nor replaces it."""
    from kb.repo import link_on_the_way

    rel = os.path.relpath(path, kb_root).replace(os.sep, "/")
    return link_on_the_way(kb_root, rel) is not None


def apply_fixes(findings: Iterable[Finding]) -> FixResult:
    """Apply the line fixes of ``findings`` to the files of the working tree; a file that
    is a symlink (or under one) is left alone, its fixes skipped and said."""
    from kb.render.document import Document
    from kb.text import DecodeError

    result = FixResult()
    by_file: dict[Path, list[tuple[int, str, str]]] = {}
    roots: dict[Path, Path] = {}
    for f in findings:
        if f.fix is None or f.commit or not f.kb_root or not f.kb_path:
            continue
        by_file.setdefault(Path(f.kb_root) / f.kb_path, []).append(f.fix)
        roots[Path(f.kb_root) / f.kb_path] = Path(f.kb_root)
    for path, fixes in sorted(by_file.items()):
        if _linked(path, roots[path]):
            result.skipped += len(fixes)
            result.skipped_at += [f"{path}:{ln}: a symlink (or under one): kb writes nothing "
                                  "through it; fix the file it leads to"
                                  for ln, _, _ in sorted(set(fixes))]
            continue
        try:
            doc = Document.from_bytes(read_regular(path), str(path))
        except (OSError, DecodeError):  # unreadable or not UTF-8: leave it alone
            result.skipped += len(fixes)
            result.skipped_at += [f"{path}:{ln}: the file cannot be read as UTF-8"
                                  for ln, _, _ in sorted(set(fixes))]
            continue
        done_lines: set[int] = set()
        changed = False
        # Bottom-up: a fix that inserts lines cannot shift the lines of the next one.
        for line, old, new in sorted(set(fixes), key=lambda x: -x[0]):
            if line in done_lines or not 1 <= line <= len(doc.lines) or doc.lines[line - 1] != old:
                result.skipped += 1
                why = ("another fix changed this line" if line in done_lines
                       else "the line had changed")
                result.skipped_at.append(f"{path}:{line}: {why}")
                continue
            doc.replace(line, new)
            done_lines.add(line)
            result.applied += 1
            changed = True
        if changed:
            _write_atomic(path, doc.to_bytes())
            result.files.append(str(path))
    return result


def regenerate_dashboard(kb_root: Path, refused: list[str] | None = None) -> bool:
    """Rewrite DASHBOARD.md of the KB at ``kb_root`` as ``kb dashboard`` renders it
    from the working tree (its Next Steps and line endings kept). True if written.

    With ``refused`` (``kb verify --fix``), a tree or experiment kb cannot read (format
    errors, conflict markers) leaves the dashboard as it is, as ``kb dashboard`` refuses
    (:func:`kb.checks.dashboard_rule.unreadable_inputs`): its reason is appended to ``refused``."""
    from kb.checks.facts import Facts
    from kb.checks.dashboard_rule import render_expected
    from kb.index import Index
    from kb.repo import open_kb

    k = open_kb(kb_root)
    tree = k.root / k.config.paths["tree"]
    if special_file(tree):  # a FIFO there reads as no tree: the dashboard would lose it all
        if refused is not None:
            refused.append(f"{k.prefix}{k.config.paths['dashboard']}: not regenerated: "
                           f"{k.prefix}{k.config.paths['tree']} is not a regular file (a FIFO, "
                           "a socket or a device)")
        return False
    with Index(k) as idx:
        idx.refresh()
        if refused is not None:
            from kb.checks.dashboard_rule import unreadable_inputs

            bad = unreadable_inputs(k, idx)
            if bad:
                refused.append(f"{k.prefix}{k.config.paths['dashboard']}: not regenerated: {bad}: "
                               "the dashboard would leave out what kb cannot read; fix the file "
                               "first (kb index lists the errors)")
                return False
        facts = Facts(idx, idx.worktree(), "the working tree", ensure=())
        want = render_expected(facts)
        if want is None:
            return False
        target = k.root / k.config.paths["dashboard"]
        if _linked(target, k.root):  # never read through a link, nor replaced by a file
            if refused is not None:
                refused.append(f"{k.prefix}{k.config.paths['dashboard']}: not regenerated: it is "
                               "a symlink (or under one), and kb writes nothing through it")
            return False
        try:
            have = read_regular(target)
        except FileNotFoundError:
            have = b""
        except OSError as exc:  # a folder or a FIFO in its place, no permission
            if refused is not None:
                refused.append(f"{k.prefix}{k.config.paths['dashboard']}: not regenerated: "
                               f"{exc.strerror or exc}")
            return False
        data = want.encode("utf-8")
        if have.startswith(b"\xef\xbb\xbf"):
            data = b"\xef\xbb\xbf" + data
        if data == have:
            return False
        _write_atomic(target, data)
        return True


@dataclass
class FixSummary:
    """What ``kb verify --fix`` did over all its passes.

    ``applied``: line fixes applied; ``skipped``/``skipped_at``: the fixes the
    last pass could not apply (``path:line: why``; the line had changed, another
    fix changed it, or the file is unreadable; a DASHBOARD.md not regenerated from an
    unreadable tree); ``regenerated``: DASHBOARD.md files rewritten; ``files``: the
    KB-relative paths written.
    """

    applied: int = 0
    skipped: int = 0
    regenerated: int = 0
    files: set[str] = field(default_factory=set)
    skipped_at: list[str] = field(default_factory=list)


#: A fix can reveal another (a repaired heading exposes its bold anchor); the
#: passes stop when nothing more applies, and never run more often than this.
MAX_FIX_PASSES = 5


def fix_until_stable(check: Callable[[], Any]) -> tuple[Any, FixSummary]:
    """Apply fixes and re-check until nothing more applies (``MAX_FIX_PASSES`` at most).

    ``check()`` returns a :class:`kb.checks.report.Report` of the working tree;
    returns the last report (after the last fix) and what was done.
    """
    report = check()
    done = FixSummary()
    refused: list[str] = []
    for _pass in range(MAX_FIX_PASSES):
        res = apply_fixes(report.findings)
        roots = sorted({f.kb_root for f in report.findings if f.code == "KB240" and f.kb_root})
        refused = []  # as the skipped fixes: the last pass's
        regen = sum(1 for root in roots if regenerate_dashboard(Path(root), refused))
        done.applied += res.applied
        # a fix skipped in one pass may apply in the next: report the last pass's
        done.skipped, done.skipped_at = res.skipped, res.skipped_at
        done.regenerated += regen
        done.files |= set(res.files)
        if not (res.applied or regen):
            break
        report = check()
    # a dashboard left stale because kb cannot read its tree: said with the skipped fixes
    done.skipped += len(refused)
    done.skipped_at = done.skipped_at + refused
    return report, done

