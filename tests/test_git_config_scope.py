"""kb.git.config / config_bool: inside config_scope, one ``git config --list`` answers
what ``git config --get`` (``--type=bool``) answers outside it, key by key; a
``git config`` that sets a value makes the scope read the list again."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import git, git_init

CONFIG = """[user]
\temail = first@example.invalid
[user]
\temail = last@example.invalid
[kb]
\tlockRemote = origin
\tlockOffline = warn
\tflag
[commit]
\tgpgSign = yes
[merge "KB-Dashboard"]
\tdriver = kb merge-driver %O %A %B
[core]
\tnumbers = 0
[t]
\ton = 1
\toff = off
\tempty =
\tword = maybe
"""

KEYS = ["user.email", "kb.lockRemote", "KB.LOCKREMOTE", "kb.lockOffline", "kb.flag",
        "commit.gpgSign", "merge.KB-Dashboard.driver", "merge.kb-dashboard.driver",
        "core.numbers", "t.on", "t.off", "t.empty", "t.word", "kb.owner", "no.such"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = git_init(tmp_path / "r")
    with (root / ".git/config").open("a", encoding="utf-8") as fh:
        fh.write(CONFIG)
    return root


def test_scope_answers_as_git_config_get(repo: Path) -> None:
    from kb import git as kgit

    outside = {k: (kgit.config(k, repo), kgit.config_bool(k, repo)) for k in KEYS}
    calls: list[list[str]] = []
    real = subprocess.run

    def counting(args, *a, **kw):  # count the git processes, run them for real
        calls.append(list(args))
        return real(args, *a, **kw)

    subprocess.run = counting
    try:
        with kgit.config_scope():
            assert kgit.in_config_scope()
            inside = {k: (kgit.config(k, repo), kgit.config_bool(k, repo)) for k in KEYS}
    finally:
        subprocess.run = real
    assert not kgit.in_config_scope()
    assert inside == outside
    assert calls == [["git", "config", "--list", "-z"]]
    assert outside["user.email"] == ("last@example.invalid", None)
    assert outside["kb.flag"] == ("", True) and outside["commit.gpgSign"][1] is True
    assert outside["merge.KB-Dashboard.driver"][0] == "kb merge-driver %O %A %B"
    assert outside["merge.kb-dashboard.driver"] == (None, None)  # a subsection keeps its case
    assert [outside[k][1] for k in ("core.numbers", "t.on", "t.off", "t.empty", "t.word")] == \
        [False, True, False, False, None]
    assert outside["no.such"] == (None, None)


def test_a_config_write_in_the_scope_is_read_back(repo: Path) -> None:
    from kb import git as kgit
    from kb.locks import default_owner

    with kgit.config_scope():
        assert default_owner(repo) == "last@example.invalid"
        kgit.run(["config", "kb.owner", "alice"], repo, write=True)
        assert default_owner(repo) == "alice"
        git(repo, "config", "kb.lockRemote", "elsewhere")  # behind kb's back: not seen …
        assert kgit.config("kb.lockRemote", repo) == "origin"
    assert kgit.config("kb.lockRemote", repo) == "elsewhere"  # … until the scope ends
