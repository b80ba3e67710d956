"""A kb.toml ``[paths]`` move (``Kb-Override: paths.<key>``) over records: the move alone is
KB309, accepted by the override naming the key; the records move with it (``git mv`` in
the same commit: nothing lost), or each record the new kb.toml no longer reads is KB301 at
its path, as a deletion is, unless a ``Kb-Override:`` names its ID. Real repositories,
the real hooks for the pre-commit and pre-push checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, invoke, write_files
from test_verify_support import TREE, codes, find, git_run, make_repo, verify_json

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
    assert rc == 0 and d["severity"] == "info" and d["message"].endswith(
        f"accepted: Kb-Override: {rid} retired"), data


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
    """The hook's hot path: no kb.toml change, no listing of the base's folders."""
    import kb.checks.unread_records as unread

    def refuse(*_args):
        raise AssertionError("read the base's folders although [paths] did not move")

    monkeypatch.setattr(unread, "_judge", refuse)
    git(repo, "rm", "-q", "experiments/E001.md")
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and [d["path"] for d in find(data, "KB301")] == ["experiments/E001.md"], data
    rc, data = verify_json(repo)
    assert rc == 1 and [d["path"] for d in find(data, "KB301")] == ["experiments/E001.md"], data
