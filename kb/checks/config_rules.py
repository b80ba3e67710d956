"""kb.toml's diagnostics that need more than kb.toml: the rule catalogue (KB001 for a
rule code kb does not have) or the snapshot being checked (KB004, a tree path with no
file; KB005, a folder of the layout that is a symlink; KB106 and KB134, a symlink under a
folder of cards that leaves the KB or leads to a folder in it). :func:`kb.config.load_config`
gives the rest (KB001 for an unknown key, KB002)."""

from __future__ import annotations

from typing import Any, Iterable

from kb.checks.catalogue import BY_CODE, effective_severity
from kb.config import DEFAULT_PATHS


def unknown_codes(config: Any) -> list[Any]:
    """KB001 warnings (``kb.model.Diagnostic``, path ``kb.toml``) for each rule code of
    ``[rules] disable`` and ``[rules.severity]`` that kb does not have, at the line
    naming it: a misspelt code switches nothing off and would pass without a word."""
    named = [(code, "rules.disable", config.code_line(code) or config.line_of("rules", "disable"))
             for code in sorted(config.disabled_rules) if code not in BY_CODE]
    named += [(code, "rules.severity", config.severity_line(code))
              for code in sorted(config.severity) if code not in BY_CODE]
    if not named:
        return []
    from kb.model import Diagnostic

    return [Diagnostic(path="kb.toml", line=line, code="KB001", severity="warning",
                       message=f"{key} names {code!r}, which is not a rule of kb: it changes "
                               "nothing (ignored); `kb rules` lists the codes")
            for code, key, line in named]


def tree_missing(config: Any, paths: Iterable[str]) -> list[Any]:
    """KB004 (warning) when kb.toml moves ``[paths] tree`` to a file that ``paths`` (the
    snapshot checked: the working tree, the staged index, a commit) does not hold: kb
    reads no hypothesis and ``kb hyp add`` refuses. The default ``tree.md`` may be absent
    (a KB of cards alone)."""
    tree = config.paths["tree"]
    if tree == DEFAULT_PATHS["tree"] or tree in paths:
        return []
    from kb.model import Diagnostic

    return [Diagnostic(path="kb.toml", line=config.line_of("paths", "tree"), code="KB004",
                       severity="warning",
                       message=f"paths.tree = {tree!r}: no such file, so kb reads no hypothesis "
                               "and `kb hyp add` refuses; correct the path, or create the file")]


def folder_links(snap: Any) -> list[Any]:
    """The diagnostics of the symlinks kb does not read as files that the snapshot ``snap``
    lists where kb reads folders (:attr:`kb.repo.Snapshot.folder_links`), each filed under
    the link's path: git tracks the link, not the files under it, so kb reads nothing
    through it and writes nothing through it -- said, not silent:

    - KB005 for a link at a folder of kb.toml's ``[paths]`` or above one: every card there
      is missing from every snapshot and every write there is refused;
    - KB106 (as for a file that is such a link) for a link under a folder of cards or
      experiments whose target leaves the KB (``Propos/外部`` -> ``/elsewhere``);
    - KB134 (a warning) for one there that leads to a folder inside the KB: nothing is
      lost from git's record (the files are read where they are, if kb reads that
      folder), but what the link shows is not what kb reads.

    Nothing is read unless the snapshot holds such a link (then: one batched read of the
    links' texts in git's snapshots, :func:`kb.repo.link_ends` for the others)."""
    if not snap.folder_links:
        return []
    k = snap.kb
    from kb.parse import layout_folders

    held = layout_folders(k.config)
    out = _layout_links(snap, held)
    others = [p for p in snap.folder_links if p not in held]
    if others:
        out += _links_below(snap, others)
    return sorted(out, key=lambda d: (d.path, d.code))


def _layout_links(snap: Any, held: dict[str, tuple[tuple[str, str], ...]]) -> list[Any]:
    """KB005 for each of ``snap``'s folder links at a folder of the layout ``held``."""
    k = snap.kb
    if not any(p in held for p in snap.folder_links):
        return []
    severity = effective_severity("KB005", "error", k.config)
    if severity is None:
        return []
    from kb.model import Diagnostic
    from kb.repo import Snapshot, folder_link_targets

    mine = Snapshot(kb=k, kind=snap.kind, folder_links={p: b for p, b in snap.folder_links.items()
                                                       if p in held})
    return [Diagnostic(path=path, line=1, code="KB005", severity=severity,
                       message=_folder_link_message(k, path, target, held.get(path, ())))
            for path, target in sorted(folder_link_targets(mine).items())]


def _links_below(snap: Any, paths: list[str]) -> list[Any]:
    """KB106 for each link ``paths`` (under a folder of cards or experiments) that leaves
    the KB, KB134 for each that leads to a folder inside it (:func:`folder_links`)."""
    k = snap.kb
    leaving = effective_severity("KB106", "error", k.config)
    inside = effective_severity("KB134", "warning", k.config)
    if leaving is None and inside is None:
        return []
    import os
    import shlex

    from kb.model import Diagnostic
    from kb.repo import Leaving, link_ends, outside_where

    out = []
    for path, target in sorted(link_ends(snap, paths).items()):
        q = shlex.quote(path)
        if isinstance(target, Leaving):
            if leaving is None:
                continue
            if os.path.isdir(target) and _holds(str(target), str(k.root)):
                how = ("kb does not read it nor anything under it (nor writes through it); it leads "
                       f"to a folder that holds the KB itself (a loop): remove it (`git rm {q}`)")
            elif os.path.isdir(target):  # (as the work tree here sees it: the advice only)
                how = (f"kb does not read it nor anything under it (nor writes through it); replace "
                       f"it by the folder itself (`rm {q} && cp -R {shlex.quote(str(target))} {q} "
                       f"&& git add -A {q}`), or remove it")
            else:
                how = ("kb does not read it (nor writes through it); replace it by a regular file "
                       "inside the KB, or remove it")
            out.append(Diagnostic(path=path, line=1, code="KB106", severity=leaving,
                                  message=f"{path} is a symlink to {target}, outside "
                                          f"{outside_where(k, target)}: {how}"))
        elif inside is not None:
            there = os.path.relpath(target, os.path.realpath(k.root)).replace(os.sep, "/")
            out.append(Diagnostic(
                path=path, line=1, code="KB134", severity=inside,
                message=f"{path} is a symlink to the folder {there} of the KB: git tracks the link, "
                        f"not the files it shows, so kb reads nothing through it (the files in "
                        f"{there} count where they are, if kb reads that folder); remove the link "
                        f"(`git rm {q}`), or move the files here with `git mv`"))
    return out


def _holds(target: str, place: str) -> bool:
    """Whether the folder ``target`` is ``place`` or holds it (both resolved): a link to it
    copied in its own place (`cp -R target link`) would copy the folder into itself."""
    import os

    real, here = os.path.realpath(target), os.path.realpath(place)
    return here == real or here.startswith(real.rstrip(os.sep) + os.sep)


def _folder_link_message(k: Any, path: str, target: str, held: tuple[tuple[str, str], ...]) -> str:
    """What KB005 says of the link ``path`` leading to ``target`` (an absolute path) above
    the settings ``held``: what is lost, and how to put it back without losing a file."""
    import os
    import shlex

    keys = ", ".join(dict.fromkeys(key for key, _ in held)) or "[paths]"
    if os.path.isdir(target) and _holds(target, str(k.root)):
        copy = f"the folder is the KB's own or holds it: remove the link, `git rm {shlex.quote(path)}`"
    elif os.path.isdir(target):
        copy = (f"`rm {shlex.quote(path)} && cp -R {shlex.quote(target)} {shlex.quote(path)} "
                f"&& git add -A {shlex.quote(path)}`")
    else:
        copy = f"a folder holding its files, added with `git add -A {shlex.quote(path)}`"
    text = (f"{path} is a symlink to {target}: git tracks the link, not the files under it, so "
            f"kb reads nothing there ({keys}) and writes nothing through it; replace the link by "
            f"the folder itself ({copy})")
    root = os.path.realpath(k.root)
    if not target.startswith(root.rstrip(os.sep) + os.sep):
        return text
    # Inside the KB: kb.toml can name the folder the link leads to instead.
    there = os.path.relpath(target, root).replace(os.sep, "/")
    moved = ", ".join(f'{key} = "{there + value[len(path):]}"' for key, value in held)
    return f"{text}, or set {moved} in kb.toml" if moved else text
