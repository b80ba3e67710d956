"""``kb diff``: the research diff of a range, the staged index and the working tree.

Real repositories, kb's own write commands (so commits carry kb's trailers),
hand commits for what kb never writes (a renumbering, a removed hypothesis).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke


def _kb(root: Path, *args: str) -> None:
    r = invoke(*args, cwd=root)
    assert r.code == 0, (args, r.stdout, r.stderr)


@pytest.fixture
def pr(example_kb: Path) -> Path:
    """The example KB with a branch ``feat`` of kb commands on top of ``main``."""
    root = example_kb
    git(root, "checkout", "-q", "-b", "feat")
    _kb(root, "hyp", "add", "Caching the wheel cache halves setup", "--parent", "H1")
    _kb(root, "exp", "new", "--hyp", "H1.1.1", "Profile the db fixture")
    _kb(root, "exp", "log", "E005", "ran with -X importtime")
    _kb(root, "exp", "log", "E004", "re-ran with a warm cache")  # an experiment the range did not add
    _kb(root, "exp", "result", "E005", "--data", "collection 41 s of 38 min", "--conclusion", "推翻",
        "--reason", "imports are cheap")
    _kb(root, "hyp", "edit", "H1", "Setup, not tests, dominates CI time", "--reason", "wrong subject")
    _kb(root, "problem", "priority", "q2", "3")
    _kb(root, "problem", "add", "q3", "Twin primes are infinite", "--depends", "q2")
    _kb(root, "entry", "add", "q3", "--kind", "解法", "--title", "Sieve bound", "--prob", "0.2",
        "--text", "Bound the pairs by a sieve.")
    _kb(root, "verdict", "q2#解法1", "--vote", "alice=1", "--vote", "bob=1")
    _kb(root, "propo", "add", "数论", "p3", "There are infinitely many twin primes", "--prob", "0.6")
    _kb(root, "method", "add", "m9", "Sieve bounds", "--type", "方法")
    _kb(root, "method", "apply", "m1", "bounds the pairs", "--problem", "q3")
    return root


def _diff(root: Path, *args: str) -> dict:
    r = invoke("diff", *args, "--json", cwd=root)
    assert r.code == 0, (r.stdout, r.stderr)
    return r.json()


def _ids(d: dict) -> set[str]:
    """Every object ID the diff lists anywhere."""
    out = set()
    for sec in ("hypotheses", "experiments", "cards", "verified"):
        for items in d[sec].values():
            for x in items:
                for key in ("id", "from", "to"):
                    if isinstance(x.get(key), str) and re.fullmatch(r"[A-Za-z]+[\d.]+", x[key]):
                        out.add(x[key])
    return out


def test_range_lists_what_the_research_changed(pr: Path) -> None:
    card = pr / "Problems" / "q2.md"
    card.write_text(card.read_text(encoding="utf-8").replace('- 依赖: ["p1"]', '- 依赖: ["p2"]'),
                    encoding="utf-8")
    commit_all(pr, "q2 depends on p2, not p1")
    d = _diff(pr, "main..feat")
    assert d["source"] == "range" and len(d["commits"]) == 14
    assert d["commits"][-1]["op"] is None  # a commit by hand: no Kb-Op
    assert [c["op"] for c in d["commits"]][:3] == ["hyp.add", "exp.new", "exp.log"]
    h = d["hypotheses"]
    assert [(x["id"], x["parent"], x["statement"]) for x in h["added"]] == \
        [("H1.3", "H1", "Caching the wheel cache halves setup")]
    assert [(x["id"], x["to"], x["reason"]) for x in h["corrected"]] == \
        [("H1", "Setup, not tests, dominates CI time", "wrong subject")]
    [move] = h["status"]
    assert (move["id"], move["from"], move["to"]) == ("H1.1.1", "进行中", "被推翻")
    assert move["evidence"][0]["id"] == "E005" and move["evidence"][0]["conclusion"] == "推翻"
    assert [(x["id"], x["added"]) for x in h["evidence"]] == [("H1.1.1", ["E005"])]
    e = d["experiments"]
    assert [x["id"] for x in e["added"]] == ["E005"]
    [fin] = e["finished"]
    assert (fin["id"], fin["conclusion"], fin["data"]) == ("E005", "推翻", "collection 41 s of 38 min")
    assert sorted((x["id"], x["entries"]) for x in e["logged"]) == [("E004", 1), ("E005", 1)]
    assert e["edited"] == []  # a log entry is listed as such, not as an edit
    c = d["cards"]
    assert sorted((x["id"], x["kind"]) for x in c["added"]) == \
        [("m9", "method"), ("p3", "proposition"), ("q3", "problem")]
    assert [x["category"] for x in c["added"] if x["id"] == "p3"] == ["数论"]
    assert [(x["id"], x["problem"]) for x in c["applications"]] == [("m1", "q3")]
    assert ("q3", "解法", 1, "Sieve bound") in [(x["id"], x["entry"], x["number"], x["title"])
                                                 for x in c["entries_added"]]
    assert [(x["id"], x["from"], x["to"]) for x in c["priorities"]] == [("q2", 0, "never")]
    assert [(x["id"], x["added"], x["removed"]) for x in c["dependencies"]] == [("q2", ["p2"], ["p1"])]
    assert [(x["id"], x["to"]) for x in c["status"]] == [("q2", "已解决")]
    assert [x["id"] for x in c["settled"]] == ["q2"]
    assert [(x["id"], x["from"]["probability"], x["probability"]) for x in c["entries_changed"]] == \
        [("q2", 0.9, 1.0)]
    assert [(x["id"], x["object_type"]) for x in d["verified"]["added"]] == [("q2", "问题")]
    [v] = d["verdicts"]
    assert (v["target"], v["verdict"], v["mode"]) == ("q2#解法1", 1.0, "forced")
    assert sorted((x["verifier"], x["result"]) for x in v["votes"]) == [("alice", 1.0), ("bob", 1.0)]
    assert [(o["id"], o["reason"]) for o in d["overrides"]] == [("H1", "wrong subject")]
    # Only what the range changed: nothing about H1.1, H2, E001-E004, q1, p1, p2.
    assert _ids(d) == {"H1", "H1.1.1", "H1.3", "E004", "E005", "q2", "q3", "p3", "m9", "m1"}
    assert d["findings"] == [] and d["findings_summary"]["blocking"] == 0 and not d["empty"]


def test_a_b_form_and_markdown_and_text(pr: Path) -> None:
    assert _diff(pr, "main", "feat")["hypotheses"] == _diff(pr, "main..feat")["hypotheses"]
    md = invoke("diff", "main..feat", "--format", "markdown", cwd=pr)
    assert md.code == 0
    lines = md.stdout.splitlines()
    assert lines[0].startswith("## Research diff")
    # Overrides come first, before the hypotheses.
    assert lines.index("### Review these (overrides, renumberings, unreadable files, settlements without a record)") < lines.index("### Hypotheses")
    assert "- override on `H1`: wrong subject" in md.stdout
    assert "```mermaid" in md.stdout and "class n_H1_3 changed" in md.stdout
    assert "n_H2" not in md.stdout  # an untouched branch of the tree is not drawn
    text = invoke("diff", "main..feat", cwd=pr)
    assert "finished E005 (H1.1.1): conclusion 推翻; data: collection 41 s of 38 min" in text.stdout
    assert "```" not in text.stdout


def test_renumbering_and_removal_by_hand_are_highlighted_with_findings(pr: Path) -> None:
    tree = (pr / "tree.md").read_text(encoding="utf-8")
    tree = tree.replace("H1.3", "H1.4")
    (pr / "tree.md").write_text(tree, encoding="utf-8")
    git(pr, "commit", "-q", "-am", "renumber H1.3\n\nKb-Renumber: H1.3 -> H1.4")
    d = _diff(pr, "main..feat")
    assert d["renumberings"][0]["from"] == "H1.3" and d["renumberings"][0]["to"] == "H1.4"
    h = d["hypotheses"]
    assert [x["id"] for x in h["added"]] == ["H1.4"]  # new in the range, under its final ID
    assert h["removed"] == []
    md = invoke("diff", "main..feat", "--format", "markdown", cwd=pr).stdout
    assert "renumbered `H1.3` → `H1.4`" in md
    # Removing a hypothesis by hand: a history violation with its file and line.
    tree = (pr / "tree.md").read_text(encoding="utf-8")
    start = tree.index("### H1.2:")
    end = tree.index("### H1.4:")
    (pr / "tree.md").write_text(tree[:start] + tree[end:], encoding="utf-8")
    commit_all(pr, "drop H1.2")
    d = _diff(pr, "main..feat")
    assert [x["id"] for x in d["hypotheses"]["removed"]] == ["H1.2"]
    blocking = [f for f in d["findings"] if f["blocking"]]
    assert blocking and all(f["path"] and f["line"] >= 1 for f in blocking)
    assert any("H1.2" in f["message"] for f in blocking)
    r = invoke("diff", "main..feat", "--format", "markdown", "--exit-code",
               "--link-base", "https://example.org/r/blob/abc", cwd=pr)
    assert r.code == 1
    assert re.search(r"\[tree\.md:\d+\]\(https://example\.org/r/blob/abc/tree\.md#L\d+\)", r.stdout)


def test_agent_text_is_inert_in_markdown_and_mermaid(example_kb: Path) -> None:
    root = example_kb
    git(root, "checkout", "-q", "-b", "evil")
    nasty = 'A #quot; Pwn"]:::x\nclick n_H1 call alert() <script>alert(1)</script> @alice [x](https://evil.example) `c`'
    _kb(root, "hyp", "add", nasty.replace("\n", " "), "--parent", "H1")
    md = invoke("diff", "main..evil", "--format", "markdown", cwd=root).stdout
    assert "<script" not in md and "@alice" not in md and "](https://evil" not in md
    block = md[md.index("```mermaid"):]
    block = block[:block.index("```\n", 3)]
    for line in block.splitlines():
        if "H1.3" in line:
            # One quoted label: no quote, bracket, angle bracket or '#' survives inside it.
            label = line[line.index('["') + 2: line.rindex('"]')]
            assert not set(label.replace("<br/>", "")) & set('"<>[]`'), label
            assert label.startswith("H1.3: A #35;quot#59; Pwn#34;#93;")  # the literal entity is inert
            assert line.endswith(":::untested")


def test_staged_and_worktree(example_kb: Path) -> None:
    root = example_kb
    tree = (root / "tree.md").read_text(encoding="utf-8")
    (root / "tree.md").write_text(tree + "\n## H3: Staged hypothesis\nStatus: 待验\nEvidence: (empty)\n",
                                  encoding="utf-8")
    git(root, "add", "tree.md")
    (root / "tree.md").write_text(
        (root / "tree.md").read_text(encoding="utf-8")
        + "\n## H4: Unstaged hypothesis\nStatus: 待验\nEvidence: (empty)\n", encoding="utf-8")
    staged = _diff(root, "--staged")
    assert staged["source"] == "staged" and [x["id"] for x in staged["hypotheses"]["added"]] == ["H3"]
    wt = _diff(root)
    assert wt["source"] == "worktree" and [x["id"] for x in wt["hypotheses"]["added"]] == ["H3", "H4"]
    git(root, "checkout", "-q", "--", "tree.md")
    git(root, "reset", "-q")
    git(root, "checkout", "-q", "--", "tree.md")
    clean = _diff(root)
    assert clean["empty"] and _ids(clean) == set()
    assert "No research objects changed." in invoke("diff", cwd=root).stdout


def test_mermaid_stays_within_limits_and_says_what_it_left_out(example_kb: Path) -> None:
    root = example_kb
    git(root, "checkout", "-q", "-b", "big")
    tree = (root / "tree.md").read_text(encoding="utf-8")
    n = 700
    tree = tree.replace("## H2:", "".join(
        f"### H1.{i}: Candidate cause number {i} with a long enough statement to cost characters\n"
        f"Status: 待验\nEvidence: (empty)\nParent: H1\n\n" for i in range(3, 3 + n)) + "## H2:", 1)
    (root / "tree.md").write_text(tree, encoding="utf-8")
    commit_all(root, "many hypotheses")
    d = _diff(root, "main..big", "--no-findings")
    mm = d["mermaid"]
    assert len(d["hypotheses"]["added"]) == n
    body = "\n".join(mm["lines"])
    assert sum(1 for ln in mm["lines"] if " --> " in ln) <= 500 and len(body) <= 50_000
    assert mm["left_out"] == n - mm["shown"] > 0
    assert f"{mm['left_out']} changed hypotheses not drawn" in mm["note"]
    md = invoke("diff", "main..big", "--format", "markdown", "--no-findings", cwd=root).stdout
    assert mm["note"] in md
    # A PR comment holds 65,536 characters: --max-chars bounds the output and says so.
    assert len(md) > 20_000
    short = invoke("diff", "main..big", "--format", "markdown", "--no-findings", "--max-chars", "20000",
                   cwd=root).stdout
    assert len(short) <= 20_000 and "```mermaid" not in short
    assert re.search(r"\d+ more line\(s\) left out \(size limit 20,000 characters\)", short)


def test_usage_errors(pr: Path) -> None:
    r = invoke("diff", "main...feat", "--json", cwd=pr)
    assert r.code == 2 and r.json()["error"]["exit_code"] == 2
    r = invoke("diff", "nosuch..feat", cwd=pr)
    assert r.code == 2 and "nosuch" in r.stderr and "Traceback" not in r.stderr
    r = invoke("diff", "main..feat", "--staged", cwd=pr)
    assert r.code == 2


def test_an_unreadable_file_is_said_not_read_as_removals(example_kb: Path) -> None:
    root = example_kb
    with open(root / "tree.md", "ab") as f:
        f.write(b"\n\xff\xfe not UTF-8\n")
    commit_all(root, "corrupt tree.md")
    d = _diff(root, "HEAD~1..HEAD")
    assert d["hypotheses"]["removed"] == []
    [u] = d["unreadable"]
    assert u["path"] == "tree.md" and u["code"] == "KB101" and not d["empty"]
    assert any(f["code"] == "KB101" and f["blocking"] for f in d["findings"])
    md = invoke("diff", "HEAD~1..HEAD", "--format", "markdown", cwd=root).stdout
    assert "unreadable `tree.md:" in md


def test_staged_correction_shows_the_override_from_the_environment(example_kb: Path, monkeypatch) -> None:
    root = example_kb
    _kb(root, "hyp", "edit", "H2", "xdist on 4 workers halves the test step", "--reason", "scope",
        "--no-commit")
    git(root, "add", "tree.md")
    monkeypatch.setenv("KB_OVERRIDE", "H2 scope")
    d = _diff(root, "--staged")
    assert [(x["id"], x["reason"]) for x in d["hypotheses"]["corrected"]] == [("H2", "scope")]
    assert d["overrides"] == [{"id": "H2", "reason": "scope", "commit": None}]
    md = invoke("diff", "--staged", "--format", "markdown", cwd=root).stdout
    assert "- override on `H2`: scope (KB_OVERRIDE)" in md


def test_exploration_graph_nodes_added_and_closed(example_kb: Path) -> None:
    root = example_kb
    git(root, "checkout", "-q", "-b", "explore")
    r = invoke("trail", "add", "--kind", "goal", "--title", "Make CI fast", "--json", cwd=root)
    assert r.code == 0, r.stderr
    goal = r.json()["id"]
    r = invoke("trail", "add", "--kind", "step", "--title", "Profile tests", "--parent", goal, "--json",
               cwd=root)
    step = r.json()["id"]
    _kb(root, "trail", "set", step, "--status", "done")
    d = _diff(root, "main..explore")
    assert [n["id"] for n in d["trail"]["added"]] == [goal, step]
    assert [(n["id"], n["status"]) for n in d["trail"]["closed"]] == [(step, "done")]
    assert not d["empty"] and _ids(d) == set()  # no research object changed
    md = invoke("diff", "main..explore", "--format", "markdown", cwd=root).stdout
    assert f"- node closed `{step}` (step, **done**): Profile tests" in md
    # A range that does not touch the graph's log lists nothing of it.
    assert _diff(root, "main..main")["trail"] == {"added": [], "closed": []}


def test_each_change_names_its_commits_in_a_kb_below_the_repository_top(tmp_path: Path) -> None:
    """A KB in a folder of a larger repository: each listed change names the commits of
    the range that made it (one git log gives the commits and their paths); a commit
    that touched only files outside the KB is still one of the range's commits."""
    import shutil

    from conftest import EXAMPLES, git_init

    repo = git_init(tmp_path / "repo")
    kb = repo / "research"
    shutil.copytree(EXAMPLES, kb, ignore=shutil.ignore_patterns(".kb", "__pycache__"))
    (repo / "README.md").write_text("code\n", encoding="utf-8")
    base = commit_all(repo, "code and KB")
    _kb(kb, "exp", "log", "E004", "first run")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "README.md").write_text("code, changed\n", encoding="utf-8")
    outside = commit_all(repo, "code only")
    _kb(kb, "exp", "log", "E004", "second run")
    second = git(repo, "rev-parse", "HEAD")
    _kb(kb, "hyp", "add", "Caching halves setup", "--parent", "H1")
    added = git(repo, "rev-parse", "HEAD")
    d = _diff(kb, f"{base}..HEAD")
    assert d["kb"] == "research"
    assert [c["commit"] for c in d["commits"]] == [first, outside, second, added]
    [logged] = d["experiments"]["logged"]
    assert logged["id"] == "E004" and logged["commits"] == [first, second]
    [hyp] = d["hypotheses"]["added"]
    assert hyp["id"] == "H1.3" and hyp["commits"] == [added]


def test_a_changed_card_anchor_is_named_not_called_prose(example_kb: Path) -> None:
    """A card's anchor that no list reports (价值/关键性, 计划) is named in ``edited``
    (it used to read "text only"), also beside a change another list reports; a change
    of prose alone still reads "text only"."""
    root = example_kb
    p1 = root / "Propos/数论/p1.md"
    q2 = root / "Problems/q2.md"
    p1.write_text(p1.read_text(encoding="utf-8").replace("- 价值/关键性: 0.9", "- 价值/关键性: 0.2"),
                  encoding="utf-8")
    q2.write_text(q2.read_text(encoding="utf-8").replace("- 计划: 待调度", "- 计划: 先算小情形")
                  + "\nOne more line of prose.\n", encoding="utf-8")
    commit_all(root, "value and plan")
    d = _diff(root, "HEAD~1..HEAD")
    assert sorted((x["id"], x["fields"]) for x in d["cards"]["edited"]) == \
        [("p1", ["value"]), ("q2", ["plan"])]
    text = invoke("diff", "HEAD~1..HEAD", cwd=root).stdout
    assert "edited proposition p1 (value)" in text and "text only" not in text
    _kb(root, "problem", "priority", "q2", "4")  # a listed change beside an unlisted one
    q2.write_text(q2.read_text(encoding="utf-8").replace("- 计划: 先算小情形", "- 计划: 再想"),
                  encoding="utf-8")
    commit_all(root, "plan again")
    d = _diff(root, "HEAD~2..HEAD")
    assert [x["fields"] for x in d["cards"]["edited"] if x["id"] == "q2"] == [["plan"]]
    assert [x["to"] for x in d["cards"]["priorities"]] == [4]
    q2.write_text(q2.read_text(encoding="utf-8") + "\nProse only.\n", encoding="utf-8")
    commit_all(root, "prose")
    d = _diff(root, "HEAD~1..HEAD")
    assert [(x["id"], x["fields"], x["sections"]) for x in d["cards"]["edited"]] == \
        [("q2", [], ["解法候选"])]  # the prose went into the card's last section
    assert "edited problem q2 (§ 解法候选)" in invoke("diff", "HEAD~1..HEAD", cwd=root).stdout


def test_markdown_bold_labels_close_on_text_and_rules_line_counts_errors_once(example_kb: Path) -> None:
    """A hand edit and a deletion of Verified cards (each a blocking error): Markdown bold
    closes right after the label (``**… modified:**``; ``**… modified: **`` does not render
    bold), and the Rules line counts each error once, saying how many block."""
    root = example_kb
    card = root / "Verified/命题/p1.md"
    card.write_text(card.read_text(encoding="utf-8").replace("- 概率: 1", "- 概率: 0.9"), encoding="utf-8")
    (root / "Verified/命题/p2.md").unlink()
    commit_all(root, "edit and delete Verified cards by hand")
    d = _diff(root, "HEAD~1..HEAD")
    fsum = d["findings_summary"]
    assert fsum["errors"] >= 2 and fsum["blocking"] == fsum["errors"]
    md = invoke("diff", "HEAD~1..HEAD", "--format", "markdown", cwd=root).stdout
    assert "- **Verified card modified:** `Verified/命题/p1.md`" in md
    assert "- **Verified card deleted:** `Verified/命题/p2.md`" in md
    assert not re.search(r"\*\*[^*\n]*\s\*\*", md), md  # no bold closing after a space
    n, w = fsum["errors"], fsum["warnings"]
    assert f"**Rules:** {n} error(s) (all blocking), {w} warning(s)" in md
    text = invoke("diff", "HEAD~1..HEAD", cwd=root).stdout
    assert f"Rules: {n} error(s) (all blocking), {w} warning(s)" in text
    assert "blocking error(s)" not in text


@pytest.mark.parametrize("errors, blocking, warnings, line", [
    (0, 0, 0, "Rules: no problems"),
    (0, 0, 2, "Rules: 0 error(s), 2 warning(s)"),
    (3, 3, 0, "Rules: 3 error(s) (all blocking), 0 warning(s)"),
    (3, 1, 1, "Rules: 3 error(s) (1 blocking), 1 warning(s)"),
    (2, 0, 0, "Rules: 2 error(s) (none blocking), 0 warning(s)"),
])
def test_rules_line_wording(example_kb: Path, errors: int, blocking: int, warnings: int,
                            line: str) -> None:
    """Every mix of the summary's counts reads as what it is (blocking errors are a
    part of the errors, never added to them)."""
    from kb.review.render import render

    d = _diff(example_kb)
    d["findings_summary"] = {"errors": errors, "warnings": warnings, "blocking": blocking,
                             "exit_code": 1 if blocking else 0, "notes": []}
    assert line in render(d, "text").splitlines()
    assert "**" + line.replace(": ", ":** ", 1) in render(d, "markdown").splitlines()


def test_a_verification_record_modified_or_deleted_is_shown(example_kb: Path) -> None:
    """Records are append-only (KB310): a hand edit and a deletion are in the diff's data,
    text and Markdown, with the rule's findings; before, the diff said "No research
    objects changed"."""
    root = example_kb
    recs = sorted((root / "Logs" / "Verification").glob("*.json"))
    assert len(recs) >= 2
    edited, dropped = recs[0], recs[1]
    edited.write_text(edited.read_text(encoding="utf-8").replace('"verdict": ', '"verdict": 0.2, "was": '),
                      encoding="utf-8")
    dropped.unlink()
    commit_all(root, "tamper with the records")
    d = _diff(root, "HEAD~1..HEAD")
    got = {(x["path"], x["deleted"]) for x in d["records_changed"]}
    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731
    assert got == {(rel(edited), False), (rel(dropped), True)}
    assert not d["empty"]
    assert {f["code"] for f in d["findings"]} >= {"KB310"}
    text = invoke("diff", "HEAD~1..HEAD", cwd=root).stdout
    assert "No research objects changed" not in text
    assert f"Verification record modified: {rel(edited)}" in text
    md = invoke("diff", "HEAD~1..HEAD", "--format", "markdown", cwd=root).stdout
    assert f"- **Verification record deleted:** `{rel(dropped)}` (records are append-only)" in md


def test_sections_and_titles_a_reviewer_did_not_see(example_kb: Path) -> None:
    """An experiment's design edited after its result, a method's improvement history and
    a retitled entry: each named (they read "text only", vanished beside the result, or
    showed an entry as changed into itself)."""
    root = example_kb
    eid = invoke("exp", "new", "--hyp", "H1", "Design then result", "--goal", "g", "--json",
                 cwd=root).json()["id"]
    _kb(root, "exp", "result", eid, "--data", "d", "--conclusion", "支持", "--reason", "r")
    base = git(root, "rev-parse", "HEAD")
    _kb(root, "exp", "update", eid, "a sharper expectation", "--section", "预期")
    d = _diff(root, f"{base}..HEAD")
    assert [(x["id"], x["sections"]) for x in d["experiments"]["edited"]] == [(eid, ["实验设计"])]
    assert f"edited {eid} (§ 实验设计)" in invoke("diff", f"{base}..HEAD", cwd=root).stdout
    # the same edit in a range that also finishes another experiment's result: still named
    eid2 = invoke("exp", "new", "--hyp", "H1", "Second", "--goal", "g", "--json",
                  cwd=root).json()["id"]
    base = git(root, "rev-parse", "HEAD")
    _kb(root, "exp", "update", eid2, "a new goal", "--section", "目标")
    _kb(root, "exp", "result", eid2, "--data", "d", "--conclusion", "支持", "--reason", "r")
    d = _diff(root, f"{base}..HEAD")
    assert [x["id"] for x in d["experiments"]["finished"]] == [eid2]
    assert [(x["id"], x["sections"]) for x in d["experiments"]["edited"]] == [(eid2, ["实验设计"])]
    # an entry retitled by hand: old and new title in the text
    q2 = root / "Problems/q2.md"
    text = q2.read_text(encoding="utf-8")
    head = next(ln for ln in text.splitlines() if ln.startswith("### 解法 1｜"))
    title = head.split("｜")[1]
    q2.write_text(text.replace(head, head.replace(f"｜{title}｜", "｜A better title｜")),
                  encoding="utf-8")
    commit_all(root, "retitle")
    out = invoke("diff", "HEAD~1..HEAD", cwd=root).stdout
    assert f"entry q2 解法 1: {title} → A better title" in out, out


def test_against_judges_the_findings_as_the_pull_requests_check(tree_kb: Path) -> None:
    """A branch and its target both added H1 since they parted: `kb verify --range
    main..feat --against main` refuses it (KB350), and so does the research diff's rules
    line with the same --against (it said "no problems" under a failing check)."""
    root = tree_kb
    git(root, "checkout", "-q", "-b", "feat")
    assert invoke("hyp", "add", "The branch's claim", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    assert invoke("hyp", "add", "The target's claim", cwd=root).code == 0
    plain = invoke("diff", "main..feat", "--exit-code", cwd=root)
    assert plain.code == 0 and "KB350" not in plain.stdout
    r = invoke("diff", "main..feat", "--against", "main", "--exit-code", cwd=root)
    assert r.code == 1 and "KB350" in r.stdout, r.stdout + r.stderr
    assert invoke("verify", "--range", "main..feat", "--against", "main", cwd=root).code == 1
    assert invoke("diff", "--against", "main", cwd=root).code == 2  # a range only


def test_a_card_added_settled_is_a_settlement_the_reviewer_sees(example_kb: Path) -> None:
    """A card the range adds already settled (a copy, hand-written) is listed as settled,
    marked as having no verification record, and named under "Review these"; one kb's
    verdict settled in the range has its record."""
    root = example_kb
    git(root, "checkout", "-q", "-b", "feat")
    card = (root / "Propos/数论/p1.md").read_text(encoding="utf-8")
    assert "- 状态: 已验证·真" in card
    (root / "Propos/数论/p9.md").write_text(card.replace("p1", "p9"), encoding="utf-8")
    commit_all(root, "p9, copied settled")
    _kb(root, "verdict", "q2#解法1", "--vote", "alice=1", "--vote", "bob=1")
    d = _diff(root, "main..feat")
    settled = {x["id"]: (x["kind"], x["record"]) for x in d["cards"]["settled"]}
    assert settled == {"p9": ("proposition", False), "q2": ("problem", True)}, settled
    assert [x["id"] for x in d["cards"]["added"]] == ["p9"]
    md = invoke("diff", "main..feat", "--format", "markdown", cwd=root).stdout
    assert ("settled proposition `p9` (已验证·真) with no verification record in the range"
            in md), md
    assert "settled problem `q2` (已解决) with no" not in md


def test_a_paths_move_a_fake_renumbering_and_an_invalid_record_read_as_what_they_are(
        example_kb: Path) -> None:
    """A [paths] move of Verified/ and Logs/ is no new verdict and no new Verified card; a
    `Kb-Renumber:` that renumbers nothing leaves the card paired with itself (edited, not
    added and settled); a record no verdict could write is marked invalid and backs no
    settlement."""
    import json as _json

    root = example_kb
    git(root, "checkout", "-q", "-b", "feat")
    git(root, "mv", "Verified", "Proven")
    git(root, "mv", "Logs", "Records")
    with (root / "kb.toml").open("a", encoding="utf-8") as f:
        f.write('\n[paths]\nverified = "Proven"\nlogs = "Records"\n')
    commit_all(root, "move\n\nKb-Override: paths.verified lab\nKb-Override: paths.logs lab")
    d = _diff(root, "main..feat")
    assert d["verdicts"] == [] and d["verified"]["added"] == [], (d["verdicts"], d["verified"])
    # a fake renumbering of q1 (q9 exists nowhere): q1 is still q1, edited
    card = root / "Problems/q1.md"
    card.write_text(card.read_text(encoding="utf-8") + "\nA note.\n", encoding="utf-8")
    commit_all(root, "note\n\nKb-Renumber: q1 -> q9")
    d = _diff(root, "main..feat")
    c = d["cards"]
    assert [x["id"] for x in c["added"]] == [] and [x["id"] for x in c["settled"]] == []
    assert [x["id"] for x in c["removed"]] == [] and "q1" in [x["id"] for x in c["edited"]]
    # a record whose verdict contradicts its votes
    bad = {"r": "r-q3-s1", "verdict": 1, "mode": "forced", "at": "2026-12-01T10:00:00",
           "results": [{"verifier": "zz", "result": 0}, {"verifier": "yy", "result": 0}]}
    (root / "Records/Verification/r-q3-s1_20261201T100000.json").write_text(
        _json.dumps(bad) + "\n", encoding="utf-8")
    commit_all(root, "a record by hand")
    d = _diff(root, "main..feat")
    (v,) = d["verdicts"]
    assert "does not follow from its results" in v["invalid"], v
    md = invoke("diff", "main..feat", "--format", "markdown", cwd=root).stdout
    assert "not valid:" in md and "KB243" in md, md


def test_rewrite_diffs_the_old_tip_against_the_new(example_kb: Path) -> None:
    """After a reset that dropped a commit, `kb diff OLD..NEW --rewrite` (the push job's
    summary) said "Research diff NEW..NEW (0 commits)" and "No research objects changed":
    it diffed from the merge base, which is NEW. With --rewrite it diffs OLD -> NEW, as
    `kb verify --rewrite` judges it; without, it is the range from the merge base still."""
    root = example_kb
    _kb(root, "hyp", "add", "Dropped by the reset", "--parent", "H1")
    old = git(root, "rev-parse", "HEAD")
    git(root, "reset", "-q", "--hard", "HEAD~1")
    new = git(root, "rev-parse", "HEAD")
    r = invoke("diff", f"{old}..{new}", "--rewrite", "--json", cwd=root)
    assert r.code == 0, (r.stdout, r.stderr)
    d = r.json()
    assert d["base"] == old and d["tip"] == new
    assert [h["statement"] for h in d["hypotheses"]["removed"]] == ["Dropped by the reset"]
    assert any(f["code"] == "KB301" for f in d["findings"]), d["findings"]
    plain = _diff(root, f"{old}..{new}")
    assert plain["base"] == new and plain["hypotheses"]["removed"] == []


def test_an_override_is_shown_on_the_change_its_command_made(tree_kb: Path) -> None:
    """`kb hyp status H1 …` then `kb hyp edit H1 … --reason typo`: the diff labelled the
    plain status move "override: typo" too. An override a kb command wrote goes with the
    change of its kind (Kb-Op); one by hand (no Kb-Op) may be any change's."""
    root = tree_kb
    _kb(root, "hyp", "add", "first")
    base = git(root, "rev-parse", "HEAD")
    _kb(root, "hyp", "status", "H1", "in-progress")
    _kb(root, "hyp", "edit", "H1", "first, sharper", "--reason", "typo")
    d = _diff(root, f"{base}..HEAD")
    h = d["hypotheses"]
    assert [(c["id"], c["reason"]) for c in h["corrected"]] == [("H1", "typo")]
    assert [(c["id"], c["reason"]) for c in h["status"]] == [("H1", None)]
