"""JSON that comes from outside kb: a file in the repository or the sandbox, a response
of a literature API, a line of an agent's transcript, a file named on the command line.

:func:`loads` is ``json.loads`` with one more refusal. Python's decoder recurses once
per nesting level, so ``[[[[…]]]]`` a thousand deep raised RecursionError, which no
caller expected of malformed input: ``kb verify`` and every trail view ended with exit 3
on one such line in a trail log. Here it is a :class:`json.JSONDecodeError` ("nested too
deeply"), a ValueError as every other malformed input is, which each caller already
turns into its diagnostic or usage error.

JSON may also escape half of a surrogate pair alone (``"a\\ud800b"``): Python decodes it
into a string no UTF-8 encoder takes, and kb failed later, where it wrote or printed it
(exit 3 in ``kb trail add --children-json``, ``kb trail ingest``, ``kb gen submit``, every
trail view of a hand-written log line). That is refused here too, as malformed input.

JSON kb wrote itself (the index's rows, its own results) is read with ``json.loads``:
tests/test_json_input.py lists where, and checks every other call goes through here.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: The escape of a surrogate (``\\ud800``–``\\udfff``): only then can a string decode to
#: one that is no text (a pair decodes to its character; a lone half stays a surrogate).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE_ESCAPE_B = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads(data)``. Raises :class:`json.JSONDecodeError` (a ValueError) for text
    that is not JSON, for JSON nested past what the decoder follows (its message "nested
    too deeply") and for a string holding half a surrogate pair ("a lone surrogate
    (\\udXXX) is no character"), at line 1, column 1; UnicodeDecodeError for bytes that
    are not UTF-8, as ``json.loads`` does."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", "", 0) from None
    pattern = _SURROGATE_ESCAPE if isinstance(data, str) else _SURROGATE_ESCAPE_B
    if pattern.search(data) is not None:  # rare: most JSON escapes no surrogate at all
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            half = exc.object[exc.start:exc.end] if isinstance(exc.object, str) else ""
            shown = f" (\\u{ord(half[0]):04x})" if half else ""
            raise json.JSONDecodeError(f"a lone surrogate{shown} is no character", "", 0) from None
    return value


__all__ = ["loads"]
