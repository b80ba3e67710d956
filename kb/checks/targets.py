"""What a verify run checks: the repository, its KBs, their configuration and index.

Errors: :class:`kb.errors.EnvironmentError_` outside a git work tree,
:class:`kb.errors.NotAKnowledgeBase` for a ``--kb`` without kb.toml,
:class:`kb.errors.ConfigError` for an unreadable kb.toml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from kb import git
from kb.errors import EnvironmentError_, KbError


def kb_at(top: Path, prefix: str, blob_rev: Optional[str]) -> Any:
    """The KB at repository folder ``prefix`` (config from disk, else from ``blob_rev``:
    a commit, or ``""`` for the staged index)."""
    from kb.config import config_from_dict, load_config, read_toml
    from kb.errors import ConfigError
    from kb.repo import KnowledgeBase

    root = top / prefix if prefix else top
    try:
        if (root / "kb.toml").is_file():
            cfg = load_config(root)
        else:
            spec = f"{blob_rev}:{prefix}kb.toml" if blob_rev else f":{prefix}kb.toml"
            text, data = read_toml(git.run(["cat-file", "blob", spec], top).stdout)
            cfg = config_from_dict(root, data, text)
    except ConfigError as exc:
        # A repository holds several KBs: say which kb.toml (its messages say "kb.toml").
        raise (exc.named(f"{prefix}kb.toml") if prefix else exc) from None
    return KnowledgeBase(root=root, top=top, prefix=prefix, config=cfg)


def as_committed(k: Any, cfg: Any) -> Any:
    """KB ``k`` read with ``cfg``, the kb.toml of the snapshot a check judges (the staged
    index's, a range's tip's: :func:`config_at`), when it differs from the working tree's
    that :func:`kb_at` loaded. A check judges what is committed: an unstaged edit of
    ``[paths]`` (``tree = "nothing.md"``) must not switch off the rules of the files it
    no longer reads. ``k`` itself when ``cfg`` is None (no kb.toml there) or the same."""
    import dataclasses

    if cfg is None or cfg == k.config:
        return k
    return dataclasses.replace(k, config=cfg)


def with_own_layout(k: Any, rev: str, cfg: Any, files: dict[str, str],
                    keep: Optional[Callable[[str], bool]] = None) -> dict[str, str]:
    """``files`` (commit ``rev`` as KB ``k``'s kb.toml reads it: path -> blob id) with the
    files ``rev``'s own kb.toml (``cfg``) reads besides, those ``keep`` accepts: a working
    tree whose kb.toml moved a ``[paths]`` key (tree.md -> tree2.md) against HEAD, where
    tree.md is what HEAD held. ``files`` itself when ``cfg`` is None or places files alike
    (the usual case: two dicts compared); else one more ``git ls-tree`` of ``rev``."""
    if cfg is None or cfg.paths == k.config.paths:
        return files
    from kb.repo import commit_snapshot

    own = commit_snapshot(as_committed(k, cfg), rev).files
    return {**{p: b for p, b in own.items() if keep is None or keep(p)}, **files}


def unreadable_kb(top: Path, prefix: str, exc: KbError, diff: Optional[list[str]]) -> Any:
    """The KB003 finding of the KB at repository folder ``prefix`` whose kb.toml cannot
    be read (``exc``, from :func:`kb_at`): in a repository of several KBs the others are
    still checked. It blocks when the change touches that KB: ``diff`` is the git
    command listing the change (``--name-only`` is added; run only on this rare path),
    None for a change that touches every KB."""
    from kb.checks.report import Finding

    touched = True
    if diff is not None:
        proc = git.run([*diff, "--name-only", "-z", "--", prefix or "."], top, check=False)
        touched = proc.returncode != 0 or bool(proc.stdout.strip(b"\0"))
    return Finding(
        path=f"{prefix}kb.toml", line=getattr(exc, "line", 0) or 1, col=getattr(exc, "col", 0) or 1,
        code="KB003", severity="error",
        message=f"{exc}; the KB in {prefix.rstrip('/') or '.'} is not checked until its kb.toml "
                "can be read", family="snapshot", kb=prefix.rstrip("/") or ".", kb_path="kb.toml",
        kb_root=str(top / prefix if prefix else top), pre_existing=not touched, blocking=touched)


_CONFIGS: dict[tuple[str, str, str], Any] = {}


def config_at(k: Any, rev: Optional[str]) -> Any:
    """The KB's configuration as of ``rev`` (a commit, or ``":"`` for the staged
    index), or None when kb.toml is absent there or unreadable (the caller
    then falls back to the configuration it has)."""
    if rev is None:
        return None
    from kb.config import config_from_dict, read_toml

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
                text, parsed = read_toml(data)
                cfg = config_from_dict(k.root, parsed, text)
            except KbError:
                cfg = None
        _CONFIGS[key] = cfg
    return _CONFIGS[key]


def open_index(k: Any) -> Any:
    """The :class:`kb.index.Index` verify uses for KB ``k``: its ``.kb/`` cache when
    the KB is checked out here, else one under the git dir (``kb-verify/``: a bare
    repository, a KB deleted from the work tree). Close it (a context manager)."""
    from kb.index import Index

    if k.root.is_dir() and (k.root / "kb.toml").is_file():
        return Index(k)
    import hashlib

    where = git.git_dir(k.top) / "kb-verify" / hashlib.sha1(k.prefix.encode()).hexdigest()[:16]
    return Index(k, where / "index.sqlite")


def staged_kbs(top: Path) -> list[str]:
    """Folder prefixes (``""`` or ``"sub/"``) of every kb.toml in the staged index."""
    proc = git.run(["ls-files", "-z", "--cached", "--", ":(glob)**/kb.toml"], top)
    return sorted({p[: -len("kb.toml")] for p in git.split_z(proc.stdout)
                   if p == "kb.toml" or p.endswith("/kb.toml")})


def kbs_in_listing(data: bytes) -> Optional[list[str]]:
    """:func:`staged_kbs` read out of the repository's whole ``git ls-files -s -z``
    output (no git process of its own); None when git's pathspec could match
    otherwise (``GIT_ICASE_PATHSPECS``)."""
    import os

    if os.environ.get("GIT_ICASE_PATHSPECS"):
        return None
    found = set()
    pos = data.find(b"kb.toml\0")
    while pos >= 0:
        start = data.rfind(b"\0", 0, pos) + 1
        _meta, tab, path = data[start:pos + 7].partition(b"\t")
        if tab and (path == b"kb.toml" or path.endswith(b"/kb.toml")):
            found.add(path[: -len("kb.toml")].decode("utf-8", "surrogateescape"))
        pos = data.find(b"kb.toml\0", pos + 1)
    return sorted(found)


def repo_top(start: Path) -> Path:
    """The work tree top; in a bare repository (a server's pre-receive hook) its git dir."""
    top = git.toplevel(start)
    if top is None:
        bare = git.run(["rev-parse", "--is-bare-repository"], start, check=False)
        if bare.returncode == 0 and bare.stdout.strip() == b"true":
            return git.git_dir(Path(start)).resolve()
        raise EnvironmentError_(f"{start.resolve()} is not inside a git work tree")
    return top.resolve()


def selected_kbs(top: Path, kb_path: Optional[Path], found: list[str]) -> list[str]:
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


def parents_of(top: Path, commit: str) -> list[str]:
    """The parent commit ids of ``commit`` (first parent first; [] for a root)."""
    line = git.out(["rev-list", "--parents", "-n", "1", commit], top)
    return line.split()[1:]


def shallow_commits(top: Path) -> set[str]:
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


def shallow_note(commit: str) -> str:
    """What to tell when ``commit`` is the boundary of a shallow clone."""
    return (f"history checks need full history: commit {commit[:12]} is the boundary of a shallow "
            "clone, so its parent is unknown and nothing it added can be judged; run "
            "`git fetch --unshallow` (GitHub Actions: actions/checkout with fetch-depth: 0)")
