"""JSON that comes from outside kb: a file in the repository or the sandbox, a response
of a literature API, a line of an agent's transcript, a file named on the command line.

:func:`loads` is ``json.loads`` with one more refusal. Python's decoder recurses once
per nesting level, so ``[[[[…]]]]`` a thousand deep raised RecursionError, which no
caller expected of malformed input: ``kb verify`` and every trail view ended with exit 3
on one such line in a trail log. Here it is a :class:`json.JSONDecodeError` ("nested too
deeply"), a ValueError as every other malformed input is, which each caller already
turns into its diagnostic or usage error.

JSON kb wrote itself (the index's rows, its own results) is read with ``json.loads``:
tests/test_json_input.py lists where, and checks every other call goes through here.
"""

from __future__ import annotations

import json
from typing import Any


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads(data)``. Raises :class:`json.JSONDecodeError` (a ValueError) for text
    that is not JSON and for JSON nested past what the decoder follows (its message
    "nested too deeply", at line 1, column 1); UnicodeDecodeError for bytes that are
    not UTF-8, as ``json.loads`` does."""
    try:
        return json.loads(data)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None


__all__ = ["loads"]
