"""One experiment file inside a write session (``kb exp``): find it, edit its sections
and anchors by splicing, re-parse and stage it (:class:`ExpEdit`).

The use cases are :mod:`kb.ops.experiments`; :func:`find_experiment` also serves
``kb hyp evidence`` (:mod:`kb.ops.hypotheses`).
"""

from __future__ import annotations

import re
from typing import Any

from kb.errors import NotFoundError, RefusedError, UsageError
from kb.model import Experiment
from kb.numbers import MAX_DIGITS, small_int
from kb.ops.session import Session
from kb.ops.transaction import FormatGuardError
from kb.ops.tree_edit import id_span, read_clean
from kb.text import BODY_MAX, check_length

_PLACEHOLDER = re.compile(r"^\s*\[待[^\]]*\]\s*$")
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")


def find_experiment(s: Session, eid: str) -> Any:
    """The index row of experiment ``eid`` (``E5`` finds ``E005``); refuse unknown/duplicate.

    Raises UsageError for an empty ID, NotFoundError for an unknown one, RefusedError when it is
    declared more than once.
    """
    eid = (eid or "").strip()
    if not eid:
        raise UsageError("no experiment ID given (e.g. E001)")
    rows = [r for r in s.idx.get(eid) if r.kind == "experiment"]
    if not rows:
        m = re.fullmatch(r"[Ee]0*(\d+)", eid)
        if m:
            want = small_int(m.group(1))
            if want is None:
                raise UsageError(f"experiment ID of {len(m.group(1))} digits is not valid; experiment "
                                 f"IDs are E<n> with at most {MAX_DIGITS} digits (e.g. E001)")
            rows = [r for r in s.idx.objects("experiment")
                    if re.fullmatch(r"E\d+", r.id) and small_int(r.id[1:]) == want]
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


def text_lines(text: Any, what: str) -> list[str]:
    """Free text for a section: one or more lines, none of them a heading (UsageError
    when empty, RefusedError for a heading line).

    Raises UsageError for empty text or one longer than :data:`kb.text.BODY_MAX`
    characters, RefusedError for a line that is a Markdown heading.
    """
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"{what} is empty; give the text to write")
    check_length(text.strip("\n"), what, BODY_MAX)
    lines = [ln.rstrip("\r").rstrip() for ln in text.strip("\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    for ln in lines:
        if _HEADING.match(ln):
            raise RefusedError(f"{what} holds a heading line ({ln.strip()!r}); headings would split "
                               "the experiment's sections — write it without the leading '#'")
    return lines


__all__ = ["ExpEdit", "find_experiment", "text_lines"]
