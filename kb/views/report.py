"""The project report ``Logs/报告.md`` (``kb report``): its text, deterministic given
the KB and the date shown. Writing it is :func:`kb.ops.report.report`."""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path
from typing import Union

from kb import clock, git
from kb.errors import UsageError
from kb.merge.drivers import report_path
from kb.repo import KnowledgeBase
from kb.research.dependencies import natural_key
from kb.views.brief import best_probability, brief_data, fmt_p, load_view, priority_key
from kb.views.verification import load_records
from kb.vocab import PROBLEM_STATUS, PROPOSITION_STATUS


def _rel_link(from_rel: str, to_rel: str) -> str:
    return posixpath.relpath(to_rel, posixpath.dirname(from_rel) or ".")


def report_title(k: KnowledgeBase) -> str:
    """The report's title: the same in every clone, so that teammates' reports differ only
    where the KB does. A KB in a subfolder is named by that folder; one at the top of its
    repository by the repository its ``origin`` remote names (``…/lab-notes.git`` ->
    ``lab-notes``), else by the folder of this clone, the only name there is."""
    if k.prefix:
        return k.root.name
    url = (git.config("remote.origin.url", k.top) or "").rstrip("/")
    name = re.split(r"[/:\\]", url)[-1] if url else ""
    name = name[:-4] if name.endswith(".git") else name
    return name or k.root.name


def report_text(kb: Union[KnowledgeBase, str, Path, None] = None, date: str | None = None,
                recent: int = 10) -> tuple[str, str]:
    """``(path, text)`` of ``Logs/报告.md`` — deterministic given the KB and ``date``.

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails.
    """
    k, view = load_view(kb)
    out_rel = report_path(k.config.paths["logs"])  # also what .gitattributes names (kb-report)
    data = brief_data(k)
    title = report_title(k)
    lines = [f"# 项目报告｜{title}", ""]
    if date:
        lines += [f"生成于 {date}（kb report）", ""]
    c = data["counts"]
    by_status: dict[str, int] = {}
    for q in view.problems.values():
        by_status[q.get("status", "")] = by_status.get(q.get("status", ""), 0) + 1
    p_status: dict[str, int] = {}
    for p in view.propositions.values():
        p_status[p.get("status", "")] = p_status.get(p.get("status", ""), 0) + 1
    records = load_records(k)
    lines += ["## 总览", ""]
    lines.append(f"- 问题 {c['problems']} 个：" + ("，".join(
        f"{s} {by_status[s]}" for s in PROBLEM_STATUS if by_status.get(s))
        or "无"))
    lines.append(f"- 命题 {c['propositions']} 个：" + ("，".join(
        f"{s} {p_status[s]}" for s in PROPOSITION_STATUS if p_status.get(s)) or "无"))
    lines.append(f"- 方法 {c['methods']} 个；验证记录 {len(records)} 条；Verified 卡 {len(view.verified)} 张")
    lines.append("")
    lines += ["## 问题", ""]
    for status in ("求解中", "等待依赖", "原始", "死路", "已解决"):
        ids = sorted((q for q, v in view.problems.items() if v.get("status") == status),
                     key=lambda q: (priority_key(view.problems[q].get("priority")), natural_key(q)))
        if not ids:
            continue
        lines += [f"### {status}（{len(ids)}）", ""]
        for qid in ids:
            q = view.problems[qid]
            sols = [e for e in q.get("entries", ()) if e.get("kind") == "解法"]
            best = best_probability(sols, ("解法",))
            deps = q.get("depends", ())
            dep = ""
            if deps:
                dep = "；依赖 " + ", ".join(f"{d}{'' if view.settled(d) else '（未定）'}" for d in deps)
            lines.append(f"- **{qid}** {q.get('title', '')} — 优先级 {q.get('priority')}；解法 "
                         f"{len(sols)} 条" + (f"（最高概率 {fmt_p(best)}）" if sols else "") + dep)
        lines.append("")
    lines += ["## 已定论结果", ""]
    if not data["settled"]:
        lines += ["（暂无）", ""]
    else:
        for s in data["settled"]:
            card = s["card"]
            link = f"[{card}]({_rel_link(out_rel, card)})" if card else "（缺 Verified 卡，kb verify 会报告）"
            what = "问题已解决" if s["kind"] == "problem" else f"命题为{s['conclusion']}"
            lines.append(f"- **{s['id']}** {s['title']} — {what}：{link}")
        lines.append("")
    lines += ["## 未定论命题（按概率与价值/关键性）", ""]
    und = sorted(data["undecided_propositions"],
                 key=lambda p: (-(p["probability"] if p["probability"] is not None else 0.5),
                                -(p["value"] if p["value"] is not None else 0.5), natural_key(p["id"])))
    if not und:
        lines += ["（暂无）", ""]
    else:
        lines += ["| ID | 分类 | 概率 | 价值/关键性 | 标题 |", "|---|---|---|---|---|"]
        for p in und:
            t = p["title"].replace("|", "\\|")
            lines.append(f"| {p['id']} | {p['category']} | {fmt_p(p['probability'])} | "
                         f"{fmt_p(p['value'])} | {t} |")
        lines.append("")
    lines += ["## 方法与应用", ""]
    if not view.methods:
        lines += ["（暂无）", ""]
    for mid in sorted(view.methods, key=natural_key):
        m = view.methods[mid]
        apps = m.get("applications", ())
        used = "，".join(f"{a.get('problem')}" + (f"/{a.get('direction')}" if a.get("direction") else "")
                        for a in apps)
        rel = ""
        if m.get("parents"):
            rel += "；上级体系 " + ", ".join(m["parents"])
        if m.get("submethods"):
            rel += "；子方法 " + ", ".join(m["submethods"])
        if m.get("claims"):
            rel += "；可信断言 " + ", ".join(m["claims"])
        lines.append(f"- **{mid}** {m.get('title', '')}（{m.get('type', '')}，{m.get('status', '')}）— "
                     f"应用 {len(apps)} 次" + (f"：{used}" if used else "") + rel)
    if view.methods:
        lines.append("")
    lines += ["## 最近的验证", ""]
    if not records:
        lines += ["（暂无）", ""]
    else:
        for rec in list(reversed(records))[:recent]:
            votes = "，".join(f"{v.verifier}={fmt_p(v.result)}" for v in rec.results)
            lines.append(f"- {rec.at.replace('T', ' ')} `{rec.r}` → {fmt_p(rec.verdict)}"
                         f"（{votes}）[{rec.path.rsplit('/', 1)[-1]}]({_rel_link(out_rel, rec.path)})")
        lines.append("")
    while lines and lines[-1] == "":
        lines.pop()
    return out_rel, "\n".join(lines) + "\n"


def report_date(date: str | None) -> str | None:
    """The date shown in the report: ``date`` as given (checked), else ``KB_NOW``, else none.

    Raises UsageError for a malformed date.
    """
    if date:
        if clock.parse_time(date) is None:
            raise UsageError(f"date {date!r} is not a date; write e.g. 2026-11-02 or "
                            "2026-11-02T10:00:00")
        return date
    raw = os.environ.get("KB_NOW", "").strip()
    if raw:
        dt = clock.parse_time(raw)
        return clock.fmt_time(dt) if dt else None
    return None



__all__ = ["report_text", "report_date"]
