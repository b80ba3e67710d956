"""Human output for people and pipes: `kb -C DIR`, `kb ls --format tsv`, no colour and
no wrapping when stdout is not a terminal (NO_COLOR honoured), table cells of bounded
length (a 200,000-character status is cut; --json and tsv keep it whole)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


# -- long values: table cells are bounded, machine output keeps them whole ------------

#: A hand-edited tree.md line: 200,000 characters, wide ones first (shown in the cell).
LONG_STATUS = "进行" * 5 + "s" * (200_000 - 10)
LONG_TITLE = "T" * 200_000


def _long_kb(make_kb) -> Path:
    tree = (f"# Tree\n\n## H1: {LONG_TITLE}\nStatus: {LONG_STATUS}\n\n"
            "## H2: A short statement\nStatus: 待验\n")
    return make_kb({"tree.md": tree, ".gitignore": ".kb/\n"}, commit=True)


def _shown(text: str) -> str:
    from kb_cli.output import CELL_MAX

    return text[: CELL_MAX - 1] + "…"


@pytest.mark.parametrize("path", ["rich", "plain"])
def test_ls_table_cells_are_bounded_json_and_tsv_keep_values(make_kb, monkeypatch, path) -> None:
    """`kb ls hypotheses` of a 200,000-character status and statement prints a few hundred
    bytes, not 700 KB: rich's table (up to RICH_MAX_ROWS rows) and the plain lines alike."""
    import kb_cli.ls

    root = _long_kb(make_kb)
    if path == "plain":
        monkeypatch.setattr(kb_cli.ls, "RICH_MAX_ROWS", 1)
    r = invoke("ls", "hypotheses", cwd=root)
    assert r.code == 0, r.stderr
    assert len(r.stdout.encode("utf-8")) < 5_000
    (row,) = [ln for ln in r.stdout.splitlines() if ln.startswith("H1 ")]
    assert _shown(LONG_STATUS) in row and row.rstrip().endswith(_shown(LONG_TITLE))
    assert any(ln.startswith("H2 ") and ln.rstrip().endswith("A short statement")
               for ln in r.stdout.splitlines())  # a short cell is never cut
    data = invoke("ls", "hypotheses", "--json", cwd=root).json()
    h1 = next(o for o in data["objects"] if o["id"] == "H1")
    assert h1["status"] == LONG_STATUS and h1["title"] == LONG_TITLE
    tsv = invoke("ls", "hypotheses", "--format", "tsv", cwd=root).stdout.splitlines()
    assert ["hypothesis", "H1", LONG_STATUS, LONG_TITLE] in [ln.split("\t") for ln in tsv]


def test_find_lines_are_bounded_json_keeps_values(make_kb) -> None:
    root = _long_kb(make_kb)
    r = invoke("find", "TTT", cwd=root)
    assert r.code == 0 and len(r.stdout.encode("utf-8")) < 5_000
    assert r.stdout.split("\t") == ["H1", "hypothesis", _shown(LONG_STATUS), _shown(LONG_TITLE),
                                    "tree.md:3\n"]
    (h1,) = invoke("find", "TTT", "--json", cwd=root).json()["objects"]
    assert h1["status"] == LONG_STATUS and h1["title"] == LONG_TITLE


def test_ls_on_a_terminal_is_bounded_and_unstyled(make_kb) -> None:
    """On a terminal rich folds a cell over lines: the cut one takes a few, and the
    header is plain (a bold escape would be printed as the text ``\\x1b[1m``)."""
    import pty
    import select
    import subprocess

    from conftest import kb_script, source_env

    root = _long_kb(make_kb)
    main, term = pty.openpty()
    env = {**source_env(), "COLUMNS": "80", "LINES": "24", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([kb_script(), "ls", "hypotheses"], cwd=root, stdout=term,
                            stderr=subprocess.DEVNULL, env=env)
    os.close(term)
    out = b""
    try:
        while select.select([main], [], [], 60)[0]:  # bounded: a silent minute ends it
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the command closed the terminal
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(main)
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    text = out.decode("utf-8")
    assert len(out) < 5_000 and "…" in text
    assert "H1" in text and "A short statement" in text
    assert "\x1b" not in text and "\\x1b" not in text
