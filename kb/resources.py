"""Files shipped with kb: ``templates/`` and ``hooks/``.

In a wheel they are installed inside the package (``kb._templates``,
``kb._hooks``); in a source checkout they are the top-level folders. Both
are found without an editable install.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _folder(package: str, source_dir: str) -> Path:
    try:
        p = Path(str(resources.files(package)))
        if p.is_dir():
            return p
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / source_dir


def templates_dir() -> Path:
    """The folder holding kb's Markdown and config templates."""
    return _folder("kb._templates", "templates")


def hooks_dir() -> Path:
    """The folder holding kb's git hook scripts."""
    return _folder("kb._hooks", "hooks")


def template(name: str) -> str:
    """The text of template ``name`` (UTF-8). Raises FileNotFoundError if absent."""
    return (templates_dir() / name).read_text(encoding="utf-8")
