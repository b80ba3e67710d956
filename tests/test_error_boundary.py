"""One error boundary (issue 10): no third-party exception leaves kb's public API.

A file system that refuses a read or a write (no permission, a read-only work
tree or ``.git``, a folder where kb's lock file goes) ends in a kb error with a
message that says what to do, exit 1 or 2 — never 3 (a bug) nor a traceback —
and a refused write leaves every file as it was.

The permission cases run kb as the unprivileged user ``nobody`` (permissions
do not apply to root, and CI runs the suite as root), as
``tests/test_index_unusable.py`` does.
"""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import copy_example, run_script, tree_snapshot
from nobody import as_nobody, nobody_env  # noqa: F401 - a fixture



# -- the mapping itself ------------------------------------------------------------------


@pytest.mark.parametrize("exc, kind, code, says", [
    (PermissionError(errno.EACCES, "Permission denied", "/k/tree.md"), "environment", 2,
     "permission"),
    (OSError(errno.EROFS, "Read-only file system", "/k/tree.md"), "environment", 2, "permission"),
    (OSError(errno.ENOSPC, "No space left on device", "/k/tree.md"), "environment", 2,
     "free some disk space"),
    (IsADirectoryError(errno.EISDIR, "Is a directory", "/k/tree.md"), "refused", 1,
     "move it out of the way"),
    (NotADirectoryError(errno.ENOTDIR, "Not a directory", "/k/x/tree.md"), "refused", 1,
     "move it out of the way"),
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "/k/tree.md"), "not_found", 1,
     "No such file"),
])
def test_os_failure_maps_each_os_error_to_a_kind(exc: OSError, kind: str, code: int,
                                                 says: str) -> None:
    from kb.errors import KbError, os_failure

    err = os_failure(exc, "write tree.md", "nothing was written")
    assert isinstance(err, KbError)
    assert (err.kind, err.exit_code) == (kind, code)
    assert says in str(err) and str(err).startswith("cannot write tree.md: ")
    assert str(err).endswith("— nothing was written")


def test_os_failure_names_the_folder_of_a_temporary_file() -> None:
    from kb.errors import os_failure

    err = os_failure(PermissionError(errno.EACCES, "Permission denied", "/k/Problems/.kb-tmp-x1.md"),
                     "write Problems/q1.md")
    assert "(in the folder /k/Problems)" in str(err) and ".kb-tmp" not in str(err)


# -- as root: a folder where kb's write lock file goes ----------------------------------------


def _assert_kb_error(r, code: int, kind: str) -> dict:
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert r.code == code, (r.code, r.stderr)
    err = r.json()["error"]
    assert err["kind"] == kind and err["exit_code"] == code, err
    return err


def test_write_lock_path_that_is_a_folder_is_refused(example_kb: Path) -> None:
    lock = example_kb / ".git" / "kb-write.lock"
    lock.mkdir()
    before = _files(example_kb)
    r = run_script("hyp", "add", "A new hypothesis", "--json", cwd=example_kb)
    err = _assert_kb_error(r, 1, "refused")
    assert "write lock" in err["message"] and "nothing was written" in err["message"]
    assert _files(example_kb) == before


# -- as an unprivileged user ------------------------------------------------------------------


def _files(root: Path) -> dict[str, bytes]:
    """The work tree's files, without .git/ and the derived .kb/ cache."""
    return {k: v for k, v in tree_snapshot(root, skip_git=True).items()
            if not (k == ".kb/" or k.startswith(".kb/"))}


def _kb_for_nobody(work: Path, name: str) -> Path:
    root = work / name
    shutil.rmtree(root, ignore_errors=True)
    copy_example(root)
    subprocess.run(["chown", "-R", "nobody:", str(root)], check=True)
    return root


def _readonly(root: Path, *, git_too: bool) -> None:
    """Take the write bits off every file and folder of the work tree (and of .git)."""
    for p in [root, *root.rglob("*")]:
        rel = p.relative_to(root).as_posix()
        if not git_too and (rel == ".git" or rel.startswith(".git/")):
            continue
        if not p.is_symlink():
            p.chmod(p.stat().st_mode & ~0o222)


def _nobody_error(prefix, env, root: Path, *args: str, code: int = 2,
                  kind: str = "environment") -> dict:
    got = as_nobody(prefix, env, root, *args, "--json")
    assert "Traceback" not in got.stderr and "internal error" not in got.stderr, got.stderr
    assert got.returncode == code, (got.returncode, got.stderr)
    err = json.loads(got.stdout)["error"]
    assert err["kind"] == kind and err["exit_code"] == code, err
    return err


WRITES = [
    ("hyp", "add", "A new hypothesis"),
    ("exp", "new", "--hyp", "H1.1", "an action"),
    ("exp", "log", "E001", "a line"),
    ("problem", "plan", "q1", "the next step"),
]


@pytest.mark.parametrize("git_too", [False, True], ids=["readonly-worktree", "readonly-all"])
def test_write_in_a_readonly_kb_is_an_environment_error(nobody_env, git_too: bool) -> None:
    prefix, env, work = nobody_env
    root = _kb_for_nobody(work, f"kb-ro-{git_too}")
    _readonly(root, git_too=git_too)
    before = _files(root)
    for args in WRITES:
        err = _nobody_error(prefix, env, root, *args)
        assert "nothing was written" in err["message"], (args, err)
        assert "permission" in err["message"], (args, err)
        assert _files(root) == before, args


def test_write_refused_half_way_leaves_every_file_as_it_was(nobody_env) -> None:
    """exp new writes the new experiment, tree.md (H1.1 moves on) and DASHBOARD.md: with
    only experiments/ read-only, whatever it wrote before is put back."""
    prefix, env, work = nobody_env
    root = _kb_for_nobody(work, "kb-half")
    (root / "experiments").chmod(0o555)
    before = _files(root)
    head = subprocess.run(["git", "-c", "safe.directory=*", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                          text=True, check=True).stdout
    _nobody_error(prefix, env, root, "exp", "new", "--hyp", "H1.1", "an action")
    assert _files(root) == before
    assert subprocess.run(["git", "-c", "safe.directory=*", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                          text=True, check=True).stdout == head


@pytest.mark.parametrize("args", [
    ("hooks", "install"),
    ("ci", "init", "--install", "kb==0.1"),
    ("gen", "init", "--question", "Why?"),
], ids=["hooks-install", "ci-init", "gen-init"])
def test_setup_commands_in_a_readonly_tree_are_environment_errors(nobody_env, args) -> None:
    prefix, env, work = nobody_env
    root = _kb_for_nobody(work, "kb-setup-" + args[0])
    _readonly(root, git_too=True)
    before = _files(root)
    err = _nobody_error(prefix, env, root, *args)
    assert "permission" in err["message"] and "run the command again" in err["message"]
    assert _files(root) == before


# -- kb's own state files in .git, damaged ------------------------------------------------------


@pytest.mark.parametrize("content", [b"[1, 2]", b'{"op": 5, "head": 7, "files": [1]}',
                                     b'{"head": null, "files": {"tree.md": {"new": 3}}}',
                                     b"\xff\xfe"],
                         ids=["list", "wrong-types", "wrong-record", "not-utf8"])
def test_damaged_transaction_journal_is_dropped(example_kb: Path, content: bytes) -> None:
    """The journal is written before any file: one that is not a journal means no file was
    written, so reads and writes drop it (and say nothing about a landed commit)."""
    journal = example_kb / ".git" / "kb-transaction.json"
    journal.write_bytes(content)
    ls = run_script("ls", "--json", cwd=example_kb)
    assert ls.code == 0 and "internal error" not in ls.stderr, ls.stderr
    assert "interrupted" not in ls.stderr, ls.stderr
    assert not journal.exists()
    journal.write_bytes(content)
    r = run_script("hyp", "add", "A new hypothesis", "--json", cwd=example_kb)
    assert r.code == 0, r.stderr
    assert not journal.exists()


def test_transaction_journal_that_is_a_folder_is_refused(example_kb: Path) -> None:
    journal = example_kb / ".git" / "kb-transaction.json"
    journal.mkdir()
    before = _files(example_kb)
    ls = run_script("ls", "--json", cwd=example_kb)
    assert ls.code == 0 and "internal error" not in ls.stderr, ls.stderr
    assert "move it out of the way" in ls.stderr
    r = run_script("hyp", "add", "A new hypothesis", "--json", cwd=example_kb)
    err = _assert_kb_error(r, 1, "refused")
    assert "kb-transaction.json" in err["message"] and "move it out of the way" in err["message"]
    assert _files(example_kb) == before


@pytest.mark.parametrize("content", [b"[1, 2]", b'{"branch": 5, "commit": [], "paths": 3}',
                                     b"\xff"], ids=["list", "wrong-types", "not-utf8"])
def test_damaged_release_journal_is_dropped(example_kb: Path, content: bytes) -> None:
    journal = example_kb / ".git" / "kb-lock-release.json"
    journal.write_bytes(content)
    r = run_script("hyp", "add", "A new hypothesis", "--json", cwd=example_kb)
    assert r.code == 0 and "internal error" not in r.stderr, r.stderr
    assert not journal.exists()
    journal.write_bytes(content)
    st = run_script("lock", "status", "--json", cwd=example_kb)
    assert st.code == 0 and "internal error" not in st.stderr, st.stderr


def test_marker_cache_that_is_not_text_is_ignored(example_kb: Path) -> None:
    from kb.merge.markers import cache_path

    cache = cache_path(example_kb, "")
    cache.write_bytes(b"\xff\xfe\n")
    r = run_script("hyp", "add", "A new hypothesis", "--json", cwd=example_kb)
    assert r.code == 0 and "internal error" not in r.stderr, r.stderr
    assert len(r.json()["ids"]) == 1, r.json()


# -- kb.toml of the wrong types ---------------------------------------------------------------


@pytest.mark.parametrize("toml, says", [
    ('[kb]\nlocale = "zh"\nheading_separators = [1, 2]\n', "kb.heading_separators"),
    ('[kb]\nlocale = "zh"\n[rules]\ndisable = [[1]]\n', "rules.disable"),
    ('[kb]\nlocale = "zh"\n[locks]\nleads = [3]\n', "locks.leads"),
    ('[kb]\nlocale = "zh"\n[[registry]]\npath = "log.md"\nheading = 5\n', "heading"),
    ('[kb]\nlocale = "zh"\n[[registry]]\npath = 5\n', "path"),
    ('registry = "abc"\n[kb]\nlocale = "zh"\n', "registry"),
], ids=["separators", "disable", "leads", "registry-heading", "registry-path", "registry-string"])
def test_kb_toml_of_the_wrong_types_is_an_environment_error(example_kb: Path, toml: str,
                                                            says: str) -> None:
    (example_kb / "kb.toml").write_text(toml, encoding="utf-8")
    before = _files(example_kb)
    for args in (("ls", "--json"), ("hyp", "add", "A new hypothesis", "--json")):
        r = run_script(*args, cwd=example_kb)
        err = _assert_kb_error(r, 2, "environment")
        assert err["message"].startswith("kb.toml:") and says in err["message"], err
    assert _files(example_kb) == before


# -- the generation loop's sandbox files, damaged -------------------------------------------------


@pytest.mark.parametrize("name, content", [
    ("state.json", b"[1]"), ("state.json", b'{"round": "x"}'),
    ("loop.run.yaml", b"- 1\n"), ("loop.run.yaml", b"round: x\n"),
    ("elo.json", b"\xff"), ("elo.json", b"[1]"),
], ids=["state-list", "state-fields", "run-list", "run-fields", "elo-not-utf8", "elo-list"])
def test_damaged_generation_run_files_are_refused(example_kb: Path, name: str, content: bytes) -> None:
    assert run_script("gen", "init", "--question", "Why?", cwd=example_kb).code == 0
    (example_kb / "sandbox" / name).write_bytes(content)
    reads = [("gen", "rank", "--json")] + ([] if name == "elo.json" else [("gen", "status", "--json")])
    for args in reads:
        r = run_script(*args, cwd=example_kb)
        err = _assert_kb_error(r, 1, "refused")
        assert name in err["message"] and ("delete it" in err["message"]
                                           or "put them back" in err["message"]), err


def test_matches_file_that_is_not_utf8_is_refused(example_kb: Path) -> None:
    assert run_script("gen", "init", "--question", "Why?", cwd=example_kb).code == 0
    (example_kb / "matches.json").write_bytes(b"\xff\xfe")
    r = run_script("gen", "rank", "matches.json", "--json", cwd=example_kb)
    err = _assert_kb_error(r, 1, "refused")
    assert "matches.json" in err["message"] and "UTF-8" in err["message"]


def test_merge_driver_given_unreadable_files_says_so(example_kb: Path) -> None:
    r = run_script("merge-driver", "tree", str(example_kb / "no-base"), str(example_kb / "no-ours"),
                   str(example_kb / "no-theirs"), "tree.md", cwd=example_kb)
    assert r.code == 2 and "internal error" not in r.stderr, (r.code, r.stderr)
    assert "cannot merge tree.md" in r.stderr and "no-base" in r.stderr


def test_fix_and_release_in_a_readonly_tree_are_environment_errors(nobody_env) -> None:
    """`kb verify --fix` and `kb lock release` rewrite DASHBOARD.md: refused, with what to do."""
    prefix, env, work = nobody_env
    root = _kb_for_nobody(work, "kb-fix")
    with (root / "tree.md").open("a", encoding="utf-8") as f:
        f.write("\n## H9: One more\nStatus: 待验\n")
    subprocess.run(["git", "-c", "safe.directory=*", "commit", "-qam", "H9"], cwd=root, check=True)
    # The commit made as root created object folders of its own: hand them to nobody too,
    # or the claim's objects fail whenever one falls in such a folder (a flaky test).
    subprocess.run(["chown", "-R", "nobody:", str(root)], check=True)
    claim = as_nobody(prefix, env, root, "lock", "claim", "tree.md", "--owner", "me")
    assert claim.returncode == 0, claim.stderr
    _readonly(root, git_too=False)
    before = _files(root)
    err = _nobody_error(prefix, env, root, "verify", "--fix")
    assert "kb-tmp" not in err["message"], err
    assert "permission" in err["message"] and "unchanged" in err["message"], err
    assert _files(root) == before
    err = _nobody_error(prefix, env, root, "lock", "release", "tree.md", "--owner", "me")
    assert "nothing was released" in err["message"] and "kb-tmp" not in err["message"], err
    assert _files(root) == before


def test_literature_keys_file_not_utf8_stops_gen_init_before_it_writes(example_kb: Path) -> None:
    (example_kb / "keys.env").write_bytes(b"S2_API_KEY=\xff\n")
    before = _files(example_kb)
    r = run_script("gen", "init", "--question", "Why?", "--json", cwd=example_kb)
    err = _assert_kb_error(r, 2, "environment")
    assert "keys.env" in err["message"] and "UTF-8" in err["message"]
    assert _files(example_kb) == before


def test_init_below_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x\n")
    r = run_script("init", "afile/kb", "--json", cwd=tmp_path)
    err = _assert_kb_error(r, 1, "refused")
    assert "afile/kb" in err["message"] and "move it out of the way" in err["message"]


def test_init_in_a_readonly_folder_leaves_nothing(nobody_env) -> None:
    prefix, env, work = nobody_env
    folder = work / "ro-init"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["chown", "-R", "nobody:", str(folder)], check=True)
    folder.chmod(0o555)
    before = _files(folder)
    err = _nobody_error(prefix, env, folder, "init", ".")
    assert "permission" in err["message"], err
    assert _files(folder) == before


def test_trail_children_file_not_utf8_is_a_usage_error(example_kb: Path) -> None:
    (example_kb / "children.json").write_bytes(b"[\xff]")
    r = run_script("trail", "add", "--kind", "topic", "--title", "A topic", "--children-json",
                   "children.json", "--json",
                   cwd=example_kb)
    err = _assert_kb_error(r, 2, "usage")
    assert "children.json" in err["message"] and "UTF-8" in err["message"]


@pytest.mark.parametrize("content", [b"\xff", b"{", b'{"candidates": 5}'],
                         ids=["not-utf8", "not-json", "invalid"])
def test_damaged_round_file_is_refused_not_a_bug(tmp_path: Path, content: bytes) -> None:
    from kb.errors import RefusedError
    from kb.gen.models import Candidates
    from kb.gen.store import read_round_file

    path = tmp_path / "candidates.json"
    path.write_bytes(content)
    with pytest.raises(RefusedError) as info:
        read_round_file(path, Candidates)
    assert "candidates.json" in str(info.value) and "another --sandbox" in str(info.value)
    with pytest.raises(RefusedError):
        read_round_file(tmp_path / "missing.json")


def test_literature_cache_entry_that_is_no_record_is_a_miss(tmp_path: Path) -> None:
    from kb.lit.http import Cache

    cache = Cache(tmp_path)
    for content in (b"[1]", b'{"status": 200}', b"\xff"):
        cache.path("k").write_bytes(content)
        assert cache.get("k") is None
    cache.put("k", {"key": "k", "status": 200, "body": {"x": 1}})
    assert cache.get("k") == {"key": "k", "status": 200, "body": {"x": 1}}


def test_literature_cache_in_a_file_place_is_a_kb_error(tmp_path: Path) -> None:
    from kb.errors import KbError
    from kb.lit.http import Cache, Throttle

    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder goes\n")
    with pytest.raises(KbError) as info:
        Cache(blocker).put("k", {"body": 1})
    assert info.value.exit_code in (1, 2) and "literature cache" in str(info.value)
    with pytest.raises(KbError):
        Throttle(blocker, {"default": 0.0}).wait("default")


@pytest.mark.parametrize("left", ["next-index-123.lock", "kb-transaction.json"])
def test_reads_in_a_readonly_git_dir_with_leftovers_still_answer(nobody_env, left: str) -> None:
    """A killed git's index lock or a killed kb write's journal is cleaned up before a read
    under the write lock; when .git is read-only the read answers anyway (with a note)."""
    prefix, env, work = nobody_env
    root = _kb_for_nobody(work, "kb-leftover-" + left)
    (root / ".git" / left).write_text('{"head": null, "files": {}}' if left.endswith(".json")
                                      else "", encoding="utf-8")
    subprocess.run(["chown", "-R", "nobody:", str(root / ".git")], check=True)
    _readonly(root, git_too=True)
    got = as_nobody(prefix, env, root, "ls", "--json")
    assert got.returncode == 0, got.stderr
    assert "internal error" not in got.stderr
    assert json.loads(got.stdout)


def test_unreadable_gitattributes_does_not_break_verify(nobody_env) -> None:
    prefix, env, work = nobody_env
    root = _kb_for_nobody(work, "kb-attrs")
    (root / ".gitattributes").write_text("DASHBOARD.md merge=kb-dashboard\n", encoding="utf-8")
    subprocess.run(["chown", "nobody:", str(root / ".gitattributes")], check=True)
    (root / ".gitattributes").chmod(0)
    got = as_nobody(prefix, env, root, "verify", "--json")
    assert got.returncode in (0, 1) and "internal error" not in got.stderr, got.stderr
    assert "diagnostics" in json.loads(got.stdout)


def test_unreadable_records_folder_is_an_environment_error(nobody_env) -> None:
    prefix, env, work = nobody_env
    root = _kb_for_nobody(work, "kb-logs")
    (root / "Logs").chmod(0)
    for args in (("verifiers",), ("report",), ("diff",)):
        err = _nobody_error(prefix, env, root, *args)
        assert "Verification" in err["message"] and "permission" in err["message"], (args, err)


def test_sandbox_the_user_cannot_enter_is_an_environment_error(nobody_env) -> None:
    prefix, env, work = nobody_env
    root = _kb_for_nobody(work, "kb-sandbox")
    assert as_nobody(prefix, env, root, "gen", "init", "--question", "Why?").returncode == 0
    (root / "sandbox").chmod(0)
    for args in (("gen", "status"), ("gen", "init", "--question", "Again?")):
        err = _nobody_error(prefix, env, root, *args)
        assert "sandbox" in err["message"] and "permission" in err["message"], (args, err)


@pytest.mark.parametrize("args,code", [(("show", "q2"), 0), (("show", "q2", "--json"), 0),
                                       (("ls", "hypotheses"), 0), (("verify",), 1),
                                       (("verify", "--format", "json"), 1)])
def test_a_reader_that_goes_away_is_no_error(example_kb: Path, args: tuple[str, ...],
                                             code: int) -> None:
    """``kb … | head``: the reader closed its end before kb wrote. Click turned the
    broken pipe into exit 1 (``kb show`` exited 1 with nothing said); now the rest of
    the output is dropped and the command ends with its own code: 1 for a check that
    found violations (here a hypothesis with an unknown status word)."""
    import os

    from conftest import commit_all, kb_script, source_env

    tree = example_kb / "tree.md"
    text = tree.read_text(encoding="utf-8")
    if code:
        tree.write_text(text.replace("Status: 待验", "Status: 不知道", 1), encoding="utf-8")
        commit_all(example_kb, "a status word kb does not know")
    for _ in range(3):
        r, w = os.pipe()
        os.close(r)  # the reader is gone before the first write
        proc = subprocess.run([kb_script(), *args], cwd=example_kb, stdout=w,
                              stderr=subprocess.PIPE, env=source_env(), timeout=60)
        os.close(w)
        said = [ln for ln in proc.stderr.decode().splitlines()
                if not ln.startswith("kb verify (1 KB):")]  # its summary goes to stderr
        assert (proc.returncode, said) == (code, [])


@pytest.mark.parametrize("args,code", [(("index",), 0), (("verify",), 0), (("verify",), 1)])
def test_a_reader_of_standard_error_that_goes_away_is_no_error(example_kb: Path,
                                                               args: tuple[str, ...],
                                                               code: int) -> None:
    """``kb … 2>&1 | head``: the reader closed its end before kb wrote its notes and
    summary there. The broken pipe on standard error was exit 1 whatever the command's
    own code; now those messages are dropped and the command ends with its own code."""
    import os

    from conftest import commit_all, kb_script, source_env

    if code:
        tree = example_kb / "tree.md"
        text = tree.read_text(encoding="utf-8")
        tree.write_text(text.replace("Status: 待验", "Status: 不知道", 1), encoding="utf-8")
        commit_all(example_kb, "a status word kb does not know")
    for _ in range(3):
        r, w = os.pipe()
        os.close(r)  # the reader is gone before the first write
        proc = subprocess.run([kb_script(), *args], cwd=example_kb, stdout=w, stderr=w,
                              env=source_env(), timeout=60)
        os.close(w)
        assert proc.returncode == code


@pytest.mark.parametrize("args", [("show", "q2"), ("ls", "hypotheses", "--json"),
                                  ("ls", "hypotheses"), ("ls", "problems")])
def test_standard_output_closed_is_an_environment_error(example_kb: Path,
                                                        args: tuple[str, ...]) -> None:
    """``kb show q2 >&-``: one line and exit 2 (it was a traceback; a table asked the
    closed stream whether it is a terminal)."""
    import os

    from conftest import kb_script, source_env

    proc = subprocess.run([kb_script(), *args], cwd=example_kb, stderr=subprocess.PIPE,
                          env=source_env(), timeout=60, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 2
    assert proc.stderr.decode().splitlines() == [
        "kb: cannot write the output: standard output is closed"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [("show", "q2"), ("show", "q2", "--json"),
                                  ("verify", "--format", "json")])
def test_output_that_cannot_be_written_is_an_environment_error(example_kb: Path,
                                                               args: tuple[str, ...]) -> None:
    """A full disk behind standard output is the environment's fault: exit 2, one line
    on stderr (it was an internal error, exit 3)."""
    from conftest import kb_script, source_env

    with open("/dev/full", "w") as full:
        proc = subprocess.run([kb_script(), *args], cwd=example_kb, stdout=full,
                              stderr=subprocess.PIPE, env=source_env(), timeout=60)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2
    assert lines == ["kb: cannot write the output: No space left on device"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("extra, landed", [
    ((), "committed {head} (tree.md, DASHBOARD.md)"),
    (("--json",), "committed {head} (tree.md, DASHBOARD.md)"),
    (("--no-commit",), "wrote tree.md, DASHBOARD.md (not committed)"),
])
def test_a_write_whose_output_cannot_be_written_says_what_landed(
        tree_kb: Path, extra: tuple[str, ...], landed: str) -> None:
    """A write that landed and then could not print says what it committed (or wrote):
    the exit code stays 2, but a caller that retries is not blind (it duplicated H1)."""
    from conftest import git, kb_script, source_env

    with open("/dev/full", "w") as full:
        proc = subprocess.run([kb_script(), "hyp", "add", "first", *extra], cwd=tree_kb,
                              stdout=full, stderr=subprocess.PIPE, env=source_env(), timeout=60)
    head = git(tree_kb, "rev-parse", "HEAD")[:12]
    assert proc.returncode == 2
    assert proc.stderr.decode().splitlines()[-1] == (
        f"kb: {landed.format(head=head)}, but its output could not be written: "
        "No space left on device")


@pytest.mark.parametrize("args, landed", [
    (("lock", "claim", "tree.md", "--owner", "ann"), "locked tree.md for ann until "),
    (("project", "lock", "--owner", "ann"), "locked the project for ann until "),
])
def test_a_lock_whose_output_cannot_be_written_says_it_is_held(tree_kb: Path, args: tuple,
                                                               landed: str) -> None:
    """A lock taken and then not printed is held till its lease ends: the error says so
    (a caller reading only "cannot write the output" would think the claim failed)."""
    from conftest import kb_script, source_env

    with open("/dev/full", "w") as full:
        proc = subprocess.run([kb_script(), *args], cwd=tree_kb, stdout=full,
                              stderr=subprocess.PIPE, env=source_env(), timeout=60)
    last = proc.stderr.decode().splitlines()[-1]
    assert proc.returncode == 2 and last.startswith(f"kb: {landed}"), last
    assert last.endswith("but its output could not be written: No space left on device"), last


def test_a_process_limit_is_an_environment_error_not_a_bug(nobody_env) -> None:
    """Under a process limit (RLIMIT_NPROC, which binds users other than root) git cannot
    be started: kb says so as an environment error (exit 2), not an internal error."""
    if shutil.which("prlimit") is None:
        pytest.skip("no prlimit (util-linux) on this machine")
    prefix, env, work = nobody_env
    root = _kb_for_nobody(work, "kb-nproc")
    for args in (["verify"], ["verify", "--range", "HEAD~1..HEAD"], ["ls", "hypotheses"]):
        got = subprocess.run(["prlimit", "--nproc=1", "--", *prefix, *args, "--json"], cwd=root,
                             env=env, capture_output=True, text=True, timeout=120)
        assert "Traceback" not in got.stderr and "internal error" not in got.stderr, got.stderr
        assert got.returncode == 2, (args, got.returncode, got.stderr)
        err = json.loads(got.stdout)["error"]
        assert err["kind"] == "environment" and "ulimit -u" in err["message"], err


@pytest.mark.parametrize("toml, says", [
    ('[kb]\nlocale = "zh"\nid_grammar = 5\n', "kb.toml:3: kb.id_grammar must be a string, not int"),
    ('[kb]\n\nlocale = "xx"\n', "kb.toml:3: kb.locale must be 'zh' or 'en', not 'xx'"),
    ('[kb]\nlocale = "zh"\n[paths]\ntree = "../x.md"\n', "kb.toml:4: paths.tree = '../x.md' leaves"),
    ('[kb]\nlocale = "zh"\n[paths]\ntree = "tree.md\\u0000x"\n', "kb.toml:4: paths.tree = 'tree.md\\x00x' holds a NUL"),
    ('[kb]\nlocale = "zh"\n[rules.severity]\nKB101 = "loud"\n',
     "kb.toml:4: rules.severity.KB101 must be error|warning|info|off"),
    ('[kb]\nlocale = "zh"\n[rules]\nseverity = { KB101 = "loud" }\n',
     "kb.toml:4: rules.severity.KB101 must be"),  # an inline table: its line
    ('[kb]\nlocale = "zh"\n[[registry]]\npath = "a.md"\n[[registry]]\npath = "b.md"\nheading = "("\n',
     "kb.toml:7: registry heading is not a valid regex"),
    ('[kb]\nlocale = "zh"\n[[registry]]\npath = "p.md"\nheading = "^## (.+)$"\n',
     "kb.toml:5: [[registry]] #1 heading must name each record's ID with a group (?P<id>"),
    ('[kb]\nlocale = "zh"\n[[registry]]\nkind = "log"\npath = "../p.md"\n', "kb.toml:5: registry #1 path"),
    ('[kb]\nlocale = "zh"\n[registry]\npath = "p.md"\n', "kb.toml:3: registry must be an array of tables"),
    ('kb = 3\n', "kb.toml:1: [kb] must be a table"),
    ('[kb]\nlocale = "zh"\nheading_separators = []\n', "kb.toml:3: kb.heading_separators must list"),
    ('[kb]\nlocale = "zh"\nid_grammar = " "\n', "kb.toml:3: kb.id_grammar is empty"),
    ('[kb]\nlocale = \n', "kb.toml:2:10: not valid TOML: Invalid value"),
    ('[kb]\nlocale = "zh"\n[rules]\ndisable = [\n', "kb.toml:4: not valid TOML: "),
    ('[kb]\n# caf\xe9\nlocale = "zh"\n', "kb.toml:2: not UTF-8 text: invalid continuation byte (byte 0xe9)"),
], ids=["type", "locale", "path", "nul", "severity", "inline", "registry", "registry-id",
        "registry-path", "registry-table", "top-level", "separators", "grammar", "syntax", "end",
        "latin-1"])
def test_kb_toml_errors_name_their_line(example_kb: Path, toml: str, says: str) -> None:
    """A value kb.toml cannot hold, or text that is not TOML, is an environment error
    that names kb.toml's line (and column, for a syntax error), as a diagnostic does."""
    (example_kb / "kb.toml").write_bytes(toml.encode("latin-1" if "\xe9" in toml else "utf-8"))
    err = _assert_kb_error(run_script("ls", "--json", cwd=example_kb), 2, "environment")
    assert err["message"].startswith(says), err


def test_kb_toml_with_a_bom_is_read(example_kb: Path) -> None:
    """A BOM before kb.toml's first line (what some Windows editors write) is dropped,
    as in Markdown files: the configuration reads as without it."""
    toml = (example_kb / "kb.toml").read_bytes()
    (example_kb / "kb.toml").write_bytes(b"\xef\xbb\xbf" + toml)
    r = run_script("ls", "hypotheses", "--json", cwd=example_kb)
    assert r.code == 0 and json.loads(r.stdout), r.stderr


def test_kb_toml_errors_name_the_file_as_the_user_opens_it(example_kb: Path) -> None:
    """Run from above the KB (``--kb``) or below it, a kb.toml error names the file as
    it is opened from there: ``examples/kb.toml:2:``, ``../kb.toml:2:``."""
    (example_kb / "kb.toml").write_text('[kb]\nlocale = "xx"\n', encoding="utf-8")
    name = example_kb.name
    cases = ((example_kb.parent, ("ls", "--kb", name, "--json")), (example_kb / "Problems", ("ls", "--json")),
             (example_kb, ("ls", "--json")))
    for cwd, args in cases:
        err = _assert_kb_error(run_script(*args, cwd=cwd), 2, "environment")
        want = {example_kb.parent: f"{name}/kb.toml:2:", example_kb: "kb.toml:2:"}.get(cwd, "../kb.toml:2:")
        assert err["message"].startswith(want + " kb.locale must be 'zh' or 'en'"), (cwd, err)
