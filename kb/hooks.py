"""Git hooks and the DASHBOARD.md merge driver (``kb hooks``).

``install`` writes kb's hooks into the folder git runs hooks from
(``git rev-parse --git-path hooks``, so ``core.hooksPath`` and linked
worktrees are respected):

- ``pre-commit`` and ``pre-merge-commit``: ``kb verify --staged``;
- ``pre-push``: ``kb hooks pre-push``, which runs ``kb verify --range`` over
  what each pushed ref adds (a new branch from its merge base with the
  remote's default branch; a deleted ref is skipped).

A hook already there is kept: it is renamed ``<hook>.kb-chained`` (bytes and
mode unchanged) and kb's hook runs it first with the same arguments and
input. ``uninstall`` removes exactly what ``install`` added and renames the
chained hook back. ``install`` also registers the merge driver that ``kb
init``'s ``.gitattributes`` names for DASHBOARD.md (``merge=kb-dashboard``):
it keeps one side (``%A``, ours) without conflict markers, so parallel
branches never conflict on the generated file; ``kb verify`` then reports it
stale until ``kb dashboard`` runs.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

from kb import git
from kb.errors import EnvironmentError_, KbError, RefusedError, UsageError

HOOKS = ("pre-commit", "pre-merge-commit", "pre-push")
MARK = "# kb-managed-hook:"
CHAINED = ".kb-chained"
DRIVER = "kb-dashboard"
DRIVER_NAME = "kb: DASHBOARD.md is generated; keep our side (run `kb dashboard` after the merge)"
DRIVER_CMD = "true"
_ARGS = {"pre-commit": "verify --staged", "pre-merge-commit": "verify --staged",
         "pre-push": 'hooks pre-push "$@"'}
ZERO = "0" * 40


@dataclass
class HookResult:
    """What install / uninstall did, per hook (and for the merge driver)."""

    hooks_dir: Path
    actions: dict[str, str] = field(default_factory=dict)
    merge_driver: str = ""


def _top(start: Path) -> Path:
    top = git.toplevel(start)
    if top is None:
        raise EnvironmentError_(f"{Path(start).resolve()} is not inside a git work tree")
    return top.resolve()


def hooks_dir(start: Path) -> Path:
    """Where git runs hooks from (honours ``core.hooksPath``; shared by worktrees)."""
    top = _top(start)
    p = Path(git.out(["rev-parse", "--git-path", "hooks"], top))
    return p if p.is_absolute() else (top / p)


def is_ours(path: Path) -> bool:
    """True when ``path`` is a hook written by kb."""
    try:
        head = path.read_bytes()[:400]
    except OSError:
        return False
    return MARK.encode() in head


def hook_text(hook: str, python: Optional[str] = None) -> str:
    """The script kb installs as ``hook`` (``python``: the interpreter that has kb)."""
    from kb.resources import hooks_dir as shipped

    text = (shipped() / "kb-hook.sh").read_text(encoding="utf-8")
    py = (python or sys.executable).replace("'", "'\\''")
    return (text.replace("@HOOK@", hook).replace("@KB_PYTHON@", py)
            .replace("@KB_ARGS@", _ARGS[hook]))


def _write_hook(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".kb-tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)


def _exists(p: Path) -> bool:
    return p.exists() or p.is_symlink()


def _config_get(top: Path, key: str) -> Optional[str]:
    proc = git.run(["config", "--get", key], top, check=False)
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None


def install(start: Path, hooks: Iterable[str] = HOOKS, python: Optional[str] = None,
            merge_driver: bool = True) -> HookResult:
    """Install kb's hooks (chaining existing ones) and the DASHBOARD.md merge driver."""
    top = _top(start)
    d = hooks_dir(top)
    d.mkdir(parents=True, exist_ok=True)
    res = HookResult(hooks_dir=d)
    for hook in hooks:
        if hook not in _ARGS:
            raise UsageError(f"kb has no {hook} hook (it has {', '.join(HOOKS)})")
        target, chained = d / hook, d / (hook + CHAINED)
        text = hook_text(hook, python)
        if _exists(target) and not is_ours(target):
            if _exists(chained):
                raise RefusedError(f"{target} exists and so does {chained.name}: kb cannot chain "
                                   "a second hook; merge them by hand (nothing changed)")
            os.rename(target, chained)
            _write_hook(target, text)
            res.actions[hook] = f"installed (the existing hook runs first, kept as {chained.name})"
        elif _exists(target):
            if target.read_text(encoding="utf-8", errors="replace") == text:
                res.actions[hook] = "already installed"
            else:
                _write_hook(target, text)
                res.actions[hook] = "updated"
        else:
            _write_hook(target, text)
            res.actions[hook] = "installed"
    if merge_driver:
        from kb.merge.drivers import register

        # kb's merge drivers (tree.md, DASHBOARD.md): issue "team work through git".
        res.merge_driver = _summary(register(top, python))
    from kb.remote_locks import ensure_refspecs, lock_remote
    from kb.repo import find_all_kbs, open_kb

    # Shared locks: a plain `git fetch` brings no custom refs unless told to (team work).
    for prefix in find_all_kbs(top):
        try:
            k = open_kb(top / prefix if prefix else top)
            remote = lock_remote(top, k.config)
        except KbError:  # an unreadable kb.toml is kb verify's to report, not install's
            continue
        if merge_driver:
            from kb.merge.drivers import ensure_attributes

            if ensure_attributes(k.root, k.config.paths["tree"], k.config.paths["dashboard"]):
                res.merge_driver += f"; {prefix}.gitattributes now names them (commit it)"
        if remote is not None and git.run(["remote", "get-url", remote], top, check=False).returncode == 0:
            ensure_refspecs(top, remote)
    return res


def uninstall(start: Path, hooks: Iterable[str] = HOOKS, merge_driver: bool = True) -> HookResult:
    """Remove kb's hooks, put chained hooks back, unregister kb's merge driver."""
    top = _top(start)
    d = hooks_dir(top)
    res = HookResult(hooks_dir=d)
    for hook in hooks:
        target, chained = d / hook, d / (hook + CHAINED)
        if _exists(target) and is_ours(target):
            target.unlink()
            if _exists(chained):
                os.rename(chained, target)
                res.actions[hook] = "removed (the previous hook is back)"
            else:
                res.actions[hook] = "removed"
        elif _exists(target):
            res.actions[hook] = "not kb's: left alone"
        else:
            res.actions[hook] = "not installed"
    if merge_driver:
        from kb.merge.drivers import unregister

        res.merge_driver = _summary(unregister(top))
    return res


def status(start: Path) -> HookResult:
    """Which of kb's hooks are installed (and chained), and the merge driver."""
    top = _top(start)
    d = hooks_dir(top)
    res = HookResult(hooks_dir=d)
    for hook in HOOKS:
        target, chained = d / hook, d / (hook + CHAINED)
        if _exists(target) and is_ours(target):
            res.actions[hook] = "installed" + (f" (chaining {chained.name})" if _exists(chained) else "")
        elif _exists(target):
            res.actions[hook] = "another hook (not kb's)"
        else:
            res.actions[hook] = "not installed"
    from kb.merge.drivers import registered

    res.merge_driver = _summary({k: "registered" if v else "not registered"
                                 for k, v in registered(top).items()})
    return res


def _summary(actions: dict[str, str]) -> str:
    """``kb-dashboard: registered; kb-tree: registered`` (one line for the report)."""
    return "; ".join(f"{k}: {v}" for k, v in sorted(actions.items()))


# ---------------------------------------------------------------------------
# pre-push


def _remote_default(top: Path, remote: str) -> Optional[str]:
    """The remote's default branch as a local ref (``refs/remotes/<remote>/HEAD`` or
    main/master), or None."""
    proc = git.run(["symbolic-ref", "-q", f"refs/remotes/{remote}/HEAD"], top, check=False)
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.decode().strip()
    for name in ("main", "master"):
        ref = f"refs/remotes/{remote}/{name}"
        if git.rev_parse(ref, top):
            return ref
    return None


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
        default = _remote_default(top, remote)
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
