"""Shared fixtures and helpers for kb's test suite.

Every test runs with a pinned git environment (identity, dates, no system or
user configuration, ``init.defaultBranch=main``), so commits, blob ids and
messages are the same on every machine. Helpers:

- :func:`git` runs git in a folder and returns its stdout;
- ``git_repo``: a fresh repository in ``tmp_path``;
- ``make_kb``: a factory writing ``kb.toml`` plus files into a repository
  (optionally committed);
- ``cases_dir``: ``../shared/cases`` (the input cases of the project);
- ``run_kb`` / :func:`invoke`: run the CLI in-process (``kb_cli.main.main``)
  and capture exit code, stdout and stderr;
- :func:`kb_script`: the installed ``kb`` console script;
- :func:`tree_snapshot`: every file and its bytes under a folder, to prove
  that a refused command changed nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Optional, Union

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = REPO_ROOT / "examples"

# -- the tests exercise the source, never a stale installed copy ------------------
#
# ``cli/`` is installed as ``kb_cli``, so the source tree alone cannot be imported
# under the installed names. A folder of two symlinks (``kb`` -> kb/, ``kb_cli`` ->
# cli/) put first on ``sys.path`` and on ``PYTHONPATH`` makes this process, every
# ``kb`` subprocess and every git hook the tests run import the checkout's code,
# whatever copy ``pip install`` left in site-packages (the README's test command
# installs non-editable). Only the wheel test strips it, on purpose.
SOURCE_PATH = Path(tempfile.mkdtemp(prefix="kb-test-source-"))
(SOURCE_PATH / "kb").symlink_to(REPO_ROOT / "kb", target_is_directory=True)
(SOURCE_PATH / "kb_cli").symlink_to(REPO_ROOT / "cli", target_is_directory=True)
atexit.register(shutil.rmtree, SOURCE_PATH, ignore_errors=True)
sys.path.insert(0, str(SOURCE_PATH))
for _name in [m for m in sys.modules if m in ("kb", "kb_cli") or m.startswith(("kb.", "kb_cli."))]:
    del sys.modules[_name]
os.environ["PYTHONPATH"] = str(SOURCE_PATH)


def source_env(env: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """A copy of ``env`` (default: this process's) whose Python imports kb from the checkout."""
    out = dict(os.environ if env is None else env)
    out["PYTHONPATH"] = str(SOURCE_PATH)
    return out

def generated_corpus(out: Path, profile: str, scale: float) -> Path:
    """``benchmarks/gen_corpus.py``'s KB of ``profile`` at ``scale`` written to ``out``
    (no git repository); returns ``out``."""
    import subprocess
    import sys

    subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / "gen_corpus.py"), str(out),
                    "--scale", str(scale), "--profile", profile, "--no-git"], check=True,
                   capture_output=True, env=source_env())
    return out


#: Fixed identity and clock for every git command run by the tests (and by kb).
GIT_ENV: dict[str, str] = {
    "GIT_AUTHOR_NAME": "KB Test",
    "GIT_AUTHOR_EMAIL": "kb-test@example.invalid",
    "GIT_COMMITTER_NAME": "KB Test",
    "GIT_COMMITTER_EMAIL": "kb-test@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
}

#: Variables that would make git act on another repository or index (e.g. when
#: the suite itself runs inside a git hook): removed for every test.
GIT_UNSET = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
    "GIT_CONFIG", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "XDG_CONFIG_HOME",
    "KB_DEBUG",
)

GITCONFIG = """\
[init]
\tdefaultBranch = main
[user]
\tname = KB Test
\temail = kb-test@example.invalid
[commit]
\tgpgsign = false
[tag]
\tgpgsign = false
[core]
\tautocrlf = false
[advice]
\tdetachedHead = false
"""

_HOME = Path(tempfile.mkdtemp(prefix="kb-test-home-"))
(_HOME / ".gitconfig").write_text(GITCONFIG, encoding="utf-8")
atexit.register(shutil.rmtree, _HOME, ignore_errors=True)


def _pin_environ(env: Union[dict, "os._Environ[str]"]) -> None:
    for key in GIT_UNSET:
        env.pop(key, None)
    env.update(GIT_ENV)
    env["HOME"] = str(_HOME)


# Module level as well as per test: subprocesses started while collecting (or
# by session fixtures) see the same environment.
_pin_environ(os.environ)


@pytest.fixture(autouse=True)
def _git_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-pin the git environment for every test (a test may have changed it)."""
    for key in GIT_UNSET:
        monkeypatch.delenv(key, raising=False)
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("HOME", str(_HOME))


# -- git -----------------------------------------------------------------------


def git(cwd: Union[str, Path], *args: str, input: Optional[bytes] = None,
        env: Optional[Mapping[str, str]] = None, check: bool = True) -> str:
    """Run ``git <args>`` in ``cwd``; return stdout (UTF-8, stripped of the final newline).

    Raises AssertionError with git's stderr when ``check`` and git fails.
    """
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True,
                          env=full_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}): "
                             f"{proc.stderr.decode('utf-8', 'replace')}")
    return proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n")


def count_processes(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The argv of every subprocess started from now on, each still run for real (until
    ``monkeypatch.undo()`` or the test's end): a test of "no git process" asserts it empty."""
    started: list[object] = []
    real = subprocess.Popen

    def counting(*args: Any, **kwargs: Any) -> Any:
        started.append(args[0] if args else kwargs.get("args"))
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", counting)
    return started


def git_init(path: Path) -> Path:
    """``git init`` ``path`` (created if missing) and return it."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    return path


def commit_all(repo: Path, message: str = "commit") -> str:
    """Stage everything in ``repo`` and commit it; return the new commit id."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def write_files(root: Path, files: Mapping[str, Union[str, bytes]]) -> None:
    """Write ``files`` (relative path -> text or bytes) under ``root``.

    Text is written as UTF-8 with its newlines untouched (no translation), so
    a test controls every byte.
    """
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        target.write_bytes(data)


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A new, empty git repository (branch ``main``, no commits) in ``tmp_path/repo``."""
    return git_init(tmp_path / "repo")


MakeKB = Callable[..., Path]


@pytest.fixture
def make_kb(tmp_path: Path) -> MakeKB:
    """Factory: ``make_kb(files, *, config=..., commit=False, root=None, subdir="")``.

    Creates a git repository (a new folder per call, unless ``root`` names an
    existing repository), writes ``kb.toml`` (``config``, default ``[kb]``)
    into ``root/subdir`` unless ``files`` holds its own ``kb.toml``, writes
    ``files`` (paths relative to the KB folder; ``str`` as UTF-8, ``bytes``
    as is), optionally commits everything, and returns the KB folder.
    """
    counter = iter(range(1_000_000))

    def factory(files: Optional[Mapping[str, Union[str, bytes]]] = None, *,
                config: str = "[kb]\n", commit: bool = False,
                root: Optional[Path] = None, subdir: str = "") -> Path:
        repo = root if root is not None else git_init(tmp_path / f"kb{next(counter)}")
        if not (repo / ".git").exists():
            git_init(repo)
        kb_root = repo / subdir if subdir else repo
        kb_root.mkdir(parents=True, exist_ok=True)
        files = dict(files or {})
        if "kb.toml" not in files:
            files["kb.toml"] = config
        write_files(kb_root, files)
        if commit:
            commit_all(repo, "add KB")
        return kb_root

    return factory


# -- shared input cases ----------------------------------------------------------


#: The project's shared parser cases (``shared/cases``), vendored byte for byte
#: (.gitattributes keeps git from converting them); ``$KB_CASES_DIR`` runs the
#: suite against another copy.
CASES = Path(__file__).resolve().parent / "cases"


@pytest.fixture(scope="session")
def cases_dir() -> Path:
    """``tests/cases``, or ``$KB_CASES_DIR``. Fails (never skips) if absent."""
    found = Path(os.environ.get("KB_CASES_DIR") or CASES)
    if not (found / "inputs").is_dir():
        pytest.fail(f"the input cases are missing: no {found / 'inputs'}", pytrace=False)
    return found


@pytest.fixture(scope="session")
def case_bytes(cases_dir: Path) -> Callable[[str], bytes]:
    """``case_bytes("FM-01")`` -> the bytes of ``inputs/FM-01_*.md`` (or a ``real/`` file name)."""

    def read(name: str) -> bytes:
        real = cases_dir / "real" / name
        if real.is_file():
            return real.read_bytes()
        hits = sorted((cases_dir / "inputs").glob(f"{name}_*.md"))
        if len(hits) != 1:
            pytest.fail(f"case {name!r}: expected one file in {cases_dir / 'inputs'}, "
                        f"found {[h.name for h in hits]}", pytrace=False)
        return hits[0].read_bytes()

    return read


# -- running the CLI -------------------------------------------------------------


@dataclass
class Result:
    """Outcome of one CLI run: exit code and the two streams (decoded UTF-8)."""

    code: int
    stdout: str
    stderr: str

    def json(self):  # noqa: ANN201 - any JSON value
        import json

        return json.loads(self.stdout)


@contextlib.contextmanager
def chdir(path: Union[str, Path]) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def invoke(*args: str, cwd: Union[str, Path, None] = None) -> Result:
    """Run ``kb <args>`` in-process through ``kb_cli.main.main`` with click's runner.

    Returns exit code, stdout and stderr separately (stdout must hold only
    JSON for ``--json``).
    """
    from click.testing import CliRunner

    from kb_cli.main import main

    runner = CliRunner()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(chdir(cwd))
        streams = stack.enter_context(runner.isolation())
        try:
            code = main(list(args))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        out, err = streams[0], streams[1]
        stdout = out.getvalue().decode("utf-8")
        stderr = err.getvalue().decode("utf-8")
    return Result(code=code, stdout=stdout, stderr=stderr)


@pytest.fixture
def run_kb() -> Callable[..., Result]:
    """``run_kb("index", "--json", cwd=kb_root)`` -> :class:`Result` (in-process)."""
    return invoke


def kb_script() -> str:
    """Path of the installed ``kb`` console script (the running interpreter's first).

    Fails the test, never skips, when it is not installed.
    """
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    found = shutil.which("kb", path=search)
    if found is None:
        pytest.fail("the `kb` console script is not installed (pip install -e '.[test]')",
                    pytrace=False)
    return found


def run_script(*args: str, cwd: Union[str, Path], env: Optional[Mapping[str, str]] = None,
               timeout: float = 60) -> Result:
    """Run the installed ``kb`` console script in a subprocess."""
    full_env = source_env()
    if env:
        full_env.update(env)
    proc = subprocess.run([kb_script(), *args], cwd=cwd, capture_output=True, env=full_env,
                          timeout=timeout)
    return Result(code=proc.returncode, stdout=proc.stdout.decode("utf-8"),
                  stderr=proc.stderr.decode("utf-8"))


# -- files -----------------------------------------------------------------------


def tree_snapshot(root: Path, skip_git: bool = False) -> dict[str, bytes]:
    """Every file under ``root`` (relative POSIX path -> bytes); symlinks as their target text."""
    out: dict[str, bytes] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if skip_git and (rel == ".git" or rel.startswith(".git/")):
            continue
        if p.is_symlink():
            out[rel] = os.readlink(p).encode()
        elif p.is_file():
            out[rel] = p.read_bytes()
        elif p.is_dir():
            out[rel + "/"] = b""
    return out


def copy_example(dest: Path) -> Path:
    """A committed copy of ``examples/`` (the bundled example KB) at ``dest``, its own repository."""
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns(".kb", "__pycache__"))
    git_init(dest)
    commit_all(dest, "example KB")
    return dest


@pytest.fixture
def example_kb(tmp_path: Path) -> Path:
    """A committed copy of ``examples/`` (the bundled example KB) in its own repository."""
    return copy_example(tmp_path / "examples")


def config_for(root: Path, data: Optional[dict] = None):
    """A :class:`kb.config.Config` for parser tests (``data`` is parsed-TOML shape)."""
    from kb.config import config_from_dict

    return config_from_dict(root, data or {})


# -- hypothesis-tree workflow (issue 4) -------------------------------------------


@pytest.fixture
def tree_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed KB made by ``kb init`` (zh locale) in its own repository, with
    ``KB_TODAY`` pinned to 2026-11-29 for experiment dates."""
    from kb.ops.init import init_kb

    monkeypatch.setenv("KB_TODAY", "2026-11-29")
    root = git_init(tmp_path / "research")
    init_kb(root)
    commit_all(root, "kb init")
    return root


def make_team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml_extra: str = "",
              message: str = "kb init") -> dict[str, Path]:
    """A bare remote and two clones of one KB: `a` (kb init, ``toml_extra`` appended to its
    kb.toml) and `b` (a plain git clone, which fetches no lock refs by itself)."""
    from kb.ops.init import init_kb

    monkeypatch.setenv("KB_TODAY", "2026-11-29")
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a = tmp_path / "a"
    git(tmp_path, "clone", "-q", str(remote), str(a))
    init_kb(a)
    if toml_extra:
        toml = (a / "kb.toml").read_text(encoding="utf-8")
        (a / "kb.toml").write_text(toml + toml_extra, encoding="utf-8")
    commit_all(a, message)
    git(a, "push", "-q", "origin", "main")
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(remote), str(b))
    return {"remote": remote, "a": a, "b": b}


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A bare remote and two clones of one KB: `a` (kb init) and `b` (a plain git clone)."""
    return make_team(tmp_path, monkeypatch)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for a server a test starts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``(git:// URL, bare repo path)`` of a repository served by git daemon."""
    srv = tmp_path / "srv"
    srv.mkdir()
    bare = srv / "kb.git"
    git(srv, "init", "-q", "--bare", "-b", "main", str(bare))
    port = free_port()
    proc = subprocess.Popen(
        ["git", "daemon", "--enable=receive-pack", "--export-all", "--reuseaddr",
         "--listen=127.0.0.1", f"--port={port}", f"--base-path={srv}", "--informative-errors", str(srv)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(100):  # bounded: at most ~10 s for the daemon to listen
            if proc.poll() is not None:
                pytest.fail(f"git daemon exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("git daemon did not listen within 10 s")
        yield f"git://127.0.0.1:{port}/kb.git", bare
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def push(clone: Path) -> str:
    """``git push origin HEAD:main`` through kb's pre-push hook and the server's
    pre-receive hook; its output (the test fails when the push is refused)."""
    proc = subprocess.run(["git", "push", "origin", "HEAD:main"], cwd=clone, capture_output=True)
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode == 0, out
    return out


@pytest.fixture
def daemon_pair(daemon: tuple[str, Path], tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """``(alice, bob)``: clones over git:// of a KB whose server runs kb's pre-receive
    hook; both have kb's hooks installed and start from the same main."""
    from kb.ops.init import init_kb

    def ok(*args: str, cwd: Path) -> None:
        res = invoke(*args, cwd=cwd)
        assert res.code == 0, (args, res.stdout, res.stderr)

    url, bare = daemon
    monkeypatch.setenv("KB_TODAY", "2026-11-29")
    ok("hooks", "install", "--server", cwd=bare)
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    git(tmp_path, "clone", "-q", url, str(alice))
    init_kb(alice)
    git(alice, "add", "-A")
    git(alice, "commit", "-q", "-m", "kb init")
    ok("hooks", "install", cwd=alice)
    push(alice)
    git(tmp_path, "clone", "-q", url, str(bob))
    ok("hooks", "install", cwd=bob)
    return alice, bob


@pytest.fixture
def kb_with(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """``make(files)``: a new committed KB (``[kb]`` only, ``.kb/`` ignored) holding ``files``."""
    counter = iter(range(100))

    def make(files: dict[str, str]) -> Path:
        root = git_init(tmp_path / f"r{next(counter)}")
        write_files(root, {"kb.toml": "[kb]\n", ".gitignore": ".kb/\n", **files})
        commit_all(root, "cards")
        return root

    return make
