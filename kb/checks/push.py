"""The pre-push check: for each ref git is about to push, the commits it adds.

``git push`` gives its pre-push hook one line per ref (``<local ref> <local
sha> <remote ref> <remote sha>``); :func:`pre_push_ranges` turns them
into ranges and each range is checked like ``kb verify --range``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from kb import git
from kb.checks.changes import ZERO
from kb.checks.report import Report
from kb.checks.verify_range import verify_commit_range
from kb.errors import EnvironmentError_


@dataclass
class PushCheck:
    """One pushed ref: ``base`` (None: from the root) ``..tip`` and its report."""

    ref: str
    base: Optional[str]
    tip: str
    report: Report


def check_push(start: Path, remote: str, lines: Iterable[str]) -> list[PushCheck]:
    """Check every ref of a push; ``lines`` are the hook's stdin lines.

    Raises :class:`kb.errors.EnvironmentError_` when ``start`` is not inside a
    git work tree.
    """
    top = git.toplevel(start)
    if top is None:
        raise EnvironmentError_(f"{start.resolve()} is not inside a git work tree")
    top = top.resolve()
    return [PushCheck(ref, base, tip, verify_commit_range(top, base, tip, allow_root=True))
            for base, tip, ref in pre_push_ranges(top, remote, lines)]


def check_push_locks(start: Path, pushes: list[PushCheck], owner: Optional[str] = None) -> list[str]:
    """Paths the pushed commits change that another owner holds on the KB's lock
    remote (fetched now; :func:`kb.remote_locks.pushed_lock_conflicts`), one
    message each. ``owner`` None: ``git config kb.owner``, else ``user.email``."""
    from kb.locks import default_owner
    from kb.remote_locks import pushed_lock_conflicts

    top = git.toplevel(start)
    if top is None or not pushes:
        return []
    top = top.resolve()
    return pushed_lock_conflicts(top, [(p.base, p.tip) for p in pushes], owner or default_owner(top))


def pre_push_ranges(top: Path, remote: str, lines: Iterable[str]) -> list[tuple[Optional[str], str, str]]:
    """``(base or None, tip, ref)`` to check for each line git gives a pre-push hook.

    A deleted ref is skipped; an updated ref is checked from the remote's old
    value; a new branch from its merge base with the remote's default branch
    (else from the first commit the remote lacks; None = from the root).
    """
    out: list[tuple[Optional[str], str, str]] = []
    for line in lines:
        parts = line.split()
        if len(parts) != 4:
            continue
        local_ref, local_sha, _remote_ref, remote_sha = parts
        if local_sha == ZERO:
            continue
        if remote_sha != ZERO and git.rev_parse(remote_sha, top):
            out.append((remote_sha, local_sha, local_ref))
            continue
        base: Optional[str] = None
        default = git.remote_default(top, remote)
        if default:
            mb = git.run(["merge-base", local_sha, default], top, check=False)
            if mb.returncode == 0 and mb.stdout.strip():
                base = mb.stdout.decode().strip()
        if base is None:
            revs = git.out(["rev-list", "--topo-order", "--reverse", local_sha, "--not",
                            f"--remotes={remote}"], top).split()
            if not revs:
                continue
            first = git.out(["rev-list", "--parents", "-n", "1", revs[0]], top).split()[1:]
            base = first[0] if first else None
        out.append((base, local_sha, local_ref))
    return out
