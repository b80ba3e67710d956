"""KB312 (kb.checks.settle_rules): an object settles, and a Verified card is added, only
with the verification record that settles it -- through kb's hook on a real commit, in
``kb verify --range``, with an override, and on kb's own verdict, promote and merge flows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, write_files

NOW = "1793613600"  # 2026-11-02T10:00:00Z


@pytest.fixture
def ex(example_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example KB with kb's hooks installed and an undecided proposition p3 (no
    entries) and an open problem q3 (no solution), each committed by kb."""
    monkeypatch.setenv("KB_NOW", NOW)
    assert invoke("hooks", "install", cwd=example_kb).code == 0
    assert invoke("propo", "add", "数论", "p3", "Every even n > 2 is a sum of two primes.",
                  "--prob", "0.6", cwd=example_kb).code == 0
    assert invoke("problem", "add", "q3", "Are there infinitely many twin primes?",
                  cwd=example_kb).code == 0
    return example_kb


def _forge_proposition(ex: Path, status: str = "已验证·真", prob: str = "1") -> None:
    """The tester's hand edit: p3 settled by its status line, a Verified card copied."""
    card = ex / "Propos/数论/p3.md"
    text = card.read_text(encoding="utf-8")
    text = text.replace("- 状态: 未定论", f"- 状态: {status}").replace("- 概率: 0.6\n", f"- 概率: {prob}\n")
    card.write_text(text.replace("- 优先级: 1\n", "- 优先级: never\n"), encoding="utf-8")
    copied = (ex / "Verified/命题/p1.md").read_text(encoding="utf-8").replace("p1", "p3")
    if status == "已验证·假":
        copied = copied.replace("- 结论: 真", "- 结论: 假")
    write_files(ex, {"Verified/命题/p3.md": copied})


def _forge_problem(ex: Path) -> None:
    card = ex / "Problems/q3.md"
    text = card.read_text(encoding="utf-8").replace("- 状态: 求解中", "- 状态: 已解决")
    card.write_text(text.replace("- 优先级: 1\n", "- 优先级: never\n"), encoding="utf-8")
    write_files(ex, {"Verified/问题/q3.md":
                     (ex / "Verified/问题/q1.md").read_text(encoding="utf-8").replace("q1", "q3")})


def _line(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                if needle in ln)


def _range(ex: Path, spec: str = "HEAD~1..HEAD") -> tuple[int, list[dict]]:
    r = invoke("verify", "--range", spec, "--format", "json", cwd=ex)
    return r.code, [d for d in json.loads(r.stdout)["diagnostics"] if d["code"] == "KB312"]


def _drop_records(ex: Path) -> None:
    """Amend HEAD without the verification records it added (past the hook): the commit
    kb made, minus what backs it."""
    added = git(ex, "diff", "--name-only", "--diff-filter=A", "HEAD^1", "HEAD", "--",
                "Logs/Verification").split()
    assert added
    git(ex, "rm", "-q", *added)
    git(ex, "commit", "-q", "--amend", "--no-verify", "--no-edit")


def _hook_refuses(ex: Path, message: str) -> str:
    """Commit everything through kb's pre-commit hook: it must refuse; its output."""
    git(ex, "add", "-A")
    before = git(ex, "rev-parse", "HEAD")
    proc = git(ex, "commit", "-q", "-m", message, check=False)
    assert git(ex, "rev-parse", "HEAD") == before, "the hook let the forged settlement in"
    return proc


@pytest.mark.parametrize("forge, oid, card, needle, how", [
    (_forge_proposition, "p3", "Propos/数论/p3.md", "- 状态: 已验证·真", "kb verdict p3#证明N"),
    (_forge_problem, "q3", "Problems/q3.md", "- 状态: 已解决", "kb verdict q3#解法N"),
])
def test_a_hand_settlement_is_refused_by_the_hook_and_the_range(ex, forge, oid, card, needle, how):
    forge(ex)
    _hook_refuses(ex, f"settle {oid}")
    r = invoke("verify", "--staged", "--format", "json", cwd=ex)
    assert r.code == 1
    staged = [d for d in json.loads(r.stdout)["diagnostics"] if d["code"] == "KB312"]
    word = "命题" if oid == "p3" else "问题"
    assert [(d["path"], d["line"], d["blocking"]) for d in staged] == [
        (card, _line(ex / card, needle), True), (f"Verified/{word}/{oid}.md", 1, True)]
    assert how in staged[0]["message"] and f"Kb-Override: {oid} <reason>" in staged[0]["message"]
    assert "KB_OVERRIDE" in staged[0]["message"]  # the shared hint: where an override goes
    # committed past the hook: CI's range check refuses it
    git(ex, "commit", "-q", "--no-verify", "-m", f"settle {oid}")
    rc, found = _range(ex)
    assert rc == 1 and [d["path"] for d in found] == [card, f"Verified/{word}/{oid}.md"]
    assert all(d["severity"] == "error" for d in found)


@pytest.mark.parametrize("forge, oid", [(_forge_proposition, "p3"), (_forge_problem, "q3")])
def test_an_override_accepts_it(ex, forge, oid, monkeypatch):
    forge(ex)
    git(ex, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", f"{oid} imported from Vibe Math without its records")
    git(ex, "commit", "-q", "-m", f"import {oid}\n\nKb-Override: {oid} imported from Vibe Math "
        "without its records")  # through kb's hook, which reads KB_OVERRIDE
    assert "import" in git(ex, "log", "-1", "--format=%s")
    rc, found = _range(ex)
    assert rc == 0 and len(found) == 2 and {d["severity"] for d in found} == {"info"}
    assert "accepted: Kb-Override" in found[0]["message"]


def test_a_record_that_settles_the_other_way_does_not_back_it(ex):
    """A record of verdict 1 on r-p3 settles p3 true: a hand-written 已验证·假 is refused."""
    write_files(ex, {"Logs/Verification/r-p3_20261102T100000.json": json.dumps(
        {"r": "r-p3", "verdict": 1, "results": [{"verifier": "a", "result": 1},
                                                 {"verifier": "b", "result": 1}],
         "at": "2026-11-02T10:00:00"})})
    _forge_proposition(ex, "已验证·假", "0")
    git(ex, "add", "-A")
    git(ex, "commit", "-q", "--no-verify", "-m", "p3 false by hand")
    rc, found = _range(ex)
    assert rc == 1 and "settling it 假" in found[0]["message"]


@pytest.mark.parametrize("target", ["p3", "p3#证明1", "p3#证伪1"])
def test_kb_verdict_settling_passes_the_hook_and_the_range(ex, target):
    if "#" in target:
        kind = target.split("#")[1][:2]
        assert invoke("entry", "add", "p3", "--kind", kind, "--title", "an argument",
                      "--text", "Some text.", cwd=ex).code == 0
    before = git(ex, "rev-parse", "HEAD")
    votes = ("--vote", "a=0", "--vote", "b=0") if target == "p3#证明1" else \
        ("--vote", "a=1", "--vote", "b=1")
    r = invoke("verdict", target, *votes, "--json", cwd=ex)  # committed through the hook
    assert r.code == 0, r.stderr
    assert r.json()["settled"] == ["p3"] and r.json()["verified"] == ["Verified/命题/p3.md"]
    rc, found = _range(ex, f"{before}..HEAD")
    assert rc == 0 and found == []
    _drop_records(ex)  # the record is what backs it
    rc, found = _range(ex, f"{before}..HEAD")
    assert rc == 1 and [d["path"] for d in found] == ["Propos/数论/p3.md", "Verified/命题/p3.md"]


def test_kb_promote_and_a_verdict_on_the_judge_problem_pass(ex):
    """kb promote makes p4 a judge problem; a verdict of 0 on its 【证明】 solution settles
    p4 false and closes the judge problem: both settlements rest on r-q-promoted-p4-s1."""
    before = git(ex, "rev-parse", "HEAD")
    assert invoke("propo", "add", "数论", "p4", "A valuable claim.", "--prob", "0.6", "--value",
                  "0.9", cwd=ex).code == 0
    assert invoke("entry", "add", "p4", "--kind", "证明", "--title", "a sketch", "--text",
                  "Sketch.", cwd=ex).code == 0
    assert invoke("promote", cwd=ex).code == 0
    r = invoke("verdict", "q-promoted-p4#解法1", "--vote", "a=0", "--vote", "b=0", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    assert sorted(r.json()["settled"]) == ["p4", "q-promoted-p4"]
    rc, found = _range(ex, f"{before}..HEAD")
    assert rc == 0 and found == []
    _drop_records(ex)
    rc, found = _range(ex, f"{before}..HEAD")
    assert rc == 1 and sorted(d["path"] for d in found) == [
        "Problems/q-promoted-p4.md", "Propos/数论/p4.md", "Verified/命题/p4.md",
        "Verified/问题/q-promoted-p4.md"]


def test_a_merge_of_a_branch_that_settled_properly_passes(ex):
    base = git(ex, "rev-parse", "HEAD")
    git(ex, "checkout", "-q", "-b", "side")
    assert invoke("entry", "add", "q3", "--kind", "解法", "--title", "a proof", "--text", "Proof.",
                  cwd=ex).code == 0
    assert invoke("verdict", "q3#解法1", "--vote", "a=1", "--vote", "b=1", cwd=ex).code == 0
    git(ex, "checkout", "-q", "-")
    assert invoke("propo", "add", "数论", "p5", "Another claim.", cwd=ex).code == 0
    git(ex, "merge", "-q", "--no-ff", "--no-edit", "side")  # through kb's pre-merge-commit hook
    assert len(git(ex, "rev-parse", "HEAD^@").split()) == 2
    assert "- 状态: 已解决" in (ex / "Problems/q3.md").read_text(encoding="utf-8")
    rc, found = _range(ex, f"{base}..HEAD")
    assert rc == 0 and found == []
    rc, found = _range(ex, "HEAD^1..HEAD")  # the merge alone, against its first parent
    assert rc == 0 and found == []
    # the branch's own verdict commit is what settled q3: without its record it is refused
    git(ex, "checkout", "-q", "side")
    _drop_records(ex)
    rc, found = _range(ex)
    assert rc == 1 and [d["path"] for d in found] == ["Problems/q3.md", "Verified/问题/q3.md"]


def test_a_settlement_moved_with_its_card_or_a_paths_folder_is_judged_alike(make_kb):
    """Cards in configured folders: the rule reads kind and place from kb.toml's [paths]."""
    from test_verify_support import proposition, verified

    config = '[kb]\n[paths]\npropositions = "research/propos"\nverified = "research/verified"\n'
    root = make_kb({"research/propos/数论/p1.md": proposition("p1")}, config=config, commit=True)
    write_files(root, {"research/propos/数论/p1.md": proposition("p1", "已验证·真", "1"),
                       "research/verified/命题/p1.md": verified("p1")})
    commit_all(root, "forged")
    rc, found = _range(root)
    assert rc == 1 and [d["path"] for d in found] == ["research/propos/数论/p1.md",
                                                       "research/verified/命题/p1.md"]
    # a settled card moved to another category is no new settlement
    git(root, "commit", "-q", "--amend", "-m", "forged\n\nKb-Override: p1 test")
    git(root, "mv", "research/propos/数论/p1.md", "research/propos/p1-other.md")
    (root / "research/propos/代数").mkdir()
    git(root, "mv", "research/propos/p1-other.md", "research/propos/代数/p1.md")
    git(root, "commit", "-q", "--no-verify", "-m", "move p1")
    rc, found = _range(root)
    assert found == []


def test_a_paths_move_of_the_propositions_folder_is_no_new_settlement(make_kb):
    """kb.toml moves [paths] propositions (with the override a move needs), the settled
    cards moving with the folder: nothing settles anew. A card the move commit settles by
    hand is still refused (the move is no first commit, though the base read through the
    new kb.toml holds no file)."""
    from test_verify_support import proposition

    root = make_kb({"Propos/数论/p1.md": proposition("p1", "已验证·真", "1"),
                    "Propos/数论/p2.md": proposition("p2")}, commit=True)
    (root / "PP").mkdir()
    git(root, "mv", "Propos/数论", "PP/数论")
    with (root / "kb.toml").open("a", encoding="utf-8") as f:
        f.write('\n[paths]\npropositions = "PP"\n')
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "move", "-m", "Kb-Override: paths.propositions move")
    rc, found = _range(root)
    assert found == [], found
    write_files(root, {"PP/数论/p2.md": proposition("p2", "已验证·真", "1")})
    (root / "QQ").mkdir()
    git(root, "mv", "PP/数论", "QQ/数论")
    text = (root / "kb.toml").read_text(encoding="utf-8").replace('"PP"', '"QQ"')
    (root / "kb.toml").write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "move again", "-m",
        "Kb-Override: paths.propositions move")
    rc, found = _range(root)
    assert rc == 1 and [(d["path"], d["message"].split(":")[0]) for d in found] == \
        [("QQ/数论/p2.md", "p2")], found


def test_the_bare_record_of_an_object_named_like_a_proof_backs_only_that_object(ex):
    """r-x-pf1 is the bare verdict on proposition x-pf1, not proof 1 of x."""
    for oid in ("x", "x-pf1"):
        assert invoke("propo", "add", "数论", oid, f"Claim {oid}.", cwd=ex).code == 0
    r = invoke("verdict", "x-pf1", "--vote", "A=1", "--vote", "B=1", cwd=ex)
    assert r.code == 0, r.stderr
    card = ex / "Propos/数论/x.md"
    text = card.read_text(encoding="utf-8").replace("- 状态: 未定论", "- 状态: 已验证·真")
    card.write_text(text.replace("- 概率: 0.5\n", "- 概率: 1\n"), encoding="utf-8")
    _hook_refuses(ex, "x proven")
    r = invoke("verify", "--staged", "--format", "json", cwd=ex)
    found = [d for d in json.loads(r.stdout)["diagnostics"] if d["code"] == "KB312"]
    assert r.code == 1 and [d["path"] for d in found] == ["Propos/数论/x.md"], r.stdout


def test_the_rule_is_registered_and_listed():
    """What the tests above rest on: KB312 is a registered history rule, in the catalogue
    and in `kb rules`."""
    from kb.checks.catalogue import BY_CODE
    from kb.checks.registry import HISTORY_RULES, load_rules

    load_rules()
    assert BY_CODE["KB312"].family == "history" and BY_CODE["KB312"].severity == "error"
    assert any("KB312" in r.codes and r.func.__module__ == "kb.checks.settle_rules"
               for r in HISTORY_RULES)
    r = invoke("rules", "--json")
    assert any(x["code"] == "KB312" for x in r.json()["rules"])
