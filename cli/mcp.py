"""``kb mcp``: serve the KB over the Model Context Protocol on stdio."""

from __future__ import annotations

from pathlib import Path

import click

from kb_cli.output import kb_option


@click.command("mcp")
@kb_option
def command(kb_path: str | None) -> int:
    """Serve this KB to an AI agent over MCP (stdio): one tool per kb operation (hyp_add,
    ls, show, verify, lock_claim, …) returning the --json objects, the kb://prime
    resource and the prime prompt. Register it with a client as the command `kb mcp`."""
    from kb.mcp import serve

    serve(Path(kb_path) if kb_path else None)
    return 0
