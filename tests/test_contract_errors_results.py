"""The agents' contract, part one: one error vocabulary and one write result.

Every error has a snake_case kind with a fixed exit code (kb.errors.ERROR_KINDS);
every write command, tree or card, prints the same OpResult object, whose
``blobs`` are what ``--expect`` takes next.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, invoke, run_script, source_env

WRITE_KEYS = {"op", "id", "ids", "paths", "blobs", "commit", "changes", "recovered"}
NOW = "2026-11-02T10:00:00"


@pytest.fixture
def ex(example_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KB_NOW", NOW)
    return example_kb


def test_error_vocabulary_is_one_table() -> None:
    from kb import errors

    assert errors.ERROR_KINDS.keys() == {"usage", "environment", "internal", "refused", "not_found",
                                         "conflict", "locked", "stale"}
    codes = {k: v[0] for k, v in errors.ERROR_KINDS.items()}
    assert codes == {"usage": 2, "environment": 2, "internal": 3, "refused": 1, "not_found": 1,
                     "conflict": 1, "locked": 1, "stale": 1}
    # every kb error class names a kind of the table, with the table's exit code
    for cls in (errors.UsageError, errors.EnvironmentError_, errors.NotAKnowledgeBase,
                errors.GitError, errors.ConfigError, errors.InternalError, errors.RefusedError,
                errors.NotFoundError, errors.ConflictError, errors.LockedError, errors.StaleError):
        assert codes[cls.kind] == cls.exit_code, cls
    from kb.locks import LockHeld, LockLost, NotLocked

    assert (LockHeld.kind, NotLocked.kind, LockLost.kind) == ("locked", "not_found", "conflict")


def test_a_bug_exits_3_with_the_json_error(ex: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A non-kb exception is a bug: exit 3, one line on stderr, and the JSON object too."""
    import kb.api

    def broken(*a: object, **k: object) -> None:
        raise ZeroDivisionError("injected by the test")

    monkeypatch.setattr(kb.api, "list_objects", broken)
    r = invoke("ls", "--json", cwd=ex)
    assert r.code == 3
    assert r.json()["error"] == {"kind": "internal", "exit_code": 3,
                                 "message": "internal error: ZeroDivisionError: injected by the test"}
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_not_a_kb_and_usage_kinds(tmp_path: Path) -> None:
    r = invoke("ls", "--json", cwd=tmp_path)
    assert r.code == 2 and r.json()["error"]["kind"] == "environment"
    r = invoke("ls", "nonsense", "--json", cwd=tmp_path)
    assert r.code == 2 and r.json()["error"]["kind"] == "usage"


def test_tree_and_card_writes_share_one_result(ex: Path) -> None:
    """Same keys for a hypothesis and a card; blobs are the committed blob ids."""
    hyp = invoke("hyp", "add", "Caching halves load time", "--json", cwd=ex)
    card = invoke("problem", "add", "q9", "Is the cache ever stale?", "--json", cwd=ex)
    for r in (hyp, card):
        assert r.code == 0, r.stderr
        data = r.json()
        assert WRITE_KEYS <= data.keys(), data
        assert data["recovered"] == [] and data["paths"] and data["changes"]
        assert set(data["blobs"]) == set(data["paths"])
        for path, blob in data["blobs"].items():
            assert git(ex, "rev-parse", f"{data['commit']}:{path}") == blob
    assert card.json()["op"] == "problem.add" and card.json()["id"] == "q9"


def test_blob_of_a_write_is_the_next_expect_and_a_stale_one_is_refused(ex: Path) -> None:
    first = invoke("problem", "plan", "q2", "read the logs", "--json", cwd=ex).json()
    blob = first["blobs"]["Problems/q2.md"]
    ok = invoke("problem", "plan", "q2", "bisect", "--expect", blob, "--json", cwd=ex)
    assert ok.code == 0, ok.stderr
    stale = invoke("problem", "plan", "q2", "give up", "--expect", blob, "--json", cwd=ex)
    assert stale.code == 1 and stale.json()["error"]["kind"] == "stale"
    assert "- 计划: bisect\n" in (ex / "Problems/q2.md").read_text(encoding="utf-8")


def test_a_locked_card_is_refused_with_kind_locked(ex: Path) -> None:
    assert invoke("lock", "claim", "Problems/q2.md", "--owner", "alice", cwd=ex).code == 0
    r = invoke("problem", "plan", "q2", "mine now", "--owner", "bob", "--json", cwd=ex)
    assert r.code == 1 and r.json()["error"]["kind"] == "locked", r.stdout
    rel = invoke("lock", "release", "Problems/q2.md", "--owner", "alice", "--json", cwd=ex)
    assert rel.code == 0 and WRITE_KEYS <= rel.json().keys()
    assert rel.json()["op"] == "lock.release" and rel.json()["changes"] == ["released Problems/q2.md"]


def test_a_card_command_says_it_rolled_back_an_interrupted_write(ex: Path) -> None:
    """The write before died between writing and committing; a card write rolls it
    back first and says so, on stderr and in ``recovered``."""
    faults = Path(__file__).resolve().parent / "kb_faults.py"
    dead = subprocess.run([sys.executable, str(faults), "commit", "--", "problem", "add", "q8",
                           "left behind"], cwd=ex, capture_output=True, timeout=120,
                          env={**source_env(), "KB_NOW": NOW})
    assert dead.returncode == -signal.SIGKILL and (ex / "Problems/q8.md").exists()
    r = invoke("problem", "add", "q9", "after the crash", "--json", cwd=ex)
    assert r.code == 0, r.stderr
    assert "rolled back an interrupted kb write" in r.stderr
    assert "Problems/q8.md" in r.json()["recovered"]
    assert not (ex / "Problems/q8.md").exists()
    human = run_script("problem", "plan", "q9", "go", cwd=ex)
    assert human.code == 0 and "rolled back" not in human.stderr  # only once
