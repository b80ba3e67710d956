"""Files kb reads nothing from: say what is there, what kb reads, and a fix if one is certain.

Real research files come in many shapes: hypotheses as ``## Hypothesis 1: …`` or
``### H-3 …`` headings, as Markdown table rows (``| H1 | statement | status |``),
as bold list items (``- **H1.2** …``), with fields written ``status: supported`` or
``状态：待验``. A file of a format kb reads (the tree, an experiment, a card) that
yields nothing from such text gets ONE warning, KB126 (:func:`describe_unread`):
what kb found (counts and the first line of each shape), the format kb reads
(one example), and a rewrite only when it is mechanical and provably right — the
rewritten text, parsed by kb's own parser, yields exactly the hypotheses found,
with valid IDs, the same nesting and no format error (:func:`tree_rewrite`).

The detector is pure and cheap: it runs only for files that yield no object, over
their lines once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kb.model import Diagnostic
from kb.vocab import EXPERIMENT_STATUS, HYPOTHESIS_STATUS

if TYPE_CHECKING:
    from kb.config import Config
    from kb.text import SourceText

CODE = "KB126"
#: Diagnostics that already explain why a file yields nothing (no second report).
EXPLAINED = {"KB101", "KB113", "KB116", "KB119", "KB127", "KB128", "KB129", "KB190", "KB199"}

# An ID as people write it: H1, H1.2, H-3, H_3, Hypothesis 1, Hyp. 2, 假设1. Every pattern
# below reads a line in linear time: a text (`rest`, `value`) runs to its last character
# that is not a space or a tab, instead of a lazy group before `[ \t]*$`, which tried the
# end at every character of a run of spaces.
# (After "hyp"/"假设" the spaces on both sides of an optional `-_#` are two runs only
# around that mark: one run of spaces read by two repetitions was quadratic.)
_ID = (r"(?P<id>(?:H[-_#]?[ \t]*|(?:(?i:hyp(?:othesis)?\.?)|假设)[ \t]*(?:[-_#][ \t]*)?)"
       r"[0-9]+(?:\.[0-9]+)*[a-z]?)")
_END = r"(?![\w.]?[0-9A-Za-z])"
_HEADING = re.compile(rf"^(?P<hashes>#{{1,6}})[ \t]+(?:\*\*|__|\[|`)?{_ID}{_END}(?:\*\*|__|\]|`)?"
                      r"[ \t]*(?:[:：.)）、｜|\-–—][ \t]*)?(?:\*\*|__)?[ \t]*(?P<rest>(?:.*[^ \t])?)[ \t]*$")
_BOLD_PARA = re.compile(rf"^(?:\*\*|__){_ID}{_END}[ \t]*(?:[:：.)、\-–—][ \t]*)?(?:\*\*|__)[ \t]*"
                        r"(?:[:：.)、\-–—][ \t]*)?(?P<rest>(?:.*[^ \t])?)[ \t]*$")
_LIST = re.compile(rf"^(?P<indent>[ \t]*)(?:[-*+]|[0-9]+[.)])[ \t]+(?:\[[ xX]\][ \t]+)?"
                   rf"(?P<open>\*\*|__|\[|`)?{_ID}{_END}(?:\*\*|__|\]|`)?[ \t]*"
                   r"(?:[:：.)）、｜|\-–—][ \t]*)?(?:\*\*|__)?[ \t]*(?P<rest>(?:.*[^ \t])?)[ \t]*$")
_ROW = re.compile(r"^[ \t]*\|(?P<cells>.*)\|?[ \t]*$")
_ROW_SEP = re.compile(r"^[ \t]*(?:\|[ \t]*)?:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*(?:\|[ \t]*)?$")
_CELL_ID = re.compile(rf"^(?:\*\*|__|`|\[)?{_ID}(?:\*\*|__|`|\])?$")
_FIELD = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?(?:\*\*|__)?(?P<key>[A-Za-z][A-Za-z ]{0,20}?|"
                    r"[\u4e00-\u9fff]{1,6})(?:\*\*|__)?[ \t]*[:：][ \t]*(?:\*\*|__)?[ \t]*"
                    r"(?P<value>(?:.*[^ \t])?)[ \t]*$")
_STATUS_KEYS = {"status", "state", "状态"}
_VALID_DEFAULT = re.compile(r"H[1-9][0-9]*(?:\.[1-9][0-9]*)*")


@dataclass
class Item:
    """One thing that looks like a hypothesis: its line, shape, ID as written,
    statement, status as written (or None) and nesting depth in the source."""

    line: int
    shape: str
    raw_id: str
    statement: str
    status: str | None = None
    nest: int = 0
    status_line: int = 0
    extra: int = 0  # table cells the rewrite would have no place for


@dataclass
class Found:
    """What a file holds that kb does not read."""

    items: list[Item] = field(default_factory=list)
    fields: list[tuple[int, str]] = field(default_factory=list)  # (line, key as written)
    table_lines: list[int] = field(default_factory=list)  # header and separator rows

    def shapes(self) -> list[tuple[str, int, int]]:
        """``(shape, count, first line)`` in order of first appearance."""
        out: dict[str, list[int]] = {}
        for it in self.items:
            out.setdefault(it.shape, []).append(it.line)
        return [(s, len(ls), ls[0]) for s, ls in out.items()]


_SHAPE_WORDS = {
    "heading": ("heading", "headings", "with a hypothesis ID in another form"),
    "bold": ("bold line", "bold lines", "starting with a hypothesis ID"),
    "row": ("table row", "table rows", "holding a hypothesis ID"),
    "list": ("list item", "list items", "starting with a hypothesis ID"),
}


# -- scanning -----------------------------------------------------------------------


def scan_tree(src: "SourceText") -> Found:
    """Every line of ``src`` that looks like a hypothesis kb did not read, and every
    field line (``status: …``) outside a declaration block."""
    found = Found()
    lines = src.lines
    header: list[str] | None = None
    status_col = None
    last: Item | None = None
    for i in range(src.body_start, len(lines)):
        line = lines[i]
        if not line.strip():
            header, status_col = None, None  # a table ends at a blank line
            if last is not None and last.shape != "heading":
                last = None  # a list item's or a row's fields end at a blank line
            continue
        if src.is_masked(i):
            continue
        s = line.lstrip()
        if s.startswith("#"):
            header, status_col = None, None
            m = _HEADING.match(line)
            if m and len(m.group("hashes")) >= 2:
                last = Item(i + 1, "heading", _norm(m.group("id")), m.group("rest"),
                            nest=len(m.group("hashes")))
                found.items.append(last)
            else:
                last = None
            continue
        if s.startswith("|"):
            cells = _cells(line)
            if _ROW_SEP.match(line):
                found.table_lines.append(i + 1)
                continue
            idc = next((k for k, c in enumerate(cells) if c), None)
            m = _CELL_ID.match(cells[idc]) if idc is not None else None
            if m is None:
                header, last = [c.lower() for c in cells], None
                status_col = next((k for k, c in enumerate(header)
                                   if c.strip("*_ ") in _STATUS_KEYS), None)
                found.table_lines.append(i + 1)
                continue
            rest = [c for k, c in enumerate(cells) if k > idc and k != status_col and c]
            status = cells[status_col] if status_col is not None and status_col < len(cells) \
                else None
            if status_col is None and len(rest) >= 2 and HYPOTHESIS_STATUS.canonical(rest[-1]):
                status, rest = rest[-1], rest[:-1]  # no header: a last cell such as 'open'
            last = Item(i + 1, "row", _norm(m.group("id")), rest[0] if rest else "",
                        status=status.strip("*_` ") if status else None, status_line=i + 1,
                        extra=max(0, len(rest) - 1))
            found.items.append(last)
            continue
        header, status_col = None, None
        m = _LIST.match(line)
        if m:
            last = Item(i + 1, "list", _norm(m.group("id")), m.group("rest"),
                        nest=len(m.group("indent").expandtabs(4)))
            found.items.append(last)
            continue
        m = _BOLD_PARA.match(line)
        if m:
            last = Item(i + 1, "bold", _norm(m.group("id")), m.group("rest"))
            found.items.append(last)
            continue
        f = _FIELD.match(line)
        if f and _is_tree_key(f.group("key")):
            found.fields.append((i + 1, f.group("key").strip()))
            if (last is not None and f.group("key").strip().lower() in _STATUS_KEYS
                    and last.status is None):
                last.status, last.status_line = f.group("value").strip("*_` "), i + 1
    return found


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def _norm(raw: str) -> str:
    return re.sub(r"[ \t]+", " ", raw.strip())


def _is_tree_key(key: str) -> bool:
    from kb.parse.tree import KEY_ALIASES

    k = key.strip()
    return k.lower() in KEY_ALIASES or k in KEY_ALIASES or k.lower() in ("state", "result")


# -- the rewrite of a tree ----------------------------------------------------------


def tree_rewrite(src: "SourceText", found: Found, config: "Config") -> tuple[str | None, str]:
    """``(rewritten text, "")`` when the hypotheses found can be rewritten as tree
    declarations that kb reads back exactly; ``(None, why not)`` otherwise."""
    from kb.parse.tree import parse_tree, written_separator

    items = found.items
    if not items:
        return None, "nothing shaped like a hypothesis"
    valid = re.compile(config.id_grammar) if config.custom_grammar else _VALID_DEFAULT
    if config.custom_grammar:
        return None, "this KB sets its own [kb] id_grammar"
    ids = [it.raw_id for it in items]
    bad = next((x for x in ids if not valid.fullmatch(x)), None)
    if bad is not None:
        return None, (f"'{bad}' is not a valid ID (H<n>(.<n>)*, n >= 1, no leading zeros); "
                      "renumbering is a decision, not a fix")
    dup = next((x for x in ids if ids.count(x) > 1), None)
    if dup is not None:
        return None, f"{dup} appears twice"
    empty = next((it for it in items if not it.statement), None)
    if empty is not None:
        return None, f"{empty.raw_id} (line {empty.line}) has no statement"
    wide = next((it for it in items if it.extra), None)
    if wide is not None:
        return None, (f"the row at line {wide.line} has cells kb has no anchor for (a rewrite "
                      "would drop them)")
    known = set(ids)
    for it in items:
        if "." in it.raw_id and it.raw_id.rsplit(".", 1)[0] not in known:
            return None, f"{it.raw_id} has no parent {it.raw_id.rsplit('.', 1)[0]} in the file"
    why = _nesting_disagrees(items)
    if why:
        return None, why
    statuses: dict[str, str] = {}
    for it in items:
        if it.status is None or not it.status.strip():
            statuses[it.raw_id] = "待验"
            continue
        canon = HYPOTHESIS_STATUS.canonical(it.status.split()[0]) if it.status.split() else None
        if canon is None or len(it.status.split()) > 1:
            return None, (f"the status '{it.status}' of {it.raw_id} is not a word of the "
                          "vocabulary (待验, 进行中, 被支持, 被推翻)")
        statuses[it.raw_id] = canon
    drop = set(found.table_lines) | {it.status_line for it in items if it.status_line}
    at = {it.line: it for it in items}
    out: list[str] = []
    sep = written_separator(tuple(config.heading_separators))  # the KB's, as kb hyp add writes
    lines = src.lines
    for n, line in enumerate(lines, start=1):
        if n <= src.body_start:
            out.append(line)
            continue
        if n in at:
            it = at[n]
            level = 1 + it.raw_id.count(".") + 1
            if out and out[-1].strip():
                out.append("")
            out += [f"{'#' * level} {it.raw_id}{sep} {it.statement}",
                    f"Status: {statuses[it.raw_id]}", ""]
            continue
        if n in drop:
            continue
        if not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    text = "\n".join(out)
    from kb.text import SourceText

    again, diags = parse_tree(SourceText.from_text(text, src.path, src.bom), config.recognise_grammar,
                              config.heading_separators)
    errors = [d for d in diags if d.severity == "error"]
    got = [(h.id, h.level) for h in again]
    want = [(it.raw_id, 2 + it.raw_id.count(".")) for it in items]
    if errors or got != want:
        return None, "the rewrite would not read back as the same hypotheses"
    return text, ""


def _nesting_disagrees(items: list[Item]) -> str:
    """Why the source's own nesting (list indentation, heading levels) says something
    the IDs do not; "" when they agree or the source is flat."""
    for shape in ("list", "heading"):
        group = [it for it in items if it.shape == shape]
        if not group:
            continue
        stack: list[Item] = []
        for it in group:
            while stack and stack[-1].nest >= it.nest:
                stack.pop()
            parent = stack[-1].raw_id if stack else None
            id_parent = it.raw_id.rsplit(".", 1)[0] if "." in it.raw_id else None
            if parent != id_parent and (parent is not None or shape == "list"):
                return (f"the {shape}s nest {it.raw_id} under {parent or 'nothing'}, but its ID "
                        f"says {id_parent or 'top level'}: a rewrite would change the outline")
            stack.append(it)
    return ""


# -- the one warning ----------------------------------------------------------------


_TREE_FORMAT = ("kb reads a hypothesis as a heading with its anchor lines directly under it: "
                "'## H1: <statement>' then 'Status: 待验' (H1.1 is '###')")
_EXP_FORMAT = ("kb reads the title '# E001: H1 - <action>' and bold fields such as "
               "'**Status**: 进行中' ('**结论**: 支持 …' under '## 结果')")
_CARD_FORMAT = ("kb reads a card's H1 '# 问题｜<title>' and its fields as '- key: value' list "
                "lines under it, e.g. '- 状态: 求解中'")


def _prose_only(src: "SourceText", skip: set[int], what: str, fmt: str) -> Diagnostic | None:
    """KB126 for a file that holds text but nothing kb reads or recognises; None when
    the file is empty (blank lines, a level-1 title, comments, fenced examples)."""
    lines = [i + 1 for i in range(src.body_start, len(src.lines))
             if src.lines[i].strip() and not src.is_masked(i) and i + 1 not in skip
             and not src.lines[i].startswith("# ") and src.lines[i].strip() not in ("---", "***")]
    if not lines:
        return None
    return Diagnostic(path=src.path, line=lines[0], code=CODE, severity="warning",
                      message=f"{what}: it holds {_plural(len(lines), 'line', 'lines')} of text "
                      f"(first at line {lines[0]}) and nothing kb recognises as its format. {fmt}")


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def describe_tree(src: "SourceText", config: "Config",
                  diags: list[Diagnostic] = ()) -> Diagnostic | None:  # type: ignore[assignment]
    """One KB126 warning for a tree.md kb reads no hypothesis from, or None.

    ``src`` is the decoded file, ``diags`` the parse diagnostics already found (stray
    anchor lines reported as KB117 do not count). Prose alone gets the plain warning;
    text shaped like hypotheses gets a summary of the shapes found and, when
    :func:`tree_rewrite` can, a fix that rewrites them in the seed's tree.md format.
    """
    found = scan_tree(src)
    stray = {d.line for d in diags if d.code == "KB117"}
    if not found.items and all(ln in stray for ln, _ in found.fields):
        # Nothing shaped like a hypothesis (anchor lines KB117 reports one by one aside):
        # prose alone, or an empty tree (a title, comments, fenced examples) — silence.
        return _prose_only(src, stray, "kb reads no hypothesis from this file",
                           _TREE_FORMAT)
    parts = []
    for shape, count, first in found.shapes():
        one, many, tail = _SHAPE_WORDS[shape]
        parts.append(f"{_plural(count, one, many)} {tail} (first at line {first})")
    if found.fields:
        keys = sorted({k for _, k in found.fields})
        shown = ", ".join(f"'{k}:'" for k in keys[:3])  # as written, never repr
        parts.append(f"{_plural(len(found.fields), 'field line', 'field lines')} "
                     f"({shown}; first at line "
                     f"{found.fields[0][0]}) outside any declaration")
    first_line = min([it.line for it in found.items] + [ln for ln, _ in found.fields])
    msg = f"kb reads no hypothesis from this file, but it holds {'; '.join(parts)}. {_TREE_FORMAT}"
    text, why = tree_rewrite(src, found, config) if found.items else (None, "")
    if text is not None:
        it = found.items[0]
        head = f"{'#' * (2 + it.raw_id.count('.'))} {it.raw_id}: "
        status = next((ln for ln in text.split("\n")[1:] if ln.startswith("Status: ")), "")
        msg += (f". Fix: write line {it.line} as '{head}{_short(it.statement)}' then '{status}', "
                f"and likewise each of the {len(found.items)} (this rewrite reads back as the "
                "same hypotheses, IDs and nesting)")
    elif why:
        msg += f". No rewrite is offered: {why}"
    return Diagnostic(path=src.path, line=first_line, code=CODE, severity="warning", message=msg)


_EXP_KEYS = {"hypothesis": "Hypothesis", "假设": "Hypothesis", "date": "Date", "日期": "Date",
             "status": "Status", "状态": "Status", "conclusion": "结论", "结论": "结论",
             "result": "结论", "结果": "结论"}


def _field_lines(src: "SourceText", keys: set[str] | dict[str, str],
                 stop_at_section: bool = False) -> list[tuple[int, str, str]]:
    out = []
    for i in range(src.body_start, len(src.lines)):
        line = src.lines[i]
        if stop_at_section and line.startswith("## "):
            break
        if src.is_masked(i) or line.startswith("#"):
            continue
        m = _FIELD.match(line)
        if m and m.group("key").strip().lower() in keys:
            out.append((i + 1, m.group("key").strip(), m.group("value")))
    return out


def _rewritten(src: "SourceText", new_lines: dict[int, str]) -> "SourceText":
    from kb.text import SourceText

    lines = list(src.lines)
    for ln, text in new_lines.items():
        lines[ln - 1] = text
    return SourceText.from_text("\n".join(lines), src.path, src.bom)


def experiment_rewrite(src: "SourceText") -> tuple[dict[int, str] | None, str]:
    """``({line: new text}, "")`` when bolding the field lines makes kb read each of
    them with no new error; ``(None, why not)`` otherwise."""
    from kb.parse.experiment import parse_experiment

    fields = _field_lines(src, _EXP_KEYS)
    new: dict[int, str] = {}
    for ln, key, value in fields:
        canon = _EXP_KEYS[key.lower()]
        if canon == "结论":
            return None, "a conclusion belongs under '## 结果' as '**结论**: 支持|推翻|不确定 …'"
        if canon == "Status" and EXPERIMENT_STATUS.canonical(value) is None:
            return None, f"the status '{value}' (line {ln}) is not 进行中 or 已完成"
        if canon in {_EXP_KEYS[k.lower()] for n, k, _ in fields if n < ln}:
            return None, f"{canon} is given twice"
        new[ln] = f"**{canon}**: {value.strip()}"
    [exp], diags = parse_experiment(_rewritten(src, new))
    if set(exp.anchors) != {_EXP_KEYS[k.lower()] for _, k, _ in fields} or any(
            d.severity == "error" for d in diags):
        return None, "the rewrite would not read back as the same fields"
    return new, ""


def describe_experiment(src: "SourceText", untitled: bool = True) -> Diagnostic | None:
    """An experiment with no anchor and no conclusion kb reads (its title may be read)."""
    fields = _field_lines(src, _EXP_KEYS)
    if not fields:
        return _prose_only(src, set(), "kb reads nothing from this experiment", _EXP_FORMAT) \
            if untitled else None
    return _unread_fields(src, fields, "kb reads no field of this experiment",
                          "the title '# E001: H1 - <action>' and bold fields such as "
                          "'**Status**: 进行中' ('**结论**: 支持 …' under '## 结果')",
                          experiment_rewrite(src))


_CARD_KEYS = {"标题": "标题", "id": "ID", "状态": "状态", "优先级": "优先级", "依赖": "依赖",
              "被依赖": "被依赖", "来源": "来源", "计划": "计划", "概率": "概率",
              "价值/关键性": "价值/关键性", "来源问题": "来源问题", "类型": "类型",
              "可信断言": "可信断言", "上级体系": "上级体系", "子方法": "子方法", "相关": "相关",
              "适用场景": "适用场景", "结论": "结论", "分类": "分类", "时间": "时间"}


def card_rewrite(src: "SourceText", fmt: str) -> tuple[dict[int, str] | None, str]:
    """``({line: new text}, "")`` when writing each field line as ``- key: value``
    makes kb read every one with no error; ``(None, why not)`` otherwise."""
    from kb.parse.card import parse_card

    fields = _field_lines(src, _CARD_KEYS, stop_at_section=True)
    new = {ln: f"- {_CARD_KEYS[k.lower()]}: {v.strip()}" for ln, k, v in fields}
    keys = [_CARD_KEYS[k.lower()] for _, k, _ in fields]
    if len(set(keys)) != len(keys):
        return None, "a field is given twice"
    [card], diags = parse_card(_rewritten(src, new), fmt)
    if set(card.anchors) != set(keys) or any(d.severity == "error" for d in diags):
        return None, "the rewrite would not read back as the same fields"
    return new, ""


def describe_card(src: "SourceText", fmt: str, untitled: bool = True) -> Diagnostic | None:
    """A card with no anchor line and no entry kb reads."""
    fields = _field_lines(src, _CARD_KEYS, stop_at_section=True)
    if not fields:
        return _prose_only(src, set(), "kb reads nothing from this card", _CARD_FORMAT) \
            if untitled else None
    return _unread_fields(src, fields, "kb reads nothing from this card",
                          "card fields as '- key: value' list lines under the H1, e.g. "
                          "'- 状态: 求解中'", card_rewrite(src, fmt))


def _unread_fields(src: "SourceText", fields: list[tuple[int, str, str]], opening: str,
                   reads: str, rewrite: tuple[dict[int, str] | None, str]) -> Diagnostic:
    """The one KB126 of an experiment or card whose field lines kb does not read: what it
    holds, what kb ``reads``, and the checked ``rewrite`` (or why none is offered)."""
    keys = sorted({k for _, k, _ in fields})
    shown = ", ".join(f"'{k}:'" for k in keys[:4])  # as written, never repr
    msg = (f"{opening}, but it holds {_plural(len(fields), 'field line', 'field lines')} "
           f"({shown}; first at line {fields[0][0]}). kb "
           f"reads {reads}")
    new, why = rewrite
    if new:
        ln = min(new)
        msg += f". Fix: write line {ln} as '{_short(new[ln])}', and likewise each field line"
    else:
        msg += f". No rewrite is offered: {why}"
    return Diagnostic(path=src.path, line=fields[0][0], code=CODE, severity="warning", message=msg)


def _short(text: str, n: int = 60) -> str:
    text = text.strip()
    return text if len(text) <= n else text[: n - 1] + "…"


def describe_unread(src: "SourceText", fmt: str, objects: list, diags: list[Diagnostic],
                    config: "Config") -> Diagnostic | None:
    """The one KB126 warning for a file of ``fmt`` from which kb read nothing, or None.

    Cheap: returns at once for a file that yielded something, or whose parse
    diagnostics already explain it (KB116, KB119, …).
    """
    if any(d.code in EXPLAINED for d in diags):
        return None
    if fmt == "tree":
        if objects:
            return None
        return describe_tree(src, config, diags)
    if fmt == "experiment":
        if not objects:
            return None
        e = objects[0]
        if e.anchors or e.conclusion is not None:
            return None  # (a title alone is read, but no field: still reported)
        return describe_experiment(src, any(d.code == "KB130" for d in diags))
    if fmt in ("problem", "proposition", "method", "verified"):
        if not objects:
            return None
        c = objects[0]
        if c.anchors or getattr(c, "entries", ()):
            return None
        return describe_card(src, fmt, not c.title)
    return None
