"""The project report (``kb report``, ``Logs/报告.md``) never stops a merge: kb's ``kb-report``
driver keeps our side and says to run ``kb report`` (the report is built from the whole KB
and carries a date, so no driver can rebuild it mid-merge; it is a view, nothing is lost).

The case a tester saw: two clones of one KB sharing a bare server repository both added a
card and ran ``kb report`` (each a commit) on diverging histories; ``kb sync`` in one of them
then stopped on a ``Logs/报告.md`` merge conflict, as did a plain ``git pull``. Here both sides
report after a shared report (both changed it) or for the first time (both added it), and the
merge is ``kb sync``, a plain ``git pull`` with kb's hooks installed, ``kb sync`` of a KB whose
``.gitattributes`` predates the driver, or ``git merge`` in a KB kept in a subfolder with its
logs folder moved in kb.toml. Each time the merge is clean, its report is our side's bytes,
and ``kb report`` then writes one that holds both sides' cards.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, make_team

REPORT = "Logs/报告.md"
#: ``.gitattributes`` as ``kb init`` wrote it before kb knew the report's driver.
OLDER_ATTRIBUTES = "DASHBOARD.md merge=kb-dashboard\ntree.md merge=kb-tree\nTRAIL.md merge=kb-trail\n"
HINT = "kb merge: {path}: kept our side (both sides changed it); run `kb report` to refresh it"


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """:func:`conftest.make_team` with kb's clock unset: each report's date is ``--date``."""
    monkeypatch.delenv("KB_NOW", raising=False)
    return make_team(tmp_path, monkeypatch)


def _ok(kb: Path, *args: str) -> dict:
    """``kb ARGS --json`` in ``kb``: asserts exit 0 and returns the parsed JSON."""
    r = invoke(*args, "--json", cwd=kb)
    assert r.code == 0, r.stderr + r.stdout
    return r.json()


def _card_and_report(kb: Path, qid: str, statement: str, date: str) -> None:
    """Add a problem card (one commit) and write the report (one commit)."""
    _ok(kb, "problem", "add", qid, statement)
    assert _ok(kb, "report", "--date", date)["commit"]


def _diverge(a: Path, b: Path, shared_report: bool, report: str = REPORT) -> bytes:
    """Both clones add a card and report on histories that part after a shared card; ``a``
    pushes. ``shared_report``: the shared card was reported before they parted (both then
    change the report); else neither had it (both add it). Returns ``b``'s report bytes."""
    _ok(a, "problem", "add", "q1", "Shared problem")
    if shared_report:
        _ok(a, "report", "--date", "2026-12-01")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    _card_and_report(a, "q2", "Alice problem", "2026-12-02")
    git(a, "push", "-q", "origin", "main")
    _card_and_report(b, "q3", "Bob problem", "2026-12-03")
    return (b / report).read_bytes()


def _assert_merged_report(root: Path, ours: bytes, merge: str, report: str = REPORT) -> None:
    """A clean merge commit ``merge`` holding both sides' cards and our side's report; then
    ``kb report`` (what the hint says) writes one naming all three cards."""
    assert git(root, "status", "--porcelain") == ""
    assert len(git(root, "rev-list", "--parents", "-n", "1", merge).split()) == 3
    assert {"q1.md", "q2.md", "q3.md"} <= set(git(root, "ls-tree", "--name-only", merge,
                                                  "Problems/").replace("Problems/", "").split())
    kept = subprocess.run(["git", "cat-file", "blob", f"{merge}:./{report}"], cwd=root,
                          capture_output=True, check=True).stdout
    assert kept == ours and b"<<<<<<<" not in kept
    assert "生成于 2026-12-03" in kept.decode("utf-8")
    assert _ok(root, "report", "--date", "2026-12-04")["commit"]
    text = (root / report).read_text(encoding="utf-8")
    assert all(f"**{q}**" in text for q in ("q1", "q2", "q3")) and "生成于 2026-12-04" in text


@pytest.mark.parametrize("shared_report", [True, False], ids=["both-changed", "both-added"])
def test_sync_merges_a_report_written_on_both_sides(team: dict[str, Path], shared_report: bool) -> None:
    a, b = team["a"], team["b"]
    ours = _diverge(a, b, shared_report)
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, json.dumps(data)[:3000] + res.stderr
    assert data["merge"] == "merged" and data["conflicts"] == [] and data["findings"] == []
    assert data["drivers"]["kb-report"] == "registered"
    # The driver's word reaches the user: the report is our side's, to refresh.
    assert data["notes"] == [HINT.format(path=REPORT)]
    _assert_merged_report(b, ours, data["merge_commit"])


def test_sync_with_kb_hooks_says_to_refresh_the_report(team: dict[str, Path]) -> None:
    """The tester's case: kb's hooks installed, both sides reported; ``kb sync`` merges
    and prints the driver's note (as a plain ``git pull`` does), once."""
    a, b = team["a"], team["b"]
    for clone in (a, b):
        assert invoke("hooks", "install", cwd=clone).code == 0
    ours = _diverge(a, b, shared_report=True)
    res = invoke("sync", cwd=b)
    assert res.code == 0, res.stderr
    assert res.stderr.splitlines().count(HINT.format(path=REPORT)) == 1, res.stderr
    _assert_merged_report(b, ours, git(b, "rev-list", "--merges", "-n", "1", "HEAD"))


def test_sync_of_an_older_kb_names_the_report_driver_and_merges(team: dict[str, Path]) -> None:
    """A KB made before the report's driver: kb sync commits its ``.gitattributes`` line first."""
    a, b = team["a"], team["b"]
    (a / ".gitattributes").write_text(OLDER_ATTRIBUTES, encoding="utf-8")
    commit_all(a, "an older KB: no driver for the report")
    ours = _diverge(a, b, shared_report=True)
    assert git(b, "check-attr", "merge", "--", REPORT).endswith("unspecified")
    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, json.dumps(data)[:3000] + res.stderr
    assert data["merge"] == "merged" and data["conflicts"] == []
    attrs = (b / ".gitattributes").read_text(encoding="utf-8")
    assert attrs == OLDER_ATTRIBUTES + (f"{REPORT} merge=kb-report\nProblems/*.md merge=kb-card\n"
                                        "Propos/**/*.md merge=kb-card\n")
    assert git(b, "check-attr", "merge", "--", REPORT).endswith("kb-report")
    _assert_merged_report(b, ours, data["merge_commit"])


def test_git_pull_with_kb_hooks_keeps_our_report_and_says_to_refresh_it(team: dict[str, Path]) -> None:
    a, b = team["a"], team["b"]
    hooks = invoke("hooks", "install", cwd=b)
    assert hooks.code == 0 and "kb-report: registered" in hooks.stdout, hooks.stdout + hooks.stderr
    ours = _diverge(a, b, shared_report=True)
    proc = subprocess.run(["git", "pull", "--no-rebase", "--no-edit", "origin", "main"], cwd=b,
                          capture_output=True)
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert proc.returncode == 0, out
    assert proc.stderr.decode("utf-8").splitlines().count(HINT.format(path=REPORT)) == 1, out
    _assert_merged_report(b, ours, git(b, "rev-parse", "HEAD"))


def test_git_merge_of_a_kb_in_a_subfolder_follows_the_configured_logs_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``[paths] logs`` moved: the ``.gitattributes`` line (``kb hooks install`` adds it) and
    the driver follow it, for a KB below the top of its repository."""
    from kb.ops.init import init_kb

    monkeypatch.delenv("KB_NOW", raising=False)
    monkeypatch.setenv("KB_TODAY", "2026-11-29")
    top = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(top))
    kb = top / "lab"
    init_kb(kb)
    with (kb / "kb.toml").open("a", encoding="utf-8") as f:
        f.write('[paths]\nlogs = "Journal/"\n')
    assert invoke("hooks", "install", cwd=kb).code == 0
    assert "Journal/报告.md merge=kb-report" in (kb / ".gitattributes").read_text(encoding="utf-8")
    commit_all(top, "kb init, logs in Journal/")
    _ok(kb, "problem", "add", "q1", "Shared problem")
    _ok(kb, "report", "--date", "2026-12-01")
    git(top, "checkout", "-qb", "side")
    _card_and_report(kb, "q2", "Alice problem", "2026-12-02")
    git(top, "checkout", "-q", "main")
    _card_and_report(kb, "q3", "Bob problem", "2026-12-03")
    ours = (kb / "Journal" / "报告.md").read_bytes()
    proc = subprocess.run(["git", "merge", "--no-edit", "side"], cwd=top, capture_output=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode("utf-8", "replace")
    assert HINT.format(path="lab/Journal/报告.md") in proc.stderr.decode("utf-8")
    _assert_merged_report(kb, ours, git(top, "rev-parse", "HEAD"), "Journal/报告.md")


def test_the_reports_title_is_the_same_in_every_clone(team: dict[str, Path]) -> None:
    """The title named the clone's folder (`# 项目报告｜a` in one clone, `｜b` in the other):
    every teammate's report rewrote it. A KB at the top of its repository is named by the
    repository its `origin` names (`remote.git` -> `remote`)."""
    a, b = team["a"], team["b"]
    _ok(a, "problem", "add", "q1", "Shared problem")
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "--ff-only")
    for kb in (a, b):
        _ok(kb, "report", "--date", "2026-12-01", "--no-commit")
    first = {kb.name: (kb / REPORT).read_text(encoding="utf-8").splitlines()[0] for kb in (a, b)}
    assert first == {"a": "# 项目报告｜remote", "b": "# 项目报告｜remote"}
    assert (a / REPORT).read_bytes() == (b / REPORT).read_bytes()
