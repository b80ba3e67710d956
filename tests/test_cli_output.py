"""Human output for people and pipes: `kb -C DIR`, `kb ls --format tsv`, no colour and
no wrapping when stdout is not a terminal (NO_COLOR honoured)."""

from __future__ import annotations

from pathlib import Path

from conftest import invoke, run_script

LONG = ("The slow integration tests spend most of their time recreating the Postgres "
        "schema in per-test fixtures")


def test_dash_c_runs_in_another_directory(example_kb: Path, tmp_path: Path) -> None:
    here = invoke("ls", "problems", "--json", cwd=example_kb).json()
    there = invoke("-C", str(example_kb), "ls", "problems", "--json", cwd=tmp_path)
    assert there.code == 0 and there.json() == here
    bad = invoke("-C", str(tmp_path / "missing"), "ls", "--json", cwd=tmp_path)
    assert bad.code == 2 and bad.json()["error"]["kind"] == "usage"
    assert "missing" in bad.json()["error"]["message"]


def test_ls_tsv_is_one_object_per_line(example_kb: Path) -> None:
    r = invoke("ls", "hypotheses", "--format", "tsv", cwd=example_kb)
    assert r.code == 0
    rows = [ln.split("\t") for ln in r.stdout.splitlines()]
    ids = [o["id"] for o in invoke("ls", "hypotheses", "--json", cwd=example_kb).json()["objects"]]
    assert [row[1] for row in rows] == ids
    assert all(row[0] == "hypothesis" and len(row) == 4 for row in rows)
    assert ["hypothesis", "H1.1.1", "进行中", LONG] in rows


def test_tables_do_not_wrap_or_colour_in_a_pipe(example_kb: Path) -> None:
    """A narrow COLUMNS and a forced colour terminal are ignored when stdout is a pipe."""
    r = run_script("ls", "hypotheses", cwd=example_kb,
                   env={"COLUMNS": "40", "FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert r.code == 0
    assert any(LONG in ln and ln.lstrip().startswith("H1.1.1") for ln in r.stdout.splitlines())
    assert "\x1b[" not in r.stdout
