"""Shared by the ``kb trail`` tests: a tree KB at a pinned clock, and a JSON call."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import invoke


@pytest.fixture
def kb(tree_kb: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The ``tree_kb`` fixture with kb's clock pinned (``KB_NOW``) for trail times."""
    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    return tree_kb


def ok(kb: Path, *args: str) -> dict:
    """``kb trail ARGS --json`` in ``kb``: asserts exit 0 and returns the parsed JSON."""
    r = invoke("trail", *args, "--json", cwd=kb)
    assert r.code == 0, r.stderr + r.stdout
    return r.json()
