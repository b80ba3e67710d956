"""Knowledge-base discovery and snapshots (DESIGN.md §1, §3, §6).

A KB is the folder holding ``kb.toml``, found by walking up from the current
directory like git finds ``.git``. A :class:`Snapshot` maps every file of the
KB that kb reads (KB-relative path, ``/``-separated, real UTF-8) to its git
blob id, for one of three sources: the working tree, the staged index
(honouring ``GIT_INDEX_FILE``), or a commit.
"""

from __future__ import annotations

import errno
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Literal

from kb import git
from kb.config import Config, load_config
from kb.errors import ConfigError, EnvironmentError_, NotAKnowledgeBase, SpecialFileError
from kb.fileio import READ_FLAGS, read_fd, read_regular
from kb.parse import classifier, classify, layout_folders

SnapshotKind = Literal["worktree", "staged", "commit"]


@dataclass(frozen=True)
class KnowledgeBase:
    """A KB: its folder, the git work tree around it, and its configuration.

    ``prefix`` is the KB folder relative to the work tree top ('' at the top),
    always with a trailing ``/`` when not empty.
    """

    root: Path
    top: Path
    prefix: str
    config: Config

    def rel(self, repo_path: str) -> str | None:
        """KB-relative path of a repository-relative path, or None if outside the KB."""
        if not self.prefix:
            return repo_path
        if repo_path.startswith(self.prefix):
            return repo_path[len(self.prefix):]
        return None

    def repo_path(self, kb_path: str) -> str:
        """Repository-relative path of a KB-relative path."""
        return self.prefix + kb_path


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``kb.toml``, or None."""
    cur = start.resolve()
    for d in (cur, *cur.parents):
        if (d / "kb.toml").is_file():
            return d
    return None


def open_kb(path: Path | None = None) -> KnowledgeBase:
    """Open the KB containing ``path`` (default: the current directory).

    Raises NotAKnowledgeBase when there is no ``kb.toml`` above it, and
    EnvironmentError_ when the KB is not inside a git work tree.
    """
    start = Path(path) if path else Path.cwd()
    if not start.exists():
        raise NotAKnowledgeBase(f"{start} does not exist")
    root = find_root(start if start.is_dir() else start.parent)
    if root is None:
        raise NotAKnowledgeBase(
            f"no kb.toml in {start.resolve()} or any parent folder (run `kb init` to create a KB)")
    top = git.toplevel(root)
    if top is None:
        raise EnvironmentError_(f"{root} is not inside a git work tree (run `git init` there)")
    top = top.resolve()
    rel = root.relative_to(top).as_posix()
    prefix = "" if rel == "." else rel + "/"
    try:
        config = load_config(root)
    except ConfigError as exc:
        raise _named_from_here(exc, root) from None
    return KnowledgeBase(root=root, top=top, prefix=prefix, config=config)


def _named_from_here(exc: ConfigError, root: Path) -> ConfigError:
    """``exc`` (its message starting ``kb.toml…``) naming the file as the user opens it
    from the current folder: ``sub/kb.toml:4: …`` for ``kb … --kb sub``."""
    try:
        shown = Path(os.path.relpath(root / "kb.toml")).as_posix()
    except (OSError, ValueError):  # no current folder; another drive
        return exc
    return exc if shown == "kb.toml" or not str(exc).startswith("kb.toml") else exc.named(shown)


def find_all_kbs(top: Path, rev: str | None = None) -> list[str]:
    """Repository-relative folders of every ``kb.toml`` tracked (or at ``rev``)."""
    if rev:
        proc = git.run(["ls-tree", "-r", "-z", "--name-only", rev], top)
    else:
        proc = git.run(["ls-files", "-z", "--cached", "--others", "--exclude-standard"], top)
    out = []
    for p in git.split_z(proc.stdout):
        if p == "kb.toml" or p.endswith("/kb.toml"):
            out.append(p[: -len("kb.toml")])
    return sorted(set(out))


@dataclass
class Snapshot:
    """The files of a KB as one source sees them: KB-relative path -> blob id.

    ``rev`` is the commit id for ``commit`` snapshots. ``disk`` lists paths
    whose content must be read from the working tree (worktree snapshots).
    """

    kb: KnowledgeBase
    kind: SnapshotKind
    files: dict[str, str] = field(default_factory=dict)
    formats: dict[str, str] = field(default_factory=dict)
    rev: str | None = None
    #: (staged and commit snapshots) symlinks kb does not read: path -> where the link
    #: leads (outside the work tree), or a :class:`Dangling` target (nothing there).
    unread: dict[str, str] = field(default_factory=dict)
    #: (staged and commit snapshots) every symlink: path -> the link's own blob id
    #: (``files`` holds what it reads as: its target's blob, when inside).
    links: dict[str, str] = field(default_factory=dict)
    #: (staged snapshots) KB files and kb.toml with unmerged index entries (a merge, rebase,
    #: cherry-pick… stopped on a conflict): path -> the conflict stages held ("123": base,
    #: ours, theirs). Such a path has no staged version, so it is not in ``files``.
    unmerged: dict[str, str] = field(default_factory=dict)
    #: symlinks kb does not read as files that stand where kb reads folders: at a folder
    #: of kb.toml's ``[paths]`` or above one (:func:`kb.parse.layout_folders`; KB005), or
    #: anywhere under a folder of cards or experiments (:func:`reads_below`: KB106 when
    #: the link leaves the KB, KB134 when it leads to a folder inside it; nothing for a
    #: link to a file inside, which kb would not read as a file there either): path ->
    #: the link's blob id. git tracks the link, not the files under it, so kb reads
    #: nothing through it (:func:`link_ends` judges where each leads).
    folder_links: dict[str, str] = field(default_factory=dict)
    #: (a snapshot patched from another, :func:`derived_snapshot`) that snapshot, and
    #: the paths whose entry may differ from that one's: every other entry is the same.
    differs_from: tuple["Snapshot", frozenset[str]] | None = field(default=None, repr=False,
                                                                   compare=False)
    #: (set by :func:`kb.digests.file_digests`) the paths in order and a digest of
    #: each part of them, from which a snapshot derived from this one gets its own.
    digests: tuple[list[str], list[bytes]] | None = field(default=None, repr=False, compare=False)

    def read(self, paths: list[str]) -> dict[str, bytes]:
        """Contents of ``paths`` (KB-relative) in this snapshot; missing files are
        skipped, and so are symlinks kb does not read (leaving the work tree, or dangling).
        A symlink inside the work tree reads as its target (:func:`resolve_links`)."""
        if self.kind == "worktree":
            return read_worktree(self.kb, paths)[0]
        files, unread = self.files, self.unread
        if UNREAD_LINKS:  # a snapshot patched from diffs: its links as their listing judged them
            unread = {**unread, **{p: "" for p in paths if unread_link(self.kb, p, files[p]) is not None}}
        blobs = git.read_blobs([files[p] for p in paths if p not in unread], self.kb.top)
        return {p: blobs[files[p]] for p in paths if files[p] in blobs and p not in unread}


def derived_snapshot(source: Snapshot, files: dict[str, str], formats: dict[str, str],
                     changed: Iterable[str], rev: str | None) -> Snapshot:
    """A commit snapshot of ``files`` (``source``'s files with those of the paths
    ``changed`` patched, :func:`kb.checks.changes.patch_files`), which remembers that only
    those paths may differ from ``source`` (:func:`differing_paths`). The maps must not
    change afterwards."""
    return Snapshot(kb=source.kb, kind="commit", files=files, formats=formats, rev=rev,
                    differs_from=(source, frozenset(changed)))


def differing_paths(a: Snapshot, b: Snapshot) -> set[str] | None:
    """The paths whose entry (blob, or presence) differs between ``a`` and ``b`` when one
    is derived from the other through at most 8 :func:`derived_snapshot` steps, found in
    the few paths those steps patched; None otherwise (the caller compares every file)."""
    for start, goal in ((a, b), (b, a)):
        paths: set[str] = set()
        s: Snapshot | None = start
        for _ in range(9):
            if s is goal:
                fa, fb = a.files, b.files
                return {p for p in paths if fa.get(p) != fb.get(p)}
            if s is None or s.differs_from is None:
                break
            s, step = s.differs_from
            paths |= step
    return None


class Dangling(str):
    """Where a symlink leads when nothing is there (a value of :attr:`Snapshot.unread`
    and of :func:`read_worktree`'s second map): the KB106 parse says so."""


#: Symlinks kb does not read, as the snapshots of this process listed them:
#: (KB folder, KB-relative path, the link's blob id) -> its target (a :class:`Dangling`
#: when nothing is there). Readers given a bare (path, blob) -- a version of a file in
#: a range's diff -- look here so that the link's text is never parsed as Markdown.
UNREAD_LINKS: dict[tuple[str, str, str], str] = {}


def unread_link(kb: KnowledgeBase, path: str, blob: str) -> str | None:
    """The target of the symlink ``path`` at ``blob`` when kb does not read it, else None."""
    return UNREAD_LINKS.get((str(kb.root), path, blob)) if UNREAD_LINKS else None


def _link_display(kb: KnowledgeBase, repo_path: str, text: str) -> str:
    """Where the link ``repo_path`` with ``text`` leads, as the work tree's reader names
    it (:func:`os.path.realpath` of the target)."""
    return os.path.realpath(os.path.join(kb.top, os.path.dirname(repo_path), text))


def resolve_links(kb: KnowledgeBase, kind: SnapshotKind, rev: str | None,
                  links: dict[str, str], files: dict[str, str]) -> dict[str, str]:
    """Judge the symlinks ``links`` (KB-relative path -> the link's blob) of a staged
    or commit listing ``files`` the way the work tree is read: a link whose text is
    absolute, climbs above the work tree's top, or leads out of the KB's folder (a KB
    in a subfolder of the repository) leads outside (never read: kb reads no record
    outside the KB); a link inside reads as its target's entry in the same snapshot
    (``files[path]`` becomes the target's blob, so the parse and its cache key agree
    with the work tree's); a target the snapshot does not hold is dangling. Returns
    the unread links, path -> target (a :class:`Dangling` when dangling), and records
    them in :data:`UNREAD_LINKS`. One batched read of the links' texts, and one git
    call for targets the KB's listing leaves out (files kb does not parse; none for a
    commit without ``rev``)."""
    import posixpath

    texts = git.read_blobs(list(dict.fromkeys(links.values())), kb.top)
    unread: dict[str, str] = {}
    later: dict[str, str] = {}  # path -> repository path of a KB target not in the listing
    for rel in links:
        cur = rel
        for _ in range(40):  # a chain of links, bounded as the system bounds it
            text = texts.get(links[cur], b"").decode("utf-8", "surrogateescape")
            repo_cur = kb.repo_path(cur)
            norm = posixpath.normpath(posixpath.join(posixpath.dirname(repo_cur), text))
            if not text or text.startswith("/") or os.path.isabs(text) or norm == ".." \
                    or norm.startswith("../"):
                unread[rel] = _link_display(kb, repo_cur, text)
                break
            target = kb.rel(norm)
            if target is None:  # inside the work tree, outside the KB's folder
                unread[rel] = _link_display(kb, repo_cur, text)
                break
            if target in links:
                cur = target
                continue
            if target in files:
                files[rel] = files[target]
            else:
                later[rel] = norm
            break
        else:
            unread[rel] = Dangling(_link_display(kb, kb.repo_path(cur), ""))
    if later:
        spec = ["--", *(f":(literal){p}" for p in set(later.values()))]
        cmd = ["ls-tree", "-z", rev, *spec] if kind == "commit" else ["ls-files", "-s", "-z", *spec]
        found: dict[str, str] = {}
        if kind == "commit":
            # (a commit's map patched from diffs has no rev: a target it lacks is dangling)
            listing = git.run(cmd, kb.top).stdout if rev is not None else b""
            for e in git.tree_entries(listing):
                if e.mode in ("100644", "100755"):
                    found[e.path] = e.oid
        else:
            for rec in git.split_z(git.run(cmd, kb.top).stdout):
                meta, _, path = rec.partition("\t")
                mode, blob, stage = meta.split(" ")  # ls-files -s: "<mode> <blob> <stage>"
                if mode in ("100644", "100755") and stage == "0":
                    found[path] = blob
        for rel, norm in later.items():
            if norm in found:
                files[rel] = found[norm]
            else:
                unread[rel] = Dangling(os.path.realpath(os.path.join(kb.top, norm)))
    for rel, target in unread.items():
        UNREAD_LINKS[(str(kb.root), rel, links[rel])] = target
    return unread


def _pathspec(kb: KnowledgeBase, only: list[str] | None = None) -> list[str]:
    """``-- <pathspec>`` for the KB, or for ``only`` (KB-relative paths or folders)."""
    if only is not None:
        return ["--", *(f":(literal){kb.repo_path(p.rstrip('/'))}" for p in only)]
    return ["--", kb.prefix] if kb.prefix else []


def staged_snapshot(kb: KnowledgeBase, _stdout: bytes | None = None) -> Snapshot:
    """The staged index (``git ls-files -s -z``; honours ``GIT_INDEX_FILE``)."""
    if _stdout is None:
        _stdout = git.run(["ls-files", "-s", "-z", *_pathspec(kb)], kb.top).stdout
    files: dict[str, str] = {}
    fmts: dict[str, str] = {}
    links: dict[str, str] = {}
    unmerged: dict[str, str] = {}
    folder_links: dict[str, str] = {}
    fmt_of = classifier(kb.config)
    prefix = kb.prefix
    cut = len(prefix)
    # One decode of the whole listing (git's -z records hold no NUL), then per record
    # "<mode> <blob> <stage>\t<path>" (the mode six octal digits, the stage one);
    # paths kb does not read are dropped first; formats are decided once per folder.
    for rec in _stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not rec:
            continue
        meta, _, path = rec.partition("\t")
        if cut:
            if not path.startswith(prefix):
                continue
            path = path[cut:]
        fmt = fmt_of(path)
        if fmt is None:
            if meta[-1] != "0" and path == "kb.toml":
                unmerged[path] = unmerged.get(path, "") + meta[-1]
            elif meta[1] == "2":  # 120000, a symlink: one hiding a folder of cards is said
                _folder_link(kb, path, meta[7:-2], folder_links)
            continue
        if meta[-1] != "0":
            # a conflict stage (1 base, 2 ours, 3 theirs): no staged version of the file
            unmerged[path] = unmerged.get(path, "") + meta[-1]
            continue
        if meta[1] != "0":  # not 100644/100755: 160000 a submodule (skipped), 120000 a symlink
            if meta[1] != "2":
                continue
            links[path] = meta[7:-2]
        files[path] = meta[7:-2]
        fmts[path] = fmt
    unread = resolve_links(kb, "staged", None, links, files) if links else {}
    return Snapshot(kb=kb, kind="staged", files=files, formats=fmts, unread=unread, links=links,
                    unmerged=unmerged, folder_links=folder_links)


def _folder_link(kb: KnowledgeBase, path: str, blob: str, found: dict[str, str]) -> None:
    """Add the symlink ``path`` (KB-relative, at ``blob``) to ``found`` when it stands at a
    folder of the layout or above one (:func:`kb.parse.layout_folders`), or under a folder
    of cards or experiments (:func:`reads_below`). Called for the few symlinks of a
    listing that kb does not read as files: no cost without them, and no git process."""
    if path in layout_folders(kb.config) or reads_below(kb, path):
        found[path] = blob


def reads_below(kb: KnowledgeBase, path: str) -> bool:
    """Whether kb reads the ``.md`` files of a folder at the KB-relative ``path``: a folder
    of cards or experiments or one under it (those kb does not take as cards it names,
    KB108). A symlink there (a link to a folder of cards elsewhere, ``Propos/外部``) hides
    what kb would read, so it is said; one in a free folder (``Notes/``) hides nothing kb
    reads. The classifier answers per folder (one regex match, remembered): asked of the
    folder holding ``path``, so that the untracked files of one folder cost one match."""
    # A name no path holds (NUL) stands for any name: "<folder>/\0/\0.md" is a .md file in
    # a folder beside ``path``. Only whether kb reads it matters, and under a folder of
    # cards every .md file is read (as a card, or as KB108's misplaced file), whatever
    # the names on its way.
    folder = path.rpartition("/")[0]
    return classifier(kb.config)(f"{folder}/\0/\0.md" if folder else "\0/\0.md") is not None


class Leaving(str):
    """Where a symlink of :attr:`Snapshot.folder_links` leads when that leaves the KB
    (a value of :func:`link_ends`): KB106 says so, as for a file that is such a link."""


def _names_git_folder(path: str) -> bool:
    """Whether the relative ``path`` (``/`` or the system's separator) passes through a
    folder named ``.git``: git's own folder (of the repository, or of one nested in it),
    which git never tracks a file of, so no part of the KB."""
    return any(part.casefold() == ".git" for part in re.split(r"[/\\]", path))


def in_git_folder(kb: KnowledgeBase, real: str) -> bool:
    """Whether the real path ``real`` is or lies inside git's own folder: a ``.git`` folder
    under the work tree's top, or the repository's git dir (or the common one of its
    worktrees) wherever it is. No part of the KB: a link there leaves it (KB106). Asks git
    for its folders (once per repository) only when the name does not tell."""
    top = os.path.realpath(kb.top)
    if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
        if _names_git_folder(os.path.relpath(real, top)):
            return True
    for gd in (git.git_dir(kb.top), git.common_dir(kb.top)):
        home = os.path.realpath(gd)
        if real == home or real.startswith(home.rstrip(os.sep) + os.sep):
            return True
    return False


def link_ends(snap: Snapshot, paths: Iterable[str]) -> dict[str, str]:
    """Where each symlink ``paths`` of ``snap``'s :attr:`Snapshot.folder_links` leads, for
    those kb must speak of: a :class:`Leaving` target (the link leaves the KB: absolute,
    above the work tree's top, or out of the KB's folder, as :func:`resolve_links` judges
    a file's link; named as KB106 names it) or the real path of a folder inside the KB.
    A link to a file inside the KB, or to nothing there, is left out: kb would not read
    a file there either.

    The working tree is judged on disk (``readlink``, ``realpath``, ``isdir``); the staged
    index and a commit in git, through chains of links the snapshot lists: one batched
    read of the links' texts, and one git listing per step of a chain through links it
    does not list (none for a link that leaves). Called only when such links exist."""
    kb = snap.kb
    paths = list(paths)
    if not paths:
        return {}
    out: dict[str, str] = {}
    if snap.kind == "worktree":
        home, inside = _kb_bounds(kb)
        for p in paths:
            full = os.path.join(kb.root, p)
            real = os.path.realpath(full)
            if not (real == home or real.startswith(inside)) or _leaving_link(kb, p, full):
                out[p] = Leaving(real)
            elif os.path.isdir(full):
                out[p] = Leaving(real) if in_git_folder(kb, real) else real
        return out
    import posixpath

    known = {**snap.links, **snap.folder_links}  # every link the listing holds: path -> blob
    texts = git.read_blobs([known[p] for p in paths], kb.top)
    # path -> (the link reached so far, KB-relative, and its text)
    todo = {p: (p, texts.get(known[p], b"").decode("utf-8", "surrogateescape")) for p in paths}
    for _ in range(40):  # a chain of links, bounded as the system bounds it
        ask: dict[str, str] = {}  # path -> repository path of a target inside to look up
        for p, (cur, text) in todo.items():
            for _ in range(40):
                repo_cur = kb.repo_path(cur)
                norm = posixpath.normpath(posixpath.join(posixpath.dirname(repo_cur), text))
                target = kb.rel(norm)
                if not text or posixpath.isabs(text) or os.path.isabs(text) or norm == ".." \
                        or norm.startswith("../") or target is None or _names_git_folder(norm):
                    # (git tracks nothing in a .git folder: such a target is git's, not the KB's)
                    out[p] = Leaving(_link_display(kb, repo_cur, text))
                    break
                if target == cur:
                    break  # a link to itself leads nowhere
                if target in known:
                    more = git.read_blobs([known[target]], kb.top) if known[target] not in texts else {}
                    texts.update(more)
                    cur, text = target, texts.get(known[target], b"").decode("utf-8", "surrogateescape")
                    continue
                ask[p] = norm
                break
        if not ask or (snap.kind == "commit" and snap.rev is None):
            break  # (a commit patched from diffs has no tree to ask: nothing more is known)
        spec = ["--", *(f":(literal){n}" for n in set(ask.values()))]
        entries: list[tuple[str, str, str]] = []  # (mode, object id, repository path)
        if snap.kind == "commit":
            entries = [(e.mode, e.oid, e.path)
                       for e in git.tree_entries(git.run(["ls-tree", "-z", str(snap.rev), *spec],
                                                         kb.top).stdout)]
        else:
            for rec in git.split_z(git.run(["ls-files", "-s", "-z", *spec], kb.top).stdout):
                meta, _, path = rec.partition("\t")
                mode, oid, _stage = meta.split(" ")
                entries.append((mode, oid, path))
        todo = {}
        for p, norm in ask.items():
            for mode, oid, path in entries:
                if path == norm and mode == "120000":  # a link the KB's listing left out
                    data = git.read_blobs([oid], kb.top).get(oid, b"")
                    todo[p] = (kb.rel(norm) or "", data.decode("utf-8", "surrogateescape"))
                    break
                if (path == norm and mode in ("040000", "160000")) or path.startswith(norm + "/"):
                    out[p] = os.path.realpath(os.path.join(kb.top, norm))  # a folder
                    break
        if not todo:
            break
    return out


def folder_link_targets(snap: Snapshot) -> dict[str, str]:
    """Where each of ``snap``'s :attr:`Snapshot.folder_links` leads, named as KB106 names
    a link's target: the link's text read on disk (the working tree) or from git (one
    batched read), resolved against the link's folder."""
    kb = snap.kb
    if snap.kind == "worktree":
        texts = {p: _readlink(kb.root / p) for p in snap.folder_links}
    else:
        blobs = git.read_blobs(snap.folder_links.values(), kb.top)
        texts = {p: blobs.get(b, b"").decode("utf-8", "surrogateescape")
                 for p, b in snap.folder_links.items()}
    return {p: _link_display(kb, kb.repo_path(p), text) for p, text in texts.items()}


def _readlink(path: Path) -> str:
    """The text of the symlink ``path``; "" when it is no longer one (changed meanwhile)."""
    try:
        return os.readlink(path)
    except OSError:
        return ""


_LISTING_META = re.compile(rb"[0-7]{6} [0-9a-f]{40,64} [0-3]")


def staged_entries(kb: KnowledgeBase, data: bytes,
                   specs: tuple[str, ...]) -> dict[str, tuple[str, str]] | None:
    """The stage-0 entries under the KB paths ``specs`` (a file, or a folder and what is in
    it), read out of the KB's whole ``git ls-files -s -z`` output ``data`` without a git
    process (what ``git ls-files -s -z -- <specs>`` gives): KB path -> (mode, blob id).
    None when git's pathspec could match otherwise (a prefix with glob characters,
    case-insensitive pathspecs): then the caller asks git."""
    prefix = kb.prefix
    if set(prefix) & set("*?[\\") or os.environ.get("GIT_ICASE_PATHSPECS"):
        return None
    out: dict[str, tuple[str, str]] = {}
    for spec in specs:
        full = (prefix + spec.rstrip("/")).encode("utf-8", "surrogateescape")
        needle = b"\t" + full
        pos = data.find(needle)
        while pos >= 0:
            start = data.rfind(b"\0", 0, pos) + 1
            end = data.find(b"\0", pos)
            end = len(data) if end < 0 else end
            path = data[pos + 1:end]
            meta = data[start:pos]
            if _LISTING_META.fullmatch(meta) and (path == full or path.startswith(full + b"/")):
                mode, blob, stage = meta.decode("ascii").split(" ")
                rel = kb.rel(path.decode("utf-8", "surrogateescape"))
                if stage == "0" and rel is not None:
                    out[rel] = (mode, blob)
            pos = data.find(needle, pos + 1)
    return out


def commit_snapshot(kb: KnowledgeBase, rev: str) -> Snapshot:
    """The tree of commit ``rev`` (``git ls-tree -r -z``). ``rev`` must exist."""
    proc = git.run(["ls-tree", "-r", "-z", rev, *_pathspec(kb)], kb.top)
    files: dict[str, str] = {}
    fmts: dict[str, str] = {}
    links: dict[str, str] = {}
    folder_links: dict[str, str] = {}
    fmt_of = classifier(kb.config)
    prefix = kb.prefix
    cut = len(prefix)
    for mode, typ, blob, path in git.tree_entries(proc.stdout):
        if typ != "blob":
            continue
        if cut:
            if not path.startswith(prefix):
                continue
            path = path[cut:]
        fmt = fmt_of(path)
        if fmt is not None:
            files[path] = blob
            fmts[path] = fmt
            if mode == "120000":
                links[path] = blob
        elif mode == "120000":
            _folder_link(kb, path, blob, folder_links)
    unread = resolve_links(kb, "commit", rev, links, files) if links else {}
    return Snapshot(kb=kb, kind="commit", files=files, formats=fmts, rev=rev, unread=unread,
                    links=links, folder_links=folder_links)


def empty_snapshot(kb: KnowledgeBase) -> Snapshot:
    """History before the first commit: nothing."""
    return Snapshot(kb=kb, kind="commit", files={}, formats={}, rev=None)


#: (thread, top, KB prefix) -> (time.monotonic() when it started, repository paths) of the
#: thread's last whole-KB ``git diff-files`` (:func:`worktree_snapshot`).
_LAST_CHANGED: dict[tuple[int, str, str], tuple[float, list[str]]] = {}


def worktree_changes_since(kb: KnowledgeBase, since: float) -> list[str] | None:
    """The repository paths whose working-tree file differs from the index, as this
    thread's last whole-KB :func:`worktree_snapshot` found them, when it started at or
    after ``since`` (``time.monotonic()``); else None. A write transaction that indexed
    the KB under its lock reuses it instead of another pass over every file."""
    seen = _LAST_CHANGED.get((threading.get_ident(), str(kb.top), kb.prefix))
    return seen[1] if seen is not None and seen[0] >= since else None


def worktree_snapshot(kb: KnowledgeBase, only: list[str] | None = None,
                      meanwhile: Callable[[], object] | None = None) -> Snapshot:
    """The working tree: staged blob ids, re-hashed where git reports a change.

    Files that ``git diff-files`` reports as changed and untracked files kb
    reads are hashed by kb in git's blob format; deleted files drop out.
    ``only`` limits the snapshot to these KB-relative files or folders (a
    write command looks at the few it needs, not at the whole KB).
    ``meanwhile``, when given, is called while git runs (the caller's work
    that does not need the snapshot: a cold index imports its parsers).
    """
    spec = _pathspec(kb, only)
    # The three git calls run at once; their wall time is the longest one's.
    cmds = [["ls-files", "-s", "-z", *spec],
            ["diff-files", "-z", "--name-only", *spec],
            ["ls-files", "-z", "--others", "--exclude-standard", *spec]]
    started = time.monotonic()
    procs = [git.start(c, kb.top) for c in cmds]
    if meanwhile is not None:
        meanwhile()
    staged, changed, untracked = (git.finish(p, c) for p, c in zip(procs, cmds))
    if only is None:
        _LAST_CHANGED[(threading.get_ident(), str(kb.top), kb.prefix)] = (
            started, list(git.split_z(changed)))
    snap = staged_snapshot(kb, staged)
    files, fmts = snap.files, snap.formats
    # A folder link the index holds counts while it is one on disk (the few listed).
    folder_links = {p: b for p, b in snap.folder_links.items() if os.path.islink(kb.root / p)}
    for repo_path in [*git.split_z(changed), *git.split_z(untracked)]:
        rel = kb.rel(repo_path)
        if rel is None:
            continue
        fmt = classify(rel, kb.config)
        if fmt is None:
            _worktree_folder_link(kb, rel, folder_links)  # a link not committed, or changed
            continue
        full = kb.root / rel
        if outside_links(kb, [rel]):
            # Never read through it: the id is the link's own (what git stores).
            files[rel] = git.blob_id(os.readlink(full).encode("utf-8", "surrogateescape")) \
                if full.is_symlink() else git.blob_id(b"")
            fmts[rel] = fmt
            continue
        try:
            data = read_regular(full)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, SpecialFileError):
            # (a FIFO in a file's place: no file there to read, and never waited on)
            files.pop(rel, None)
            fmts.pop(rel, None)
            continue
        except OSError:
            continue
        files[rel] = git.blob_id(data)
        fmts[rel] = fmt
    return Snapshot(kb=kb, kind="worktree", files=files, formats=fmts, folder_links=folder_links)


def _worktree_folder_link(kb: KnowledgeBase, rel: str, found: dict[str, str]) -> None:
    """Add ``rel`` (a changed or untracked path kb does not read as a file) to ``found``
    when it stands at a folder of the layout or above one, or under a folder of cards or
    experiments (:func:`reads_below`), and is a symlink on disk; its value is the blob id
    git would give the link. One ``lstat`` for such a path, none for any other."""
    if (rel in layout_folders(kb.config) or reads_below(kb, rel)) and os.path.islink(kb.root / rel):
        found[rel] = git.blob_id(os.fsencode(_readlink(kb.root / rel)))


def outside_links(kb: KnowledgeBase, paths: list[str]) -> dict[str, str]:
    """KB-relative ``paths`` that resolve outside the KB's folder through a symlink
    (the file itself or a folder on its way), mapped to where they lead: outside the
    work tree, or (a KB in a subfolder) elsewhere in the repository.

    kb never reads or writes through such a path: a committed symlink to
    ``/etc/passwd`` or ``~/.ssh/…`` would otherwise be read and its content
    committed, and one to a file of the repository outside the KB read as a record
    (and written by kb's writers). One ``lstat`` per file; each folder is resolved once.
    """
    home, inside = _kb_bounds(kb)
    dirs: dict[str, bool] = {}
    out: dict[str, str] = {}
    for rel in paths:
        full = os.path.join(kb.root, rel)
        folder = os.path.dirname(full)
        ok = dirs.get(folder)
        if ok is None:
            real = os.path.realpath(folder)
            ok = dirs[folder] = real == home or real.startswith(inside)
        if ok and not os.path.islink(full):
            continue
        real = os.path.realpath(full)
        if not (real == home or real.startswith(inside)) or _leaving_link(kb, rel, full):
            out[rel] = real
    return out


def _kb_bounds(kb: KnowledgeBase) -> tuple[str, str]:
    """The real path of the KB's folder, and it followed by a separator: a file whose
    real path is neither the one nor starts with the other lies outside the KB (the
    work tree's top for a KB at the top)."""
    root = os.path.realpath(kb.root)
    return root, root.rstrip(os.sep) + os.sep


def outside_where(kb: KnowledgeBase, target: str) -> str:
    """What a symlink leading to ``target`` (a real path outside the KB, as
    :func:`outside_links` gives it) leaves: ``"the work tree"``, or ``"the KB folder
    <folder>"`` when it lands elsewhere in the repository (a KB in a subfolder), ``"the work
    tree (git's own folder)"`` when it lands in a ``.git`` folder of the work tree."""
    top = os.path.realpath(kb.top)
    if (target == top or target.startswith(top.rstrip(os.sep) + os.sep)) \
            and _names_git_folder(os.path.relpath(target, top)):
        return "the work tree (git's own folder)"
    if kb.prefix and (target == top or target.startswith(top.rstrip(os.sep) + os.sep)):
        root = os.path.realpath(kb.root)
        if not (target == root or target.startswith(root.rstrip(os.sep) + os.sep)):
            return f"the KB folder {kb.prefix.rstrip('/')}"
    return "the work tree"


def link_on_the_way(root: Path | str, rel: str) -> str | None:
    """The first of the KB-relative file ``rel`` and the folders on its way from the KB's
    folder ``root`` that is a symlink (its KB-relative path), or None. kb writes nothing
    through such a path, whichever file it leads to, and never replaces the link by a
    file: writes refuse and ``kb verify --fix`` skips it. One ``lstat`` per component
    (a write touches a few files)."""
    cur = os.fspath(root)
    parts = [x for x in rel.split("/") if x]
    for n, part in enumerate(parts):
        cur = os.path.join(cur, part)
        if os.path.islink(cur):
            return "/".join(parts[:n + 1])
    return None


def _leaving_link(kb: KnowledgeBase, rel: str, full: str) -> bool:
    """Whether ``full`` (the KB-relative ``rel``) is a symlink whose text leaves the KB
    in every clone, whatever it reaches here: an absolute path, one climbing above the
    top (``..``), or one leading out of the KB's folder, as git's snapshots judge it
    (:func:`resolve_links`)."""
    import posixpath

    try:
        text = os.readlink(full)
    except OSError:
        return False
    if os.path.isabs(text):
        return True
    norm = posixpath.normpath(posixpath.join(posixpath.dirname(kb.repo_path(rel)), text))
    return norm == ".." or norm.startswith("../") or kb.rel(norm) is None


#: How :func:`read_worktree` opens a file: never through a symlink (the final
#: component); the few that are links are looked at by :func:`outside_links`.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: kb.fileio's flags (a FIFO opens at once, and read_fd refuses it), not following a link.
_OPEN_FLAGS = READ_FLAGS | _NOFOLLOW
#: What ``open`` fails with, given O_NOFOLLOW, when the file is a symlink (ELOOP;
#: EMLINK on FreeBSD).
_IS_LINK = {errno.ELOOP, errno.EMLINK}


def read_worktree(kb: KnowledgeBase, paths: list[str]) -> tuple[dict[str, bytes], dict[str, str]]:
    """The working-tree bytes of KB-relative ``paths`` (missing and unreadable files
    skipped), and the paths that are symlinks leaving the KB (the work tree, or the KB's
    folder in it), mapped to where they lead (:func:`outside_links`: never read), or
    dangling (a :class:`Dangling`).

    What :func:`outside_links` then reading would give, without an ``lstat`` per
    file: each folder is resolved once, and a file in a folder inside the work
    tree is opened with ``O_NOFOLLOW``, which fails on a symlink (only then is
    the link resolved). A file that is a symlink on disk (whatever git's index
    says) is never read through unless it leads inside the KB.
    """
    home, inside = _kb_bounds(kb)
    root = str(kb.root)
    join, dirname = os.path.join, os.path.dirname
    dirs: dict[str, bool] = {}
    out: dict[str, bytes] = {}
    outside: dict[str, str] = {}
    flags = _OPEN_FLAGS
    for rel in paths:
        full = join(root, rel)
        folder = dirname(full)
        ok = dirs.get(folder)
        if ok is None:
            real = os.path.realpath(folder)
            ok = dirs[folder] = real == home or real.startswith(inside)
        if ok and _NOFOLLOW:
            try:
                fd = os.open(full, flags)
            except OSError as exc:
                if exc.errno not in _IS_LINK:
                    continue  # gone, a folder, no permission: skipped, as by open()
            else:
                try:
                    out[rel] = read_fd(fd, full)
                except OSError:
                    pass
                finally:
                    os.close(fd)
                continue
        elif ok and not os.path.islink(full):
            try:
                out[rel] = read_regular(full)
            except OSError:
                pass
            continue
        # A symlink, or a folder on the way leaves the KB: where does it lead?
        real = os.path.realpath(full)
        if not (real == home or real.startswith(inside)) or _leaving_link(kb, rel, full):
            outside[rel] = real
            continue
        try:
            out[rel] = read_regular(full)
        except OSError:
            if os.path.islink(full) and not os.path.isfile(real):
                outside[rel] = Dangling(real)  # a link to nothing: said, not skipped
            continue
    return out, outside


#: Names Windows reserves in every folder, with any extension (``CON.md``).
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
             *(f"LPT{i}" for i in range(1, 10)), "COM¹", "COM²", "COM³", "LPT¹", "LPT²", "LPT³"}
_BAD_CHARS = set('<>:"|?*\\') | {chr(i) for i in range(32)}
#: Any of :data:`_BAD_CHARS` (one C scan of a name instead of a set built per name).
_BAD_CHAR = re.compile("[" + "".join(map(re.escape, sorted(_BAD_CHARS))) + "]")
#: The longest reserved name: a longer stem never upper-cases to one (upper() never shortens).
_RESERVED_LEN = max(map(len, _RESERVED))


def unportable(path: str, chars: bool = True) -> str | None:
    """Why the ``/``-separated ``path`` cannot be checked out on every file system, or None.

    A component that Windows reserves (``CON``, ``aux.md``, ``COM1``…), ends in
    a dot or a space, or (``chars``) holds ``<>:"|?*\\`` or a control character.
    """
    for part in path.split("/"):
        stem = part.partition(".")[0]
        if len(stem) <= _RESERVED_LEN and stem.upper() in _RESERVED:
            return f"{part!r} is a name Windows reserves"
        if part.endswith((".", " ")):
            return f"{part!r} ends in a dot or a space (Windows drops it)"
        if chars and _BAD_CHAR.search(part):
            return f"{part!r} holds a character Windows does not allow in file names"
    return None


def fold(path: str) -> str:
    """The form under which case-insensitive or normalising file systems (macOS,
    Windows) see ``path`` as the same file: NFC, case-folded."""
    import unicodedata

    return unicodedata.normalize("NFC", path).casefold()


def colliding(paths: list[str]) -> list[tuple[str, str]]:
    """Pairs of distinct ``paths`` that some file systems take for one file."""
    seen: dict[str, str] = {}
    out = []
    for p in sorted(paths):
        k = fold(p)
        if k in seen and seen[k] != p:
            out.append((seen[k], p))
        else:
            seen.setdefault(k, p)
    return out


def colliding_folders(paths: list[str]) -> list[tuple[str, str, str]]:
    """Pairs of distinct folders of ``paths`` that some file systems take for one folder
    (``Propos/Algebra`` and ``Propos/algebra``): ``(folder, other folder, a path in the
    other)``, each pair once."""
    first_path: dict[str, str] = {}  # each folder (and its parents) -> its first path
    for p in sorted(paths):
        d = p.rpartition("/")[0]
        while d and d not in first_path:  # a folder seen once is folded once
            first_path[d] = p
            d = d.rpartition("/")[0]
    seen: dict[str, str] = {}
    out = []
    for d in sorted(first_path):
        first = seen.setdefault(fold(d), d)
        if first != d:
            out.append((first, d, first_path[d]))
    return out


def resolve_kb(kb: "KnowledgeBase | str | Path | None") -> KnowledgeBase:
    """A :class:`KnowledgeBase` as given, or the KB containing a path (None: the
    current directory). Raises :class:`kb.errors.NotAKnowledgeBase` outside a KB."""
    if isinstance(kb, KnowledgeBase):
        return kb
    return open_kb(Path(kb) if kb else None)
