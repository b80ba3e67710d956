"""Durations of kb.toml's ``[locks]`` and the command line (``30m``, ``1h30m``), and the
lock settings read from them: one reading for kb.config's check at kb.toml's line and for
the lock commands (:mod:`kb.locks` re-exports these). Bottom layer: no kb import but
:mod:`kb.errors` and :mod:`kb.numbers`."""

from __future__ import annotations

import re
from typing import Any

from kb.errors import UsageError
from kb.numbers import small_int

DEFAULT_TTL = 30 * 60
DEFAULT_GRACE = 30
_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_MAX_TTL = 366 * 24 * 3600


def parse_duration(text: str, *, what: str = "TTL", allow_zero: bool = False) -> int:
    """``30m``, ``90s``, ``2h``, ``1h30m``, ``1d`` -> seconds. UsageError when it does not parse.

    Raises UsageError when it does not parse, is 0 (unless ``allow_zero``) or exceeds a year.
    """
    s = (text or "").strip().lower()
    m = _DURATION.fullmatch(s)
    if not s or m is None or not any(m.groups()):
        raise UsageError(
            f"{what} {text!r} does not parse: use a number with a unit, e.g. 90s, 30m, 2h, 1h30m")
    d, h, mi, se = (small_int(g) if g else 0 for g in m.groups())
    if None in (d, h, mi, se):  # a number too long to read is far more than a year
        raise UsageError(f"{what} of {len(text)} characters is longer than a year")
    seconds = d * 86400 + h * 3600 + mi * 60 + se
    if seconds == 0 and not allow_zero:
        raise UsageError(f"{what} {text!r} must be longer than 0s")
    if seconds > _MAX_TTL:
        raise UsageError(f"{what} {text!r} is longer than a year")
    return seconds


def format_duration(seconds: int) -> str:
    """``1h30m``, ``29m50s``, ``5s`` (whole seconds, no sign)."""
    seconds = abs(int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s or not (h or m) else "")
    return out


#: kb.toml's ``[locks]`` durations: key -> (default seconds, whether ``0s`` is allowed).
DURATION_SETTINGS: dict[str, tuple[int, bool]] = {"ttl": (DEFAULT_TTL, False),
                                                  "grace": (DEFAULT_GRACE, True)}
#: The values of kb.toml's ``[locks] offline`` (:func:`kb.remote_locks.offline_policy`).
OFFLINE_POLICIES = ("refuse", "warn")


def setting_duration(locks: dict[str, Any], key: str, *, what: str = "") -> int:
    """Seconds of kb.toml's ``[locks]`` duration ``key`` (a key of
    :data:`DURATION_SETTINGS`), its default when unset. kb.config checks it with this
    at kb.toml's line; :meth:`Settings.from_config` reads it with this.

    Raises UsageError (naming ``what``, default ``kb.toml locks.<key>``) as
    :func:`parse_duration` does.
    """
    default, allow_zero = DURATION_SETTINGS[key]
    if key not in locks:
        return default
    return parse_duration(locks[key], what=what or f"kb.toml locks.{key}", allow_zero=allow_zero)
