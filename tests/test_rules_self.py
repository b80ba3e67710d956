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
    # the same commit, judged in a range (CI, pre-push): the parent's kb.toml governs
    git(repo, "commit", "-q", "--no-verify", "-m", "sneaky")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 1 and "KB304" in codes(data) and "KB309" in codes(data)


def test_weakening_alone_needs_an_override(repo) -> None:
    _with_toml(repo, '\n[rules]\ndisable = ["KB306"]\n')
    git(repo, "add", "-A")
    rc, data = verify_json(repo, "--staged")
    assert rc == 1 and "KB306" in find(data, "KB309")[0]["message"]
    git(repo, "commit", "-q", "--no-verify", "-m", "relax KB306\n\nKb-Override: KB306 agreed in review")
    rc, data = verify_json(repo, "--range", "HEAD~1..HEAD")
    assert rc == 0, data
    assert find(data, "KB309")[0]["severity"] == "info"
