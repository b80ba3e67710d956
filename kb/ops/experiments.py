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

from kb.errors import ConflictError, NotFoundError, RefusedError, UsageError
from kb.model import Experiment
from kb.ops.dashboard import stage_dashboard
from kb.ops.result import OpResult
from kb.ops.session import OnWait, Session, expect_map, one_line, short
from kb.ops.transaction import FormatGuardError
from kb.ops.tree_edit import id_span, read_clean
from kb.research.evidence import evidence_status
from kb.vocab import (CONCLUSION, EXPERIMENT_STATUS, HYPOTHESIS_MOVES, HYPOTHESIS_STATUS,
                      is_legal_move)

__all__ = ["new_experiment", "log", "update_section", "record_result", "DESIGN_FIELDS",
           "next_experiment_id"]

#: Design fields of ``## 实验设计`` and the English names the CLI also accepts.
DESIGN_FIELDS = {"目标": "goal", "方法": "method", "预期": "expected"}
_FIELD_ALIASES = {"goal": "目标", "aim": "目标", "method": "方法", "methods": "方法",
                  "expected": "预期", "expectation": "预期", "prediction": "预期"}
_PLACEHOLDER = re.compile(r"^\s*\[待[^\]]*\]\s*$")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
_BOLD_KEY = re.compile(r"^\*\*(?P<key>[^*]+?)\*\*[ \t]*[:：]")


def today(date: str | None = None) -> str:
    """``date`` or ``$KB_TODAY`` or today's date, checked as YYYY-MM-DD."""
    d = (date or os.environ.get("KB_TODAY") or _dt.date.today().isoformat()).strip()
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", d):
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
        if not m:
            continue
        n = int(m.group(1))
        if n > best or (n == best and len(m.group(1)) > width):
            best = n
            width = max(3, len(m.group(1)))
    return f"E{best + 1:0{width}d}"


def _exp_rel(k: Any, eid: str) -> str:
    folder = k.config.paths["experiments"].strip("/")
    return f"{eid}.md" if folder in ("", ".") else f"{folder}/{eid}.md"


# -- one experiment file inside a session -------------------------------------------------


def find_experiment(s: Session, eid: str) -> Any:
    """The index row of experiment ``eid`` (``E5`` finds ``E005``); refuse unknown/duplicate."""
    eid = (eid or "").strip()
    if not eid:
        raise UsageError("no experiment ID given (e.g. E001)")
    rows = [r for r in s.idx.get(eid) if r.kind == "experiment"]
    if not rows:
        m = re.fullmatch(r"[Ee]0*(\d+)", eid)
        if m:
            want = int(m.group(1))
            rows = [r for r in s.idx.objects("experiment")
                    if re.fullmatch(r"E\d+", r.id) and int(r.id[1:]) == want]
    if not rows:
        have = sorted((r.id for r in s.idx.objects("experiment")), key=lambda x: (len(x), x))
        known = f"experiments: {id_span(have)}" if have else "there are no experiments yet"
        raise NotFoundError(f"unknown experiment {eid!r} ({known})")
    if len(rows) > 1:
        raise RefusedError(f"{eid} is declared {len(rows)} times "
                           f"({', '.join(r.path for r in rows)}); fix the duplicate first")
    return rows[0]


class ExpEdit:
    """An experiment file being edited: its document, sections, pending splices."""

    def __init__(self, s: Session, eid: str) -> None:
        from kb.render.document import Document
        from kb.text import SourceText

        self.s = s
        row = find_experiment(s, eid)
        self.id, self.rel = row.id, row.path
        self.exp: Experiment = row.model()
        self.old, self.old_blob = read_clean(s, self.rel, "experiment")
        self.doc = Document.from_bytes(self.old, self.rel)
        src = SourceText.from_text("\n".join(self.doc.lines) + "\n", self.rel)
        # (name, 1-based heading line) of every `## ` section outside code
        self.sections: list[tuple[str, int]] = []
        for i, ln in enumerate(self.doc.lines):
            if ln.startswith("## ") and not src.is_masked(i):
                self.sections.append((ln[3:].strip(), i + 1))
        self._masked = src

    def section(self, name: str) -> tuple[int, int] | None:
        """``(heading line, end)``: the section's body is lines ``(heading, end)`` (1-based, end exclusive)."""
        for n, ln in self.sections:
            if n == name:
                end = len(self.doc.lines) + 1
                for j in range(ln, len(self.doc.lines)):
                    line = self.doc.lines[j]
                    if (line.startswith("## ") or line.startswith("# ")) and not self._masked.is_masked(j):
                        end = j + 1
                        break
                return ln, end
        return None

    def last_text_line(self, head: int, end: int) -> int:
        """The last non-blank line of a section body, or the heading line."""
        last = head
        for n in range(head + 1, end):
            if self.doc.lines[n - 1].strip():
                last = n
        return last

    def placeholders(self, head: int, end: int) -> list[int]:
        """Lines of a section body that are a ``[待…]`` placeholder (outside code)."""
        return [n for n in range(head + 1, end)
                if _PLACEHOLDER.match(self.doc.lines[n - 1]) and not self._masked.is_masked(n - 1)]

    def write_into(self, name: str, lines: list[str], before: tuple[str, ...] = ()) -> str:
        """Put ``lines`` into section ``name``: over its placeholder(s), else after its text.

        A missing section is created before the first of ``before`` that exists
        (else at the end). Returns what was done: ``filled``, ``appended`` or ``created``.
        """
        sec = self.section(name)
        if sec is None:
            at = next((ln for b in before for n, ln in self.sections if n == b), None)
            block = [f"## {name}", "", *lines, ""]
            if at is None:
                at = len(self.doc.lines) + 1
                if self.doc.lines and self.doc.lines[-1].strip():
                    block.insert(0, "")
                block.pop()
            self.doc.insert(at, block)
            return "created"
        head, end = sec
        ph = self.placeholders(head, end)
        if ph:
            for n in reversed(ph[1:]):
                self.doc.delete(n)
            self.doc.replace(ph[0], "\n".join(lines))
            return "filled"
        last = self.last_text_line(head, end)
        add = ["", *lines]  # after the heading, or a new paragraph after the text
        nxt = last + 1
        if nxt <= len(self.doc.lines) and self.doc.lines[nxt - 1].strip():
            add = [*add, ""]
        self.doc.insert(nxt, add)
        return "appended"

    def set_header(self, key: str, value: str, after: tuple[str, ...] = ("Date", "Hypothesis")) -> None:
        """Set the value of a header anchor (``**Status**``), or add it after ``after``.

        The frontmatter's ``status:``, when there is one, follows ``**Status**``
        (the two must agree: KB104).
        """
        if key == "Status" and isinstance(self.exp.frontmatter.get("status"), str):
            self.doc.set_frontmatter("status", value)
        ln = self.exp.anchor_lines.get(key)
        if ln:
            line = self.doc.lines[ln - 1]
            m = re.match(r"^(\*\*[^*]+?\*\*[ \t]*[:：][ \t]*)", line)
            self.doc.replace(ln, (m.group(1) if m else f"**{key}**: ") + value)
            return
        at = next((self.exp.anchor_lines[a] for a in after if a in self.exp.anchor_lines), self.exp.line)
        self.doc.insert(at + 1, [f"**{key}**: {value}"])

    def finish(self, expect_changes: dict[str, Any] | None = None) -> Experiment:
        """Check (format guard, structure) and stage the new text; returns the new model.

        The structure must stay the same — same ID, hypothesis, sections and
        header anchors — apart from the fields in ``expect_changes``
        (field -> new value) that the operation means to change.
        """
        from kb.parse import parse_file

        new = self.doc.to_bytes()
        res = parse_file(self.rel, new, self.s.kb.config, "experiment")
        errors = [d for d in res.diagnostics if d.severity == "error"]
        blob = self.s.tx.blob_id(new)
        self.s.tx.known_errors[blob] = errors
        if errors:
            raise FormatGuardError(f"the edit of {self.s.kb.prefix}{self.rel} would add format errors "
                                   f"({errors[0].format()}); nothing was written", errors)
        got = res.objects[0] if len(res.objects) == 1 else None
        want = {"id": self.exp.id, "hypothesis": self.exp.hypothesis, "status": self.exp.status,
                "conclusion": self.exp.conclusion, "date": self.exp.date}
        want.update(expect_changes or {})
        old_sections = [n for n, _ in self.sections]
        bad = got is None or any(getattr(got, f) != v for f, v in want.items()) \
            or [x for x in got.sections if x not in old_sections] != [] \
            or [x for x in old_sections if x not in got.sections] != []
        if bad:
            raise RefusedError(f"the text would change the structure of {self.id} (its title, header "
                               "anchors or sections: a heading, a code fence left open, or a bold "
                               "anchor line in it?); nothing was written")
        self.s.idx.put(self.rel, blob, res)
        self.s.tx.write(self.rel, new)
        return got  # type: ignore[return-value]


def _text_lines(text: Any, what: str) -> list[str]:
    """Free text for a section: one or more lines, none of them a heading."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"{what} is empty; give the text to write")
    lines = [ln.rstrip("\r").rstrip() for ln in text.strip("\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    for ln in lines:
        if _HEADING.match(ln):
            raise RefusedError(f"{what} holds a heading line ({ln.strip()!r}); headings would split "
                               "the experiment's sections — write it without the leading '#'")
    return lines


# -- operations ---------------------------------------------------------------------------


def new_experiment(kb: Any, hid: str, action: str, goal: str | None = None, *,
                   date: str | None = None, no_commit: bool = False, owner: str | None = None,
                   expect: Any = None, on_wait: OnWait | None = None) -> OpResult:
    """Create ``experiments/E<next>.md`` for hypothesis ``hid``; 待验 → 进行中."""
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
        _, deleted = s.history()
        # Every experiment file gives one object (its ID from the title, else the file name).
        rows = idx.extract("experiment", ("date",), fmt="experiment")
        names = [r[1] for r in rows] + [r[0].rsplit("/", 1)[-1][:-3] for r in rows]
        eid = next_experiment_id(names, deleted)
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
    """Append ``text`` to ``## 执行记录`` (over its ``[待补充…]`` placeholder the first time)."""
    lines = _text_lines(text, "the log text")
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
    """The canonical (zh) design field for a name of either language; UsageError otherwise."""
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
    """Fill design field ``section`` (目标 / 方法 / 预期, or goal / method / expected)."""
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
    """The canonical conclusion (支持 / 推翻 / …) for a word of either language; UsageError otherwise."""
    canon = CONCLUSION.canonical(word or "")
    if canon is None:
        raise UsageError(f"unknown conclusion {word!r}; accepted: {CONCLUSION.accepted()}")
    return canon


def record_result(kb: Any, eid: str, data: str, conclusion: str, reason: str, *,
                  no_commit: bool = False, owner: str | None = None, expect: Any = None,
                  on_wait: OnWait | None = None) -> OpResult:
    """Fill ``## 结果`` of ``eid``, set it 已完成, add it to its hypothesis's Evidence and
    set the hypothesis status by the seed's rule over all its evidence."""
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

