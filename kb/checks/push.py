"""The pre-push check: for each ref git is about to push, the commits it adds.

``git push`` gives its pre-push hook one line per ref (``<local ref> <local
sha> <remote ref> <remote sha>``); :func:`pre_push_ranges` turns them
into ranges and each range is checked like ``kb verify --range``. A forced,
non-fast-forward update (a rewritten history) is also judged as one change from
the remote's old tip to the new one; when that old tip is not here and cannot be
fetched, the push is refused rather than judged on less.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from kb import git
from kb.checks.changes import ZERO
from kb.checks.report import Finding, Report
from kb.checks.verify_range import verify_commit_range
from kb.errors import EnvironmentError_, GitError


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
    out = []
    for base, tip, ref in pre_push_ranges(top, remote, lines):
        if base is not None and git.rev_parse(base, top) is None:
            out.append(PushCheck(ref, base, tip, _unjudged(remote, ref, base)))
        else:
            # (the remote's old tip of this ref and its new one: a non-ancestor is a rewrite)
            rep = verify_commit_range(top, base, tip, allow_root=True, rewrite=True)
            if base is not None and _unseen(top, base, tip):
                # said instead of "history was rewritten": nobody here rewrote anything yet
                rep.notes[:] = [_pull_first(remote, ref, base)] + [
                    n for n in rep.notes if "history was rewritten" not in n]
            out.append(PushCheck(ref, base, tip, rep))
    return out


def _unseen(top: Path, old: str, tip: str) -> bool:
    """Whether the remote's old tip ``old`` is not an ancestor of ``tip`` and no ref of
    this clone holds it: commits a teammate pushed that this clone never fetched (the
    hook fetched ``old`` itself, writing no ref)."""
    if git.run(["merge-base", "--is-ancestor", old, tip], top, check=False).returncode == 0:
        return False
    held = git.run(["for-each-ref", "--count=1", "--format=%(refname)", "--contains", old],
                   top, check=False)
    return held.returncode == 0 and not held.stdout.strip()


def _pull_first(remote: str, ref: str, old: str) -> str:
    """The note of a push over commits this clone never fetched (:func:`_unseen`): git's
    hook input does not say whether the push is forced, and a plain push over them is the
    usual case (a teammate pushed first), which git refuses anyway."""
    return (f"{ref}: the remote's branch is at {old[:10]}, with commits this clone never "
            f"fetched (a teammate's push): to add to them, pull first (`git pull {remote}`, "
            "or `kb sync`) and push again — git refuses this push without --force anyway. "
            "The findings judge what a force push would remove of them: do not override "
            "them to get the push through")


def _unjudged(remote: str, ref: str, old: str) -> Report:
    """The report of a push over a remote tip ``old`` this clone lacks and could not fetch:
    an environment error (exit 2, the push refused), never a check of less."""
    why = (f"{ref}: the remote's branch is at {old[:10]}, which this clone lacks and could not "
           f"fetch from {remote}; the push replaces it (a force push), and what that removes "
           f"of its history cannot be judged here — run `git fetch {remote}` and push again")
    return Report(mode="range", notes=[why], env_error=why)


def _fetch_commit(top: Path, remote: str, sha: str) -> bool:
    """Fetch commit ``sha`` (a remote branch's current tip) from ``remote`` into the object
    store, no ref written, bounded (:func:`kb.git.network_timeout`); whether it is here
    afterwards."""
    env = {"GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND":
           os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o ConnectTimeout=5")}
    try:
        git.run(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, sha], top,
                check=False, write=True, env=env)
    except GitError:  # no answer in time
        return False
    return git.rev_parse(sha, top) is not None


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
    # (a push over a remote tip this clone lacks is refused already: nothing to diff from)
    ranges = [(p.base, p.tip) for p in pushes if p.base is None or git.rev_parse(p.base, top)]
    if not ranges:
        return []
    return pushed_lock_conflicts(top, ranges, owner or default_owner(top))


def push_lock_findings(start: Path, base: Optional[str], tip: str,
                       owner: Optional[str] = None) -> list[Finding]:
    """KB380 findings for a push of ``base..tip`` (``base`` None: from the root) as the
    pre-commit framework's pre-push stage runs ``kb verify``: each path the pushed commits
    change that another owner holds on the lock remote (fetched now), as kb's own pre-push
    hook refuses it (:func:`check_push_locks`). ``owner`` None: ``git config kb.owner``,
    else ``user.email``. Empty outside a git work tree or without a lock remote."""
    from kb.locks import default_owner
    from kb.remote_locks import pushed_lock_holds

    top = git.toplevel(start)
    if top is None or (base is not None and git.rev_parse(base, top) is None):
        return []  # (a base missing here is refused by the range check already)
    top = top.resolve()
    return [Finding(path=path or "kb.toml", line=1 if path else 0, col=1, code="KB380",
                    severity="error", message=msg, family="history", commit=tip,
                    blocking=True)
            for path, msg in pushed_lock_holds(top, [(base, tip)], owner or default_owner(top))]


def pre_push_ranges(top: Path, remote: str, lines: Iterable[str]) -> list[tuple[Optional[str], str, str]]:
    """``(base or None, tip, ref)`` to check for each line git gives a pre-push hook.

    A deleted ref is skipped; an updated ref is checked from the remote's old
    value (fetched first when this clone lacks it: a force push over commits it never
    fetched; the base is then a commit missing here when that fails, which
    :func:`check_push` refuses); a new branch from its merge base with the remote's
    default branch (else from the first commit the remote lacks; None = from the root).
    A base that is not an ancestor of the tip (a rewritten history) is judged as the
    change from the old tip to the new one too (:func:`kb.checks.verify_range.verify_commit_range`).
    """
    out: list[tuple[Optional[str], str, str]] = []
    for line in lines:
        parts = line.split()
        if len(parts) != 4:
            continue
        local_ref, local_sha, _remote_ref, remote_sha = parts
        if local_sha == ZERO:
            continue
        if remote_sha != ZERO:
            # (git gives the hook a non-fast-forward update only when forced: the
            # remote's old tip is replaced, so it is judged, never guessed past)
            if not git.rev_parse(remote_sha, top):
                _fetch_commit(top, remote, remote_sha)
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
