"""Whole numbers read from user text: files, git, kb.toml, the command line.

CPython refuses ``int()`` of a decimal string over 4,300 digits (a ``ValueError``
no caller expects), and no count, ID number, entry number or priority kb reads is
anywhere near that long. :func:`small_int` is the one conversion kb uses for such
text: a number of more than :data:`MAX_DIGITS` significant digits is not a valid
number, so the caller reports it as the invalid input it is (a diagnostic at its
line, a usage error) instead of crashing, and never spends quadratic time on a
huge number. Text already matched by a caller's pattern is checked only by length:
no extra work on the hot parse path.
"""

from __future__ import annotations

#: The most significant digits (leading zeros not counted) a number read from user
#: text may have: 10**18 - 1 still fits SQLite's and JSON readers' 64-bit integers.
MAX_DIGITS = 18


def small_int(text: str, max_digits: int = MAX_DIGITS) -> int | None:
    """``int(text)`` when ``text`` is an integer of at most ``max_digits`` significant
    digits (surrounding blanks, a sign and leading zeros not counted); None for a longer
    number and for text ``int()`` does not read."""
    t = text.strip()
    if len(t) > max_digits:
        body = t[1:] if t.startswith(("+", "-")) else t
        if len(body) > max_digits:
            sig = body.lstrip("0")
            if len(sig) > max_digits:
                return None
            t = t[:len(t) - len(body)] + (sig or "0")  # leading zeros past the bound
    try:
        return int(t)
    except ValueError:
        return None


#: The most characters of a value a message quotes (:func:`quoted`).
QUOTED_CHARS = 20


def quoted(text: str, *, limit: int = QUOTED_CHARS, quote: bool = True) -> str:
    """``text`` as a message quotes it, as written (in single quotes when ``quote``; never
    ``repr``, which would show a full-width space as ``'\\u3000'`` and switch to double
    quotes around a ``'``): whole when it has at most ``limit`` characters, else its first
    ``limit`` and how long it is, so that a number of thousands of digits does not fill
    the terminal: ``'12345678901234567890…' (4,500 digits)``. A quoted text that holds a
    character showing nothing says so (``'待\u200b验' (holding U+200B, which shows
    nothing)``): as written, it reads like the right word."""
    if len(text) <= limit:
        return f"'{text}'{_hidden_note(text)}" if quote else text
    head = text[:limit] + "…"
    unit = "digits" if text.isascii() and text.isdigit() else "characters"
    return f"'{head}' ({len(text):,} {unit}){_hidden_note(head)}" if quote else \
        f"{head} ({len(text):,} {unit})"


def _hidden_note(text: str) -> str:
    """`` (holding U+200B, which shows nothing)`` when ``text`` holds such a character."""
    from kb.chars import hidden_char

    ch = hidden_char(text, shaping=False)  # (an emoji sequence's joiners are its own)
    return "" if ch is None else f" (holding {ch}, which shows nothing)"


def natural_number_key(digits: str) -> tuple:
    """A sort key for a run of decimal digits that orders every length as numbers do
    (``2`` < ``10`` < a 5,000-digit number), comparing only values of one kind."""
    n = small_int(digits)
    if n is not None:
        return (0, n, "")
    sig = digits.lstrip("0")
    return (1, len(sig), sig)


__all__ = ["MAX_DIGITS", "QUOTED_CHARS", "natural_number_key", "quoted", "small_int"]
