"""Text -> (objects, diagnostics): one module per format, pure functions.

:func:`parse_file` is the single entry point: it decodes bytes, reads the
frontmatter, decides the format from the path (DESIGN.md §1 layout, paths
from ``kb.toml``) and calls the format's parser. It never raises for bad
content; every problem is a :class:`kb.model.Diagnostic`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Generator

from kb.config import FILE_PATH_KEYS, Config

if TYPE_CHECKING:  # annotations only
    from kb.model import Diagnostic, ParseResult
    from kb.text import SourceText

FORMATS = ("tree", "experiment", "dashboard", "problem", "proposition", "method", "verified",
           "direction", "progress", "registry", "misplaced")


def _under(path: str, folder: str) -> str | None:
    """The part of ``path`` below ``folder`` (both KB-relative, '/'), or None."""
    folder = folder.strip("/")
    if folder in ("", "."):
        return path
    if path.startswith(folder + "/"):
        return path[len(folder) + 1:]
    return None


_PREPARED: dict[int, tuple[Config, "re.Pattern[str]"]] = {}
#: (format, config folder, what follows the folder) in precedence order.
_LAYOUT = (
    ("experiment", "experiments", r"[^/]*\.md"),
    ("problem", "problems", r"[^/]*\.md"),
    ("proposition", "propositions", r"[^/]*/[^/]*\.md"),
    ("method", "methods", r"[^/]*\.md"),
    ("verified", "verified", r"(?:命题|问题)/[^/]*\.md"),
    ("direction", "progress", r"[^/]*/[^/]*\.md"),
    ("progress", "progress", r"[^/]*\.md"),
)


def _prepared(config: Config) -> "re.Pattern[str]":
    """One anchored regex for the config's layout (classify runs for every file of a
    snapshot: 100k paths); its named group is the format."""
    hit = _PREPARED.get(id(config))
    if hit is not None and hit[0] is config:
        return hit[1]
    p = config.paths

    def prefix(folder: str) -> str:
        folder = folder.strip("/")
        return "" if folder in ("", ".") else re.escape(folder + "/")

    alts = [f"(?P<tree>{re.escape(p['tree'])})", f"(?P<dashboard>{re.escape(p['dashboard'])})"]
    alts += [f"(?P<registry{i}>{re.escape(r.path)})" for i, r in enumerate(config.registries)]
    alts += [f"(?P<{fmt}>{prefix(p[key])}{rest})" for fmt, key, rest in _LAYOUT]
    # Any other .md file under a folder of cards or experiments: no object, one KB108 warning.
    under = sorted({prefix(p[key]) for _fmt, key, _rest in _LAYOUT} - {""})
    if under:
        alts.append(f"(?P<misplaced>(?:{'|'.join(under)}).*\\.md)")
    pattern = re.compile("^(?:" + "|".join(alts) + ")$")
    if len(_PREPARED) > 32:
        _PREPARED.clear()
    _PREPARED[id(config)] = (config, pattern)
    return pattern


def classify(path: str, config: Config) -> str | None:
    """The format of the KB-relative ``path``, or None when kb does not read it.

    Only ``.md`` files are read; ``Reliable/`` and ``Notes/`` never are; nor is a path
    that is not UTF-8 (:func:`not_utf8`: the index and every text kb writes hold UTF-8).
    """
    if not path.endswith(".md") or not_utf8(path):
        return None
    m = _prepared(config).match(path)
    if m is None:
        return None
    fmt = m.lastgroup or ""
    return "registry" if fmt.startswith("registry") else fmt


def not_utf8(path: str) -> bool:
    """Whether ``path`` (decoded from git's bytes with ``surrogateescape``) holds bytes that
    are not UTF-8: kb does not read such a file (its name cannot go into the index);
    ``kb verify`` says so (KB133)."""
    if path.isascii():
        return False
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_CLASSIFIERS: dict[int, tuple[Config, Any]] = {}


def classifier(config: Config) -> Callable[[str], str | None]:
    """:func:`classify` for ``config`` as a function of the path, remembered by folder.

    The layout's patterns constrain a file's folder and end in ``[^/]*\\.md``, so
    a ``.md`` file that is not one of the config's exact paths (tree, dashboard,
    registries) has its folder's format: one regex match per folder, not per file
    (a listing of 100,000 paths). Same answers as :func:`classify`.
    """
    hit = _CLASSIFIERS.get(id(config))
    if hit is not None and hit[0] is config:
        return hit[1]
    p = config.paths
    exact = {p["tree"], p["dashboard"], *(r.path for r in config.registries)}
    by_folder: dict[str, str | None] = {}

    def fast(path: str) -> str | None:
        if not path.endswith(".md") or not_utf8(path):
            return None
        if path in exact:
            return classify(path, config)
        folder, sep, _name = path.rpartition("/")
        try:
            return by_folder[folder]
        except KeyError:
            # A name no path holds (NUL) stands for every name of the folder.
            fmt = by_folder[folder] = classify(folder + sep + "\0.md", config)
            return fmt

    if len(_CLASSIFIERS) > 32:
        _CLASSIFIERS.clear()
    _CLASSIFIERS[id(config)] = (config, fast)
    return fast


_FOLDERS: dict[int, tuple[Config, dict[str, tuple[tuple[str, str], ...]]]] = {}


def layout_folders(config: Config) -> dict[str, tuple[tuple[str, str], ...]]:
    """Every KB-relative folder that is a folder of ``config``'s layout (kb.toml's
    ``[paths]``) or lies above one or above a file of it (tree.md, a registry), mapped to
    the settings under it: (key, path) pairs such as ``("paths.problems", "Problems")``,
    ``("registry path", "logs/problems.md")``. The KB folder itself is none of them. A
    symlink a snapshot lists at one of these hides what kb reads under it
    (:attr:`kb.repo.Snapshot.folder_links`, KB005). Remembered per configuration: a
    listing looks its few symlinks up here."""
    import posixpath

    hit = _FOLDERS.get(id(config))
    if hit is not None and hit[0] is config:
        return hit[1]
    named = [(f"paths.{key}", value, key not in FILE_PATH_KEYS) for key, value in config.paths.items()]
    named += [("registry path", r.path, False) for r in config.registries]
    found: dict[str, list[tuple[str, str]]] = {}
    for key, value, is_folder in named:
        path = posixpath.normpath(value.strip("/") or ".")
        folder = path if is_folder else posixpath.dirname(path)
        while folder not in ("", ".", "/"):
            found.setdefault(folder, []).append((key, path))
            folder = posixpath.dirname(folder)
    out = {folder: tuple(pairs) for folder, pairs in found.items()}
    if len(_FOLDERS) > 32:
        _FOLDERS.clear()
    _FOLDERS[id(config)] = (config, out)
    return out


def parse_file(path: str, data: bytes, config: Config, fmt: str | None = None) -> ParseResult:
    """Parse the bytes of the KB-relative ``path``.

    ``fmt`` overrides :func:`classify`. Returns a :class:`ParseResult`; never
    raises for bad content (an unexpected parser bug is reported as KB199
    rather than losing the rest of the KB).
    """
    # (Each import below runs once per file: those of rare branches stay in them.)
    from kb.text import DecodeError, SourceText, decode

    fmt = fmt or classify(path, config) or "other"
    try:
        text, bom = decode(data, path)
    except DecodeError as exc:  # read as empty; "unreadable" tells the rules why
        from kb.model import ParseResult

        return ParseResult(path=path, kind=fmt, diagnostics=(exc.diagnostic,),
                           meta={"unreadable": True})
    src = SourceText.from_text(text, path, bom)
    if _may_have_conflict(text):
        conflicted = _conflicts(src, fmt)
        if conflicted is not None:
            return conflicted
    try:
        res = _parse(src, fmt, config)
        if b"\x00" in data:  # (UTF-8 writes U+0000, and only it, as a zero byte: a quicker search)
            res = _with_nul(res, text)
        if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):  # (a memchr mostly)
            res = _with_lone_cr(res, text)
        return res
    except RecursionError:
        from kb.model import Diagnostic, ParseResult

        return ParseResult(path=path, kind=fmt, diagnostics=(Diagnostic(
            path=path, line=1, code="KB199", severity="error",
            message="file is nested too deeply to parse"),))


def preload() -> None:
    """Import what :func:`parse_file` imports on its first files (the text and model
    modules, every format's parser): a cold index does it while it waits for git."""
    import kb.parse.card  # noqa: F401
    import kb.parse.dashboard  # noqa: F401
    import kb.parse.experiment  # noqa: F401
    import kb.parse.tree  # noqa: F401


def iter_parse_file(path: str, data: bytes, config: Config,
                    fmt: str | None = None) -> Generator[Any, None, ParseResult]:
    """:func:`parse_file`, the objects yielded one by one; returns (``StopIteration.value``)
    the ParseResult with every diagnostic and the meta but no objects.

    A ``tree`` file is read as it is parsed (:func:`kb.parse.tree.iter_tree`):
    the index stores the hypotheses of a tree of 100,000 in parts instead of
    holding them all, and the file's bytes are dropped once decoded (pass them
    without keeping a reference to free them). Other formats are parsed whole.
    """
    fmt = fmt or classify(path, config) or "other"
    if fmt != "tree":
        res = parse_file(path, data, config, fmt)
        yield from res.objects
        return res.replace(objects=())
    from kb.model import ParseResult
    from kb.parse.tree import iter_tree
    from kb.text import DecodeError, SourceText, decode

    try:
        text, bom = decode(data, path)
    except DecodeError as exc:  # read as empty; "unreadable" tells the rules why
        return ParseResult(path=path, kind=fmt, diagnostics=(exc.diagnostic,),
                           meta={"unreadable": True})
    del data
    src = SourceText.from_text(text, path, bom)
    if _may_have_conflict(text):
        conflicted = _conflicts(src, fmt)
        if conflicted is not None:
            return conflicted
    # As _parse reads a tree, in the same order (diagnostics, then meta).
    diags, meta = _tree_prelude(src)
    fm = meta.get("frontmatter") or {}
    d: list = []
    count = 0
    # CR-only line ends make the whole file one line: KB100 reads nothing of it (below), so
    # nothing is yielded first (its parts would be stored before the error is known)
    one_line = "\r" in text and "\n" not in text
    for obj in () if one_line else iter_tree(src, config.recognise_grammar,
                                              config.heading_separators, fm,
                                              grammar_label=config.id_grammar, diags=d):
        count += 1
        yield obj
    diags.extend(d)
    if not count:  # kb read nothing: KB126 says what is there (as parse_file does)
        from kb.parse.unread import describe_unread

        unread = describe_unread(src, fmt, [], diags, config)
        if unread is not None:
            diags.append(unread)
    res = ParseResult(path=path, kind=fmt, diagnostics=tuple(diags), meta=_tree_meta(src, meta))
    if "\x00" in text:
        res = _with_nul(res, text)
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        res = _with_lone_cr(res, text)
    return res


def _may_have_conflict(text: str) -> bool:
    """:func:`kb.merge.markers.may_have_conflict`, its module imported only for a text
    holding git's opening marker (most never do)."""
    if "<<<<<<<" not in text:
        return False
    from kb.merge.markers import may_have_conflict

    return may_have_conflict(text)


def _frontmatter(src: SourceText) -> tuple[dict[str, Any], list]:
    """:func:`kb.parse.frontmatter.read_frontmatter`, its module imported only when the
    first line may open a frontmatter block (``---``; most files have none)."""
    lines = src.lines
    if not lines or not lines[0].startswith("---"):
        return {}, []  # what read_frontmatter returns for it (body_start stays 0)
    from kb.parse.frontmatter import read_frontmatter

    return read_frontmatter(src)


def _tree_prelude(src: SourceText) -> tuple[list, dict[str, Any]]:
    """The frontmatter diagnostics and the frontmatter (``{"frontmatter": fm}`` when any)."""
    fm, diags = _frontmatter(src)
    return diags, ({"frontmatter": fm} if fm else {})


def _tree_meta(src: SourceText, prelude: dict[str, Any]) -> dict[str, object]:
    """A tree's meta, in _parse's key order: title, frontmatter, bom, newline."""
    meta: dict[str, object] = {}
    from itertools import islice

    for ln in islice(src.lines, src.body_start, None):  # (no copy of 400,000 lines)
        if ln.startswith("# "):
            meta["title"] = ln[2:].strip()
            break
    meta.update(prelude)
    meta["bom"] = src.bom
    meta["newline"] = src.newline
    return meta


def _conflicts(src: SourceText, fmt: str) -> ParseResult | None:
    """One KB190 per unresolved conflict region and no objects (neither side is
    guessed), or None when the text holds no real region."""
    from kb.merge.markers import conflict_regions, describe
    from kb.model import Diagnostic, ParseResult
    from kb.text import compute_mask

    regions = conflict_regions(src.lines, compute_mask(src.lines))
    if not regions:
        return None
    diags = tuple(Diagnostic(path=src.path, line=a, code="KB190", severity="error",
                             message=describe(a, b)) for a, b in regions)
    return ParseResult(path=src.path, kind=fmt, diagnostics=diags,
                       meta={"conflict": True, "bom": src.bom, "newline": src.newline})


def _with_nul(res: ParseResult, text: str) -> ParseResult:
    """``res`` plus KB107 at the first NUL character (git treats the file as binary
    and many tools stop reading at it)."""
    from dataclasses import replace

    from kb.model import Diagnostic

    at = text.index("\x00")
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    n = text.count("\x00")
    d = Diagnostic(path=res.path, line=line, col=col, code="KB107", severity="error",
                   message=f"the file holds {n} NUL byte{'s' if n > 1 else ''} (first here): git "
                           "shows it as binary and other tools may stop reading at it; delete them")
    return replace(res, diagnostics=(*res.diagnostics, d))


def _lone_cr_line(text: str) -> int:
    """The 1-based line of ``text``'s first CR that is not part of a CRLF line end (0: none).

    kb splits lines at LF (:meth:`kb.text.SourceText.from_text`; a CR before it is the
    CRLF style), so a CR alone (classic Mac OS line ends, or a file pasted from one)
    joins the lines it ends into one: their anchors are read as part of another line's
    value, or not at all. The callers ask only about a text holding more CRs than CRLFs
    (a search for CR first, which finds none in most files)."""
    at = text.find("\r")
    while at != -1:
        if text[at + 1:at + 2] != "\n":
            return text.count("\n", 0, at) + 1
        at = text.find("\r", at + 1)
    return 0


def _with_lone_cr(res: ParseResult, text: str) -> ParseResult:
    """``res`` plus KB100 at the line of the first CR alone (its KB126 dropped: KB100 says
    why nothing was read).

    An error, as KB101 (not UTF-8) and KB107 (NUL) are, the other faults of a file's
    bytes: kb reads none of the file's headings and anchors (what it read of the one
    line, an H1 holding the whole file, is nothing a rule can trust), so a commit that
    brings it in must not pass as if the objects it holds were recorded."""
    from dataclasses import replace

    from kb.model import Diagnostic

    line = _lone_cr_line(text) or 1
    whole = "\n" not in text
    d = Diagnostic(path=res.path, line=line, col=1, code="KB100", severity="error",
                   message=("the file's lines end in CR alone (classic Mac OS line ends), which kb "
                            "does not read as line breaks: the whole file is one line to kb, so "
                            "nothing in it is read; convert the line ends to LF") if whole else
                   ("this line holds a CR alone (a classic Mac OS line end), which kb does not "
                    "read as a line break: the lines it ends are one line to kb, so their "
                    "anchors are misread; convert the line ends to LF"))
    # The whole file as one line: what was read of it (an H1 or heading holding every line,
    # `kb show` printed the file as a statement) is dropped, as the message says.
    objects = () if whole else res.objects
    return replace(res, objects=objects,
                   diagnostics=(d, *(x for x in res.diagnostics if x.code != "KB126")))


def _parse(src: SourceText, fmt: str, config: Config) -> ParseResult:
    from kb.model import ParseResult

    fm, diags = _frontmatter(src)
    objects: list = []
    meta: dict[str, object] = {}
    if fmt == "tree":
        from kb.parse.tree import parse_tree

        objects, d = parse_tree(src, config.recognise_grammar, config.heading_separators, fm,
                                grammar_label=config.id_grammar)
        for ln in src.lines[src.body_start:]:
            if ln.startswith("# "):
                meta["title"] = ln[2:].strip()
                break
    elif fmt == "experiment":
        from kb.parse.experiment import parse_experiment

        objects, d = parse_experiment(src)
    elif fmt in ("problem", "proposition", "method", "verified"):
        from kb.parse.card import parse_card

        objects, d = parse_card(src, fmt)
    elif fmt == "direction":
        from kb.parse.card import parse_direction

        objects, d = parse_direction(src)
    elif fmt == "registry":
        from kb.parse.card import parse_registry

        reg = next((r for r in config.registries if r.path == src.path), None)
        if reg is None:
            raise ValueError(f"{src.path} is not a registry configured in kb.toml")
        objects, d = parse_registry(src, reg.heading, reg.kind)
    elif fmt == "misplaced":
        from kb.parse.misplaced import misplaced

        d = [misplaced(src.path, config)]
    elif fmt == "dashboard":
        from kb.parse.dashboard import next_steps

        meta["next_steps"] = next_steps(src)
        d = []
    else:
        d = []
    diags.extend(d)
    if _may_be_unread(fmt, objects):
        from kb.parse.unread import describe_unread

        unread = describe_unread(src, fmt, objects, diags, config)
        if unread is not None:
            diags.append(unread)
    if fm and fmt not in ("tree",):
        diags.extend(_frontmatter_conflicts(src, fm, objects))
        objects = [o.replace(frontmatter=fm) for o in objects]
    if fm:
        meta["frontmatter"] = fm
    meta["bom"] = src.bom
    meta["newline"] = src.newline
    return ParseResult(path=src.path, kind=fmt, objects=tuple(objects),
                       diagnostics=tuple(diags), meta=meta)


def _may_be_unread(fmt: str, objects: list) -> bool:
    """True when kb read nothing from a file of ``fmt`` (KB126 then says what is there)."""
    if fmt == "tree":
        return not objects
    if fmt == "experiment" or fmt in ("problem", "proposition", "method", "verified"):
        return len(objects) == 1 and not objects[0].anchors and not getattr(
            objects[0], "entries", ()) and getattr(objects[0], "conclusion", None) is None
    return False


def _frontmatter_conflicts(src: SourceText, fm: dict, objects: list) -> list[Diagnostic]:
    from kb.model import Diagnostic

    out = []
    if len(objects) != 1:
        return out
    obj = objects[0]
    fid = fm.get("id")
    if isinstance(fid, str) and fid != obj.id:
        out.append(Diagnostic(path=src.path, line=obj.line, code="KB104", severity="error",
                              message=f"frontmatter id '{fid}' disagrees with '{obj.id}'"))
    fst = fm.get("status")
    if isinstance(fst, str) and obj.status and fst != obj.status:
        from kb.vocab import EXPERIMENT_STATUS, HYPOTHESIS_STATUS

        canon = (EXPERIMENT_STATUS.canonical(fst) or HYPOTHESIS_STATUS.canonical(fst) or fst)
        if canon != obj.status:
            # Cards write `- 状态:`, experiments `**Status**:`: cite the status line.
            line = obj.anchor_lines.get("状态", obj.anchor_lines.get("Status", obj.line))
            out.append(Diagnostic(path=src.path, line=line,
                                  code="KB104", severity="error",
                                  message=f"frontmatter status '{fst}' disagrees with the anchor "
                                  f"status '{obj.status}'"))
    return out
