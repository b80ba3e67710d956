"""Rules on tree.md (KB201, KB203–KB206, KB222), one file at a time (DESIGN.md §4).

KB201 ID grammar, KB203 heading level = ID depth, KB204 parent before child
and children in order, KB205 status words of every kind, KB206 a settled
hypothesis cites evidence, KB222 a hypothesis states something. Each takes a :class:`kb.checks.facts.FileFacts`
whose ``objects`` are the file's objects as attribute-access records (the
index's JSON; no model is built on this path). Every diagnostic names the
file and line, and what fixes it.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from kb.chars import HIDDEN_CHARS, hidden_char
from kb.checks.diagnostics import diag
from kb.checks.facts import FileFacts
from kb.checks.registry import file_rule
from kb.numbers import MAX_DIGITS, quoted, small_int
from kb.text import visible
from kb.vocab import (
    CONCLUSION,
    ENTRY_STATUS,
    EXPERIMENT_STATUS,
    HYPOTHESIS_STATUS,
    METHOD_STATUS,
    METHOD_TYPE,
    PROBLEM_SOURCE,
    PROBLEM_STATUS,
    PROPOSITION_STATUS,
)


def _q(oid: str) -> str:
    """A hypothesis's or experiment's ID as a message quotes it: one of thousands of digits
    (invalid, read from the file) by its start and its length (:func:`kb.numbers.quoted`)."""
    return quoted(oid, quote=False)


def _w(text: str) -> str:
    """A word read from a file (a status, a conclusion) as a message quotes it: as written,
    one of thousands of characters by its start and its length."""
    return quoted(text, limit=60)


def _few(ids: list[str], n: int = 10) -> str:
    """Up to ``n`` IDs joined, then how many there are in all (a line of 200,000 IDs is not
    repeated whole in a message)."""
    shown = ", ".join(_q(i) for i in ids[:n])
    # an ID holding a character that shows nothing (`H1.\u200b1`) reads as another ID: say so
    hidden = next((ch for ch in map(hidden_char, ids[:n]) if ch is not None), None)
    note = f" (holding {hidden}, which shows nothing)" if hidden else ""
    return (shown if len(ids) <= n else f"{shown}, … ({len(ids):,} in all)") + note


def _marks(n: int) -> str:
    """``n`` heading marks, or how many when they are too many to show."""
    return "#" * n if n <= 64 else f"{n:,} '#'"


def parent_id(hid: str) -> Optional[str]:
    """``H1.2.3`` -> ``H1.2``; a top-level ID -> None."""
    return hid.rsplit(".", 1)[0] if "." in hid else None


def depth(hid: str) -> int:
    """Number of components of a hypothesis ID (``H1`` 1, ``H1.2`` 2)."""
    return hid.count(".") + 1


@file_rule("KB201")
def id_grammar(f: FileFacts) -> list:
    """KB201: every hypothesis ID matches ``[kb] id_grammar``."""
    if f.fmt != "tree":
        return []
    grammar = f.config.id_grammar
    pat = re.compile(grammar)
    out = []
    kb_numbered = not f.config.custom_grammar
    for h in f.objects:
        matches = pat.fullmatch(h.id)
        if matches and not (kb_numbered and len(h.id) > MAX_DIGITS + 1):
            continue
        hint = ""
        if kb_numbered and re.fullmatch(r"H[0-9]+(?:\.[0-9]+)*", h.id):
            parts = h.id[1:].split(".")
            nums = [small_int(p) for p in parts]
            if None in nums:
                longest = max(len(p) for p in parts)
                out.append(diag(h.path, h.line, "KB201",
                                f"{quoted(h.id, quote=False)} is not a valid ID: a number of "
                                f"{longest} digits is not an ID number (at most {MAX_DIGITS} "
                                "digits); IDs are H<n>(.<n>)* with n >= 1 and no leading zeros — "
                                "give it the next free ID"))
                continue
            if matches:
                continue
            if all(n > 0 for n in nums):
                hint = f" (leading zeros: the ID would be {'H' + '.'.join(str(n) for n in nums)})"
            else:
                hint = " (numbers start at 1)"
        elif matches:
            continue
        out.append(diag(h.path, h.line, "KB201",
                        f"{quoted(h.id, quote=False)} does not match the ID grammar "
                        f"`{grammar}`{hint}; IDs are H<n>(.<n>)* with n >= 1 and no leading "
                        "zeros, or set [kb] id_grammar in kb.toml"))
    return out


@file_rule("KB203")
def heading_level(f: FileFacts) -> list:
    """KB203: ``H1`` is ``##``, ``H1.1`` is ``###`` … (a custom grammar: relative to
    the level of the file's first top-level declaration)."""
    if f.fmt != "tree":
        return []
    hyps = f.objects
    base = 2
    if f.config.custom_grammar:
        tops = [h for h in hyps if depth(h.id) == 1]
        if not tops:
            return []
        base = tops[0].level
    out = []
    for h in hyps:
        want = base + depth(h.id) - 1
        if h.level == want:
            continue
        fix = None
        old = f.line_text(h.line)
        if old is not None and old.startswith("#" * h.level) and want <= 64:
            fix = (h.line, old, "#" * want + old[h.level:])
        out.append(diag(h.path, h.line, "KB203",
                        f"{_q(h.id)} is declared with a level-{h.level} heading ({_marks(h.level)}); "
                        f"an ID of depth {depth(h.id)} takes {_marks(want)} (kb verify --fix)",
                        fix=fix))
    return out


def _block_end(h: Any) -> int:
    lines = list((h.anchor_lines or {}).values())
    return max(lines) if lines else h.line


@file_rule("KB204")
def parent_children(f: FileFacts) -> list:
    """KB204: ``Parent:`` / ``Children:`` agree with the IDs (they are derived)."""
    if f.fmt != "tree":
        return []
    hyps = f.objects
    declared = {h.id for h in hyps}
    # each parent's children in tree order, once each (a dict keeps the order: a
    # list's `in` made a parent of thousands of children quadratic)
    kids: dict[str, dict[str, None]] = {}
    for h in hyps:
        p = parent_id(h.id)
        if p is not None:
            kids.setdefault(p, {})[h.id] = None
    out = []
    seen: set[str] = set()
    for h in hyps:
        if h.id in seen:
            continue  # a duplicate declaration (KB202 says so)
        seen.add(h.id)
        lines = h.anchor_lines or {}
        want_parent = parent_id(h.id)
        have_parent = (h.anchors or {}).get("Parent")
        if want_parent is None:
            if have_parent is not None and have_parent.strip():
                out.append(diag(h.path, lines.get("Parent", h.line), "KB204",
                                f"{_q(h.id)} is a top-level hypothesis but has "
                                f"'Parent: {_q(have_parent.strip())}'; "
                                "remove the Parent: line"))
        else:
            if want_parent not in declared:
                out.append(diag(h.path, h.line, "KB204",
                                f"the parent {_q(want_parent)} of {_q(h.id)} is not declared in the "
                                "tree; "
                                f"declare {_q(want_parent)} or renumber {_q(h.id)}"))
            if have_parent is None:
                end = _block_end(h)
                old = f.line_text(end)
                fix = (end, old, f"{old}\nParent: {want_parent}") if old is not None else None
                out.append(diag(h.path, h.line, "KB204",
                                f"{_q(h.id)} has no 'Parent: {_q(want_parent)}' line (kb verify --fix)",
                                fix=fix))
            elif have_parent.strip() != want_parent:
                ln = lines.get("Parent", h.line)
                old = f.line_text(ln)
                fix = (ln, old, f"Parent: {want_parent}") if old is not None else None
                out.append(diag(h.path, ln, "KB204",
                                f"{_q(h.id)} has 'Parent: {_q(have_parent.strip())}'; its parent is "
                                f"{_q(want_parent)} (kb verify --fix)", fix=fix))
        want_kids = list(kids.get(h.id, ()))
        have_kids = list(h.children or [])
        if want_kids:
            if not h.has_children_line:
                end = _block_end(h)
                old = f.line_text(end)
                new_line = "Children: " + ", ".join(want_kids)
                fix = (end, old, f"{old}\n{new_line}") if old is not None else None
                out.append(diag(h.path, h.line, "KB204",
                                f"{_q(h.id)} has children but no '{new_line}' line (kb verify --fix)",
                                fix=fix))
            elif have_kids != want_kids:
                ln = lines.get("Children", h.line)
                old = f.line_text(ln)
                new_line = "Children: " + ", ".join(want_kids)
                fix = (ln, old, new_line) if old is not None else None
                have_set, want_set = set(have_kids), set(want_kids)
                missing = [k for k in want_kids if k not in have_set]
                extra = [k for k in have_kids if k not in want_set]
                what = []
                if missing:
                    what.append(f"misses {_few(missing)}")
                if extra:
                    what.append(f"names {_few(extra)}, not a declared child")
                twice = sorted({k for k in have_kids if have_kids.count(k) > 1}) \
                    if len(have_set) < len(have_kids) else []
                if twice:
                    what.append(f"names {_few(twice)} twice")
                if not what:
                    what.append("is not in tree order")
                out.append(diag(h.path, ln, "KB204",
                                f"'Children:' of {_q(h.id)} {' and '.join(what)}; write "
                                f"{quoted(new_line, limit=200)} (kb verify --fix)", fix=fix))
        elif have_kids:
            out.append(diag(h.path, lines.get("Children", h.line), "KB204",
                            f"'Children:' of {_q(h.id)} names "
                            f"{_few(have_kids)}, but no child of "
                            f"{_q(h.id)} is declared; remove them from the line"))
    return out


def _unhidden_fix(f: FileFacts, ln: int, word: str, words: Any) -> Optional[tuple[int, str, str]]:
    """The fix of line ``ln`` holding ``word``, a word of ``words`` but for characters that
    show nothing (``待\u200b验``, pasted): the same line without them; None otherwise."""
    clean = HIDDEN_CHARS.sub("", word) if not word.isascii() else word
    old = f.line_text(ln) if clean != word and clean in words else None
    if old is None or word not in old:
        return None
    return ln, old, old.replace(word, clean, 1)


#: The other closed vocabularies of the cards (DESIGN §2.4): kind -> (anchor, field, words).
_CARD_WORDS = {"problem": ("来源", "source", PROBLEM_SOURCE), "method": ("类型", "type", METHOD_TYPE)}


@file_rule("KB205")
def status_words(f: FileFacts) -> list:
    """KB205: status (and conclusion) words come from their vocabulary."""
    out = []
    for o in f.objects:
        lines = o.anchor_lines or {}
        if o.kind in ("hypothesis", "experiment"):
            vocab = HYPOTHESIS_STATUS if o.kind == "hypothesis" else EXPERIMENT_STATUS
            if o.status and o.status not in vocab.zh_to_en:
                ln = lines.get("Status", o.line)
                out.append(diag(o.path, ln, "KB205",
                                f"unknown status {_w(o.status)} of {_q(o.id)}; use one of "
                                f"{vocab.accepted()}",
                                fix=_unhidden_fix(f, ln, o.status, vocab.zh_to_en)))
        if o.kind == "experiment":
            if o.conclusion and o.conclusion not in CONCLUSION.zh_to_en:
                out.append(diag(o.path, o.conclusion_line or o.line, "KB205",
                                f"unknown conclusion {_w(o.conclusion)} of {_q(o.id)}; the **结论** line "
                                f"starts with one of {CONCLUSION.accepted()}"))
        elif o.kind in ("problem", "proposition", "method"):
            vocab = {"problem": PROBLEM_STATUS, "proposition": PROPOSITION_STATUS,
                     "method": METHOD_STATUS}[o.kind]
            if o.status and o.status not in vocab:
                out.append(diag(o.path, lines.get("状态", o.line), "KB205",
                                f"unknown 状态 {_w(o.status)} of {o.kind} {_q(o.id)}; use one of "
                                f"{', '.join(vocab)}"))
            closed = _CARD_WORDS.get(o.kind)
            if closed is not None:
                key, fld, words = closed
                value = o.get(fld)
                if value and value not in words:
                    out.append(diag(o.path, lines.get(key, o.line), "KB205",
                                    f"unknown {key} {_w(value)} of {o.kind} {_q(o.id)}; use one of "
                                    f"{', '.join(words)}"))
            for e in o.entries or []:
                if e.status and e.status not in ENTRY_STATUS:
                    out.append(diag(o.path, e.line, "KB205",
                                    f"unknown entry status {e.status!r}; use one of "
                                    f"{', '.join(ENTRY_STATUS)}"))
        elif o.kind == "verified":
            if o.conclusion and o.conclusion not in ("真", "假"):
                out.append(diag(o.path, lines.get("结论", o.line), "KB205",
                                f"unknown 结论 {o.conclusion!r} of verified card {o.id}; use 真 or 假"))
    return out


@file_rule("KB206")
def settled_without_evidence(f: FileFacts) -> list:
    """KB206: 被支持 / 被推翻 needs at least one experiment in Evidence."""
    if f.fmt != "tree":
        return []
    out = []
    for h in f.objects:
        if h.status in ("被支持", "被推翻") and not h.evidence:
            word = HYPOTHESIS_STATUS.word(h.status, f.config.locale)
            out.append(diag(h.path, (h.anchor_lines or {}).get("Evidence", (h.anchor_lines or {}).get("Status", h.line)),
                            "KB206", f"{_q(h.id)} is {word} but its Evidence is empty; name the "
                            "experiments that decided it"))
    return out


@file_rule("KB222")
def empty_statement(f: FileFacts) -> list:
    """KB222: a hypothesis's heading states something after ``<ID>:`` -- text with a
    character that shows (:func:`kb.text.visible`), as every write command requires.
    Typed by hand, ``## H3:`` or ``## H3: \u200b`` declared a hypothesis that claims
    nothing, and ``kb verify`` passed it."""
    if f.fmt != "tree":
        return []
    out = []
    for h in f.objects:
        statement = h.statement or ""
        if visible(statement):
            continue
        hidden = hidden_char(statement)
        what = f"shows nothing (it holds only {hidden})" if hidden else "is empty"
        out.append(diag(h.path, h.line, "KB222",
                        f"{_q(h.id)}'s statement {what}: write what it claims after "
                        f"'{_q(h.id)}: ' (a committed one: kb hyp edit {_q(h.id)} \"…\" "
                        "--reason R)"))
    return out
