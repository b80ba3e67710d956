"""Rules on experiment files (KB207, KB208), one file at a time (DESIGN.md §4).

KB207 a finished experiment states its conclusion; KB208 the file name is the
experiment's ID. Takes a :class:`kb.checks.facts.FileFacts`.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from kb.checks.diagnostics import diag
from kb.checks.facts import FileFacts
from kb.checks.registry import file_rule
from kb.numbers import MAX_DIGITS, quoted


@file_rule("KB207", "KB208")
def experiment_rules(f: FileFacts) -> list:
    """KB207: a finished experiment has a conclusion; KB208: file name = ID."""
    if f.fmt != "experiment":
        return []
    out = []
    for e in f.objects:
        shown = quoted(e.id, quote=False)  # an ID of thousands of digits: its start
        if e.status == "已完成" and e.conclusion is None:
            sections = e.sections or []
            if e.conclusion_line:
                out.append(diag(e.path, e.conclusion_line, "KB207",
                                f"{shown} is 已完成 but its **结论** line has no conclusion word; "
                                "start it with 支持, 推翻 or 不确定"))
            elif "结果" not in sections:
                out.append(diag(e.path, (e.anchor_lines or {}).get("Status", e.line), "KB207",
                                f"{shown} is 已完成 but has no '## 结果' section with a "
                                "'**结论**' line"))
        stem = PurePosixPath(e.path).stem
        if e.id != stem:
            out.append(diag(e.path, e.line, "KB208",
                            f"experiment {shown} is in {PurePosixPath(e.path).name}; an experiment "
                            + (f"file is named <ID>.md ({e.id}.md)" if shown == e.id else
                               f"ID has at most {MAX_DIGITS} digits and its file is named <ID>.md: "
                               f"give it its file's ID ({stem})")))
    return out
