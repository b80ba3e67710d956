"""kb.toml's diagnostics that need more than kb.toml: the rule catalogue (KB001 for a
rule code kb does not have) or the snapshot being checked (KB004, a tree path with no
file; KB005, a folder of the layout that is a symlink). :func:`kb.config.load_config`
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
    """KB005 for each symlink the snapshot ``snap`` lists at a folder of kb.toml's
    ``[paths]`` or above one (:attr:`kb.repo.Snapshot.folder_links`), filed under the
    link's path: git tracks the link, not the files under it, so every card there is
    missing from every snapshot and every write there is refused -- said, not silent.
    Nothing is read unless the snapshot holds such a link (the targets then: one batched
    read of the links' texts in git's snapshots)."""
    if not snap.folder_links:
        return []
    k = snap.kb
    severity = effective_severity("KB005", "error", k.config)
    if severity is None:
        return []
    from kb.model import Diagnostic
    from kb.parse import layout_folders
    from kb.repo import folder_link_targets

    held = layout_folders(k.config)
    return [Diagnostic(path=path, line=1, code="KB005", severity=severity,
                       message=_folder_link_message(k, path, target, held.get(path, ())))
            for path, target in sorted(folder_link_targets(snap).items())]


def _folder_link_message(k: Any, path: str, target: str, held: tuple[tuple[str, str], ...]) -> str:
    """What KB005 says of the link ``path`` leading to ``target`` (an absolute path) above
    the settings ``held``: what is lost, and how to put it back without losing a file."""
    import os
    import shlex

    keys = ", ".join(dict.fromkeys(key for key, _ in held)) or "[paths]"
    if os.path.isdir(target):
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
