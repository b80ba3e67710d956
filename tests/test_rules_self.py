"""Rules cannot be switched off by the change they judge (issue 11): history
rules read the base snapshot's kb.toml, and a change that weakens a rule or
moves a path of the record is itself a history violation (KB309) unless an
override names it."""

from __future__ import annotations

import pytest

from conftest import git, write_files
from test_verify_support import TREE, codes, find, make_repo, verify_json

CARD = "Verified/命题/p1.md"


@pytest.fixture
def repo(make_kb):
    return make_repo(make_kb, {"tree.md": TREE}, dashboard=False)


def _with_toml(root, extra: str) -> None:
    toml = root / "kb.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + extra, encoding="utf-8")


@pytest.mark.parametrize("weakening", [
    '\n[rules]\ndisable = ["KB304"]\n',
    '\n[rules.severity]\nKB304 = "off"\n',
    '\n[rules.severity]\nKB304 = "warning"\n',
    '\n[paths]\nverified = "Elsewhere"\n',
])
def test_a_change_cannot_switch_off_the_rule_it_breaks(repo, weakening: str) -> None:
    _with_toml(repo, weakening)
    write_files(repo, {CARD: "# 已验证｜forged\n- ID: p1\n"})
    git(repo, "add", "-A")
    rc, data = verify_json(repo, "--staged")
    assert rc == 1
    assert [d["path"] for d in find(data, "KB304")] == [CARD]
    assert find(data, "KB309") and all(d["blocking"] for d in find(data, "KB309"))
    # KB309 points at the line that weakens the rule, not at kb.toml's first line
    toml = (repo / "kb.toml").read_text(encoding="utf-8").splitlines()
    weak = [i for i, ln in enumerate(toml, 1) if ln.startswith(("disable", "KB304", "verified"))]
    assert [d["line"] for d in find(data, "KB309")] == weak, (toml, find(data, "KB309"))
    # the same commit, judged in a range (CI, pre-push): the parent's kb.toml governs
    git(repo, "commit", "-q", "--no-verify", "-m", "sneaky")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and "KB304" in codes(data) and "KB309" in codes(data)
    assert [d["line"] for d in find(data, "KB309")] == weak


def test_weakening_alone_needs_an_override(repo) -> None:
    _with_toml(repo, '\n[rules]\ndisable = ["KB306"]\n')
    git(repo, "add", "-A")
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and "KB306" in find(data, "KB309")[0]["message"]
    git(repo, "commit", "-q", "--no-verify", "-m", "relax KB306\n\nKb-Override: KB306 agreed in review")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 0, data
    assert find(data, "KB309")[0]["severity"] == "info"


def test_a_code_kb_does_not_have_weakens_nothing(repo) -> None:
    """``disable = ["KB999"]`` or a severity for ``KB21`` switches off no rule: no KB309
    (whose words assume a rule), a KB001 warning at that line instead; the staged
    check passes. A real code beside it is still KB309."""
    _with_toml(repo, '\n[rules]\ndisable = ["KB999"]\nseverity = { KB21 = "off" }\n')
    git(repo, "add", "-A")
    rc, data = verify_json(repo, "--staged")
    toml = (repo / "kb.toml").read_text(encoding="utf-8").splitlines()
    at = {ln.split(" ")[0]: i for i, ln in enumerate(toml, 1) if ln.startswith(("disable", "severity"))}
    assert rc == 0 and not find(data, "KB309"), data
    assert sorted((d["line"], d["severity"]) for d in find(data, "KB001")) == [
        (at["disable"], "warning"), (at["severity"], "warning")]
    toml_path = repo / "kb.toml"
    toml_path.write_text(toml_path.read_text(encoding="utf-8").replace(
        '["KB999"]', '["KB999", "KB306"]'), encoding="utf-8")
    git(repo, "add", "-A")
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and [d["message"].split(";")[0] for d in find(data, "KB309")] == [
        "kb.toml disables KB306"], data


def _forged_card_commit(repo, branch: str) -> None:
    """A commit on ``branch`` that edits a Verified card, made with --no-verify."""
    git(repo, "checkout", "-q", "-b", branch)
    write_files(repo, {CARD: "# 已验证｜forged\n- ID: p1\n"})
    git(repo, "commit", "-q", "--no-verify", "-am", "forge the card")
    git(repo, "checkout", "-q", "-")


def _hooks(repo) -> None:
    from conftest import invoke

    r = invoke("hooks", "install", cwd=repo)
    assert r.code == 0, r.stderr


def _git_err(repo, *args: str) -> str:
    import os
    import subprocess

    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, env=dict(os.environ))
    return proc.stderr.decode("utf-8", "replace") + proc.stdout.decode("utf-8", "replace")


def test_cherry_pick_without_pre_commit_is_warned_at_once(repo) -> None:
    _forged_card_commit(repo, "side")
    _hooks(repo)
    out = _git_err(repo, "cherry-pick", "side")
    assert "kb: warning" in out and "KB304" in out, out
    assert git(repo, "log", "-1", "--format=%s") == "forge the card"  # made, and said so


def test_rebase_and_amend_are_warned_by_post_rewrite(repo) -> None:
    _forged_card_commit(repo, "side")
    write_files(repo, {"notes.md": "unrelated\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "unrelated")
    _hooks(repo)
    out = _git_err(repo, "rebase", "main", "side")
    assert "kb: warning" in out and "KB304" in out, out
    out = _git_err(repo, "commit", "--amend", "--no-verify", "-m", "forge it again")
    assert "KB304" in out, out
    # a clean commit says nothing
    git(repo, "checkout", "-q", "main")
    write_files(repo, {"notes.md": "still unrelated\n"})
    out = _git_err(repo, "commit", "-q", "-am", "fine")
    assert "kb: warning" not in out


def test_server_pre_receive_refuses_what_clients_skipped(repo, tmp_path) -> None:
    from conftest import invoke

    bare = tmp_path / "server.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    r = invoke("hooks", "install", "--server", cwd=bare)
    assert r.code == 0, r.stderr
    assert (bare / "hooks" / "pre-receive").exists()
    assert invoke("hooks", "install", cwd=bare).code == 1  # client hooks make no sense there
    work = tmp_path / "client"
    git(tmp_path, "clone", "-q", str(bare), str(work))
    write_files(work, {CARD: "# 已验证｜forged\n- ID: p1\n"})
    git(work, "commit", "-q", "--no-verify", "-am", "forge the card")
    out = _git_err(work, "push", "-q", "origin", "HEAD:main")
    assert "KB304" in out and "refused" in out, out
    assert git(bare, "rev-parse", "main") == git(repo, "rev-parse", "HEAD")  # nothing landed
    out = _git_err(work, "push", "-q", "origin", "HEAD:refs/heads/sneaky")  # a new branch too
    assert "KB304" in out
    git(work, "reset", "-q", "--hard", "HEAD~1")
    write_files(work, {"notes.md": "fine\n"})
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "a clean change")
    out = _git_err(work, "push", "-q", "origin", "HEAD:main")
    assert git(bare, "rev-parse", "main") == git(work, "rev-parse", "HEAD"), out


def _git_env_err(repo, env_extra: dict, *args: str) -> tuple[int, str]:
    import os
    import subprocess

    env = dict(os.environ)
    env.update(env_extra)
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, env=env, timeout=120)
    return proc.returncode, proc.stderr.decode("utf-8", "replace") + proc.stdout.decode("utf-8",
                                                                                        "replace")


EDIT_TODO = {"GIT_SEQUENCE_EDITOR": "sed -i -e 's/^pick/edit/'", "GIT_EDITOR": "true"}


def test_rebase_edit_stop_then_continue_is_warned(repo) -> None:
    """`git rebase -i` with an `edit` stop on a commit that edits a Verified card: the pick
    and the `--continue` run no pre-commit check; kb's post hooks say so at the time."""
    _forged_card_commit(repo, "side")
    git(repo, "checkout", "-q", "main")
    write_files(repo, {"notes.md": "unrelated\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "unrelated")
    _hooks(repo)
    git(repo, "checkout", "-q", "side")
    rc, out = _git_env_err(repo, EDIT_TODO, "rebase", "-i", "main")
    assert rc == 0, out
    assert (repo / ".git" / "rebase-merge").is_dir()  # stopped at the edit
    assert "KB304" in out and "kb: warning" in out, out  # the pick (post-commit)
    # the user edits the card further at the stop and amends: post-rewrite (amend) warns
    write_files(repo, {CARD: "# 已验证｜forged at the stop\n- ID: p1\n"})
    git(repo, "add", "-A")
    rc, out = _git_env_err(repo, {}, "commit", "-q", "--amend", "--no-verify", "--no-edit")
    assert rc == 0 and "KB304" in out, out
    rc, out = _git_env_err(repo, EDIT_TODO, "rebase", "--continue")
    assert rc == 0, out
    assert "KB304" in out and "kb: warning" in out, out  # post-rewrite (rebase)
    assert not (repo / ".git" / "rebase-merge").exists()


def _forged_card_behind_a_conflict(repo) -> None:
    """Branch ``side`` forges a Verified card and edits notes.md, which main edits too
    (so rebasing side onto main conflicts); hooks installed, side checked out."""
    git(repo, "checkout", "-q", "-b", "side")
    write_files(repo, {CARD: "# 已验证｜forged\n- ID: p1\n", "notes.md": "side version\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-verify", "-m", "forge the card")
    git(repo, "checkout", "-q", "main")
    write_files(repo, {"notes.md": "main version\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "notes on main")
    _hooks(repo)
    git(repo, "checkout", "-q", "side")


def test_rebase_conflict_resolved_then_continue_is_warned(repo) -> None:
    """The rebased commit conflicts; the user resolves it, `git add`s and continues: git
    commits the resolution with no pre-commit hook. kb warns from post-commit/post-rewrite."""
    _forged_card_behind_a_conflict(repo)
    rc, out = _git_env_err(repo, EDIT_TODO, "rebase", "main")
    assert rc != 0 and "CONFLICT" in out, out
    write_files(repo, {"notes.md": "resolved\n"})
    git(repo, "add", "notes.md")
    rc, out = _git_env_err(repo, {"GIT_EDITOR": "true"}, "rebase", "--continue")
    assert rc == 0, out
    assert "KB304" in out and "kb: warning" in out, out
    assert git(repo, "log", "-1", "--format=%s") == "forge the card"


def test_interactive_rebase_conflict_with_edit_todo_is_warned(repo) -> None:
    """Same conflict under `rebase -i` with every pick turned into `edit`."""
    _forged_card_behind_a_conflict(repo)
    rc, out = _git_env_err(repo, EDIT_TODO, "rebase", "-i", "main")
    assert rc != 0 and "CONFLICT" in out, out
    write_files(repo, {"notes.md": "resolved\n"})
    git(repo, "add", "notes.md")
    rc, out = _git_env_err(repo, EDIT_TODO, "rebase", "--continue")
    assert rc == 0, out
    said = out
    if (repo / ".git" / "rebase-merge").is_dir():  # the edit stop after the resolution
        rc, out = _git_env_err(repo, EDIT_TODO, "rebase", "--continue")
        assert rc == 0, out
        said += out
    assert "KB304" in said and "kb: warning" in said, said


def test_clean_cherry_pick_of_a_card_edit_is_warned(repo) -> None:
    """A clean `git cherry-pick` (no conflict) of a commit editing a Verified card."""
    _forged_card_commit(repo, "side")
    git(repo, "checkout", "-q", "main")
    _hooks(repo)
    rc, out = _git_env_err(repo, {}, "cherry-pick", "side")
    assert rc == 0, out
    assert "KB304" in out, out
    assert out.count("cherry-pick, a rebase or an amend") == 1  # one commit, one warning


def test_the_reading_change_quotes_kb_toml_as_written(repo) -> None:
    """KB309 quotes a regex and the separators as kb.toml writes them: `H\\d+` with one
    backslash (Python's repr doubled it: 'H\\\\d+'), the separators as a list."""
    toml = (repo / "kb.toml").read_text(encoding="utf-8")
    (repo / "kb.toml").write_text(toml.replace("[kb]\n", "[kb]\nid_grammar = 'H\\d+(\\.\\d+)*'\n"
                                               "heading_separators = [':', '\\']\n", 1),
                                  encoding="utf-8")
    git(repo, "commit", "-q", "--no-verify", "-am", "another grammar")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    messages = [d["message"] for d in find(data, "KB309")]
    assert rc == 1 and len(messages) == 2, data
    assert "changes [kb] id_grammar from kb's default to `H\\d+(\\.\\d+)*`: how" in messages[0], messages
    assert ("changes [kb] heading_separators from [`:`, `：`] to [`:`, `\\`]: how"
            in messages[1]), messages
    assert "\\\\" not in messages[0] + messages[1], messages


def test_changing_how_the_record_is_read_needs_an_override(repo) -> None:
    """Another ID grammar can stop kb reading every hypothesis: that kb.toml change is
    KB309 (a range judged on any checkout), accepted only with an override naming it."""
    toml = (repo / "kb.toml").read_text(encoding="utf-8")
    assert toml.startswith("[kb]\n") and "id_grammar" not in toml
    (repo / "kb.toml").write_text(toml.replace("[kb]\n", '[kb]\nid_grammar = "X[0-9]+"\n', 1),
                                  encoding="utf-8")
    git(repo, "commit", "-q", "--no-verify", "-am", "another grammar")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    hits = [d for d in find(data, "KB309") if "id_grammar" in d["message"]]
    assert rc == 1 and len(hits) == 1 and hits[0]["line"] == 2, data
    assert "changes [kb] id_grammar from kb's default to `X[0-9]+`" in hits[0]["message"], hits
    git(repo, "commit", "-q", "--amend", "--no-verify", "-m",
        "another grammar\n\nKb-Override: kb.id_grammar the lab renamed its hypotheses")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert find(data, "KB309") and all(d["severity"] == "info" for d in find(data, "KB309")), data
