"""Render Vibe Math v3 cards and entry lines (VIBEMATH-V3.md).

Files written here must be readable by Vibe Math v3 itself: anchors in its
written order, list anchors as ``JSON.stringify`` writes them, the managed
sections with their placeholders, entry fields escaped.
"""

from __future__ import annotations

from kb.model import Entry, KBObject, Method, Problem, Proposition, VerifiedCard
from kb.parse.common import dump_list

PLACEHOLDERS = {"解法": "（暂无解法候选）", "证明": "（暂无证明尝试）", "证伪": "（暂无证伪尝试）",
                "应用": "（暂无应用记录）", "改进": "（暂无改进记录）"}


def escape_field(s: str) -> str:
    """Escape an entry field: ``\\`` -> ``\\\\``, ``｜`` -> ``\\｜``, newline -> ``\\n``."""
    return s.replace("\\", "\\\\").replace("｜", "\\｜").replace("\n", "\\n")


def fmt_number(x: float | int) -> str:
    """Numbers as JavaScript prints them: ``1`` not ``1.0``, ``0.9``, ``1e-7``."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e21:
        return str(int(x))
    return repr(x) if isinstance(x, float) else str(x)


def entry_line(e: Entry) -> str:
    """``### 解法 N｜<title>｜概率<x>｜状态<y>``."""
    return (f"### {e.kind} {e.number}｜{escape_field(e.title)}｜概率{fmt_number(e.probability)}"
            f"｜状态{escape_field(e.status)}")


def _entries(entries: tuple[Entry, ...], kind: str) -> list[str]:
    out: list[str] = []
    chosen = [e for e in entries if e.kind == kind]
    if not chosen:
        return [PLACEHOLDERS[kind]]
    for e in chosen:
        out.append(entry_line(e))
        if e.text:
            out.extend(e.text.split("\n"))
        out.append("")
    return out[:-1]


def _anchor(key: str, value: str) -> str:
    return f"- {key}: {value}"


def render_card(obj: KBObject) -> str:
    """A new card file for a Problem, Proposition, Method or VerifiedCard (LF endings)."""
    if isinstance(obj, Problem):
        a = obj.anchors
        lines = [f"# 问题｜{obj.title}", _anchor("标题", obj.title), _anchor("ID", obj.id),
                 _anchor("类型", "问题"), _anchor("状态", obj.status)]
        if "形式化" in a:
            lines.append(_anchor("形式化", a["形式化"]))
        lines += [_anchor("优先级", "" if obj.priority is None else str(obj.priority)),
                  _anchor("依赖", dump_list(obj.depends)),
                  _anchor("被依赖", dump_list(obj.depended_by)), _anchor("来源", obj.source)]
        for key in ("判断命题", "来源命题"):
            if key in a:
                lines.append(_anchor(key, a[key]))
        lines += [_anchor("计划", obj.plan), "", "## 陈述", obj.statement, ""]
        if "来源与动机" in a:
            lines += ["## 来源与动机", a["来源与动机"], ""]
        lines += ["## 解法候选", *_entries(obj.entries, "解法")]
    elif isinstance(obj, Proposition):
        a = obj.anchors
        lines = [f"# 命题｜{obj.title}", _anchor("标题", obj.title), _anchor("ID", obj.id),
                 _anchor("类型", "命题"), _anchor("状态", obj.status),
                 _anchor("概率", "" if obj.probability is None else fmt_number(obj.probability))]
        if "形式化" in a:
            lines.append(_anchor("形式化", a["形式化"]))
        lines += [_anchor("优先级", "" if obj.priority is None else str(obj.priority)),
                  _anchor("依赖", dump_list(obj.depends))]
        if obj.source_problem:
            lines.append(_anchor("来源问题", obj.source_problem))
        if "来源方向" in a:
            lines.append(_anchor("来源方向", a["来源方向"]))
        lines += [_anchor("价值/关键性", "" if obj.value is None else fmt_number(obj.value)),
                  "", "## 陈述", obj.statement, "",
                  "## 证明尝试", *_entries(obj.entries, "证明"), "",
                  "## 证伪尝试", *_entries(obj.entries, "证伪")]
    elif isinstance(obj, Method):
        lines = [f"# 方法｜{obj.title}", _anchor("标题", obj.title), _anchor("ID", obj.id),
                 _anchor("类型", obj.type), _anchor("状态", obj.status),
                 _anchor("可信断言", dump_list(obj.claims)), _anchor("上级体系", dump_list(obj.parents)),
                 _anchor("子方法", dump_list(obj.submethods)), _anchor("相关", dump_list(obj.related)),
                 _anchor("适用场景", obj.scenario), "", "## 核心内容",
                 obj.anchors.get("核心内容", ""), "", "## 应用记录", PLACEHOLDERS["应用"], "",
                 "## 改进历史", PLACEHOLDERS["改进"]]
    elif isinstance(obj, VerifiedCard):
        lines = [f"# 已验证｜{obj.title}", _anchor("ID", obj.id), _anchor("类型", obj.object_type),
                 _anchor("结论", obj.conclusion),
                 _anchor("概率", "" if obj.probability is None else fmt_number(obj.probability)),
                 _anchor("分类", obj.category), _anchor("来源", obj.source), _anchor("时间", obj.time),
                 "", "## 陈述", obj.statement, "", "## 可信内容",
                 obj.anchors.get("可信内容", "")]
    else:
        raise TypeError(f"render_card cannot render a {obj.kind}")
    return "\n".join(lines) + "\n"
