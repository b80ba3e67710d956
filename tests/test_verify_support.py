"""Helpers shared by the verify / checks / hooks tests (no tests here).

A small valid KB (tree, experiments, cards) as a dict of files, and helpers
to run ``kb verify`` in-process and read its JSON.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping, Optional, Union

from conftest import GIT_ENV, SOURCE_PATH, commit_all, git, invoke, write_files

TREE = """\
# Hypothesis Tree

## H1: Data loading is the training bottleneck
Status: 进行中
Evidence: E001
Children: H1.1

### H1.1: Decoding JPEGs dominates loading time
Status: 待验
Evidence: (empty)
Parent: H1

## H2: Mixed precision slows convergence
Status: 待验
Evidence: (empty)
"""

E001 = """\
# E001: H1 - Profile the data loader

**Hypothesis**: H1 Data loading is the training bottleneck
**Date**: 2026-01-02
**Status**: 进行中

## 实验设计

**目标**: measure

## 结果

[待补充]
"""


def experiment(eid: str, hyp: str = "H1", status: str = "进行中", conclusion: str = "[待补充]",
               date: str = "2026-01-02") -> str:
    return (f"# {eid}: {hyp} - Measure something\n\n**Hypothesis**: {hyp} Some hypothesis\n"
            f"**Date**: {date}\n**Status**: {status}\n\n## 结果\n\n**结论**: {conclusion}\n")


def problem(qid: str, depends: str = "[]", depended_by: str = "[]", status: str = "求解中",
            extra: str = "") -> str:
    return (f"# 问题｜Problem {qid}\n- 标题: Problem {qid}\n- ID: {qid}\n- 类型: 问题\n"
            f"- 状态: {status}\n- 优先级: 1\n- 依赖: {depends}\n- 被依赖: {depended_by}\n"
            f"- 来源: 原始\n- 计划: 待调度\n{extra}\n## 陈述\nState {qid}.\n\n## 解法候选\n")


def proposition(pid: str, status: str = "未定论", prob: str = "0.5", depends: str = "[]") -> str:
    return (f"# 命题｜Proposition {pid}\n- 标题: Proposition {pid}\n- ID: {pid}\n- 类型: 命题\n"
            f"- 状态: {status}\n- 概率: {prob}\n- 优先级: 1\n- 依赖: {depends}\n"
            f"- 价值/关键性: 0.5\n\n## 陈述\nClaim {pid}.\n\n## 证明尝试\n\n## 证伪尝试\n")


def method(mid: str, claims: str = "[]", parents: str = "[]", subs: str = "[]") -> str:
    return (f"# 方法｜Method {mid}\n- 标题: Method {mid}\n- ID: {mid}\n- 类型: 方法\n- 状态: 经验\n"
            f"- 可信断言: {claims}\n- 上级体系: {parents}\n- 子方法: {subs}\n- 相关: []\n"
            f"- 适用场景: anywhere\n\n## 核心内容\nText.\n")


def verified(vid: str, kind: str = "命题", conclusion: str = "真") -> str:
    return (f"# 已验证｜Card {vid}\n- ID: {vid}\n- 类型: {kind}\n- 结论: {conclusion}\n- 概率: 1\n"
            f"- 分类: 数论\n- 来源: q1\n- 时间: 2026-01-01 00:00:00\n\n## 陈述\nClaim {vid}.\n\n"
            f"## 可信内容\n【证明 #1】proof\n")


def base_files() -> dict[str, str]:
    """A valid KB without DASHBOARD.md: tree, one experiment, cards that agree."""
    return {
        "tree.md": TREE,
        "experiments/E001.md": E001,
        "Problems/q1.md": problem("q1", depends='["p1"]'),
        "Propos/数论/p1.md": proposition("p1", status="已验证·真", prob="1"),
        "Verified/命题/p1.md": verified("p1"),
        "Methods/m1.md": method("m1", claims='["p1"]'),
    }


def fresh_dashboard(kb_root: Path) -> None:
    """Write the DASHBOARD.md that `kb dashboard` renders for the working tree."""
    from kb.checks.fix import regenerate_dashboard

    target = kb_root / "DASHBOARD.md"
    if not target.exists():
        target.write_text("# Research Dashboard\n", encoding="utf-8")
    regenerate_dashboard(kb_root)


def make_repo(make_kb, files: Optional[Mapping[str, Union[str, bytes]]] = None, *,
              config: str = "[kb]\n", dashboard: bool = True, commit: bool = True) -> Path:
    """A committed valid KB (plus ``files``), with a fresh DASHBOARD.md."""
    all_files = base_files()
    all_files.update(files or {})
    root = make_kb(all_files, config=config, commit=False)
    if dashboard:
        fresh_dashboard(root)
    if commit:
        commit_all(root, "base")
    return root


def commit_prose_edits(root: Path, qids) -> None:
    """One commit per problem of ``qids``, each adding a paragraph to its card."""
    for q in qids:
        p = root / "Problems" / f"{q}.md"
        p.write_text(p.read_text(encoding="utf-8") + f"\nMore on {q}.\n", encoding="utf-8")
        commit_all(root, f"edit {q}")


def pull_and_stage(root: Path, pulled: str, staged: str) -> None:
    """A paragraph appended to card ``pulled`` and committed with no hook (as a pull
    brings it), then one appended to card ``staged`` and staged (paths under root)."""
    for rel, text in ((pulled, "\nA pulled paragraph.\n"), (staged, "\nMy own paragraph.\n")):
        card = root / rel
        card.write_text(card.read_text(encoding="utf-8") + text, encoding="utf-8")
        if rel == pulled:
            commit_all(root, "pulled")
    git(root, "add", staged)


def verify_json(cwd: Path, *args: str):
    """Run ``kb verify --json ARGS`` in-process: (exit code, parsed JSON)."""
    res = invoke("verify", "--json", *args, cwd=cwd)
    assert res.stdout.strip(), res.stderr
    return res.code, res.json()


def codes(data, *, blocking: Optional[bool] = None, severity: Optional[str] = None) -> list[str]:
    out = []
    for d in data["diagnostics"]:
        if blocking is not None and d["blocking"] != blocking:
            continue
        if severity is not None and d["severity"] != severity:
            continue
        out.append(d["code"])
    return out


def find(data, code: str) -> list[dict]:
    return [d for d in data["diagnostics"] if d["code"] == code]


def git_env(extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The environment for a real `git commit` that runs kb's hooks: kb on PATH."""
    env = dict(os.environ)
    env.update(GIT_ENV)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = str(SOURCE_PATH)
    if extra:
        env.update(extra)
    return env


def git_run(cwd: Path, *args: str, env: Optional[Mapping[str, str]] = None,
            input: Optional[bytes] = None) -> subprocess.CompletedProcess:
    """Run git with kb on PATH (hooks run for real); returns the process (never raises)."""
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=git_env(env),
                          input=input)


__all__ = ["TREE", "E001", "experiment", "problem", "proposition", "method", "verified",
           "base_files", "fresh_dashboard", "make_repo", "verify_json", "codes", "find",
           "git", "git_env", "git_run", "commit_all", "write_files"]
