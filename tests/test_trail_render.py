"""``kb trail render`` (issue 15): deterministic TRAIL.md with an escaped Mermaid trunk,
reported stale by ``kb verify`` as the warning KB241."""

from __future__ import annotations

import re
from pathlib import Path


from conftest import git, invoke
from trail_support import kb, ok  # noqa: F401 (a fixture and a helper)

EVIL = 'x"]; click n1 call alert() %%{init: {"theme":"dark"}}%% ``` <script>ü 中文'




def test_render_is_deterministic_escaped_and_one_commit(kb: Path) -> None:
    g = ok(kb, "add", "--kind", "goal", "--title", "Cache hits")["ids"][0]
    t = ok(kb, "add", "--kind", "topic", "--title", EVIL, "--parent", g)["ids"][0]
    h = ok(kb, "add", "--kind", "hypothesis", "--title", "%%{init}%% graph LR", "--parent", t)["ids"][0]
    c = ok(kb, "add", "--kind", "conclusion", "--title", "Sorted", "--parent", t,
           "--status", "done")["ids"][0]
    ok(kb, "link", h, c, "--kind", "contradicts")
    res = ok(kb, "render")
    assert res["changed"] is True and res["path"] == "TRAIL.md"
    assert git(kb, "show", "--name-only", "--format=", "HEAD") == "TRAIL.md"
    text = (kb / "TRAIL.md").read_text(encoding="utf-8")
    block = text.split("```mermaid\n", 1)[1].split("\n```\n", 1)[0]
    assert text.count("```") == 2  # the title's backticks cannot close the fence
    assert "%%" not in block and "<script>" not in block
    for ln in block.splitlines()[1:]:
        # Every label is one quoted string without inner quotes: the directive stays text.
        assert ln.count('"') in (0, 2), ln
    assert f'  {t}["topic: x#34;#93;#59; click n1 call alert#40;#41; #37;#37;#123;' in block
    assert f"  {g} --> {t}" in block and f"  {h} -. contradicts .- {c}" in block
    assert "&lt;script&gt;" in text and "<script>" not in text
    # Deterministic: from scratch (no cache), again, the same bytes — and nothing to commit.
    import shutil

    shutil.rmtree(kb / ".kb")
    assert ok(kb, "render")["changed"] is False
    head = git(kb, "rev-parse", "HEAD")
    from kb.repo import open_kb
    from kb.trail.render import render
    from kb.trail.replay import load

    assert render(load(open_kb(kb), use_cache=False)) == text
    assert git(kb, "rev-parse", "HEAD") == head
    assert re.search(r"^- ● `%s` conclusion: Sorted$" % c, text, re.M)


def test_verify_reports_a_stale_trail_as_a_warning(kb: Path) -> None:
    ok(kb, "add", "--kind", "goal", "--title", "g")
    r = invoke("verify", "--json", cwd=kb)
    assert r.code == 0 and not [d for d in r.json()["diagnostics"] if d["code"] == "KB241"]
    ok(kb, "render")
    assert invoke("trail", "render", "--check", cwd=kb).code == 0
    ok(kb, "add", "--kind", "question", "--title", "q")
    r = invoke("verify", "--json", cwd=kb)
    assert r.code == 0  # a warning, not a violation
    kb241 = [d for d in r.json()["diagnostics"] if d["code"] == "KB241"]
    assert len(kb241) == 1 and kb241[0]["severity"] == "warning" and kb241[0]["path"] == "TRAIL.md"
    chk = invoke("trail", "render", "--check", "--json", cwd=kb)
    assert chk.code == 1 and chk.json()["stale"] is True
    # The committed history sees it too (the rule reads the log from git).
    r = invoke("verify", "--rev", "HEAD", "--json", cwd=kb)
    assert [d["code"] for d in r.json()["diagnostics"]].count("KB241") == 1
    ok(kb, "render")
    r = invoke("verify", "--json", cwd=kb)
    assert not [d for d in r.json()["diagnostics"] if d["code"] == "KB241"]
    r = invoke("verify", "--rev", "HEAD", "--json", cwd=kb)
    assert not [d for d in r.json()["diagnostics"] if d["code"] == "KB241"]


def test_render_check_says_a_fresh_trail_is_up_to_date(kb: Path) -> None:
    ok(kb, "add", "--kind", "goal", "--title", "g")
    ok(kb, "render")
    r = invoke("trail", "render", "--check", cwd=kb)
    # on standard error, where kb dashboard --check and kb refresh --check say it
    assert r.code == 0 and r.stderr == "TRAIL.md is up to date\n" and r.stdout == ""
    r = invoke("trail", "render", "--check", "--json", cwd=kb)  # stdout holds only the JSON
    assert r.code == 0 and r.json() == {"path": "TRAIL.md", "exists": True, "stale": False,
                                        "line": None}
    ok(kb, "add", "--kind", "question", "--title", "q")
    r = invoke("trail", "render", "--check", cwd=kb)
    assert r.code == 1 and r.stdout == "" and "stale: run `kb trail render`" in r.stderr


def test_a_crlf_checkout_is_not_stale_and_render_commits_nothing(kb: Path, tmp_path: Path) -> None:
    """core.autocrlf=true checks TRAIL.md out with CRLF: the same blob, so not stale,
    and `kb trail render` keeps the CRLF and makes no (empty) commit (case WIN-01)."""
    ok(kb, "add", "--kind", "goal", "--title", "Cache hits")
    ok(kb, "render")
    clone = tmp_path / "crlf"
    git(tmp_path, "clone", "-q", "-c", "core.autocrlf=true", str(kb), str(clone))
    assert b"\r\n" in (clone / "TRAIL.md").read_bytes()
    r = invoke("verify", "--json", cwd=clone)
    assert not [d for d in r.json()["diagnostics"] if d["code"] == "KB241"], r.stdout
    assert invoke("trail", "render", "--check", cwd=clone).code == 0
    head = git(clone, "rev-parse", "HEAD")
    res = ok(clone, "render")
    assert res["changed"] is False and res["commit"] is None
    assert git(clone, "rev-parse", "HEAD") == head and git(clone, "status", "--porcelain") == ""
