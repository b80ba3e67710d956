"""The fast line scan of fenced code agrees with markdown-it-py's block parse."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kb.text import _code_ranges, compute_mask

LINES = st.sampled_from([
    "", "text", "## H1: heading", "Status: 待验", "```", "```python", "~~~", "````",
    "   ```", "    indented", "\tcode", "- item", "  - nested", "> quote", "<div>", "</div>",
    "<!-- c -->", "---", "===", "1. one", "``` x ` y", "     ```", "  text",
])


def _reference(lines: list[str]) -> list[bool]:
    ref = [False] * len(lines)
    for begin, end in _code_ranges("\n".join(lines)):
        for i in range(begin, min(end, len(lines))):
            ref[i] = True
    return ref


@settings(max_examples=400, deadline=None)
@given(st.lists(LINES, max_size=25))
def test_mask_matches_markdown_it(lines: list[str]) -> None:
    # Blank lines never hold a heading or an anchor, so only the others count.
    got, want = compute_mask(lines), _reference(lines)
    assert [g for g, ln in zip(got, lines) if ln.strip()] == \
        [w for w, ln in zip(want, lines) if ln.strip()]


def test_column0_fence_masked_without_parser() -> None:
    """```
    ## H9: inside
    ```
    ## H1: outside"""
    lines = ["```", "## H9: inside", "```", "## H1: outside"]
    assert compute_mask(lines) == [True, True, True, False]
