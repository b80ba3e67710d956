"""A problem card's derived ``被依赖`` never stops a merge (kb's ``kb-card`` driver).

The case a tester saw: two clones of one KB each added a problem depending on one card
(``kb problem add … --depends q1``), which rewrites that card's ``被依赖`` line on both
sides; ``kb sync`` then stopped on a conflict in q1's card, as did a plain ``git pull``.
The driver gives the line both sides' IDs (less those a side removed) before git's line
merge; anything else both sides changed in a card still conflicts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, make_team
from kb.merge.card import settle_derived
from kb.merge.drivers import attribute_lines
from kb.merge.run import run_driver

CARD = """# 问题｜Shared
- 标题: Shared
- ID: q1
- 类型: 问题
- 状态: 求解中
- 优先级: 1
- 依赖: []
- 被依赖: {depended_by}
- 来源: 原始
- 计划: {plan}

## 陈述
Shared.
"""


def _card(depended_by: str, plan: str = "待调度", newline: str = "\n") -> bytes:
    return CARD.format(depended_by=depended_by, plan=plan).replace("\n", newline).encode("utf-8")


def _ok(kb: Path, *args: str) -> dict:
    r = invoke(*args, "--json", cwd=kb)
    assert r.code == 0, r.stderr + r.stdout
    return r.json()


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Two clones sharing a bare server, both holding problem q1 (no dependents yet)."""
    t = make_team(tmp_path, monkeypatch)
    a, b = t["a"], t["b"]
    _ok(a, "problem", "add", "q1", "Shared problem")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    return t


def _depended_by(root: Path, rev: str = "HEAD") -> str:
    text = git(root, "show", f"{rev}:Problems/q1.md")
    return next(ln for ln in text.splitlines() if ln.startswith("- 被依赖:"))


def test_kb_sync_merges_both_sides_dependents_after_renumbering(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    _ok(a, "problem", "add", "q2", "Alice depends on q1", "--depends", "q1")
    git(a, "push", "-q", "origin", "main")
    _ok(b, "problem", "add", "q2", "Bob depends on q1", "--depends", "q1")  # the same new ID
    out = _ok(b, "sync")
    assert out["renumbered"] == {"q2": "q3"}
    assert out["merge"] == "merged" and out["conflicts"] == [], out
    assert _depended_by(b) == '- 被依赖: ["q2","q3"]'
    assert git(b, "status", "--porcelain") == ""
    assert invoke("verify", cwd=b).code == 0


def test_plain_git_pull_merges_both_sides_dependents(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    assert invoke("hooks", "install", cwd=b).code == 0  # registers the drivers in b
    _ok(a, "problem", "add", "q2", "Alice depends on q1", "--depends", "q1")
    git(a, "push", "-q", "origin", "main")
    _ok(b, "problem", "add", "q3", "Bob depends on q1", "--depends", "q1")
    git(b, "pull", "-q", "--no-rebase", "--no-edit")
    assert len(git(b, "rev-list", "--parents", "-n", "1", "HEAD").split()) == 3
    assert _depended_by(b) == '- 被依赖: ["q2","q3"]'
    assert "<<<<<<<" not in (b / "Problems/q1.md").read_text(encoding="utf-8")
    assert git(b, "check-attr", "merge", "--", "Problems/q1.md").endswith("kb-card")
    assert invoke("verify", cwd=b).code == 0


def test_without_the_driver_the_same_pull_conflicts(team: dict[str, Path]) -> None:
    """The control: in a clone that never registered kb's drivers (a plain ``git clone``,
    no ``kb hooks install``), git's own line merge stops on the line the driver settles."""
    a, b = team["a"], team["b"]
    _ok(a, "problem", "add", "q2", "Alice depends on q1", "--depends", "q1")
    git(a, "push", "-q", "origin", "main")
    _ok(b, "problem", "add", "q3", "Bob depends on q1", "--depends", "q1")
    assert git(b, "config", "--get", "merge.kb-card.driver", check=False) == ""
    git(b, "pull", "-q", "--no-rebase", "--no-edit", check=False)
    assert git(b, "diff", "--name-only", "--diff-filter=U") == "Problems/q1.md"


def _driver(tmp_path: Path, base: bytes, ours: bytes, theirs: bytes) -> tuple[int, bytes, list[str]]:
    files = []
    for name, data in (("base", base), ("ours", ours), ("theirs", theirs)):
        f = tmp_path / name
        f.write_bytes(data)
        files.append(f)
    code, messages = run_driver("card", files[0], files[1], files[2], "Problems/q1.md", tmp_path)
    return code, files[1].read_bytes(), messages


def test_a_dependent_one_side_removed_stays_removed(tmp_path: Path) -> None:
    code, merged, _ = _driver(tmp_path, _card('["q2","q3"]'), _card('["q3","q10"]'),
                              _card('["q2","q3","q4"]'))
    assert code == 0 and merged == _card('["q3","q4","q10"]')  # natural ID order


def test_another_line_both_sides_changed_still_conflicts(tmp_path: Path) -> None:
    code, merged, messages = _driver(tmp_path, _card("[]"), _card('["q2"]', plan="Alice's plan"),
                                     _card('["q3"]', plan="Bob's plan"))
    text = merged.decode("utf-8")
    assert code == 1 and messages == [
        "Problems/q1.md: both sides changed the same lines (line 10: 计划); resolve the conflict "
        "markers there (ours first, then theirs)"]
    assert '- 被依赖: ["q2","q3"]' in text and "<<<<<<< ours" in text
    assert "Alice's plan" in text and "Bob's plan" in text


def test_crlf_cards_keep_their_line_ends(tmp_path: Path) -> None:
    code, merged, _ = _driver(tmp_path, _card("[]", newline="\r\n"), _card('["q2"]', newline="\r\n"),
                              _card('["q3"]', newline="\r\n"))
    assert code == 0 and merged == _card('["q2","q3"]', newline="\r\n")


@pytest.mark.parametrize("ours, theirs", [
    (_card('["q2"]'), _card('["q2"]')),                      # the sides agree
    (_card('["q2"'), _card('["q3"]')),                       # unreadable (KB121)
    (_card('["q2"]').replace("- 被依赖".encode(), "- 其他".encode()), _card('["q3"]')),  # no such line
    (_card('["q2"]') + "- 被依赖: []\n".encode(), _card('["q3"]')),  # two of them
    (b"\xff" + _card('["q2"]'), _card('["q3"]')),            # not UTF-8
])
def test_nothing_to_settle_leaves_the_versions_to_the_line_merge(ours: bytes, theirs: bytes) -> None:
    assert settle_derived(_card("[]"), ours, theirs) is None


def test_the_cards_line_names_the_problems_folder(tmp_path: Path) -> None:
    assert attribute_lines("tree.md", "DASHBOARD.md", "Logs", "Problems")[-1] == \
        "Problems/*.md merge=kb-card"
    assert attribute_lines("tree.md", "DASHBOARD.md", "Logs", "Open problems/")[-1] == \
        '"Open problems/*.md" merge=kb-card'
    assert not any("kb-card" in ln for ln in attribute_lines("tree.md", "DASHBOARD.md", "Logs", "."))
    # git reads the quoted line: a card in a folder with a space gets the driver.
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    lines = attribute_lines("tree.md", "DASHBOARD.md", "Logs", "Open problems")
    (repo / ".gitattributes").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert git(repo, "check-attr", "merge", "--", "Open problems/q1.md").endswith("kb-card")
    assert git(repo, "check-attr", "merge", "--", "Open problems/sub/q1.md").endswith("unspecified")
    assert git(repo, "check-attr", "merge", "--", "tree.md").endswith("kb-tree")


def test_kb_init_names_the_driver_and_kb_sync_adds_it_to_an_older_kb(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    assert "Problems/*.md merge=kb-card" in (a / ".gitattributes").read_text(encoding="utf-8")
    # An older KB: its .gitattributes predates the driver.
    attrs = b / ".gitattributes"
    attrs.write_text(attrs.read_text(encoding="utf-8").replace("Problems/*.md merge=kb-card\n", ""),
                     encoding="utf-8")
    commit_all(b, "an older .gitattributes")
    git(b, "push", "-q", "origin", "main")
    git(a, "pull", "-q", "--ff-only")
    _ok(a, "problem", "add", "q2", "Alice depends on q1", "--depends", "q1")
    git(a, "push", "-q", "origin", "main")
    _ok(b, "problem", "add", "q3", "Bob depends on q1", "--depends", "q1")
    out = _ok(b, "sync")
    assert out["merge"] == "merged", out
    assert "Problems/*.md merge=kb-card" in attrs.read_text(encoding="utf-8")
    assert _depended_by(b) == '- 被依赖: ["q2","q3"]'


def test_kb_verify_warns_when_a_paths_move_left_the_cards_without_their_driver(
        team: dict[str, Path]) -> None:
    """KB246: kb.toml's problems moved to Cards/ while .gitattributes still names Problems/*.md;
    git would merge the cards line by line. `kb hooks install` writes the line; then no warning."""
    a = team["a"]

    def kb246() -> list[dict]:
        res = invoke("verify", "--json", cwd=a)
        return [d for d in res.json()["diagnostics"] if d["code"] == "KB246"]

    assert kb246() == []
    with (a / "kb.toml").open("a", encoding="utf-8") as f:
        f.write('\n[paths]\nproblems = "Cards"\n')
    git(a, "mv", "Problems", "Cards")
    found = kb246()
    assert len(found) == 1 and "Cards/*.md (kb-card)" in found[0]["message"], found
    assert "`Cards/*.md merge=kb-card`" in found[0]["message"]
    assert git(a, "check-attr", "merge", "--", "Cards/q1.md").endswith("unspecified")
    assert invoke("hooks", "install", cwd=a).code == 0
    assert git(a, "check-attr", "merge", "--", "Cards/q1.md").endswith("kb-card")
    assert kb246() == []


def test_no_kb246_in_a_kb_that_names_no_driver(team: dict[str, Path]) -> None:
    """A KB whose .gitattributes names none of kb's drivers (removed on purpose) is not nagged."""
    a = team["a"]
    (a / ".gitattributes").unlink()
    res = invoke("verify", "--json", cwd=a)
    assert "KB246" not in {d["code"] for d in res.json()["diagnostics"]}


def test_a_conflict_in_the_statement_names_its_lines(tmp_path: Path) -> None:
    base = _card("[]")
    ours = _card('["q2"]').replace(b"Shared.\n", b"Ours.\n")
    theirs = _card('["q3"]').replace(b"Shared.\n", b"Theirs.\n")
    code, merged, messages = _driver(tmp_path, base, ours, theirs)
    assert code == 1 and b"Ours." in merged and b"Theirs." in merged
    assert messages == ["Problems/q1.md: both sides changed the same lines (line 13: lines 14–16); "
                        "resolve the conflict markers there (ours first, then theirs)"]


def test_kb246_points_at_the_stale_line_of_the_old_path(team: dict[str, Path]) -> None:
    """KB246 names the line kb wrote for the cards' old path (Problems/*.md merge=kb-card), not
    line 1 (here a comment); with no such line, the file's last line."""
    a = team["a"]
    attrs = a / ".gitattributes"
    text = attrs.read_text(encoding="utf-8")
    attrs.write_text("# merge drivers of kb\n" + text, encoding="utf-8")
    stale = 1 + next(n for n, ln in enumerate(attrs.read_text(encoding="utf-8").splitlines())
                     if ln.endswith("merge=kb-card"))
    assert stale > 1
    with (a / "kb.toml").open("a", encoding="utf-8") as f:
        f.write('\n[paths]\nproblems = "Cards"\n')
    git(a, "mv", "Problems", "Cards")

    def kb246() -> list[dict]:
        res = invoke("verify", "--json", cwd=a)
        return [d for d in res.json()["diagnostics"] if d["code"] == "KB246"]

    found = kb246()
    assert [(d["path"], d["line"]) for d in found] == [(".gitattributes", stale)], found
    kept = [ln for ln in attrs.read_text(encoding="utf-8").splitlines()
            if not ln.startswith("Problems/")]  # (the propositions' line is current)
    attrs.write_text("\n".join(kept) + "\n", encoding="utf-8")
    found = kb246()
    assert [(d["path"], d["line"]) for d in found] == [(".gitattributes", len(kept))], found
