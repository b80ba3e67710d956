"""``kb serve``: a read-only local web view of the KB (tree, board, objects, files)."""

from __future__ import annotations

import sys

import click

from kb_cli.output import emit_json, err, json_option, kb_option


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback exposes the KB's committed "
                   "research to whoever reaches that address (see the README).")
@click.option("--port", default=8765, show_default=True, type=int,
              help="TCP port; 0 picks a free one.")
@click.option("--rev", default="HEAD", show_default=True,
              help="The revision pages show when a URL names none (?rev= picks another).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Also accept this Host header name (a name the server is reached by "
                   "behind --host); repeatable.")
@json_option
@kb_option
def command(host: str, port: int, rev: str, allow_hosts: tuple[str, ...], as_json: bool,
            kb_path: str | None) -> int:
    """Serve a read-only web view of the KB on HOST:PORT until interrupted.

    Pages are rendered from the committed KB at ?rev= (default --rev, HEAD),
    never from the working tree. The URL is printed on stderr (with --json
    also {"url", "host", "port", "rev"} on stdout once listening).
    """
    from kb.web.server import is_loopback, serve

    if not is_loopback(host):
        err(f"kb serve: listening on {host}, not loopback: anyone who can reach this address "
            "can read the KB's committed research")

    def ready(url: str, real_port: int) -> None:
        err(f"kb serve: {url} (read-only; Ctrl-C stops)")
        if as_json:
            emit_json({"url": url, "host": host, "port": real_port, "rev": rev})
            sys.stdout.flush()
        sys.stderr.flush()

    serve(kb_path, host=host, port=port, rev=rev, allow_hosts=allow_hosts, on_ready=ready)
    return 0
