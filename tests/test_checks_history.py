"""Every history rule (KB3xx) fires with the right path and line on a staged
change, accepts an override, and is silent on legal changes."""

from __future__ import annotations

import pytest

from conftest import git, write_files
from test_verify_support import TREE, codes, experiment, find, make_repo, verify_json


def _stage(root, files=None, remove=(), move=None):
    write_files(root, files or {})
    for p in remove:
        git(root, "rm", "-q", p)
    if move:
        git(root, "mv", *move)
    git(root, "add", "-A")


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


TREE2 = TREE.replace("Evidence: E001\nChildren", "Evidence: E001, E002\nChildren")


@pytest.fixture
def repo(make_kb):
    return make_repo(make_kb, {"tree.md": TREE2, "experiments/E002.md": experiment("E002", "H1")},
                     dashboard=False)


def test_removed_hypothesis(repo):
    new = TREE2.split("## H2:")[0].rstrip("\n") + "\n"
    _stage(repo, {"tree.md": new})
    rc, data = verify_json(repo, "--staged")
    (d,) = find(data, "KB301")
    assert d["path"] == "tree.md" and d["line"] == _line(TREE2, "## H2:") and d["blocking"]
    assert "H2" in d["message"] and rc == 1


def test_removed_experiment_file_and_renamed_experiment(repo):
    _stage(repo, remove=["experiments/E002.md"])
    rc, data = verify_json(repo, "--staged")
    assert [(d["code"], d["path"]) for d in data["diagnostics"] if d["code"].startswith("KB3")] == \
        [("KB301", "experiments/E002.md")]
    git(repo, "reset", "-q", "--hard")
    _stage(repo, move=("experiments/E002.md", "experiments/E002-renamed.md"))
    rc, data = verify_json(repo, "--staged")
    (d,) = find(data, "KB305")
    assert d["path"] == "experiments/E002-renamed.md" and d["line"] == 1 and rc == 1
    assert not find(data, "KB301")


def test_reassigned_statement_and_override(repo, monkeypatch):
    new = TREE2.replace("Mixed precision slows convergence", "Mixed precision speeds convergence")
    _stage(repo, {"tree.md": new})
    rc, data = verify_json(repo, "--staged")
    (d,) = find(data, "KB302")
    assert d["line"] == _line(new, "## H2:") and d["severity"] == "error" and rc == 1
    monkeypatch.setenv("KB_OVERRIDE", "H2 the statement had a typo")
    rc, data = verify_json(repo, "--staged")
    (d,) = find(data, "KB302")
    assert d["severity"] == "info" and not d["blocking"] and rc == 0
    assert "Kb-Override: H2 the statement had a typo" in d["message"]
    monkeypatch.setenv("KB_OVERRIDE", "H1 some other reason")
    rc, _ = verify_json(repo, "--staged")
    assert rc == 1


def test_experiment_reassigned_to_another_hypothesis(repo):
    _stage(repo, {"experiments/E002.md": experiment("E002", "H2")})
    rc, data = verify_json(repo, "--staged")
    (d,) = find(data, "KB302")
    assert d["path"] == "experiments/E002.md" and d["line"] == 1 and rc == 1


@pytest.mark.parametrize("evidence,what", [("E002", "lost E001"), ("E002, E001", "reordered")])
def test_evidence_append_only(repo, evidence, what):
    new = TREE2.replace("Evidence: E001, E002", f"Evidence: {evidence}")
    _stage(repo, {"tree.md": new})
    rc, data = verify_json(repo, "--staged")
    (d,) = find(data, "KB303")
    assert d["line"] == _line(new, f"Evidence: {evidence}") and what in d["message"] and rc == 1


def test_verified_file_modified_or_deleted(repo):
    _stage(repo, {"Verified/命题/p1.md": "# 已验证｜changed\n- ID: p1\n"})
    rc, data = verify_json(repo, "--staged")
    (d,) = find(data, "KB304")
    assert d["path"] == "Verified/命题/p1.md" and d["line"] == 1 and rc == 1
    git(repo, "reset", "-q", "--hard")
    _stage(repo, remove=["Verified/命题/p1.md"])
    rc, data = verify_json(repo, "--staged")
    assert [d["path"] for d in find(data, "KB304")] == ["Verified/命题/p1.md"] and rc == 1


def test_verified_file_that_kb_does_not_parse_is_still_immutable(make_kb):
    """Any file under Verified/ (here: a name with a space and CJK, not a card path)."""
    root = make_repo(make_kb, {"Verified/实验 E001.md": "# record\n"}, dashboard=False)
    _stage(root, {"Verified/实验 E001.md": "# record, edited\n"})
    rc, data = verify_json(root, "--staged")
    (d,) = find(data, "KB304")
    assert d["path"] == "Verified/实验 E001.md" and rc == 1


@pytest.mark.parametrize("old,new,ok", [
    ("进行中", "待验", False), ("进行中", "被支持", True), ("进行中", "被推翻", True),
])
def test_hypothesis_status_moves(repo, old, new, ok):
    text = TREE2.replace(f"Status: {old}", f"Status: {new}", 1)
    _stage(repo, {"tree.md": text})
    rc, data = verify_json(repo, "--staged")
    hits = find(data, "KB306")
    if ok:
        assert not hits and rc == 0
    else:
        (d,) = hits
        assert d["line"] == _line(text, f"Status: {new}") and rc == 1


def test_refuted_is_final_and_experiment_cannot_reopen(make_kb):
    tree = TREE2.replace("## H2: Mixed precision slows convergence\nStatus: 待验\nEvidence: (empty)",
                         "## H2: Mixed precision slows convergence\nStatus: 被推翻\nEvidence: E002")
    root = make_repo(make_kb, {"tree.md": tree, "experiments/E002.md":
                               experiment("E002", "H1", status="已完成", conclusion="推翻")},
                     dashboard=False)
    _stage(root, {"tree.md": tree.replace("Status: 被推翻", "Status: 被支持"),
                  "experiments/E002.md": experiment("E002", "H1", status="进行中", conclusion="推翻")})
    rc, data = verify_json(root, "--staged")
    assert sorted((d["path"], d["code"]) for d in find(data, "KB306")) == [
        ("experiments/E002.md", "KB306"), ("tree.md", "KB306")]
    assert rc == 1


def test_new_ids_are_never_reused(make_kb):
    tree = TREE2.replace("Children: H1.1\n", "Children: H1.1, H1.3\n").replace(
        "## H2:", "### H1.3: Third\nStatus: 待验\nEvidence: (empty)\nParent: H1\n\n## H2:")
    root = make_repo(make_kb, {"tree.md": tree, "experiments/E003.md": experiment("E003", "H1")},
                     dashboard=False)
    new = tree.replace("Children: H1.1, H1.3\n", "Children: H1.1, H1.3, H1.2\n").replace(
        "## H2:", "### H1.2: Reused\nStatus: 待验\nEvidence: (empty)\nParent: H1\n\n## H2:")
    _stage(root, {"tree.md": new, "experiments/E002.md": experiment("E002", "H1")})
    rc, data = verify_json(root, "--staged")
    got = sorted((d["path"], d["line"]) for d in find(data, "KB307"))
    assert got == [("experiments/E002.md", 1), ("tree.md", _line(new, "### H1.2:"))], data
    assert "use H1.4" in find(data, "KB307")[1]["message"] or "use H1.4" in find(data, "KB307")[0]["message"]
    assert rc == 1


def test_legal_changes_are_silent(repo):
    new = (TREE2.replace("Evidence: E001, E002", "Evidence: E001, E002, E003")
           .replace("Children: H1.1\n", "Children: H1.1, H1.2\n")
           .replace("## H2:", "### H1.2: Another cause\nStatus: 待验\nEvidence: (empty)\nParent: H1\n\n## H2:")
           + "\n## H3: A new top-level hypothesis\nStatus: 待验\nEvidence: (empty)\n")
    e2 = experiment("E002", "H1") + "\n## 执行记录\n\nran it twice\n"
    _stage(repo, {"tree.md": new, "experiments/E003.md": experiment("E003", "H1"),
                  "experiments/E002.md": e2})
    rc, data = verify_json(repo, "--staged")
    assert (rc, [d for d in data["diagnostics"]]) == (0, [])


def test_card_removed_and_moved(repo):
    (repo / "Propos/代数").mkdir()
    git(repo, "mv", "Propos/数论/p1.md", "Propos/代数/p1.md")
    rc, data = verify_json(repo, "--staged")
    assert not [c for c in codes(data) if c.startswith("KB3")] and rc == 0
    git(repo, "rm", "-q", "Problems/q1.md")
    rc, data = verify_json(repo, "--staged")
    assert [(d["code"], d["path"]) for d in data["diagnostics"] if d["code"] == "KB301"] == \
        [("KB301", "Problems/q1.md")] and rc == 1


def test_recorded_conclusion_is_never_rewritten(make_kb, monkeypatch):
    """KB308 at the **结论** line when a recorded conclusion changes or is removed; a first
    conclusion is no violation, and a Kb-Override turns it into an info note."""
    tree = TREE2.replace("## H2: Mixed precision slows convergence\nStatus: 待验\nEvidence: (empty)",
                         "## H2: Mixed precision slows convergence\nStatus: 被支持\nEvidence: E002")
    root = make_repo(make_kb, {"tree.md": tree, "experiments/E002.md":
                               experiment("E002", "H1", status="已完成", conclusion="支持")},
                     dashboard=False)
    for now in ("推翻", "[待补充]"):
        text = experiment("E002", "H1", status="已完成", conclusion=now)
        _stage(root, {"experiments/E002.md": text})
        rc, data = verify_json(root, "--staged")
        [d] = find(data, "KB308")
        assert (d["path"], d["line"], d["severity"]) == ("experiments/E002.md",
                                                          _line(text, "**结论**"), "error")
        assert "支持" in d["message"] and rc == 1
    _stage(root, {"experiments/E002.md": experiment("E002", "H1", status="已完成", conclusion="推翻")})
    monkeypatch.setenv("KB_OVERRIDE", "E002 the data file was mislabelled")
    rc, data = verify_json(root, "--staged")
    [d] = find(data, "KB308")
    assert d["severity"] == "info" and "accepted: Kb-Override: E002" in d["message"] and rc == 0


def test_a_first_conclusion_is_not_a_rewrite(repo):
    """Recording the result of a running experiment (no conclusion yet) is legal."""
    _stage(repo, {"experiments/E002.md": experiment("E002", "H1", status="已完成", conclusion="支持")})
    rc, data = verify_json(repo, "--staged")
    assert not find(data, "KB308")


def test_change_lights_group_shared_versions_as_one_pass_would() -> None:
    """Change.lights groups each file version once per run (kb.checks.changes._file_by_kind)
    and merges the files in path order: the same objects, in the same order, with the
    first declaration of a duplicated ID kept, as one pass over every file's objects."""
    from kb.checks.changes import Change
    from kb.checks.facts import NAMESPACE, Light

    def light(i, kind, path, line):
        return Light(i, kind, NAMESPACE.get(kind, kind), "s", path, line, "", "", 0, 0, "")

    rows = {
        "a.md": [light("H1", "hypothesis", "a.md", 1), light("q1", "problem", "a.md", 2),
                 light("H1", "hypothesis", "a.md", 3), light("p1", "proposition", "a.md", 4)],
        "b.md": [light("q1", "proposition", "b.md", 1), light("H2", "hypothesis", "b.md", 2),
                 light("E1", "experiment", "b.md", 3), light("H1", "hypothesis", "b.md", 4)],
    }

    class Side:
        files = {"a.md": "1", "b.md": "2"}

        def light(self, path):
            return rows[path]  # one list per version, shared like Facts.light's

    def one_pass(kinds):
        by_kind: dict = {}
        for p in sorted(rows):
            for x in rows[p]:
                by_kind.setdefault(x.kind, {}).setdefault((x.ns, x.id), x)
        out: dict = {}
        for k in sorted(kinds):
            for nk, x in by_kind.get(k, {}).items():
                out.setdefault(nk, x)
        return out

    side = Side()
    for _ in range(2):  # the second Change reads the grouping shared by the first
        c = Change.__new__(Change)
        c.paths, c._lights, c._by_kind = sorted(rows), {}, {}
        for kinds in (("hypothesis",), ("problem", "proposition", "method"),
                      ("hypothesis", "experiment", "problem", "proposition")):
            got = c.lights(side, kinds)
            want = one_pass(kinds)
            assert list(got.items()) == list(want.items())
    assert c.lights(side, ("hypothesis",))[("hypothesis", "H1")].line == 1
    assert c.lights(side, ("problem", "proposition"))[("card", "q1")].kind == "problem"


def test_the_suggested_id_is_free_and_one_per_new_id(make_kb):
    """KB307 suggests an ID nothing declares: not one the same change adds (H7 below),
    not one an earlier commit of the range removed (its origin held it), and a
    different one to each new ID of the change."""
    import subprocess

    from conftest import commit_all, git

    hyp = "## {0}: Statement {0}\nStatus: 待验\nEvidence: (empty)\n\n"
    tree = "# Hypothesis Tree\n\n" + "".join(hyp.format(f"H{i}") for i in (1, 2, 5, 6))
    root = make_repo(make_kb, {"tree.md": tree}, dashboard=False)
    new = tree + hyp.format("H3") + hyp.format("H7") + hyp.format("H4")
    _stage(root, {"tree.md": new})
    rc, data = verify_json(root, "--staged")
    said = {d["message"].split()[0]: d["message"].rsplit("use ", 1)[1] for d in find(data, "KB307")}
    assert said == {"H3": "H8", "H4": "H9"} and rc == 1, data
    # a range: H8 removed by its first commit, then H3 added below H7
    git(root, "reset", "-q", "--hard")
    tree8 = tree + hyp.format("H7") + hyp.format("H8")
    (root / "tree.md").write_text(tree8, encoding="utf-8")
    commit_all(root, "H7 and H8")
    base = git(root, "rev-parse", "HEAD").strip()
    (root / "tree.md").write_text(tree8.replace(hyp.format("H8"), ""), encoding="utf-8")
    commit_all(root, "H8 removed")
    (root / "tree.md").write_text(tree8.replace(hyp.format("H8"), hyp.format("H3")),
                                  encoding="utf-8")
    commit_all(root, "H3 added")
    clone = root.parent / "clone307"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    rc, data = verify_json(clone, "--range", f"{base}..HEAD")
    (d,) = [d for d in find(data, "KB307") if d["message"].startswith("H3 ")]
    assert d["message"].endswith("use H9"), d


def test_highest_siblings_is_the_scan_it_replaced():
    """KB307's family of siblings, read from one map per tree version, names the same
    highest sibling as a scan of every hypothesis for each new ID (the rule's old way)."""
    import random
    import re

    from kb.checks.facts import Light
    from kb.checks.history_rules import _highest_siblings

    num = re.compile(r"^(.*?)(\d+)$")

    def scan(hyps, new_id):
        parent = new_id.rsplit(".", 1)[0] if "." in new_id else None
        m = num.match(new_id.rsplit(".", 1)[-1])
        if m is None:
            return None
        sibs = []
        for h in hyps:
            hp = h.id.rsplit(".", 1)[0] if "." in h.id else None
            hm = num.match(h.id.rsplit(".", 1)[-1])
            if hp == parent and hm is not None and hm.group(1) == m.group(1):
                sibs.append((int(hm.group(2)), h.id))
        return max(sibs) if sibs else None

    def lookup(hyps, new_id):
        parent, dot, last = new_id.rpartition(".")
        m = num.match(last)
        family = parent if dot else None
        return None if m is None else \
            _highest_siblings(hyps, {family, "H1"}).get((family, m.group(1)))

    rnd = random.Random(7)
    parts = ["H1", "H2", "H10", "H01", "X3", "Ha", "1", ".2", "H1.2", "h1", "", "H1.02"]
    for _ in range(300):
        ids = [rnd.choice(parts) + rnd.choice(["", ".1", ".2", ".10", ".02", ".a", ".H3"])
               for _ in range(rnd.randrange(0, 12))]
        hyps = [Light(i, "hypothesis", "hypothesis", "待验", "tree.md", n + 1, "", "", 0, 0, "")
                for n, i in enumerate(ids)]
        for new_id in parts + ids + ["H1.3", "H2.11", "H1.2.1", "Z"]:
            assert lookup(hyps, new_id) == scan(hyps, new_id), (ids, new_id)


def test_an_id_added_and_removed_within_the_range_never_comes_back(make_kb):
    """KB307 in a range whose origin never held the ID: H3 is added, withdrawn (with an
    override), then declared again. The reuse is judged the same whether the range
    starts before H3 existed or after (it used to pass from the earlier start), and
    the commit that removed an experiment file keeps its ID too."""
    from conftest import commit_all

    hyp = "## {0}: Statement {0}\nStatus: 待验\nEvidence: (empty)\n\n"
    tree = "# Hypothesis Tree\n\n" + hyp.format("H1") + hyp.format("H2")
    root = make_repo(make_kb, {"tree.md": tree}, dashboard=False)
    base = git(root, "rev-parse", "HEAD").strip()
    write_files(root, {"tree.md": tree + hyp.format("H3"),
                       "experiments/E002.md": experiment("E002", "H1")})
    commit_all(root, "H3 and E002")
    write_files(root, {"tree.md": tree})
    git(root, "rm", "-q", "experiments/E002.md")
    commit_all(root, "withdraw H3 and E002\n\nKb-Override: H3 withdrawn\nKb-Override: E002 withdrawn")
    write_files(root, {"tree.md": tree + hyp.format("H3").replace("Statement H3", "Another"),
                       "experiments/E002.md": experiment("E002", "H2")})
    commit_all(root, "H3 and E002 again")
    for start in (base, "HEAD~2"):
        rc, data = verify_json(root, "--range", f"{start}..HEAD")
        said = sorted(d["message"].split(" existed")[0] for d in find(data, "KB307") if d["blocking"])
        assert said == ["E002", "H3"] and rc == 1, (start, data)
    # the commit that withdrew them passes on its own (its override), the reuse is its own fault
    rc, data = verify_json(root, "--range", f"{base}..HEAD~1")
    assert rc == 0 and not find(data, "KB307"), data


# -- KB308: the recorded result as a whole (data, conclusion, reason) -------------------

_DATA = "**数据**: iowait 40% during the epoch, 410 MB/s cold"
_CONCLUSION = "**结论**: 推翻 — loading is CPU-bound even with a cold cache"


def _recorded(tree_kb, monkeypatch):
    """E001 for H1 with its result recorded by `kb exp result`: (root, commit, file)."""
    from conftest import invoke

    root = tree_kb
    assert invoke("hyp", "add", "Data loading is the bottleneck", cwd=root).code == 0
    assert invoke("exp", "new", "--hyp", "H1", "Measure it", "--goal", "g", cwd=root).code == 0
    r = invoke("exp", "result", "E001", "--data", _DATA.split(": ", 1)[1], "--conclusion", "推翻",
               "--reason", _CONCLUSION.split(" — ", 1)[1], cwd=root)
    assert r.code == 0, r.stderr
    exp = root / "experiments" / "E001.md"
    text = exp.read_text(encoding="utf-8")
    assert _DATA in text and _CONCLUSION in text
    return root, git(root, "rev-parse", "HEAD"), exp


@pytest.mark.parametrize("old,new,what", [
    ("iowait 40%", "iowait 4%", "its recorded data changed"),
    ("even with a cold cache", "only with a warm cache", "its recorded reason changed"),
    ("**结论**: 推翻", "**结论**: 支持", "its recorded conclusion 推翻 became 支持"),
])
def test_a_recorded_result_rewritten_is_kb308(tree_kb, monkeypatch, old, new, what):
    """The data and the reason `kb exp result` wrote stay as the conclusion does, in the
    hook and in a range: the message says which part changed, at its line."""
    root, base, exp = _recorded(tree_kb, monkeypatch)
    text = exp.read_text(encoding="utf-8").replace(old, new)
    _stage(root, {"experiments/E001.md": text})
    rc, data = verify_json(root, "--staged")
    [d] = find(data, "KB308")
    assert what in d["message"] and d["severity"] == "error" and rc == 1, d
    assert d["line"] == _line(text, new)
    git(root, "commit", "-q", "--no-verify", "-m", "rewrite E001")
    rc, data = verify_json(root, "--range", f"{base}..HEAD")
    assert rc == 1 and [what in d["message"] for d in find(data, "KB308")] == [True], data


def test_a_rewritten_result_is_accepted_with_an_override(tree_kb, monkeypatch):
    root, _base, exp = _recorded(tree_kb, monkeypatch)
    _stage(root, {"experiments/E001.md": exp.read_text(encoding="utf-8").replace("40%", "4%")})
    monkeypatch.setenv("KB_OVERRIDE", "E001 the probe read the wrong disk")
    rc, data = verify_json(root, "--staged")
    [d] = find(data, "KB308")
    assert d["severity"] == "info" and "accepted: Kb-Override: E001" in d["message"] and rc == 0


def test_kb_writes_and_notes_after_a_recorded_result_pass(tree_kb, monkeypatch):
    """What comes after the recorded result stays free: kb's own commands (a log entry, a
    design field, another experiment, a dashboard refresh), a note in a paragraph or an
    anchor of its own under 结果, and the 影响 section."""
    from conftest import invoke

    root, base, exp = _recorded(tree_kb, monkeypatch)
    for args in (["exp", "log", "E001", "re-ran with a cold cache: same"],
                 ["exp", "update", "E001", "dd with iflag=direct", "--section", "方法"],
                 ["exp", "new", "--hyp", "H1", "Another", "--goal", "g2"],
                 ["exp", "log", "E001", "second note"]):
        r = invoke(*args, cwd=root)
        assert r.code == 0, (args, r.stderr)
    text = exp.read_text(encoding="utf-8")
    text = text.replace(_CONCLUSION + "\n", _CONCLUSION + "\n**备注**: a later note\n\nMore on it.\n")
    text = text.replace("[待结果出来后分析]", "H1 → 被推翻; look at decoding next")
    _stage(root, {"experiments/E001.md": text})
    rc, data = verify_json(root, "--staged")
    assert rc == 0 and not find(data, "KB308"), data
    git(root, "commit", "-q", "-m", "notes on E001")
    rc, data = verify_json(root, "--range", f"{base}..HEAD")
    assert rc == 0 and not find(data, "KB308"), data


def test_line_endings_alone_are_no_rewrite(tree_kb, monkeypatch):
    """CRLF for LF, and the last newline dropped: the recorded result reads the same."""
    root, base, exp = _recorded(tree_kb, monkeypatch)
    text = exp.read_text(encoding="utf-8")
    (root / "experiments" / "E001.md").write_bytes(text.rstrip("\n").replace("\n", "\r\n").encode())
    git(root, "add", "-A")
    rc, data = verify_json(root, "--staged")
    assert not find(data, "KB308"), data
    git(root, "commit", "-q", "--no-verify", "-m", "CRLF")
    rc, data = verify_json(root, "--range", f"{base}..HEAD")
    assert not find(data, "KB308"), data


def test_recorded_result_is_the_section_through_the_conclusion_paragraph():
    """The recorded result: 结果 from its heading through the 结论 line and the lines
    continuing it; a blank line or another anchor ends it."""
    from kb.parse.experiment import recorded_result, result_parts

    text = ("# E001: H1 - x\n\n## 结果\n\nbefore\n**数据**: 40%\n**结论**: 支持 — because\n"
            "it holds\n**备注**: later\n\nmore\n\n## 影响\n\nx\n")
    rows = recorded_result(text.replace("\n", "\r\n").encode(), "experiments/E001.md", 7)
    assert rows == [(5, "before"), (6, "**数据**: 40%"), (7, "**结论**: 支持 — because"),
                    (8, "it holds")]
    assert result_parts(rows) == [("", "before", 5), ("数据", "40%", 6), ("结论", "支持", 7),
                                  ("reason", "because it holds", 7)]
    assert recorded_result(text.encode(), "experiments/E001.md", 5) == []  # no 结论 anchor


def test_a_merge_beside_a_recorded_result_passes(tree_kb, monkeypatch):
    """A branch logs to and annotates a finished experiment (after its result), the other
    side changes something else: the merge passes in a range and alone."""
    from conftest import invoke

    root, base, exp = _recorded(tree_kb, monkeypatch)
    git(root, "checkout", "-q", "-b", "feature")
    assert invoke("exp", "log", "E001", "re-ran it", cwd=root).code == 0
    text = exp.read_text(encoding="utf-8").replace("[待结果出来后分析]", "H1 → 被推翻")
    _stage(root, {"experiments/E001.md": text})
    git(root, "commit", "-q", "-m", "E001 impact")
    git(root, "checkout", "-q", "main")
    assert invoke("hyp", "add", "Another claim", cwd=root).code == 0
    git(root, "merge", "-q", "--no-ff", "--no-edit", "feature")
    for args in (["--range", f"{base}..HEAD"], ["--rev", "HEAD"]):
        rc, data = verify_json(root, *args)
        assert rc == 0 and not find(data, "KB308"), (args, data)


def test_the_exploration_logs_files_are_append_only(repo, monkeypatch):
    """KB313: `.explore-tree/ops/*.jsonl` is one immutable file per recording (DESIGN §8: an
    append-only log). A file edited by hand (a goal renamed) or deleted passed every check
    (only KB241/KB242 warnings), rewriting the graph's history. It is an error in the
    working tree, the staged index and a commit; an override accepts it; a new recording
    is a new file and is fine."""
    from conftest import invoke

    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    r = invoke("trail", "add", "--kind", "goal", "--title", "G", "--json", cwd=repo)
    assert r.code == 0, r.stderr
    (log,) = [p for p in git(repo, "ls-files", ".explore-tree").split("\n") if p]
    stem = log.rsplit("/", 1)[1][:-len(".jsonl")]
    assert invoke("trail", "add", "--kind", "topic", "--title", "T", cwd=repo).code == 0
    text = (repo / log).read_text(encoding="utf-8")
    write_files(repo, {log: text.replace('"title":"G"', '"title":"X"')})
    rc, data = verify_json(repo)
    (d,) = find(data, "KB313")
    assert rc == 1 and (d["path"], d["line"], d["severity"]) == (log, 1, "error")
    assert "append-only" in d["message"] and "git restore" in d["message"]
    git(repo, "add", "-A")
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and [x["path"] for x in find(data, "KB313")] == [log]
    monkeypatch.setenv("KB_OVERRIDE", f"{stem} a typo in the goal")
    rc, data = verify_json(repo, "--staged")
    assert rc == 0 and [x["severity"] for x in find(data, "KB313")] == ["info"]
    monkeypatch.delenv("KB_OVERRIDE")
    git(repo, "commit", "-qm", "rename the goal by hand", "--no-verify")
    edited = git(repo, "rev-parse", "HEAD")
    git(repo, "rm", "-q", log)
    git(repo, "commit", "-qm", "drop the goal", "--no-verify")
    rc, data = verify_json(repo, "--range", f"{edited}~1..HEAD")
    got = sorted((x["commit"][:10], "deleted" in x["message"]) for x in find(data, "KB313"))
    assert rc == 1 and got == sorted([(edited[:10], False),
                                      (git(repo, "rev-parse", "HEAD")[:10], True)])
