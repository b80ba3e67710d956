#!/usr/bin/env python3
"""The peer of DESIGN §7: obsidiantools loading the KB folder as a vault.

    python benchmarks/peer_obsidian.py [DIR]

Runs ``Vault(DIR).connect().gather()`` (DIR defaults to the current
directory) and prints the number of notes.  If obsidiantools cannot be
imported (``pip install obsidiantools``), prints ``peer unavailable: <reason>``
and exits 0 so that the benchmark reports it instead of a number.
"""
import sys
from pathlib import Path


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    try:
        from obsidiantools.api import Vault
    except Exception as e:  # ImportError, or a broken dependency (numpy, pandas, ...)
        print(f"peer unavailable: cannot import obsidiantools ({type(e).__name__}: {e})")
        return 0
    vault = Vault(root).connect().gather()
    notes = len(vault.md_file_index)
    print(f"{notes} notes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
