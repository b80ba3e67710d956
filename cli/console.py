"""The ``kb`` console script (``[project.scripts]`` in pyproject.toml).

It imports nothing but :mod:`sys` before the command line's modules, so that a
Ctrl-C while Python imports them (click, kb: the first ~50 ms of every command)
ends the command as one during it does -- ``kb: aborted`` on stderr, exit code 2
-- not with a traceback.
"""

from __future__ import annotations

import sys


def run() -> None:
    """Import the command line and run it (:func:`kb_cli.main.run`)."""
    try:
        from kb_cli.main import run as run_main
    except KeyboardInterrupt:
        sys.stderr.write("kb: aborted\n")
        sys.exit(2)
    run_main()
