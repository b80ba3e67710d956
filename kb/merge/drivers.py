"""kb's git merge drivers and their registration in a clone.

Five drivers, named by ``.gitattributes`` (``kb init`` writes the lines,
``kb hooks install`` and ``kb sync`` add those an older KB lacks) and defined
in each clone's git config (``kb init``, ``kb hooks install`` and ``kb sync``
register them; git config is never shared by a push):

- ``kb-tree`` — tree.md, merged block by block (:mod:`kb.merge.tree`);
- ``kb-dashboard`` — DASHBOARD.md, regenerated from the merged tree and
  experiments of the two commits being merged (:mod:`kb.merge.run`);
- ``kb-trail`` — TRAIL.md, rendered again from the merged exploration log of
  the two commits being merged (:mod:`kb.merge.run`);
- ``kb-report`` — the project report ``<logs>/报告.md`` (:func:`report_path`):
  our side is kept, with a hint to run ``kb report``. It is built from the whole KB
  (cards, verification records) and carries a date, which a driver cannot rebuild
  mid-merge; it is a view, so nothing is lost;
- ``kb-card`` — the problem and proposition cards (``<problems>/*.md``,
  ``<propositions>/**/*.md``): merged line by line by git once a problem's derived
  ``被依赖`` line holds both sides' IDs, and when that stops, with the entries each side
  added kept whole (:mod:`kb.merge.card`).

Every file kb generates whole has a driver here: two branches that both
regenerated it (``kb dashboard``, ``kb trail render``, ``kb report``) would otherwise
stop a merge on a line conflict in a file nobody edits by hand. So has the one line
kb derives inside cards people edit: two branches that each added a problem
depending on one card would otherwise conflict on its ``被依赖``.

A forge's merge button runs none of them: what they would do must also be caught
without them (``kb verify --range --against`` in CI) and repaired locally
(``kb sync``). ``kb verify`` warns (KB245) when ``.gitattributes`` names a kb
driver this clone has not registered.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, NamedTuple, Optional

from kb import git
from kb.trail.files import TRAIL_FILE

#: driver name -> (git config ``name``, the kind passed to ``kb merge-driver``).
DRIVERS = {
    "kb-tree": ("kb: tree.md merged hypothesis by hypothesis (kb merge-driver tree)", "tree"),
    "kb-dashboard": ("kb: DASHBOARD.md regenerated from the merged tree (kb merge-driver dashboard)",
                     "dashboard"),
    "kb-trail": ("kb: TRAIL.md rendered from the merged exploration log (kb merge-driver trail)",
                 "trail"),
    "kb-report": ("kb: the project report keeps our side; run `kb report` after the merge "
                  "(kb merge-driver report)", "report"),
    "kb-card": ("kb: problem cards merged line by line, 被依赖 from both sides (kb merge-driver card)",
                "card"),
}
#: The project report's file name, in the KB's logs folder (``kb report``).
REPORT_FILE = "报告.md"
#: What earlier kb versions registered for kb-dashboard (keep ours); upgraded in place.
LEGACY = ("true",)
_ATTR = re.compile(r"^\s*(\S+)\s.*\bmerge=(kb-[\w-]+)")


def driver_command(kind: str, python: Optional[str] = None) -> str:
    """The ``merge.<name>.driver`` value: kb's interpreter runs ``kb merge-driver``."""
    py = shlex.quote(python or sys.executable)
    return f"{py} -m kb_cli.merge_driver {kind} %O %A %B %P"


def is_kb_command(value: Optional[str]) -> bool:
    """Was ``value`` (a driver command) written by kb?"""
    return value is not None and (value in LEGACY or "kb_cli.merge_driver" in value)


def _get(top: Path, key: str) -> Optional[str]:
    proc = git.run(["config", "--get", key], top, check=False)
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None


#: The git config key (``merge.<driver>.<key>``) that says ``kb hooks install`` defined the
#: driver: ``kb hooks uninstall`` removes only those (``kb init`` and ``kb sync`` define
#: the drivers ``.gitattributes`` names, and they stay). git ignores keys it does not know.
INSTALLED_KEY = "kbHooksInstall"


def register(top: Path, python: Optional[str] = None, mark: bool = False) -> dict[str, str]:
    """Define kb's drivers in the clone's git config (``.git/config``).

    ``mark``: note (:data:`INSTALLED_KEY`) each driver this call newly defines, so that
    :func:`unregister` with ``only_marked`` removes exactly those.

    Returns driver name -> ``registered`` | ``updated`` | ``already registered`` |
    ``left as configured (<cmd>)`` (a driver someone defined by hand is kept).
    """
    out = {}
    for name, (label, kind) in DRIVERS.items():
        want = driver_command(kind, python)
        have = _get(top, f"merge.{name}.driver")
        if have == want:
            out[name] = "already registered"
            continue
        if have is not None and not is_kb_command(have):
            out[name] = f"left as configured ({have})"
            continue
        git.run(["config", f"merge.{name}.name", label], top, write=True)
        git.run(["config", f"merge.{name}.driver", want], top, write=True)
        if mark and have is None:
            git.run(["config", f"merge.{name}.{INSTALLED_KEY}", "true"], top, write=True)
        out[name] = "updated" if have is not None else "registered"
    return out


def unregister(top: Path, only_marked: bool = False) -> dict[str, str]:
    """Remove the drivers kb defined (a hand-made definition is left alone); with
    ``only_marked``, only those ``register(mark=True)`` defined (``kb hooks install``)."""
    out = {}
    for name in DRIVERS:
        have = _get(top, f"merge.{name}.driver")
        if have is None:
            out[name] = "not registered"
        elif only_marked and is_kb_command(have) and _get(top, f"merge.{name}.{INSTALLED_KEY}") is None:
            out[name] = "kept (`kb hooks install` did not register it)"
        elif is_kb_command(have):
            git.run(["config", "--remove-section", f"merge.{name}"], top, write=True, check=False)
            out[name] = "unregistered"
        else:
            out[name] = "not kb's: left alone"
    return out


def registered(top: Path) -> dict[str, bool]:
    """Driver name -> is it defined in this clone's git config."""
    return {name: _get(top, f"merge.{name}.driver") is not None for name in DRIVERS}


def report_path(logs: str) -> str:
    """Where ``kb report`` writes, relative to the KB folder, given kb.toml's ``[paths] logs``:
    one definition for the report (:mod:`kb.views.report`) and its ``.gitattributes`` line."""
    folder = logs.strip("/")
    return REPORT_FILE if folder in ("", ".") else f"{folder}/{REPORT_FILE}"


class Covered(NamedTuple):
    """One ``.gitattributes`` line of a KB: what it names (a file, or a folder's cards as
    ``Problems/*.md``), a path it covers, and its driver (paths relative to the KB folder)."""

    shown: str
    sample: str
    driver: str
    line: str


def covered(tree: str, dashboard: str, logs: str, problems: Optional[str] = None,
            propositions: Optional[str] = None) -> list[Covered]:
    """What kb's ``.gitattributes`` lines name in a KB (:func:`attribute_lines`)."""
    named = ((dashboard, "kb-dashboard"), (tree, "kb-tree"), (TRAIL_FILE, "kb-trail"),
             (report_path(logs), "kb-report"))
    out = [Covered(p, p, driver, f"{attribute_pattern(p)} merge={driver}")
           for p, driver in named if not p.endswith("/")]
    folder = (problems or "").strip("/")
    if folder and folder != ".":
        out.append(Covered(f"{folder}/*.md", f"{folder}/q1.md", "kb-card",
                           f"{attribute_pattern(folder + '/', glob='*.md')} merge=kb-card"))
    folder = (propositions or "").strip("/")
    if folder and folder != ".":  # a proposition lies in a category folder under it
        out.append(Covered(f"{folder}/**/*.md", f"{folder}/c/p1.md", "kb-card",
                           f"{attribute_pattern(folder + '/', glob='**/*.md')} merge=kb-card"))
    return out


def card_folders(paths: Mapping[str, str]) -> dict[str, str]:
    """The card folders of kb.toml's ``[paths]`` that kb's card driver merges, as
    :func:`covered` and :func:`attribute_lines` take them (``problems``, ``propositions``)."""
    return {"problems": paths["problems"], "propositions": paths["propositions"]}


def attribute_lines(tree: str, dashboard: str, logs: str,
                    problems: Optional[str] = None, propositions: Optional[str] = None) -> list[str]:
    """The ``.gitattributes`` lines of a KB (paths relative to the KB folder, where that
    file is): one per driver (TRAIL.md is always at the KB root; the report is in the
    ``logs`` folder, :func:`report_path`); a path ending in ``/`` names a folder, not the
    file (kb.toml's KB004): no line for it. ``problems`` (kb.toml's ``[paths] problems``)
    adds the cards' line, ``<problems>/*.md merge=kb-card`` (no file of the other lines
    lies there: kb.toml keeps the tree and dashboard out of record folders); none when
    the cards lie in the KB folder itself (``*.md`` there would name every Markdown
    file of the KB). ``propositions`` adds ``<propositions>/**/*.md merge=kb-card``
    (their cards lie in category folders): entries both sides added merge there too."""
    return [c.line for c in covered(tree, dashboard, logs, problems, propositions)]


def uncovered(top: Path, prefix: str, lines: list[Covered]) -> list[Covered]:
    """Those of ``lines`` whose path git gives no kb driver while it gives one to another
    (the KB uses kb's drivers, and a ``[paths]`` setting moved past its line): one
    ``git check-attr``, which reads every ``.gitattributes`` as git will. ``prefix`` is the
    KB folder's path in the repository. Empty when git gives kb's drivers to none."""
    if not lines:
        return []
    paths = [prefix + c.sample for c in lines]
    proc = git.run(["check-attr", "-z", "merge", "--", *paths], top, check=False)
    if proc.returncode != 0:
        return []
    got: dict[str, str] = {}
    fields = proc.stdout.split(b"\0")
    for i in range(0, len(fields) - 2, 3):  # path NUL attribute NUL value NUL
        got[fields[i].decode("utf-8", "surrogateescape")] = fields[i + 2].decode("utf-8", "replace")
    if not any(v.startswith("kb-") for v in got.values()):
        return []
    return [c for c, p in zip(lines, paths) if got.get(p) != c.driver]


_GLOB_CHARS = re.compile(r"[*?\[\\]")
_NEEDS_QUOTES = re.compile(r'[\s"\\]')


def attribute_pattern(path: str, glob: str = "") -> str:
    """``path`` (a file, relative to the KB folder) as a ``.gitattributes`` pattern that
    matches that one file: glob characters and a leading ``#`` or ``!`` escaped with a
    backslash, and the whole C-quoted when it holds white space, a quote or a backslash
    (git splits an unquoted line at white space: ``Lab notes/tree.md merge=kb-tree``
    would name the attribute ``notes/tree.md``). ``glob`` is appended unescaped
    (``Problems/`` and ``*.md``: the folder's Markdown files)."""
    pattern = _GLOB_CHARS.sub(lambda m: "\\" + m.group(0), path) + glob
    if pattern[:1] in ("#", "!"):
        pattern = "\\" + pattern
    if not _NEEDS_QUOTES.search(pattern):
        return pattern
    quoted = pattern.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    return f'"{quoted}"'


def ensure_attributes(kb_root: Path, tree: str, dashboard: str, logs: str,
                      problems: Optional[str] = None, propositions: Optional[str] = None) -> bool:
    """Append the driver lines ``kb_root/.gitattributes`` lacks. True if it changed."""
    path = kb_root / ".gitattributes"
    old = path.read_text(encoding="utf-8", errors="surrogateescape") if path.exists() else ""
    have = {ln.strip() for ln in old.splitlines()}
    new = [ln for ln in attribute_lines(tree, dashboard, logs, problems, propositions)
           if ln not in have]
    if not new:
        return False
    sep = "" if old.endswith("\n") or not old else "\n"
    path.write_text(old + sep + "\n".join(new) + "\n", encoding="utf-8", errors="surrogateescape",
                    newline="")
    return True


@dataclass(frozen=True)
class MissingDriver:
    """A ``.gitattributes`` line naming a kb driver this clone has not defined."""

    path: str
    line: int
    driver: str


def missing_drivers(top: Path, kb_root: Path) -> list[MissingDriver]:
    """kb drivers named by the ``.gitattributes`` of ``kb_root`` and its parents up
    to ``top`` that this clone's git config does not define (git would fall back
    to a line merge, and conflict)."""
    have = registered(top)
    out = []
    d = kb_root.resolve()
    top = top.resolve()
    while True:
        f = d / ".gitattributes"
        try:
            text = f.read_text(encoding="utf-8", errors="replace") if f.is_file() else ""
        except OSError:  # unreadable: git cannot read it either, so it names no driver
            text = ""
        if text:
            for n, ln in enumerate(text.splitlines(), 1):
                m = _ATTR.match(ln)
                if m and not have.get(m.group(2), False):
                    rel = Path(os.path.relpath(f, kb_root.resolve())).as_posix()
                    out.append(MissingDriver(rel, n, m.group(2)))
        if d == top or d.parent == d:
            break
        d = d.parent
    return out
