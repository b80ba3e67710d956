"""kb reads git's words only from commands run with git's messages in English.

``kb sync`` reads ``git merge``'s output (``CONFLICT (…)`` lines, "Automatic merge
failed", git's lines around a hook's refusal); the lock commands read ``git fetch``'s
reason ("couldn't find remote ref", ``fatal:``), and whether ``git hook`` exists. With a
translated git (``LANGUAGE=de``) they read German and fell back (``<path>: conflict``,
git's German lines among a hook's reasons, a failed release, the tail of a hint). Those
commands now run with ``LC_MESSAGES=C`` (:func:`kb.git.english`), ``LC_ALL`` spread over
the other categories so the user's character set stays: a hook ``git merge`` runs
records what it inherits.

Real git, real repositories, the pinned identity and dates of conftest. Skipped where
git's German messages (``git.mo``) or the C.UTF-8 locale are not installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git, invoke, make_team
from test_team_sync import cards_moved_while_b_adds

#: A German git, told through LANG (LC_MESSAGES is C.UTF-8, not C, so gettext honours
#: LANGUAGE) or through LC_ALL (which LC_MESSAGES=C alone would not override).
GERMAN = {"LANG": {"LANG": "C.UTF-8", "LANGUAGE": "de"},
          "LC_ALL": {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "LANGUAGE": "de"}}
LOCALE_VARS = ("LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LC_CTYPE", "LC_COLLATE")


@pytest.fixture(params=sorted(GERMAN))
def german(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The test's environment set to a German git (every git the test and kb run)."""
    for name in LOCALE_VARS:
        monkeypatch.delenv(name, raising=False)
    env = GERMAN[request.param]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    proc = subprocess.run(["git", "kb-no-such-command"], capture_output=True)
    said = proc.stderr.decode("utf-8", "replace")
    if not said.strip() or "is not a git command" in said:
        pytest.skip("git speaks no German here (no git.mo for de, or no C.UTF-8 locale)")
    return env


def _sync(b: Path) -> dict:
    res = invoke("sync", "--json", cwd=b)
    assert res.code == 1, (res.stdout, res.stderr)
    return res.json()


def test_english_sets_the_messages_alone() -> None:
    from kb.git import english

    env = {"LC_ALL": "de_DE.UTF-8", "LANGUAGE": "de:fr", "LANG": "fr_FR.UTF-8",
           "LC_CTYPE": "ja_JP.UTF-8", "PATH": "/bin"}
    out = english(env)
    assert out["LC_MESSAGES"] == "C" and "LC_ALL" not in out and "LANGUAGE" not in out
    # What LC_ALL set stays set, category by category (it overrode LC_CTYPE too).
    assert out["LC_CTYPE"] == out["LC_COLLATE"] == out["LC_TIME"] == "de_DE.UTF-8"
    assert out["LANG"] == "fr_FR.UTF-8" and out["PATH"] == "/bin"
    assert env["LC_ALL"] == "de_DE.UTF-8"  # a copy
    assert english({"LANG": "de_DE.UTF-8", "LANGUAGE": "de"}) == {"LANG": "de_DE.UTF-8",
                                                                  "LC_MESSAGES": "C"}


def test_sync_reads_gits_conflict_line_in_a_german_git(team: dict[str, Path],
                                                        german: dict[str, str]) -> None:
    """A moves Problems/ to Cards/, B adds a card with a non-ASCII name in Problems/: git's
    English CONFLICT (file location) line, its path whole (it was "Cards/…: conflict")."""
    a, b = team["a"], team["b"]
    head = cards_moved_while_b_adds(a, b, "q2-报告.md")
    data = _sync(b)
    assert data["merge"] == "conflict" and len(data["conflicts"]) == 1, data
    line = data["conflicts"][0]
    assert line.startswith("CONFLICT (file location): Problems/q2-报告.md added in "), line
    assert line.endswith("suggesting it should perhaps be moved to Cards/q2-报告.md."), line
    assert git(b, "rev-parse", "HEAD") == head and git(b, "status", "--porcelain") == ""


def test_sync_reads_a_hook_refusal_in_a_german_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   german: dict[str, str]) -> None:
    """The hook's reason alone (git's German "Merge wurde nicht committet" was one of
    them); the hook inherits English messages and the user's other locale settings."""
    team = make_team(tmp_path, monkeypatch)
    a, b = team["a"], team["b"]
    assert invoke("problem", "add", "q1", "A problem", cwd=a).code == 0
    git(a, "push", "-q", "origin", "main")
    assert invoke("problem", "add", "q1", "B problem", cwd=b).code == 0  # renumbered to q2
    seen = tmp_path / "hook-env"
    hook = b / ".git" / "hooks" / "pre-merge-commit"
    hook.write_text(f"#!/bin/sh\nenv > '{seen}'\necho 'policy: no merges on Fridays' >&2\nexit 1\n",
                    encoding="utf-8")
    hook.chmod(0o755)
    data = _sync(b)
    assert data["renumbered"] == {"q1": "q2"}, data
    assert data["merge"] == "refused" and data["conflicts"] == ["policy: no merges on Fridays"], data
    env = dict(ln.split("=", 1) for ln in seen.read_text(encoding="utf-8").splitlines() if "=" in ln)
    assert env["LC_MESSAGES"] == "C" and "LANGUAGE" not in env and "LC_ALL" not in env
    assert env["LANG"] == "C.UTF-8"
    if "LC_ALL" in german:  # spread over the categories it set: the character set stays UTF-8
        assert env["LC_CTYPE"] == env["LC_COLLATE"] == env["LC_TIME"] == "C.UTF-8"
    else:
        assert "LC_CTYPE" not in env


def test_a_release_to_a_branch_the_remote_lacks_in_a_german_git(make_kb, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 german: dict[str, str]) -> None:
    """alice renews her lock from another clone, so the release's first push is refused
    (stale info) and it fetches the branch again: git's "couldn't find remote ref" (German
    "Konnte Remote-Referenz … nicht finden") tells it the remote lacks the branch. It
    failed in a German git."""
    origin = make_kb({"Notes/a.md": "a\n"}, commit=True)
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(origin), str(bare))
    c, d = tmp_path / "c", tmp_path / "d"
    for clone in (c, d):
        git(tmp_path, "clone", "-q", str(bare), str(clone))
    git(c, "switch", "-q", "-c", "feature")
    args = ("Notes/a.md", "--owner", "alice", "--remote", "origin")
    monkeypatch.setenv("KB_NOW", "1800000000")
    assert invoke("lock", "claim", *args, cwd=c).code == 0
    monkeypatch.setenv("KB_NOW", "1800000060")
    assert invoke("lock", "renew", *args, cwd=d).code == 0
    (c / "Notes" / "a.md").write_text("a\nalice\n", encoding="utf-8")
    res = invoke("lock", "release", *args, cwd=c)
    assert res.code == 0, res.stderr
    assert git(bare, "rev-parse", "feature") == git(c, "rev-parse", "HEAD")
    assert git(bare, "for-each-ref", "refs/kb") == ""


def test_a_lock_fetch_failure_gives_gits_reason_in_a_german_git(git_repo: Path,
                                                                german: dict[str, str]) -> None:
    """The reason is git's ``fatal:`` line (German: "Schwerwiegend:", so it was the tail
    of git's hint, "und das Repository existiert.")."""
    from kb.remote_locks import fetch

    why = fetch(git_repo, "nowhere") or ""
    assert why.startswith("'nowhere' does not appear to be a git repository"), why
    assert "no git remote named 'nowhere' here?" in why, why


def test_a_git_without_git_hook_is_told_in_a_german_git(make_kb, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        german: dict[str, str]) -> None:
    """A git older than 2.36 (here: a ``git`` on PATH that knows no ``hook``) says "is not
    a git command" in German: the release then commits as such a git would, without the
    hook (it was refused, German text as the hook's reason)."""
    real = shutil.which("git")
    assert real is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\nif [ "$1" = hook ]; then shift; '
                                 f'exec "{real}" kb-no-hook-here "$@"; fi\nexec "{real}" "$@"\n',
                                 encoding="utf-8")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    root = make_kb({"Notes/a.md": "a\n"}, commit=True)
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    hook.chmod(0o755)
    assert invoke("lock", "claim", "Notes/a.md", "--owner", "alice", cwd=root).code == 0
    (root / "Notes" / "a.md").write_text("a\nalice\n", encoding="utf-8")
    res = invoke("lock", "release", "Notes/a.md", "--owner", "alice", cwd=root)
    assert res.code == 0, res.stderr
    assert git(root, "show", "HEAD:Notes/a.md") == "a\nalice"
