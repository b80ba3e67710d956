"""Every ``kb trail`` command's --json output validates against its model (kb.trail.contract)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from conftest import git, invoke

FIX = Path(__file__).resolve().parent / "trail_fixtures"


def test_every_trail_command_has_a_model() -> None:
    from kb.trail.contract import OUTPUTS
    from kb_cli.trail import command

    leaves = {f"trail {name}" for name in command.commands}
    assert {k.split(" --")[0] for k in OUTPUTS} == leaves
    assert all(isinstance(command.commands[k.split()[1]], click.Command) for k in OUTPUTS)


def test_real_outputs_validate(tree_kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kb.trail.contract import OUTPUTS

    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    seen: set[str] = set()

    def run(words: str, *args: str) -> dict:
        r = invoke(*words.split(" --")[0].split(), *args, "--json", cwd=tree_kb)
        assert r.code in (0, 1), r.stderr
        OUTPUTS[words].model_validate(r.json())
        seen.add(words)
        return r.json()

    base = git(tree_kb, "rev-parse", "HEAD")
    g = run("trail add", "--kind", "goal", "--title", "g")["id"]
    t = run("trail add", "--kind", "topic", "--title", "t", "--parent", g)["id"]
    h = run("trail add", "--kind", "hypothesis", "--title", "h", "--parent", t)["id"]
    q = run("trail add", "--kind", "question", "--title", "q", "--parent", t)["id"]
    run("trail link", h, q, "--kind", "related")
    run("trail set", q, "--status", "done")
    run("trail move", q, "--parent", g)
    run("trail promote", h)
    run("trail digest", h, "by hand")
    run("trail rollback", h, "0")
    run("trail assign", t, "--owner", "a")
    run("trail handoff", t, "--to", "b")
    run("trail archive", q)
    x = run("trail add", "--kind", "note", "--title", "x")["id"]
    run("trail merge", x, "--into", g)
    run("trail ingest", str(FIX / "events_zh.jsonl"))
    for words in ("trail overview", "trail trunk", "trail brief", "trail frontier", "trail stats",
                  "trail tree", "trail snapshot", "trail check"):
        run(words)
    run("trail find", "g")
    run("trail node", t)
    run("trail path", h)
    run("trail subtree", t)
    run("trail diff", f"{base}..HEAD")
    run("trail render --check", "--check")
    run("trail render")
    from kb.trail.contract import OUTPUTS as ALL

    assert seen == set(ALL)


def test_write_models_are_the_one_write_result() -> None:
    """The trail's write models carry exactly kb's write-result fields (kb.contract's
    WriteResult) plus their own; ingest and render print nothing beyond their model."""
    from kb.contract import WriteResult
    from kb.trail.contract import TrailIngest, TrailRender, TrailWrite, TrailWriteResult

    assert set(TrailWriteResult.model_fields) == set(WriteResult.model_fields)
    for m in (TrailWrite, TrailIngest, TrailRender):
        assert set(WriteResult.model_fields) <= set(m.model_fields)


def test_ingest_and_render_json_is_exactly_their_model(tree_kb: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from kb.trail.contract import TrailIngest, TrailRender

    monkeypatch.setenv("KB_NOW", "2026-12-01T10:00:00Z")
    for args, model in ((("trail", "ingest", str(FIX / "events_zh.jsonl")), TrailIngest),
                        (("trail", "render"), TrailRender)):
        r = invoke(*args, "--json", cwd=tree_kb)
        assert r.code == 0, r.stderr
        data = r.json()
        assert set(data) == set(model.model_fields), args
        model.model_validate(data)
        assert data["commit"] == git(tree_kb, "rev-parse", "HEAD")
        assert data["blobs"] == {p: git(tree_kb, "rev-parse", f"HEAD:{p}") for p in data["paths"]}
