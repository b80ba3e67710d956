"""KB242 (kb/checks/trail_rules.py): a torn or corrupt entry of the exploration graph's log is
a `kb verify` warning at its file and line, in every mode, as `kb trail check` lists it
(acceptance finding: `kb trail check` reported it, `kb verify` did not)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, run_script
from trail_support import kb, ok  # noqa: F401 (a fixture and a helper)


def _kb242(res) -> list[tuple[str, int]]:
    data = json.loads(res.stdout)
    got = [d for d in data["diagnostics"] if d["code"] == "KB242"]
    assert all(d["severity"] == "warning" for d in got), got
    return sorted((d["path"], d["line"]) for d in got)


def test_kb_verify_warns_of_a_corrupt_log_entry_in_every_mode(kb: Path) -> None:
    ok(kb, "add", "--kind", "goal", "--title", "g")
    clean = run_script("verify", "--format", "json", cwd=kb)
    assert clean.code == 0 and _kb242(clean) == []
    (log,) = sorted((kb / ".explore-tree" / "ops").rglob("*.jsonl"))
    rel = log.relative_to(kb).as_posix()
    with log.open("ab") as f:
        f.write(b'{"v": 1, "id": "torn\nnot json\n')
    check = run_script("trail", "check", "--json", cwd=kb)
    assert check.code == 1
    want = sorted((p["path"], p["line"]) for p in json.loads(check.stdout)["problems"])
    assert want == [(rel, 2), (rel, 3)]
    res = run_script("verify", "--format", "json", cwd=kb)
    assert res.code == 0 and _kb242(res) == want, res.stdout
    msg = next(d["message"] for d in json.loads(res.stdout)["diagnostics"] if d["code"] == "KB242")
    assert "corrupt entry: not JSON" in msg and "kb trail check" in msg
    git(kb, "add", "-A")
    staged = run_script("verify", "--staged", "--format", "json", cwd=kb)
    assert staged.code == 0 and _kb242(staged) == want, staged.stdout
    git(kb, "commit", "-q", "--no-verify", "-m", "a damaged log")
    for args in (("--rev", "HEAD"), ("--range", "HEAD~1..HEAD")):
        r = run_script("verify", *args, "--format", "json", cwd=kb)
        assert r.code == 0 and _kb242(r) == want, (args, r.stdout)


def test_a_kb_without_a_trail_has_no_kb242(kb: Path) -> None:
    res = run_script("verify", "--format", "json", cwd=kb)
    assert res.code == 0 and _kb242(res) == []
    assert not (kb / ".explore-tree").exists()
