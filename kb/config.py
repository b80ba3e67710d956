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
from kb.fileio import read_regular

if TYPE_CHECKING:
    from kb.model import Diagnostic
    from kb.parse.regex_safety import Backtracking

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
    # (No "threshold": VIBEMATH-V3 fixes the near-consensus bounds at 0.85/0.15; a key kb
    # accepted and never read looked like a setting. It is an unknown key now: a warning.)
    "verdict": {"mode": str, "min_votes": int},
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
        """1-based line of ``[section]`` / ``key`` in kb.toml, in any form of table
        (:func:`_key_line`); ``default`` when absent."""
        return _key_line(self.source, section, key) or default

    def severity_line(self, code: str) -> int:
        """kb.toml's 1-based line that sets ``code``'s severity (``[rules.severity] KBnnn = …``,
        an inline ``severity = {…}``, a dotted key, or ``dashboard_stale`` for KB240); 1 when
        none does."""
        line = _line_of(self.source, "rules.severity", code) or self.code_line(code)
        if line:
            return line
        for section, key in (("rules", "severity"),
                             *((("rules", "dashboard_stale"),) if code == "KB240" else ()),
                             ("rules", None)):
            line = _line_of(self.source, section, key)
            if line:
                return line
        return 1

    def code_line(self, code: str) -> int:
        """The 1-based line of kb.toml naming rule ``code`` (``"KB216"`` in a ``disable``
        array, one code a line or not, or ``KB216 =`` in any form of table); 0 if none."""
        quoted = re.compile(rf'"{re.escape(code)}"|\'{re.escape(code)}\'')
        lines = [(i, raw) for i, raw in enumerate(self.source.splitlines(), 1)
                 if not raw.lstrip().startswith("#")]
        for named in (quoted, _assigning(code)):
            for i, raw in lines:
                if named.search(raw):
                    return i
        return 0

    @property
    def recognise_grammar(self) -> str:
        """The regex the tree parser uses to recognise declarations."""
        return self.id_grammar if self.custom_grammar else LOOSE_ID


def load_config(root: Path) -> Config:
    """Read ``root/kb.toml``. Raises ConfigError for unreadable TOML or a wrong type."""
    path = root / "kb.toml"
    try:
        raw = read_regular(path)
    except OSError as exc:  # (a FIFO: SpecialFileError, "it is a FIFO …", never waited on)
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
        marker = next((n for n, ln in enumerate(text.splitlines(), 1)
                       if ln.startswith(("<<<<<<< ", ">>>>>>> ")) or ln.rstrip() == "======="), 0)
        if marker:  # a merge stopped on kb.toml: say that, not "Invalid statement"
            raise _at(marker, "a merge left conflict markers in kb.toml: keep the lines you want, "
                              "delete the <<<<<<< ======= >>>>>>> lines, then `git add kb.toml`") from None
        raise toml_error(exc, text) from None
    except ValueError:  # tomllib reads a number of more than 4,300 digits with int(): refused
        line = next((n for n, ln in enumerate(text.splitlines(), 1) if _LONG_NUMBER.search(ln)), 0)
        raise _at(line, "not valid TOML: a number of more than 4,300 digits") from None
    except RecursionError:  # `x = [[[[…` 500 deep: tomllib recurses once per level (exit 3)
        lines = text.splitlines() or [""]
        line = max(range(len(lines)), key=lambda n: lines[n].count("[") + lines[n].count("{")) + 1
        raise _at(line, "not TOML kb can read: arrays or tables nested too deeply") from None


_LONG_NUMBER = re.compile(r"\d{4301}")


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


def _at(line: int, message: str) -> ConfigError:
    """A ConfigError at kb.toml's ``line`` (0: unknown, the message names the file alone)."""
    return ConfigError(f"kb.toml:{line}: {message}" if line else f"kb.toml: {message}", line)


def _key_line(text: str, section: str, key: str | None) -> int:
    """:func:`_line_of`, and for a key of an inline table (``severity = { KB101 = … }``,
    ``section`` ``rules.severity``) or a top-level value where a table belongs
    (``kb = 3``) the line of that value."""
    line = _line_of(text, section, key)
    if not line and key is None:
        line = _line_of(text, "", section)
    if not line and "." in section:
        outer, _, inner = section.rpartition(".")
        line = _line_of(text, outer, inner)
    return line or _loose_line(text, section, key)


def _loose_line(text: str, section: str, key: str | None) -> int:
    """For the forms the table walk does not follow (``paths = { tree = … }`` at the top,
    a dotted ``rules.severity.KB1 = …``, ``registry = [ { … } ]``): the first line from
    the first naming the section's last part that assigns ``key`` (``key`` None: that
    line); 0 if there is none."""
    name = re.compile(rf"(?<![\w-]){re.escape(section.rpartition('.')[2])}(?![\w-])")
    lines = text.splitlines()
    start = next((i for i, raw in enumerate(lines)
                  if not raw.lstrip().startswith("#") and name.search(raw)), None)
    if start is None:
        return 0
    if key is None:
        return start + 1
    assigns = _assigning(key)
    for i in range(start, len(lines)):
        if not lines[i].lstrip().startswith("#") and assigns.search(lines[i]):
            return i + 1
    return 0


def _registry_line(text: str, n: int, key: str | None = None) -> int:
    """1-based line of kb.toml's ``n``-th (0-based) ``[[registry]]`` header, or of its
    ``key`` (an inline array of tables: see :func:`_loose_line`); 0 if not found."""
    lines = text.splitlines()
    heads = [i for i, raw in enumerate(lines, 1) if raw.strip().replace(" ", "") == "[[registry]]"]
    if not heads:  # ``registry = [ { … } ]``: its line, or the first table's ``key``
        return _loose_line(text, "registry", key if n == 0 else None)
    if n >= len(heads):
        return 0
    if key is not None:
        pattern = _assigning(key)
        for i in range(heads[n], len(lines)):
            if lines[i].strip().startswith("["):
                break
            if pattern.match(lines[i].strip()):
                return i + 1
    return heads[n]


def _assigning(key: str) -> re.Pattern[str]:
    """A TOML line assigning ``key`` (bare or quoted), or a dotted key under it
    (``key.x = …``), at the line's start for ``match``, anywhere for ``search``."""
    return re.compile(rf'(?<![\w-])["\']?{re.escape(key)}["\']?\s*[=.]')


def _line_of(text: str, section: str, key: str | None) -> int:
    """1-based line of ``[section]`` (or of ``key`` inside it) in kb.toml; 0 if not found.
    ``section`` ``""``: the top level, before any table."""
    in_section = section == ""
    pattern = _assigning(key) if key is not None else None
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("["):
            in_section = line.strip("[] ") == section
            if in_section and key is None:
                return i
            continue
        if in_section and pattern is not None and pattern.match(line):
            return i
    return 0


def config_from_dict(root: Path, data: dict[str, Any], text: str = "") -> Config:
    """Build a :class:`Config` from parsed TOML (see :func:`load_config`).

    ``text`` is the file's text, used only to give warnings their line numbers.

    Raises ConfigError (environment, exit 2) for a table or value of the wrong type, an unknown
    locale or severity, a regex that does not compile or can backtrack catastrophically
    (exponential time on a long heading), or a path that leaves the KB folder.
    """
    warnings: list[Diagnostic] = []
    for section, body in data.items():
        if section == "registry":
            continue
        if section not in _SCHEMA:
            warnings.append(_not_read(_key_line(text, section, None), f"unknown key [{section}] in kb.toml"))
            continue
        if not isinstance(body, dict):
            raise _at(_key_line(text, section, None), f"[{section}] must be a table")
        for key, value in body.items():
            want = _SCHEMA[section].get(key)
            if want is None:
                warnings.append(_not_read(_key_line(text, section, key),
                                          f"unknown key {section}.{key} in kb.toml"))
            elif not isinstance(value, want) or isinstance(value, bool) and want is not bool:
                raise _at(_key_line(text, section, key),
                           f"{section}.{key} must be {_tname(want)}, not {type(value).__name__}")
            elif want is list and any(not isinstance(v, str) for v in value):
                bad = next(v for v in value if not isinstance(v, str))
                raise _at(_key_line(text, section, key), f"{section}.{key} must be a list of strings, "
                           f"and {bad!r} is {type(bad).__name__}")
    _check_locks(data.get("locks", {}), text)
    kb = data.get("kb", {})
    locale = kb.get("locale", "zh")
    if locale not in ("zh", "en"):
        raise _at(_key_line(text, "kb", "locale"), f"kb.locale must be 'zh' or 'en', not {locale!r}")
    grammar = kb.get("id_grammar")
    if grammar is not None:
        if not grammar.strip():
            raise _at(_key_line(text, "kb", "id_grammar"), "kb.id_grammar is empty: write a regex for the "
                       "hypothesis IDs, or leave the key out for the default")
        _check_embedded_grammar(grammar, _key_line(text, "kb", "id_grammar"))
        _refuse_backtracking(grammar, _key_line(text, "kb", "id_grammar"), "kb.id_grammar",
                             " (or leave the key out for the default)")
        _refuse_empty_id(grammar, _key_line(text, "kb", "id_grammar"))
    seps = tuple(kb.get("heading_separators", [":", "："]))
    if not seps or not all(x.strip() for x in seps):
        raise _at(_key_line(text, "kb", "heading_separators"), "kb.heading_separators must list at least "
                   "one separator, none blank (the default is [\":\", \"：\"])")
    paths = dict(DEFAULT_PATHS)
    # Only the keys kb reads: another is KB001 above, and its value (of any type) is no path.
    paths.update((key, value) for key, value in data.get("paths", {}).items() if key in DEFAULT_PATHS)
    for key, value in paths.items():
        why = outside_reason(value)
        if why:
            raise _at(_key_line(text, "paths", key), _outside_message(f"paths.{key}", value, why))
        paths[key] = tidy_path(value)
    _refuse_shared_paths(paths, data.get("paths", {}), text)
    rules = data.get("rules", {})
    severity = {}
    for code, sev in rules.get("severity", {}).items():
        if sev not in ("error", "warning", "info", "off"):
            raise _at(_key_line(text, "rules.severity", code),
                       f"rules.severity.{code} must be error|warning|info|off")
        severity[code] = sev
    if "dashboard_stale" in rules:
        severity.setdefault("KB240", rules["dashboard_stale"])
    regs = []
    if not isinstance(data.get("registry", []), list):
        raise _at(_key_line(text, "registry", None), "registry must be an array of tables ([[registry]] sections)")
    for i, reg in enumerate(data.get("registry", []) or []):
        if not isinstance(reg, dict) or "path" not in reg:
            raise _at(_registry_line(text, i), f"[[registry]] #{i + 1} needs a path")
        for key in ("path", "kind", "heading"):
            if key in reg and not isinstance(reg[key], str):
                raise _at(_registry_line(text, i, key), f"[[registry]] #{i + 1} {key} must "
                           f"be a string, not {type(reg[key]).__name__}")
        try:
            pattern = re.compile(reg.get("heading", Registry.heading))
        except (re.error, RecursionError, OverflowError) as exc:  # too deep or too large too
            raise _at(_registry_line(text, i, "heading"),
                      f"registry heading is not a valid regex: {exc}") from None
        if "id" not in pattern.groupindex:
            raise _at(_registry_line(text, i, "heading"), f"[[registry]] #{i + 1} heading must "
                       "name each record's ID with a group (?P<id>…), e.g. "
                       "'^## (?P<id>\\S+) (?P<title>.+)$'")
        _refuse_backtracking(pattern.pattern, _registry_line(text, i, "heading"),
                             f"[[registry]] #{i + 1} heading", whole_line=True)
        if _may_be_empty(pattern.pattern, "id"):
            raise _at(_registry_line(text, i, "heading"), f"[[registry]] #{i + 1} heading "
                      f"`{pattern.pattern}` can leave its (?P<id>…) group empty or skip it, so a "
                      "heading it matches could be a record with an empty ID; make the group read "
                      "at least one character on every match, e.g. `^## (?P<id>\\S+) (?P<title>.+)$`")
        why = outside_reason(str(reg["path"]))
        if why:
            raise _at(_registry_line(text, i, "path"),
                      _outside_message(f"registry #{i + 1} path", str(reg["path"]), why))
        taken = _registry_shadowed(str(reg["path"]), paths)
        if taken is not None:
            warnings.append(_not_read(_registry_line(text, i, "path"), f"[[registry]] #{i + 1} path = "
                                      f"{reg['path']!r} is read as {taken}, not as a registry"))
        if reg.get("kind", "record") != "record":
            warnings.append(_not_read(_registry_line(text, i, "kind"), f"[[registry]] #{i + 1} kind = "
                                      f"{reg['kind']!r}: a registry's entries are records (kind "
                                      "'record'); no other kind is read from it"))
        regs.append(Registry(path=tidy_path(reg["path"]), kind=reg.get("kind", "record"),
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
        verdict=_verdict_settings(data["verdict"], text, warnings) if data.get("verdict") else {},
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
    why = outside_reason(value)
    if why:
        raise _at(0, _outside_message(key, value, why))
    return value


def tidy_path(value: str) -> str:
    """``value``, a configured path inside the KB, without ``.`` and empty segments
    (``./tree.md`` -> ``tree.md``, ``Logs//x`` -> ``Logs/x``), a trailing ``/`` kept (it says
    "a folder": KB004 for a file key); ``.`` itself kept (the KB's top). Every reader
    compares paths as git lists them, where ``./tree.md`` named no file: the tree read as
    empty and every check passed."""
    if "/" not in value and value != "." or "./" not in value and "//" not in value \
            and not value.endswith("/."):
        return value
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if not parts:
        return "."
    return "/".join(parts) + ("/" if value.endswith("/") else "")


def _place(value: str) -> str:
    """The file or folder configured path ``value`` names, to compare with another:
    normalised, no blanks or ``/`` at its ends (``.``: the KB's top)."""
    import posixpath

    return posixpath.normpath(value.strip().strip("/") or ".")


def outside_reason(value: str) -> str | None:
    """Why ``value``, a path meant inside the KB, is refused (:func:`check_inside`; the MCP
    gen tools' sandbox too), or None."""
    parts = value.replace("\\", "/").split("/")
    if not value.strip():
        return "is empty"
    if "\0" in value:
        return "holds a NUL character"
    if value.startswith(("/", "\\")) or _DRIVE.match(value):
        return "is absolute"
    if ".." in parts:
        return "leaves the KB folder ('..')"
    if any(x.strip().rstrip(".").lower() == ".git" for x in parts):
        return "is inside .git"
    return None


def _verdict_settings(verdict: dict[str, Any], text: str, warnings: list[Diagnostic]) -> dict[str, Any]:
    """``[verdict]`` less the values kb cannot use, each a KB001 warning at its line: a
    mode other than ``kb.research.verdict.MODES`` (``kb verdict`` refused it later, with no line)
    and a ``min_votes`` under 2 (a verdict always takes two votes) or over
    :data:`MAX_MIN_VOTES` (99999999999999999999 was read, and every `kb verdict` refused)."""
    from kb.research.verdict import MODES  # only for a kb.toml with [verdict]

    out = dict(verdict)
    if "mode" in out and out["mode"] not in MODES:
        warnings.append(_not_read(_key_line(text, "verdict", "mode"), f"verdict.mode = {out.pop('mode')!r} "
                                  f"is not one of {', '.join(MODES)}: kb uses the default, forced"))
    if "min_votes" in out and out["min_votes"] < 2:
        warnings.append(_not_read(_key_line(text, "verdict", "min_votes"), f"verdict.min_votes = "
                                  f"{out.pop('min_votes')}: a verdict takes at least 2 votes"))
    elif "min_votes" in out and out["min_votes"] > MAX_MIN_VOTES:
        shown = str(out.pop("min_votes"))
        shown = shown if len(shown) <= 20 else shown[:20] + "…"
        warnings.append(_not_read(_key_line(text, "verdict", "min_votes"), f"verdict.min_votes = "
                                  f"{shown}: more votes than any verdict gathers (at most "
                                  f"{MAX_MIN_VOTES}); kb uses the default, 2"))
    return out


#: The most votes ``[verdict] min_votes`` may ask of a verdict: a hundred verifiers.
MAX_MIN_VOTES = 100


def _check_locks(locks: dict[str, Any], text: str) -> None:
    """Raise ConfigError at its line for a ``[locks]`` value kb cannot use: a ``ttl`` or
    ``grace`` that :func:`kb.locks.setting_duration` (the reading every lock and write
    command does) refuses, an ``offline`` other than ``refuse``/``warn`` (which kb read as
    ``refuse`` without a word). Types were checked against :data:`_SCHEMA` already."""
    from kb.errors import UsageError
    from kb.durations import DURATION_SETTINGS, OFFLINE_POLICIES, setting_duration
    from kb.numbers import quoted

    for key in DURATION_SETTINGS:
        try:
            setting_duration(locks, key, what=f"locks.{key}")
        except UsageError as exc:
            raise _at(_key_line(text, "locks", key), str(exc)) from None
    offline = locks.get("offline")
    if offline is not None and offline not in OFFLINE_POLICIES:
        raise _at(_key_line(text, "locks", "offline"), f"locks.offline must be "
                  f"{' or '.join(map(repr, OFFLINE_POLICIES))}, not {quoted(offline)}")


def _refuse_shared_paths(paths: dict[str, str], written: dict[str, Any], text: str) -> None:
    """Raise ConfigError when two ``[paths]`` keys name one file or folder: kb would read
    and write it as both (``dashboard = "tree.md"`` made ``kb dashboard`` replace the tree
    with the dashboard and commit it). The key blamed is one kb.toml sets (the later one)."""
    def _as_written(key: str) -> Any:
        return written.get(key, paths[key])  # (paths holds it tidied: tidy_path)

    seen: dict[str, str] = {}
    for key, value in paths.items():
        norm = _place(value)
        other = seen.setdefault(norm, key)
        if other == key:
            continue
        blamed, kept = (key, other) if key in written else (other, key)
        raise _at(_key_line(text, "paths", blamed),
                  f"paths.{blamed} = {_as_written(blamed)!r} names what paths.{kept} names "
                  f"({_as_written(kept)!r}): each [paths] key needs a file or folder of its own "
                  "(kb would read and write it as both)")
    # A file of kb's (tree, dashboard) inside a folder of records: `dashboard =
    # "experiments/E001.md"` made `kb dashboard` replace an experiment.
    for file_key in FILE_PATH_KEYS:
        file = _place(paths[file_key])
        for key in _RECORD_FOLDERS:
            folder = _place(paths[key])
            # (a folder of records at the KB's top holds the files there: `experiments =
            # "."` read tree.md's neighbours as experiments and put the tree among them)
            if file.startswith(folder + "/") if folder != "." else "/" not in file:
                # The line of a key kb.toml writes: the folder's when the file is the default.
                blamed = file_key if file_key in written or key not in written else key
                raise _at(_key_line(text, "paths", blamed),
                          f"paths.{file_key} = {_as_written(file_key)!r} lies in the folder of "
                          f"paths.{key} ({_as_written(key)!r}): kb would read it as one of those "
                          f"records and write over it; put the {file_key} outside that folder")


def _registry_shadowed(path: str, paths: dict[str, str]) -> str | None:
    """What kb reads registry file ``path`` as instead, when a ``[paths]`` key places it
    (``'the tree (paths.tree)'``, ``'a card of paths.problems'``); None when it is a
    registry's own."""
    norm = _place(path)
    for key in FILE_PATH_KEYS:
        if norm == _place(paths[key]):
            return f"the {key} (paths.{key})"
    for key in _RECORD_FOLDERS:
        folder = _place(paths[key])
        if folder != "." and norm.startswith(folder + "/"):
            return f"a file of paths.{key} ({paths[key]!r})"
    return None


#: ``[paths]`` keys naming a file (every other key names a folder).
FILE_PATH_KEYS = ("tree", "dashboard")
#: ``[paths]`` folders whose files are records (cards, experiments): no file of kb's there.
_RECORD_FOLDERS = ("experiments", "problems", "progress", "propositions", "methods", "verified")


#: The named groups kb's declaration patterns put around ``id_grammar``
#: (:mod:`kb.parse.tree`): a grammar naming one of them cannot be embedded.
_EMBEDDING = r"^(?P<link>\[)?(?P<open>\*\*)?(?P<id>{})[ \t]*(?P<sep>:)(?P<stmt>.*)(?P<rest>)$"


def _check_embedded_grammar(grammar: str, line: int) -> None:
    """Raise ConfigError when ``grammar`` does not compile alone or where kb embeds it
    (inside ``(?P<id>…)`` of its heading patterns): a named group of kb's own (``id``,
    ``sep``…), or a global flag such as ``(?i)``, which Python allows only at the start of
    a whole pattern, would otherwise be an internal error at the first heading."""
    try:
        re.compile(grammar)
    except (re.error, RecursionError, OverflowError) as exc:  # too deep or too large too
        raise _at(line, f"kb.id_grammar is not a valid regex: {exc or type(exc).__name__}") from None
    try:
        re.compile(_EMBEDDING.format(grammar))
    except (re.error, RecursionError, OverflowError) as exc:
        why = getattr(exc, "msg", None) or str(exc)  # re.error's position is in kb's pattern
        raise _at(line, f"kb.id_grammar cannot be used inside kb's heading patterns: {why}; write "
                        "it without the group names kb uses (link, id, sep, stmt, open, rest) "
                        "and without global flags (`(?i)H\\d+` as `(?i:H)\\d+`)") from None


def _may_be_empty(pattern: str, group: str) -> bool:
    # Imported here: kb.parse's package imports this module (a top-level import would be a cycle).
    from kb.parse.regex_safety import group_may_be_empty

    return group_may_be_empty(pattern, group)


def _refuse_empty_id(grammar: str, line: int) -> None:
    """Raise ConfigError when ``grammar`` (embedded and checked by the two checks before)
    reads the empty text as an ID (``H\\d+|``, ``H?``, ``(H\\d+)*``): kb would read a heading
    such as ``## : statement`` as a hypothesis with an empty ID."""
    if re.fullmatch(grammar, "") is None and not _may_be_empty(f"(?P<id>{grammar})", "id"):
        return
    raise _at(line, f"kb.id_grammar `{grammar}` matches the empty text, so a heading such as "
                    "`## : statement` would be a hypothesis with an empty ID; write a "
                    "grammar whose every ID has at least one character, e.g. `H\\d+(\\.\\d+)*` "
                    "(or leave the key out for the default)")


def _refuse_backtracking(pattern: str, line: int, what: str, default: str = "",
                         whole_line: bool = False) -> None:
    """Raise ConfigError when the regex ``pattern`` (``what``, at kb.toml's ``line``) can
    backtrack catastrophically or polynomially: kb matches it against every heading line, in
    ``kb index``, the hooks and CI, and one long heading would keep them matching for hours
    (exponential) or seconds to minutes (``H+H+H+Z``: cubic). ``whole_line``: kb matches
    the pattern as it is against a line (a registry heading), nothing after it."""
    # Imported here: kb.parse's package imports this module (a top-level import would be a cycle).
    from kb.parse.regex_safety import catastrophic_backtracking, polynomial_backtracking

    found = catastrophic_backtracking(pattern)
    if found is None:
        _refuse_polynomial(polynomial_backtracking(pattern, whole_line), pattern, line, what, default)
        return
    fix = ("write no repetition directly inside another (`(\\d+)*`) and no alternatives that read "
           "the same text (`(H|H)*`): start each repeated part with a separator, e.g. "
           "`H\\d+(\\.\\d+)*`" + default)
    if not found.unit:
        raise _at(line, f"{what} `{pattern}` is too large for kb to check that it cannot take "
                        f"exponential time on a long heading; {fix}")
    raise _at(line, f"{what} `{pattern}` can take exponential time: a repetition in it reads "
                    f"{found.text!r} in more than one way, and each further {found.unit!r} doubles "
                    f"the ways, so one long heading would hang kb index, the hooks and CI; {fix}")


def _refuse_polynomial(found: Backtracking | None, pattern: str, line: int, what: str,
                       default: str) -> None:
    """Raise ConfigError for ``found``, two repetitions of ``pattern`` that read the same run."""
    if found is None:
        return
    fix = ("read each run with one repetition (`\\d+`, not `\\d+\\d+`; `\\d+(\\.\\d+)?`, not "
           "`\\d+\\.?\\d+`) and give repetitions that follow one another, or have only optional "
           "parts between them, classes that share no character (`[A-Z]+[0-9]+`, not `\\w+\\d+`), "
           "e.g. `H\\d+(\\.\\d+)*`" + default)
    if not found.unit:
        raise _at(line, f"{what} `{pattern}` is too large for kb to check that it cannot take "
                        f"polynomial time on a long heading; {fix}")
    shown = found.text + found.unit * 3 + "…"
    raise _at(line, f"{what} `{pattern}` can take polynomial time: two repetitions in it, one "
                    f"after the other, can both read {found.unit!r}, so a heading such as {shown!r} "
                    "can be split between them in a number of ways that grows with the square of "
                    "its length (the cube for three), and one long heading would slow kb index, "
                    f"the hooks and CI for seconds to minutes; {fix}")


def _outside_message(key: str, value: str, why: str) -> str:
    return (f"{key} = {value!r} {why}: every configured path must stay inside the KB folder "
            "and outside .git (nothing was read or written)")


def _not_read(line: int, what: str) -> Diagnostic:
    """KB001: something of kb.toml kb does not read, at ``line``."""
    from kb.model import Diagnostic

    return Diagnostic(path="kb.toml", line=line or 1, code="KB001", severity="warning",
                      message=f"{what} (ignored)")


def _tname(t: type | tuple[type, ...]) -> str:
    names = {str: "a string", list: "an array", dict: "a table", int: "an integer",
             float: "a number", bool: "a boolean"}
    if isinstance(t, tuple):
        return " or ".join(names.get(x, x.__name__) for x in t)
    return names.get(t, t.__name__)
