"""`kb verify` modes, failure policy, output formats, exit codes, --fix, and the
git situations of the cases table (GIT-01/02/05/07, PC-05, WIN-01) with real git."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, tree_snapshot, write_files
from test_verify_support import TREE, codes, experiment, find, make_repo, verify_json

TREE_DUP = TREE + "\n## H2: Declared again\nStatus: 待验\nEvidence: (empty)\n"


def _state(root: Path) -> dict:
    """Everything verify must not change: tracked files, the index, refs, HEAD."""
    files = {k: v for k, v in tree_snapshot(root).items()
             if not (k.startswith(".kb/") or k.startswith(".git/") or k in (".kb/", ".git/"))}
    return {"files": files, "index": (root / ".git" / "index").read_bytes()
            if (root / ".git" / "index").exists() else b"",
            "refs": git(root, "for-each-ref"), "head": git(root, "rev-parse", "HEAD", check=False)}


# -- policy ----------------------------------------------------------------------


def test_pre_existing_errors_listed_but_not_failing(make_kb):
    root = make_repo(make_kb, {"tree.md": TREE_DUP}, dashboard=False)
    (root / "tree.md").write_text(TREE_DUP + "\n## H3: New\nStatus: 待验\nEvidence: (empty)\n",
                                  encoding="utf-8")
    git(root, "add", "tree.md")
    rc, data = verify_json(root, "--staged")
    (dup,) = find(data, "KB202")
    assert dup["pre_existing"] and not dup["blocking"] and rc == 0 and data["ok"]
    # a change that adds an error fails, and only that error blocks
    (root / "tree.md").write_text(TREE_DUP.replace("Evidence: E001", "Evidence: E001, E404"),
                                  encoding="utf-8")
    git(root, "add", "tree.md")
    rc, data = verify_json(root, "--staged")
    assert rc == 1 and codes(data, blocking=True) == ["KB210"]
    assert find(data, "KB202")[0]["pre_existing"]
    # the working-tree mode reports everything and fails on every error
    rc, data = verify_json(root)
    assert rc == 1 and {"KB202", "KB210"} <= set(codes(data, blocking=True))


def test_text_and_github_output(make_kb):
    root = make_repo(make_kb, {"tree.md": TREE_DUP}, dashboard=False)
    res = invoke("verify", cwd=root)
    line = TREE_DUP.splitlines().index("## H2: Declared again") + 1
    assert res.code == 1
    assert f"tree.md:{line}:1: KB202 [error] H2 is declared more than once" in res.stdout
    assert "1 error(s)" in res.stderr
    res = invoke("verify", "--format", "github", cwd=root)
    assert res.code == 1
    assert f"::error file=tree.md,line={line},col=1,title=KB202::H2 is declared" in res.stdout
    res = invoke("verify", "--json", cwd=root)
    data = json.loads(res.stdout)
    assert data["exit_code"] == 1 and data["mode"] == "worktree"
    assert data["diagnostics"][0]["code"] == "KB202"


def test_exit_codes_for_usage_and_environment(tmp_path, make_kb):
    outside = tmp_path / "plain"
    outside.mkdir()
    assert invoke("verify", cwd=outside).code == 2
    root = make_repo(make_kb)
    assert invoke("verify", "--range", "HEAD", cwd=root).code == 2
    assert invoke("verify", "--range", "nope..HEAD", cwd=root).code == 2
    assert invoke("verify", "--rev", "nope", cwd=root).code == 2
    assert invoke("verify", "--staged", "--rev", "HEAD", cwd=root).code == 2
    # an empty value (an unset CI variable) names no commit: never the working tree instead
    for opt in ("--rev", "--range"):
        res = invoke("verify", opt, "", cwd=root)
        assert res.code == 2 and f"{opt} is empty" in res.stderr, res.stderr
    res = invoke("verify", "--staged", "--fix", cwd=root)
    assert res.code == 2 and "--fix" in res.stderr
    assert invoke("verify", "--rev", "HEAD", cwd=root).code == 0


def test_fix_applies_fixes_and_regenerates_the_dashboard(make_kb):
    root = make_repo(make_kb)
    bad = (TREE.replace("## H2: Mixed", "### H2: Mixed").replace("Parent: H1", "Parent: H2")
           .replace("Status: 进行中", "Status：进行中")
           + "\n## H3: New\nStatus: 待验\nEvidence: (empty)\n")
    (root / "tree.md").write_text(bad.replace("\n", "\r\n"), encoding="utf-8", newline="")
    rc, data = verify_json(root)
    assert {"KB203", "KB204", "KB110", "KB240"} <= set(codes(data))
    res = invoke("verify", "--fix", cwd=root)
    assert res.code == 0, res.stdout + res.stderr
    assert "applied 3 fix(es)" in res.stderr and "regenerated 1 DASHBOARD.md" in res.stderr
    text = (root / "tree.md").read_bytes().decode("utf-8")
    assert "\r\n## H2: Mixed" in text and "Parent: H1\r\n" in text and "Status: 进行中\r\n" in text
    assert text.count("\r\n") == text.count("\n")  # line endings kept
    rc, data = verify_json(root)
    assert (rc, data["diagnostics"]) == (0, [])


def test_verify_is_read_only_in_every_mode(make_kb):
    root = make_repo(make_kb)
    write_files(root, {"tree.md": TREE.replace("Mixed precision", "Half precision"),
                       "experiments/E002.md": experiment("E002")})
    git(root, "add", "experiments/E002.md")
    before = _state(root)
    for args in ([], ["--staged"], ["--rev", "HEAD"], ["--range", "HEAD~0..HEAD"]):
        invoke("verify", *args, cwd=root)
        assert _state(root) == before, args


def test_stale_index_lock_never_blocks_verify(make_kb):
    """GIT-01: verify never takes git's index lock, and never deletes a stale one."""
    root = make_repo(make_kb)
    lock = root / ".git" / "index.lock"
    lock.write_bytes(b"")
    (root / "tree.md").write_text(TREE + "\n## H3: x\nStatus: 待验\nEvidence: (empty)\n", encoding="utf-8")
    for args in ([], ["--staged"], ["--rev", "HEAD"]):
        res = invoke("verify", *args, cwd=root)
        assert res.code == 0, (args, res.stderr)
    assert lock.exists() and lock.read_bytes() == b""


def test_paths_with_spaces_and_cjk_in_every_kb(make_kb):
    """GIT-02 + several KBs: real UTF-8 paths (core.quotePath=true), every KB checked."""
    root = make_repo(make_kb, {"tree.md": TREE_DUP}, dashboard=False)
    make_kb({"tree.md": TREE, "experiments/E001.md": experiment("E001"),
             "Verified/实验 E001.md": "# x\n"}, root=root, subdir="知识 库")
    commit_all(root, "second KB")
    git(root, "config", "core.quotePath", "true")
    write_files(root, {"知识 库/Verified/实验 E001.md": "# x, edited\n"})
    git(root, "add", "-A")
    rc, data = verify_json(root, "--staged")
    assert sorted(data["kbs"]) == [".", "知识 库"]
    (v,) = find(data, "KB304")
    assert v["path"] == "知识 库/Verified/实验 E001.md" and v["kb"] == "知识 库" and rc == 1
    assert find(data, "KB202")[0]["path"] == "tree.md"
    res = invoke("verify", "--staged", cwd=root)
    assert "知识 库/Verified/实验 E001.md:1:1: KB304" in res.stdout
    rc, data = verify_json(root, "--staged", "--kb", str(root / "知识 库"))
    assert data["kbs"] == ["知识 库"]


def test_a_broken_kb_toml_of_another_kb_is_its_own_finding(make_kb):
    """Several KBs: an unreadable kb.toml in one of them is a KB003 error of that KB,
    naming its kb.toml; the other KBs are still checked, and it blocks only a change
    that touches its KB (the user works in another KB, whose kb.toml is fine)."""
    root = make_repo(make_kb, dashboard=False)
    make_kb({"tree.md": TREE}, root=root, subdir="other", config='[kb]\nlocale = "fr"\n')
    commit_all(root, "a second KB, its locale wrong")
    write_files(root, {"tree.md": TREE_DUP})
    git(root, "add", "-A")
    rc, data = verify_json(root, "--staged")
    assert sorted(data["kbs"]) == [".", "other"]
    (bad,) = find(data, "KB003")
    assert bad["path"] == "other/kb.toml" and bad["kb"] == "other" and not bad["blocking"]
    assert "other/kb.toml:2: kb.locale must be 'zh' or 'en'" in bad["message"] and bad["line"] == 2
    assert find(data, "KB202") and rc == 1  # the top KB is still checked: its duplicate blocks
    write_files(root, {"tree.md": TREE})
    git(root, "add", "-A")
    rc, data = verify_json(root, "--staged")
    assert rc == 0 and not find(data, "KB003")[0]["blocking"]
    write_files(root, {"other/tree.md": TREE + "\n"})
    git(root, "add", "-A")
    rc, data = verify_json(root, "--staged")
    assert rc == 1 and find(data, "KB003")[0]["blocking"]  # the change touches that KB
    rc, data = verify_json(root, "--range", "HEAD~1..HEAD")  # the commit that added it
    assert rc == 1 and find(data, "KB003")[0]["blocking"]
    res = invoke("verify", "--staged", "--kb", str(root / "other"), cwd=root)
    assert res.code == 2 and "other/kb.toml:2: kb.locale" in res.stderr  # the one KB asked for


def test_first_commit_has_empty_history(make_kb):
    """GIT-05: no HEAD yet: history is empty and the commit is allowed."""
    root = make_repo(make_kb, commit=False)
    git(root, "add", "-A")
    rc, data = verify_json(root, "--staged")
    assert (rc, data["diagnostics"]) == (0, [])
    assert any("no commit yet" in n for n in data["notes"])
    res = invoke("verify", cwd=root)
    assert res.code == 0


def test_staged_blob_is_checked_not_the_working_tree(make_kb):
    """PC-05: the staged version passes; only the working tree drops E001."""
    root = make_repo(make_kb, {"experiments/E002.md": experiment("E002")})
    staged = TREE.replace("Evidence: E001", "Evidence: E001, E002")
    write_files(root, {"tree.md": staged})
    git(root, "add", "tree.md")
    write_files(root, {"tree.md": staged.replace("Evidence: E001, E002", "Evidence: E002")})
    rc, data = verify_json(root, "--staged")
    assert rc == 0 and not find(data, "KB303")
    rc, data = verify_json(root)
    assert rc == 1 and find(data, "KB303")


def test_autocrlf_untouched_verified_file_is_not_modified(make_kb, tmp_path):
    """WIN-01: CRLF bytes in the working tree of an untouched Verified/ file."""
    root = make_repo(make_kb)
    git(root, "config", "core.autocrlf", "true")
    vfile = root / "Verified" / "命题" / "p1.md"
    vfile.unlink()
    git(root, "checkout", "--", "Verified/命题/p1.md")
    assert b"\r\n" in vfile.read_bytes()
    os.utime(vfile, (1, 1))  # stat-dirty: git must look at the content
    git(root, "add", "-A")  # autocrlf cleans CRLF back to the committed blob
    for args in ([], ["--staged"]):
        rc, data = verify_json(root, *args)
        assert not find(data, "KB304") and rc == 0, (args, data["diagnostics"])
    vfile.write_bytes(vfile.read_bytes().replace("Claim p1".encode(), b"Claim p1 (edited)"))
    rc, data = verify_json(root)
    assert find(data, "KB304") and rc == 1


# -- commits -----------------------------------------------------------------------


def test_rev_and_range_catch_no_verify_commits_and_read_trailers(make_kb):
    root = make_repo(make_kb)
    base = git(root, "rev-parse", "HEAD")
    write_files(root, {"tree.md": TREE.replace("Mixed precision slows", "Mixed precision speeds")})
    git(root, "commit", "-qam", "edit H2 without an override")
    bad = git(root, "rev-parse", "HEAD")
    write_files(root, {"tree.md": TREE.replace("Mixed precision slows", "Mixed precision speeds")
                       .replace("Status: 进行中", "Status: 被支持")})
    git(root, "commit", "-qam", "support H1", "-m", "Kb-Override: H1 supported by E001 (reviewed)")
    rc, data = verify_json(root, "--rev", bad)
    assert rc == 1 and [(d["code"], d["commit"]) for d in find(data, "KB302")] == [("KB302", bad)]
    rc, data = verify_json(root, "--range", f"{base}..HEAD")
    assert rc == 1 and data["commits"] == 2
    assert [d["commit"] for d in find(data, "KB302")] == [bad]
    (moved,) = find(data, "KB306") if find(data, "KB306") else [None]
    # 进行中 -> 被支持 is legal; nothing about H1 blocks
    assert moved is None
    res = invoke("verify", "--range", f"{base}..HEAD", cwd=root)
    assert f"[{bad[:10]}]" in res.stdout


def test_override_trailer_accepts_a_change_in_ci(make_kb):
    root = make_repo(make_kb)
    write_files(root, {"tree.md": TREE.replace("Status: 进行中", "Status: 待验", 1)})
    git(root, "commit", "-qam", "reopen H1", "-m", "Kb-Override: H1 the experiment was invalid")
    rc, data = verify_json(root, "--rev", "HEAD")
    (d,) = find(data, "KB306")
    assert d["severity"] == "info" and rc == 0


def test_ids_allocated_twice_on_parallel_branches_are_caught_at_the_merge(make_kb):
    root = make_repo(make_kb, dashboard=False)
    main = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-qb", "a")
    write_files(root, {"experiments/E002.md": experiment("E002", "H1")})
    commit_all(root, "a: E002")
    git(root, "checkout", "-q", "main")
    write_files(root, {"experiments/E002.md": experiment("E002", "H2")})
    commit_all(root, "main: E002")
    # each branch alone is fine
    assert verify_json(root, "--range", f"{main}..a")[0] == 0
    assert verify_json(root, "--range", f"{main}..main")[0] == 0
    git(root, "merge", "-q", "a", "-m", "merge", check=False)  # add/add conflict
    write_files(root, {"experiments/E002.md": experiment("E002", "H2"),
                       "experiments/E003.md": experiment("E002", "H1")})
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", "merge a")
    rc, data = verify_json(root, "--range", f"{main}..HEAD")
    assert rc == 1
    assert "KB202" in codes(data, blocking=True)
    assert "KB208" in codes(data, blocking=True)


def test_shallow_clone_is_reported_not_misjudged(make_kb, tmp_path):
    """GIT-07: the boundary commit is not judged as 'created here'."""
    root = make_repo(make_kb)
    write_files(root, {"experiments/E002.md": experiment("E002")})
    commit_all(root, "E002")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{root}", str(clone))
    res = invoke("verify", "--rev", "HEAD", "--json", cwd=clone)
    data = json.loads(res.stdout)
    assert res.code == 2 and "git fetch --unshallow" in data["error"]["message"]
    assert data["error"]["kind"] == "environment" and data["error"]["exit_code"] == 2
    assert not [c for c in codes(data) if c in ("KB301", "KB307")]
    res = invoke("verify", "--range", "HEAD~1..HEAD", cwd=clone)
    assert res.code == 2 and "unshallow" in res.stderr
    # a start the shallow clone lacks: the same kind of error as a missing merge parent
    res = invoke("verify", "--range", "HEAD~1..HEAD", "--json", cwd=clone)
    err = json.loads(res.stdout)["error"]
    assert err["kind"] == "environment" and err["exit_code"] == 2 and "unshallow" in err["message"]
    # the staged snapshot needs no history beyond HEAD
    assert invoke("verify", "--staged", cwd=clone).code == 0
    git(clone, "fetch", "-q", "--unshallow")
    assert invoke("verify", "--range", "HEAD~1..HEAD", cwd=clone).code == 0


def test_resolve_mode_reads_the_pre_commit_framework_variables():
    from kb.checks.verify import resolve_mode

    assert resolve_mode(environ={}).kind == "worktree"
    assert resolve_mode(environ={"PRE_COMMIT": "1"}).kind == "staged"
    assert resolve_mode(environ={"PRE_COMMIT_HOOK_STAGE": "pre-commit"}).kind == "staged"
    m = resolve_mode(environ={"PRE_COMMIT": "1", "PRE_COMMIT_FROM_REF": "a1",
                              "PRE_COMMIT_TO_REF": "b2"})
    assert (m.kind, m.base, m.tip) == ("range", "a1", "b2")
    m = resolve_mode(environ={"PRE_COMMIT_HOOK_STAGE": "pre-push", "PRE_COMMIT_FROM_REF": "a1",
                              "PRE_COMMIT_TO_REF": "b2"})
    assert (m.kind, m.base, m.tip) == ("range", "a1", "b2")
    m = resolve_mode(environ={"PRE_COMMIT": "1", "PRE_COMMIT_REMOTE_NAME": "origin",
                              "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/x",
                              "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/x"})
    assert (m.kind, m.base, m.tip) == ("range", None, "refs/heads/x")
    assert resolve_mode(staged=True, environ={"PRE_COMMIT_FROM_REF": "a"}).kind == "staged"
    from kb.errors import UsageError

    with pytest.raises(UsageError):
        resolve_mode(staged=True, rev="HEAD", environ={})


def test_inherited_results_equal_a_full_check(make_kb, monkeypatch):
    """A change that leaves every object and link as it was (prose) inherits the
    stored cross-file results of its base; they must be what a full check finds."""
    import sqlite3

    files = {"tree.md": TREE_DUP.replace("Evidence: E001", "Evidence: E001, E404"),
             "Problems/q2.md": __import__("test_verify_support").problem("q2", depends='["q3"]'),
             "Problems/q3.md": __import__("test_verify_support").problem("q3", depends='["q2"]')}
    root = make_repo(make_kb, files)
    assert verify_json(root, "--rev", "HEAD")[0] == 1  # stores the HEAD snapshot's results
    write_files(root, {"experiments/E001.md": (root / "experiments/E001.md").read_text(encoding="utf-8")
                       + "\nran again on 2026-01-03; same numbers.\n",
                       "Problems/q2.md": files["Problems/q2.md"].replace("State q2.", "State q2.\n\n"
                                                                          "## 笔记\nMore prose.")})
    git(root, "add", "-A")
    import kb.checks.results as V

    seen = []
    real = V.neutral
    monkeypatch.setattr(V, "neutral", lambda *a: seen.append(real(*a)) or seen[-1])
    _, inherited = verify_json(root, "--staged")
    assert seen == [True]
    db = sqlite3.connect(root / ".kb" / "index.sqlite")
    db.execute("DELETE FROM kb_check_kv WHERE key LIKE 'snap:%'")
    db.commit()
    db.close()
    _, full = verify_json(root, "--staged")
    assert inherited["diagnostics"] == full["diagnostics"]
    assert {"KB202", "KB210", "KB213"} <= set(codes(full))


@pytest.mark.parametrize("change", ["priority", "spacing", "line", "path"])
def test_rules_reading_what_a_change_keeps_are_inherited_and_equal_a_full_check(make_kb, monkeypatch,
                                                                                 change):
    """A change of an anchor value (a card's 优先级) keeps every ID, line and link: the
    cross-file rules declaring they read only those (``reads=``) keep HEAD's stored
    results, the others run again; a change moving lines, or adding a path, re-runs
    the rules reading lines or paths, and one changing the text of a line a stored
    fix replaces (KB216's 被依赖 line) re-runs that rule. Every report equals a full
    check's."""
    import sqlite3

    import kb.checks.results as V
    from test_verify_support import problem

    files = {"tree.md": TREE_DUP.replace("Evidence: E001", "Evidence: E001, E404"),
             "Problems/q2.md": problem("q2", depends='["q3"]'),
             "Problems/q3.md": problem("q3", depends='["q2", "q9"]')}
    root = make_repo(make_kb, files)
    assert verify_json(root, "--rev", "HEAD")[0] == 1  # stores the HEAD snapshot's results
    if change == "priority":
        write_files(root, {"Problems/q2.md": files["Problems/q2.md"].replace("- 优先级: 1", "- 优先级: 7")})
    elif change == "spacing":  # the same 被依赖 value, written differently: KB216's fix text
        write_files(root, {"Problems/q2.md": files["Problems/q2.md"].replace("- 被依赖: []",
                                                                             "- 被依赖:  []")})
    elif change == "line":
        write_files(root, {"Problems/q2.md": "\n" + files["Problems/q2.md"]})
    else:
        write_files(root, {"Problems/q4.md": problem("q4")})
    git(root, "add", "-A")
    seen: dict = {}
    real = V._SameReads._same
    monkeypatch.setattr(V._SameReads, "_same",
                        lambda self, reads: seen.setdefault(reads, real(self, reads)))
    held = []
    real_held = V._fix_lines_hold
    monkeypatch.setattr(V, "_fix_lines_hold", lambda *a: held.append(real_held(*a)) or held[-1])
    code, inherited = verify_json(root, "--staged")
    want = {"priority": {"paths": True, "rows": True, "refs": True, "fixes": True, None: False},
            "spacing": {"paths": True, "rows": True, "refs": True, "fixes": True, None: False},
            "line": {"paths": True, "rows": False, "refs": False, "fixes": False, None: False},
            "path": {"paths": False, "rows": False, "refs": False, "fixes": False, None: False}}[change]
    assert seen == want
    assert held == {"priority": [True], "spacing": [False]}.get(change, [])
    kb216 = [d for d in inherited["diagnostics"] if d["code"] == "KB216"]
    assert "Problems/q2.md" in {d["path"] for d in kb216}  # a changed file holds a fix
    db = sqlite3.connect(root / ".kb" / "index.sqlite")
    db.execute("DELETE FROM kb_check_kv WHERE key LIKE 'snap:%'")
    db.commit()
    db.close()
    assert verify_json(root, "--staged") == (code, inherited)
    assert {"KB202", "KB210", "KB212", "KB213"} <= set(codes(inherited))


def test_rules_fingerprint_is_the_same_whatever_was_imported_first():
    """The results a `kb verify --rev HEAD` stores are the ones the next `kb verify --staged`
    (another process, importing modules in another order) finds: the rules' fingerprint
    does not depend on which rule module was imported first, or imported yet."""
    import subprocess
    import sys

    from conftest import source_env

    code = "{pre}\nfrom kb.checks.registry import rules_fingerprint\nprint(rules_fingerprint())"
    outs = {subprocess.run([sys.executable, "-c", code.format(pre=pre)], env=source_env(),
                           capture_output=True, text=True, check=True).stdout.strip()
            for pre in ("", "import kb.checks.trail_rules", "import kb.checks.lock_rules, kb.checks.results")}
    assert len(outs) == 1 and len(next(iter(outs))) == 16


@pytest.mark.parametrize("change", ["later", "prose", "lowered", "removed", "tie"])
def test_dashboard_latest_date_from_the_checked_base_equals_a_full_check(make_kb, monkeypatch, change):
    """KB240 takes a change's latest experiment date from its checked base's (stored) and
    the changed files' dates; when a changed file held the base's latest date (lowered,
    removed, or one of two equal dates removed: a tie) every experiment is read again.
    Every report equals a full check's (nothing stored)."""
    import sqlite3

    import kb.checks.dashboard_rule as R

    files = {"experiments/E002.md": experiment("E002", date="2026-01-05"),
             "experiments/E003.md": experiment("E003", date="2026-01-05" if change == "tie" else "2026-01-03")}
    root = make_repo(make_kb, files)
    assert verify_json(root, "--rev", "HEAD")[0] == 0  # stores HEAD's results and latest date
    if change == "later":
        write_files(root, {"experiments/E003.md": experiment("E003", date="2026-02-01")})
    elif change == "prose":
        write_files(root, {"experiments/E003.md": files["experiments/E003.md"] + "\nRan again.\n"})
    elif change == "lowered":
        write_files(root, {"experiments/E002.md": experiment("E002", date="2026-01-01")})
    else:
        (root / "experiments/E002.md").unlink()
    git(root, "add", "-A")
    reads = []
    real = R._all_latest
    monkeypatch.setattr(R, "_all_latest", lambda s: reads.append(1) or real(s))
    code, derived = verify_json(root, "--staged")
    assert len(reads) == (0 if change in ("later", "prose") else 1)
    stale = change in ("later", "lowered", "removed")
    assert ("KB240" in codes(derived)) == stale
    db = sqlite3.connect(root / ".kb" / "index.sqlite")
    db.execute("DELETE FROM kb_check_kv")
    db.commit()
    db.close()
    reads.clear()
    assert verify_json(root, "--staged") == (code, derived)
    assert len(reads) == 1  # nothing stored: every experiment read


def test_heads_results_stay_cached_across_many_staged_checks(make_kb, monkeypatch):
    """Every pre-commit check inherits HEAD's stored results; more distinct staged
    states than the cache keeps (8) must not evict them, or every later check redoes
    the whole KB."""
    import kb.checks.results as V
    from kb.index_results import KEEP_SNAPSHOTS

    root = make_repo(make_kb)
    assert verify_json(root, "--rev", "HEAD")[0] == 0
    seen = []
    real = V.neutral
    monkeypatch.setattr(V, "neutral", lambda *a: seen.append(real(*a)) or seen[-1])
    exp = (root / "experiments/E001.md").read_text(encoding="utf-8")
    for i in range(KEEP_SNAPSHOTS + 4):
        write_files(root, {"experiments/E001.md": exp + f"\nrun {i}: same numbers.\n"})
        git(root, "add", "-A")
        assert verify_json(root, "--staged")[0] == 0
    assert seen == [True] * (KEEP_SNAPSHOTS + 4)  # HEAD's results found every time


def test_range_reads_the_tips_files_from_the_checkout_only_when_they_are_the_tips(make_kb, tmp_path):
    """A fresh CI clone's range check reads the tip's files from the work tree; a file
    edited there (not the tip's version) is read from git: the same report."""
    import shutil
    import subprocess

    from test_verify_support import commit_prose_edits, problem

    root = make_repo(make_kb, {f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 12)})
    base = git(root, "rev-parse", "HEAD").strip()
    commit_prose_edits(root, [f"q{i}" for i in range(2, 5)])
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    want = verify_json(clone, "--range", f"{base}..HEAD")
    assert want[0] == 0
    shutil.rmtree(clone / ".kb")
    # the work tree now differs from the tip: a duplicate ID and a broken status there
    for i in (3, 7):
        (clone / "Problems" / f"q{i}.md").write_text(problem("q2", status="奇怪"), encoding="utf-8")
    assert verify_json(clone, "--range", f"{base}..HEAD") == want
    assert verify_json(clone)[0] == 1  # the work tree itself is wrong


def test_fix_text_of_the_staged_version_even_when_the_checkout_differs(make_kb):
    """KB216's fix text names the staged line; the rule reads a file from the checkout
    only when it holds exactly the staged blob."""
    from test_verify_support import problem

    root = make_repo(make_kb, {"Problems/q2.md": problem("q2"), "Problems/q3.md": problem("q3")})
    q2 = root / "Problems" / "q2.md"
    q2.write_text(problem("q2", depended_by='["q3"]'), encoding="utf-8")  # q3 does not depend on q2
    git(root, "add", "-A")

    def fixes() -> list:
        data = verify_json(root, "--staged")[1]
        return [d["fix"] for d in data["diagnostics"] if d["code"] == "KB216"]

    staged = fixes()
    assert staged and staged[0]["old"] == '- 被依赖: ["q3"]'
    q2.write_text(problem("q2", depended_by='["q3", "q9"]'), encoding="utf-8")  # not staged
    assert fixes() == staged


def test_checkout_bytes_reads_only_a_regular_file_holding_the_blob(tmp_path):
    import hashlib

    from kb.checks.facts import checkout_bytes

    data = b"# Tree\n"
    blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    (tmp_path / "a.md").write_bytes(data)
    (tmp_path / "b.md").write_bytes(data + b"more\n")
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    os.mkfifo(tmp_path / "pipe.md")  # a read would block: never opened
    assert checkout_bytes(tmp_path, "a.md", blob) == data
    assert checkout_bytes(tmp_path, "b.md", blob) is None
    assert checkout_bytes(tmp_path, "link.md", blob) is None
    assert checkout_bytes(tmp_path, "pipe.md", blob) is None
    assert checkout_bytes(tmp_path, "missing.md", blob) is None
    for size in (0, 1 << 16, (1 << 16) + 1, 300_000):  # read whole, to its end
        data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        (tmp_path / "big.md").write_bytes(data)
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        assert checkout_bytes(tmp_path, "big.md", blob) == data


def test_a_committed_kb_toml_change_is_not_answered_from_the_old_results(make_kb) -> None:
    """The verify results live in the index, which a kb.toml change rebuilds: the
    working-tree check after the change is the check from scratch (it was not)."""
    import shutil

    root = make_kb({"tree.md": "# T\n\n## K1: kay\nStatus: 待验\n\n## K2. second\nStatus: 待验\n"},
                   commit=True)

    def kb116() -> list[str]:
        r = invoke("verify", "--json", cwd=root)
        return [d["message"] for d in r.json()["diagnostics"] if d["code"] == "KB116"]

    before = kb116()
    assert before and "[KH]" not in before[0]
    (root / "kb.toml").write_text('[kb]\nid_grammar = "[KH][1-9][0-9]*"\nheading_separators = ["."]\n',
                                  encoding="utf-8")
    git(root, "commit", "-q", "-am", "another ID grammar")
    after = kb116()
    assert after and "`[KH][1-9][0-9]*` with separator `.`" in after[0], after
    shutil.rmtree(root / ".kb")
    assert kb116() == after  # the same answer as from scratch


def test_verification_records_are_append_only_in_every_mode(make_kb):
    """KB310: a verification record (JSON, read by no parser) modified or deleted is an
    error in the working tree, the staged index, a commit and a range; a new record
    (what `kb verdict` writes) is not. It was seen by no rule and no diff."""
    rec = "Logs/Verification/r-q1-s1_20261201T100000Z.json"
    body = '{"r": "q1#解法1", "verdict": 0.9, "results": [{"verifier": "v1", "result": 0.9}]}\n'
    root = make_repo(make_kb, {rec: body})
    base = git(root, "rev-parse", "HEAD")
    write_files(root, {"Logs/Verification/r-q1-s1_20261201T110000Z.json": body})  # a new one
    git(root, "add", "-A")
    for args in ([], ["--staged"]):
        rc, data = verify_json(root, *args)
        assert rc == 0 and not find(data, "KB310"), (args, data["diagnostics"])
    commit_all(root, "a second record")
    write_files(root, {rec: body.replace("0.9", "0.2")})
    rc, data = verify_json(root)
    (d,) = find(data, "KB310")
    assert rc == 1 and d["path"] == rec and d["line"] == 1 and "modified" in d["message"]
    git(root, "add", "-A")
    rc, data = verify_json(root, "--staged")
    assert rc == 1 and find(data, "KB310")
    git(root, "commit", "-qm", "tamper", "--no-verify")
    tampered = git(root, "rev-parse", "HEAD")
    git(root, "rm", "-q", "Logs/Verification/r-q1-s1_20261201T110000Z.json")
    git(root, "commit", "-qm", "drop a record", "--no-verify")
    rc, data = verify_json(root, "--rev", tampered)
    assert rc == 1 and [d["path"] for d in find(data, "KB310")] == [rec]
    rc, data = verify_json(root, "--range", f"{base}..HEAD")
    found = sorted((d["path"], "deleted" in d["message"]) for d in find(data, "KB310"))
    assert rc == 1 and found == [(rec, False),
                                 ("Logs/Verification/r-q1-s1_20261201T110000Z.json", True)]


def test_the_revert_of_a_tampered_record_names_the_override_that_accepts_it(make_kb):
    """A `--no-verify` commit that edited a record reached the branch; its revert puts the
    record back and is a change of a kept file too (KB310). The commit-mode message said
    only "restore it from <the tampered commit>"; it names the trailer a repair carries,
    keyed on the record's file name, and the range accepts the revert with it."""
    rec = "Logs/Verification/r-q1-s1_20261201T100000Z.json"
    body = '{"r": "q1#解法1", "verdict": 0.9, "results": [{"verifier": "v1", "result": 0.9}]}\n'
    root = make_repo(make_kb, {rec: body})
    write_files(root, {rec: body.replace("0.9", "0.2")})
    git(root, "commit", "-qam", "tamper", "--no-verify")
    tampered = git(root, "rev-parse", "HEAD")
    git(root, "revert", "--no-edit", tampered)
    rc, data = verify_json(root, "--range", f"{tampered}..HEAD")
    (d,) = find(data, "KB310")
    assert rc == 1 and "`Kb-Override: r-q1-s1_20261201T100000Z <reason>`" in d["message"], d
    git(root, "commit", "-q", "--amend", "--no-edit", "--trailer",
        f"Kb-Override: r-q1-s1_20261201T100000Z revert of {tampered[:10]}")
    rc, data = verify_json(root, "--range", f"{tampered}..HEAD")
    assert rc == 0 and [d["severity"] for d in find(data, "KB310")] == ["info"], data


@pytest.mark.parametrize("damage", [
    lambda t: "---\ntitle: [unclosed\n---\n" + t,  # a frontmatter error (KB102)
    lambda t: t + "\n<<<<<<< ours\n## H3: Ours\nStatus: 待验\n=======\n## H3: Theirs\n"
                  "Status: 待验\n>>>>>>> theirs\n",  # conflict markers
], ids=["frontmatter", "conflict-markers"])
def test_fix_does_not_regenerate_the_dashboard_from_an_unreadable_tree(make_kb, damage):
    """`kb dashboard` refuses to render a tree kb cannot read; `kb verify --fix` leaves the
    stale DASHBOARD.md as it is too, and says why."""
    root = make_repo(make_kb)
    before = (root / "DASHBOARD.md").read_bytes()
    (root / "tree.md").write_text(damage(TREE + "\n## H4: New\nStatus: 待验\nEvidence: (empty)\n"),
                                  encoding="utf-8")
    refused = invoke("dashboard", "--no-commit", cwd=root)
    assert refused.code != 0 and "nothing was written" in refused.stderr, refused.stderr
    res = invoke("verify", "--fix", cwd=root)
    assert "regenerated 1 DASHBOARD.md" not in res.stderr, res.stderr
    assert (root / "DASHBOARD.md").read_bytes() == before
    if "unresolved merge-conflict markers" in res.stderr:  # refused before any fix (whole markers)
        return
    assert "skipped DASHBOARD.md: not regenerated: tree.md has format errors" in res.stderr, \
        res.stderr
    assert "the dashboard would leave out what kb cannot read" in res.stderr
