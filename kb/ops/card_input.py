"""Input checks of the card commands: new IDs, one-line fields, long texts.

Each function returns the cleaned value or raises :class:`kb.errors.UsageError`
(exit 2) naming the accepted form; nothing has been written at that point.
Probabilities and priorities are checked by :mod:`kb.research.values`.
"""

from __future__ import annotations

import re
from pathlib import Path

from kb.errors import UsageError
from kb.text import BODY_MAX, check_length, unsafe_id_reason, visible

#: Characters a new ID or category folder may not hold (VIBEMATH-V3.md safe IDs).
UNSAFE_NEW = re.compile(r'[\\/:*?"<>|#｜,\[\]{}\s\x00-\x1f\x7f]')


def check_new_id(value: str, what: str = "ID") -> str:
    """Refuse an ID kb would not create (VIBEMATH-V3.md safe IDs, refused rather than rewritten).

    Besides :func:`unsafe_id_reason`: none of ``\\ / : * ? " < > | # ｜ , [ ] { }``
    nor white space, no leading or trailing ``.`` or ``-``, at most 80 characters.

    Raises UsageError for an ID kb would not create.
    """
    v = value if isinstance(value, str) else ""
    why = unsafe_id_reason(v)
    if why is None:
        bad = UNSAFE_NEW.search(v)
        if bad:
            why = f"holds {bad.group()!r}"
        elif v[0] in ".-" or v[-1] in ".-":
            why = "starts or ends with '.' or '-'"
        elif len(v) > 80:
            why = "is longer than 80 characters"
    if why:
        raise UsageError(f"{what} {value!r} {why}; use letters, digits, CJK, '_' and inner '-' or "
                        "'.' (e.g. q1, p-3f2a9c01)")
    return v


def read_text_arg(text: str | None, text_file: str | Path | None, what: str = "text",
                  required: bool = True) -> str:
    """The text of ``--text`` or ``--text-file`` (UTF-8; ``-`` is not special).

    Raises UsageError for both or neither given (when required), a missing, unreadable or
    non-UTF-8 file, or a text longer than :data:`kb.text.BODY_MAX` characters.
    """
    if text is not None and text_file is not None:
        raise UsageError(f"give either the {what} or a file holding it, not both")
    if text_file is not None:
        p = Path(text_file)
        try:
            # A file of more than 4 bytes per character allowed is too long whatever it
            # holds (UTF-8 takes at most 4): refused before it is read into memory.
            size = p.stat().st_size
            if size > 4 * BODY_MAX:
                raise UsageError(f"text file {str(text_file)!r} is {size:,} bytes, more than the "
                                 f"{BODY_MAX:,} characters kb writes as one text; shorten it or "
                                 "split it")
            data = p.read_bytes()
        except FileNotFoundError:
            raise UsageError(f"text file {str(text_file)!r} does not exist; give an existing "
                            "UTF-8 file") from None
        except OSError as exc:
            raise UsageError(f"cannot read text file {str(text_file)!r}: {exc.strerror}") from None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise UsageError(f"text file {str(text_file)!r} is not UTF-8; re-save it as UTF-8") from None
    out = (text or "").replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    out = "\n".join(ln.rstrip() for ln in out.split("\n")).strip("\n")
    check_length(out, f"the {what}", BODY_MAX)
    if required and not visible(out):  # only U+200B, U+FEFF, …: as empty as ""
        # (no option named: a statement is an argument, an entry's text --text/--text-file)
        raise UsageError(f"the {what} is empty (nothing in it shows); write the {what}")
    return out


def title_from(statement: str) -> str:
    """A card title from its statement: the first line, cut to 60 characters."""
    first = statement.strip().split("\n", 1)[0].strip()
    return first if len(first) <= 60 else first[:59] + "…"


__all__ = ["UNSAFE_NEW", "check_new_id", "read_text_arg", "title_from"]
