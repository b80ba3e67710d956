#!/usr/bin/env python3
"""The floor of DESIGN §7: the least work any indexer of the KB must do.

    python benchmarks/floor.py [DIR]

One Python process lists the tracked files with ``git ls-files -s -z`` (run in
DIR, default the current directory, so only files under it are listed), reads
every ``.md`` file, decodes it as UTF-8 and runs one multiline regex over it
(ATX headings, ``- key: value`` anchors and ``Key: value`` lines).  Prints the
number of files read and of matches.

kb's targets are ratios to this number: a cold ``kb index`` may cost at most
5x the floor, a no-change ``kb index`` at most 1x.  Keep this script minimal
and stdlib-only: it is the yardstick, not something to optimise against.
"""
import re
import subprocess
import sys

PATTERN = re.compile(r"^(#{1,6} .*|- [^:\n]+: .*|[A-Za-z]+: .*)$", re.MULTILINE)


def main() -> int:
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    out = subprocess.run(["git", "ls-files", "-s", "-z"], cwd=root,
                         capture_output=True, check=True).stdout
    files = 0
    matches = 0
    prefix = root.rstrip("/") + "/" if root != "." else ""
    for entry in out.split(b"\0"):
        if not entry:
            continue
        # "<mode> <blob id> <stage>\t<path>"
        path = entry.split(b"\t", 1)[1].decode("utf-8", "surrogateescape")
        if not path.endswith(".md"):
            continue
        with open(prefix + path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        matches += len(PATTERN.findall(text))
        files += 1
    print(f"{files} files, {matches} matches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
