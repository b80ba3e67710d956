"""The one clock of kb: UTC now, overridable by ``KB_NOW`` (tests, reproducible runs).

``KB_NOW`` accepts epoch seconds, ISO 8601 (``2026-11-02T10:00:00[Z|+hh:mm]``,
``2026-11-02 10:00:00``), the compact ``20261102T100000`` and a bare date;
naive times are UTC. Locks, verdict records, cards and reports all read it
here, so one value drives them all.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone

from kb.errors import UsageError


def parse_time(raw: str) -> datetime | None:
    """Parse one of the forms above into an aware UTC datetime; None if none fits."""
    s = raw.strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", s) and len(s.split(".")[0]) >= 9:
        try:  # a number too large for a time is no time
            return datetime.fromtimestamp(int(float(s)), timezone.utc)
        except (OverflowError, ValueError, OSError):
            return None
    m = re.fullmatch(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z?", s)
    if m:
        return datetime(*map(int, m.groups()), tzinfo=timezone.utc)
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).replace(microsecond=0)


def now() -> datetime:
    """Now in UTC (whole seconds); ``KB_NOW`` overrides it. Bad ``KB_NOW``: UsageError."""
    raw = os.environ.get("KB_NOW", "").strip()
    if raw:
        dt = parse_time(raw)
        if dt is None:
            raise UsageError(f"KB_NOW={raw!r} is not a time; write epoch seconds or "
                             "e.g. 2026-11-02T10:00:00")
        return dt
    return datetime.now(timezone.utc).replace(microsecond=0)


def epoch() -> int:
    """Now as integer epoch seconds (see :func:`now`)."""
    if not os.environ.get("KB_NOW", "").strip():
        import time

        return int(time.time())
    return int(now().timestamp())


def fmt_time(dt: datetime) -> str:
    """``2026-11-02 10:00:00`` (Verified cards, method applications, report dates)."""
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def compact_time(dt: datetime) -> str:
    """``20261102T100000`` (verification record file names)."""
    return dt.strftime("%Y%m%dT%H%M%S")


def iso_time(dt: datetime) -> str:
    """``2026-11-02T10:00:00`` (the ``at`` of verification records)."""
    return dt.strftime("%Y-%m-%dT%H:%M:%S")
