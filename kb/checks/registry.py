"""Where rules are registered: three lists of plain functions.

A rule is a function that returns a list of :class:`kb.model.Diagnostic`
(beancount's validation style); one run calls every rule and reports
everything. Three shapes, by what the rule looks at:

- :data:`FILE_RULES` — ``rule(f: FileFacts)``: one parsed file of a snapshot.
  Their results depend only on the file's bytes (and kb.toml), so they are
  cached per (path, blob id) and re-run only for changed files.
- :data:`SNAPSHOT_RULES` — ``rule(s: Facts)``: a whole snapshot (IDs and links
  across files: duplicates, missing references, cycles, a stale dashboard).
- :data:`HISTORY_RULES` — ``rule(c: Change)``: a base snapshot and a new one,
  looking only at the paths that changed.

Adding a rule is: write the function in a module, decorate it with the codes
it emits, add the codes to :mod:`kb.checks.catalogue`, and (for a new module)
add the module to :data:`RULE_MODULES`. ``modes`` limits a history rule to
some verify modes (e.g. a lock rule: ``modes=("staged",)``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Optional

#: Modules whose import registers rules (in this order).
RULE_MODULES: list[str] = ["kb.checks.tree_rules", "kb.checks.experiment_rules", "kb.checks.id_rules",
                           "kb.checks.cards", "kb.checks.dashboard_rule", "kb.checks.history_rules",
                           "kb.checks.settle_rules", "kb.checks.lock_rules", "kb.checks.trail_rules",
                           "kb.checks.record_rules"]


@dataclass(frozen=True)
class Registered:
    """A registered rule: the function, the codes it may emit, where it applies."""

    func: Callable[[Any], list]
    codes: tuple[str, ...]
    modes: Optional[tuple[str, ...]] = None
    volatile: bool = False
    #: What a snapshot rule reads of each file (see :func:`snapshot_rule`); None: everything
    #: of the index (objects with their JSON, links).
    reads: Optional[str] = None

    @property
    def name(self) -> str:
        """``module.function`` of the rule (what ``kb rules`` lists; part of the per-file cache key)."""
        return f"{self.func.__module__}.{self.func.__name__}"


FILE_RULES: list[Registered] = []
SNAPSHOT_RULES: list[Registered] = []
HISTORY_RULES: list[Registered] = []


def _register(target: list[Registered], codes: tuple[str, ...],
              modes: Optional[tuple[str, ...]] = None,
              volatile: bool = False, reads: Optional[str] = None) -> Callable[[Callable], Callable]:
    if reads not in READS:
        from kb.errors import InternalError

        raise InternalError(f"a rule's reads must be one of {READS}, not {reads!r}")

    def deco(func: Callable) -> Callable:
        if not any(r.func is func for r in target):
            target.append(Registered(func, codes, modes, volatile, reads))
        return func
    return deco


def file_rule(*codes: str) -> Callable[[Callable], Callable]:
    """Register a per-file rule emitting ``codes``."""
    return _register(FILE_RULES, codes)


#: What a snapshot rule may declare it reads of each file (``reads=``), narrowest first:
#: ``paths`` the snapshot's paths and formats only; ``rows`` also each object's light row
#: (ID, kind, status, declaration line); ``refs`` also the file's links and each object's
#: ``anchor_lines``; ``fixes`` also the text of the lines its fixes replace (and of
#: nothing else). None (the default): objects with all their JSON, and links.
READS = ("paths", "rows", "refs", "fixes", None)


def snapshot_rule(*codes: str, volatile: bool = False,
                  reads: Optional[str] = None) -> Callable[[Callable], Callable]:
    """Register a whole-snapshot rule emitting ``codes``.

    A snapshot rule reads the index's objects and links of the snapshot (its
    result is reused for a snapshot whose changed files have the same objects
    and links); one that reads anything else (file bytes, parse metadata) is
    ``volatile`` and runs every time. ``reads`` (see :data:`READS`) narrows
    what it reads: its result is then reused for a snapshot whose changed
    files are the same in that respect (a change of a card's 优先级 keeps
    every ID, line and link). A rule must read nothing beyond what it declares.
    """
    return _register(SNAPSHOT_RULES, codes, volatile=volatile, reads=reads)


#: Functions ``(facts) -> str`` naming inputs outside the KB's files that snapshot
#: rules read (e.g. the exploration graph's log): part of the snapshot result key.
KEY_PARTS: list[Callable[[Any], str]] = []


def snapshot_key_part(func: Callable[[Any], str]) -> Callable[[Any], str]:
    """Register a :data:`KEY_PARTS` function (a rule that reads files kb does not index)."""
    KEY_PARTS.append(func)
    return func


def history_rule(*codes: str, modes: Optional[tuple[str, ...]] = None) -> Callable[[Callable], Callable]:
    """Register a history rule emitting ``codes`` (only in ``modes`` when given:
    ``worktree``, ``staged``, ``rev``, ``range``)."""
    return _register(HISTORY_RULES, codes, modes)


_loaded = False


def load_rules() -> None:
    """Import every module of :data:`RULE_MODULES` (once)."""
    global _loaded
    if _loaded:
        return
    for name in RULE_MODULES:
        importlib.import_module(name)
    _loaded = True


def enabled(rule: Registered, config: Any) -> bool:
    """False when every code of ``rule`` is disabled in ``config``."""
    from kb.checks.catalogue import BY_CODE, effective_severity

    for code in rule.codes:
        default = BY_CODE[code].severity if code in BY_CODE else "error"
        if effective_severity(code, default, config) is not None:
            return True
    return False


def rules_fingerprint() -> str:
    """Identity of the rules' code, for the result caches (per blob and per snapshot)."""
    import hashlib
    import os
    import sys

    import kb

    load_rules()
    h = hashlib.sha1(kb.__version__.encode())
    # the snapshot rules' modules too: a stored rule's results are kept by what it
    # declares it reads (``reads=``), so a change to a rule must drop them
    mods = sorted({r.func.__module__ for r in (*FILE_RULES, *SNAPSHOT_RULES)}
                  | {__name__, "kb.checks.facts", "kb.checks.results"})
    # each module's file found from its name (whether it is imported yet differs from
    # one mode to another: the fingerprint must not)
    top = os.path.dirname(kb.__file__ or "")
    for m in mods:
        f = getattr(sys.modules.get(m), "__file__", None)
        if not f and m.startswith("kb."):
            f = os.path.join(top, *m.split(".")[1:]) + ".py"
            if not os.path.exists(f):
                f = os.path.join(f[:-3], "__init__.py")
        try:
            st = os.stat(f or "")
            h.update(f"{m}:{st.st_mtime_ns}:{st.st_size}".encode())
        except OSError:
            h.update(m.encode())
    for name in sorted(r.name for r in FILE_RULES):  # whatever order they were imported in
        h.update(name.encode())
    for name in sorted(f"{r.name}:{r.reads}" for r in SNAPSHOT_RULES):
        h.update(name.encode())
    return h.hexdigest()[:16]
