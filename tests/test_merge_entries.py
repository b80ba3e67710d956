"""Entries two branches added to one card: the pieces ``kb sync`` and the card driver use.

- :func:`kb.merge.card.merge_entries` keeps each side's added entries whole around a line
  merge of the rest (theirs first, ours after), and refuses a number both sides added
  with other text;
- :mod:`kb.merge.renumber` follows a renumbered entry (``q2#解法1 -> q2#解法3``) in prose,
  in its card's heading (never in code), in a record's name and target fields, all at once.
"""

from __future__ import annotations

import json

from kb.merge.card import merge_entries
from kb.merge.renumber import (Plan, entry_renames, plan_entries, rename_record,
                               renamed_record, renumber_headings, rewrite_record, rewrite_text)
from kb.merge.entry_collide import EntryMoves

HEAD = """# 问题｜Shared
- ID: q2
- 类型: 问题
- 状态: 求解中

## 陈述
Shared.

## 解法候选
"""


def _entry(n: int, title: str, text: str) -> str:
    return f"### 解法 {n}｜{title}｜概率0.3｜状态未定论\n{text}\n"


def test_entries_added_on_both_sides_are_kept_theirs_first() -> None:
    base = HEAD + _entry(1, "Base", "Base text.")
    theirs = base + _entry(2, "Alice", "Alice text.")
    ours = base + _entry(3, "Bob", "Bob text.") + _entry(4, "Bob again", "More.")
    merged, clash, _conflicted = merge_entries(base.encode(), ours.encode(), theirs.encode())
    assert clash == []
    assert merged is not None
    assert merged.decode() == "\n".join([base, _entry(2, "Alice", "Alice text."),  # a blank line
                                         _entry(3, "Bob", "Bob text."),          # before each
                                         _entry(4, "Bob again", "More.")])


def test_one_side_edits_the_header_the_other_adds_entries_both_kept() -> None:
    base = HEAD + _entry(1, "Base", "Base text.")
    theirs = base.replace("- 状态: 求解中", "- 状态: 已解决") + _entry(2, "Alice", "A.")
    ours = base + _entry(3, "Bob", "B.")
    merged, _clash, _conflicted = merge_entries(base.encode(), ours.encode(), theirs.encode())
    assert merged is not None
    text = merged.decode()
    assert "- 状态: 已解决" in text
    assert text.index("### 解法 2｜Alice") < text.index("### 解法 3｜Bob")


def test_one_number_added_with_two_texts_is_named_not_merged() -> None:
    base = HEAD
    theirs = base + _entry(1, "Alice", "A.")
    ours = base + _entry(1, "Bob", "B.")
    merged, clash, _conflicted = merge_entries(base.encode(), ours.encode(), theirs.encode())
    assert merged is None and clash == ["解法 1"]


def test_the_same_entry_added_on_both_sides_is_kept_once() -> None:
    base = HEAD
    same = _entry(1, "Alice", "A.")
    theirs = base + same + _entry(2, "Alice 2", "A2.")
    ours = base + same + _entry(3, "Bob", "B.")
    merged, clash, _conflicted = merge_entries(base.encode(), ours.encode(), theirs.encode())
    assert clash == [] and merged is not None
    text = merged.decode()
    assert text.count("### 解法 1｜Alice") == 1
    assert text.index("### 解法 2") < text.index("### 解法 3")


def test_an_entry_heading_inside_code_is_text_not_an_entry() -> None:
    base = HEAD + _entry(1, "Base", "```\n### 解法 1｜in code\n```")
    theirs = base + _entry(2, "Alice", "A.")
    ours = base + _entry(3, "Bob", "B.")
    merged, _clash, _conflicted = merge_entries(base.encode(), ours.encode(), theirs.encode())
    assert merged is not None
    assert merged.decode().count("### 解法 1｜in code") == 1


def test_a_conflict_elsewhere_keeps_its_markers_and_both_entries_outside_them() -> None:
    """Both sides changed the statement: that conflict is left to resolve, alone; the
    entries each side added are put back whole, outside the markers."""
    base = HEAD
    theirs = base.replace("Shared.", "Theirs.") + _entry(1, "Alice", "A.")
    ours = base.replace("Shared.", "Ours.") + _entry(2, "Bob", "B.")
    merged, clash, conflicted = merge_entries(base.encode(), ours.encode(), theirs.encode())
    assert merged is not None and conflicted and clash == []
    text = merged.decode()
    assert text.count("<<<<<<<") == 1 and text.index(">>>>>>>") < text.index("## 解法候选")
    assert text.endswith(_entry(1, "Alice", "A.") + "\n" + _entry(2, "Bob", "B."))


def test_an_entry_put_back_where_it_would_not_be_read_is_no_merge() -> None:
    """Alice's entry ends in a fence she never closed (written by hand): Bob's entry put
    after it would be read as her code. Nothing is merged; git's conflict stands."""
    base = HEAD
    theirs = base + _entry(1, "Alice", "```python\nprint(1)")
    ours = base + _entry(2, "Bob", "B.")
    assert merge_entries(base.encode(), ours.encode(), theirs.encode()).data is None


def test_a_malformed_heading_is_no_entry_to_the_merge() -> None:
    """`### 解法 1 ｜ Hand ｜ …` is KB122 to the parser, so no entry here either: it merges as
    text after Alice's entry, and the checks then name it."""
    base = HEAD
    theirs = base + _entry(1, "Alice", "A.")
    ours = base + "### 解法 1 ｜ Hand ｜ 概率0.4 ｜ 状态未定论\nx\n"
    res = merge_entries(base.encode(), ours.encode(), theirs.encode())
    assert res.clash == []


def test_an_entry_put_back_after_text_gets_a_blank_line_before_it() -> None:
    """Alice's first entry ends with an HTML block (`</details>`): Bob's heading right under
    it would be read as the block's text (CommonMark ends such a block at a blank line),
    so each entry put back after a block of text has a blank line before it; after the
    section heading none is needed."""
    base = HEAD
    theirs = base + _entry(1, "Alice", "Sketch.\n\n<details>\n<summary>P</summary>\n\nBy "
                                       "induction.\n\n</details>")
    ours = base + _entry(2, "Bob", "B.")
    merged, clash, conflicted = merge_entries(base.encode(), ours.encode(), theirs.encode())
    assert merged is not None and not conflicted, clash
    text = merged.decode()
    assert "</details>\n\n### 解法 2｜Bob" in text
    assert "## 解法候选\n### 解法 1｜Alice" in text


def _plan(*moves: EntryMoves) -> Plan:
    return plan_entries(Plan(), list(moves))


def test_entries_are_numbered_after_every_number_that_stays_in_order() -> None:
    p = _plan(EntryMoves("p1", "证明", "Propos/c/p1.md", (2, 3), frozenset({1, 2})))
    assert p.ids == {"p1#证明2": "p1#证明3", "p1#证明3": "p1#证明4"}
    assert entry_renames(p.ids) == {("p1", "证明", 2): 3, ("p1", "证明", 3): 4}
    assert p.trailers() == ["p1#证明2 -> p1#证明3", "p1#证明3 -> p1#证明4"]


def test_prose_follows_every_name_of_an_entry_at_once() -> None:
    p = _plan(EntryMoves("q2", "解法", "Problems/q2.md", (1, 2), frozenset({1})))
    text = ("q2#解法1 and q2#解法2, q2#s1, r-q2-s1 and r-q2-s2_20270101T000000.json; "
            "not q2#解法12, q22#解法1, r-q2-s12, xq2#解法1 or q3#解法1.")
    assert rewrite_text(text, p) == (
        "q2#解法2 and q2#解法3, q2#s2, r-q2-s2 and r-q2-s3_20270101T000000.json; "
        "not q2#解法12, q22#解法1, r-q2-s12, xq2#解法1 or q3#解法1.")


def test_the_heading_is_renumbered_in_its_own_card_only_outside_code() -> None:
    ids = {"q2#解法1": "q2#解法3"}
    card = "## 解法候选\n### 解法 1｜Bob｜概率0.3｜状态未定论\nB.\n```\n### 解法 1｜code\n```\n"
    assert renumber_headings(card, "q2", ids) == card.replace("### 解法 1｜Bob", "### 解法 3｜Bob")
    assert renumber_headings(card, "q9", ids) == card


def test_a_record_of_a_renumbered_entry_follows_it() -> None:
    ids = {"q2#解法1": "q2#解法3"}
    rel = "Logs/Verification/r-q2-s1_20270101T000000.json"
    data = (json.dumps({"r": "r-q2-s1", "verdict": 0.6, "results": []}, indent=2) + "\n").encode()
    assert rename_record(rel, ids) == "Logs/Verification/r-q2-s3_20270101T000000.json"
    assert json.loads(rewrite_record(data, ids))["r"] == "r-q2-s3"
    moved = renamed_record(rel, data, ids)
    assert moved is not None and moved.owner == "q2#解法1"
    assert moved.path.endswith("r-q2-s3_20270101T000000.json")
    vibe = json.dumps({"r": {"rId": "q2#解法1"}}).encode()
    assert json.loads(rewrite_record(vibe, ids))["r"] == {"rId": "q2#解法3"}
    # another entry's record, and a card's, are left as they are
    assert rename_record("Logs/Verification/r-q2-s2_x.json", ids) == "Logs/Verification/r-q2-s2_x.json"
    assert renamed_record("Logs/Verification/r-q2_x.json", b'{"r": "r-q2"}', ids) is None
