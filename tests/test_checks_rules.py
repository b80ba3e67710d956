"""Every snapshot rule (KB2xx) fires with the right path and line, and is silent
on valid input. Real repositories; `kb verify` run in-process."""

from __future__ import annotations

import shutil

import pytest

from conftest import EXAMPLES, commit_all, git_init
from test_verify_support import (
    TREE,
    experiment,
    find,
    fresh_dashboard,
    make_repo,
    method,
    problem,
    proposition,
    verified,
    verify_json,
)


def _line_of(text: str, needle: str, nth: int = 1) -> int:
    seen = 0
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            seen += 1
            if seen == nth:
                return i
    raise AssertionError(f"{needle!r} not in text")


def test_valid_kb_is_clean(make_kb):
    root = make_repo(make_kb)
    code, data = verify_json(root)
    assert code == 0
    assert data["diagnostics"] == [], data["diagnostics"]


def test_example_kb_is_clean_and_its_dashboard_fresh(tmp_path):
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".kb", "__pycache__"))
    git_init(root)
    code, data = verify_json(root)
    assert (code, data["diagnostics"]) == (0, [])  # the bundled DASHBOARD.md is kb's own
    fresh_dashboard(root)
    commit_all(root, "examples")
    code, data = verify_json(root)
    assert (code, data["diagnostics"]) == (0, [])
    code, data = verify_json(root, "--staged")
    assert (code, data["diagnostics"]) == (0, [])


TREE_BAD_GRAMMAR = TREE + "\n## H03: Leading zeros\nStatus: 待验\nEvidence: (empty)\n"
TREE_DUP = TREE + "\n## H2: Declared again\nStatus: 待验\nEvidence: (empty)\n"
TREE_LEVEL = TREE.replace("## H2: Mixed", "### H2: Mixed")
TREE_PARENT = TREE.replace("Parent: H1", "Parent: H2")
TREE_NO_CHILDREN = TREE.replace("Children: H1.1\n", "")
TREE_ORPHAN = TREE + "\n### H3.1: Orphan\nStatus: 待验\nEvidence: (empty)\nParent: H3\n"
TREE_STATUS = TREE.replace("## H2: Mixed precision slows convergence\nStatus: 待验",
                           "## H2: Mixed precision slows convergence\nStatus: maybe")
TREE_NO_EVIDENCE = TREE.replace("## H2: Mixed precision slows convergence\nStatus: 待验",
                                "## H2: Mixed precision slows convergence\nStatus: 被支持")
TREE_MISSING_EXP = TREE.replace("Evidence: E001", "Evidence: E001, E009")
TREE_NO_STATEMENT = TREE + "\n## H3: \u200b\nStatus: 待验\nEvidence: (empty)\n"


@pytest.mark.parametrize("code,files,path,needle", [
    ("KB201", {"tree.md": TREE_BAD_GRAMMAR}, "tree.md", "## H03:"),
    ("KB202", {"tree.md": TREE_DUP}, "tree.md", "## H2: Declared again"),
    ("KB203", {"tree.md": TREE_LEVEL}, "tree.md", "### H2:"),
    ("KB204", {"tree.md": TREE_PARENT}, "tree.md", "Parent: H2"),
    ("KB204", {"tree.md": TREE_NO_CHILDREN}, "tree.md", "## H1:"),
    ("KB204", {"tree.md": TREE_ORPHAN}, "tree.md", "### H3.1:"),
    ("KB205", {"tree.md": TREE_STATUS}, "tree.md", "Status: maybe"),
    ("KB206", {"tree.md": TREE_NO_EVIDENCE}, "tree.md", "Evidence: (empty)\n"),
    ("KB210", {"tree.md": TREE_MISSING_EXP}, "tree.md", "Evidence: E001, E009"),
    ("KB222", {"tree.md": TREE_NO_STATEMENT}, "tree.md", "## H3:"),
], ids=lambda x: x if isinstance(x, str) and x.startswith("KB") else None)
def test_tree_rules_fire(make_kb, code, files, path, needle):
    root = make_repo(make_kb, files, dashboard=False)
    rc, data = verify_json(root)
    hits = find(data, code)
    assert hits, data["diagnostics"]
    text = files[path]
    if needle.endswith("\n"):  # the Evidence line of the hypothesis made 被支持
        want = _line_of(text, "Status: 被支持") + 1
    else:
        want = _line_of(text, needle)
    assert any(h["path"] == path and h["line"] == want for h in hits), (want, hits)
    if hits[0]["severity"] == "error":
        assert rc == 1


@pytest.mark.parametrize("statement,says", [
    ("", "is empty"),
    ("  \u3000", "is empty"),  # white space (an ideographic space) only
    ("\u200b", "U+200B"),
    ("\u2060\ufeff", "U+2060"),
])
def test_a_hypothesis_that_states_nothing_is_kb222(make_kb, statement, says):
    """The write commands refuse a statement with nothing that shows (kb.text.visible);
    typed by hand, `## H3:` or `## H3: <U+200B>` declared a hypothesis that claims
    nothing and every check passed it. KB222 at the heading, naming the character."""
    text = TREE + f"\n## H3: {statement}\nStatus: 待验\nEvidence: (empty)\n"
    root = make_repo(make_kb, {"tree.md": text}, dashboard=False)
    rc, data = verify_json(root)
    (hit,) = find(data, "KB222")
    assert (hit["path"], hit["line"], hit["severity"]) == ("tree.md", _line_of(text, "## H3:"),
                                                         "error")
    assert says in hit["message"] and "kb hyp edit H3" in hit["message"]
    assert rc == 1


def test_a_statement_with_a_joiner_inside_real_text_is_not_kb222(make_kb):
    """Joiners shape visible text (an emoji sequence, a Devanagari conjunct): such a
    statement shows, and KB222 stays silent."""
    text = TREE + ("\n## H3: 👩\u200d🔬 क्\u200dष samples\nStatus: 待验\nEvidence: (empty)\n")
    root = make_repo(make_kb, {"tree.md": text}, dashboard=False)
    _, data = verify_json(root)
    assert find(data, "KB222") == []


def test_duplicate_names_both_locations(make_kb):
    root = make_repo(make_kb, {"tree.md": TREE_DUP}, dashboard=False)
    _, data = verify_json(root)
    (dup,) = find(data, "KB202")
    first, second = _line_of(TREE_DUP, "## H2:"), _line_of(TREE_DUP, "## H2:", 2)
    assert dup["line"] == second
    assert f"tree.md:{first}" in dup["message"] and f"tree.md:{second}" in dup["message"]


def test_many_declarations_of_one_id_give_a_bounded_report(make_kb):
    """4,000 copies of `## H1: d` (108 KB) gave 225 MB of KB202 messages, each naming every
    other declaration; the MCP verify tool never answered. Each message names the first
    declaration and a few more, then how many there are."""
    text = "# T\n\n" + "## H1: d\nStatus: 待验\nEvidence: (empty)\n\n" * 300
    root = make_repo(make_kb, {"tree.md": text}, dashboard=False)
    rc, data = verify_json(root)
    hits = find(data, "KB202")
    assert rc == 1 and len(hits) == 299
    assert all(len(h["message"]) < 300 for h in hits), max(len(h["message"]) for h in hits)
    last = hits[-1]["message"]
    assert "at tree.md:3, " in last and "… (299 other declarations in all)" in last, last


def test_teamflint_duplicates_reported_with_both_lines(make_kb, case_bytes):
    data = case_bytes("teamflint__HYPOTHESES.md")
    root = make_kb({"tree.md": data}, commit=True)
    rc, out = verify_json(root)
    dups = find(out, "KB202")
    assert dups and rc == 1
    text = data.decode("utf-8")
    for d in dups:
        hid = d["message"].split()[0]
        lines = [i for i, ln in enumerate(text.splitlines(), 1)
                 if ln.startswith("#") and f"[{hid}:" in ln or ln.startswith(f"#### {hid}:")]
        assert len(lines) >= 2 and d["line"] in lines
        assert all(f"tree.md:{ln}" in d["message"] for ln in lines)
    # the fenced ASCII tree declares nothing
    fenced = [i for i, ln in enumerate(text.splitlines(), 1) if "├── H004" in ln]
    assert all(d["line"] not in fenced for d in out["diagnostics"])


def test_card_and_experiment_rules_fire(make_kb):
    files = {
        "experiments/E002.md": experiment("E002", "H1", status="已完成", conclusion="[待补充]"),
        "experiments/E003.md": experiment("E004", "H1"),
        "experiments/E005.md": experiment("E005", "H9"),
        "Problems/q2.md": problem("q2", depends='["q9"]'),
        "Problems/q3.md": problem("q3", depends='["q4"]').replace("- ID: q3", "- ID: q30"),
        "Problems/q4.md": problem("q4", depends='["q3"]', depended_by='[]'),
        "Propos/数论/p2.md": proposition("p2", prob="1.5"),
        "Methods/m2.md": method("m2", claims='["p2"]', parents='["m1"]'),
    }
    root = make_repo(make_kb, files, dashboard=False)
    rc, data = verify_json(root)
    assert rc == 1

    def at(code, path, needle):
        want = _line_of(files[path], needle)
        hits = [d for d in find(data, code) if d["path"] == path]
        assert any(h["line"] == want for h in hits), (code, want, find(data, code))

    at("KB207", "experiments/E002.md", "**结论**")
    at("KB208", "experiments/E003.md", "# E004:")
    at("KB211", "experiments/E005.md", "# E005:")
    at("KB212", "Problems/q2.md", "- 依赖:")
    at("KB209", "Problems/q3.md", "- ID: q30")
    at("KB213", "Problems/q3.md", "- 依赖:")
    at("KB218", "Propos/数论/p2.md", "- 概率: 1.5")
    at("KB214", "Methods/m2.md", "- 可信断言:")
    at("KB215", "Methods/m2.md", "- 上级体系:")
    at("KB216", "Problems/q3.md", "- 被依赖:")
    (cyc,) = find(data, "KB213")
    assert "q3 -> q4 -> q3" in cyc["message"]
    kb216 = [d for d in find(data, "KB216") if d["path"] == "Problems/q3.md"][0]
    assert kb216["severity"] == "warning" and kb216["fix"]["new"] == '- 被依赖: ["q4"]'


def test_a_settled_object_without_its_card_warns_a_card_without_its_object_blocks(make_kb):
    """KB217 (a warning): kb verdict writes the missing card. KB221 (an error): a Verified
    card kb did not write, for an object never settled, is immutable once committed and
    made `kb verdict` refuse the real verdict for good."""
    files = {"Propos/数论/p3.md": proposition("p3", status="已验证·假", prob="0"),
             "Verified/问题/q7.md": verified("q7", kind="问题")}
    root = make_repo(make_kb, files, dashboard=False)
    rc, data = verify_json(root)
    assert [(h["path"], h["severity"]) for h in find(data, "KB217")] == \
        [("Propos/数论/p3.md", "warning")]
    assert [(h["path"], h["severity"]) for h in find(data, "KB221")] == \
        [("Verified/问题/q7.md", "error")] and rc == 1
    # the way out names the override a committed card's removal needs (KB304)
    assert "`Kb-Override: q7 <reason>`" in find(data, "KB221")[0]["message"]


def test_unknown_words_in_cards_and_experiments(make_kb):
    files = {"experiments/E002.md": experiment("E002", "H1", status="finito", conclusion="maybe so"),
             "Problems/q2.md": problem("q2", status="pending")}
    root = make_repo(make_kb, files, dashboard=False)
    _, data = verify_json(root)
    got = {(d["path"], d["line"]) for d in find(data, "KB205")}
    assert ("experiments/E002.md", _line_of(files["experiments/E002.md"], "**Status**")) in got
    assert ("experiments/E002.md", _line_of(files["experiments/E002.md"], "**结论**")) in got
    assert ("Problems/q2.md", _line_of(files["Problems/q2.md"], "- 状态:")) in got


def test_stale_dashboard_warning_and_config_error(make_kb):
    root = make_repo(make_kb)
    (root / "tree.md").write_text(TREE + "\n## H3: New one\nStatus: 待验\nEvidence: (empty)\n",
                                  encoding="utf-8")
    rc, data = verify_json(root)
    (st,) = find(data, "KB240")
    assert st["path"] == "DASHBOARD.md" and st["severity"] == "warning" and rc == 0
    assert "kb dashboard" in st["message"]
    for cfg in ('[rules]\ndashboard_stale = "error"\n', '[rules.severity]\nKB240 = "error"\n'):
        (root / "kb.toml").write_text(cfg, encoding="utf-8")
        rc, data = verify_json(root)
        assert find(data, "KB240")[0]["severity"] == "error" and rc == 1
    (root / "kb.toml").write_text('[rules]\ndisable = ["KB240"]\n', encoding="utf-8")
    rc, data = verify_json(root)
    # Snapshot rules follow the new kb.toml; switching a rule off is itself a
    # change the base's rules judge (KB309, issue 11) until an override names it.
    assert not find(data, "KB240") and [d["code"] for d in data["diagnostics"] if d["blocking"]] == ["KB309"] and rc == 1


def test_no_dashboard_means_no_stale_warning(make_kb):
    root = make_repo(make_kb, dashboard=False)
    rc, data = verify_json(root)
    assert (rc, data["diagnostics"]) == (0, [])


def test_silent_near_misses(make_kb):
    """Valid shapes close to every rule: deep IDs, evidence appended, settled with evidence."""
    tree = TREE.replace("Children: H1.1\n", "Children: H1.1, H1.2\n") + (
        "\n### H1.2: Deep branch\nStatus: 被推翻\nEvidence: E001\nChildren: H1.2.1\nParent: H1\n"
        "\n#### H1.2.1: Deeper\nStatus: 待验\nEvidence: (empty)\nChildren: H1.2.1.1\nParent: H1.2\n"
        "\n##### H1.2.1.1: Deepest\nStatus: 待验\nEvidence: (empty)\nParent: H1.2.1\n")
    # H1.2 sits after H2 in the file: order of sections is free, Children follow file order.
    files = {"tree.md": tree,
             "experiments/E002.md": experiment("E002", "H1", status="已完成", conclusion="支持 — yes"),
             "Problems/q2.md": problem("q2", depends='["q1"]'),
             "Methods/m2.md": method("m2", parents='["m3"]'),
             "Methods/m3.md": method("m3", subs='["m2"]')}
    files["Problems/q1.md"] = problem("q1", depends='["p1"]', depended_by='["q2"]')
    root = make_repo(make_kb, files)
    rc, data = verify_json(root)
    assert (rc, data["diagnostics"]) == (0, [])


def test_custom_grammar_reads_its_ids(make_kb):
    tree = "# T\n\n### K1. First\nStatus: 待验\nEvidence: (empty)\n\n### K2. Second\nStatus: 待验\nEvidence: (empty)\n"
    root = make_kb({"tree.md": tree}, config='[kb]\nid_grammar = "K[0-9]+[a-z]?"\nheading_separators = ["."]\n',
                   commit=True)
    rc, data = verify_json(root)
    assert (rc, data["diagnostics"]) == (0, [])


def test_every_rule_code_is_in_the_catalogue():
    from kb.checks.catalogue import BY_CODE, CATALOGUE
    from kb.checks.registry import FILE_RULES, HISTORY_RULES, SNAPSHOT_RULES, load_rules

    load_rules()
    for rule in FILE_RULES + SNAPSHOT_RULES + HISTORY_RULES:
        for code in rule.codes:
            assert code in BY_CODE, code
    assert len({r.code for r in CATALOGUE}) == len(CATALOGUE)
    import re
    from pathlib import Path as P

    emitted = set()
    for f in (P(__file__).resolve().parents[1] / "kb").rglob("*.py"):
        emitted |= set(re.findall(r'"(KB[0-9]{3})"', f.read_text(encoding="utf-8")))
    missing = sorted(c for c in emitted if c not in BY_CODE and not c.startswith("KB4"))
    assert not missing, f"codes emitted but not in the catalogue: {missing}"


def test_stale_rule_agrees_with_kb_dashboard(make_kb, run_kb):
    """KB240 and `kb dashboard` use one renderer: after `kb dashboard` nothing is stale,
    with CRLF line ends and a Next Steps section of the user's own."""
    root = make_repo(make_kb, {"experiments/E002.md": experiment("E002", "H2", date="2026-03-04")})
    dash = root / "DASHBOARD.md"
    text = dash.read_text(encoding="utf-8").split("## Next Steps")[0]
    dash.write_bytes((text + "## Next Steps\n\n- my own plan\n").replace("\n", "\r\n").encode())
    (root / "tree.md").write_text(TREE + "\n## H3: Third\nStatus: 待验\nEvidence: (empty)\n",
                                  encoding="utf-8")
    commit_all(root, "stale")
    assert [d["code"] for d in verify_json(root)[1]["diagnostics"]] == ["KB240"]
    res = run_kb("dashboard", cwd=root)
    assert res.code == 0, res.stderr
    assert b"- my own plan\r\n" in dash.read_bytes()
    rc, data = verify_json(root, "--staged")
    assert (rc, data["diagnostics"]) == (0, [])
    rc, data = verify_json(root)
    assert (rc, data["diagnostics"]) == (0, [])
    assert run_kb("dashboard", "--check", cwd=root).code == 0


@pytest.mark.parametrize("title,says", [
    ("", "is empty"),
    (" \u3000", "is empty"),
    ("\u200b", "U+200B"),
    ("Parity \u202eytiraP", "U+202E"),  # a right-to-left override: reads as other text
])
def test_an_entry_with_no_title_is_kb223(make_kb, title, says):
    """`kb entry add` requires a title that shows; typed by hand, `### 解法 1｜｜…` was an
    entry nobody could tell apart, and every check passed it. KB223 (a warning) at the
    entry's heading; a titled entry beside it is silent."""
    card = (problem("q1") + f"### 解法 1｜{title}｜概率0.3｜状态未定论\nText.\n\n"
            "### 解法 2｜Parity｜概率0.3｜状态未定论\nMore.\n")
    root = make_repo(make_kb, {"Problems/q1.md": card}, dashboard=False)
    _, data = verify_json(root)
    (hit,) = find(data, "KB223")
    assert (hit["path"], hit["line"], hit["severity"]) == (
        "Problems/q1.md", _line_of(card, "### 解法 1｜"), "warning")
    assert says in hit["message"] and "q1's entry 解法 1" in hit["message"]


def test_an_entry_swallowed_by_an_html_block_is_kb128(make_kb):
    """`</details>` opens an HTML block that ends only at a blank line: an entry heading right
    under it is the block's text, and the entry vanished without a word (a verdict's record
    then named a number `kb entry add` handed out again). KB128 at the heading; with a blank
    line above it the entry is read, and a heading inside a comment stays silent."""
    swallowed = (problem("q1") + "### 解法 1｜A｜概率0.3｜状态未定论\nSketch.\n\n<details>\n"
                 "<summary>P</summary>\n\nBy induction.\n\n</details>\n"
                 "### 解法 2｜B｜概率0.3｜状态未定论\nx\n\n<!--\n### 解法 3｜C｜概率0.3｜状态未定论\n-->\n")
    root = make_repo(make_kb, {"Problems/q1.md": swallowed}, dashboard=False)
    _, data = verify_json(root)
    (hit,) = find(data, "KB128")
    assert (hit["line"], hit["severity"]) == (_line_of(swallowed, "### 解法 2｜"), "warning")
    assert "'</details>' opens at line" in hit["message"] and "blank line above it" in hit["message"]
    fixed = swallowed.replace("</details>\n###", "</details>\n\n###")
    root = make_repo(make_kb, {"Problems/q1.md": fixed}, dashboard=False)
    _, data = verify_json(root)
    assert find(data, "KB128") == []


def test_an_entry_heading_with_a_tab_after_its_marks_is_kb122(make_kb):
    """`###<TAB>解法 1｜…` is a heading to CommonMark but no entry to kb: it vanished and
    `kb entry add` handed out 解法 1 again. KB122 at it, with the fix (one space)."""
    card = problem("q1") + "###\t解法 1｜Sieve｜概率0.3｜状态未定论\nx\n"
    root = make_repo(make_kb, {"Problems/q1.md": card}, dashboard=False)
    rc, data = verify_json(root)
    (hit,) = find(data, "KB122")
    assert (hit["line"], hit["severity"], rc) == (_line_of(card, "###\t解法 1"), "error", 1)
    assert "a tab after '###'" in hit["message"] and "'### 解法 1｜Sieve" in hit["message"]
