"""Propositions: create one in its category folder (``kb propo add``), list the categories.

The write side of ``Propos/<category>/<pid>.md`` (VIBEMATH-V3.md). Errors as
in :mod:`kb.ops.problems`: usage 2, :class:`kb.ops.card_edit.CardError` 1,
not_found / conflict / stale 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union

from kb.errors import UsageError
from kb.index import Index
from kb.model import Proposition
from kb.ops.card_edit import CardError
from kb.ops.card_input import UNSAFE_NEW, check_new_id, read_text_arg, title_from
from kb.ops.result import OpResult
from kb.ops.workspace import Workspace, check_depends, check_free_id, proposition_categories, run_op
from kb.render.card import render_card
from kb.repo import KnowledgeBase, resolve_kb
from kb.research.values import parse_priority_arg, parse_probability
from kb.text import one_line, unsafe_id_reason


def categories(kb: Union[KnowledgeBase, str, Path, None] = None) -> list[str]:
    """The proposition categories (folders under Propos/) of the KB."""
    k = resolve_kb(kb)
    with Index(k) as idx:
        idx.refresh()
        return proposition_categories(k, idx)


def check_category(ws: Workspace, category: str | None, new_category: bool) -> str:
    """The category folder name to use; UsageError when it is missing, unsafe as a folder
    name, or unknown without ``new_category``.

    Raises UsageError for a missing, unsafe or unknown category (unless ``new``).
    """
    cats = ws.categories()
    if not category or not category.strip():
        raise UsageError("a proposition needs a CATEGORY (its folder under Propos/); known: "
                        + (", ".join(cats) or "none yet (pass --new-category)"))
    c = category.strip()
    why = unsafe_id_reason(c)
    if why is None and (c.startswith(".") or UNSAFE_NEW.search(c.replace(" ", "_"))):
        why = "holds a character not allowed in a folder name"
    if why:
        raise UsageError(f"category {category!r} {why}; give a folder name such as 数论")
    if c in cats:
        return c
    import unicodedata

    from kb.repo import fold

    nfc = unicodedata.normalize("NFC", c)
    for cat in cats:
        if unicodedata.normalize("NFC", cat) == nfc:
            return cat  # the same name, typed in another Unicode form: the folder there is
    twin = next((cat for cat in cats if fold(cat) == fold(c)), None)
    if twin is not None:
        # a second folder macOS and Windows take for the first: refused even when new
        raise UsageError(f"category {c!r} differs from the category {twin!r} only in case; "
                         f"use {twin!r}")
    if not new_category:
        raise UsageError(f"unknown category {c!r}; use one of: {', '.join(cats) or '(none yet)'} "
                        "(or pass --new-category to create it)")
    return c


def add_proposition(kb: Union[KnowledgeBase, str, Path, None], category: str, pid: str,
                    statement: str, title: str | None = None, probability: Union[float, str] = 0.5,
                    value: Union[float, str] = 0.5, depends: Sequence[str] = (),
                    priority: Union[int, str] = 1, source_problem: str | None = None,
                    source_direction: str | None = None, *, new_category: bool = False,
                    formal: str | None = None, no_commit: bool = False, owner: str | None = None,
                    expect: Union[str, Mapping[str, str], None] = None,
                    on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Create ``Propos/<category>/<pid>.md`` (状态 未定论).

    ``category`` must be an existing folder unless ``new_category``.

    Raises UsageError for an invalid ID, category or number, ConflictError when the card exists,
    CardError (refused) when the statement would change the card's structure; every write also
    raises LockedError (another owner's lock), StaleError (``expect`` no longer matches),
    ConflictError (the file is dirty or HEAD moved) and EnvironmentError_ (git failed, the work
    tree is not writable); nothing is written then.
    """
    check_new_id(pid, "proposition ID")
    statement = read_text_arg(statement, None, "statement")
    title = one_line(title, "title") if title is not None else title_from(statement)
    prob = parse_probability(probability, "probability")
    val = parse_probability(value, "value (价值/关键性)", open_interval=False)
    prio = parse_priority_arg(priority)
    formal_v = one_line(formal, "formal statement", required=False) if formal else None
    if source_direction is not None:
        check_new_id(source_direction, "source direction")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        cat = check_category(ws, category, new_category)
        check_free_id(ws, pid)
        deps = check_depends(ws, depends, pid)
        if source_problem:
            ws.require(source_problem, ("problem",), "source problem")
        anchors: dict[str, str] = {}
        if formal_v:
            anchors["形式化"] = formal_v
        if source_direction:
            anchors["来源方向"] = source_direction
        rel = ws.proposition_rel(cat, pid)
        obj = Proposition(id=pid, path=rel, line=1, title=title, status="未定论", category=cat,
                          probability=prob, value=val, priority=prio, depends=deps,
                          source_problem=source_problem or "", statement=statement,
                          anchors=anchors)
        e = ws.create(rel, "proposition", render_card(obj), pid)
        got = e.model()
        if got.statement != statement.strip() or got.entries:
            raise CardError("the statement would change the structure of the card (a line "
                            "starting with '#' or an unclosed code fence); use '#### ' or close it")
        return ([f"{pid}: new proposition {ws.kb.prefix}{rel} (概率 {prob:g}, 价值/关键性 {val:g})"],
                {"id": pid, "path": ws.kb.prefix + rel, "category": cat, "probability": prob,
                 "value": val})

    return run_op(kb, "propo.add", f"kb propo add {pid}: {title}", build, ids=[pid],
                  no_commit=no_commit, owner=owner, expect=expect, on_wait=on_wait)



__all__ = ["add_proposition", "categories", "check_category"]
