"""The dependency rules of Vibe Math v3 cards, as pure functions (kb.research.dependencies)."""

from __future__ import annotations

import pytest

from kb.research.dependencies import (
    is_final,
    is_settled,
    natural_key,
    reverse_dependencies,
    waiting_move,
)


@pytest.mark.parametrize("kind,status,prob,prio,settled,final", [
    ("problem", "已解决", None, 0, True, True),
    ("problem", "求解中", None, "never", True, False),
    ("problem", "求解中", None, 1, False, False),
    ("proposition", "未定论", 1.0, 0, True, True),
    ("proposition", "未定论", 0, 2, True, True),
    ("proposition", "未定论", 0.5, "never", True, False),
    ("proposition", "未定论", 0.5, 1, False, False),
    ("method", "经验", None, None, True, False),
    (None, None, None, None, True, False),
])
def test_settled_and_final(kind, status, prob, prio, settled, final) -> None:
    assert is_settled(kind, status, prob, prio) is settled
    assert is_final(kind, status, prob) is final


@pytest.mark.parametrize("status,prio,ready,move", [
    ("求解中", 1, False, "等待依赖"),
    ("等待依赖", 1, True, "求解中"),
    ("求解中", 1, True, None),
    ("等待依赖", 1, False, None),
    ("求解中", "never", False, None),
    ("原始", 1, False, None),
    ("已解决", 1, True, None),
])
def test_waiting_move(status, prio, ready, move) -> None:
    assert waiting_move(status, prio, ready) == move


def test_reverse_dependencies_in_natural_order_ignoring_unknown_ids() -> None:
    got = reverse_dependencies({"q1": [], "q2": ["q1", "p-1"], "q10": ["q1"], "q3": ["q10", "q1"]})
    assert got == {"q1": ["q2", "q3", "q10"], "q2": [], "q10": ["q3"], "q3": []}


def test_natural_key_counts_numbers() -> None:
    assert sorted(["q10", "q2", "q1"], key=natural_key) == ["q1", "q2", "q10"]
