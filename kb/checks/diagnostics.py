"""The diagnostic value kb's rules build, and :func:`diag` to build one.

Rules return ``kb.model.Diagnostic`` values or :class:`LightDiagnostic`
(the same fields in a NamedTuple: a fifth of a model's cost to build). The
severity defaults to the catalogue's (:mod:`kb.checks.catalogue`); the
configuration's severities are applied later, by the verify run.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Optional

from kb.checks.catalogue import BY_CODE


class LightDiagnostic(NamedTuple):
    """A diagnostic with the fields of :class:`kb.model.Diagnostic`, as a NamedTuple.

    Rules return ``kb.model.Diagnostic`` values or these (same fields; ``fix``
    is ``(line, old, new)`` or None). kb's own rules build these: a NamedTuple
    costs a fifth of a model to build (0.25 µs against 1.25 µs), and
    ``to_model()`` gives the model when a caller wants one.
    """

    path: str
    line: int
    col: int
    code: str
    severity: str
    message: str
    fix: Optional[tuple[int, str, str]] = None

    @classmethod
    def of(cls, d: Any) -> "LightDiagnostic":
        """From a LightDiagnostic or a kb.model.Diagnostic."""
        if isinstance(d, cls):
            return d
        fx = d.fix
        return cls(d.path, d.line, d.col, d.code, d.severity, d.message,
                   (fx.line, fx.old, fx.new) if fx is not None else None)

    def to_model(self) -> Any:
        """The same diagnostic as a :class:`kb.model.Diagnostic`."""
        from kb.model import Diagnostic, Fix

        return Diagnostic(path=self.path, line=self.line, col=self.col, code=self.code,
                          severity=self.severity, message=self.message,  # type: ignore[arg-type]
                          fix=Fix(line=self.fix[0], old=self.fix[1], new=self.fix[2]) if self.fix else None)

    def format(self) -> str:
        """``path:line:col: CODE message``."""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"

    def fix_json(self) -> Optional[str]:
        """The fix as stored in the index (JSON ``{"line", "old", "new"}``), or None."""
        if not self.fix:
            return None
        return json.dumps({"line": self.fix[0], "old": self.fix[1], "new": self.fix[2]},
                          ensure_ascii=False)


def fix_of(raw: Optional[str]) -> Optional[tuple[int, str, str]]:
    """A stored fix (JSON ``{"line", "old", "new"}`` or None) as ``(line, old, new)``."""
    if not raw:
        return None
    f = json.loads(raw)
    return (f["line"], f["old"], f["new"])


def diag(path: str, line: int, code: str, message: str, *, severity: Optional[str] = None,
         col: int = 1, fix: Optional[tuple[int, str, str]] = None) -> LightDiagnostic:
    """A diagnostic with the catalogue's default severity (``fix``: ``(line, old, new)``).

    Takes a KB-relative path, a 1-based line (negative lines become 0), the
    rule's code and its message; returns a :class:`LightDiagnostic`.
    """
    sev = severity or (BY_CODE[code].severity if code in BY_CODE else "error")
    return LightDiagnostic(path, max(line, 0), col, code, sev, message, fix)
