"""kb.toml values a tester found mishandled: a `[verdict]` kb cannot use (passed every
check, then `kb verdict` refused it with no line), a number too long for Python's int()
(every command exited 3) and the conflict markers of a merge stopped on kb.toml ("Invalid
statement")."""

from __future__ import annotations

import pytest

from conftest import MakeKB, run_script
from kb.config import config_from_dict, read_toml
from kb.errors import ConfigError

TREE = "# Tree\n\n## H1: First\nStatus: 待验\nEvidence: (empty)\n"


def _config(toml: str):
    from pathlib import Path

    text, data = read_toml(toml.encode("utf-8"))
    return config_from_dict(Path("."), data, text)


def test_a_verdict_kb_cannot_use_is_a_warning_at_its_line_and_the_default_is_used() -> None:
    cfg = _config('[kb]\n[verdict]\nmode = "weird"\nmin_votes = 1\n')
    assert cfg.verdict == {}
    found = {(w.line, w.code): w.message for w in cfg.warnings}
    assert found[(3, "KB001")].startswith("verdict.mode = 'weird' is not one of forced, flat"), found
    assert found[(4, "KB001")].startswith("verdict.min_votes = 1: a verdict takes at least 2"), found
    assert _config('[kb]\n[verdict]\nmode = "flat"\nmin_votes = 3\n').verdict == {
        "mode": "flat", "min_votes": 3}


@pytest.mark.parametrize("value", ["101", "99999999999999999999"])
def test_a_min_votes_no_verdict_gathers_is_a_warning_and_the_default_is_used(value: str) -> None:
    """`min_votes = 99999999999999999999` was read without a word, and every `kb verdict`
    then refused for want of votes: KB001 at its line, as for a value under 2."""
    cfg = _config(f"[kb]\n[verdict]\nmin_votes = {value}\n")
    assert cfg.verdict == {}
    (w,) = [w for w in cfg.warnings if w.code == "KB001"]
    assert w.line == 3 and "more votes than any verdict gathers (at most 100)" in w.message
    assert len(w.message) < 200
    assert _config("[kb]\n[verdict]\nmin_votes = 100\n").verdict == {"min_votes": 100}


def test_kb_verify_lists_the_verdict_warnings(make_kb: MakeKB) -> None:
    root = make_kb({"tree.md": TREE}, config='[kb]\n[verdict]\nmode = "weird"\n', commit=True)
    r = run_script("verify", cwd=root)
    assert "kb.toml:3:1: KB001 [warning] verdict.mode = 'weird'" in r.stdout, r.stdout + r.stderr


def test_a_number_too_long_for_int_is_a_kb_toml_error_at_its_line(make_kb: MakeKB) -> None:
    root = make_kb({"tree.md": TREE}, config="[kb]\n[verdict]\nmin_votes = " + "9" * 4400 + "\n",
                   commit=True)
    r = run_script("ls", "hypotheses", "--json", cwd=root)
    assert r.code == 2 and "Traceback" not in r.stderr, (r.code, r.stderr)
    assert r.json()["error"]["message"] == (
        "kb.toml:3: not valid TOML: a number of more than 4,300 digits")


def test_conflict_markers_in_kb_toml_are_named() -> None:
    toml = '[kb]\n<<<<<<< HEAD\nlocale = "zh"\n=======\nlocale = "en"\n>>>>>>> theirs\n'
    with pytest.raises(ConfigError) as exc:
        _config(toml)
    assert exc.value.line == 2
    assert "a merge left conflict markers in kb.toml" in str(exc.value)


def test_kb301_advises_the_status_word_of_the_kbs_locale(make_kb: MakeKB) -> None:
    """`locale = "en"`: removing a hypothesis is answered with "mark it refuted", the word
    an English KB writes (it said 被推翻)."""
    from conftest import git

    root = make_kb({"tree.md": "# Tree\n\n## H1: First\nStatus: untested\n\n## H2: Second\n"
                    "Status: untested\n"}, config='[kb]\nlocale = "en"\n', commit=True)
    (root / "tree.md").write_text("# Tree\n\n## H1: First\nStatus: untested\n", encoding="utf-8")
    git(root, "commit", "-q", "--no-verify", "-am", "drop H2")
    r = run_script("verify", "--range", "HEAD~1..HEAD", "--format", "json", cwd=root)
    found = [d["message"] for d in r.json()["diagnostics"] if d["code"] == "KB301"] if r.stdout else []
    assert found and "mark it refuted instead" in found[0], r.stdout + r.stderr


@pytest.mark.parametrize("path, said", [("tree.md", "the tree (paths.tree)"),
                                        ("./DASHBOARD.md", "the dashboard (paths.dashboard)"),
                                        ("experiments/log.md", "a file of paths.experiments")])
def test_a_registry_kb_reads_as_another_file_is_a_warning_at_its_line(path: str, said: str) -> None:
    cfg = _config(f'[kb]\n\n[[registry]]\npath = "{path}"\nheading = "^## (?P<id>R\\\\d+)"\n')
    found = {(w.line, w.code): w.message for w in cfg.warnings}
    assert found == {(4, "KB001"): f"[[registry]] #1 path = {path!r} is read as {said}"
                     + (f" ('experiments')" if "experiments" in said else "")
                     + ", not as a registry (ignored)"}, found
    assert _config('[kb]\n\n[[registry]]\npath = "Logs/registry.md"\n').warnings == ()


def test_a_path_written_with_dot_segments_names_the_file_git_lists(make_kb: MakeKB) -> None:
    """`tree = "./tree.md"` named no file git lists: the tree read as empty, a duplicate ID
    and unknown statuses passed every check."""
    assert _config('[kb]\n[paths]\ntree = "./tree.md"\nexperiments = "./exps/"\n').paths["tree"] == "tree.md"
    assert _config('[kb]\n[paths]\nexperiments = "./exps//x/."\n').paths["experiments"] == "exps/x"
    root = make_kb({"tree.md": TREE + "\n## H1: again\nStatus: nope\nEvidence: (empty)\n"},
                   config='[kb]\n[paths]\ntree = "./tree.md"\n', commit=True)
    r = run_script("verify", "--json", cwd=root)
    assert r.code == 1 and {"KB202", "KB205"} <= {d["code"] for d in r.json()["diagnostics"]}, r.stdout


@pytest.mark.parametrize("value", ["[" * 500 + "]" * 500, "{a=" * 400 + "1" + "}" * 400])
def test_a_value_nested_too_deeply_is_a_kb_toml_error_at_its_line(make_kb: MakeKB, value) -> None:
    """`x = [[[[…` 500 deep ended every command with exit 3 (tomllib recurses once a
    level): a kb.toml error at its line, exit 2, as any TOML kb cannot read."""
    root = make_kb({"tree.md": TREE}, config=f"[kb]\n[rules]\nseverity = {value}\n", commit=True)
    r = run_script("ls", "hypotheses", "--json", cwd=root)
    assert r.code == 2 and "Traceback" not in r.stderr, (r.code, r.stderr)
    msg = r.json()["error"]["message"]
    assert "kb.toml:3" in msg and "nested too deeply" in msg, msg
