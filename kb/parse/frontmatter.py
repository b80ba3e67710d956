"""YAML frontmatter, read through python-frontmatter with kb's own handler.

DESIGN.md §2.5: python-frontmatter's defaults miss a BOM-prefixed block, turn
``010`` into 8 and ``no`` into False, let a repeated key win silently and crash
on keys such as ``on:`` or ``content:``. kb's handler:

- detects the block after the BOM was stripped (by :func:`kb.text.decode`);
- treats a leading ``---`` block as frontmatter only when it looks like a YAML
  mapping (its first line is a ``key:`` line, or it is empty); otherwise the
  ``---`` is a thematic break and the block is prose (cases FM-04a/b);
- loads every scalar as a string (yaml.BaseLoader: no YAML 1.1 coercion);
- reports duplicate keys and YAML errors with the real line numbers in the
  file, as diagnostics, never as exceptions.
"""

from __future__ import annotations

import re
from typing import Any

from kb.model import Diagnostic, Fix
from kb.text import SourceText

_BOUNDARY = re.compile(r"^-{3,}\s*$")
#: How deep a frontmatter's lists and mappings may nest (KB102 past it). A research
#: frontmatter nests a level or two; the bound keeps every reader of the value (the
#: constructor, JSON, the index) far from Python's recursion limit.
MAX_DEPTH = 64
_YAML11_BOOLS = {"on", "off", "yes", "no", "y", "n", "true", "false"}
_YAML_TAG = "tag:yaml.org,2002:"
#: The tags a node has without an explicit one (kb's loader resolves no other): a node
#: with any other tag was written with one (`!!python/object:…`, `!!int`, `!local`).
_PLAIN_TAGS = frozenset(_YAML_TAG + t for t in ("str", "map", "seq"))
# A plain or quoted (`"on": x`, the fix of KB105) mapping key at the start of a line.
# (A plain key runs to its colon, spaces and all: a `[ \t]*` after `[^:]*` read one run of
# spaces two ways, quadratic on a long first line without a colon.)
_KEY_LINE = re.compile(
    r"^(?:[^\s#:\-\[\]{}*&!|>'\"%@`][^:]*|(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*')[ \t]*):(\s|$)")


def _handler():
    """kb's python-frontmatter handler (imported lazily: most files have none)."""
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    class _StringLoader(yaml.BaseLoader):
        """BaseLoader keeps scalars as strings; this adds duplicate-key reports."""

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.duplicates: list[tuple[str, int, int]] = []
            self.tags: list[tuple[str, int]] = []  # (explicit tag, 0-based line), KB144
            self.depth = 0  # of the node being composed (lists and mappings above it)

        def compose_node(self, parent: Any, index: Any) -> Any:
            # An alias (`*a`) may stand for a node of millions of values (a few nested
            # anchors, 341 bytes, took 3 GB once written out as JSON): none is read.
            if self.check_event(yaml.events.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, f"a YAML alias ('*{event.anchor}'): kb reads no aliases (one "
                    "can stand for millions of values); write the value out", event.start_mark)
            # A list or mapping nested past MAX_DEPTH: an error at the line where it opens,
            # before the composer's recursion (or the constructor's, four frames a level:
            # 250 deep gave out) depends on how deep the caller's stack already was.
            if self.depth >= MAX_DEPTH and self.check_event(
                    yaml.events.SequenceStartEvent, yaml.events.MappingStartEvent):
                raise yaml.composer.ComposerError(
                    None, None, f"nested too deeply to read (more than {MAX_DEPTH} levels of "
                    "lists or mappings)", self.peek_event().start_mark)
            self.depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            if node.tag not in _PLAIN_TAGS:
                self.tags.append((node.tag, node.start_mark.line))
            return super().construct_object(node, deep=deep)

        def construct_mapping(self, node: Any, deep: bool = False) -> dict:
            seen: dict[str, int] = {}
            out: dict = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=deep)
                line = key_node.start_mark.line
                if isinstance(key, (list, dict)):
                    # `? [a, b]: c` or `{a: b}: c`: a key that cannot be a dict key.
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        "found an unhashable key (a list or mapping used as a key)",
                        key_node.start_mark)
                if isinstance(key, str) and key in seen:
                    self.duplicates.append((key, seen[key], line))
                    continue
                if isinstance(key, str):
                    seen[key] = line
                out[key] = self.construct_object(value_node, deep=deep)
            return out

    _StringLoader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StringLoader.construct_mapping
    )

    class KbYAMLHandler(YAMLHandler):
        def load(self, fm: str, **kwargs: object) -> tuple[Any, list[tuple[str, int, int]]]:
            loader = _StringLoader(fm)
            try:
                data = loader.get_single_data()
            finally:
                loader.dispose()
            return data, loader.duplicates, loader.tags

    return KbYAMLHandler(), yaml.YAMLError, yaml.MarkedYAMLError


def read_frontmatter(src: SourceText) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Find and load the frontmatter of ``src``; set ``src.body_start``.

    Returns ``(metadata, diagnostics)``. ``metadata`` maps keys to strings,
    lists or dicts of strings (dates stay ISO strings as written). A block
    that is not a mapping leaves ``body_start`` at 0 and returns ``{}``.
    Codes: KB102 YAML error, KB103 duplicate key, KB105 a YAML 1.1 boolean key, KB144 a
    value with an explicit YAML tag (ignored: read as text).
    """
    lines = src.lines
    if not lines or not _BOUNDARY.match(lines[0]):
        return {}, []
    end = None
    for i in range(1, len(lines)):
        if _BOUNDARY.match(lines[i]) or lines[i].rstrip() == "...":
            end = i
            break
    if end is None:
        return {}, []
    block = lines[1:end]
    if block:
        if not _KEY_LINE.match(block[0]):
            # `---` then prose: a thematic break, not frontmatter (FM-04a/b).
            return {}, []
    src.body_start = end + 1
    if not block:
        return {}, []
    handler, yaml_error, marked_error = _handler()
    diags: list[Diagnostic] = []
    try:
        data, dups, tags = handler.load("\n".join(block))
    except marked_error as exc:  # type: ignore[misc]
        mark = exc.problem_mark or exc.context_mark
        line = 2 + (mark.line if mark else 0)
        problem = exc.problem or "invalid YAML"
        hint = ""
        if "mapping values are not allowed" in problem:
            hint = '; quote the value (key: "a: b") — an unquoted ": " starts a mapping'
        diags.append(
            Diagnostic(
                path=src.path, line=line, col=1 + (mark.column if mark else 0),
                code="KB102", severity="error",
                message=f"frontmatter is not valid YAML: {problem}{hint}",
            )
        )
        return {}, diags
    except RecursionError:  # (past MAX_DEPTH is a ComposerError: a caller's stack near its limit)
        diags.append(
            Diagnostic(path=src.path, line=2, code="KB102", severity="error",
                       message="frontmatter is not valid YAML: nested too deeply to read")
        )
        return {}, diags
    except yaml_error as exc:  # type: ignore[misc]
        diags.append(
            Diagnostic(path=src.path, line=1, code="KB102", severity="error",
                       message=f"frontmatter is not valid YAML: {exc}")
        )
        return {}, diags
    for key, first, second in dups:
        diags.append(
            Diagnostic(
                path=src.path, line=2 + second, code="KB103", severity="error",
                message=f"frontmatter key '{key}' is given twice (lines {2 + first} and "
                f"{2 + second}); keep one",
            )
        )
    for tag, line in tags:
        shown = "!!" + tag[len(_YAML_TAG):] if tag.startswith(_YAML_TAG) else tag
        diags.append(
            Diagnostic(
                path=src.path, line=2 + line, code="KB144", severity="warning",
                message=f"frontmatter value with the YAML tag '{shown}': kb ignores tags and "
                "reads every value as text (a YAML reader that honours tags may read it "
                "otherwise, and a Python tag runs code in an unsafe one); remove the tag",
            )
        )
    if data is None:
        data = {}
    if isinstance(data, dict):
        for i, raw in enumerate(block):
            key = raw.split(":", 1)[0].strip()
            if ":" in raw and key.lower() in _YAML11_BOOLS and not raw[:1].isspace():
                diags.append(
                    Diagnostic(
                        path=src.path, line=2 + i, code="KB105", severity="warning",
                        message=f"frontmatter key '{key}' is a boolean in YAML 1.1 (other tools "
                        f"read it as True/False); kb reads the string '{key}' — quote it",
                        fix=Fix(line=2 + i, old=raw, new=f'"{key}":' + raw.split(":", 1)[1]),
                    )
                )
    if not isinstance(data, dict):
        diags.append(
            Diagnostic(path=src.path, line=2, code="KB102", severity="error",
                       message="frontmatter is not a YAML mapping")
        )
        return {}, diags
    return {str(k): v for k, v in data.items()}, diags
