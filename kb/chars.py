"""Characters that show nothing (the lowest layer: :mod:`kb.numbers`' quoting and
:mod:`kb.text`'s one-line checks both read it).

Unicode's Default_Ignorable_Code_Point set (DerivedCoreProperties.txt: soft hyphen,
zero-width space and joiners, U+2060 word joiner, U+FEFF, variation selectors, Hangul
fillers, tag characters, …) and U+2800, the blank Braille pattern, a letter that shows
nothing. Pasted from a chat or a web page into an ID (``H\\u200b1``) or a status word, such a
character makes text read as what it is not.
"""

from __future__ import annotations

import re

#: The set as the body of a regex character class (no brackets), for classes that add
#: to it (:data:`kb.text` adds white space).
HIDDEN_CLASS = (
    r"\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    r"\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
    r"\u2800")
#: One character of the set (U+200B inside ``H\u200b1``).
HIDDEN_CHARS = re.compile(f"[{HIDDEN_CLASS}]")
#: Spaces that are not the ASCII space (no-break, ideographic, thin, …): typed by an input
#: method or pasted, they look like a space where kb's formats read none.
WIDE_SPACE_CHARS = "\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200b))) + "\u202f\u205f\u3000"
WIDE_SPACES = re.compile(f"[{WIDE_SPACE_CHARS}]")
#: Of those, the ones that shape the visible text around them: joiners (Devanagari
#: conjuncts, emoji sequences), variation selectors (emoji presentation), tag characters
#: (subdivision flags).
_SHAPING = re.compile("[\u200c\u200d\ufe00-\ufe0f\U000e0020-\U000e007f]")


def hidden_char(text: str, *, shaping: bool = True) -> str | None:
    """The first character of ``text`` that shows nothing and is not white space (a zero-width
    space pasted into an ID or a status word), as ``U+XXXX``; None when there is none. With
    ``shaping`` False, joiners and selectors that shape visible text (an emoji sequence's)
    are not counted."""
    if text.isascii():
        return None
    for m in HIDDEN_CHARS.finditer(text):
        if shaping or not _SHAPING.match(m.group()):
            return f"U+{ord(m.group()):04X}"
    return None


__all__ = ["HIDDEN_CHARS", "HIDDEN_CLASS", "WIDE_SPACE_CHARS", "WIDE_SPACES", "hidden_char"]
