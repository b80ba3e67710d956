"""kb.toml's diagnostics that need more than kb.toml: the rule catalogue (KB001 for a
rule code kb does not have) or the snapshot being checked (KB004, a tree path with no
file). :func:`kb.config.load_config` gives the rest (KB001 for an unknown key, KB002)."""

from __future__ import annotations

from typing import Any, Iterable

from kb.checks.catalogue import BY_CODE
from kb.config import DEFAULT_PATHS


def unknown_codes(config: Any) -> list[Any]:
    """KB001 warnings (``kb.model.Diagnostic``, path ``kb.toml``) for each rule code of
    ``[rules] disable`` and ``[rules.severity]`` that kb does not have, at the line
    naming it: a misspelt code switches nothing off and would pass without a word."""
    named = [(code, "rules.disable", config.code_line(code) or config.line_of("rules", "disable"))
             for code in sorted(config.disabled_rules) if code not in BY_CODE]
    named += [(code, "rules.severity", config.severity_line(code))
              for code in sorted(config.severity) if code not in BY_CODE]
    if not named:
        return []
    from kb.model import Diagnostic

    return [Diagnostic(path="kb.toml", line=line, code="KB001", severity="warning",
                       message=f"{key} names {code!r}, which is not a rule of kb: it changes "
                               "nothing (ignored); `kb rules` lists the codes")
            for code, key, line in named]


def tree_missing(config: Any, paths: Iterable[str]) -> list[Any]:
    """KB004 (warning) when kb.toml moves ``[paths] tree`` to a file that ``paths`` (the
    snapshot checked: the working tree, the staged index, a commit) does not hold: kb
    reads no hypothesis and ``kb hyp add`` refuses. The default ``tree.md`` may be absent
    (a KB of cards alone)."""
    tree = config.paths["tree"]
    if tree == DEFAULT_PATHS["tree"] or tree in paths:
        return []
    from kb.model import Diagnostic

    return [Diagnostic(path="kb.toml", line=config.line_of("paths", "tree"), code="KB004",
                       severity="warning",
                       message=f"paths.tree = {tree!r}: no such file, so kb reads no hypothesis "
                               "and `kb hyp add` refuses; correct the path, or create the file")]
