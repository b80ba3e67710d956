"""The ``kb`` command line: in-process (click's runner around ``kb_cli.main``) and through
the installed console script (a subprocess), on a copy of ``examples/`` and on small KBs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import kb
from conftest import commit_all, git, git_init, run_script, tree_snapshot, write_files
from kb_cli.main import COMMANDS, cli

TREE = "# Hypothesis Tree\n\n## H1: 数据加载是训练瓶颈\nStatus: 进行中\nEvidence: E001\n"
EXP = "# E001: H1 - 测量读盘\n\n**Hypothesis**: H1\n**Date**: 2026-01-02\n**Status**: 进行中\n"
GBK_EXP = "# E002: H1 - 中文实验\n\n**Status**: 进行中\n".encode("gbk")


def no_traceback(r) -> None:
    assert "Traceback" not in r.stdout + r.stderr


# -- help and version --------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help(run_kb, name):
    """``kb <command> --help`` for every registered command (new ones included): exit 0,
    a usage line, a description, and help text on every option."""
    r = run_kb(name, "--help")
    assert r.code == 0, r.stderr
    assert r.stdout.startswith(f"Usage: kb {name}")
    cmd = cli.get_command(None, name)  # type: ignore[arg-type]
    assert cmd is not None and cmd.name == name
    assert (cmd.help or "").strip(), f"kb {name} has no help text"
    for param in cmd.params:
        if param.param_type_name == "option" and param.name != "help":
            assert (getattr(param, "help", None) or "").strip(), f"kb {name} {param.opts} has no help"


def _commands(group, path=()):
    """Every command under ``group`` with its words (``("hyp", "add")``)."""
    import click

    for name in group.list_commands(None):  # kb's group loads its commands lazily
        cmd = group.get_command(None, name)
        yield (*path, name), cmd
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, (*path, name))


def test_owner_help_states_the_true_default_order(run_kb, monkeypatch, tree_kb):
    """Every --owner whose default is the configured owner names KB_OWNER first, as
    kb.locks.default_owner reads it (it was left out of the help)."""
    found = []
    for words, cmd in _commands(cli):
        for param in cmd.params:
            text = getattr(param, "help", None) or ""
            if "--owner" in param.opts and "kb.owner" in text:
                found.append(words)
                order = [text.find(w) for w in ("KB_OWNER", "kb.owner", "user.email")]
                assert -1 < order[0] < order[1] < order[2], (words, text)
    assert {("hyp", "add"), ("lock", "claim")} <= set(found)
    r = run_kb("hyp", "add", "--help")
    assert "$KB_OWNER, else git config" in " ".join(r.stdout.split())
    # …and that is the order kb follows.
    from kb.locks import default_owner

    git(tree_kb, "config", "kb.owner", "from-config")
    monkeypatch.setenv("KB_OWNER", "from-env")
    assert default_owner(tree_kb) == "from-env"
    monkeypatch.delenv("KB_OWNER")
    assert default_owner(tree_kb) == "from-config"


def test_top_level_help_lists_every_command(run_kb):
    """``kb --help`` names every command of COMMANDS with its one-line summary."""
    r = run_kb("--help")
    assert r.code == 0
    listed = r.stdout.split("Commands:")[1]
    for name in COMMANDS:
        assert re.search(rf"^  {re.escape(name)}(\s|$)", listed, re.MULTILINE), name


def test_version_in_process_and_runner(run_kb):
    """``kb --version`` prints 'kb <version>' and exits 0 (through main() and CliRunner(cli))."""
    r = run_kb("--version")
    assert (r.code, r.stdout) == (0, f"kb {kb.__version__}\n")
    res = CliRunner().invoke(cli, ["--version"])
    assert res.exit_code == 0 and res.output == f"kb {kb.__version__}\n"


def test_click_runner_on_cli_group(example_kb):
    """``CliRunner().invoke(cli, ...)``: the group itself runs ``ls`` with ``--kb``."""
    res = CliRunner().invoke(cli, ["ls", "hypotheses", "--json", "--kb", str(example_kb)])
    assert res.exit_code == 0, res.output
    assert [h["id"] for h in json.loads(res.stdout)["objects"]][:1] == ["H1"]


# -- the example KB -------------------------------------------------------------------


def test_index_examples_is_clean(example_kb, run_kb):
    """``kb index`` on the bundled example KB: exit 0, no error diagnostics, every kind the
    issue asks for (>=3 hypotheses, >=2 experiments, problems, propositions, a method, verified)."""
    r = run_kb("index", "--json", cwd=example_kb)
    assert r.code == 0, r.stdout
    out = r.json()
    assert out["errors"] == 0 and out["failed_files"] == []
    assert [d for d in out["diagnostics"] if d["severity"] == "error"] == []
    c = out["counts"]
    assert c["hypotheses"] >= 3 and c["experiments"] >= 2 and c["problems"] >= 2
    assert c["propositions"] >= 2 and c["methods"] >= 1 and c["verified"] >= 1
    text = run_kb("index", "--stats", cwd=example_kb)
    assert text.code == 0 and "indexed" in text.stderr and "cache reused" in text.stderr
    assert f"{c['hypotheses']} hypotheses, {c['experiments']} experiments" in text.stderr
    assert f"{c['methods']} method{'s' if c['methods'] != 1 else ''}" in text.stderr


def test_ls_examples(example_kb, run_kb):
    """``kb ls``: every kind as a table; hypotheses with id/status/statement; problems by
    priority with ``never`` last; propositions with a probability; ``--status`` in English."""
    r = run_kb("ls", cwd=example_kb)
    assert r.code == 0 and "H1" in r.stdout and "hypothesis" in r.stdout
    listed = run_kb("ls", "hypotheses", "--json", cwd=example_kb).json()
    hyps = listed["objects"]
    assert (listed["kind"], listed["status"], listed["count"]) == ("hypotheses", None, len(hyps))
    assert all({"id", "status", "statement"} <= set(h) for h in hyps)
    assert all(h["status"] in ("待验", "进行中", "被支持", "被推翻") for h in hyps)
    probs = run_kb("ls", "problems", "--json", cwd=example_kb).json()["objects"]
    prios = [p["priority"] for p in probs]
    ints = [p for p in prios if isinstance(p, int)]
    assert prios == sorted(ints) + [p for p in prios if p == "never"]
    assert "never" in prios
    props = run_kb("ls", "propositions", "--json", cwd=example_kb).json()["objects"]
    assert props and all(isinstance(p["probability"], float) for p in props)
    listed = run_kb("ls", "hypotheses", "--status", "supported", "--json", cwd=example_kb).json()
    supported = listed["objects"]
    assert listed["status"] == "supported" and listed["count"] == len(supported)
    assert supported and {h["status"] for h in supported} == {"被支持"}
    assert {h["id"] for h in supported} < {h["id"] for h in hyps}


def test_show_examples(example_kb, run_kb):
    """``kb show``: a hypothesis with file, line and links; a problem with its entries;
    the problem and its Verified card are not called a duplicate."""
    h = run_kb("show", "H1.1", "--json", cwd=example_kb).json()
    assert h["path"] == "tree.md" and h["line"] > 1 and h["parent"] == "H1"
    assert {"links_out", "links_in", "dependencies", "dependants", "experiments"} <= set(h)
    assert {"to": "H1", "kind": "parent"} in h["links_out"]
    text = run_kb("show", "H1.1", cwd=example_kb)
    assert text.code == 0 and f"tree.md:{h['line']}" in text.stdout
    q = run_kb("show", "q1", "--json", cwd=example_kb).json()
    q = q if isinstance(q, list) else [q]
    problem = next(x for x in q if x["kind"] == "problem")
    assert problem["path"] == "Problems/q1.md"
    e = problem["entries"][0]
    assert set(e) >= {"kind", "number", "title", "probability", "status", "line"}
    r = run_kb("show", "q1", cwd=example_kb)
    assert r.code == 0 and "duplicate" not in r.stderr
    assert "entries:" in r.stdout and "解法 1｜" in r.stdout


def test_find_examples(example_kb, run_kb):
    """``kb find``: case-insensitive over IDs, titles, statements; no match exits 0 with a
    message on stderr; an empty TEXT is a usage error (2)."""
    r = run_kb("find", "√2", "--json", cwd=example_kb)
    assert r.code == 0 and "q1" in [x["id"] for x in r.json()["objects"]]
    assert r.json()["text"] == "√2" and r.json()["count"] == len(r.json()["objects"])
    r = run_kb("find", "PYTEST", "--json", cwd=example_kb)
    assert "H1" in [x["id"] for x in r.json()["objects"]]
    r = run_kb("find", "no-such-text-anywhere", cwd=example_kb)
    assert (r.code, r.stdout) == (0, "") and "no object matches" in r.stderr
    r = run_kb("find", "  ", cwd=example_kb)
    assert r.code == 2 and r.stderr.startswith("kb: ")


@pytest.mark.parametrize("args", [("index", "--json"), ("ls", "--json"), ("show", "H1", "--json"),
                                  ("find", "H1", "--json")])
def test_json_is_only_json_and_keeps_non_ascii(example_kb, run_kb, args):
    """Every ``--json`` output is one JSON document on stdout, non-ASCII written as itself."""
    r = run_kb(*args, cwd=example_kb)
    assert r.code == 0
    json.loads(r.stdout)
    assert "\\u" not in r.stdout
    if args[0] != "index":  # the clean example KB has no diagnostics to print
        assert any(ord(c) > 127 for c in r.stdout)


# -- the console script -----------------------------------------------------------------


def test_console_script(example_kb):
    """The installed ``kb`` script: --version, index --json (UTF-8, non-ASCII kept), ls, show,
    find; and not-a-KB exits 2 with one line on stderr."""
    r = run_script("--version", cwd=example_kb)
    assert (r.code, r.stdout) == (0, f"kb {kb.__version__}\n")
    r = run_script("index", "--json", cwd=example_kb)
    assert r.code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["errors"] == 0 and out["counts"]["hypotheses"] >= 3
    r = run_script("ls", "hypotheses", "--json", cwd=example_kb)
    statuses = {h["status"] for h in json.loads(r.stdout)["objects"]}
    assert statuses <= {"待验", "进行中", "被支持", "被推翻"} and statuses
    assert "\\u" not in r.stdout and "被支持" in r.stdout
    r = run_script("show", "H1", cwd=example_kb)
    assert r.code == 0 and "tree.md:" in r.stdout
    r = run_script("find", "√2", cwd=example_kb)
    assert r.code == 0 and "q1" in r.stdout
    r = run_script("show", "NOPE", cwd=example_kb)
    assert r.code == 1


def test_console_script_not_a_kb(tmp_path):
    """The script outside any KB: exit 2, exactly one line on stderr, nothing on stdout."""
    r = run_script("ls", cwd=tmp_path)
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("kb: ")
    no_traceback(r)


# -- bad input and errors ------------------------------------------------------------------


def test_gbk_file_fails_but_rest_is_indexed(make_kb, run_kb):
    """A KB with a GBK-encoded experiment: ``kb index`` exits 1, names the file and the byte,
    says how many files failed, and still indexes tree.md and the UTF-8 experiment."""
    root = make_kb({"tree.md": TREE, "experiments/E001.md": EXP, "experiments/E002.md": GBK_EXP},
                   commit=True)
    r = run_kb("index", cwd=root)
    assert r.code == 1
    assert "experiments/E002.md:1:1: KB101" in r.stdout
    assert "not valid UTF-8 (byte 0xd6 at offset 13)" in r.stdout
    assert "1 error(s) in 1 file(s)" in r.stderr
    no_traceback(r)
    out = run_kb("index", "--json", cwd=root).json()
    assert out["failed_files"] == ["experiments/E002.md"]
    assert out["counts"] == {"hypotheses": 1, "experiments": 1}
    assert run_kb("show", "E001", cwd=root).code == 0


def test_show_unknown_id(example_kb, run_kb):
    """``kb show NOPE``: exit 1, a message naming the ID on stderr, nothing on stdout;
    with ``--json`` the error is also a JSON object on stdout."""
    r = run_kb("show", "NOPE", cwd=example_kb)
    assert r.code == 1 and r.stdout == "" and "'NOPE'" in r.stderr
    r = run_kb("show", "NOPE", "--json", cwd=example_kb)
    assert r.code == 1 and "'NOPE'" in r.stderr
    err = r.json()["error"]
    assert err["exit_code"] == 1 and err["kind"] == "not_found" and "'NOPE'" in err["message"]


def test_json_errors_for_usage_and_refusals(example_kb, run_kb):
    """Every failing ``--json`` command prints ``{"error": …}`` (usage errors too), and
    the plain form prints nothing on stdout."""
    r = run_kb("hyp", "add", "--json", cwd=example_kb)
    assert r.code == 2 and r.json()["error"]["kind"] == "usage"
    assert "STATEMENT" in r.json()["error"]["message"]
    r = run_kb("hyp", "status", "H1", "bogus", "--json", cwd=example_kb)
    assert r.code == 2 and r.json()["error"]["kind"] == "usage" and "accepted: 待验|untested" in r.json()["error"]["message"]
    assert run_kb("hyp", "status", "H1", "bogus", cwd=example_kb).stdout == ""


@pytest.mark.parametrize("fmt", [("--format", "json"), ("--format=json",)])
def test_format_json_errors_print_the_error_object(example_kb, run_kb, fmt):
    """``--format json`` asks for JSON as ``--json`` does: a failing command prints the
    error object on stdout (a CI job parsing it gets input), ``--format text`` nothing."""
    r = run_kb("verify", "--range", "nope..HEAD", *fmt, cwd=example_kb)
    assert r.code == 2, (r.stdout, r.stderr)
    err = r.json()["error"]
    assert err["exit_code"] == 2 and "nope" in err["message"]
    plain = run_kb("verify", "--range", "nope..HEAD", "--format", "text", cwd=example_kb)
    assert plain.code == 2 and plain.stdout == ""


@pytest.mark.parametrize("args", [("index",), ("index", "--json"), ("ls",), ("show", "H1"),
                                  ("find", "x")])
def test_not_a_kb_exits_2(tmp_path, run_kb, args):
    """Outside any KB: exit 2, a one-line ``kb: …`` message naming ``kb init``, no traceback."""
    r = run_kb(*args, cwd=tmp_path)
    assert r.code == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("kb: ") and "kb init" in r.stderr
    if "--json" in args:
        assert r.json()["error"]["exit_code"] == 2 and "kb init" in r.json()["error"]["message"]
    else:
        assert r.stdout == ""
    no_traceback(r)


def test_usage_errors_exit_2(example_kb, run_kb):
    """An unknown kind or option is a usage error (2)."""
    assert run_kb("ls", "gizmos", cwd=example_kb).code == 2
    assert run_kb("index", "--no-such-option", cwd=example_kb).code == 2
    assert run_kb("no-such-command").code == 2


def test_internal_bug_exits_3_without_traceback(example_kb, run_kb, monkeypatch):
    """An unexpected exception inside a command: exit 3, one short message, no traceback."""
    import kb.api

    def boom(*a, **k):
        raise ValueError("simulated bug")

    monkeypatch.setattr(kb.api, "index_kb", boom)
    r = run_kb("index", cwd=example_kb)
    assert r.code == 3
    assert "internal error: ValueError: simulated bug" in r.stderr
    no_traceback(r)


def test_kb_option_acts_elsewhere(example_kb, tmp_path, run_kb):
    """``--kb PATH`` answers for that KB from an unrelated current directory."""
    r = run_kb("show", "H1", "--json", "--kb", str(example_kb), cwd=tmp_path)
    assert r.code == 0 and r.json()["id"] == "H1"


# -- kb init ---------------------------------------------------------------------------------


def test_init_empty_folder(tmp_path, run_kb):
    """``kb init`` in an empty folder: runs ``git init``, writes kb.toml, tree.md (title only),
    DASHBOARD.md (what ``kb dashboard`` renders), .gitignore (.kb/), .gitattributes; then
    ``kb index`` works on it."""
    from kb.render.dashboard import render_dashboard

    target = tmp_path / "new"
    target.mkdir()
    r = run_kb("init", "--json", cwd=target)
    assert r.code == 0, r.stderr
    out = r.json()
    assert out["git_initialised"] is True and Path(out["root"]) == target.resolve()
    assert sorted(out["written"]) == sorted(
        ["kb.toml", "tree.md", "DASHBOARD.md", ".gitignore", ".gitattributes"])
    assert (target / ".git").is_dir()
    assert (target / "tree.md").read_text(encoding="utf-8") == "# Hypothesis Tree\n"
    assert (target / "DASHBOARD.md").read_text(encoding="utf-8") == render_dashboard([], [], None, "zh")
    assert (target / ".gitignore").read_text().splitlines() == [".kb/"]
    assert "DASHBOARD.md merge=kb-dashboard" in (target / ".gitattributes").read_text()
    assert 'locale = "zh"' in (target / "kb.toml").read_text(encoding="utf-8")
    r = run_kb("index", "--json", cwd=target)
    assert r.code == 0 and r.json()["counts"] == {} and r.json()["diagnostics"] == []
    commit_all(target, "kb init")
    assert git(target, "status", "--porcelain") == ""


def test_init_directory_argument_and_locale(tmp_path, run_kb):
    """``kb init DIR --locale en`` creates DIR and writes ``locale = "en"``; text output lists files."""
    r = run_kb("init", str(tmp_path / "a" / "b"), "--locale", "en", cwd=tmp_path)
    assert r.code == 0
    assert "wrote kb.toml" in r.stdout and "initialised an empty git repository" in r.stderr
    assert 'locale = "en"' in (tmp_path / "a" / "b" / "kb.toml").read_text()


def test_init_in_existing_repo(git_repo, run_kb):
    """``kb init sub`` inside a repository with a commit: no second ``git init`` (no nested .git,
    HEAD unchanged); the existing .gitignore gets ``.kb/`` appended once, its lines kept."""
    write_files(git_repo, {".gitignore": "node_modules/\n*.log", "README.md": "hi\n"})
    head = commit_all(git_repo, "first")
    git_dir_before = tree_snapshot(git_repo / ".git")
    r = run_kb("init", "--json", cwd=git_repo)
    assert r.code == 0, r.stderr
    assert r.json()["git_initialised"] is False
    assert ".gitignore" in r.json()["appended"]
    assert (git_repo / ".gitignore").read_text() == "node_modules/\n*.log\n.kb/\n"
    after = tree_snapshot(git_repo / ".git")
    # Only the clone's config changed: kb's merge drivers are registered (team work).
    assert after.pop("config") != git_dir_before.pop("config")
    assert after == git_dir_before
    assert "kb_cli.merge_driver tree" in git(git_repo, "config", "merge.kb-tree.driver")
    assert git(git_repo, "rev-parse", "HEAD") == head

    sub = git_repo / "research"
    r = run_kb("init", str(sub), cwd=git_repo)
    assert r.code == 0 and "initialised" not in r.stderr
    assert not (sub / ".git").exists() and (sub / "kb.toml").is_file()
    assert git(sub, "rev-parse", "--show-toplevel") == str(git_repo.resolve())


def test_init_gitignore_already_has_the_line(git_repo, run_kb):
    """An existing .gitignore that already lists ``.kb/``: left byte for byte as it was."""
    original = b"# mine\r\n.kb/\r\nbuild/\r\n"
    (git_repo / ".gitignore").write_bytes(original)
    r = run_kb("init", "--json", cwd=git_repo)
    assert r.code == 0
    assert ".gitignore" not in r.json()["appended"] + r.json()["written"]
    assert (git_repo / ".gitignore").read_bytes() == original
    assert run_kb("init", "--json", str(git_repo / "x"), cwd=git_repo).code == 0
    assert (git_repo / "x" / ".gitignore").read_text() == ".kb/\n"


def test_init_twice_refuses_and_changes_nothing(tmp_path, run_kb):
    """A second ``kb init`` on the same folder: exit 1, a message, every file's bytes unchanged."""
    target = tmp_path / "kb"
    assert run_kb("init", str(target)).code == 0
    (target / "tree.md").write_text(TREE, encoding="utf-8")
    before = tree_snapshot(target)
    for args in (("init", str(target)), ("init", str(target), "--layout", "research")):
        r = run_kb(*args)
        assert r.code == 1
        assert "already a KB" in r.stderr and r.stderr.count("\n") == 1
        assert tree_snapshot(target) == before


def test_init_refuses_over_an_existing_tree(git_repo, run_kb):
    """A folder that holds a tree.md but no kb.toml: refused (exit 1), nothing written."""
    (git_repo / "tree.md").write_text(TREE, encoding="utf-8")
    before = tree_snapshot(git_repo)
    r = run_kb("init", str(git_repo))
    assert r.code == 1 and "tree.md" in r.stderr
    assert tree_snapshot(git_repo) == before


def test_init_research_layout(tmp_path, run_kb):
    """``kb init --layout research``: .research/tree.md, .research/DASHBOARD.md, kb.toml paths;
    an experiment under .research/experiments is indexed."""
    target = tmp_path / "r"
    r = run_kb("init", str(target), "--layout", "research", "--json")
    assert r.code == 0
    assert sorted(r.json()["written"]) == sorted(
        ["kb.toml", ".research/tree.md", ".research/DASHBOARD.md", ".gitignore", ".gitattributes"])
    assert not (target / "tree.md").exists()
    assert ".research/DASHBOARD.md merge=kb-dashboard" in (target / ".gitattributes").read_text()
    write_files(target, {".research/tree.md": TREE, ".research/experiments/E001.md": EXP})
    r = run_kb("index", "--json", cwd=target)
    assert r.code == 0, r.stdout
    assert r.json()["counts"] == {"hypotheses": 1, "experiments": 1}
    shown = run_kb("show", "E001", "--json", cwd=target).json()
    assert shown["path"] == ".research/experiments/E001.md"


def test_init_script(tmp_path):
    """The console script runs ``kb init`` too (templates found by the installed package)."""
    r = run_script("init", "k", cwd=tmp_path)
    assert r.code == 0, r.stderr
    assert (tmp_path / "k" / "kb.toml").is_file() and (tmp_path / "k" / ".git").is_dir()


def test_nested_repo_git_init_not_rerun(tmp_path, run_kb):
    """``kb init`` at the top of a fresh (no commit) repository: it is not re-initialised."""
    repo = git_init(tmp_path / "fresh")
    marker = repo / ".git" / "description"
    marker.write_text("keep me\n")
    r = run_kb("init", "--json", cwd=repo)
    assert r.code == 0 and r.json()["git_initialised"] is False
    assert marker.read_text() == "keep me\n"


def test_unknown_kb_toml_key_is_a_warning_with_its_line(make_kb, run_kb):
    """[kb]
    locale = "zh"
    colour = 1   <- line 3: KB001 warning naming kb.colour, exit 0"""
    root = make_kb({"tree.md": "# Hypothesis Tree\n"},
                   config='[kb]\nlocale = "zh"\ncolour = 1\n')
    r = run_kb("index", cwd=root)
    assert r.code == 0
    assert "kb.toml:3:1: KB001" in r.stdout and "kb.colour" in r.stdout


def test_what_kb_toml_names_and_kb_does_not_read_is_a_warning_with_its_line(make_kb, run_kb):
    """A rule code kb does not have (``disable``, ``severity``), a registry kind other
    than ``record`` and a ``[paths] tree`` with no file change nothing: each is a
    warning at its line (KB001, KB004) in ``kb index`` and ``kb verify``, exit 0,
    where they passed without a word."""
    config = ('[paths]\ntree = "trees.md"\n\n[rules]\ndisable = ["KB999", "KB216"]\n'
              'severity = { KB21 = "warning", KB240 = "error" }\n\n'
              '[[registry]]\npath = "problems.md"\nkind = "problem"\n')
    root = make_kb({"tree.md": "# Hypothesis Tree\n"}, config=config)
    r = run_kb("index", cwd=root)
    assert r.code == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("kb.toml:")]
    assert [ln.split(" [")[0] for ln in lines] == [
        "kb.toml:2:1: KB004", "kb.toml:5:1: KB001", "kb.toml:6:1: KB001", "kb.toml:10:1: KB001"], lines
    assert "'trees.md': no such file" in lines[0] and "'KB999'" in lines[1] and "'KB21'" in lines[2]
    assert "kind = 'problem'" in lines[3] and "KB216" not in r.stdout and "KB240" not in r.stdout
    r = run_kb("verify", "--json", cwd=root)
    warned = sorted((d["code"], d["line"]) for d in r.json()["diagnostics"] if d["path"] == "kb.toml")
    assert r.code == 0 and warned == [("KB001", 5), ("KB001", 6), ("KB001", 10), ("KB004", 2)], r.stdout
    # the file named there, the warning goes; the default tree.md may be absent (a KB of cards)
    (root / "tree.md").rename(root / "trees.md")
    assert "KB004" not in run_kb("index", cwd=root).stdout
    root = make_kb({"Problems/q1.md": "# 问题｜a\n- ID: q1\n"})
    assert "KB004" not in run_kb("index", cwd=root).stdout


@pytest.mark.parametrize("tree", ["tree.md/", "trees.md"])
def test_a_tree_path_with_no_file_warns_a_listing_and_refuses_a_write(tree_kb, run_kb, tree):
    """``[paths] tree = "tree.md/"`` names a folder (pathlib dropped the '/': kb read
    tree.md, then git could not hash 'tree.md/', exit 2) and "trees.md" no file: `kb ls`
    says KB004 on stderr (it printed "(none)" without a word), `kb hyp add` refuses (1)
    and writes nothing."""
    with open(tree_kb / "kb.toml", "a", encoding="utf-8") as f:
        f.write(f'[paths]\ntree = "{tree}"\n')
    git(tree_kb, "commit", "-qam", "move the tree")
    r = run_kb("ls", "hypotheses", cwd=tree_kb)
    assert r.code == 0 and "KB004" in r.stderr and f"paths.tree = '{tree}'" in r.stderr, r.stderr
    assert "KB004" not in run_kb("ls", "problems", cwd=tree_kb).stderr
    before = git(tree_kb, "rev-parse", "HEAD")
    for args in (("hyp", "add", "x"), ("hyp", "add", "x", "--json")):
        r = run_kb(*args, cwd=tree_kb)
        assert r.code == 1, (r.code, r.stderr)
        assert "git hash-object" not in r.stderr and tree in r.stderr, r.stderr
    assert git(tree_kb, "rev-parse", "HEAD") == before
    assert git(tree_kb, "status", "--porcelain") == ""


@pytest.mark.parametrize("config, placed", [
    ('registry = [ { path = "p.md", kind = "nope" } ]\n', [("KB001", 2)]),
    ('paths = { tree = "gone.md" }\n', [("KB004", 2)]),
    ('rules.severity.KB779 = "error"\n', [("KB001", 2)]),
    ('rules = { disable = ["KB778"] }\n', [("KB001", 2)]),
    ('[rules]\ndisable = [\n  "KB216",\n  "KB777",\n  "",\n]\n', [("KB001", 5), ("KB001", 6)]),
    ('[rules]\nseverity.KB55 = "off"\ncolour.x = 1\n', [("KB001", 3), ("KB001", 4)]),
    ('registry = [\n  { path = "p.md" },\n  { path = "q.md", kind = "x" },\n]\n', [("KB001", 2)]),
    # accepted and never read before: the verdict's bounds are VIBEMATH-V3's, not a setting
    ('[verdict]\nmode = "flat"\nthreshold = 0.8\n', [("KB001", 4)]),
])
def test_kb_toml_warnings_are_placed_in_every_form_of_table(make_kb, run_kb, config: str,
                                                               placed: list) -> None:
    """Top-level inline tables, dotted keys and arrays of one code a line: each warning
    at the line that names its key or code (line 1 is a comment), never line 0 or 1."""
    root = make_kb({"tree.md": "# Hypothesis Tree\n"}, config="# settings\n" + config)
    r = run_kb("index", "--json", cwd=root)
    found = [(d["code"], d["line"]) for d in r.json()["diagnostics"] if d["path"] == "kb.toml"]
    assert r.code == 0 and found == placed, r.stdout


def test_an_unknown_paths_key_is_ignored_whatever_its_value(make_kb, run_kb) -> None:
    """``[paths] bogus = 1`` was an internal error of every command (its value taken for
    a path), and ``bogus = "x"`` staged was KB309 ("moves paths.bogus from None"): an
    unknown key is KB001 and nothing else."""
    root = make_kb({"tree.md": "# Hypothesis Tree\n"})
    commit_all(root, "base")
    toml = root / "kb.toml"
    base = toml.read_text(encoding="utf-8")
    for value in ("1", '"x"', "[1, 2]"):
        toml.write_text(base + f"\n[paths]\nbogus = {value}\n", encoding="utf-8")
        git(root, "add", "kb.toml")
        for args in (("index", "--json"), ("verify", "--json"), ("verify", "--staged", "--json")):
            r = run_kb(*args, cwd=root)
            codes = [d["code"] for d in r.json()["diagnostics"] if d["path"] == "kb.toml"]
            assert r.code == 0 and codes == ["KB001"], (value, args, r.stdout, r.stderr)


def test_kb004_judges_the_snapshot_checked(make_kb, run_kb) -> None:
    """KB004 looks at the files of the snapshot being checked, not at the folder: a staged
    kb.toml naming a tree that is only an untracked file is warned of; a tree staged and
    then deleted from the folder is not; a committed tree path never committed is warned
    of in a range whatever lies in the folder; a symlink to nothing holds no tree."""
    root = make_kb({"tree.md": "# Hypothesis Tree\n"})
    commit_all(root, "base")
    toml = root / "kb.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + '\n[paths]\ntree = "t2.md"\n', encoding="utf-8")
    (root / "t2.md").write_text("# Hypothesis Tree\n", encoding="utf-8")
    git(root, "add", "kb.toml")

    def kb004(*args: str) -> int:
        r = run_kb("verify", *args, "--json", cwd=root)  # exit 1: KB309, the tree moved
        return len([d for d in r.json()["diagnostics"] if d["code"] == "KB004"])

    assert kb004("--staged") == 1 and kb004() == 0
    git(root, "add", "t2.md")
    (root / "t2.md").unlink()
    assert kb004("--staged") == 0 and kb004() == 1
    git(root, "rm", "-q", "--cached", "t2.md")
    git(root, "commit", "-q", "--no-verify", "-m", "tree moved, not committed")
    (root / "t2.md").write_text("# Hypothesis Tree\n", encoding="utf-8")
    assert kb004("--range", "HEAD~1..HEAD") == 1
    (root / "t2.md").unlink()
    (root / "t2.md").symlink_to("nowhere.md")
    assert "KB004" in run_kb("index", cwd=root).stdout


def test_ctrl_c_while_the_command_line_is_imported_is_an_abort_not_a_traceback(tmp_path) -> None:
    """A Ctrl-C in the first milliseconds of a command, while Python imports click and
    kb, ends it as one during the command does: ``kb: aborted``, exit code 2. The
    console script's own module imports nothing heavy before them; the interrupt
    arrives here as the command line's module is imported, in a real interpreter."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'kb_cli.main':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "sys.argv = ['kb', '--version']\n"
        "from kb_cli.console import run\n"
        "run()\n")
    got = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert (got.returncode, got.stderr, got.stdout) == (2, "kb: aborted\n", "")
    script = script.replace("raise KeyboardInterrupt", "pass")  # no interrupt: it runs
    got = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert got.returncode == 0 and got.stdout.startswith("kb") and "Traceback" not in got.stderr


# -- arguments that are not UTF-8 ---------------------------------------------------------


def _run_bytes(args: list[bytes], cwd: Path):
    """The installed ``kb`` with byte arguments (a shell's ``$'\\xff'``): Python hands kb
    undecodable bytes as lone surrogates."""
    import subprocess

    from conftest import kb_script, source_env

    return subprocess.run([kb_script().encode(), *args], cwd=cwd, capture_output=True,
                          env=source_env(), timeout=60)


@pytest.mark.parametrize("args, number", [
    ([b"show", b"\xff", b"--json"], 2),
    ([b"find", b"x\xffy", b"--json"], 2),
    ([b"log", b"\xff", b"--json"], 2),
    ([b"verdict", b"q2#\xff", b"--vote", b"alice=1", b"--json"], 2),
    ([b"hyp", b"add", b"\xff", b"--parent", b"H1", b"--json"], 3),
    ([b"hyp", b"add", b"A statement", b"--parent", b"H\xff", b"--json"], 5),
    ([b"--json", b"hyp", b"add", b"caf\xc3\xa9 \xff", b"--json"], 4),
])
def test_an_argument_not_utf8_is_a_usage_error_naming_it(example_kb: Path, args: list[bytes],
                                                        number: int) -> None:
    """Every command, reads and writes: exit 2 (not 3, an internal error), the usage error
    object under --json naming the argument (its bytes escaped), and nothing written."""
    before = tree_snapshot(example_kb)
    proc = _run_bytes(args, example_kb)
    out, errs = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")
    assert proc.returncode == 2, (out, errs)
    error = json.loads(out)["error"]
    assert (error["kind"], error["exit_code"]) == ("usage", 2)
    shown = args[number - 1].decode("utf-8", "backslashreplace")
    assert error["message"].startswith(f"argument {number} '{shown}' is not valid UTF-8"), error
    assert errs == f"kb: {error['message']}\n"
    assert "internal error" not in errs and "Traceback" not in errs
    assert tree_snapshot(example_kb) == before


def test_an_argument_not_utf8_in_text_mode(example_kb: Path) -> None:
    """Without --json: the one stderr line, no JSON on stdout."""
    proc = _run_bytes([b"show", b"\xff"], example_kb)
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr.decode("utf-8").startswith("kb: argument 2 '\\xff' is not valid UTF-8")


def test_a_path_argument_not_utf8_still_works(tmp_path: Path) -> None:
    """A folder name is bytes, not text: -C, --kb and kb init take one that is not UTF-8."""
    from conftest import copy_example

    name = b"ex\xff"
    root = copy_example(tmp_path / name.decode("utf-8", "surrogateescape"))
    ran = _run_bytes([b"-C", name, b"ls", b"hypotheses", b"--json"], tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["count"] >= 3
    ran = _run_bytes([b"ls", b"hypotheses", b"--json", b"--kb=" + name], tmp_path)
    assert ran.returncode == 0, ran.stderr
    ran = _run_bytes([b"init", b"new\xff"], tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "new\udcff" / "kb.toml").is_file() and root.is_dir()
    ran = _run_bytes([b"-C", name, b"show", name, b"--json"], tmp_path)  # the ID is text
    assert ran.returncode == 2 and b"argument 4 'ex\\xff' is not valid UTF-8" in ran.stderr
    # git's %P (the merged file's path) for a KB in such a folder: judged by the driver.
    ran = _run_bytes([b"merge-driver", b"tree", b"no-base", b"no-ours", b"no-theirs",
                      name + b"/tree.md"], tmp_path)
    assert b"not valid UTF-8" not in ran.stderr and b"no-base" in ran.stderr


# -- kb ls --status ------------------------------------------------------------------------


@pytest.mark.parametrize("kind, word, says", [
    ("hypotheses", "bogus", "待验|untested, 进行中|in-progress, 被支持|supported, 被推翻|refuted"),
    ("experiments", "supported", "进行中|in-progress, 已完成|completed"),
    ("problems", "solved", "原始, 求解中, 等待依赖, 已解决, 死路"),
    ("propositions", "真", "未定论, 已验证·真, 已验证·假"),
    ("methods", "bogus", "经验, 应用验证, 含已验证断言"),
    ("directions", "paused", "active, success, dead-end, queued"),
    ("verified", "true", "真, 假"),
    (None, "bogus", "no kind of object has it"),
])
def test_ls_status_outside_the_kinds_words_is_a_usage_error(example_kb: Path, kind: str, word: str,
                                                             says: str) -> None:
    """A status no object of KIND can have: exit 2 naming the accepted words (an empty
    list with exit 0 read as "none has it"), in text and under --json."""
    kinds = [kind] if kind else []
    r = run_script("ls", *kinds, "--status", word, "--json", cwd=example_kb)
    assert r.code == 2, r.stdout
    error = r.json()["error"]
    assert error["kind"] == "usage" and repr(word) in error["message"] and says in error["message"]
    text = run_script("ls", *kinds, "--status", word, cwd=example_kb)
    assert text.code == 2 and text.stdout == "" and says in text.stderr


@pytest.mark.parametrize("kind, word, ids", [
    ("hypotheses", "被支持", ["H1", "H1.1"]),
    ("hypotheses", "Supported", ["H1", "H1.1"]),  # either language, any case (kb.vocab)
    ("hypotheses", "open", ["H2"]),  # an alias
    ("experiments", "completed", ["E001", "E002", "E003"]),
    ("problems", "已解决", ["q1"]),
    ("propositions", "已验证·真", ["p1"]),
    ("methods", "含已验证断言", ["m1"]),
    ("directions", "active", ["q2/d1"]),
    ("verified", "真", ["p1", "q1"]),  # 结论: no closed list of words
    (None, "completed", ["E001", "E002", "E003"]),  # every kind: either vocabulary
    (None, "in-progress", ["H1.1.1", "E004"]),
])
def test_ls_status_in_the_kinds_words_filters(example_kb: Path, kind, word: str, ids: list) -> None:
    args = ["ls", *([kind] if kind else []), "--status", word, "--json"]
    r = run_script(*args, cwd=example_kb)
    assert r.code == 0, r.stderr
    out = r.json()
    assert sorted(o["id"] for o in out["objects"]) == sorted(ids) and out["status"] == word
