"""``kb rules``: the rule catalogue (every code kb emits, its severity and its fix)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from kb_cli.output import emit_json, json_option, kb_option


@click.command("rules")
@click.argument("codes", nargs=-1)
@click.option("--family", type=click.Choice(["snapshot", "history"]), default=None,
              help="Only the rules of one family.")
@json_option
@kb_option
def command(codes: tuple[str, ...], family: Optional[str], as_json: bool, kb_path: Optional[str]) -> int:
    """List the rules: code, severity, family, what it means, what fixes it.

    CODES limits the list (e.g. `kb rules KB240 KB304`). Inside a KB (or with
    --kb) the severity column shows kb.toml's overrides ("off" = disabled).
    """
    from kb.checks.catalogue import CATALOGUE, effective_severity

    config = None
    try:
        from kb.repo import find_root

        root = find_root(Path(kb_path) if kb_path else Path.cwd())
        if root is not None:
            from kb.config import load_config

            config = load_config(root)
    except Exception:  # a broken kb.toml must not hide the catalogue
        config = None
    wanted = {c.upper() for c in codes}
    rows = [r for r in CATALOGUE if (not wanted or r.code in wanted)
            and (family is None or r.family == family)]
    unknown = wanted - {r.code for r in CATALOGUE}
    if as_json and unknown:
        from kb.errors import UsageError

        # The error object every usage error prints under --json (kb_cli.main), not a
        # catalogue an agent could take for an answer.
        names = sorted(unknown)
        raise UsageError(f"unknown rule code{'s' if len(names) > 1 else ''} {', '.join(names)}")
    if as_json:
        out = []
        for r in rows:
            d = r.as_dict()
            d["effective_severity"] = effective_severity(r.code, r.severity, config) or "off"
            out.append(d)
        emit_json({"rules": out, "unknown": []})  # unknown codes are a usage error (above)
        return 0
    for r in rows:
        sev = effective_severity(r.code, r.severity, config) or "off"
        shown = sev if sev == r.severity else f"{sev} (default {r.severity})"
        stage = "parse" if r.stage in ("parse", "config") else r.family
        auto = " [--fix]" if r.autofix else ""
        click.echo(f"{r.code}  {shown:<8} {stage:<8} {r.summary}")
        click.echo(f"       fix: {r.fix}{auto}")
    for code in sorted(unknown):
        click.echo(f"kb: unknown rule code {code}", err=True)
    return 2 if unknown else 0
