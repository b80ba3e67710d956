"""A merge that undoes one parent's change (``git merge -s ours``, a conflict resolved by
taking one side's whole file) is judged: what that parent added, appended or moved on its
own path comes back as the merge base had it, and neither parent's path did that."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import git, invoke


def _verify(root: Path, *args: str) -> tuple[int, list[dict]]:
    res = invoke("verify", "--json", *args, cwd=root)
    assert "diagnostics" in json.loads(res.stdout), (res.stdout, res.stderr)
    return res.code, json.loads(res.stdout)["diagnostics"]


def _branches(root: Path) -> str:
    """H1 on both; the branch `feature` adds q1; main records E001 on H1 (Evidence, a
    status move). Returns the merge base."""
    assert invoke("hyp", "add", "A claim", cwd=root).code == 0
    base = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "-b", "feature")
    assert invoke("problem", "add", "q1", "Feature work", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    assert invoke("exp", "new", "--hyp", "H1", "Main's experiment", "--goal", "g", cwd=root).code == 0
    r = invoke("exp", "result", "E001", "--data", "d", "--conclusion", "支持", "--reason", "r",
               cwd=root)
    assert r.code == 0, r.stderr
    git(root, "checkout", "-q", "feature")
    return base


def test_a_merge_keeping_one_side_whole_is_refused_in_every_mode(tree_kb: Path) -> None:
    root = tree_kb
    base = _branches(root)
    git(root, "merge", "-q", "-s", "ours", "--no-commit", "main")
    code, diags = _verify(root, "--staged")
    got = {(d["code"], d["path"]) for d in diags if d["severity"] == "error"}
    assert code == 1 and {("KB301", "experiments/E001.md"), ("KB303", "tree.md"),
                          ("KB306", "tree.md")} <= got, diags
    assert all("the merge undid that change" in d["message"] for d in diags
               if d["code"] in ("KB301", "KB303", "KB306"))
    git(root, "commit", "-q", "--no-verify", "-m", "merge main, keeping ours")
    merge = git(root, "rev-parse", "HEAD")
    for args in (["--range", f"{base}..feature"], ["--rev", merge],
                 ["--range", "main..feature", "--against", "main"]):
        code, diags = _verify(root, *args)
        hits = {(d["code"], d["path"], d.get("commit")) for d in diags if d["severity"] == "error"}
        assert code == 1 and ("KB301", "experiments/E001.md", merge) in hits, (args, diags)
        assert ("KB303", "tree.md", merge) in hits and ("KB306", "tree.md", merge) in hits


def test_an_honest_merge_passes(tree_kb: Path) -> None:
    """The same branches merged as git merges them: every side's change kept."""
    root = tree_kb
    base = _branches(root)
    git(root, "merge", "-q", "--no-edit", "main")
    assert (root / "experiments" / "E001.md").exists()
    for args in (["--range", f"{base}..feature"], ["--range", "main..feature", "--against", "main"],
                 ["--rev", "HEAD"]):
        code, diags = _verify(root, *args)
        assert code == 0, (args, diags)


def test_a_conflict_resolved_by_taking_the_other_sides_file_is_found(tree_kb: Path) -> None:
    """Only tree.md taken whole from the branch (git checkout --ours): main's Evidence and
    status move on H1 are dropped, its experiment file stays."""
    root = tree_kb
    base = _branches(root)
    git(root, "merge", "-q", "--no-commit", "--no-ff", "main")
    git(root, "checkout", "feature", "--", "tree.md")
    git(root, "commit", "-q", "--no-verify", "-m", "merge main, our tree.md")
    code, diags = _verify(root, "--range", f"{base}..feature")
    got = {d["code"] for d in diags if d["severity"] == "error" and d["path"] == "tree.md"}
    assert code == 1 and {"KB303", "KB306"} <= got, diags


def test_a_stopped_merge_judges_the_allocation_order_against_every_head(tree_kb: Path) -> None:
    """`kb verify` in the working tree of a stopped merge: the incoming side's E001, below
    our E002, is no reason to renumber it (it was "KB307 … use E003"); the pre-merge-commit
    hook judges it the same way."""
    root = tree_kb
    assert invoke("hyp", "add", "A claim", cwd=root).code == 0
    (root / "notes.txt").write_text("base\n", encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "notes")
    git(root, "checkout", "-q", "-b", "feature")
    for title in ("first", "second"):
        assert invoke("exp", "new", "--hyp", "H1", title, cwd=root).code == 0
    git(root, "rm", "-q", "experiments/E001.md")
    (root / "notes.txt").write_text("ours\n", encoding="utf-8")
    git(root, "commit", "-qam", "drop E001", "-m", "Kb-Override: E001 a mistake", "--no-verify")
    git(root, "checkout", "-q", "main")
    assert invoke("exp", "new", "--hyp", "H1", "main's", cwd=root).code == 0
    (root / "notes.txt").write_text("theirs\n", encoding="utf-8")
    git(root, "commit", "-qam", "notes on main")
    git(root, "checkout", "-q", "feature")
    r = subprocess.run(["git", "merge", "main"], cwd=root, capture_output=True)
    assert r.returncode != 0 and (root / ".git" / "MERGE_HEAD").exists()  # notes.txt conflicts
    code, diags = _verify(root)
    assert not [d for d in diags if d["code"] == "KB307"], diags
    (root / "notes.txt").write_text("both\n", encoding="utf-8")
    git(root, "add", "-A")
    code, diags = _verify(root, "--staged")
    assert code == 0 and not [d for d in diags if d["code"] == "KB307"], diags


def test_a_merge_writing_a_value_neither_side_has_is_judged(tree_kb: Path) -> None:
    """A conflict resolved with a third value: the branch recorded 推翻 (E001, H1 被推翻);
    the merge writes 支持 and 被支持, which neither side has. Each is the finding one
    commit making that change gets (KB308, KB306), named as the merge's own."""
    root = tree_kb
    assert invoke("hyp", "add", "A claim", cwd=root).code == 0
    base = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "-b", "bob")
    assert invoke("exp", "new", "--hyp", "H1", "test it", "--goal", "g", cwd=root).code == 0
    r = invoke("exp", "result", "E001", "--data", "d", "--conclusion", "推翻", "--reason", "r",
               cwd=root)
    assert r.code == 0, r.stderr
    git(root, "checkout", "-q", "main")
    assert invoke("hyp", "add", "Another", cwd=root).code == 0
    git(root, "merge", "-q", "--no-commit", "bob")
    exp = root / "experiments" / "E001.md"
    exp.write_text(exp.read_text(encoding="utf-8").replace("**结论**: 推翻", "**结论**: 支持"),
                   encoding="utf-8")
    tree = root / "tree.md"
    tree.write_text(tree.read_text(encoding="utf-8").replace("Status: 被推翻", "Status: 被支持"),
                    encoding="utf-8")
    git(root, "add", "-A")
    code, diags = _verify(root, "--staged")
    own = {(d["code"], d["path"]) for d in diags if "neither side has it" in d["message"]}
    assert code == 1 and {("KB308", "experiments/E001.md"), ("KB306", "tree.md")} <= own, diags
    git(root, "commit", "-q", "--no-verify", "-m", "merge bob, rewritten")
    code, diags = _verify(root, "--range", f"{base}..main")
    assert code == 1 and {"KB308", "KB306"} <= {d["code"] for d in diags if d["severity"] == "error"}


def test_a_merge_dropping_a_verdict_names_every_rule_and_the_parent_to_restore_from(
        example_kb: Path) -> None:
    """main settles q2's 解法 1 (`kb verdict`: a record, the entry, the status, a Verified
    card); the branch merges main keeping its own tree (``-s ours``). Each of the four is
    refused, the settled entry (KB311) too, and the restore hints name main's commit, the
    side that has the files (HEAD, the branch, never had them)."""
    root = example_kb
    git(root, "checkout", "-q", "-b", "feature")
    assert invoke("hyp", "add", "Another claim", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    r = invoke("verdict", "q2#解法1", "--vote", "v1=1", "--vote", "v2=1", "--reason", "v1=ok",
               cwd=root)
    assert r.code == 0, r.stderr
    settled = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "feature")
    git(root, "merge", "-q", "-s", "ours", "--no-commit", "main")
    code, diags = _verify(root, "--staged")
    errors = {d["code"]: d["message"] for d in diags if d["severity"] == "error"}
    assert code == 1 and {"KB304", "KB306", "KB310", "KB311"} <= errors.keys(), diags
    assert "settled entry 解法 1" in errors["KB311"]
    for code_ in ("KB304", "KB310"):
        assert f"--source={settled[:10]} " in errors[code_] and "--source=HEAD" not in errors[code_]


def _results_on_both_sides(root: Path, experiments: int, branch: str,
                           theirs: tuple[str, str], ours: tuple[str, str]) -> str:
    """H1 with ``experiments`` open experiments; ``branch`` records ``theirs``, main then
    ``ours`` (each ``(experiment, conclusion)``); main is checked out at the end. Returns
    the commit both start from."""
    assert invoke("hyp", "add", "A claim", cwd=root).code == 0
    for n in range(experiments):
        assert invoke("exp", "new", "--hyp", "H1", f"e{n}", "--goal", "g", cwd=root).code == 0
    base = git(root, "rev-parse", "HEAD")
    for args, (eid, conclusion) in ((["-b", branch], theirs), (["main"], ours)):
        git(root, "checkout", "-q", *args)
        r = invoke("exp", "result", eid, "--data", "d", "--conclusion", conclusion,
                   "--reason", "r", cwd=root)
        assert r.code == 0, r.stderr
    return base

def test_a_merge_keeping_one_sides_evidence_drops_what_the_other_appended(tree_kb: Path) -> None:
    """Both sides record a result on H1 (main E001, the branch E002): tree.md conflicts,
    and the branch resolves it with its own half. Evidence `E002` is neither the merge
    base's nor new, yet main's E001 is gone from an append-only list: KB303, in the hook
    of the stopped merge and in the range CI checks."""
    root = tree_kb
    base = _results_on_both_sides(root, 2, "feature", ("E002", "推翻"), ("E001", "支持"))
    git(root, "checkout", "-q", "feature")
    r = subprocess.run(["git", "merge", "main"], cwd=root, capture_output=True)
    assert r.returncode != 0  # tree.md conflicts: H1's status and Evidence differ
    for name in ("tree.md", "DASHBOARD.md"):
        git(root, "checkout", "--ours", "--", name)
    git(root, "add", "-A")
    code, diags = _verify(root, "--staged")
    kb303 = [d for d in diags if d["code"] == "KB303" and d["severity"] == "error"]
    assert code == 1 and kb303, diags
    assert "E001" in kb303[0]["message"] and "appended since the merge base" in kb303[0]["message"]
    git(root, "commit", "-q", "--no-verify", "-m", "merge main, keeping our tree")
    code, diags = _verify(root, "--range", f"{base}..feature")
    assert code == 1 and "KB303" in {d["code"] for d in diags if d["severity"] == "error"}, diags


def test_evidence_both_sides_appended_merges_through_kbs_own_hooks(tree_kb: Path) -> None:
    """Both sides record a result on H1 (main E002, the branch E003): kb's tree driver
    keeps our Evidence and appends theirs, which against the other side reads as
    reordered. No item is lost, so the merge passes the pre-merge-commit hook and every
    range; a merge that
    then drops one side's item is still KB303."""
    root = tree_kb
    assert invoke("hooks", "install", cwd=root).code == 0
    base = _results_on_both_sides(root, 3, "side", ("E003", "支持"), ("E002", "支持"))
    merged = subprocess.run(["git", "merge", "--no-edit", "side"], cwd=root, capture_output=True)
    assert merged.returncode == 0, merged.stderr.decode()  # the hook passed it
    assert "Evidence: E002, E003" in (root / "tree.md").read_text(encoding="utf-8")
    for args in (["--range", f"{base}..main"], ["--rev", "HEAD"]):
        code, diags = _verify(root, *args)
        assert code == 0, (args, diags)
    # the same merge, resolved by dropping the branch's E003: refused
    git(root, "reset", "-q", "--hard", "HEAD~1")
    git(root, "merge", "-q", "--no-commit", "side")
    tree = root / "tree.md"
    tree.write_text(tree.read_text(encoding="utf-8").replace("Evidence: E002, E003",
                                                             "Evidence: E002"), encoding="utf-8")
    git(root, "add", "-A")
    code, diags = _verify(root, "--staged")
    assert code == 1 and any(d["code"] == "KB303" and "E003" in d["message"] for d in diags), diags


def test_a_merge_keeping_one_of_two_experiments_both_sides_added_is_refused(
        tree_kb: Path) -> None:
    """Both branches open E001 (one on H1, one on H2) and record its result; the merge is
    made without kb's drivers (a forge's button) and keeps main's file. Neither side's path
    saw the other's E001, the merge base has none, and the merge equals one parent for the
    file -- yet the branch's experiment is gone. The range refuses it at the merge."""
    root = tree_kb
    assert invoke("hyp", "add", "A", cwd=root).code == 0
    assert invoke("hyp", "add", "B", cwd=root).code == 0
    base = git(root, "rev-parse", "HEAD")
    for branch, hyp, conclusion in (("pr", "H1", "支持"), ("main", "H2", "推翻")):
        git(root, "checkout", "-q", *(["-b", branch] if branch == "pr" else [branch]))
        assert invoke("exp", "new", "--hyp", hyp, f"exp for {hyp}", "--goal", "g",
                      cwd=root).code == 0
        r = invoke("exp", "result", "E001", "--data", "d", "--conclusion", conclusion,
                   "--reason", "r", cwd=root)
        assert r.code == 0, r.stderr
    before = git(root, "rev-parse", "main")
    for driver in ("kb-tree", "kb-dashboard", "kb-trail", "kb-report", "kb-card"):
        subprocess.run(["git", "config", "--remove-section", f"merge.{driver}"], cwd=root,
                       capture_output=True)  # git's own merge, as a forge's
    subprocess.run(["git", "merge", "--no-edit", "pr"], cwd=root, capture_output=True)
    git(root, "checkout", "--ours", "experiments/E001.md", "DASHBOARD.md")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "--no-edit")
    merge = git(root, "rev-parse", "HEAD")
    for spec in (f"{before}..main", f"pr..main", f"{base}..main"):
        code, diags = _verify(root, "--range", spec)
        lost = {d["code"] for d in diags if d["severity"] == "error"
                and d["path"] == "experiments/E001.md" and d.get("commit") == merge
                and "both sides added it" in d["message"]}
        assert code == 1 and {"KB302", "KB308"} <= lost, (spec, diags)


def test_a_merge_keeping_one_of_two_results_of_one_experiment_says_what_to_do(
        tree_kb: Path) -> None:
    """E001 is at the merge base; each branch records its result, and the merge keeps
    main's. Refused (KB308) — and the advice is not `kb sync`, which renumbers IDs two
    sides added, not one experiment both wrote (a tester was sent round in circles)."""
    root = tree_kb
    assert invoke("hyp", "add", "A", cwd=root).code == 0
    assert invoke("exp", "new", "--hyp", "H1", "exp", "--goal", "g", cwd=root).code == 0
    base = git(root, "rev-parse", "HEAD")
    for branch, conclusion in (("pr", "支持"), ("main", "推翻")):
        git(root, "checkout", "-q", *(["-b", branch] if branch == "pr" else [branch]))
        r = invoke("exp", "result", "E001", "--data", f"d {branch}", "--conclusion", conclusion,
                   "--reason", "r", cwd=root)
        assert r.code == 0, r.stderr
    for driver in ("kb-tree", "kb-dashboard", "kb-trail", "kb-report", "kb-card"):
        subprocess.run(["git", "config", "--remove-section", f"merge.{driver}"], cwd=root,
                       capture_output=True)  # git's own merge, as a forge's
    subprocess.run(["git", "merge", "--no-edit", "pr"], cwd=root, capture_output=True)
    git(root, "checkout", "--ours", "experiments/E001.md", "tree.md", "DASHBOARD.md")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "--no-edit")
    code, diags = _verify(root, "--range", f"{base}..main")
    said = [d["message"] for d in diags if d["code"] == "KB308" and "both sides added it" in d["message"]]
    assert code == 1 and said, diags
    assert all("kb sync" not in m and "was at the merge base already" in m and "kb exp new" in m
               for m in said), said


def test_an_override_a_merge_brings_in_is_not_shown_at_the_merge(
        tree_kb: Path, tmp_path: Path) -> None:
    """A branch forks; main then adds q1, settles it (`kb verdict`) and corrects its
    Verified card with `Kb-Override: q1 …`. Merging main into the branch takes all of that
    over as main made it: no finding at the merge, not even an accepted one (the override
    answers for main's own commit, which a range over it still shows)."""
    root = tree_kb
    assert invoke("hyp", "add", "base", cwd=root).code == 0
    git(root, "checkout", "-q", "-b", "side")
    assert invoke("hyp", "add", "side claim", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    proof = tmp_path / "proof.md"
    proof.write_text("pf\n", encoding="utf-8")
    for args in (["problem", "add", "q1", "Prove it", "--title", "T", "--priority", "0"],
                 ["entry", "add", "q1", "--kind", "解法", "--title", "P", "--prob", "0.7",
                  "--text-file", str(proof)],
                 ["verdict", "q1#解法1", "--vote", "v1=1", "--vote", "v2=1"]):
        r = invoke(*args, cwd=root)
        assert r.code == 0, (args, r.stderr)
    card = next((root / "Verified").rglob("q1.md"))
    card.write_text(card.read_text(encoding="utf-8") + "x\n", encoding="utf-8")
    git(root, "commit", "-q", "-am", "fix", "-m", "Kb-Override: q1 a typo", "--no-verify")
    git(root, "checkout", "-q", "side")
    git(root, "merge", "-q", "--no-edit", "main")
    merge = git(root, "rev-parse", "HEAD")
    code, diags = _verify(root, "--range", "main..side")
    assert code == 0 and not [d for d in diags if d.get("commit") == merge], diags
    code, diags = _verify(root, "--range", "side~1..side")  # main's commits in the range
    assert code == 0 and [d for d in diags if d["code"] == "KB304" and d["severity"] == "info"
                          and d.get("commit") != merge], diags


def _forge_merge(root: Path, branch: str, *ours: str) -> str:
    """Merge ``branch`` as a forge would (git's own merge, no kb drivers), resolving the
    files ``ours`` by taking this side's whole file. Returns the merge commit."""
    for driver in ("kb-tree", "kb-dashboard", "kb-trail", "kb-report", "kb-card"):
        subprocess.run(["git", "config", "--remove-section", f"merge.{driver}"], cwd=root,
                       capture_output=True)
    subprocess.run(["git", "merge", "--no-edit", branch], cwd=root, capture_output=True)
    git(root, "checkout", "--ours", *ours)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "--no-edit")
    return git(root, "rev-parse", "HEAD")


def test_a_merge_keeping_one_of_two_cards_both_sides_added_is_refused(tree_kb: Path) -> None:
    """Both branches add problem q1, each its own; a forge's merge keeps main's file. No
    rule judging the merge against a parent sees the branch's card go (against main it is
    main's own card). The range says KB350 at the merge, naming the card that is gone; an
    override naming q1 accepts it; a merge holding neither side's file as it was (written
    by hand) is not judged so."""
    root = tree_kb
    assert invoke("hyp", "add", "A", cwd=root).code == 0
    base = git(root, "rev-parse", "HEAD")
    for branch, title in (("pr", "Twin primes are infinite"), ("main", "Goldbach holds")):
        git(root, "checkout", "-q", *(["-b", branch] if branch == "pr" else [branch]))
        assert invoke("problem", "add", "q1", title, cwd=root).code == 0
    pr = git(root, "rev-parse", "pr")
    merge = _forge_merge(root, "pr", "Problems/q1.md", "DASHBOARD.md")
    for spec in (f"{base}..main", "pr..main"):
        code, diags = _verify(root, "--range", spec)
        (d,) = [d for d in diags if d["code"] == "KB350"]
        assert code == 1 and (d["path"], d["severity"], d.get("commit")) == (
            "Problems/q1.md", "error", merge), (spec, diags)
        assert f"{pr[:10]}'s card is gone" in d["message"] and "Twin primes" in d["message"]
        assert f"git show {pr[:10]}:Problems/q1.md" in d["message"], d["message"]
    git(root, "commit", "-q", "--amend", "--no-verify", "-m", "merge pr\n\nKb-Override: q1 a duplicate")
    code, diags = _verify(root, "--range", f"{base}..main")
    assert code == 0 and [d["severity"] for d in diags if d["code"] == "KB350"] == ["info"], diags
    # a resolution written by hand: neither card as it was
    git(root, "reset", "-q", "--hard", "HEAD~1")
    card = root / "Problems/q1.md"
    _forge_merge(root, "pr", "Problems/q1.md", "DASHBOARD.md")
    card.write_text(card.read_text(encoding="utf-8").replace("Goldbach holds", "Both, as one"),
                    encoding="utf-8")
    git(root, "commit", "-q", "--amend", "--no-verify", "-a", "--no-edit")
    code, diags = _verify(root, "--range", f"{base}..main")
    assert [d for d in diags if d["code"] == "KB350"] == [], diags
