"""``kb.toml``: the marker of a knowledge base and its settings (DESIGN.md §1).

Every key is optional; a file holding only ``[kb]`` is valid. An unknown key
is a warning (KB001), a value of the wrong type a :class:`kb.errors.ConfigError`
naming the key. Paths are relative to the folder holding ``kb.toml`` and use
``/``; a KB written in Vibe Math v3's layout is read by pointing the card
paths at it, e.g. ``problems = "VibeMath/Projects/demo/Problems"``.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

from kb.errors import ConfigError

if TYPE_CHECKING:
    from kb.model import Diagnostic

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: Default hypothesis ID grammar: H<n>(.<n>)*, n >= 1 without leading zeros.
DEFAULT_ID_GRAMMAR = r"H[1-9][0-9]*(?:\.[1-9][0-9]*)*"
#: What the tree parser *recognises* as an ID under the default grammar; the
#: stricter grammar above is a ``kb verify`` rule, so that ``H001`` is read
#: (and its duplicates found) yet reported.
LOOSE_ID = r"H[0-9]+(?:\.[0-9]+)*"

DEFAULT_PATHS = {
    "tree": "tree.md",
    "dashboard": "DASHBOARD.md",
    "experiments": "experiments",
    "problems": "Problems",
    "progress": "Progress",
    "propositions": "Propos",
    "methods": "Methods",
    "verified": "Verified",
    "logs": "Logs",
}

RESEARCH_PATHS = {
    **DEFAULT_PATHS,
    "tree": ".research/tree.md",
    "dashboard": ".research/DASHBOARD.md",
    "experiments": ".research/experiments",
}

_SCHEMA: dict[str, dict[str, type | tuple[type, ...]]] = {
    "kb": {"locale": str, "id_grammar": str, "heading_separators": list, "owner": str},
    "paths": {k: str for k in DEFAULT_PATHS},
    "rules": {"disable": list, "severity": dict, "dashboard_stale": str},
    "verdict": {"mode": str, "threshold": (int, float), "min_votes": int},
    "locks": {"ttl": str, "grace": str, "leads": list, "remote": str, "offline": str},
}


@dataclass(frozen=True)
class Registry:
    """A file holding many records under headings (e.g. a ``problems.md`` log).

    ``heading`` is a regex with groups ``id`` and ``title`` matched against
    heading lines; the ``- key: value`` lines under each heading are its anchors.
    """

    path: str
    kind: str = "record"
    heading: str = r"^#{2,3} (?P<id>\S+) (?P<title>.+)$"


@dataclass(frozen=True)
class Config:
    """The parsed ``kb.toml``. ``root`` is the KB folder (absolute)."""

    root: Path
    locale: str = "zh"
    id_grammar: str = DEFAULT_ID_GRAMMAR
    custom_grammar: bool = False
    heading_separators: tuple[str, ...] = (":", "：")
    owner: str = ""
    paths: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PATHS))
    disabled_rules: frozenset[str] = frozenset()
    severity: dict[str, str] = field(default_factory=dict)
    verdict: dict[str, Any] = field(default_factory=dict)
    locks: dict[str, Any] = field(default_factory=dict)
    registries: tuple[Registry, ...] = ()
    warnings: tuple[Diagnostic, ...] = ()
    #: kb.toml's text, for line numbers only (not part of the configuration's value)
    source: str = field(default="", compare=False, repr=False)

    def line_of(self, section: str, key: str | None = None, default: int = 1) -> int:
        """1-based line of ``[section]`` / ``key`` in kb.toml; ``default`` when absent."""
        return _line_of(self.source, section, key) or default

    @property
    def recognise_grammar(self) -> str:
        """The regex the tree parser uses to recognise declarations."""
        return self.id_grammar if self.custom_grammar else LOOSE_ID


def load_config(root: Path) -> Config:
    """Read ``root/kb.toml``. Raises ConfigError for unreadable TOML or a wrong type."""
    path = root / "kb.toml"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    text, data = read_toml(raw)
    cfg = config_from_dict(root, data, text)
    dirs = _file_paths_that_are_directories(cfg, text)
    return replace(cfg, warnings=cfg.warnings + dirs) if dirs else cfg


def _file_paths_that_are_directories(cfg: Config, text: str) -> tuple[Diagnostic, ...]:
    """KB002 for each file path of the configuration (tree, dashboard) that is a
    directory in the working tree: kb would list nothing and refuse every write."""
    out = []
    for key in ("tree", "dashboard"):
        rel = cfg.paths[key]
        if (cfg.root / rel).is_dir() and not (cfg.root / rel).is_symlink():
            from kb.model import Diagnostic

            out.append(Diagnostic(
                path="kb.toml", line=_line_of(text, "paths", key) or 1, code="KB002", severity="error",
                message=f"{rel} (paths.{key}) is a directory, not a file: kb reads nothing from it "
                        f"and refuses to write it; move the directory away or set [paths] {key}"))
    return tuple(out)


#: Where tomllib says a syntax error is (its message's end, "(at line 3, column 14)",
#: or "(at end of document)").
_TOML_AT = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|(end of document))\)$")


def read_toml(raw: bytes) -> tuple[str, dict[str, Any]]:
    """kb.toml's bytes ``raw`` as ``(text, data)``. A BOM (what some Windows editors write
    first) is no TOML: it is dropped, as kb drops it from Markdown files, and the lines
    stay where they were. Raises ConfigError (:func:`toml_error`) for bytes that are
    not UTF-8 or text that is not TOML."""
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise toml_error(exc) from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(exc, text) from None


def toml_error(exc: Exception, text: str = "") -> ConfigError:
    """The ConfigError of kb.toml text that is not TOML (``exc``: tomllib's error, or
    the UnicodeDecodeError of bytes that are not UTF-8), at its line and column when
    tomllib gives them: ``kb.toml:3:14: not valid TOML: Invalid value`` (at the
    end of ``text``, the file's, when tomllib says "end of document")."""
    msg = str(exc)
    if isinstance(exc, UnicodeDecodeError) and isinstance(exc.object, bytes):
        line = exc.object.count(b"\n", 0, exc.start) + 1
        return ConfigError(f"kb.toml:{line}: not UTF-8 text: {exc.reason} (byte "
                           f"0x{exc.object[exc.start]:02x}); re-save it as UTF-8", line)
    at = _TOML_AT.search(msg)
    if at is None:
        return ConfigError(f"kb.toml: not valid TOML: {msg}")
    if at.group(3):  # never closed: at the end of the file
        line = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        where = f"kb.toml:{line}:" if line else "kb.toml:"
        return ConfigError(f"{where} not valid TOML: {msg[:at.start()]} (at the end of the "
                           "file)", line)
    line, col = int(at.group(1)), int(at.group(2))
    return ConfigError(f"kb.toml:{line}:{col}: not valid TOML: {msg[:at.start()]}", line, col)


def _bad(text: str, section: str, key: str | None, message: str) -> ConfigError:
    """A ConfigError about ``[section] key`` (``key`` None: the table), at its line of
    kb.toml's ``text`` when it is found there."""
    line = _line_of(text, section, key) if text else 0
    if not line and "." in section:  # a key of an inline table: the line of that table
        outer, _, inner = section.rpartition(".")
        line = _line_of(text, outer, inner) if text else 0
    return ConfigError(f"kb.toml:{line}: {message}" if line else f"kb.toml: {message}", line)


def _line_of(text: str, section: str, key: str | None) -> int:
    """1-based line of ``[section]`` (or of ``key`` inside it) in kb.toml; 0 if not found.
    ``section`` ``""``: the top level, before any table. ``section`` ``"[registry]"``
    with ``key`` ``"N"`` or ``"N.key"``: the header of the array's table N (0-based),
    ``[[registry]]``, or that key's line in it."""
    if section == "[registry]" and key is not None:
        n, _, name = key.partition(".")
        lines = text.splitlines()
        heads = [i for i, raw in enumerate(lines, 1) if raw.strip().replace(" ", "") == "[[registry]]"]
        if int(n) >= len(heads):
            return 0
        start = heads[int(n)]
        if name:
            for i in range(start, len(lines)):
                if lines[i].strip().startswith("["):
                    break
                if re.match(rf'["\']?{re.escape(name)}["\']?\s*=', lines[i].strip()):
                    return i + 1
        return start
    in_section = section == ""
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("["):
            in_section = line.strip("[] ") == section
            if in_section and key is None:
                return i
            continue
        if in_section and key is not None and re.match(rf'["\']?{re.escape(key)}["\']?\s*=', line):
            return i
    return 0


def config_from_dict(root: Path, data: dict[str, Any], text: str = "") -> Config:
    """Build a :class:`Config` from parsed TOML (see :func:`load_config`).

    ``text`` is the file's text, used only to give warnings their line numbers.

    Raises ConfigError (environment, exit 2) for a table or value of the wrong type, an unknown
    locale or severity, a regex that does not compile, or a path that leaves the KB folder.
    """
    warnings: list[Diagnostic] = []
    for section, body in data.items():
        if section == "registry":
            continue
        if section not in _SCHEMA:
            warnings.append(_unknown(f"[{section}]", _line_of(text, section, None)))
            continue
        if not isinstance(body, dict):
            where = section if _line_of(text, section, None) else ""  # `kb = 3`: top level
            raise _bad(text, where, None if where else section, f"[{section}] must be a table")
        for key, value in body.items():
            want = _SCHEMA[section].get(key)
            if want is None:
                warnings.append(_unknown(f"{section}.{key}", _line_of(text, section, key)))
            elif not isinstance(value, want) or isinstance(value, bool) and want is not bool:
                raise _bad(text, section, key,
                           f"{section}.{key} must be {_tname(want)}, not {type(value).__name__}")
            elif want is list and any(not isinstance(v, str) for v in value):
                bad = next(v for v in value if not isinstance(v, str))
                raise _bad(text, section, key, f"{section}.{key} must be a list of strings, "
                           f"and {bad!r} is {type(bad).__name__}")
    kb = data.get("kb", {})
    locale = kb.get("locale", "zh")
    if locale not in ("zh", "en"):
        raise _bad(text, "kb", "locale", f"kb.locale must be 'zh' or 'en', not {locale!r}")
    grammar = kb.get("id_grammar")
    if grammar is not None:
        if not grammar.strip():
            raise _bad(text, "kb", "id_grammar", "kb.id_grammar is empty: write a regex for the "
                       "hypothesis IDs, or leave the key out for the default")
        try:
            re.compile(grammar)
        except re.error as exc:
            raise _bad(text, "kb", "id_grammar",
                       f"kb.id_grammar is not a valid regex: {exc}") from None
    seps = tuple(kb.get("heading_separators", [":", "："]))
    if not seps or not all(x.strip() for x in seps):
        raise _bad(text, "kb", "heading_separators", "kb.heading_separators must list at least "
                   "one separator, none blank (the default is [\":\", \"：\"])")
    paths = dict(DEFAULT_PATHS)
    paths.update(data.get("paths", {}))
    for key, value in paths.items():
        try:
            check_inside(value, f"paths.{key}")
        except ConfigError as exc:
            raise _bad(text, "paths", key, str(exc).removeprefix("kb.toml: ")) from None
    rules = data.get("rules", {})
    severity = {}
    for code, sev in rules.get("severity", {}).items():
        if sev not in ("error", "warning", "info", "off"):
            raise _bad(text, "rules.severity", code,
                       f"rules.severity.{code} must be error|warning|info|off")
        severity[code] = sev
    if "dashboard_stale" in rules:
        severity.setdefault("KB240", rules["dashboard_stale"])
    regs = []
    if not isinstance(data.get("registry", []), list):
        where = "registry" if _line_of(text, "registry", None) else ""
        raise _bad(text, where, None if where else "registry",
                   "registry must be an array of tables ([[registry]] sections)")
    for i, reg in enumerate(data.get("registry", []) or []):
        if not isinstance(reg, dict) or "path" not in reg:
            raise _bad(text, "[registry]", str(i), f"[[registry]] #{i + 1} needs a path")
        for key in ("path", "kind", "heading"):
            if key in reg and not isinstance(reg[key], str):
                raise _bad(text, "[registry]", f"{i}.{key}", f"[[registry]] #{i + 1} {key} must "
                           f"be a string, not {type(reg[key]).__name__}")
        try:
            pattern = re.compile(reg.get("heading", Registry.heading))
        except re.error as exc:
            raise _bad(text, "[registry]", f"{i}.heading",
                       f"registry heading is not a valid regex: {exc}") from None
        if "id" not in pattern.groupindex:
            raise _bad(text, "[registry]", f"{i}.heading", f"[[registry]] #{i + 1} heading must "
                       "name each record's ID with a group (?P<id>…), e.g. "
                       "'^## (?P<id>\\S+) (?P<title>.+)$'")
        try:
            check_inside(str(reg["path"]), f"registry #{i + 1} path")
        except ConfigError as exc:
            raise _bad(text, "[registry]", f"{i}.path", str(exc).removeprefix("kb.toml: ")) from None
        regs.append(Registry(path=reg["path"], kind=reg.get("kind", "record"),
                             heading=reg.get("heading", Registry.heading)))
    return Config(
        root=root,
        locale=locale,
        id_grammar=grammar or DEFAULT_ID_GRAMMAR,
        custom_grammar=grammar is not None,
        heading_separators=seps,
        owner=kb.get("owner", ""),
        paths=paths,
        disabled_rules=frozenset(rules.get("disable", [])),
        severity=severity,
        verdict=dict(data.get("verdict", {})),
        locks=dict(data.get("locks", {})),
        registries=tuple(regs),
        warnings=tuple(warnings),
        source=text,
    )


#: A drive (``C:``) or UNC start: absolute on Windows.
_DRIVE = re.compile(r"^(?:[A-Za-z]:|[\\/]{2})")


def check_inside(value: str, key: str) -> str:
    """Refuse a configured path that could leave the KB folder or enter ``.git``.

    A path is KB-relative with ``/``: not empty, not absolute (``/x``, ``C:``,
    UNC), no ``..`` component and no ``.git`` component (any case: some file
    systems ignore it), ``\\`` counting as a separator as on Windows.
    Raises ConfigError naming ``key``; returns ``value``.
    """
    parts = value.replace("\\", "/").split("/")
    why = None
    if not value.strip():
        why = "is empty"
    elif "\0" in value:
        why = "holds a NUL character"
    elif value.startswith(("/", "\\")) or _DRIVE.match(value):
        why = "is absolute"
    elif ".." in parts:
        why = "leaves the KB folder ('..')"
    elif any(x.strip().rstrip(".").lower() == ".git" for x in parts):
        why = "is inside .git"
    if why:
        raise ConfigError(f"kb.toml: {key} = {value!r} {why}: every configured path must stay "
                          "inside the KB folder and outside .git (nothing was read or written)")
    return value


def _unknown(key: str, line: int = 0) -> Diagnostic:
    from kb.model import Diagnostic

    return Diagnostic(path="kb.toml", line=line, code="KB001", severity="warning",
                      message=f"unknown key {key} in kb.toml (ignored)")


def _tname(t: type | tuple[type, ...]) -> str:
    names = {str: "a string", list: "an array", dict: "a table", int: "an integer",
             float: "a number", bool: "a boolean"}
    if isinstance(t, tuple):
        return " or ".join(names.get(x, x.__name__) for x in t)
    return names.get(t, t.__name__)
