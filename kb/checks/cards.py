"""Card rules of the research-cards issue that the snapshot rules do not already cover.

The card rules of DESIGN.md §4 live in :mod:`kb.checks.snapshot_rules`
(KB209 ID anchor, KB212/KB213 dependencies, KB214 可信断言, KB215 method
hierarchy, KB216 被依赖, KB217 Verified cards, KB218 probabilities). This
module adds:

- KB260 (error): an unsafe ID anywhere in a card — the object's own ID (its
  file name), the ``- ID:`` anchor, the IDs of the list anchors (依赖, 被依赖,
  可信断言, 上级体系, 子方法, 相关) and of 来源问题 / 来源方向 / 判断命题 /
  来源命题 (and a Verified card's 来源). Unsafe: a path separator (``/`` or
  ``\\``), ``..``, or a control character (VIBEMATH-V3.md "Safe IDs"; kb refuses
  such IDs instead of rewriting them).

Rules are plain functions over :class:`kb.checks.facts.FileFacts` returning
:class:`kb.model.Diagnostic` values.
"""

from __future__ import annotations

from typing import Any

from kb.checks.registry import file_rule

_CARDS = ("problem", "proposition", "method", "verified")
#: list anchor -> field of the object.
_LISTS = {"依赖": "depends", "被依赖": "depended_by", "可信断言": "claims", "上级体系": "parents",
          "子方法": "submethods", "相关": "related"}
_SINGLE = ("ID", "来源问题", "来源方向", "判断命题", "来源命题")


def _diag(path: str, line: int, message: str) -> Any:
    from kb.checks.catalogue import BY_CODE
    from kb.model import Diagnostic

    sev = BY_CODE["KB260"].severity if "KB260" in BY_CODE else "error"
    return Diagnostic(path=path, line=max(line, 0), code="KB260", severity=sev, message=message)


def _show(value: str) -> str:
    return repr(value)


@file_rule("KB260")
def unsafe_ids(f: Any) -> list:
    """KB260: no path separator, ``..`` or control character in any card ID."""
    from kb.text import unsafe_id_reason

    out = []
    for o in f.objects:
        kind = getattr(o, "kind", None)
        if kind not in _CARDS:
            continue
        path = o.path
        lines = getattr(o, "anchor_lines", None) or {}
        anchors = getattr(o, "anchors", None) or {}
        line0 = getattr(o, "line", 0) or 0
        why = unsafe_id_reason(o.id)
        if why:
            out.append(_diag(path, line0, f"the ID {_show(o.id)} (the file name) {why}; rename the "
                                          "file to a safe ID (letters, digits, CJK, '-', '_')"))
        singles = list(_SINGLE) + (["来源"] if kind == "verified" else [])
        for key in singles:
            v = anchors.get(key)
            if v is None or not v.strip():
                continue
            why = unsafe_id_reason(v.strip())
            if why:
                out.append(_diag(path, lines.get(key, line0),
                                 f"{key} {_show(v.strip())} of {o.id} {why}; write a safe ID"))
        for key, fld in _LISTS.items():
            for item in getattr(o, fld, None) or ():
                if not isinstance(item, str):
                    continue
                why = unsafe_id_reason(item)
                if why:
                    out.append(_diag(path, lines.get(key, line0),
                                     f"{key} of {o.id} names {_show(item)}, which {why}; write a "
                                     "safe ID"))
    return out
