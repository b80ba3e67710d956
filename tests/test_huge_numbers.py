"""Decimal numbers too long to be numbers (CPython refuses ``int()`` over 4,300 digits).

An entry number, priority, hypothesis or experiment ID of thousands of digits in a
file is invalid input reported at its line (the rest of the KB still indexed, shown
and verified); on the command line it is a usage error (exit 2). Never ``kb:
internal error`` (exit 3). Real files in committed copies of the example KB, real
``kb`` runs (in-process through the CLI, and the console script and git's
pre-commit hook in a subprocess).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import commit_all, copy_example, git, invoke, run_script, source_env

#: Past CPython's 4,300-digit limit for int() of a string.
HUGE = "9" * 4301


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    return copy_example(tmp_path / "ex")


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _no_crash(r) -> None:
    assert r.code != 3 and "internal error" not in r.stderr, r.stderr[:500]


def _message_line(out: str, code: str) -> str:
    """The first line of ``out`` reporting ``code``."""
    return next(ln for ln in out.splitlines() if f" {code} " in ln)


# -- in files: a diagnostic at path:line, the rest of the KB still read -------------------------


def test_entry_number_is_a_malformed_entry_line(kb: Path) -> None:
    _append(kb / "Problems" / "q1.md", f"\n### 解法 {HUGE}｜x｜概率0.5｜状态未定论\nbody\n")
    r = invoke("index", cwd=kb)
    _no_crash(r)
    assert r.code == 1
    assert "Problems/q1.md:19:1: KB122" in r.stdout and "4301 digits" in r.stdout
    assert "2 problems" in r.stderr  # the rest of the KB, q1 included, is indexed
    r = invoke("show", "q1", cwd=kb)
    _no_crash(r)
    assert r.code == 0 and "Problems/q1.md:1" in r.stdout
    r = invoke("ls", cwd=kb)
    _no_crash(r)
    assert r.code == 0 and "Problems/q1.md:19 KB122" in r.stderr
    r = run_script("verify", cwd=kb)
    _no_crash(r)
    assert r.code == 1 and "Problems/q1.md:19:1: KB122" in r.stdout


def test_entry_number_of_19_digits_is_not_a_number_either(kb: Path) -> None:
    _append(kb / "Problems" / "q1.md", f"\n### 解法 {'1' * 19}｜x｜概率0.5｜状态未定论\nbody\n")
    r = invoke("verify", cwd=kb)
    assert r.code == 1 and "Problems/q1.md:19:1: KB122" in r.stdout, r.stdout + r.stderr


def test_application_number_is_a_malformed_application_line(kb: Path) -> None:
    method = next((kb / "Methods").glob("*.md"))
    _append(method, f"\n### 应用 {HUGE}｜2026-11-02 10:00:00｜问题 q1\n")
    r = invoke("verify", cwd=kb)
    _no_crash(r)
    rel = method.relative_to(kb).as_posix()
    assert r.code == 1 and f"{rel}:" in r.stdout and "KB122" in r.stdout, r.stdout


def test_priority_is_not_an_integer(kb: Path) -> None:
    card = kb / "Problems" / "q1.md"
    card.write_text(card.read_text(encoding="utf-8").replace("- 优先级: never", f"- 优先级: {HUGE}"),
                    encoding="utf-8")
    r = invoke("ls", cwd=kb)
    _no_crash(r)
    assert r.code == 0 and "Problems/q1.md:6 KB125" in r.stderr
    r = invoke("verify", cwd=kb)
    _no_crash(r)
    assert r.code == 1 and "Problems/q1.md:6:1: KB125" in r.stdout
    # the message quotes the number's start and says how long it is, not 4,301 digits
    line = _message_line(r.stdout, "KB125")
    assert f"not {'9' * 20 + '…'!r} (4,301 digits)" in line and len(line) < 200, line


def test_a_long_value_is_quoted_by_its_start_and_its_length() -> None:
    from kb.numbers import quoted

    assert quoted("12345") == "'12345'" and quoted("E001", quote=False) == "E001"
    assert quoted("1" * 20) == repr("1" * 20)  # at the limit: whole
    assert quoted("1234567890" * 450) == "'12345678901234567890…' (4,500 digits)"
    assert quoted("E" + "9" * 4301, quote=False) == "E9999999999999999999… (4,302 characters)"


def test_experiment_title_id(kb: Path) -> None:
    exp = kb / "experiments" / "E001.md"
    exp.write_text(exp.read_text(encoding="utf-8").replace("# E001:", f"# E{HUGE}:", 1), encoding="utf-8")
    r = invoke("ls", cwd=kb)
    _no_crash(r)
    assert r.code == 0
    r = invoke("verify", cwd=kb)
    _no_crash(r)
    assert r.code == 1 and "experiments/E001.md:1:1: KB208" in r.stdout
    line = _message_line(r.stdout, "KB208")
    assert line.endswith("experiment E9999999999999999999… (4,302 characters) is in E001.md; an "
                         "experiment ID has at most 18 digits and its file is named <ID>.md: give "
                         "it its file's ID (E001)"), line


def _add_huge_hypothesis(kb: Path) -> None:
    _append(kb / "tree.md", f"\n## H{HUGE}: z\nStatus: 待验\nEvidence: (empty)\n")


def test_hypothesis_id_is_not_a_valid_id(kb: Path) -> None:
    _add_huge_hypothesis(kb)
    r = invoke("ls", cwd=kb)
    _no_crash(r)
    assert r.code == 0
    r = invoke("verify", cwd=kb)
    _no_crash(r)
    assert r.code == 1 and "tree.md:32:1: KB201" in r.stdout and "4301 digits" in r.stdout
    line = _message_line(r.stdout, "KB201")
    assert "KB201 [error] H9999999999999999999… (4,302 characters) is not a valid ID" in line, line
    assert len(line) < 300, line


def test_hypothesis_id_in_the_pre_commit_hook(kb: Path) -> None:
    assert invoke("hooks", "install", cwd=kb).code == 0
    _add_huge_hypothesis(kb)
    git(kb, "add", "tree.md")
    proc = subprocess.run(["git", "commit", "-q", "-m", "huge"], cwd=kb, capture_output=True,
                          env=source_env(), timeout=120)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert "internal error" not in out, out[:500]
    assert proc.returncode != 0 and "KB201" in out  # refused for the invalid ID, not a crash


def test_hyp_add_numbers_past_an_invalid_id(kb: Path) -> None:
    _add_huge_hypothesis(kb)
    commit_all(kb, "huge hypothesis")
    r = invoke("hyp", "add", "A new one", "--no-commit", cwd=kb)
    _no_crash(r)
    assert r.code == 0 and "added H3" in r.stdout, r.stdout + r.stderr


def test_verify_range_over_a_commit_with_invalid_ids(kb: Path) -> None:
    _add_huge_hypothesis(kb)
    _append(kb / "tree.md", "\n## H3: next\nStatus: 待验\nEvidence: (empty)\n")
    commit_all(kb, "huge hypothesis")
    r = invoke("verify", "--rev", "HEAD", cwd=kb)
    _no_crash(r)
    assert r.code == 1 and "KB201" in r.stdout


# -- on the command line: a usage error --------------------------------------------------------


@pytest.mark.parametrize("target", [f"q1#解法{HUGE}", f"r-q1-s{HUGE}"])
def test_verdict_target(kb: Path, target: str) -> None:
    r = invoke("verdict", target, "--vote", "a=1", "--vote", "b=1", cwd=kb)
    assert r.code == 2 and "4301 digits" in r.stderr, r.stderr[:500]


def test_exp_log_id(kb: Path) -> None:
    r = run_script("exp", "log", f"E{HUGE}", "x", cwd=kb)
    assert r.code == 2 and "4301 digits" in r.stderr, r.stderr[:500]


def test_problem_priority_argument(kb: Path) -> None:
    r = invoke("problem", "add", "q9", "A statement", "--priority", HUGE, cwd=kb)
    assert r.code == 2 and "digits" in r.stderr, r.stderr[:500]


def test_lock_ttl_argument(kb: Path) -> None:
    r = invoke("lock", "claim", "tree.md", "--ttl", f"{HUGE}s", cwd=kb)
    assert r.code == 2 and "longer than a year" in r.stderr, r.stderr[:500]


@pytest.mark.parametrize("text", ['{"n": ' + "9" * 4400 + "}", "[" * 100_000])
def test_a_generation_file_json_cannot_hold_is_a_gen_error(tmp_path: Path, text: str) -> None:
    """A number too long for int() (ValueError, not a JSON syntax error) or a nesting past
    the recursion limit in a generation loop file: a GenError naming the file."""
    from kb.gen.errors import GenError
    from kb.gen.models import load

    path = tmp_path / "candidates.json"
    path.write_text(text, encoding="utf-8")
    # (the nesting is refused by kb.json_input as malformed JSON, at its line and column)
    with pytest.raises(GenError, match=r"candidates\.json(: not JSON kb can read|:1:1: not valid "
                                       r"JSON: nested too deeply)"):
        load("candidates", path)


def test_tested_hypothesis_id_is_quoted_by_its_start(kb: Path) -> None:
    """KB211 quotes an experiment's and a hypothesis's ID of thousands of digits as KB207/KB208
    do: its start and its length, not a line of 5,000 characters."""
    exp = kb / "experiments" / "E001.md"
    text = exp.read_text(encoding="utf-8")
    exp.write_text(text.replace("# E001:", f"# E{HUGE}:", 1)
                   .replace("**Hypothesis**: H1 ", f"**Hypothesis**: H{HUGE} ", 1), encoding="utf-8")
    r = invoke("verify", cwd=kb)
    _no_crash(r)
    line = _message_line(r.stdout, "KB211")
    assert "experiments/E001.md:1:1: KB211" in line, r.stdout[:2000]
    assert ("experiment E9999999999999999999… (4,302 characters) tests H9999999999999999999… "
            "(4,302 characters), which is not a hypothesis of tree.md") in line, line[:500]
    assert len(line) < 300, len(line)
