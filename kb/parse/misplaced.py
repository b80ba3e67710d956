"""KB108: a Markdown file in a folder of cards or experiments, where kb reads none.

kb reads a problem card at ``Problems/<id>.md``, a proposition at
``Propos/<category>/<id>.md``, and so on (DESIGN.md §1, the folders from
``kb.toml``'s ``[paths]``). A ``.md`` file elsewhere under one of those folders
(``Problems/sub/P001.md``, ``Propos/P001.md``, ``Verified/other/x.md``) is no
object of the KB; :mod:`kb.parse` classifies it as ``misplaced`` and this module
gives its one warning: the file, that kb does not read it, and where such files go.
"""

from __future__ import annotations

from kb.config import Config
from kb.model import Diagnostic

CODE = "KB108"

#: The config folder key -> (what goes there, its layout below the folder).
WHERE = {
    "experiments": ("experiments", "<ID>.md"),
    "problems": ("problem cards", "<id>.md"),
    "propositions": ("proposition cards", "<category>/<id>.md"),
    "methods": ("method cards", "<id>.md"),
    "verified": ("Verified cards", "命题/<id>.md or {folder}问题/<id>.md"),
    "progress": ("progress logs", "<qid>.md or {folder}<qid>/<direction>.md"),
}


def folder_key(path: str, config: Config) -> str | None:
    """The ``[paths]`` key of the deepest configured folder holding ``path`` (None: none)."""
    best: tuple[int, str] | None = None
    for key in WHERE:
        folder = config.paths[key].strip("/")
        if folder in ("", ".") or not path.startswith(folder + "/"):
            continue
        if best is None or len(folder) > best[0]:
            best = (len(folder), key)
    return best[1] if best else None


def misplaced(path: str, config: Config) -> Diagnostic:
    """The KB108 warning for the KB-relative ``path`` (at line 1)."""
    key = folder_key(path, config)
    if key is None:  # (classify sends only files under these folders)
        msg = f"{path} is not read by kb: it is not where kb reads cards or experiments"
    else:
        folder = config.paths[key].strip("/") + "/"
        what, layout = WHERE[key]
        msg = (f"{path} is not read by kb: {what} go directly at "
               f"{folder}{layout.format(folder=folder)}, not elsewhere under {folder}; "
               "move it there (git mv) or out of the folder")
    return Diagnostic(path=path, line=1, col=1, code=CODE, severity="warning", message=msg)
