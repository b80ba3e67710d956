"""A kb.toml ``[paths]`` move (``Kb-Override: paths.<key>``) over records: the move alone is
KB309, accepted by the override naming the key; the records move with it (``git mv`` in
the same commit: nothing lost), or each record the new kb.toml no longer reads is KB301 at
its path, as a deletion is, unless a ``Kb-Override:`` names its ID. Real repositories,
the real hooks for the pre-commit and pre-push checks."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import git, invoke, write_files
from test_verify_support import E001, TREE, codes, find, git_run, make_repo, verify_json

#: (key, its folder, the new folder, a record there, its ID)
MOVES = [("experiments", "experiments", "exps", "experiments/E001.md", "E001"),
         ("problems", "Problems", "Cards/P", "Problems/q1.md", "q1")]


@pytest.fixture
def repo(make_kb) -> Path:
    return make_repo(make_kb, {"tree.md": TREE}, dashboard=False)


def _move_setting(root: Path, key: str, new: str) -> None:
    toml = root / "kb.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + f'\n[paths]\n{key} = "{new}"\n',
                    encoding="utf-8")


def _commit(root: Path, *overrides: str) -> None:
    trailers = "\n".join(f"Kb-Override: {o}" for o in overrides)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", f"move a path\n\n{trailers}")


def _history(data) -> list[str]:
    return [c for c in codes(data) if c.startswith("KB3")]


@pytest.mark.parametrize("key,folder,new,path,rid", MOVES)
def test_a_folder_moved_with_its_records_loses_nothing(repo, monkeypatch, key, folder, new, path,
                                                       rid) -> None:
    # an experiment kb wrote: its ID is in the history's trailers (what the range's KB307
    # knows of the IDs used before it)
    res = invoke("exp", "new", "--hyp", "H2", "Measure the loss curve", cwd=repo)
    assert res.code == 0, res.stderr
    (repo / new).parent.mkdir(parents=True, exist_ok=True)
    git(repo, "mv", folder, new)
    _move_setting(repo, key, new)
    git(repo, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", f"paths.{key} the lab's layout")
    rc, data = verify_json(repo, "--staged")
    assert rc == 0 and _history(data) == ["KB309"], data
    _commit(repo, f"paths.{key} the lab's layout")
    # the range (CI, pre-push) reads the parent with the tip's kb.toml: the records it
    # finds in the new folder are the moved ones, not new IDs (no KB307 either)
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 0 and _history(data) == ["KB309"], data
    assert find(data, "KB309")[0]["severity"] == "info"
    rc, data = verify_json(repo, "--range", "HEAD~2..HEAD")
    assert rc == 0 and _history(data) == ["KB309"], data
    assert "E002" in git(repo, "log", "-1", "--format=%B", "HEAD~1")


@pytest.mark.parametrize("key,folder,new,path,rid", MOVES)
def test_records_left_behind_are_removed_records(repo, monkeypatch, key, folder, new, path,
                                                 rid) -> None:
    _move_setting(repo, key, new)
    git(repo, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", f"paths.{key} the lab's layout")
    for args in (("--staged",), ()):
        rc, data = verify_json(repo, *args)
        (d,) = find(data, "KB301")
        assert rc == 1 and d["path"] == path and d["line"] == 1 and d["blocking"], data
        msg = d["message"]
        assert msg.startswith(f"{'experiment' if rid == 'E001' else 'problem card'} {rid} is no "
                              f"longer read: kb.toml moves paths.{key} from {folder!r} to {new!r}")
        assert f"the new paths.{key} no longer reads {path}" in msg, msg
        assert "git mv" in msg and f"set paths.{key} back to {folder!r}" in msg, msg
        assert f"Kb-Override: {rid} <reason>" in msg, msg
    _commit(repo, f"paths.{key} the lab's layout")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and [(d["path"], d["severity"]) for d in find(data, "KB301")] == [
        (path, "error")], data
    # covered as a deletion is: an override naming the record's ID
    git(repo, "commit", "-q", "--amend", "--no-verify", "-m",
        f"move a path\n\nKb-Override: paths.{key} the lab's layout\nKb-Override: {rid} retired")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    (d,) = find(data, "KB301")
    assert d["severity"] == "info" and d["message"].endswith(
        f"accepted: Kb-Override: {rid} retired"), data
    # what still names the record is judged as for the file deleted: tree.md's Evidence
    # names E001 (KB210, introduced by this commit); nothing names q1
    assert rc == (1 if rid == "E001" else 0), data
    assert [(d["path"], d["blocking"]) for d in find(data, "KB210")] == (
        [("tree.md", True)] if rid == "E001" else []), data


def test_a_tree_left_behind_hides_every_hypothesis(repo, monkeypatch) -> None:
    write_files(repo, {"research/tree.md": "# Hypothesis Tree\n"})
    _move_setting(repo, "tree", "research/tree.md")
    git(repo, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", "paths.tree a new home")
    rc, data = verify_json(repo, "--staged")
    lines = {ln.split(":")[0].lstrip("#").strip(): i
             for i, ln in enumerate(TREE.splitlines(), 1) if ln.startswith("#") and ":" in ln}
    found = {(d["path"], d["line"]) for d in find(data, "KB301")}
    assert rc == 1 and found == {("tree.md", lines[h]) for h in ("H1", "H1.1", "H2")}, data
    # moved with the setting (git mv): the same hypotheses, nothing removed
    git(repo, "mv", "-f", "tree.md", "research/tree.md")
    rc, data = verify_json(repo, "--staged")
    assert rc == 0 and _history(data) == ["KB309"], data


def test_a_range_of_two_moves_reads_each_commit_with_its_own_paths(repo) -> None:
    """The range reads both commits through the tip's kb.toml (``e3``): the first move's
    records are found where its own kb.toml put them (``exps``), not reported."""
    for old, new in (("experiments", "exps"), ("exps", "e3")):
        git(repo, "mv", old, new)
        toml = repo / "kb.toml"
        text = toml.read_text(encoding="utf-8")
        toml.write_text(text.replace(f'"{old}"', f'"{new}"') if old != "experiments"
                        else text + f'\n[paths]\nexperiments = "{new}"\n', encoding="utf-8")
        _commit(repo, "paths.experiments tidy")
    rc, data = verify_json(repo, "--range", "HEAD~2..HEAD")
    assert rc == 0 and _history(data) == ["KB309", "KB309"], data
    # left behind by the first move: reported once, at the commit that hid it
    git(repo, "reset", "-q", "--hard", "HEAD~2")
    for new in ("exps", "e3"):
        toml = repo / "kb.toml"
        text = toml.read_text(encoding="utf-8")
        toml.write_text(text.replace('"exps"', f'"{new}"') if new == "e3"
                        else text + f'\n[paths]\nexperiments = "{new}"\n', encoding="utf-8")
        _commit(repo, "paths.experiments tidy")
    first = git(repo, "rev-parse", "HEAD~1")
    rc, data = verify_json(repo, "--range", "HEAD~2..HEAD")
    (d,) = find(data, "KB301")
    assert rc == 1 and d["path"] == "experiments/E001.md" and d["commit"] == first, data


def test_the_hooks_refuse_the_records_left_behind_and_pass_them_moved(repo, tmp_path) -> None:
    assert invoke("hooks", "install", cwd=repo).code == 0
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    assert git_run(repo, "push", "-q", "origin", "main").returncode == 0
    _move_setting(repo, "experiments", "exps")
    git(repo, "add", "-A")
    env = {"KB_OVERRIDE": "paths.experiments the lab's layout"}
    msg = "move experiments\n\nKb-Override: paths.experiments the lab's layout"
    proc = git_run(repo, "commit", "-q", "-m", msg, env=env)
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode != 0 and "KB301" in out and "experiments/E001.md" in out, out
    git(repo, "mv", "experiments", "exps")
    proc = git_run(repo, "commit", "-q", "-m", msg, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = git_run(repo, "push", "origin", "main")  # pre-push: the range from origin/main
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_records_are_not_read_again_when_kb_toml_stays(repo, monkeypatch) -> None:
    """The hook's hot path: no kb.toml change, no listing of the base's folders, and the
    base's errors (tree.md's KB210, introduced) judged as the base was read."""
    import kb.checks.unread_records as unread

    def refuse(*_args):
        raise AssertionError("read the base's folders although [paths] did not move")

    monkeypatch.setattr(unread, "_judge", refuse)
    monkeypatch.setattr(unread, "own_reading", refuse)
    git(repo, "rm", "-q", "experiments/E001.md")
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and [d["path"] for d in find(data, "KB301")] == ["experiments/E001.md"], data
    assert _blocking(data, "KB210") == [("tree.md", True, False)], data
    rc, data = verify_json(repo)
    assert rc == 1 and [d["path"] for d in find(data, "KB301")] == ["experiments/E001.md"], data
    _commit(repo)
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and _blocking(data, "KB210") == [("tree.md", True, False)], data


# -- Snapshot findings a [paths] move causes are introduced, not pre-existing --------------
# Both sides of a change were read through the change's own kb.toml, so the base, read
# with the new [paths], already lacked what the move hides: tree.md's KB210 "Evidence of
# H1 names E001" looked pre-existing and passed the hooks. The base is now read with its
# own kb.toml when the change moves a [paths] key.

def _blocking(data, code: str) -> list[tuple[str, bool, bool]]:
    return [(d["path"], d["blocking"], d["pre_existing"]) for d in find(data, code)]


def _remote(repo: Path, tmp_path: Path) -> None:
    """kb's hooks installed, and a bare remote holding ``main`` as it is (pushed past them)."""
    assert invoke("hooks", "install", cwd=repo).code == 0
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    assert git_run(repo, "push", "-q", "--no-verify", "origin", "main").returncode == 0


def _out(proc) -> str:
    return (proc.stdout + proc.stderr).decode("utf-8", "replace")


def test_the_hooks_refuse_what_a_move_hides_as_a_deletion_would(repo, tmp_path) -> None:
    """The tester's repro: [paths] moved, the files left behind, the record dropped by an
    override: tree.md's Evidence now names an experiment kb does not read. The pre-commit
    and pre-push hooks refuse it as they refuse the same record deleted."""
    _remote(repo, tmp_path)
    _move_setting(repo, "experiments", "exps")
    git(repo, "add", "-A")
    env = {"KB_OVERRIDE": "paths.experiments reorg\nE001 dropped"}
    msg = "move experiments\n\nKb-Override: paths.experiments reorg\nKb-Override: E001 dropped"
    proc = git_run(repo, "commit", "-q", "-m", msg, env=env)
    out = _out(proc)
    assert proc.returncode != 0, out
    assert "KB210" in out and "names E001" in out and "(pre-existing)" not in out, out
    # the control: the record deleted, the same override (KB210 introduced, refused)
    git(repo, "reset", "-q", "--hard")
    git(repo, "rm", "-q", "experiments/E001.md")
    proc = git_run(repo, "commit", "-q", "-m", "drop E001\n\nKb-Override: E001 dropped",
                   env={"KB_OVERRIDE": "E001 dropped"})
    assert proc.returncode != 0 and "KB210" in _out(proc), _out(proc)
    assert "(pre-existing)" not in _out(proc), _out(proc)
    # committed past the hook: pre-push refuses it (the range from origin/main)
    git(repo, "reset", "-q", "--hard")
    _move_setting(repo, "experiments", "exps")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", msg)
    proc = git_run(repo, "push", "origin", "main")
    out = _out(proc)
    assert proc.returncode != 0 and "KB210" in out and "(pre-existing)" not in out, out
    assert git(repo, "rev-parse", "HEAD~1") == git(repo, "rev-parse", "origin/main")


def test_a_range_judges_its_origin_read_with_its_own_paths(repo) -> None:
    _move_setting(repo, "experiments", "exps")
    _commit(repo, "paths.experiments reorg", "E001 dropped")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and _blocking(data, "KB210") == [("tree.md", True, False)], data
    assert [d["severity"] for d in find(data, "KB301")] == ["info"], data
    rc, data = verify_json(repo, "--rev", "HEAD")
    assert rc == 1 and _blocking(data, "KB210") == [("tree.md", True, False)], data
    # the staged index against that commit: the move is HEAD's, not this change's, and
    # what it left is pre-existing for the next commit
    write_files(repo, {"notes.txt": "x\n"})
    git(repo, "add", "-A")
    rc, data = verify_json(repo, "--staged")
    assert rc == 0 and _blocking(data, "KB210") == [("tree.md", False, True)], data


def _commit_keeps_the_old_error(repo: Path, overrides: tuple[str, ...], tree: str) -> None:
    """Commit what is staged through the pre-commit hook with ``overrides`` (trailers and
    KB_OVERRIDE): it passes, the old KB210 (H2's Evidence names E099) reported pre-existing
    at ``tree``, and the commit's range judges it so."""
    git(repo, "add", "-A")
    msg = "move\n\n" + "\n".join(f"Kb-Override: {o}" for o in overrides)
    proc = git_run(repo, "commit", "-q", "-m", msg, env={"KB_OVERRIDE": "\n".join(overrides)})
    out = _out(proc)
    assert proc.returncode == 0, out
    (line,) = [ln for ln in out.splitlines() if "KB210" in ln]
    assert "names E099" in line and line.endswith("(pre-existing)"), out
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 0 and _blocking(data, "KB210") == [(tree, False, True)], data


def test_an_error_older_than_the_move_stays_pre_existing(repo, tmp_path) -> None:
    """An error the base had before the move, unrelated to it (H2's Evidence names an
    experiment that never existed), stays pre-existing: the hooks pass the move, the
    records it hides accepted by their overrides."""
    text = (repo / "tree.md").read_text(encoding="utf-8")  # H2's Evidence, last in the file
    write_files(repo, {"tree.md": text.rsplit("Evidence: (empty)", 1)[0] + "Evidence: E099\n"})
    git(repo, "commit", "-q", "-a", "--no-verify", "-m", "an old mistake")
    _remote(repo, tmp_path)
    # a move that hides a record (q1, dropped by its override), then one that carries its
    # records along (git mv); [paths] is kb.toml's last table after the first
    _move_setting(repo, "problems", "Cards/P")
    moves = [("problems", ("paths.problems reorg", "q1 retired")),
               ("experiments", ("paths.experiments reorg",))]
    for key, overrides in moves:
        if key == "experiments":
            with (repo / "kb.toml").open("a", encoding="utf-8") as f:
                f.write('experiments = "exps"\n')
            git(repo, "mv", "experiments", "exps")
        _commit_keeps_the_old_error(repo, overrides, "tree.md")
    proc = git_run(repo, "push", "origin", "main")
    assert proc.returncode == 0, _out(proc)
    rc, data = verify_json(repo, "--range", "HEAD~2..HEAD")
    assert rc == 0 and _blocking(data, "KB210") == [("tree.md", False, True)], data


def test_a_tree_left_behind_orphans_the_experiments(repo, monkeypatch) -> None:
    """What the move hides beyond the records named: the experiments that test the
    hypotheses of a tree left behind are KB211, introduced (each hypothesis accepted as
    dropped), not pre-existing."""
    write_files(repo, {"research/tree.md": "# Hypothesis Tree\n"})
    _move_setting(repo, "tree", "research/tree.md")
    git(repo, "add", "-A")
    ovs = ("paths.tree a new home", "H1 gone", "H1.1 gone", "H2 gone")
    monkeypatch.setenv("KB_OVERRIDE", "\n".join(ovs))
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and _blocking(data, "KB211") == [("experiments/E001.md", True, False)], data
    assert {d["severity"] for d in find(data, "KB301")} == {"info"}, data
    _commit(repo, *ovs)
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and _blocking(data, "KB211") == [("experiments/E001.md", True, False)], data


def test_a_move_that_reads_the_old_folder_as_something_else(make_kb, monkeypatch) -> None:
    """The new layout reads the old folder's files as another format (``exps/a/E001.md``
    is misplaced under ``experiments = "exps"``): the base's own reading of those files
    is not the one the index holds (keyed by path and blob), and is made apart."""
    repo = make_kb({"tree.md": TREE, "exps/a/E001.md": E001},
                   config='[kb]\n[paths]\nexperiments = "exps/a"\n', commit=True)
    rc, data = verify_json(repo)
    assert rc == 0, data
    toml = repo / "kb.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('"exps/a"', '"exps"'),
                    encoding="utf-8")
    git(repo, "add", "-A")
    ovs = ("paths.experiments flat", "E001 dropped")
    monkeypatch.setenv("KB_OVERRIDE", "\n".join(ovs))
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and _blocking(data, "KB210") == [("tree.md", True, False)], data
    _commit(repo, *ovs)
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and _blocking(data, "KB210") == [("tree.md", True, False)], data



def test_only_the_layout_is_read_as_the_base_had_it(repo, monkeypatch) -> None:
    """The base is read with its own [paths], every other setting as the change reads
    it: a warning the base had (KB108, a Markdown file in a subfolder of Problems/) that
    the same commit raises to an error is pre-existing, as in a commit that moves no path."""
    write_files(repo, {"Problems/sub/notes.md": "# notes\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "a note")
    rc, data = verify_json(repo)
    assert rc == 0 and _blocking(data, "KB108") == [("Problems/sub/notes.md", False, False)], data
    git(repo, "mv", "experiments", "exps")
    toml = repo / "kb.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[rules]\nseverity = { KB108 = "error" }\n'
                    '\n[paths]\nexperiments = "exps"\n', encoding="utf-8")
    git(repo, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", "paths.experiments tidy")
    rc, data = verify_json(repo, "--staged")
    assert rc == 0 and _blocking(data, "KB108") == [("Problems/sub/notes.md", False, True)], data
    _commit(repo, "paths.experiments tidy")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 0 and _blocking(data, "KB108") == [("Problems/sub/notes.md", False, True)], data


def test_a_move_onto_files_the_base_did_not_read(repo, monkeypatch) -> None:
    """What the new layout reads that the base's did not is the change's too: a folder of
    old copies made the experiments' folder declares E001 twice (KB202) under a name that
    is not its ID (KB208), introduced -- though no record is hidden."""
    write_files(repo, {"old/E001.md": E001, "old/E001-copy.md": E001})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "old copies, not read")
    git(repo, "rm", "-q", "-r", "experiments")
    _move_setting(repo, "experiments", "old")
    git(repo, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", "paths.experiments reuse")
    rc, data = verify_json(repo, "--staged")
    assert not find(data, "KB301"), data  # E001 is still declared: nothing hidden
    assert rc == 1 and _blocking(data, "KB202") == [("old/E001.md", True, False)], data
    assert _blocking(data, "KB208") == [("old/E001-copy.md", True, False)], data
    _commit(repo, "paths.experiments reuse")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and _blocking(data, "KB202") == [("old/E001.md", True, False)], data


def test_an_old_error_in_a_tree_moved_with_git_mv_stays_pre_existing(repo, tmp_path) -> None:
    """The tester's case: `paths.tree` moved and the tree carried along with `git mv`, as
    KB301 advises; an error the tree had before the move (H2's Evidence names E099, which
    never existed) is the same error at the new path: pre-existing, not "introduced"."""
    text = (repo / "tree.md").read_text(encoding="utf-8")
    write_files(repo, {"tree.md": text.rsplit("Evidence: (empty)", 1)[0] + "Evidence: E099\n"})
    git(repo, "commit", "-q", "-a", "--no-verify", "-m", "an old mistake")
    _remote(repo, tmp_path)
    _move_setting(repo, "tree", "research/tree.md")
    (repo / "research").mkdir()
    git(repo, "mv", "tree.md", "research/tree.md")
    _commit_keeps_the_old_error(repo, ("paths.tree a new home",), "research/tree.md")
    proc = git_run(repo, "push", "origin", "main")
    assert proc.returncode == 0, _out(proc)


@pytest.mark.parametrize("edit", ["append", "prepend"])
def test_an_old_error_in_a_tree_moved_and_edited_stays_pre_existing(repo, tmp_path,
                                                                    edit: str) -> None:
    """`paths.tree` moved, the tree carried along with `git mv` and edited in the same
    commit (its blob is new): it sat where the moved key pointed and sits where it points
    now, so its old error (H2's Evidence names E099) is still the same error."""
    text = (repo / "tree.md").read_text(encoding="utf-8")
    write_files(repo, {"tree.md": text.rsplit("Evidence: (empty)", 1)[0] + "Evidence: E099\n"})
    git(repo, "commit", "-q", "-a", "--no-verify", "-m", "an old mistake")
    _remote(repo, tmp_path)  # (kb's hooks installed)
    _move_setting(repo, "tree", "research/tree.md")
    (repo / "research").mkdir()
    git(repo, "mv", "tree.md", "research/tree.md")
    moved = repo / "research" / "tree.md"
    text = moved.read_text(encoding="utf-8")
    note = "A note written while moving the tree.\n"
    moved.write_text(text + "\n" + note if edit == "append" else
                     text.replace("\n", "\n\n" + note, 1), encoding="utf-8")
    _commit_keeps_the_old_error(repo, ("paths.tree a new home",), "research/tree.md")


def test_the_move_says_where_its_override_goes(repo) -> None:
    """The tester put `Kb-Override: paths.tree …` in the commit message only, and the
    pre-commit hook (run before the message exists) still refused: KB309 says both places."""
    _move_setting(repo, "tree", "research/tree.md")
    (repo / "research").mkdir()
    git(repo, "mv", "tree.md", "research/tree.md")
    git(repo, "add", "-A")
    rc, data = verify_json(repo, "--staged")
    (d,) = find(data, "KB309")
    assert rc == 1 and "Kb-Override: paths.tree <reason>" in d["message"], data
    assert "a commit trailer, and the same text in KB_OVERRIDE for the pre-commit hook" in d["message"]


#: (key, its folder, the new folder, a file kept as committed there, its rule)
KEPT_MOVES = [("verified", "Verified", "Proven", "Verified/命题/p1.md", "KB304"),
              ("logs", "Logs", "Journal", "Logs/Verification/r-p1_20260101T000000.json", "KB310")]


@pytest.mark.parametrize("key,folder,new,path,code", KEPT_MOVES)
def test_a_kept_folder_moved_whole_is_no_deletion(make_kb, monkeypatch, key, folder, new, path,
                                                  code) -> None:
    """Files kept as committed (Verified/, the verification records) moved with their
    ``[paths]`` key, each to the same place under the new folder with the same bytes, are
    moved, not deleted or modified; one changed on the way is still ``code``, at its new
    path. A Verified card carried so settles nothing anew (KB312: the base, read through
    the new kb.toml, holds no Verified card; p1 has no verification record here)."""
    record = ('{"r": "r-p1", "verdict": 1, "results": [], "transcript": [], "history": [], '
              '"at": "2026-01-01T00:00:00"}\n')
    root = make_repo(make_kb, {path: record} if key == "logs" else {}, dashboard=False)
    git(root, "mv", folder, new)
    _move_setting(root, key, new)
    git(root, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", f"paths.{key} the lab's layout")
    for args in (("--staged",), ()):
        rc, data = verify_json(root, *args)
        assert rc == 0 and _history(data) == ["KB309"], data
    _commit(root, f"paths.{key} the lab's layout")
    rc, data = verify_json(root, "--range", "HEAD~1..HEAD")
    assert rc == 0 and _history(data) == ["KB309"], data
    # the same move with one file changed on the way: that file, at its new place
    git(root, "reset", "-q", "--hard", "HEAD~1")
    git(root, "mv", folder, new)
    moved = root / new / path.split("/", 1)[1]
    moved.write_bytes(moved.read_bytes() + b"\n")
    _move_setting(root, key, new)
    git(root, "add", "-A")
    # the hook's advice puts HEAD's bytes back at the new place (HEAD has no file there:
    # `git restore` of that path would delete the card)
    rc, data = verify_json(root, "--staged")
    (d,) = find(data, code)
    fix = d["message"].split("its new place: ", 1)[1]
    assert rc == 1 and fix.startswith(f"git show 'HEAD:{path}' > '{new}/"), d["message"]
    subprocess.run(fix, shell=True, cwd=root, check=True)
    rc, data = verify_json(root, "--staged")
    assert rc == 0 and _history(data) == ["KB309"], data
    moved.write_bytes(moved.read_bytes() + b"\n")
    _commit(root, f"paths.{key} the lab's layout")
    rc, data = verify_json(root, "--range", "HEAD~1..HEAD")
    found = find(data, code)
    assert rc == 1 and [(d["path"], d["severity"]) for d in found] == [
        (f"{new}/{path.split('/', 1)[1]}", "error")], data
    assert "modified" in found[0]["message"], found


def test_a_record_a_merge_brings_in_where_the_old_paths_put_it_is_no_longer_read(repo) -> None:
    """main moves [paths] experiments (with its override); a branch from before adds
    experiments/E002.md; merged without git's directory-rename detection, the file stays
    where the branch put it and the merged kb.toml no longer reads it. Judged against the
    branch (read with the branch's own kb.toml), the merge hides E002: KB301, in the
    merge's own hook (--staged) and in the range."""
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "feature")
    assert invoke("exp", "new", "--hyp", "H2", "Second look", cwd=repo).code == 0
    git(repo, "checkout", "-q", "main")
    git(repo, "mv", "experiments", "exps")
    _move_setting(repo, "experiments", "exps")
    _commit(repo, "paths.experiments the lab's layout")
    moved = git(repo, "rev-parse", "HEAD")
    git(repo, "-c", "merge.directoryRenames=false", "merge", "-q", "--no-commit", "--no-ff",
        "feature")
    assert (repo / "experiments/E002.md").is_file() and not (repo / "exps/E002.md").exists()
    rc, data = verify_json(repo, "--staged")
    (d,) = find(data, "KB301")
    assert rc == 1 and d["path"] == "experiments/E002.md" and "no longer read" in d["message"], data
    assert "where its kb.toml no longer reads it" in d["message"] and "undid" not in d["message"]
    git(repo, "commit", "-q", "--no-verify", "--no-edit")
    for spec in (f"{moved}..HEAD", f"{base}..HEAD"):
        rc, data = verify_json(repo, "--range", spec)
        (d,) = find(data, "KB301")
        assert rc == 1 and (d["path"], d["commit"]) == (
            "experiments/E002.md", git(repo, "rev-parse", "HEAD")), (spec, data)


@pytest.mark.parametrize("key,folder,new,path,code", KEPT_MOVES)
def test_a_kept_file_left_behind_by_a_move_is_no_longer_read(make_kb, monkeypatch, key, folder,
                                                             new, path, code) -> None:
    """The setting moved, the files not: every Verified card or record vanished from what
    kb reads without a word (Logs) or with a KB217 warning (Verified)."""
    record = ('{"r": "r-p1", "verdict": 1, "results": [], "transcript": [], "history": [], '
              '"at": "2026-01-01T00:00:00"}\n')
    root = make_repo(make_kb, {path: record} if key == "logs" else {}, dashboard=False)
    _move_setting(root, key, new)
    git(root, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", f"paths.{key} the lab's layout")
    for args in (("--staged",), ()):
        rc, data = verify_json(root, *args)
        found = find(data, code)
        assert rc == 1 and [d["path"] for d in found] == [path], data
        assert found[0]["message"].startswith(f"{path} is no longer read: kb.toml moves "
                                              f"paths.{key} from "), found
    _commit(root, f"paths.{key} the lab's layout")
    rc, data = verify_json(root, "--range", "HEAD~1..HEAD")
    assert rc == 1 and [d["path"] for d in find(data, code)] == [path], data
