"""A reviewer's diff says how each verdict was reached, as ``kb verdict`` does.

A record's ``mode`` is the rule for a split vote in effect when the verdict was given
(``forced`` by default), stored whichever rule decided: a consensus (0.9 and 1) or a
unanimous vote (1 and 1) used to show as "mode forced" in ``kb diff`` and on the
``kb serve`` Diff page. The branch is read from the record's votes, so older records and
Vibe Math's (no ``mode``) say it too; the ``mode`` field stays in the JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest

from conftest import commit_all, git, invoke
from webkb import serve


def _kb(root: Path, *args: str) -> str:
    r = invoke(*args, cwd=root)
    assert r.code == 0, (args, r.stdout, r.stderr)
    return r.stdout


@pytest.fixture
def verdicts(example_kb: Path) -> tuple[Path, str]:
    """Three propositions, a consensus, a unanimous and a split verdict; the base commit."""
    for pid in ("pq", "pu", "ps"):
        _kb(example_kb, "propo", "add", "数论", pid, f"statement {pid}")
    base = git(example_kb, "rev-parse", "HEAD").strip()
    assert "(consensus)" in _kb(example_kb, "verdict", "pq", "--vote", "A=0.9", "--vote", "B=1")
    assert "(unanimous)" in _kb(example_kb, "verdict", "pu", "--vote", "A=1", "--vote", "B=1")
    assert "(split, forced)" in _kb(example_kb, "verdict", "ps", "--vote", "A=0.2", "--vote", "B=0.9")
    return example_kb, base


def test_diff_text_and_json_say_how_the_verdict_was_reached(verdicts: tuple[Path, str]) -> None:
    root, base = verdicts
    text = _kb(root, "diff", f"{base}..HEAD")
    assert "verdict on pq: 0.95 from 2 votes (A 0.9, B 1), consensus" in text
    assert "verdict on pu: 1 from 2 votes (A 1, B 1), unanimous" in text
    assert re.search(r"verdict on ps: [0-9.]+ from 2 votes \(A 0.2, B 0.9\), split, forced", text)
    assert "mode forced" not in text
    d = json.loads(_kb(root, "diff", f"{base}..HEAD", "--json"))
    got = {v["target"]: (v["branch"], v["how"], v["mode"]) for v in d["verdicts"]}
    assert got == {"pq": ("consensus", "consensus", "forced"),
                   "pu": ("unanimous", "unanimous", "forced"),
                   "ps": ("split", "split, forced", "forced")}
    # kb log's verdict entries carry the same
    log = json.loads(_kb(root, "log", "pq", "--json"))
    [v] = [v for e in log["entries"] for v in e.get("verdict") or []]
    assert (v["branch"], v["how"], v["mode"]) == ("consensus", "consensus", "forced")


def test_older_and_vibe_math_records_say_it_too(example_kb: Path) -> None:
    base = git(example_kb, "rev-parse", "HEAD").strip()
    folder = example_kb / "Logs" / "Verification"
    # kb's shape with mode "flat" on a consensus; Vibe Math's map without a mode, a split
    # with a missing result (counted 0.5); a split record of kb's with no mode.
    (folder / "r-p1_20261201T100000.json").write_text(json.dumps(
        {"r": "r-p1", "verdict": 0.95, "mode": "flat", "at": "2026-12-01T10:00:00",
         "results": [{"verifier": "a", "result": 1}, {"verifier": "b", "result": 0.9}]}))
    (folder / "r-p2_20261201T100000.json").write_text(json.dumps(
        {"r": {"rId": "r-p2"}, "verdict": 0.5, "at": 1764583200000,
         "results": {"a": {"Result": 1, "Reason": "ok"}, "b": {"Result": None}}}))
    commit_all(example_kb, "older records")
    d = json.loads(_kb(example_kb, "diff", f"{base}..HEAD", "--json", "--no-findings"))
    got = {v["r"]: (v["branch"], v["how"], v["mode"]) for v in d["verdicts"]}
    assert got == {"r-p1": ("consensus", "consensus", "flat"), "r-p2": ("split", "split", None)}


def test_diff_and_board_pages_say_it(verdicts: tuple[Path, str]) -> None:
    root, base = verdicts
    with serve(root) as s:
        r = httpx.get(s.url + "/diff", params={"a": base}, timeout=60)
        assert r.status_code == 200
        assert re.search(r'verdict on <a href="[^"]*"><code>pq</code></a>: <strong>0.95</strong> '
                         r"from 2 votes \(A 0.9, B 1\), consensus<", r.text)
        assert re.search(r'verdict on <a href="[^"]*"><code>pu</code></a>: <strong>1</strong> '
                         r"from 2 votes \(A 1, B 1\), unanimous<", r.text)
        assert "split, forced<" in r.text and "mode forced" not in r.text
        board = httpx.get(s.url + "/board", timeout=60).text
        assert re.search(r"<b>r-pq</b> verdict <b>0.95</b> · 2 votes · consensus", board)
        assert re.search(r"<b>r-pu</b> verdict <b>1(\.0)?</b> · 2 votes · unanimous", board)
        assert re.search(r"<b>r-ps</b> verdict <b>[0-9.]+</b> · 2 votes · split, mode forced", board)
