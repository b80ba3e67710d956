"""``kb mcp``: the knowledge base over the Model Context Protocol (official SDK v2, stdio).

One tool per CLI operation, named after it in snake_case (``hyp_add``,
``lock_claim``, ``ls``), with the CLI's arguments and options as parameters;
each returns the CLI's ``--json`` object. The server keeps its process warm
(the index and imports stay loaded between calls). Areas register their tools
in one module each, listed in :data:`AREAS`; a module that is absent (an area
not built yet) is skipped::

    # kb/mcp/trail.py
    def register(reg: Registry) -> None:
        reg.read("explore_tree", explore_tree, "…")

The tool list is static: it depends on the installed kb, never on the KB's
state. The ``kb://prime`` resource and the ``prime`` prompt give the
session-start text of ``kb prime``.
"""

import importlib
import importlib.util
from pathlib import Path
from typing import Optional

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

import kb as _kb_pkg
from kb.errors import KbError, error_object
from kb.mcp.registry import KbServer, Registry
from kb.mcp.warm import WarmKB

#: Modules under kb.mcp with a ``register(reg)`` function, in tool-list order. A module
#: may name the library package it serves in ``REQUIRES``; it is skipped when that
#: package is not installed (an area not built yet), so the list stays static per install.
AREAS = ["reads", "tree", "cards", "locks", "review", "trail", "gen"]

#: The server's instructions open and end with these; between them the registry names
#: which write tools return the write result and which take ``expect``
#: (:meth:`Registry.instructions`), so the text never promises a shape a tool lacks.
INSTRUCTIONS_LEAD = (
    "kb: a git-backed Markdown knowledge base for research. Read the prime resource (or "
    "call the prime tool) first.")
INSTRUCTIONS_TAIL = (
    "Errors are tool errors whose text is {\"error\": {message, exit_code, kind}}; a "
    "missing, ill-typed or unknown argument (or a word outside an argument's enum) is kind "
    "usage.")


def build_server(kb: Optional[Path] = None) -> MCPServer:
    """The MCP server of the KB containing ``kb`` (default: the current directory).

    The KB is opened on the first tool call, so a server started outside a KB
    still lists its tools and answers each call with an ``environment`` error."""
    warm = WarmKB(kb)
    served = warm.get
    reg = Registry(warm)
    for area in AREAS:
        try:
            mod = importlib.import_module(f"kb.mcp.{area}")
        except ModuleNotFoundError as exc:
            if exc.name != f"kb.mcp.{area}":
                raise
            continue
        need = getattr(mod, "REQUIRES", None)
        if need and importlib.util.find_spec(need) is None:
            continue
        mod.register(reg)
    server = KbServer(name="kb", version=_kb_pkg.__version__,
                      instructions=reg.instructions(INSTRUCTIONS_LEAD, INSTRUCTIONS_TAIL))
    server.registry = reg
    reg.install(server)

    def prime() -> str:
        """kb prime's text; a kb error (outside a KB, …) is a protocol error carrying kb's
        message and error object. The SDK would answer any other exception with a generic
        message and log its traceback, as for a bug; this is the client's situation."""
        from kb.prime import prime_text

        try:
            return prime_text(served())
        except KbError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=str(exc),
                           data=error_object(exc)["error"]) from None

    @server.resource("kb://prime", name="prime", mime_type="text/markdown",
                     description="kb prime: the session-start context of this KB (≤ 8,000 chars).")
    def prime_resource() -> str:
        return prime()

    @server.prompt(name="prime", description="Start a session on this KB with the kb prime text.")
    def prime_prompt() -> str:
        return prime()

    server.kb_tools = reg.names  # type: ignore[attr-defined]  # for tests and docs
    return server


def serve(kb: Optional[Path] = None) -> None:
    """Serve over stdio until the client closes stdin. Only protocol reaches stdout: the
    SDK points fd 1 at stderr while it serves, so git's and hooks' output go there."""
    build_server(kb).run("stdio")


__all__ = ["AREAS", "build_server", "serve", "Registry"]
