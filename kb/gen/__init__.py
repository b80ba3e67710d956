"""The literature-grounded hypothesis generation loop (issue 17; seed hypothesis-gen.md).

Library entry points (the CLI ``kb gen`` and the MCP tools call these):
:func:`kb.gen.loop.init_run`, :func:`kb.gen.loop.status`,
:func:`kb.gen.loop.submit`, :func:`kb.gen.brief.brief`,
:func:`kb.gen.report.write_report`, :func:`kb.gen.rank.submit_matches`,
:func:`kb.gen.adopt.adopt` and :func:`kb.gen.models.schemas`; :mod:`kb.gen.api` wraps them
(and the literature client) as JSON-in, JSON-out tools (``TOOLS``) for the MCP server.
"""
