"""Git hooks and kb's merge drivers (``kb hooks``).

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
chained hook back. ``install`` also registers kb's merge drivers
(:mod:`kb.merge.drivers`: tree.md merged block by block, the generated
DASHBOARD.md and TRAIL.md rendered again from what the merge holds, ``kb report``'s
report kept from our side) and adds
the ``.gitattributes`` lines naming them that the KB lacks, so that a plain
``git merge`` or ``git pull`` never stops on a generated file.
"""

from __future__ import annotations

import functools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, TypeVar

from kb import git
from kb.errors import EnvironmentError_, KbError, RefusedError, UsageError, os_failure

F = TypeVar("F", bound=Callable[..., Any])

HOOKS = ("pre-commit", "pre-merge-commit", "pre-push", "post-commit", "post-rewrite")
MARK = "# kb-managed-hook:"
CHAINED = ".kb-chained"
_ARGS = {"pre-commit": "verify --staged", "pre-merge-commit": "verify --staged",
         "pre-push": 'hooks pre-push "$@"', "post-commit": "hooks post-commit",
         "post-rewrite": 'hooks post-rewrite "$@"', "pre-receive": "hooks pre-receive"}
#: What ``kb hooks install --server`` installs in a bare repository.
SERVER_HOOKS = ("pre-receive",)
ZERO = "0" * 40


@dataclass
class HookResult:
    """What install / uninstall did, per hook (and for the merge driver)."""

    hooks_dir: Path
    actions: dict[str, str] = field(default_factory=dict)
    merge_driver: str = ""


def _top(start: Path) -> Path:
    top = git.toplevel(start)
    if top is None and _bare(start):
        return git.git_dir(Path(start)).resolve()
    if top is None:
        raise EnvironmentError_(f"{Path(start).resolve()} is not inside a git work tree")
    return top.resolve()


def _bare(start: Path) -> bool:
    proc = git.run(["rev-parse", "--is-bare-repository"], start, check=False)
    return proc.returncode == 0 and proc.stdout.strip() == b"true"



def _file_errors(doing: str) -> Callable[[F], F]:
    """Turn an :class:`OSError` of the wrapped function into a kb error (what to do, and
    that running the command again is safe: every step of it is idempotent)."""
    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except OSError as exc:
                raise os_failure(exc, doing) from None
        return inner  # type: ignore[return-value]
    return wrap


@_file_errors("install the server hook")
def install_server(start: Path, python: Optional[str] = None, shared: bool = False) -> HookResult:
    """``kb hooks install --server``: the pre-receive hook of a bare repository.

    It runs ``kb verify --range`` over what every pushed ref adds and refuses
    the whole push when one breaks a rule: the check no client can skip
    (``--no-verify``, cherry-picks, rebases). Raises RefusedError outside a
    bare repository (a work tree uses the client hooks).
    """
    if not _bare(start):
        raise RefusedError("--server installs the pre-receive hook of a bare repository (the "
                           "one a git server pushes into); run it there — nothing changed")
    return install(start, SERVER_HOOKS, python, merge_driver=False, shared=shared)


def pre_receive_ranges(top: Path, lines: Iterable[str]) -> list[tuple[Optional[str], str, str]]:
    """``(base or None, tip, ref)`` to check for each ``old new ref`` line of pre-receive.

    A deleted ref is skipped; an updated one is checked from its old value; a
    new ref from the parent of the first commit no existing ref reaches (None:
    from the root), or not at all when it adds no commit.
    """
    out: list[tuple[Optional[str], str, str]] = []
    for line in lines:
        parts = line.split()
        if len(parts) != 3:
            continue
        old, new, ref = parts
        if set(new) == {"0"}:
            continue
        if set(old) != {"0"}:
            out.append((old, new, ref))
            continue
        revs = git.out(["rev-list", "--topo-order", "--reverse", new, "--not", "--all"],
                       top).split()
        if not revs:
            continue
        first = git.out(["rev-list", "--parents", "-n", "1", revs[0]], top).split()[1:]
        out.append((first[0] if first else None, new, ref))
    return out


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
    from kb.review.source import install_hint, installed_source

    py = (python or sys.executable).replace("'", "'\\''")
    # The fallback message names where this kb came from (never an unpublished name);
    # it sits inside a double-quoted echo.
    hint = install_hint(installed_source().spec)
    hint = "".join("\\" + ch if ch in '"$`\\' else ch for ch in hint)
    return (text.replace("@HOOK@", hook).replace("@KB_PYTHON@", py)
            .replace("@KB_ARGS@", _ARGS[hook]).replace("@KB_INSTALL@", hint))


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


def check_own_hooks(top: Path, d: Path, shared: bool) -> None:
    """Refuse to touch a hooks folder outside this repository unless ``shared``.

    ``core.hooksPath`` (often set globally) can point every repository of a
    user or machine at one folder: installing or removing kb's hooks there
    changes what all of them run. Inside the work tree or git's directory is
    this repository's own. Raises RefusedError (nothing changed).
    """
    if shared:
        return
    where = d.resolve()
    own = [top.resolve(), git.common_dir(top).resolve(), git.git_dir(top).resolve()]
    if any(where == o or o in where.parents for o in own):
        return
    raise RefusedError(
        f"git runs this repository's hooks from {where} (core.hooksPath), outside the "
        "repository: other repositories may use those hooks too. Nothing was changed; pass "
        "--shared to change them anyway, or set core.hooksPath for this repository only")


@_file_errors("install kb's hooks")
def install(start: Path, hooks: Iterable[str] = HOOKS, python: Optional[str] = None,
            merge_driver: bool = True, shared: bool = False) -> HookResult:
    """Install kb's hooks (chaining existing ones) and kb's merge drivers.

    ``shared``: allow a hooks folder outside the repository (:func:`check_own_hooks`).

    Raises UsageError for an unknown hook, RefusedError for a bare repository (use
    ``--server``), a hook that cannot be chained or a shared hooks folder, EnvironmentError_
    when the hooks folder or ``.gitattributes`` cannot be written (running it again is safe).
    """
    top = _top(start)
    d = hooks_dir(top)
    check_own_hooks(top, d, shared)
    d.mkdir(parents=True, exist_ok=True)
    res = HookResult(hooks_dir=d)
    if _bare(top) and not set(hooks) <= set(SERVER_HOOKS):
        raise RefusedError("this is a bare repository: `kb hooks install --server` installs its "
                           "pre-receive hook — nothing changed")
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

        # kb's merge drivers (tree.md, DASHBOARD.md, TRAIL.md, the report): issue "team work through git".
        res.merge_driver = _summary(register(top, python, mark=True))
    from kb.remote_locks import ensure_refspecs, lock_remote
    from kb.repo import find_all_kbs, open_kb

    # Shared locks: a plain `git fetch` brings no custom refs unless told to (team work).
    # A bare (server) repository has no work tree, no kb.toml to read and nothing to fetch.
    for prefix in ([] if _bare(top) else find_all_kbs(top)):
        try:
            k = open_kb(top / prefix if prefix else top)
            remote = lock_remote(top, k.config)
        except KbError:  # an unreadable kb.toml is kb verify's to report, not install's
            continue
        if merge_driver:
            from kb.merge.drivers import card_folders, ensure_attributes

            if ensure_attributes(k.root, k.config.paths["tree"], k.config.paths["dashboard"],
                                 k.config.paths["logs"], **card_folders(k.config.paths)):
                res.merge_driver += f"; {prefix}.gitattributes now names them (commit it)"
        if remote is not None and git.run(["remote", "get-url", remote], top, check=False).returncode == 0:
            ensure_refspecs(top, remote)
    return res


@_file_errors("remove kb's hooks")
def uninstall(start: Path, hooks: Iterable[str] = HOOKS, merge_driver: bool = True,
              shared: bool = False) -> HookResult:
    """Remove kb's hooks, put chained hooks back, unregister the merge drivers that
    :func:`install` registered (a driver ``kb init`` or ``kb sync`` registered stays).

    ``shared``: allow a hooks folder outside the repository (:func:`check_own_hooks`).

    Returns hook name -> what was done. Raises RefusedError for a shared hooks folder without
    ``shared``, EnvironmentError_ when a hook cannot be removed.
    """
    top = _top(start)
    d = hooks_dir(top)
    check_own_hooks(top, d, shared)
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

        # Only the drivers install registered: those kb init or kb sync did stay (KB245).
        res.merge_driver = _summary(unregister(top, only_marked=True))
    return res


def status(start: Path) -> HookResult:
    """Which of kb's hooks are installed (and chained), and the merge driver.

    Returns hook name -> state and the merge driver's state. Raises EnvironmentError_ outside a
    git repository.
    """
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


# -- after the fact: commits made without the pre-commit hook -------------------------------


def rewritten_commits(lines: Iterable[str]) -> list[str]:
    """The new commit ids of ``post-rewrite``'s stdin (``old new [extra]`` lines), in order."""
    out: list[str] = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[1] not in out:
            out.append(parts[1])
    return out


#: At most this many commits are checked after one rewrite (a hook must stay quick).
MAX_AFTER = 50


def check_after(start: Path, revs: list[str]) -> list[str]:
    """Warnings for ``revs`` that break kb's rules (``kb verify --rev`` each).

    git runs no pre-commit hook for a clean cherry-pick or a rebase's picks;
    ``post-commit`` / ``post-rewrite`` call this so the user hears at once
    what the pre-push hook (and CI) will refuse. Never raises for a broken
    commit: a post-hook cannot undo it; returns one line per finding.
    """
    from kb.checks.verify_range import verify_rev
    from kb.errors import KbError

    top = _top(start)
    out: list[str] = []
    for rev in revs[:MAX_AFTER]:
        try:
            rep = verify_rev(top, rev)
        except KbError as exc:
            out.append(f"kb: warning: could not check {rev[:10]}: {exc}")
            continue
        for f in rep.blocking:
            out.append(f"kb: warning: {rev[:10]} {f.format()}")
    if out:
        out.append("kb: warning: these commits were made without kb's pre-commit check (a "
                   "cherry-pick, a rebase or an amend); the pre-push hook and CI will refuse "
                   "them — fix them now (git commit --amend, git rebase -i)")
    if len(revs) > MAX_AFTER:
        out.append(f"kb: note: checked the first {MAX_AFTER} of {len(revs)} rewritten commits; "
                   "`kb verify --range` checks them all")
    return out
