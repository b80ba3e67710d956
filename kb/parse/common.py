"""Helpers every anchor parser shares: value splitting, numbers, JSON lists,
and the diagnostics of the general rules of DESIGN.md §2.

Diagnostic codes of parsing (``kb index``) are KB1xx; ``kb rules`` lists them.
"""

from __future__ import annotations

import json
import re
from typing import Optional, Union

from kb.model import Diagnostic, Fix
from kb.numbers import quoted, small_int
from kb.text import CONTAINER_PREFIX

# Separators accepted in Evidence / Children lists (DESIGN.md §2.1). A list is split at
# them and each item stripped: `\s*[,，、;；]\s*` as the splitter scanned a run of spaces
# from each of its characters, quadratic (seconds for a line with 20,000 spaces).
_LIST_SEP = re.compile(r"[,，、;；]")


def _items(text: str) -> list[str]:
    """The non-empty items of ``text`` split at the list separators, each stripped."""
    return [p for p in (q.strip() for q in _LIST_SEP.split(text)) if p]
_EMPTY_WORDS = {"", "(empty)", "（empty）", "(空)", "（空）", "无", "none", "-"}


#: A wiki link ``[[target]]``, ``[[target|label]]`` or ``[[target#heading|label]]``;
#: the label may hold anything but ``]]`` (commas included).
#: (Linear: the target is one run without `[`, and a label stops at the next `[[`, so a
#: line of 200,000 `[` is read in one pass, not from each of them to its end.)
_WIKI = re.compile(r"\[\[([^\[\]|#]*)(?:#[^\]|]*)?(?:\|(?:(?!\]\]|\[\[).)*)?\]\]")


#: A compact JSON array of strings without escapes or control characters
#: (``["q1","p2"]``, what kb and Vibe Math write): its items are the text between
#: the quotes, what ``json.loads`` gives for it.
_PLAIN_JSON_LIST = re.compile(r'\["[^"\\\x00-\x1f]*"(?:,"[^"\\\x00-\x1f]*")*\]')


def split_id_list(value: str) -> tuple[str, ...]:
    """``"E001, E002，E003"`` -> ``("E001", "E002", "E003")``; ``(empty)`` -> ``()``.

    A wiki link is one item, read as its target: ``[[E001|run, rerun]], E002``
    -> ``("E001", "E002")`` (never split inside the brackets).
    """
    v = value.strip()
    if v.lower() in _EMPTY_WORDS:
        return ()
    if "[[" not in v:
        return tuple(_items(v))
    targets: list[str] = []

    def hold(m: re.Match[str]) -> str:
        targets.append(m.group(1).strip())
        return f"\x00{len(targets) - 1}\x00"

    masked = _WIKI.sub(hold, v)
    out = []
    for p in _items(masked):
        if p:
            out.append(re.sub(r"\x00(\d+)\x00", lambda m: targets[int(m.group(1))], p))
    return tuple(out)


def fullwidth_colon_warning(path: str, lineno: int, line: str, where: str) -> Diagnostic:
    """KB110: a full-width ``：`` used where ``:`` belongs (accepted, fixable)."""
    fixed = line.replace("：", ": ", 1).replace(":  ", ": ")
    return Diagnostic(
        path=path, line=lineno, col=line.find("：") + 1, code="KB110", severity="warning",
        message=f"full-width colon '：' in {where}; write ':' (kb verify --fix)",
        fix=Fix(line=lineno, old=line, new=fixed),
    )


def duplicate_key_error(path: str, key: str, first: int, second: int, owner: str) -> Diagnostic:
    """KB112: a single-valued anchor key given twice in one block."""
    return Diagnostic(
        path=path, line=second, code="KB112", severity="error",
        message=f"anchor '{key}' of {owner} is given twice (lines {first} and {second}); "
        "keep one",
    )


def ascii_decimal(raw: str) -> bool:
    """Whether ``raw`` (blanks around it aside) is a whole number written in ASCII digits:
    ``str.isdecimal`` and ``int`` also take ``１`` and ``١``, which other readers do not."""
    s = raw.strip()
    return s.isascii() and s.isdecimal()


def parse_float(raw: str) -> Optional[float]:
    """Parse a probability-like number (exponent notation allowed); None if not a number."""
    s = raw.strip()
    # float() also reads full-width and other Unicode digits (０.５) and underscores
    # (0_5): not what the record's other readers (Vibe Math's parseFloat) read.
    if not s.isascii() or "_" in s:
        return None
    try:
        x = float(s)
    except ValueError:
        return None
    if x != x or x in (float("inf"), float("-inf")):
        return None
    return x


def parse_priority(raw: str) -> Union[int, str, None]:
    """``"0"`` -> 0, ``"never"`` -> ``"never"``; None when neither."""
    v = raw.strip()
    if v == "never":
        return "never"
    if v.isascii() and v.isdigit():
        return small_int(v)  # None for a number too long to be a priority (KB125)
    if re.fullmatch(r"-?[0-9]+", v):  # ASCII digits: \d also matches ３
        return small_int(v)
    return None


def dump_list(items: tuple[str, ...] | list[str]) -> str:
    """Write a list anchor as Vibe Math does (JSON.stringify: no spaces, non-ASCII kept)."""
    return json.dumps(list(items), ensure_ascii=False, separators=(",", ":"))


def parse_list(
    raw: str, path: str, lineno: int, line: str, key: str
) -> tuple[tuple[str, ...], list[Diagnostic]]:
    """Read a list anchor (VIBEMATH-V3.md): a JSON array of strings.

    A comma list is read with a warning (KB120, fixable); an unreadable value
    is an error (KB121) and reads as ``()`` — never silently.
    """
    v = raw.strip()
    if v == "[]":
        return (), []
    if _PLAIN_JSON_LIST.fullmatch(v) is not None:
        return tuple(v[2:-2].split('","')), []
    if v.startswith("[[") and _WIKI.match(v):
        # Wiki links (Obsidian style): read as links, whatever their labels hold.
        return split_id_list(v), []
    if v.startswith("["):
        deep = False
        try:
            data = json.loads(v)
        except ValueError:
            data = None
        except RecursionError:  # `[[[[…` 1,000 deep: json's decoder gives out (was KB199)
            data, deep = None, True
        if isinstance(data, list) and all(isinstance(x, str) for x in data):
            return tuple(data), []
        return (), [
            Diagnostic(
                path=path, line=lineno, code="KB121", severity="error",
                message=f"list anchor '{key}' is not a JSON array of IDs"
                f"{' (arrays nested too deeply to read)' if deep else ''}: "
                f"{quoted(v, limit=120)}; write e.g. [\"q1\",\"p2\"]",
            )
        ]
    items = split_id_list(v)
    if not items and v == "":
        return (), [
            Diagnostic(
                path=path, line=lineno, code="KB120", severity="warning",
                message=f"list anchor '{key}' is empty; write []",
                fix=Fix(line=lineno, old=line, new=line.rstrip() + " []" if line.rstrip().endswith(":") else line.rstrip() + "[]"),
            )
        ]
    if all(re.fullmatch(r"[^\s\"'\[\]{}]+", x) for x in items):
        prefix = line[: line.rfind(raw)] if raw and raw in line else line.split(":", 1)[0] + ": "
        return items, [
            Diagnostic(
                path=path, line=lineno, code="KB120", severity="warning",
                message=f"list anchor '{key}' is a comma list; write it as JSON {dump_list(items)}",
                fix=Fix(line=lineno, old=line, new=prefix + dump_list(items)),
            )
        ]
    return (), [
        Diagnostic(
            path=path, line=lineno, code="KB121", severity="error",
            message=f"list anchor '{key}' cannot be read: {quoted(v, limit=120)}; write a JSON "
            "array like "
            '["q1","p2"]',
        )
    ]


def _plain(path: str) -> bool:
    """Whether ``path`` is relative and normalised (``a/b.md``), as git gives paths."""
    return bool(path) and path != "." and "//" not in path and "/./" not in path \
        and not path.startswith(("/", "./")) and not path.endswith(("/", "/."))


def path_parts(path: str) -> tuple[str, ...]:
    """``PurePosixPath(path).parts`` without pathlib's cost (parsers run it per file)
    for the paths git gives; anything else goes through pathlib."""
    if not _plain(path):
        from pathlib import PurePosixPath

        return PurePosixPath(path).parts
    return tuple(path.split("/"))


def path_stem(path: str) -> str:
    """``PurePosixPath(path).stem``: the file name without its last suffix."""
    if not _plain(path):
        from pathlib import PurePosixPath

        return PurePosixPath(path).stem
    name = path[path.rfind("/") + 1:]
    i = name.rfind(".")
    return name[:i] if 0 < i < len(name) - 1 else name


#: The first characters of a line that may hold a heading inside a container: a block
#: quote (``> ## H4: …``), a list item (``- ## H4: …``, ``1. ## …``) or an indent.
NESTED_FIRST = frozenset(" \t>-*+0123456789")
#: A heading after block-quote marks, list markers or an indent (the container part,
#: the ``#`` marks, the heading text).
NESTED_HEADING = re.compile(
    rf"^(?P<pre>{CONTAINER_PREFIX})(?<=[ \t>])(?P<marks>#+)[ \t]+(?P<text>.*?)[ \t]*$")


def nested_container(pre: str) -> tuple[str, str]:
    """What the prefix ``pre`` of a nested heading puts it in, for messages: where it is
    (``"a block quote ('>')"``) and how to take it out (``"outside the block quote"``)."""
    if ">" in pre:
        return "a block quote ('>')", "outside the block quote"
    if pre.strip(" \t"):
        return "a list item", "outside the list item"
    return "an indent (blanks before its '#')", "without the indent"
