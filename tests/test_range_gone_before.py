"""KB307 in a range: an ID the target's history used and removed before the range began
never comes back (the allocator knew it; the range's check did not)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import commit_all, git, invoke, write_files


def _verify(root: Path, *args: str) -> tuple[int, list[dict]]:
    res = invoke("verify", "--json", *args, cwd=root)
    return res.code, json.loads(res.stdout)["diagnostics"]


def test_an_id_removed_on_the_target_before_the_range_is_not_reused(tree_kb: Path) -> None:
    root = tree_kb
    assert invoke("method", "add", "m1", "Infinite descent", "--type", "方法", cwd=root).code == 0
    for s in ("A", "B", "C"):
        assert invoke("hyp", "add", s, cwd=root).code == 0
    card = (root / "Methods" / "m1.md").read_text(encoding="utf-8")
    tree = (root / "tree.md").read_text(encoding="utf-8")
    # main removes m1 and H3, each accepted with an override
    (root / "Methods" / "m1.md").unlink()
    write_files(root, {"tree.md": tree[:tree.index("## H3")].rstrip("\n") + "\n"})
    git(root, "add", "-A")
    git(root, "commit", "-qm", "drop m1 and H3", "-m", "Kb-Override: m1 junk\nKb-Override: H3 junk",
        "--no-verify")
    main = git(root, "rev-parse", "HEAD")
    code, diags = _verify(root, "--rev", main)
    assert code == 0, diags
    git(root, "checkout", "-q", "-b", "feature")
    write_files(root, {"Methods/m1.md": card.replace("Infinite descent", "Another method"),
                       "tree.md": tree[:tree.index("## H3")] + "## H3: Reused top ID\n\nStatus: 待验\n"})
    commit_all(root, "reuse m1 and H3")
    for args in (["--range", f"{main}..feature"], ["--range", "main..feature", "--against", "main"]):
        code, diags = _verify(root, *args)
        hits = {(d["code"], d["path"]) for d in diags if d["severity"] == "error"}
        assert code == 1 and {("KB307", "Methods/m1.md"), ("KB307", "tree.md")} <= hits, diags
        assert all(f"the history before {main[:10]}" in d["message"] for d in diags
                   if d["code"] == "KB307")
    # kb's own writes on the branch take new IDs, which pass
    git(root, "reset", "-q", "--hard", main)
    r = invoke("hyp", "add", "A new one", "--json", cwd=root)
    assert r.code == 0 and r.json()["id"] == "H4", r.stdout
    assert invoke("method", "add", "m2", "Another method", "--type", "方法", cwd=root).code == 0
    code, diags = _verify(root, "--range", f"{main}..feature")
    assert code == 0, diags


def test_an_id_dropped_by_a_reset_and_its_override_commit_is_not_reused(tree_kb: Path,
                                                                        tmp_path: Path) -> None:
    """The README's way to drop a pushed hypothesis: reset, an empty commit with
    `Kb-Override: H2 <reason>`, force push. That trailer is the one trace of H2 left in
    the history: a fresh clone's allocator skips H2, and a hand-written H2 is KB307."""
    root = tree_kb
    for s in ("Base", "Second, to be dropped"):
        assert invoke("hyp", "add", s, cwd=root).code == 0
    assert invoke("exp", "new", "--hyp", "H1", "to be dropped", cwd=root).code == 0
    git(root, "reset", "-q", "--hard", "HEAD~2")
    git(root, "commit", "-q", "--allow-empty", "-m", "Drop H2 and E001", "-m",
        "Kb-Override: H2 pushed by mistake\nKb-Override: E001 pushed by mistake")
    clone = tmp_path / "carol"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    tip = git(clone, "rev-parse", "HEAD")
    r = invoke("exp", "new", "--hyp", "H1", "Carol's experiment", "--json", cwd=clone)
    assert r.code == 0 and r.json()["id"] == "E002", r.stdout
    git(clone, "reset", "-q", "--hard", tip)
    r = invoke("hyp", "add", "Carol's claim", "--json", cwd=clone)
    assert r.code == 0 and r.json()["ids"] == ["H3"], r.stdout
    git(clone, "reset", "-q", "--hard", tip)
    tree = (clone / "tree.md").read_text(encoding="utf-8")
    write_files(clone, {"tree.md": tree.rstrip("\n") + "\n\n## H2: Carol's claim\n\nStatus: 待验\n"})
    commit_all(clone, "H2 by hand")
    code, diags = _verify(clone, "--range", f"{tip}..HEAD")
    assert code == 1 and ("KB307", "tree.md") in {(d["code"], d["path"]) for d in diags}, diags


def test_an_override_of_a_commit_touching_another_kb_only_is_not_this_kbs(tree_kb: Path) -> None:
    """Two KBs in one repository: the root's commit overriding its H1 leaves the KB in
    `sub/` free to take H1."""
    root = tree_kb
    assert invoke("init", "sub", cwd=root).code == 0
    commit_all(root, "a second KB")
    assert invoke("hyp", "add", "Root claim", cwd=root).code == 0
    tree = (root / "tree.md").read_text(encoding="utf-8")
    write_files(root, {"tree.md": tree.replace("Root claim", "Root claim, reworded")})
    git(root, "commit", "-qam", "reword", "-m", "Kb-Override: H1 reworded", "--no-verify")
    r = invoke("-C", "sub", "hyp", "add", "Sub claim", "--json", cwd=root)
    assert r.code == 0 and r.json()["ids"] == ["H1"], r.stdout
