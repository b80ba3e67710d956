"""Research cards (issue 5): create and edit problems, propositions, methods, entries.

Interop: a KB in Vibe Math v3's own layout (``VibeMath/Projects/demo/…``, read
through ``[paths]`` in kb.toml) is edited by every card command; after each
command every card still parses with the patterns of DESIGN.md §2.4 /
VIBEMATH-V3.md (and Vibe Math's own, stricter entry regex), every untouched
card is byte-identical, unknown anchors and sections survive, and each
command made exactly one commit. Bad input is one line on stderr, exit 1,
nothing written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import commit_all, git, git_init, invoke, tree_snapshot, write_files

NOW = "1793613600"  # 2026-11-02T10:00:00Z, as epoch seconds (the form kb's lock code reads too)

ANCHOR = re.compile(r"^- ([A-Za-z\u4e00-\u9fff/]+): (.*)$")
ENTRY = re.compile(r"^### (解法|证明|证伪) (\d+)｜(.*)｜概率([^｜]+)｜状态(.+)$")
#: Vibe Math v3's own entry regexes (parsePropositionMd / parseProblemMd).
VM_ENTRY = re.compile(r"^###\s*(解法|证明|证伪)\s*\d+｜(.*?)｜概率([0-9.]+)｜状态(.+)$")
LIST_KEYS = ("依赖", "被依赖", "可信断言", "上级体系", "子方法", "相关")

PROJECT = "VibeMath/Projects/demo"

KB_TOML = f"""[kb]
locale = "zh"

[paths]
problems = "{PROJECT}/Problems"
progress = "{PROJECT}/Progress"
propositions = "{PROJECT}/Propos"
methods = "{PROJECT}/Methods"
verified = "{PROJECT}/Verified"
logs = "{PROJECT}/Logs"
"""

# Cards exactly as Vibe Math v3's compose functions write them (VIBEMATH-V3.md), plus
# an unknown anchor and an unknown section that kb must keep.
VM_FILES = {
    f"{PROJECT}/Problems/q1.md": """# 问题｜Sum of two squares
- 标题: Sum of two squares
- ID: q1
- 类型: 问题
- 状态: 求解中
- 优先级: 1
- 依赖: ["p1"]
- 被依赖: []
- 来源: 原始
- 自定义: kept by kb
- 计划: 待调度

## 陈述
Which primes are sums of two squares?

## 解法候选
（暂无解法候选）

## 备注
A section Vibe Math does not manage.
""",
    f"{PROJECT}/Problems/q2.md": """# 问题｜Pythagorean primes
- 标题: Pythagorean primes
- ID: q2
- 类型: 问题
- 状态: 求解中
- 优先级: 2
- 依赖: []
- 被依赖: []
- 来源: 后生
- 计划: 

## 陈述
Every prime p ≡ 1 (mod 4) is a sum of two squares.

## 来源与动机
Arose from q1.

## 解法候选
### 解法 1｜Thue's lemma｜概率0.6｜状态未定论
Apply Thue's lemma to a square root of -1 mod p.
""",
    f"{PROJECT}/Propos/数论/p1.md": """# 命题｜-1 is a square mod p for p ≡ 1 (mod 4)
- 标题: -1 is a square mod p for p ≡ 1 (mod 4)
- ID: p1
- 类型: 命题
- 状态: 未定论
- 概率: 0.7
- 优先级: 1
- 依赖: []
- 来源问题: q2
- 价值/关键性: 0.9

## 陈述
For a prime p ≡ 1 (mod 4), -1 is a quadratic residue.

## 证明尝试
（暂无证明尝试）

## 证伪尝试
（暂无证伪尝试）

## 经验与教训
Wilson's theorem helps.
""",
    f"{PROJECT}/Methods/m1.md": """# 方法｜Descent
- 标题: Descent
- ID: m1
- 类型: 理论体系
- 状态: 经验
- 可信断言: []
- 上级体系: []
- 子方法: []
- 相关: ["q1"]
- 适用场景: 

## 核心内容
Fermat's descent.

## 应用记录
（暂无应用记录）

## 改进历史
（暂无改进记录）
""",
}
# A CRLF card with a BOM: its line endings and BOM must survive an edit.
CRLF_CARD = (f"{PROJECT}/Problems/q3.md",
             ("\ufeff# 问题｜Fermat's little theorem\r\n- 标题: Fermat's little theorem\r\n- ID: q3\r\n"
              "- 类型: 问题\r\n- 状态: 求解中\r\n- 优先级: 3\r\n- 依赖: []\r\n- 被依赖: []\r\n"
              "- 来源: 原始\r\n- 计划: 待调度\r\n\r\n## 陈述\r\na^p ≡ a (mod p).\r\n\r\n"
              "## 解法候选\r\n（暂无解法候选）\r\n").encode("utf-8"))


@pytest.fixture
def vm_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed KB in Vibe Math v3's layout (kb.toml at the repository root)."""
    monkeypatch.setenv("KB_NOW", NOW)
    repo = git_init(tmp_path / "vm")
    write_files(repo, {"kb.toml": KB_TOML, ".gitignore": ".kb/\n", **VM_FILES,
                       CRLF_CARD[0]: CRLF_CARD[1]})
    commit_all(repo, "Vibe Math project")
    return repo


@pytest.fixture
def ex(example_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_NOW", NOW)
    return example_kb


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def cards_of(repo: Path) -> dict[str, bytes]:
    return {p: b for p, b in tree_snapshot(repo, skip_git=True).items()
            if p.endswith(".md") and "/.kb/" not in p and not p.startswith(".kb/")}


def vm_check(rel: str, data: bytes) -> None:
    """The card reads with the patterns of VIBEMATH-V3.md and Vibe Math's own regexes."""
    text = data.decode("utf-8").lstrip("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    assert lines[0].startswith("# ") and "｜" in lines[0], (rel, lines[0])
    header_end = next((i for i, ln in enumerate(lines) if ln.startswith("## ")), len(lines))
    keys = []
    for ln in lines[1:header_end]:
        if not ln.strip():
            continue
        m = ANCHOR.match(ln)
        assert m, f"{rel}: anchor line not readable by Vibe Math: {ln!r}"
        keys.append(m.group(1))
        if m.group(1) in LIST_KEYS:
            value = json.loads(m.group(2))
            assert isinstance(value, list) and all(isinstance(x, str) for x in value)
            assert m.group(2) == json.dumps(value, ensure_ascii=False, separators=(",", ":")), ln
    assert len(keys) == len(set(keys)), f"{rel}: a repeated anchor key"
    numbers: dict[str, list[int]] = {}
    for ln in lines[header_end:]:
        if re.match(r"^###\s*(解法|证明|证伪)", ln):
            m = ENTRY.match(ln)
            assert m, f"{rel}: entry line does not match DESIGN §2.4: {ln!r}"
            assert VM_ENTRY.match(ln), f"{rel}: entry line Vibe Math cannot read: {ln!r}"
            assert 0 <= float(m.group(4)) <= 1
            assert m.group(5) in ("未定论", "已验")
            numbers.setdefault(m.group(1), []).append(int(m.group(2)))
    for kind, ns in numbers.items():
        assert ns == list(range(1, len(ns) + 1)), f"{rel}: {kind} numbers {ns} are not 1..N"


def check_all(repo: Path) -> None:
    for rel, data in cards_of(repo).items():
        if "/Problems/" in rel or "/Propos/" in rel or "/Methods/" in rel or "/Verified/" in rel \
                or rel.startswith(("Problems/", "Propos/", "Methods/", "Verified/")):
            vm_check(rel, data)


def run_ok(repo: Path, *args: str) -> None:
    r = invoke(*args, cwd=repo)
    assert r.code == 0, (args, r.stdout, r.stderr)


# ---------------------------------------------------------------------------
# interop: every command on a Vibe Math v3 project


def test_vibe_math_layout_every_command_round_trip(vm_kb: Path) -> None:
    repo = vm_kb
    P = PROJECT
    (repo / "sol.txt").write_text("Let x² ≡ -1 (mod p); Thue gives a, b ≤ √p\nwith a ≡ xb.\n",
                                  encoding="utf-8")
    steps = [
        (("problem", "add", "q4", "Every prime p ≡ 1 (mod 4) is a norm in Z[i].",
          "--depends", "q2,p1", "--priority", "0"), {f"{P}/Problems/q4.md", f"{P}/Problems/q2.md"}),
        (("entry", "add", "q1", "--kind", "解法", "--title", "Fermat｜Euler", "--prob", "0.7",
          "--text-file", str(repo / "sol.txt")), {f"{P}/Problems/q1.md"}),
        (("entry", "add", "q3", "--kind", "解法", "--title", "Necklaces", "--prob", "0.8",
          "--text", "Count necklaces of length p."), {f"{P}/Problems/q3.md"}),
        (("propo", "add", "数论", "p2", "Wilson's theorem", "--prob", "0.9", "--value", "0.4"),
         {f"{P}/Propos/数论/p2.md"}),
        (("entry", "add", "p1", "--kind", "证明", "--title", "Wilson", "--prob", "0.8",
          "--text", "((p-1)/2)!² ≡ -1."), {f"{P}/Propos/数论/p1.md"}),
        (("method", "add", "m2", "Infinite descent", "--parent", "m1", "--scenario", "integers"),
         {f"{P}/Methods/m2.md", f"{P}/Methods/m1.md"}),
        (("method", "apply", "m1", "Reduced p to a smaller prime.", "--problem", "q1",
          "--direction", "d1"), {f"{P}/Methods/m1.md"}),
        (("method", "improve", "m1", "covers Gaussian integers", "--text", "Norms in Z[i]."),
         {f"{P}/Methods/m1.md"}),
        (("problem", "plan", "q1", "try Thue's lemma next"), {f"{P}/Problems/q1.md"}),
        (("problem", "status", "q2", "死路"), {f"{P}/Problems/q2.md"}),
        (("verdict", "p1#证明1", "--vote", "v1=1", "--vote", "v2=1", "--reason", "v1=fine"), None),
    ]
    for args, expected in steps:
        before = cards_of(repo)
        old_head = head(repo)
        r = invoke(*args, "--json", cwd=repo)
        assert r.code == 0, (args, r.stderr)
        out = r.json()
        assert out["commit"] == head(repo) and git(repo, "rev-parse", "HEAD~1") == old_head
        changed = {p for p, b in cards_of(repo).items() if before.get(p) != b}
        if expected is not None:
            assert changed == expected, (args, changed)
            assert set(out["paths"]) == expected
        assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
        check_all(repo)
    q1 = (repo / P / "Problems/q1.md").read_text(encoding="utf-8")
    assert "- 自定义: kept by kb\n" in q1 and "## 备注\nA section Vibe Math does not manage.\n" in q1
    assert "### 解法 1｜Fermat\\｜Euler｜概率0.7｜状态未定论\nLet x²" in q1
    assert "（暂无解法候选）" not in q1 and "- 计划: try Thue's lemma next\n" in q1
    q3 = (repo / P / "Problems/q3.md").read_bytes()
    assert q3.startswith(b"\xef\xbb\xbf# ") and b"\r\n### \xe8\xa7\xa3\xe6\xb3\x95 1" in q3
    assert b"\n" not in q3.replace(b"\r\n", b"")
    q2 = (repo / P / "Problems/q2.md").read_text(encoding="utf-8")
    assert "- 被依赖: [\"q4\"]\n" in q2 and "- 状态: 死路\n" in q2
    assert "- 计划: \n" in q2  # an empty value keeps its `- key: ` form
    q4 = (repo / P / "Problems/q4.md").read_text(encoding="utf-8")
    assert q4 == """# 问题｜Every prime p ≡ 1 (mod 4) is a norm in Z[i].
- 标题: Every prime p ≡ 1 (mod 4) is a norm in Z[i].
- ID: q4
- 类型: 问题
- 状态: 等待依赖
- 优先级: 0
- 依赖: ["q2","p1"]
- 被依赖: []
- 来源: 原始
- 计划: 待调度

## 陈述
Every prime p ≡ 1 (mod 4) is a norm in Z[i].

## 解法候选
（暂无解法候选）
"""
    p1 = (repo / P / "Propos/数论/p1.md").read_text(encoding="utf-8")
    assert "- 状态: 已验证·真\n- 概率: 1\n- 优先级: never\n" in p1
    assert "## 经验与教训\nWilson's theorem helps.\n" in p1
    m1 = (repo / P / "Methods/m1.md").read_text(encoding="utf-8")
    assert "- 子方法: [\"m2\"]\n" in m1
    assert "### 应用 1｜2026-11-02 10:00:00｜问题 q1 方向 d1\nReduced p" in m1
    assert "### v1（covers Gaussian integers）\nNorms in Z[i].\n" in m1
    assert (repo / P / "Verified/命题/p1.md").exists()
    assert list((repo / P / "Logs/Verification").glob("r-p1-pf1_20261102T100000.json"))


def test_q4_waits_for_unsettled_dependency_and_is_released(vm_kb: Path) -> None:
    """等待依赖 while p1 is undecided; settling p1 moves q4 back to 求解中 in the verdict's commit."""
    from kb.ops.entries import add_entry
    from kb.ops.problems import add_problem
    from kb.ops.verdict import record_verdict

    r = add_problem(vm_kb, "q4", "Needs p1.", depends=["p1"])
    assert r.data["status"] == "等待依赖"
    add_entry(vm_kb, "p1", "证明", "Wilson", 0.8, text="((p-1)/2)!² ≡ -1.")
    r = record_verdict(vm_kb, "p1#证明1", {"a": 1, "b": 1})
    text = (vm_kb / PROJECT / "Problems/q4.md").read_text(encoding="utf-8")
    assert "- 状态: 求解中\n" in text
    assert f"{PROJECT}/Problems/q4.md" in r.tx.paths


def test_document_round_trip_of_every_card(vm_kb: Path, example_kb: Path) -> None:
    """parse → render (splice with no edit) is byte-identical, BOM and CRLF included."""
    from kb.render.document import Document

    for repo in (vm_kb, example_kb):
        for rel, data in cards_of(repo).items():
            assert Document.from_bytes(data, rel).to_bytes() == data, rel


def test_new_cards_render_from_their_model(ex: Path) -> None:
    """A card kb created is exactly what render_card gives for its parsed model."""
    from kb.ops.entries import add_entry
    from kb.ops.methods import add_method
    from kb.ops.problems import add_problem
    from kb.ops.propositions import add_proposition
    from kb.parse import parse_file
    from kb.render.card import render_card
    from kb.repo import open_kb

    add_problem(ex, "q5", "Statement\nover two lines.", title="Two lines", depends=["q2"])
    add_entry(ex, "q5", "解法", "first", 0.3, text="one\n\ntwo")
    add_entry(ex, "q5", "解法", "second", 0.4, text="three")
    add_proposition(ex, "数论", "p5", "A claim.", probability=0.25, value=0.75)
    add_entry(ex, "p5", "证伪", "counter", 0.2, text="maybe")
    add_method(ex, "m5", "Sieve", type="工具")
    k = open_kb(ex)
    for rel in ("Problems/q5.md", "Propos/数论/p5.md", "Methods/m5.md"):
        data = (ex / rel).read_bytes()
        obj = parse_file(rel, data, k.config).objects[0]
        assert render_card(obj).encode("utf-8") == data, rel
        vm_check(rel, data)


def test_example_kb_edits_leave_other_files_untouched(ex: Path) -> None:
    before = tree_snapshot(ex, skip_git=True)
    run_ok(ex, "entry", "add", "q2", "--kind", "解法", "--title", "Dirichlet", "--prob", "0.3",
           "--text", "Overkill.")
    after = tree_snapshot(ex, skip_git=True)
    changed = {p for p in after if before.get(p) != after[p] and not p.startswith(".kb")}
    assert changed == {"Problems/q2.md"}
    text = (ex / "Problems/q2.md").read_text(encoding="utf-8")
    assert text.endswith("只保留作记录。\n\n### 解法 3｜Dirichlet｜概率0.3｜状态未定论\nOverkill.\n")
    msg = git(ex, "log", "-1", "--format=%B")
    assert "Kb-Op: entry.add" in msg and "Kb-Id: q2" in msg


def test_placeholder_replaced_and_sections_created(ex: Path) -> None:
    from kb.ops.entries import add_entry
    from kb.ops.methods import improve_method
    from kb.ops.propositions import add_proposition

    add_proposition(ex, "数论", "p6", "Goldbach for small n.")
    add_entry(ex, "p6", "证伪", "none found", 0.05, text="No counterexample.")
    p6 = (ex / "Propos/数论/p6.md").read_text(encoding="utf-8")
    assert p6.endswith("## 证明尝试\n（暂无证明尝试）\n\n"
                       "## 证伪尝试\n### 证伪 1｜none found｜概率0.05｜状态未定论\nNo counterexample.\n")
    # a card without the section gets it in Vibe Math's place
    text = (ex / "Methods/m1.md").read_text(encoding="utf-8").replace(
        "\n## 改进历史\n（暂无改进记录）\n", "")
    (ex / "Methods/m1.md").write_text(text, encoding="utf-8")
    commit_all(ex, "drop the section")
    improve_method(ex, "m1", "first", text="Better.")
    assert (ex / "Methods/m1.md").read_text(encoding="utf-8").endswith(
        "q1 已解决。\n\n## 改进历史\n### v1（first）\nBetter.\n")


# ---------------------------------------------------------------------------
# bad input: one line, exit 1, nothing written


BAD = [
    (("problem", "add", "q2", "dup"), "already exists"),
    (("problem", "add", "q9", "x", "--depends", "q404"), "q404"),
    (("problem", "add", "../x", "x"), "path separator"),
    (("problem", "add", "q9", "x", "--priority", "soon"), "never"),
    (("problem", "add", "q9", "x", "--source", "weird"), "原始, 后生, promote"),
    (("problem", "status", "q404", "求解中"), "unknown problem"),
    (("problem", "status", "q2", "done"), "原始, 求解中, 等待依赖, 已解决, 死路"),
    (("problem", "status", "q2", "已解决"), "kb verdict q2#解法N"),
    (("problem", "plan", "q2", ""), "empty"),
    (("entry", "add", "q2", "--kind", "解法", "--title", "t", "--prob", "1.5", "--text", "x"),
     "outside [0,1]"),
    # a fence or HTML comment left open at the card's end: the next entry would vanish in it
    (("entry", "add", "q2", "--kind", "解法", "--title", "t", "--text", "x\n```python\nprint(1)"),
     "leaves a code fence or an HTML block open"),
    (("entry", "add", "q2", "--kind", "解法", "--title", "t", "--text", "x\n<!-- unclosed"),
     "leaves a code fence or an HTML block open"),
    (("entry", "add", "q2", "--kind", "解法", "--title", "t", "--prob", "1", "--text", "x"),
     "strictly between 0 and 1"),
    (("entry", "add", "q2", "--kind", "解法", "--title", "t", "--text-file", "/no/such/file"),
     "does not exist"),
    (("entry", "add", "q2", "--kind", "lemma", "--title", "t", "--text", "x"), "解法"),
    (("entry", "add", "q404", "--kind", "解法", "--title", "t", "--text", "x"), "q404"),
    (("entry", "add", "q2", "--kind", "证明", "--title", "t", "--text", "x"), "problem"),
    (("entry", "add", "q1", "--kind", "解法", "--title", "t", "--text", "x"), "settled"),
    (("entry", "add", "q2", "--kind", "解法", "--title", "t", "--text", "a\n## not a section"),
     "structure"),
    (("propo", "add", "代数", "p9", "x"), "数论"),
    (("propo", "add", "p9", "x"), "CATEGORY"),
    (("propo", "add", "数论", "p1", "x"), "already exists"),
    (("propo", "add", "数论", "p9", "x", "--prob", "1.5"), "outside [0,1]"),
    (("method", "add", "m9", "x", "--type", "recipe"), "理论体系"),
    (("method", "add", "m9", "x", "--parent", "m404"), "m404"),
    (("method", "apply", "m1", "x", "--problem", "q404"), "q404"),
    (("verdict", "q2#解法1", "--vote", "v1=1"), "at least 2 votes"),
    (("verdict", "q2#解法1", "--vote", "v1=1", "--vote", "v2=1.5"), "outside [0,1]"),
    (("verdict", "q2#解法1", "--vote", "v1=1", "--vote", "v2"), "NAME=RESULT"),
    (("verdict", "q2#解法9", "--vote", "v1=1", "--vote", "v2=1"), "no entry 解法 9"),
    (("verdict", "q404#解法1", "--vote", "v1=1", "--vote", "v2=1"), "q404"),
    (("verdict", "q1#解法1", "--vote", "v1=1", "--vote", "v2=1"), "already settled"),
    (("verdict", "q2#解法1", "--vote", "v1=1", "--vote", "v2=1", "--mode", "vote"), "forced, flat"),
    (("verdict", "q2", "--vote", "v1=1", "--vote", "v2=1"), "#解法N"),
    (("priority", "adjust", "--mode", "random"), "survival-map"),
    (("promote", "--threshold", "2"), "outside [0,1]"),
]


#: Needles of the BAD cases that are usage mistakes (a bad argument value: exit 2).
USAGE = {"path separator", "never", "原始, 后生, promote", "原始, 求解中, 等待依赖, 已解决, 死路", "empty",
         "outside [0,1]", "strictly between 0 and 1", "does not exist", "解法", "数论", "CATEGORY",
         "理论体系", "at least 2 votes", "NAME=RESULT", "forced, flat", "survival-map"}


def test_bad_input_refused_nothing_written(ex: Path) -> None:
    before = tree_snapshot(ex, skip_git=True)
    old = head(ex)
    for args, needle in BAD:
        r = invoke(*args, cwd=ex)
        assert r.code == (2 if needle in USAGE else 1), (args, r.code, r.stderr)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("kb: "), (args, r.stderr)
        assert needle in lines[0], (args, lines[0])
        assert r.stdout == ""
        assert head(ex) == old, args
        now = tree_snapshot(ex, skip_git=True)
        assert {p: b for p, b in now.items() if not p.startswith(".kb")} == \
            {p: b for p, b in before.items() if not p.startswith(".kb")}, args


def test_dirty_card_refused_and_no_commit(ex: Path) -> None:
    """A card with uncommitted changes is refused; --no-commit leaves the write uncommitted."""
    path = ex / "Problems/q2.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nlocal note\n", encoding="utf-8")
    old = head(ex)
    r = invoke("entry", "add", "q2", "--kind", "解法", "--title", "t", "--text", "x", cwd=ex)
    assert r.code == 1 and "uncommitted" in r.stderr and head(ex) == old
    git(ex, "checkout", "--", "Problems/q2.md")
    r = invoke("problem", "plan", "q2", "later", "--no-commit", cwd=ex)
    assert r.code == 0 and head(ex) == old
    assert "- 计划: later\n" in path.read_text(encoding="utf-8")


def test_expect_compare_and_swap(ex: Path) -> None:
    blob = git(ex, "rev-parse", "HEAD:Problems/q2.md")
    r = invoke("problem", "plan", "q2", "one", "--expect", "0" * 40, cwd=ex)
    assert r.code == 1 and "changed since it was read" in r.stderr
    r = invoke("problem", "plan", "q2", "two", "--expect", blob, "--json", cwd=ex)
    assert r.code == 0 and r.json()["commit"]


def test_empty_expect_is_refused_by_the_library(ex: Path) -> None:
    # What an MCP tool passes for `expect: ""`: refused, never an unguarded write.
    from kb.errors import UsageError
    from kb.ops.problems import set_plan

    from test_ops_tree import unchanged

    with unchanged(ex):
        for empty in ("", " ", {"Problems/q2.md": ""}):
            with pytest.raises(UsageError, match="--expect is empty.*kb show --json"):
                set_plan(ex, "q2", "later", expect=empty)
        with pytest.raises(UsageError, match="not 'zz'"):
            set_plan(ex, "q2", "later", expect="zz")


def test_empty_expect_is_a_usage_error_over_mcp(ex: Path) -> None:
    # The MCP tools pass `expect` on to the same library checks (kb.ops.result.expect_blob).
    import asyncio

    from mcp import Client

    from kb.mcp import build_server
    from test_ops_tree import unchanged

    async def session() -> None:
        async with Client(build_server(ex)) as c:
            for tool, args in (("problem_plan", {"id": "q2", "next_step": "later"}),
                               ("hyp_add", {"statement": "unchecked"})):
                for empty in ("", " "):
                    res = await c.call_tool(tool, {**args, "expect": empty})
                    err = json.loads(res.content[0].text)["error"]
                    assert res.is_error and err["kind"] == "usage", (tool, err)
                    assert err["exit_code"] == 2 and "--expect is empty" in err["message"]

    with unchanged(ex):
        asyncio.run(session())


def test_problem_status_rules(ex: Path) -> None:
    from kb.ops.card_edit import CardError
    from kb.ops.problems import add_problem, set_problem_status

    add_problem(ex, "q6", "waits", depends=["q2"])
    with pytest.raises(CardError, match="stays 等待依赖"):
        set_problem_status(ex, "q6", "求解中")
    with pytest.raises(CardError, match="final"):
        set_problem_status(ex, "q1", "求解中")
    r = set_problem_status(ex, "q6", "死路")
    assert r.tx.commit and "- 状态: 死路\n" in (ex / "Problems/q6.md").read_text(encoding="utf-8")
    # 已解决 by hand: only for a card that already holds a solution at 概率1 (then closed as a
    # verdict would close it, Verified card included)
    with pytest.raises(CardError, match="no solution at 概率1"):
        set_problem_status(ex, "q2", "已解决")
    q2 = ex / "Problems/q2.md"
    q2.write_text(q2.read_text(encoding="utf-8").replace("｜概率0.9｜状态未定论", "｜概率1｜状态已验"),
                  encoding="utf-8")
    commit_all(ex, "solved in Vibe Math")
    # ... and only with the record of the verdict that set it (KB312 refuses a problem
    # solved without one): Vibe Math's record, committed with it
    with pytest.raises(CardError, match="no verification record.*KB312"):
        set_problem_status(ex, "q2", "已解决")
    (ex / "Logs/Verification/r-q2-s1_1793613600000.json").write_text(
        '{"r": {"rId": "r-q2-s1"}, "verdict": 1, "results": {"a": {"Result": 1}, "b": '
        '{"Result": 1}}, "at": 1793613600000}\n', encoding="utf-8")
    commit_all(ex, "its record from Vibe Math")
    r = set_problem_status(ex, "q2", "已解决")
    assert "Verified/问题/q2.md" in r.tx.paths
    assert "- 状态: 已解决\n- 优先级: never\n" in q2.read_text(encoding="utf-8")
    assert "【解法 #1】任取有限个素数" in (ex / "Verified/问题/q2.md").read_text(encoding="utf-8")


def test_library_api_result(ex: Path) -> None:
    from kb.ops.problems import add_problem

    r = add_problem(ex, "q7", "A problem.", priority="never", source="后生", motivation="From q2.")
    assert r.tx.op == "problem.add" and r.tx.ids == ["q7"] and r.tx.commit == head(ex)
    text = (ex / "Problems/q7.md").read_text(encoding="utf-8")
    assert "- 优先级: never\n" in text and "## 来源与动机\nFrom q2.\n\n## 解法候选" in text


def test_a_withdrawn_card_id_is_never_handed_out_again(tmp_path) -> None:
    """`kb problem add q1` / `kb propo add … p1` after q1 / p1 was deleted (with an
    override) is refused, exit 1, nothing written: the range check would refuse the
    commit (KB307). A fresh ID is still accepted."""
    from conftest import git, git_init, invoke, write_files

    root = git_init(tmp_path / "kb")
    write_files(root, {"kb.toml": "[kb]\n", ".gitignore": ".kb/\n"})
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    assert invoke("problem", "add", "q1", "P", "--title", "A", cwd=root).code == 0
    assert invoke("propo", "add", "数论", "p1", "x", "--prob", "0.5", "--new-category", cwd=root).code == 0
    git(root, "rm", "-q", "Problems/q1.md", "Propos/数论/p1.md")
    git(root, "commit", "-q", "-m", "withdraw\n\nKb-Override: q1 withdrawn\nKb-Override: p1 withdrawn")
    head = git(root, "rev-parse", "HEAD")
    for args in (("problem", "add", "q1", "P again", "--title", "B"),
                 ("propo", "add", "数论", "p1", "y", "--prob", "0.5", "--new-category")):
        r = invoke(*args, "--json", cwd=root)
        assert r.code == 1 and r.json()["error"]["kind"] == "refused", (args, r.stdout, r.stderr)
        assert "never reused" in r.json()["error"]["message"]
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""
    assert invoke("problem", "add", "q2", "P2", "--title", "C", cwd=root).code == 0


@pytest.mark.parametrize("card, args, section", [
    ("Problems/q1.md", ("entry", "add", "q1", "--kind", "解法", "--title", "Parity", "--text", "body"),
     "## 解法候选"),
    ("Propos/数论/p1.md", ("entry", "add", "p1", "--kind", "证明", "--title", "Wilson", "--text",
                         "body"), "## 证明尝试"),
    ("Methods/m1.md", ("method", "improve", "m1", "covers more", "--text", "body"), "## 改进历史"),
])
def test_an_entry_goes_after_the_users_prose_beside_a_placeholder(tree_kb: Path, card: str,
                                                                  args: tuple, section: str) -> None:
    """A note the user wrote under a section's placeholder (``（暂无解法候选）``) stays
    where it is, out of the new block: put in the placeholder's place, the note became
    the entry's text and the write was refused as a change of structure (or, for a
    method, kept with the note in its text)."""
    repo = tree_kb
    for cmd in (("problem", "add", "q1", "Prove X"), ("method", "add", "m1", "Descent")):
        assert invoke(*cmd, cwd=repo).code == 0
    if card.startswith("Propos"):
        assert invoke("propo", "add", "数论", "p1", "A claim", "--new-category", cwd=repo).code == 0
    path = repo / card
    text = path.read_text(encoding="utf-8")
    at = text.index(section)
    start = text.index("\n", at) + 1
    stop = text.find("\n## ", start)
    part = text[start:stop if stop != -1 else len(text)]
    assert part.strip().startswith("（暂无"), part  # the section holds its placeholder alone
    path.write_text(text[:start] + part.rstrip("\n") + "\nMy note on this.\n"
                    + text[start + len(part):], encoding="utf-8")
    commit_all(repo, "a note")
    r = invoke(*args, cwd=repo)
    assert r.code == 0, r.stderr
    after = path.read_text(encoding="utf-8")
    part = after[after.index(section):].split("\n## ")[0]
    assert "（暂无" not in part and part.endswith("\nbody\n")
    assert "\nMy note on this.\n\n### " in part
    check_all(repo)


def test_an_entry_after_a_block_the_card_leaves_open_is_refused_naming_its_line(ex: Path) -> None:
    """A fence left open at the card's end (written by hand, committed past the hook) would
    swallow the new entry: the refusal names the card's line, not the new text."""
    path = ex / "Problems/q2.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "\n```\nopen\n", encoding="utf-8")
    git(ex, "commit", "-q", "--no-verify", "-am", "an open fence")
    opened = len(text.splitlines()) + 2
    old = head(ex)
    r = invoke("entry", "add", "q2", "--kind", "解法", "--title", "t", "--text", "plain", cwd=ex)
    assert r.code == 1 and head(ex) == old
    assert f"open from line {opened} to its end" in r.stderr, r.stderr
    assert git(ex, "status", "--porcelain") == ""
