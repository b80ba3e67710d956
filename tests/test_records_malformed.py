"""Malformed verification records (acceptance finding): a record under Logs/Verification/
that is not JSON or not a valid record was read silently — a vote of 5 counted in its
verifier's accuracy, and a record whose "at" sorted last gave its target a null outcome,
so the settling verdict counted for nobody. Now every reader leaves it out
(:func:`kb.research.verdict.record_problems`), `kb verify` warns at its file (KB243) in
every mode, and `kb verifiers` names it on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import git, invoke, write_files
from test_verify_support import find, verify_json

RECORDS = "Logs/Verification"
BAD = f"{RECORDS}/r-q1-s1_20200101T000000.json"
NOT_JSON = f"{RECORDS}/r-q1-s1_20200102T000000.json"
BAD_BODY = '{"r":"r-q1-s1","verdict":"x","results":[{"verifier":"a","result":5}],"at":"bad"}'

#: A record as `kb verdict` writes it.
KB_FORM = {"r": "r-q1-s1", "verdict": 0.85, "at": "2026-11-02T10:00:00", "mode": "forced",
           "results": [{"verifier": "a", "result": 0.9, "reason": "ok"},
                       {"verifier": "b", "result": 0.8, "reason": ""}],
           "transcript": "", "history": []}
#: A record as Vibe Math writes it: r an object, results a map, at epoch milliseconds.
VM_FORM = {"r": {"rId": "r-p9", "kind": "proposition"}, "verdict": 0.5, "at": 1767225600000,
           "results": {"child-1": {"Result": 0.9, "Reason": "ok"}, "child-2": {"Result": 0.1},
                       "child-3": {"Result": None, "Reason": "timed out"}},
           "transcript": "Reviewer 0: …", "history": []}


def _ok(*args: str, cwd: Path):
    res = invoke(*args, cwd=cwd)
    assert res.code == 0, (args, res.stdout, res.stderr)
    return res


def _kb243(data: dict) -> list[tuple[str, int]]:
    got = find(data, "KB243")
    assert all(d["severity"] == "warning" and not d["blocking"] for d in got), got
    return sorted((d["path"], d["line"]) for d in got)


def _accuracy(stdout: str) -> dict[str, tuple[str, str]]:
    """`kb verifiers`' table: verifier -> (accuracy, agreed/counted)."""
    rows = [ln.split() for ln in stdout.splitlines()[1:] if ln.strip()]
    return {r[0]: (r[1], r[2]) for r in rows}


# ---------------------------------------------------------------------------
# the acceptance repro, end to end


def test_the_repro_warns_at_each_bad_record_and_accuracy_ignores_them(
        tree_kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree_kb
    _ok("problem", "add", "q1", "X", cwd=root)
    _ok("entry", "add", "q1", "--kind", "解法", "--title", "t", "--text", "x", cwd=root)
    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00")
    _ok("verdict", "q1#解法1", "--vote", "a=0.9", "--vote", "b=0.8", cwd=root)
    write_files(root, {BAD: BAD_BODY, NOT_JSON: "not json"})
    git(root, "add", "-A")
    git(root, "commit", "-qm", "records", "--no-verify")
    _ok("index", cwd=root)

    want = [(BAD, 1), (NOT_JSON, 1)]
    for args in ((), ("--staged",), ("--rev", "HEAD"), ("--range", "HEAD~1..HEAD")):
        rc, data = verify_json(root, *args)
        assert rc == 0 and _kb243(data) == want, (args, data["diagnostics"])
    rc, data = verify_json(root)
    msgs = {d["path"]: d["message"] for d in find(data, "KB243")}
    assert '`verdict` "x" is not a number in [0, 1]' in msgs[BAD]
    assert "result 1 (a) 5 is not a number in [0, 1]" in msgs[BAD]
    assert '`at` "bad" is not an ISO 8601 time' in msgs[BAD]
    assert "not JSON" in msgs[NOT_JSON]
    assert all("left out of verifiers' accuracy" in m for m in msgs.values())

    monkeypatch.setenv("KB_NOW", "2026-12-01T11:00:00")
    _ok("verdict", "q1#解法1", "--vote", "a=1", "--vote", "b=1", cwd=root)
    res = _ok("verifiers", cwd=root)
    assert _accuracy(res.stdout) == {"a": ("1.000", "1/1"), "b": ("1.000", "1/1")}, res.stdout
    (line,) = res.stderr.splitlines()
    assert line.startswith("kb: 2 verification records left out") and BAD in line \
        and NOT_JSON in line and "not JSON" in line, line
    # --json: stdout is the same JSON as ever, the note on stderr
    res = _ok("verifiers", "--json", cwd=root)
    got = {v["verifier"]: v for v in json.loads(res.stdout)["verifiers"]}
    assert (got["a"]["agreed"], got["a"]["counted"]) == (1, 1)
    assert res.stderr.startswith("kb: 2 verification records left out")


def test_a_bad_record_added_after_a_clean_check_is_reported(tree_kb: Path) -> None:
    """The records are in no snapshot: the stored results of a clean check must not hide
    a record added since (the listing is part of the results' key)."""
    root = tree_kb
    for args in ((), ("--staged",)):
        rc, data = verify_json(root, *args)
        assert rc == 0 and _kb243(data) == [], args
    write_files(root, {BAD: BAD_BODY})
    rc, data = verify_json(root)
    assert _kb243(data) == [(BAD, 1)]
    git(root, "add", "-A")
    rc, data = verify_json(root, "--staged")
    assert rc == 0 and _kb243(data) == [(BAD, 1)]
    write_files(root, {BAD: json.dumps(KB_FORM)})  # corrected before it was committed
    git(root, "add", "-A")
    for args in ((), ("--staged",)):
        rc, data = verify_json(root, *args)
        assert _kb243(data) == [], args


def test_every_reader_leaves_the_bad_record_out(tree_kb: Path) -> None:
    """load_records (accuracy, forced weights, kb report) and parse_record (kb diff, kb log,
    kb serve) agree: only the valid record is read."""
    from kb.research.verdict import parse_record
    from kb.views.verification import load_records, load_records_checked

    good = f"{RECORDS}/r-q1-s1_20261102T100000.json"
    write_files(tree_kb, {good: json.dumps(KB_FORM), BAD: BAD_BODY, NOT_JSON: "not json"})
    assert [r.path for r in load_records(tree_kb)] == [good]
    recs, bad = load_records_checked(tree_kb)
    assert [b.path for b in bad] == [BAD, NOT_JSON]
    assert parse_record(BAD, json.loads(BAD_BODY)) is None


# ---------------------------------------------------------------------------
# the validation function


def test_records_kb_and_vibe_math_write_are_valid(example_kb: Path) -> None:
    from kb.research.verdict import parse_record, record_problems

    assert record_problems(KB_FORM) == []
    assert record_problems(VM_FORM) == []
    rec = parse_record("vm.json", VM_FORM)
    assert rec is not None and rec.r == "r-p9" and rec.at == "2026-01-01T00:00:00"
    # a missing result (null) is no vote, as before
    assert [(v.verifier, v.result) for v in rec.results] == [("child-1", 0.9), ("child-2", 0.1)]
    for p in sorted((example_kb / RECORDS).glob("*.json")):
        assert record_problems(json.loads(p.read_text(encoding="utf-8"))) == [], p.name
    for at in ("2026-11-02T10:00:00", "2026-11-02T10:00:00.000Z", "2026-11-02T10:00:00+08:00",
               "2026-11-02", 1767225600, 1767225600.5):
        assert record_problems({**KB_FORM, "at": at}) == [], at


def test_the_repro_record_names_each_problem() -> None:
    from kb.research.verdict import record_problems

    assert record_problems(json.loads(BAD_BODY)) == [
        '`verdict` "x" is not a number in [0, 1]',
        "result 1 (a) 5 is not a number in [0, 1]",
        '`at` "bad" is not an ISO 8601 time (2026-11-02T10:00:00)']


@pytest.mark.parametrize("change, words", [
    ({"r": None}, "`r` (the record ID, r-<target>) is missing"),
    ({"r": "q1#解法1"}, '`r` "q1#解法1" is not a record ID'),
    ({"r": {"kind": "proposition"}}, "`r` (the record ID, r-<target>) is missing"),
    ({"r": 7}, "`r` 7 is not a record ID"),
    ({"verdict": None}, "`verdict` is missing"),
    ({"verdict": 1.5}, "`verdict` 1.5 is not a number in [0, 1]"),
    ({"verdict": True}, "`verdict` true is not a number in [0, 1]"),
    ({"verdict": float("nan")}, "`verdict` NaN is not a number in [0, 1]"),
    ({"results": None}, "`results` is missing"),
    ({"results": "all good"}, '`results` "all good" is neither a list nor a map'),
    ({"results": [{"result": 0.9}]}, "result 1 has no verifier name"),
    ({"results": [{"verifier": "a", "result": "0.9"}]}, 'result 1 (a) "0.9" is not a number'),
    ({"results": [{"verifier": "a", "result": -0.1}]}, "result 1 (a) -0.1 is not a number"),
    ({"results": [0.9]}, "result 1 has no verifier name"),
    ({"results": {"a": 2}}, "result 1 (a) 2 is not a number in [0, 1]"),
    ({"results": {"a": {"Result": "yes"}}}, 'result 1 (a) "yes" is not a number'),
    ({"at": None}, "`at` is missing"),
    ({"at": "bad"}, '`at` "bad" is not an ISO 8601 time'),
    ({"at": "2026-13-01T00:00:00"}, "is not an ISO 8601 time"),
    ({"at": "20261102T100000"}, "is not an ISO 8601 time"),
    ({"at": 1e20}, "`at` 1e+20 is not a time"),
    ({"at": True}, "`at` true is not a time"),
])
def test_each_problem_is_named(change: dict, words: str) -> None:
    from kb.research.verdict import parse_record, record_problems

    # None: the field is absent
    data = {k: v for k, v in {**KB_FORM, **change}.items() if v is not None}
    got = record_problems(data)
    assert len(got) == 1 and words in got[0], got
    assert parse_record("x.json", data) is None


def test_not_an_object_not_json_not_utf8() -> None:
    from kb.research.verdict import BadRecord, read_record, record_problems

    assert record_problems([KB_FORM]) == ["not a JSON object but an array"]
    assert record_problems(None) == ["not a JSON object but null"]
    got = read_record("a.json", b"not json")
    assert isinstance(got, BadRecord) and got.why.startswith("not JSON (Expecting value")
    assert read_record("a.json", b"\xff\xfe{}") == BadRecord("a.json", "not UTF-8")
    assert read_record("a.json", json.dumps(KB_FORM).encode()).r == "r-q1-s1"
