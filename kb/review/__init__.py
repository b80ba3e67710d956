"""Reviewing research: the research diff of a range (``kb diff``), the history of
one object (``kb log``), and where CI installs kb from (``kb ci init``).

Everything here returns plain data (dicts, lists, strings) built from parsed
snapshots and kb's commit trailers, so the CLI, an MCP tool and a web page
render the same thing.
"""
