"""``kb init``: create a knowledge base (DESIGN.md §1).

Writes ``kb.toml``, the tree (its title only), ``DASHBOARD.md`` (exactly what
``kb dashboard`` renders for an empty tree), ``.gitignore`` (``.kb/``) and
``.gitattributes`` (kb's merge drivers for the tree, DASHBOARD.md, TRAIL.md and the
report ``kb report`` writes: :func:`kb.merge.drivers.attribute_lines`, also registered in
the clone's git config).
Runs ``git init`` when the folder is not inside a work tree. Refuses, changing nothing, when a KB exists.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Literal

from kb import git
from kb.config import DEFAULT_PATHS, RESEARCH_PATHS
from kb.errors import RefusedError, UsageError, os_failure
from kb.fileio import read_regular
from kb.render.dashboard import render_dashboard
from kb.resources import template

Layout = Literal["default", "research"]


@dataclass
class InitResult:
    """What :func:`init_kb` did: the KB folder, files written, whether git was initialised."""

    root: Path
    written: list[str] = field(default_factory=list)
    appended: list[str] = field(default_factory=list)
    git_initialised: bool = False
    drivers: dict[str, str] = field(default_factory=dict)


def init_kb(directory: Path, layout: Layout = "default", locale: str = "zh") -> InitResult:
    """Create a KB in ``directory`` (created if missing).

    Raises RefusedError when ``kb.toml`` already exists there (nothing is
    changed), UsageError for an unknown layout or locale, and the kb error of
    :func:`kb.errors.os_failure` (environment for a read-only folder) when the
    folder cannot be created or written (the files it had created are removed).
    """
    if layout not in ("default", "research"):
        raise UsageError(f"unknown layout {layout!r}; use default or research")
    if locale not in ("zh", "en"):
        raise UsageError(f"unknown locale {locale!r}; use zh or en")
    root = directory.resolve()
    if (root / "kb.toml").exists():
        raise RefusedError(f"{root / 'kb.toml'} exists: this folder is already a KB (nothing changed)")
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} is not a folder")
    paths = RESEARCH_PATHS if layout == "research" else DEFAULT_PATHS
    tree_path = root / paths["tree"]
    dash_path = root / paths["dashboard"]
    for p in (tree_path, dash_path):
        if p.exists():
            raise RefusedError(f"{p} exists; move it away or add a kb.toml by hand (nothing changed)")
    result = InitResult(root=root)
    try:
        return _create(root, paths, layout, locale, result)
    except OSError as exc:  # a read-only folder, a file in a folder's place, …
        for rel in result.written:  # what this call created: a second `kb init` starts clean
            with contextlib.suppress(OSError):
                (root / rel).unlink()
        raise os_failure(exc, f"create the KB in {root}", "the files it had created were removed") from None


def _create(root: Path, paths: dict[str, str], layout: str, locale: str,
            result: InitResult) -> InitResult:
    root.mkdir(parents=True, exist_ok=True)
    if git.toplevel(root) is None:
        git.run(["init", "-q"], root, write=True)
        result.git_initialised = True
    name = "kb.research.toml" if layout == "research" else "kb.toml"
    files = {
        "kb.toml": Template(template(name)).substitute(locale=locale),
        paths["tree"]: template("tree.md"),
        paths["dashboard"]: render_dashboard([], [], None, locale),
    }
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", newline="")
        result.written.append(rel)
    _add_lines(root / ".gitignore", template("gitignore").splitlines(), result, ".gitignore")
    from kb.merge.drivers import attribute_lines, card_folders, register

    # The lines come from the one list of kb's drivers, so a KB starts with every one.
    lines = "\n".join(attribute_lines(paths["tree"], paths["dashboard"], paths["logs"],
                                      **card_folders(paths)))
    attrs = Template(template("gitattributes")).substitute(lines=lines)
    _add_lines(root / ".gitattributes", attrs.splitlines(), result, ".gitattributes")

    top = git.toplevel(root)
    if top is not None:
        result.drivers = register(top)  # the drivers .gitattributes names, in this clone
    return result


def _add_lines(path: Path, lines: list[str], result: InitResult, rel: str) -> None:
    """Create ``path`` with ``lines``, or append the ones an existing file lacks."""
    if not path.exists():
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
        result.written.append(rel)
        return
    try:
        old = read_regular(path).decode("utf-8", errors="surrogateescape")
    except OSError as exc:  # a FIFO at .gitignore waited forever; a folder, no permission
        raise os_failure(exc, f"read {rel}", "it was left as it is") from None
    have = set(old.splitlines())
    new = [ln for ln in lines if ln not in have and not ln.startswith("#")]
    if new:
        sep = "" if old.endswith("\n") or not old else "\n"
        path.write_text(old + sep + "\n".join(new) + "\n", encoding="utf-8",
                        errors="surrogateescape", newline="")
        result.appended.append(rel)
