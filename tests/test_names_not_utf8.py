"""A .md file whose name is not UTF-8 (a GBK name from an old tool): every command exited 3
(its name cannot go into the index); kb reads no such file and `kb verify` says so."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import commit_all, git, invoke


def test_a_name_not_utf8_is_a_warning_never_an_internal_error(example_kb: Path) -> None:
    root = example_kb
    bad = os.path.join(os.fsencode(root), b"Problems", b"\xce\xca\xcc\xe2.md")  # 问题 in GBK
    with open(bad, "wb") as f:
        f.write("# 问题｜gbk\n".encode("utf-8"))
    shown = "Problems/\\xce\\xca\\xcc\\xe2.md"
    for args in (["index"], ["ls", "problems"], ["show", "q1"], ["find", "x"]):
        r = invoke(*args, cwd=root)
        assert r.code in (0, 1), (args, r.stdout, r.stderr)  # never 3
    r = invoke("verify", "--json", cwd=root)
    hits = [d for d in r.json()["diagnostics"] if d["code"] == "KB133"]
    assert r.code == 0 and [(d["path"], d["severity"]) for d in hits] == [(shown, "warning")]
    git(root, "add", "-A")
    r = invoke("verify", "--staged", "--json", cwd=root)
    assert r.code == 0 and [d["path"] for d in r.json()["diagnostics"] if d["code"] == "KB133"] \
        == [shown]
    commit_all(root, "a GBK name")
    for args in (["verify", "--range", "HEAD~1..HEAD"], ["diff", "HEAD~1..HEAD"],
                 ["verify", "--staged"], ["hyp", "add", "next"]):
        r = invoke(*args, cwd=root)
        assert r.code == 0, (args, r.stdout, r.stderr)
