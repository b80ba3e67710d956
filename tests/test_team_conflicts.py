"""Conflict markers and in-progress git operations (issue: team work, priority 1)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import commit_all, git, invoke
from conftest import tree_snapshot as _snapshot


def tree_snapshot(root: Path) -> dict[str, bytes]:
    """Every file but kb's caches (.kb/, the marker check's note in .git) — they may
    learn things on any run."""
    return {k: v for k, v in _snapshot(root).items()
            if not k.startswith((".kb", ".git/kb-markers-clean"))}


def _two_branches_same_id(root: Path) -> None:
    """main and `other` both add H1 with different statements; merging conflicts."""
    git(root, "checkout", "-q", "-b", "other")
    assert invoke("hyp", "add", "Other side", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    assert invoke("hyp", "add", "Main side", cwd=root).code == 0
    proc = git(root, "merge", "-q", "--no-edit", "other", check=False)
    assert "<<<<<<<" in (root / "tree.md").read_text(encoding="utf-8"), proc


def test_markers_are_one_diagnostic_not_duplicates(tree_kb: Path) -> None:
    _two_branches_same_id(tree_kb)
    res = invoke("verify", "--json", cwd=tree_kb)
    data = json.loads(res.stdout)
    codes = [f["code"] for f in data["diagnostics"] if f["path"].endswith("tree.md")]
    conflict = [f for f in data["diagnostics"] if f["code"] == "KB190" and f["path"] == "tree.md"]
    assert len(conflict) == 1, data["diagnostics"]
    text = (tree_kb / "tree.md").read_text(encoding="utf-8").splitlines()
    first = next(i for i, ln in enumerate(text, 1) if ln.startswith("<<<<<<<"))
    last = next(i for i, ln in enumerate(text, 1) if ln.startswith(">>>>>>>"))
    assert f"lines {first}–{last}" in conflict[0]["message"]
    assert conflict[0]["line"] == first
    assert codes == ["KB190"], data["diagnostics"]  # no duplicate IDs, no "removed"
    assert not any("duplicate" in f["message"] for f in data["diagnostics"])
    assert res.code == 1


def test_writes_and_fix_refuse_during_a_merge(tree_kb: Path) -> None:
    _two_branches_same_id(tree_kb)
    before = tree_snapshot(tree_kb)
    res = invoke("hyp", "add", "A third one", cwd=tree_kb)
    assert res.code == 1 and "merge is in progress" in res.stderr and "git merge --abort" in res.stderr
    res = invoke("verify", "--fix", cwd=tree_kb)
    assert res.code == 1 and "merge is in progress" in res.stderr
    assert tree_snapshot(tree_kb) == before


def test_markers_committed_still_refuse_writes(tree_kb: Path) -> None:
    _two_branches_same_id(tree_kb)
    git(tree_kb, "add", "-A")
    git(tree_kb, "commit", "-q", "--no-verify", "-m", "merge with markers")
    before = tree_snapshot(tree_kb)
    res = invoke("hyp", "add", "A third one", cwd=tree_kb)
    # The operation reads tree.md first: its KB190 is the refusal (file, lines, what to do).
    assert res.code == 1 and "unresolved merge conflict, lines" in res.stderr and "tree.md" in res.stderr
    # A write to another file is refused too while markers remain anywhere in the KB.
    res = invoke("problem", "add", "q1", "Another file", cwd=tree_kb)
    assert res.code == 1 and "unresolved merge-conflict markers in" in res.stderr, res.stderr
    assert "tree.md" in res.stderr
    res = invoke("verify", "--fix", cwd=tree_kb)
    assert res.code == 1 and "conflict" in res.stderr
    assert tree_snapshot(tree_kb) == before
    # After resolving by hand, writes work again.
    text = ("# Hypothesis Tree\n\n## H1: Main side\nStatus: 待验\nEvidence: (empty)\n\n"
            "## H2: Other side\nStatus: 待验\nEvidence: (empty)\n")
    (tree_kb / "tree.md").write_text(text, encoding="utf-8")
    (tree_kb / "DASHBOARD.md").write_text(git(tree_kb, "show", "HEAD~1:DASHBOARD.md") + "\n",
                                          encoding="utf-8")
    commit_all(tree_kb, "resolve")
    res = invoke("hyp", "add", "A third one", cwd=tree_kb)
    assert res.code == 0, res.stderr


def test_quoted_markers_in_a_fence_are_prose(make_kb) -> None:
    from kb.config import load_config
    from kb.parse import parse_file

    root = make_kb({"experiments/E001.md": ""})
    text = ("# E001: H1 - quote a conflict\n\n**Hypothesis**: H1 x\n**Date**: 2026-11-29\n"
            "**Status**: 进行中\n\n## 执行记录\n\n```\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n```\n")
    res = parse_file("experiments/E001.md", text.encode(), load_config(root))
    assert not [d for d in res.diagnostics if d.code == "KB190"]
    assert [o.id for o in res.objects] == ["E001"]


def test_markers_on_disk_or_staged_refuse_card_writes(tree_kb: Path) -> None:
    """A card write lists the changed files once (its own indexing, under the lock) and
    compares only the index with HEAD: markers in a file edited on disk, then staged,
    still refuse it. kb's own commits move the marker check's note to the new HEAD;
    markers committed behind kb's back are still found."""
    assert invoke("problem", "add", "q1", "First problem", cwd=tree_kb).code == 0
    note = tree_kb / ".git/kb-markers-clean"
    assert invoke("problem", "add", "q2", "Second problem", cwd=tree_kb).code == 0
    assert note.read_text(encoding="utf-8").strip() == git(tree_kb, "rev-parse", "HEAD")
    card = tree_kb / "Problems/q1.md"
    clean = card.read_text(encoding="utf-8")
    card.write_text(clean + "<<<<<<< ours\nmine\n=======\ntheirs\n>>>>>>> other\n",
                    encoding="utf-8")
    for stage in (False, True):
        if stage:
            git(tree_kb, "add", "Problems/q1.md")
        head = git(tree_kb, "rev-parse", "HEAD")
        res = invoke("problem", "plan", "q2", "bisect", cwd=tree_kb)
        assert res.code == 1 and "unresolved merge-conflict markers in Problems/q1.md" in \
            res.stderr, (stage, res.stderr)
        assert git(tree_kb, "rev-parse", "HEAD") == head
    git(tree_kb, "commit", "-q", "--no-verify", "-m", "markers behind kb's back")
    res = invoke("problem", "plan", "q2", "bisect", cwd=tree_kb)
    assert res.code == 1 and "Problems/q1.md" in res.stderr, res.stderr
    card.write_text(clean, encoding="utf-8")
    commit_all(tree_kb, "resolved")
    assert invoke("problem", "plan", "q2", "bisect", cwd=tree_kb).code == 0


def test_a_conflicted_tree_gives_no_follow_on_reference_errors(tree_kb: Path) -> None:
    """Experiments testing hypotheses of a conflicted tree.md: the tree is read as
    empty until the conflict is resolved, so "E001 tests H1, which is not a hypothesis"
    would only repeat KB190 — it is not reported."""
    root = tree_kb
    assert invoke("hyp", "add", "Base idea", cwd=root).code == 0
    assert invoke("exp", "new", "--hyp", "H1", "Measure it", cwd=root).code == 0
    _two_branches_same_id(root)
    data = json.loads(invoke("verify", "--json", cwd=root).stdout)
    codes = sorted({f["code"] for f in data["diagnostics"] if f["severity"] == "error"})
    assert codes == ["KB190"], data["diagnostics"]


def test_an_undecodable_tree_gives_its_kb101_alone(tree_kb: Path) -> None:
    """tree.md that is not UTF-8 is read as empty, like a conflicted one: no "E001 tests
    H1, which is not a hypothesis", and in the working tree against HEAD no "H1 was
    removed" — the KB101 says what is wrong."""
    root = tree_kb
    assert invoke("hyp", "add", "Base idea", cwd=root).code == 0
    assert invoke("exp", "new", "--hyp", "H1", "Measure it", cwd=root).code == 0
    tree = root / "tree.md"
    tree.write_bytes(tree.read_bytes() + b"\n\xff\xfe broken\n")
    data = json.loads(invoke("verify", "--json", cwd=root).stdout)
    codes = sorted({f["code"] for f in data["diagnostics"] if f["severity"] == "error"})
    assert codes == ["KB101"], data["diagnostics"]
    git(root, "add", "tree.md")
    data = json.loads(invoke("verify", "--staged", "--json", cwd=root).stdout)
    codes = sorted({f["code"] for f in data["diagnostics"] if f["severity"] == "error"})
    assert codes == ["KB101"], data["diagnostics"]


def test_staged_check_during_a_stopped_pull_names_the_conflicts(team) -> None:
    """`git pull` stops on conflicts in tree.md, an experiment and a card (two real
    clones, a real merge): the index holds git's conflict stages and no resolved version
    of them. `kb verify --staged` says each file has unresolved merge conflicts (KB191,
    with what to do), never that it was deleted (KB301); HEAD's version stands in."""
    from conftest import write_files
    from test_verify_support import experiment, problem

    a, b = team["a"], team["b"]
    tree = "# Hypothesis Tree\n\n## H1: Loading is the bottleneck\nStatus: 进行中\nEvidence: (empty)\n"
    write_files(a, {"tree.md": tree, "experiments/E001.md": experiment("E001", "H1"),
                    "Problems/q1.md": problem("q1")})
    commit_all(a, "base")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--no-rebase", "origin", "main")
    for side, word in ((a, "disk"), (b, "network")):
        write_files(side, {
            "tree.md": tree.replace("Loading", f"The {word}"),
            "experiments/E001.md": experiment("E001", "H1").replace("# E001: H1 - ", f"# E001: H1 - {word} "),
            "Problems/q1.md": problem("q1").replace("- 计划: 待调度", f"- 计划: {word}"),
            "Problems/q2.md": problem("q2").replace("- 计划: 待调度", f"- 计划: {word}"),
        })
        commit_all(side, word)
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    stages = git(b, "ls-files", "-u")
    for path in ("tree.md", "experiments/E001.md", "Problems/q1.md", "Problems/q2.md"):
        assert f"\t{path}" in stages, stages
    res = invoke("verify", "--staged", "--json", cwd=b)
    data = json.loads(res.stdout)
    assert res.code == 1, data
    found = {f["path"]: f for f in data["diagnostics"] if f["code"] == "KB191"}
    assert sorted(found) == ["Problems/q1.md", "Problems/q2.md", "experiments/E001.md", "tree.md"]
    msg = found["tree.md"]["message"]
    assert "unresolved merge conflicts" in msg and "git add tree.md" in msg
    assert "`git merge --abort`, then `kb sync`" in msg and "1 base, 2 ours, 3 theirs" in msg
    assert "2 ours, 3 theirs" in found["Problems/q2.md"]["message"]  # added on both sides
    assert all(f["blocking"] and f["severity"] == "error" for f in found.values())
    assert not [f for f in data["diagnostics"] if f["code"] in ("KB301", "KB305", "KB302")], data
    # `kb dashboard --check` cannot judge a tree with conflict markers: it says why, as
    # `kb dashboard` does, instead of "stale" (which sends the user to a refused write)
    res = invoke("dashboard", "--check", cwd=b)
    assert res.code == 1 and "stale" not in res.stderr, res.stderr
    assert "experiments/E001.md has format errors" in res.stderr and "KB190" in res.stderr
    assert "; tree.md has format errors" in res.stderr  # every file, not the first alone
    assert "cannot tell whether DASHBOARD.md is current" in res.stderr
    # resolved and added: KB191 is gone and the merge is judged as usual
    for path in ("tree.md", "experiments/E001.md", "Problems/q1.md", "Problems/q2.md"):
        git(b, "checkout", "--theirs", "--", path)
        git(b, "add", "--", path)
    data = json.loads(invoke("verify", "--staged", "--json", cwd=b).stdout)
    assert not [f for f in data["diagnostics"] if f["code"] in ("KB191", "KB301")], data


def test_staged_check_during_a_pull_stopped_in_kb_toml(team) -> None:
    """kb.toml itself conflicted (markers in the work tree: it cannot be read): KB191 names
    it and what to do, exit 1, not an environment error about TOML syntax alone."""
    a, b = team["a"], team["b"]
    base = (a / "kb.toml").read_text(encoding="utf-8")
    for side, code in ((a, "KB240"), (b, "KB245")):
        (side / "kb.toml").write_text(base + f'\n[rules]\ndisable = ["{code}"]\n', encoding="utf-8")
        commit_all(side, code)
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--no-rebase", "origin", "main", check=False)
    assert "\tkb.toml" in git(b, "ls-files", "-u")
    res = invoke("verify", "--staged", "--json", cwd=b)
    data = json.loads(res.stdout)
    assert res.code == 1, (res.stdout, res.stderr)
    [f] = [f for f in data["diagnostics"] if f["code"] == "KB191"]
    assert f["path"] == "kb.toml" and f["blocking"]
    assert "unresolved merge conflicts" in f["message"] and "git merge --abort" in f["message"]
