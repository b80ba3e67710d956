"""``kb.repo``: finding a KB and its three snapshots (worktree, staged, commit).

Every test builds a real repository with the git CLI (cases GIT-01, GIT-02
and GIT-03's staged-index part in cases/README.md).
"""

from __future__ import annotations

import os

import pytest

from conftest import commit_all, git, write_files
from kb import git as kbgit
from kb.errors import EnvironmentError_, NotAKnowledgeBase
from kb.repo import (
    commit_snapshot,
    find_all_kbs,
    find_root,
    open_kb,
    staged_snapshot,
    worktree_snapshot,
)

TREE_V1 = "# Hypothesis Tree\n\n## H1: v1\nStatus: 待验\nEvidence: (empty)\n"
TREE_V2 = "# Hypothesis Tree\n\n## H1: v2\nStatus: 进行中\nEvidence: E001\n"
EXP = "# E001: H1 - measure\n\n**Hypothesis**: H1\n**Date**: 2026-01-02\n**Status**: 进行中\n"
CJK_PATH = "Verified/问题/实验 E001.md"
CJK_CARD = ("# 已验证｜带空格的路径\n- ID：实验 E001\n- 类型: 问题\n- 结论: 真\n- 概率: 1\n"
            "- 分类: 问题\n- 来源: q1\n- 时间: 2026-01-02 10:00:00\n\n## 陈述\n路径里有空格。\n")


def blob(data: str | bytes) -> str:
    return kbgit.blob_id(data.encode() if isinstance(data, str) else data)


# -- discovery --------------------------------------------------------------------


def test_find_root_walks_up(make_kb):
    """kb.toml at the KB root; ``find_root`` from a nested folder finds it, like git finds .git."""
    root = make_kb({"experiments/E001.md": EXP})
    deep = root / "experiments" / "a" / "b"
    deep.mkdir(parents=True)
    assert find_root(deep) == root.resolve()
    kb = open_kb(deep)
    assert kb.root == root.resolve() and kb.top == root.resolve() and kb.prefix == ""


def test_open_kb_without_kb_toml(git_repo):
    """A git repository without kb.toml: NotAKnowledgeBase (exit code 2) saying how to create one."""
    with pytest.raises(NotAKnowledgeBase) as exc:
        open_kb(git_repo)
    assert exc.value.exit_code == 2
    assert "kb init" in str(exc.value)


def test_open_kb_outside_git(tmp_path):
    """kb.toml in a folder that is not in a git work tree: an environment error (exit 2)."""
    (tmp_path / "lone").mkdir()
    (tmp_path / "lone" / "kb.toml").write_text("[kb]\n")
    with pytest.raises(EnvironmentError_) as exc:
        open_kb(tmp_path / "lone")
    assert exc.value.exit_code == 2 and "git" in str(exc.value)


def test_kb_in_a_subfolder(git_repo, make_kb):
    """A KB in ``research/`` of a repository: snapshot paths are KB-relative; files of the
    repository outside the KB are not part of it."""
    root = make_kb({"tree.md": TREE_V1, "experiments/E001.md": EXP}, root=git_repo,
                   subdir="research")
    write_files(git_repo, {"tree.md": TREE_V2, "experiments/E009.md": EXP})
    commit_all(git_repo)
    kb = open_kb(root)
    assert kb.prefix == "research/"
    for snap in (worktree_snapshot(kb), staged_snapshot(kb), commit_snapshot(kb, "HEAD")):
        assert snap.files == {"tree.md": blob(TREE_V1), "experiments/E001.md": blob(EXP)}
        assert snap.formats == {"tree.md": "tree", "experiments/E001.md": "experiment"}
    assert find_all_kbs(git_repo) == ["research/"]


def test_only_kb_formats_are_in_a_snapshot(make_kb):
    """Notes/, Reliable/ and non-.md files are never read; a nested experiment folder's file is
    listed as misplaced (its KB108 warning says it is not read: never silence)."""
    root = make_kb({
        "tree.md": TREE_V1, "Notes/H1.md": TREE_V1, "Reliable/x.md": TREE_V1,
        "experiments/E001.md": EXP, "experiments/old/E002.md": EXP, "experiments/E003.txt": EXP,
        "Logs/Verification/r.json": "{}", "README.md": "# readme\n",
    }, commit=True)
    snap = worktree_snapshot(open_kb(root))
    assert sorted(snap.files) == ["experiments/E001.md", "experiments/old/E002.md", "tree.md"]
    assert snap.formats["experiments/old/E002.md"] == "misplaced"


# -- worktree snapshot ----------------------------------------------------------------


def test_worktree_snapshot_untracked_modified_deleted(make_kb):
    """Committed tree.md + E001 + E002; then tree.md edited, E002 deleted, E003 untracked:
    the working-tree snapshot has the edited blob, E003, and no E002."""
    root = make_kb({"tree.md": TREE_V1, "experiments/E001.md": EXP,
                    "experiments/E002.md": EXP.replace("E001", "E002")}, commit=True)
    (root / "tree.md").write_text(TREE_V2, encoding="utf-8")
    (root / "experiments" / "E002.md").unlink()
    e3 = EXP.replace("E001", "E003")
    (root / "experiments" / "E003.md").write_text(e3, encoding="utf-8")
    kb = open_kb(root)
    snap = worktree_snapshot(kb)
    assert snap.kind == "worktree"
    assert snap.files == {"tree.md": blob(TREE_V2), "experiments/E001.md": blob(EXP),
                          "experiments/E003.md": blob(e3)}
    assert snap.files["tree.md"] == git(root, "hash-object", "tree.md")
    assert snap.read(["tree.md", "experiments/E003.md"]) == {
        "tree.md": TREE_V2.encode(), "experiments/E003.md": e3.encode()}
    # The staged and committed views still hold the old versions.
    staged = staged_snapshot(kb)
    assert staged.files["tree.md"] == blob(TREE_V1) and "experiments/E002.md" in staged.files
    assert "experiments/E003.md" not in staged.files


def test_worktree_snapshot_respects_gitignore(make_kb):
    """An untracked file matched by .gitignore is not part of the working-tree snapshot."""
    root = make_kb({".gitignore": "experiments/E9*.md\n", "tree.md": TREE_V1}, commit=True)
    write_files(root, {"experiments/E900.md": EXP, "experiments/E001.md": EXP})
    assert sorted(worktree_snapshot(open_kb(root)).files) == ["experiments/E001.md", "tree.md"]


def test_snapshot_before_first_commit(make_kb):
    """A repository without HEAD: the worktree snapshot lists the untracked KB files."""
    root = make_kb({"tree.md": TREE_V1})
    assert kbgit.rev_parse("HEAD", root) is None
    assert worktree_snapshot(open_kb(root)).files == {"tree.md": blob(TREE_V1)}
    assert staged_snapshot(open_kb(root)).files == {}


# -- staged snapshot -------------------------------------------------------------------


def test_staged_snapshot_is_the_index_not_the_worktree(make_kb):
    """``git add`` of tree.md v2, then v1 written back to disk: staged = v2, worktree = v1."""
    root = make_kb({"tree.md": TREE_V1}, commit=True)
    (root / "tree.md").write_text(TREE_V2, encoding="utf-8")
    git(root, "add", "tree.md")
    (root / "tree.md").write_text(TREE_V1, encoding="utf-8")
    kb = open_kb(root)
    staged = staged_snapshot(kb)
    assert staged.kind == "staged" and staged.files["tree.md"] == blob(TREE_V2)
    assert staged.read(["tree.md"]) == {"tree.md": TREE_V2.encode()}
    assert worktree_snapshot(kb).files["tree.md"] == blob(TREE_V1)


def test_staged_snapshot_honours_git_index_file(make_kb, monkeypatch, tmp_path):
    """A temporary index built with ``git read-tree HEAD`` + ``git update-index --cacheinfo``
    (as ``git commit -a`` / ``git commit <path>`` do): with GIT_INDEX_FILE pointing at it,
    the staged snapshot is that index; without it, the repository's own index."""
    root = make_kb({"tree.md": TREE_V1, "experiments/E001.md": EXP}, commit=True)
    new_blob = git(root, "hash-object", "-w", "--stdin", input=TREE_V2.encode())
    e2 = EXP.replace("E001", "E002")
    e2_blob = git(root, "hash-object", "-w", "--stdin", input=e2.encode())
    tmp_index = str(tmp_path / "tmp-index")
    env = {"GIT_INDEX_FILE": tmp_index}
    git(root, "read-tree", "HEAD", env=env)
    git(root, "update-index", "--cacheinfo", f"100644,{new_blob},tree.md", env=env)
    git(root, "update-index", "--add", "--cacheinfo", f"100644,{e2_blob},experiments/E002.md",
        env=env)
    git(root, "update-index", "--force-remove", "experiments/E001.md", env=env)
    kb = open_kb(root)

    monkeypatch.setenv("GIT_INDEX_FILE", tmp_index)
    staged = staged_snapshot(kb)
    assert staged.files == {"tree.md": new_blob, "experiments/E002.md": e2_blob}
    assert staged.read(["tree.md"]) == {"tree.md": TREE_V2.encode()}

    monkeypatch.delenv("GIT_INDEX_FILE")
    assert staged_snapshot(kb).files == {"tree.md": blob(TREE_V1), "experiments/E001.md": blob(EXP)}


def test_staged_snapshot_skips_conflicted_entries(make_kb):
    """A merge conflict in tree.md (stages 1-3, no stage 0): tree.md is not in the staged snapshot."""
    root = make_kb({"tree.md": TREE_V1, "experiments/E001.md": EXP}, commit=True)
    git(root, "checkout", "-q", "-b", "other")
    (root / "tree.md").write_text(TREE_V2, encoding="utf-8")
    commit_all(root, "other")
    git(root, "checkout", "-q", "main")
    (root / "tree.md").write_text(TREE_V1.replace("v1", "v3"), encoding="utf-8")
    commit_all(root, "main")
    git(root, "merge", "-q", "other", check=False)
    assert "tree.md" in git(root, "diff", "--name-only", "--diff-filter=U")
    assert sorted(staged_snapshot(open_kb(root)).files) == ["experiments/E001.md"]


# -- commit snapshot ----------------------------------------------------------------------


def test_commit_snapshot_at_a_revision(make_kb):
    """Two commits: the snapshot at the first holds v1 and one experiment, at HEAD v2 and two."""
    root = make_kb({"tree.md": TREE_V1, "experiments/E001.md": EXP}, commit=True)
    first = git(root, "rev-parse", "HEAD")
    e2 = EXP.replace("E001", "E002")
    write_files(root, {"tree.md": TREE_V2, "experiments/E002.md": e2})
    second = commit_all(root, "v2")
    kb = open_kb(root)
    old = commit_snapshot(kb, first)
    assert old.kind == "commit" and old.rev == first
    assert old.files == {"tree.md": blob(TREE_V1), "experiments/E001.md": blob(EXP)}
    assert old.read(["tree.md"]) == {"tree.md": TREE_V1.encode()}
    new = commit_snapshot(kb, second)
    assert new.files == {"tree.md": blob(TREE_V2), "experiments/E001.md": blob(EXP),
                         "experiments/E002.md": blob(e2)}
    assert commit_snapshot(kb, "HEAD~1").files == old.files


def test_commit_snapshot_objects_through_the_index(make_kb):
    """The index parses a commit snapshot too: H1's statement at the old commit is 'v1'."""
    from kb.index import Index

    root = make_kb({"tree.md": TREE_V1}, commit=True)
    write_files(root, {"tree.md": TREE_V2})
    commit_all(root, "v2")
    kb = open_kb(root)
    with Index(kb) as idx:
        rows = [(p, r.id, r.fields()["statement"]) for p, _, r in idx.rows_for(commit_snapshot(kb, "HEAD~1"))]
        assert rows == [("tree.md", "H1", "v1")]
        rows = [(p, r.id, r.fields()["statement"]) for p, _, r in idx.rows_for(commit_snapshot(kb, "HEAD"))]
        assert rows == [("tree.md", "H1", "v2")]


# -- GIT-02: CJK path with spaces under core.quotePath=true ------------------------------------


def test_cjk_path_with_spaces_in_every_snapshot(make_kb):
    """GIT-02: ``Verified/问题/实验 E001.md`` under core.quotePath=true: every snapshot holds the
    real UTF-8 path (git's own porcelain output would quote and octal-escape it)."""
    root = make_kb({CJK_PATH: CJK_CARD, "tree.md": TREE_V1}, commit=True)
    git(root, "config", "core.quotePath", "true")
    assert '"' in git(root, "ls-files", "Verified")  # git itself quotes it
    kb = open_kb(root)
    (root / "tree.md").write_text(TREE_V2, encoding="utf-8")
    untracked = "Verified/命题/新 命题.md"
    write_files(root, {untracked: CJK_CARD})
    assert set(staged_snapshot(kb).files) == {CJK_PATH, "tree.md"}
    assert set(commit_snapshot(kb, "HEAD").files) == {CJK_PATH, "tree.md"}
    wt = worktree_snapshot(kb)
    assert set(wt.files) == {CJK_PATH, "tree.md", untracked}
    assert wt.formats[CJK_PATH] == "verified"


def test_cjk_path_in_index_and_json(make_kb, run_kb):
    """GIT-02 end to end: ``kb index --json`` names the file by its real path (its KB110
    warning), and the index, ``kb ls verified`` and ``kb show`` hold the same path."""
    from kb.index import Index

    root = make_kb({CJK_PATH: CJK_CARD}, commit=True)
    git(root, "config", "core.quotePath", "true")
    r = run_kb("index", "--json", cwd=root)
    assert r.code == 0
    assert [(d["path"], d["line"], d["code"]) for d in r.json()["diagnostics"]] == [
        (CJK_PATH, 2, "KB110")]
    assert CJK_PATH in r.stdout  # written as itself, not \u-escaped
    with Index(open_kb(root)) as idx:
        assert [p for (p,) in idx.db.execute("SELECT path FROM files")] == [CJK_PATH]
        assert [(row.id, row.path) for row in idx.objects()] == [("实验 E001", CJK_PATH)]
    listed = run_kb("ls", "verified", "--json", cwd=root).json()
    assert [(x["id"], x["path"]) for x in listed["objects"]] == [("实验 E001", CJK_PATH)]
    shown = run_kb("show", "实验 E001", "--json", cwd=root).json()
    assert shown["path"] == CJK_PATH


# -- GIT-01: a stale index.lock ---------------------------------------------------------------


def test_stale_index_lock_does_not_stop_reading(make_kb, run_kb):
    """GIT-01: an empty ``.git/index.lock`` left behind: ``kb index`` still works (it never takes
    git's index lock), sees a modified file, and leaves the lock where it was."""
    root = make_kb({"tree.md": TREE_V1, "experiments/E001.md": EXP}, commit=True)
    lock = root / ".git" / "index.lock"
    lock.write_bytes(b"")
    (root / "tree.md").write_text(TREE_V2, encoding="utf-8")
    # Touch the index's stat data so that a refreshing git command would want to write it.
    os.utime(root / "experiments" / "E001.md")
    r = run_kb("index", "--json", cwd=root)
    assert r.code == 0, r.stderr
    assert r.json()["counts"] == {"hypotheses": 1, "experiments": 1}
    assert run_kb("show", "H1", "--json", cwd=root).json()["statement"] == "v2"
    assert lock.exists() and lock.read_bytes() == b""


def test_staged_snapshot_relative_git_index_file(make_kb, monkeypatch, tmp_path):
    """GIT_INDEX_FILE relative to the work tree top (as some git versions give hooks), with
    kb run from a subfolder of the KB: the temporary index is still the one read."""
    root = make_kb({"tree.md": TREE_V1, "experiments/E001.md": EXP}, commit=True)
    new_blob = git(root, "hash-object", "-w", "--stdin", input=TREE_V2.encode())
    env = {"GIT_INDEX_FILE": ".git/kb-test-index"}
    git(root, "read-tree", "HEAD", env=env)
    git(root, "update-index", "--cacheinfo", f"100644,{new_blob},tree.md", env=env)
    monkeypatch.setenv("GIT_INDEX_FILE", ".git/kb-test-index")
    monkeypatch.chdir(root / "experiments")
    assert staged_snapshot(open_kb()).files["tree.md"] == new_blob


def test_read_worktree_never_reads_through_a_link_leaving_the_work_tree(make_kb, tmp_path):
    """``read_worktree`` reads regular files, and symlinks leading inside the work tree;
    a symlinked file or folder leaving it is reported with its target, never read;
    missing files and folders are skipped."""
    from kb.repo import outside_links, read_worktree

    root = make_kb({"experiments/E001.md": EXP, "Problems/q1.md": "# 问题｜一\n"})
    secret = tmp_path / "secret.md"
    secret.write_text("# secret\n", encoding="utf-8")
    away = tmp_path / "away"
    away.mkdir()
    (away / "q9.md").write_text("# far\n", encoding="utf-8")
    (root / "Problems" / "q2.md").symlink_to(secret)
    (root / "Problems" / "q3.md").symlink_to("q1.md")
    # An absolute link leads outside in every other clone: judged outside here too.
    (root / "Problems" / "q4.md").symlink_to(root / "Problems" / "q1.md")
    (root / "Methods").symlink_to(away)
    (root / "Problems" / "dir.md").mkdir()
    paths = ["experiments/E001.md", "Problems/q1.md", "Problems/q2.md", "Problems/q3.md",
             "Problems/q4.md", "Methods/q9.md", "Problems/gone.md", "Problems/dir.md"]
    contents, outside = read_worktree(open_kb(root), paths)
    assert contents == {"experiments/E001.md": EXP.encode(), "Problems/q1.md": "# 问题｜一\n".encode(),
                        "Problems/q3.md": "# 问题｜一\n".encode()}
    assert outside == {"Problems/q2.md": os.path.realpath(secret),
                       "Problems/q4.md": os.path.realpath(root / "Problems" / "q1.md"),
                       "Methods/q9.md": os.path.realpath(away / "q9.md")}
    assert outside == outside_links(open_kb(root), paths)


def test_tree_entries_reads_git_ls_tree_records_with_any_name(tmp_path) -> None:
    """kb's one reader of `git ls-tree -z`: tabs, newlines and bytes that are not UTF-8 in
    a name come back as git holds them (surrogateescape), a symlink and a folder with
    their modes; another command's output is refused."""
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    names = [b"a\tb.md", b"new\nline.md", b"caf\xe9.md", b"sp ace.md"]
    for n in names:
        (repo / os.fsdecode(n)).write_bytes(b"x\n")
    (repo / "d").mkdir()
    (repo / "d" / "in.md").write_bytes(b"y\n")
    os.symlink("sp ace.md", repo / "link.md")
    commit_all(repo, "odd names")
    data = kbgit.run(["ls-tree", "-z", "HEAD"], repo).stdout
    got = {e.path.encode("utf-8", "surrogateescape"): (e.mode, e.type) for e in kbgit.tree_entries(data)}
    assert got == {**{n: ("100644", "blob") for n in names}, b"d": ("040000", "tree"),
                   b"link.md": ("120000", "blob")}
    (entry,) = [e for e in kbgit.tree_entries(data) if e.path == "d"]
    assert entry.oid == git(repo, "rev-parse", "HEAD:d").strip()
    with pytest.raises(ValueError):
        list(kbgit.tree_entries(kbgit.run(["ls-tree", "-z", "--name-only", "HEAD"], repo).stdout))
