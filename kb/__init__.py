"""kb — a git-backed Markdown knowledge base for research.

The library never prints. ``kb_cli`` (the ``cli/`` folder of the source tree)
is the thin click layer on top of it.
"""

from __future__ import annotations

__version__ = "0.1.24"
