"""Experiment write operations (seed hypothesis-tree.md "createExperimentRecord" and
"updateExperimentResult"; DESIGN.md §2.2, §3).

``new_experiment`` creates ``experiments/E<next>.md`` from ``templates/experiment.md``
and moves its hypothesis from 待验 to 进行中; ``log`` appends to ``## 执行记录``;
``update_section`` fills a design field (目标 / 方法 / 预期); ``record_result``
fills ``## 结果``, sets the experiment 已完成, appends it to the hypothesis's
Evidence and sets the hypothesis status by the seed's rule over *all* its
evidence (被推翻 if any refutes; else 被支持 if any supports; otherwise it stays
进行中). Each is one transaction and one commit that also refreshes
DASHBOARD.md; edits splice only the lines they change.

Experiment IDs: ``E<max+1>``, zero-padded to the width of the existing files
(at least 3 digits), never a number whose file ever existed — the maximum
is taken over the files in the working tree, the experiment IDs in the index,
and the files ever deleted from the experiments folder
(``git log --diff-filter=D``, see kb.ops.history.history_ids).

Dates: ``date=`` (``kb exp new --date``), else the ``KB_TODAY`` environment
variable (tests pin it), else today's local date.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from typing import Any

from kb.errors import ConflictError, RefusedError, UsageError
from kb.numbers import small_int
from kb.ops.dashboard import stage_dashboard
from kb.ops.experiment_edit import ExpEdit, text_lines
from kb.ops.result import OpResult
from kb.ops.session import OnWait, Session, expect_map, short
from kb.research.evidence import evidence_status
from kb.text import one_line
from kb.vocab import (CONCLUSION, EXPERIMENT_STATUS, HYPOTHESIS_MOVES, HYPOTHESIS_STATUS,
                      is_legal_move)

__all__ = ["new_experiment", "log", "update_section", "record_result", "DESIGN_FIELDS",
           "next_experiment_id"]

#: Design fields of ``## 实验设计`` and the English names the CLI also accepts.
DESIGN_FIELDS = {"目标": "goal", "方法": "method", "预期": "expected"}
_FIELD_ALIASES = {"goal": "目标", "aim": "目标", "method": "方法", "methods": "方法",
                  "expected": "预期", "expectation": "预期", "prediction": "预期"}
_BOLD_KEY = re.compile(r"^\*\*(?P<key>[^*]+?)\*\*[ \t]*[:：]")


def today(date: str | None = None) -> str:
    """``date`` or ``$KB_TODAY`` or today's date, checked as YYYY-MM-DD.

    Raises UsageError for a malformed date.
    """
    d = (date or os.environ.get("KB_TODAY") or _dt.date.today().isoformat()).strip()
    try:
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", d):  # ASCII digits (\d: ２０２６ too)
            raise ValueError
        _dt.date.fromisoformat(d)
    except ValueError:
        raise UsageError(f"invalid date {d!r}; write YYYY-MM-DD, e.g. 2026-11-29") from None
    return d


def next_experiment_id(names: list[str], deleted: set[str] = frozenset()) -> str:  # type: ignore[assignment]
    """``E<max+1>`` over ``names`` and ``deleted`` (IDs or file stems), padded to their width."""
    best, width = 0, 3
    for name in [*names, *deleted]:
        m = re.fullmatch(r"E(\d+)", name)
        n = small_int(m.group(1)) if m else None
        if n is None:
            continue  # not kb-numbered, or a number too long to be an ID
        if n > best or (n == best and len(m.group(1)) > width):
            best = n
            width = max(3, len(m.group(1)))
    return f"E{best + 1:0{width}d}"


def _exp_rel(k: Any, eid: str) -> str:
    folder = k.config.paths["experiments"].strip("/")
    return f"{eid}.md" if folder in ("", ".") else f"{folder}/{eid}.md"


# -- operations ---------------------------------------------------------------------------


def new_experiment(kb: Any, hid: str, action: str, goal: str | None = None, *,
                   date: str | None = None, no_commit: bool = False, owner: str | None = None,
                   expect: Any = None, on_wait: OnWait | None = None) -> OpResult:
    """Create ``experiments/E<next>.md`` for hypothesis ``hid``; 待验 → 进行中.

    Raises NotFoundError for an unknown hypothesis, ConflictError when the file exists,
    RefusedError when the new file would not read back; every write also raises LockedError
    (another owner's lock), StaleError (``expect`` no longer matches), ConflictError (the file
    is dirty or HEAD moved) and EnvironmentError_ (git failed, the work tree is not writable);
    nothing is written then.
    """
    action = one_line(action, "the action")
    goal = one_line(goal, "the goal") if goal is not None else None
    day = today(date)
    from string import Template

    from kb.parse import parse_file
    from kb.resources import template

    with Session(kb, "exp.new", no_commit=no_commit, owner=owner, on_wait=on_wait) as s:
        k, idx = s.kb, s.idx
        tree = s.tree()
        s.tx.expect = expect_map(k, expect, tree.rel)
        h = tree.find(hid)
        used, deleted = s.history()
        # Every experiment file gives one object (its ID from the title, else the file name).
        rows = idx.extract("experiment", ("date",), fmt="experiment")
        names = [r[1] for r in rows] + [r[0].rsplit("/", 1)[-1][:-3] for r in rows]
        # (the history's trailer IDs too: a reset's `Kb-Override: E001` is all that is left
        # of an experiment whose commit a force push dropped)
        eid = next_experiment_id(names, deleted | used)
        rel = _exp_rel(k, eid)
        if s.tx.read(rel) is not None:
            raise ConflictError(f"{k.prefix}{rel} exists already (nothing was written)")
        status_word = EXPERIMENT_STATUS.word("进行中", s.locale)
        text = Template(template("experiment.md")).substitute(
            id=eid, hypothesis=h.id, hypothesis_text=h.statement, date=day, status=status_word,
            goal=goal or "[待补充]", action=action)
        data = text.encode("utf-8")
        res = parse_file(rel, data, k.config, "experiment")
        errors = [d for d in res.diagnostics if d.severity == "error"]
        s.tx.known_errors[s.tx.blob_id(data)] = errors
        exp = res.objects[0] if res.objects else None
        if errors or exp is None or exp.id != eid or exp.hypothesis != h.id or exp.date != day:
            raise RefusedError(f"the new experiment would not read back as {eid} for {h.id} "
                               f"({errors[0].format() if errors else 'title or header changed'}); "
                               "nothing was written")
        idx.put(rel, s.tx.blob_id(data), res)
        s.tx.write(rel, data)
        s.tx.ids.append(eid)
        changes = [f"created {k.prefix}{rel} ({eid} for {h.id}: {action})"]
        moved = None
        if h.status == "待验":
            tree.set_status(h, "进行中")
            tree.finish()
            moved = HYPOTHESIS_STATUS.word("进行中", s.locale)
            s.tx.ids.append(h.id)
            changes.append(f"{h.id} → {moved}")
        s.tx.summary = f"exp new {eid} for {h.id}: {short(action)}"
        dash = stage_dashboard(s, {rel: exp}, experiment_rows=rows)
        if dash:
            changes.append(f"refreshed {k.prefix}{dash}")
        details = {"path": k.prefix + rel, "hypothesis": h.id, "date": day, "status": status_word,
                   "hypothesis_status": moved or HYPOTHESIS_STATUS.word(h.status, s.locale)}
    return s.result("exp.new", eid, changes, details)


def log(kb: Any, eid: str, text: str, *, no_commit: bool = False, owner: str | None = None,
        expect: Any = None, on_wait: OnWait | None = None) -> OpResult:
    """Append ``text`` to ``## 执行记录`` (over its ``[待补充…]`` placeholder the first time).

    Returns the write's ``OpResult``. Raises UsageError for empty text, NotFoundError for an
    unknown experiment, RefusedError for a heading line in the text; every write also raises
    LockedError (another owner's lock), StaleError (``expect`` no longer matches), ConflictError
    (the file is dirty or HEAD moved) and EnvironmentError_ (git failed, the work tree is not
    writable); nothing is written then.
    """
    lines = text_lines(text, "the log text")
    with Session(kb, "exp.log", no_commit=no_commit, owner=owner, on_wait=on_wait) as s:
        e = ExpEdit(s, eid)
        s.tx.expect = expect_map(s.kb, expect, e.rel)
        how = e.write_into("执行记录", lines, before=("结果", "影响"))
        e.finish()
        s.tx.ids.append(e.id)
        s.tx.summary = f"exp log {e.id}: {short(lines[0])}"
        dash = stage_dashboard(s)
        changes = [f"{e.id} 执行记录: {how} ({s.kb.prefix}{e.rel})"]
        if dash:
            changes.append(f"refreshed {s.kb.prefix}{dash}")
    return s.result("exp.log", e.id, changes, {"path": s.kb.prefix + e.rel, "section": "执行记录",
                                                "how": how})


def canonical_field(name: str) -> str:
    """The canonical (zh) design field for a name of either language; UsageError otherwise.

    Raises UsageError for an unknown field name.
    """
    n = (name or "").strip()
    if n in DESIGN_FIELDS:
        return n
    alias = _FIELD_ALIASES.get(n.lower())
    if alias is None:
        raise UsageError(f"unknown design field {name!r}; accepted: "
                           + ", ".join(f"{zh}|{en}" for zh, en in DESIGN_FIELDS.items()))
    return alias


def update_section(kb: Any, eid: str, section: str, text: str, *, no_commit: bool = False,
                   owner: str | None = None, expect: Any = None,
                   on_wait: OnWait | None = None) -> OpResult:
    """Fill design field ``section`` (目标 / 方法 / 预期, or goal / method / expected).

    Returns the write's ``OpResult``. Raises UsageError for an unknown field or empty text,
    NotFoundError for an unknown experiment; every write also raises LockedError (another
    owner's lock), StaleError (``expect`` no longer matches), ConflictError (the file is dirty
    or HEAD moved) and EnvironmentError_ (git failed, the work tree is not writable); nothing is
    written then.
    """
    name = canonical_field(section)
    value = one_line(text, f"the {name} text")
    with Session(kb, "exp.update", no_commit=no_commit, owner=owner, on_wait=on_wait) as s:
        e = ExpEdit(s, eid)
        s.tx.expect = expect_map(s.kb, expect, e.rel)
        sec = e.section("实验设计")
        previous = None
        if sec is None:
            e.write_into("实验设计", [f"**{name}**: {value}"], before=("执行记录", "结果", "影响"))
        else:
            head, end = sec
            found = {}
            for n in range(head + 1, end):
                m = _BOLD_KEY.match(e.doc.lines[n - 1])
                if m and m.group("key").strip() in DESIGN_FIELDS:
                    found.setdefault(m.group("key").strip(), n)
            if name in found:
                ln = found[name]
                line = e.doc.lines[ln - 1]
                m = re.match(r"^(\*\*[^*]+?\*\*[ \t]*[:：][ \t]*)(.*)$", line)
                previous = m.group(2) if m else None
                if previous == value:
                    return s.result("exp.update", e.id, [f"{e.id} {name} already reads so (nothing to do)"],
                                    {"section": name, "text": value})
                e.doc.replace(ln, (m.group(1) if m else f"**{name}**: ") + value)
            else:
                order = list(DESIGN_FIELDS)
                earlier = [found[f] for f in order[:order.index(name)] if f in found]
                later = [found[f] for f in order[order.index(name) + 1:] if f in found]
                if earlier:
                    at = max(earlier) + 1
                elif later:
                    at = min(later)
                else:
                    at = e.last_text_line(head, end) + 1
                    if at == head + 1:
                        e.doc.insert(at, [""])
                        at += 1
                e.doc.insert(at, [f"**{name}**: {value}"])
        e.finish()
        s.tx.ids.append(e.id)
        s.tx.summary = f"exp update {e.id} {name}: {short(value)}"
        dash = stage_dashboard(s)
        changes = [f"{e.id} {name}: {value}"]
        if dash:
            changes.append(f"refreshed {s.kb.prefix}{dash}")
    return s.result("exp.update", e.id, changes, {"path": s.kb.prefix + e.rel, "section": name,
                                                   "text": value, "previous": previous})


def canonical_conclusion(word: str) -> str:
    """The canonical conclusion (支持 / 推翻 / …) for a word of either language; UsageError otherwise.

    Raises UsageError for an unknown conclusion word.
    """
    canon = CONCLUSION.canonical(word or "")
    if canon is None:
        raise UsageError(f"unknown conclusion {word!r}; accepted: {CONCLUSION.accepted()}")
    return canon


def record_result(kb: Any, eid: str, data: str, conclusion: str, reason: str, *,
                  no_commit: bool = False, owner: str | None = None, expect: Any = None,
                  on_wait: OnWait | None = None) -> OpResult:
    """Fill ``## 结果`` of ``eid``, set it 已完成, add it to its hypothesis's Evidence and
    set the hypothesis status by the seed's rule over all its evidence.

    Raises UsageError for an unknown conclusion, NotFoundError for an unknown experiment,
    RefusedError when it already has a result or names no hypothesis; every write also raises
    LockedError (another owner's lock), StaleError (``expect`` no longer matches), ConflictError
    (the file is dirty or HEAD moved) and EnvironmentError_ (git failed, the work tree is not
    writable); nothing is written then.
    """
    canon = canonical_conclusion(conclusion)
    data = one_line(data, "the data (--data)")
    reason = one_line(reason, "the reason (--reason)")
    with Session(kb, "exp.result", no_commit=no_commit, owner=owner, on_wait=on_wait) as s:
        k, idx = s.kb, s.idx
        e = ExpEdit(s, eid)
        s.tx.expect = expect_map(k, expect, e.rel)
        if e.exp.conclusion is not None:
            raise RefusedError(f"{e.id} already has a result (结论 {e.exp.conclusion}, "
                               f"{e.rel}:{e.exp.conclusion_line}); kb does not rewrite a recorded "
                               "result — record a new experiment")
        if not e.exp.hypothesis:
            raise RefusedError(f"{e.id} names no hypothesis in its title or **Hypothesis** line")
        tree = s.tree()
        h = tree.find(e.exp.hypothesis)
        word = CONCLUSION.word(canon, s.locale)
        e.write_into("结果", [f"**数据**: {data}", f"**结论**: {word} — {reason}"], before=("影响",))
        done = EXPERIMENT_STATUS.word("已完成", s.locale)
        e.set_header("Status", done)
        got = e.finish({"status": "已完成", "conclusion": canon})
        s.tx.ids += [e.id, h.id]
        changes = [f"{e.id} → {done} (结论: {word} — {reason})"]
        # Evidence (append only) and the status rule over every evidence experiment.
        evidence = list(h.evidence)
        if e.id not in evidence:
            tree.append_evidence(h, e.id)
            evidence.append(e.id)
        conclusions: dict[str, str | None] = {}
        for x in evidence:
            if x == e.id:
                conclusions[x] = canon
                continue
            rows = [r for r in idx.get(x) if r.kind == "experiment"]
            conclusions[x] = rows[0].fields().get("conclusion") if len(rows) == 1 else None
        ruled = evidence_status(conclusions.values()) or ("进行中" if h.status == "待验" else h.status)
        target = h.status
        note = ""
        if ruled != h.status:
            if is_legal_move(HYPOTHESIS_MOVES, h.status, ruled):
                target = ruled
                tree.set_status(h, ruled)
            else:
                note = (f" (the evidence says {HYPOTHESIS_STATUS.word(ruled, s.locale)}, a move the "
                        f"rules do not allow from {HYPOTHESIS_STATUS.word(h.status, s.locale)}; use "
                        f"`kb hyp status {h.id} … --force --reason R` if it is a correction)")
        tree.finish()
        tword = HYPOTHESIS_STATUS.word(target, s.locale)
        arrow = "→" if target != h.status else "stays"
        changes.append(f"{h.id} {arrow} {tword} (Evidence: {', '.join(evidence)}){note}")
        s.tx.summary = f"exp result {e.id}: {word} ({h.id} {arrow} {tword})"
        dash = stage_dashboard(s, {e.rel: got})
        if dash:
            changes.append(f"refreshed {k.prefix}{dash}")
        details = {"path": k.prefix + e.rel, "conclusion": word, "status": done,
                   "hypothesis": h.id, "hypothesis_status": tword,
                   "previous_hypothesis_status": HYPOTHESIS_STATUS.word(h.status, s.locale),
                   "evidence": evidence}
    return s.result("exp.result", e.id, changes, details)

