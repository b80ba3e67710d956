"""Research values given as arguments: probabilities and priorities (VIBEMATH-V3.md).

Pure functions of their input: a probability is a plain decimal in [0, 1]
(0 and 1 *settle* an object, so only a verdict writes them); a priority is an
integer ≥ 0 (smaller runs first) or ``never``. Bad values raise
:class:`kb.errors.UsageError` (exit 2) with the accepted form.
"""

from __future__ import annotations

import re
from typing import Union

from kb.errors import UsageError
from kb.numbers import MAX_DIGITS, small_int


def parse_probability(raw: Union[str, float, int, None], what: str = "probability", *,
                      open_interval: bool = True) -> float:
    """A number in [0, 1]; with ``open_interval`` 0 and 1 are refused too.

    0 and 1 mean *settled* (true / false); only a verdict writes them
    (VIBEMATH-V3.md: agents never report 0 or 1 themselves).

    Raises UsageError when missing, not a number, outside [0, 1] or below 0.0001, or 0 / 1 with
    ``open_interval``.
    """
    if raw is None:
        raise UsageError(f"{what} is missing; give a number between 0 and 1")
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        x = float(raw)
    else:
        try:
            x = float(str(raw).strip())
        except ValueError:
            raise UsageError(f"{what} {raw!r} is not a number; give a number between 0 and 1") from None
    if x != x or x in (float("inf"), float("-inf")) or not 0 <= x <= 1:
        raise UsageError(f"{what} {raw} is outside [0,1]; give a number between 0 and 1")
    if 0 < x < 1e-4:
        raise UsageError(f"{what} {raw} is below 0.0001; give at least 0.0001 (Vibe Math reads "
                        "plain decimals only)")
    if open_interval and x in (0.0, 1.0):
        raise UsageError(f"{what} {raw} would settle the object; give a number strictly between 0 "
                        "and 1 (only `kb verdict` sets 0 or 1)")
    return x


def parse_priority_arg(raw: Union[str, int, None]) -> Union[int, str]:
    """``"3"`` -> 3, ``"never"`` -> ``"never"``; anything else is refused.

    Raises UsageError for anything but an integer ≥ 0 or ``never``.
    """
    if raw is None:
        return 1
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw < 0:
            raise UsageError(f"priority {raw} is negative; give an integer ≥ 0 or never")
        return raw
    v = str(raw).strip()
    if v == "never":
        return "never"
    if re.fullmatch(r"[0-9]+", v):  # ASCII digits: \d also matches ３
        n = small_int(v)
        if n is None:
            raise UsageError(f"priority of {len(v)} digits is not valid; give an integer ≥ 0 of at "
                             f"most {MAX_DIGITS} digits (smaller runs first) or never")
        return n
    raise UsageError(f"priority {raw!r} is not valid; give an integer ≥ 0 (smaller runs first) or never")


__all__ = ["parse_probability", "parse_priority_arg"]
