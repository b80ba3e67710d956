"""``kb dashboard``: regenerate DASHBOARD.md, or check that it is current."""

from __future__ import annotations

from typing import Any


import click

from kb_cli.output import emit_json, err, json_option, kb_option, write_kwargs, write_options


@click.command("dashboard")
@click.option("--check", is_flag=True,
              help="Only check: exit 1 when DASHBOARD.md is stale, or refused when tree.md or an "
                   "experiment has format errors (conflict markers): it cannot be judged; write nothing.")
@write_options
@json_option
@kb_option
def command(check: bool, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Regenerate DASHBOARD.md from tree.md and the experiments (counts, last date,
    active list, Mermaid map; ## Next Steps kept verbatim) and commit it."""
    if check:
        from kb.ops.dashboard import is_stale

        res = is_stale(kb_path)
        if as_json:
            emit_json({"path": res.path, "stale": res.stale, "exists": res.exists})
        elif res.stale:
            err(f"{res.path} is {'missing' if not res.exists else 'stale'}; run `kb dashboard`")
        else:
            err(f"{res.path} is up to date")
        return 1 if res.stale else 0
    from kb.ops.dashboard import refresh_dashboard
    from kb_cli.hyp import report

    return report(refresh_dashboard(kb_path, **write_kwargs(kw)), as_json)
