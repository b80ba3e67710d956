"""Methods: create one, record an application, record an improvement (``kb method``).

The write side of ``Methods/<mid>.md`` (VIBEMATH-V3.md). Each function is one
:func:`kb.ops.workspace.run_op` returning an :class:`kb.ops.result.OpResult`.
Raises :class:`kb.errors.UsageError` for bad arguments,
:class:`kb.errors.NotFoundError` for an unknown method, problem or related ID,
:class:`kb.errors.ConflictError` for a taken ID, :class:`kb.ops.card_edit.CardError`
for a text that would change the card's structure.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, Union

from kb import clock
from kb.errors import NotFoundError, UsageError
from kb.model import Method
from kb.numbers import small_int
from kb.ops.card_edit import PLACEHOLDERS, CardError, same_sections
from kb.ops.card_input import check_new_id, read_text_arg
from kb.ops.result import OpResult
from kb.ops.workspace import Workspace, check_free_id, run_op
from kb.parse.common import dump_list
from kb.render.card import render_card
from kb.repo import KnowledgeBase
from kb.text import one_line
from kb.vocab import METHOD_TYPE


def add_method(kb: Union[KnowledgeBase, str, Path, None], mid: str, name: str,
               type: str = "方法", parent: str | None = None, scenario: str = "",
               content: str = "", related: Sequence[str] = (), *, no_commit: bool = False,
               owner: str | None = None, expect: Union[str, Mapping[str, str], None] = None,
               on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Create ``Methods/<mid>.md`` (状态 经验); with ``parent`` both sides of the hierarchy.

    Raises UsageError for an invalid type or ID, NotFoundError for an unknown parent or related
    ID, CardError (refused) when the content would change the card's structure; every write also
    raises LockedError (another owner's lock), StaleError (``expect`` no longer matches),
    ConflictError (the file is dirty or HEAD moved) and EnvironmentError_ (git failed, the work
    tree is not writable); nothing is written then.
    """
    check_new_id(mid, "method ID")
    name = one_line(name, "method name")
    if type not in METHOD_TYPE:
        raise UsageError(f"method type {type!r} is not valid; use one of: {', '.join(METHOD_TYPE)}")
    scenario = one_line(scenario, "scenario", required=False)
    body = read_text_arg(content, None, "content", required=False)

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        check_free_id(ws, mid)
        lines = []
        parents: tuple[str, ...] = ()
        if parent:
            p = ws.require(parent, ("method",), "parent method")
            parents = (parent,)
            subs = tuple(p.submethods) + ((mid,) if mid not in p.submethods else ())
            ws.edit(parent, ("method",)).set_anchor("子方法", dump_list(subs))
            lines.append(f"{parent}: 子方法 {dump_list(subs)}")
        rel_ids = []
        for r in related:
            if not ws.exists(r):
                raise NotFoundError(f"related ID {r!r} names no object; give existing IDs")
            rel_ids.append(r)
        rel = ws.method_rel(mid)
        obj = Method(id=mid, path=rel, line=1, title=name, status="经验", type=type,
                     parents=parents, related=tuple(rel_ids), scenario=scenario,
                     anchors={"核心内容": body})
        e = ws.create(rel, "method", render_card(obj), mid)
        got = e.model()
        if got.applications or [s[0] for s in e.sections()] != ["核心内容", "应用记录", "改进历史"]:
            raise CardError("the content would change the structure of the card (a line "
                            "starting with '## ' or '### '); use '#### ' headings")
        return ([f"{mid}: new method {ws.kb.prefix}{rel} ({type})"] + lines,
                {"id": mid, "path": ws.kb.prefix + rel, "type": type, "parent": parent})

    return run_op(kb, "method.add", f"kb method add {mid}: {name}", build, ids=[mid],
                  no_commit=no_commit, owner=owner, expect=expect, on_wait=on_wait)


def apply_method(kb: Union[KnowledgeBase, str, Path, None], mid: str, problem: str,
                 effect: str, direction: str | None = None, *, no_commit: bool = False,
                 owner: str | None = None, expect: Union[str, Mapping[str, str], None] = None,
                 on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Append ``### 应用 N｜<time>｜问题 <qid> 方向 <dir>`` and the effect to ``## 应用记录``.

    Raises NotFoundError for an unknown method or problem, CardError (refused) when the effect
    would change the card's structure; every write also raises LockedError (another owner's
    lock), StaleError (``expect`` no longer matches), ConflictError (the file is dirty or HEAD
    moved) and EnvironmentError_ (git failed, the work tree is not writable); nothing is written
    then.
    """
    effect = read_text_arg(effect, None, "effect")
    if direction is not None:
        check_new_id(direction, "direction")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        m = ws.require(mid, ("method",), "method")
        ws.require(problem, ("problem",), "problem")
        e = ws.edit(mid, ("method",))
        n = max((a.number for a in m.applications), default=0) + 1
        when = clock.fmt_time(clock.now())
        head = f"### 应用 {n}｜{when}｜问题 {problem}" + (f" 方向 {direction}" if direction else "")
        before = len(m.applications)
        secs = [s[0] for s in e.sections()]
        e.add_block("应用记录", [head, *effect.split("\n")], PLACEHOLDERS["应用"])
        got = e.model()
        if len(got.applications) != before + 1 or \
                not same_sections(secs, [s[0] for s in e.sections()], "应用记录"):
            raise CardError("the effect would change the structure of the card (a line starting "
                            "with '## ' or '### '); use '#### ' headings")
        apps = len(got.applications)
        lines = [f"{mid}: 应用 {n}｜{when}｜问题 {problem}" + (f" 方向 {direction}" if direction else "")]
        if apps >= 3:
            lines.append(f"{mid} has {apps} applications: a candidate for the global method "
                         "library (a decision for a person)")
        return lines, {"id": mid, "number": n, "problem": problem, "direction": direction,
                       "time": when, "applications": apps}

    return run_op(kb, "method.apply", f"kb method apply {mid} to {problem}", build, ids=[mid],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=mid, on_wait=on_wait)


_IMPROVEMENT = re.compile(r"^###[ \t]+v(\d+)（")


def improve_method(kb: Union[KnowledgeBase, str, Path, None], mid: str, reason: str,
                   text: str | None = None, text_file: str | Path | None = None, *,
                   no_commit: bool = False, owner: str | None = None,
                   expect: Union[str, Mapping[str, str], None] = None,
                   on_wait: Callable[[str], None] | None = None) -> OpResult:
    """Append ``### v<N>（<reason>）`` and the text to ``## 改进历史``.

    Raises NotFoundError for an unknown method, CardError (refused) when the text would change
    the card's structure; every write also raises LockedError (another owner's lock), StaleError
    (``expect`` no longer matches), ConflictError (the file is dirty or HEAD moved) and
    EnvironmentError_ (git failed, the work tree is not writable); nothing is written then.
    """
    reason = one_line(reason, "reason")
    body = read_text_arg(text, text_file, "improvement text")

    def build(ws: Workspace) -> tuple[list[str], dict[str, Any]]:
        ws.require(mid, ("method",), "method")
        e = ws.edit(mid, ("method",))

        def versions() -> list[int]:
            sec = e.section("改进历史")
            if sec is None:
                return []
            src = e.src()
            return [n for i in range(sec[1] + 1, sec[2])
                    if (m := _IMPROVEMENT.match(src.lines[i])) and not src.is_masked(i)
                    and (n := small_int(m.group(1))) is not None]

        have = versions()
        n = max(have, default=0) + 1
        secs = [s[0] for s in e.sections()]
        apps = len(e.model().applications)
        e.add_block("改进历史", [f"### v{n}（{reason}）", *body.split("\n")], PLACEHOLDERS["改进"])
        now_secs = [s[0] for s in e.sections()]
        if len(versions()) != len(have) + 1 or len(e.model().applications) != apps \
                or not same_sections(secs, now_secs, "改进历史"):
            raise CardError("the text would change the structure of the card (a line starting "
                            "with '## ' or '### '); use '#### ' headings")
        return [f"{mid}: v{n}（{reason}）"], {"id": mid, "version": n, "reason": reason}

    return run_op(kb, "method.improve", f"kb method improve {mid}: {reason}", build, ids=[mid],
                  no_commit=no_commit, owner=owner, expect=expect,
                  target_id=mid, on_wait=on_wait)


__all__ = ["add_method", "apply_method", "improve_method"]
