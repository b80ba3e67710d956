"""The agents' contract, part two: every command's JSON output has a schema, the real
output of every command validates against it, and docs/cli.md is current."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from conftest import invoke

ROOT = Path(__file__).resolve().parent.parent
NOW = "2026-11-02T10:00:00"


def leaf_commands() -> set[str]:
    from kb_cli.main import cli
    from kb_cli.schema import _leaves

    return {words for words, _cmd in _leaves(cli, click.Context(cli, info_name="kb"))}


def test_every_command_has_an_output_model() -> None:
    from kb.contract import OUTPUTS

    base = {k.split(" --")[0] for k in OUTPUTS}
    assert base == leaf_commands()


def test_docs_cli_md_is_current() -> None:
    """docs/cli.md is `kb schema --reference`: regenerate it when a command changes."""
    r = invoke("schema", "--reference")
    assert r.code == 0
    assert (ROOT / "docs/cli.md").read_text(encoding="utf-8") == r.stdout, \
        "docs/cli.md is stale: run `kb schema --reference > docs/cli.md`"


def test_schema_command(tmp_path: Path) -> None:
    r = invoke("schema", "lock", "status", cwd=tmp_path)
    props = r.json()["properties"]
    assert r.code == 0 and {"now", "now_epoch", "locks"} <= props.keys()
    assert r.json()["type"] == "object"
    assert invoke("schema", "dashboard", "--check").json()["properties"].keys() == \
        {"path", "stale", "exists"}
    listed = invoke("schema", "--json").json()["commands"]
    assert "hyp add" in listed and "mcp" not in listed
    err = invoke("schema", "error").json()
    assert err["properties"]["error"]["$ref"].endswith("ErrorBody")
    bad = invoke("schema", "frobnicate", "--json")
    assert bad.code == 2 and bad.json()["error"]["kind"] == "usage"


def scenario(ex: Path, tmp: Path) -> list[tuple[str, tuple[str, ...], Path]]:
    """(schema key, argv, cwd) of one run of every command with a JSON output, in order."""
    s: list[tuple[str, tuple[str, ...], Path]] = [
        ("init", ("init", str(tmp / "fresh")), tmp),
        ("index", ("index",), ex), ("ls", ("ls",), ex), ("ls", ("ls", "problems"), ex),
        ("show", ("show", "q2"), ex), ("find", ("find", "prime"), ex), ("brief", ("brief",), ex),
        ("verify", ("verify",), ex), ("rules", ("rules",), ex), ("verifiers", ("verifiers",), ex),
        ("schema", ("schema",), ex), ("prime", ("prime",), ex),
        ("sync", ("sync", "HEAD"), ex),
        ("hyp add", ("hyp", "add", "Caching halves load time"), ex),
        ("hyp status", ("hyp", "status", "H2", "进行中"), ex),
        ("exp new", ("exp", "new", "--hyp", "H2", "measure cold loads"), ex),
        ("exp log", ("exp", "log", "E005", "ran 10 loads"), ex),
        ("exp update", ("exp", "update", "E005", "cold cache", "--section", "方法"), ex),
        ("exp result", ("exp", "result", "E005", "--data", "2x", "--conclusion", "支持",
                        "--reason", "faster"), ex),
        ("hyp evidence", ("hyp", "evidence", "H1", "E005"), ex),
        ("hyp edit", ("hyp", "edit", "H2", "xdist on 4 workers is under 12 minutes", "--reason", "wording"), ex),
        ("dashboard", ("dashboard",), ex), ("dashboard --check", ("dashboard", "--check"), ex),
        ("problem add", ("problem", "add", "q9", "Is the cache ever stale?"), ex),
        ("problem status", ("problem", "status", "q9", "死路"), ex),
        ("problem plan", ("problem", "plan", "q2", "bisect"), ex),
        ("problem priority", ("problem", "priority", "q2", "3"), ex),
        ("propo add", ("propo", "add", "数论", "p9", "Every prime above 2 is odd"), ex),
        ("entry add", ("entry", "add", "p9", "--kind", "证明", "--title", "parity",
                       "--prob", "0.8", "--text", "2 divides an even number"), ex),
        ("verdict", ("verdict", "p9#证明1", "--vote", "v1=1", "--vote", "v2=1"), ex),
        ("method add", ("method", "add", "m9", "Parity argument"), ex),
        ("method apply", ("method", "apply", "m9", "settled p9", "--problem", "q2"), ex),
        ("method improve", ("method", "improve", "m9", "clearer", "--text", "state the parity"), ex),
        ("priority adjust", ("priority", "adjust", "--mode", "survival-map"), ex),
        ("promote", ("promote",), ex), ("refresh", ("refresh",), ex),
        ("report", ("report",), ex), ("report --stdout", ("report", "--stdout"), ex),
        ("lock claim", ("lock", "claim", "Problems/q2.md", "--owner", "alice"), ex),
        ("lock renew", ("lock", "renew", "Problems/q2.md", "--owner", "alice"), ex),
        ("lock status", ("lock", "status"), ex),
        ("lock release", ("lock", "release", "Problems/q2.md", "--owner", "alice"), ex),
        ("lock prune", ("lock", "prune"), ex),
        ("lock steal", ("lock", "steal", "Problems/q2.md", "--reason", "free now"), ex),
        ("project lock", ("project", "lock", "--owner", "alice"), ex),
        ("project unlock", ("project", "unlock", "--owner", "alice"), ex),
        ("hooks install", ("hooks", "install"), ex), ("hooks status", ("hooks", "status"), ex),
        ("hooks uninstall", ("hooks", "uninstall"), ex),
        ("ci init", ("ci", "init", "--base", "main", "--install", "kb-research==0.1.0"), ex),
    ]
    return s + trail_scenario(ex)


def trail_scenario(ex: Path) -> list[tuple[str, tuple[str, ...], Path]]:
    """The exploration graph's commands (issue 15): an ingested transcript gives node ids
    known in advance (fingerprints), then every recording and view once."""
    from kb.trail.ingest import parse, plan

    fixture = Path(__file__).resolve().parent / "trail_fixtures" / "events_zh.jsonl"
    ids = ["n" + p.fp[:10] for p in plan(parse(fixture))[0]]
    goal, question, hyp, dead, concl = ids[0], ids[2], ids[3], ids[7], ids[10]
    t = ("trail",)
    return [
        ("trail ingest", (*t, "ingest", str(fixture)), ex),
        ("trail add", (*t, "add", "--kind", "topic", "--title", "Prefix", "--parent", goal), ex),
        ("trail link", (*t, "link", hyp, question, "--kind", "related"), ex),
        ("trail set", (*t, "set", question, "--status", "done"), ex),
        ("trail move", (*t, "move", question, "--parent", goal), ex),
        ("trail promote", (*t, "promote", hyp), ex),
        ("trail digest", (*t, "digest", hyp, "by hand"), ex),
        ("trail rollback", (*t, "rollback", hyp, "0"), ex),
        ("trail assign", (*t, "assign", hyp, "--owner", "alice"), ex),
        ("trail handoff", (*t, "handoff", hyp, "--to", "bob"), ex),
        ("trail archive", (*t, "archive", question), ex),
        ("trail merge", (*t, "merge", dead, "--into", concl), ex),
        *[(f"trail {v}", (*t, v), ex) for v in ("overview", "trunk", "brief", "frontier",
                                                 "stats", "tree", "snapshot", "check")],
        ("trail find", (*t, "find", "前缀"), ex), ("trail node", (*t, "node", hyp), ex),
        ("trail path", (*t, "path", concl), ex), ("trail subtree", (*t, "subtree", goal), ex),
        ("trail diff", (*t, "diff", "HEAD~3..HEAD"), ex),
        ("trail render --check", (*t, "render", "--check"), ex),
        ("trail render", (*t, "render"), ex),
    ]


def test_every_command_output_validates(example_kb: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every command once with --json in one scenario; validate each output."""
    from kb.contract import OUTPUTS, validate_output

    monkeypatch.setenv("KB_NOW", NOW)
    ran: set[str] = set()
    for key, argv, cwd in scenario(example_kb, tmp_path):
        r = invoke(*argv, "--json", cwd=cwd)
        assert r.code in (0, 1), (argv, r.code, r.stderr, r.stdout)
        data = json.loads(r.stdout)
        assert "error" not in data or not isinstance(data, dict) or data["error"] is None, (argv, data)
        validate_output(key, data)
        ran.add(key)
    # a refusal is the error object, in every command
    from kb.contract import ErrorOutput

    # (the scenario's steal left Problems/q2.md locked by the default owner)
    r = invoke("lock", "steal", "Problems/q2.md", "--reason", "r", "--owner", "bob", "--json",
               cwd=example_kb)
    assert r.code == 1 and ErrorOutput.model_validate(r.json()).error.kind == "locked"
    # kb gen / kb lit outputs need a run and a literature server (tests/test_gen_loop.py);
    # diff and log have their own scenario below (with every trail command again)
    assert ran == {k for k, v in OUTPUTS.items()
                   if v is not None and k.split()[0] not in ("gen", "lit", "diff", "log")}


def test_trail_and_review_outputs_validate(example_kb: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ``kb trail`` command, ``kb diff`` and ``kb log``: real output, its model."""
    from kb.contract import OUTPUTS, validate_output

    monkeypatch.setenv("KB_NOW", NOW)
    ran: set[str] = set()

    def run(key: str, *argv: str, code: int = 0) -> dict:
        r = invoke(*argv, "--json", cwd=example_kb)
        assert r.code == code, (argv, r.code, r.stdout, r.stderr)
        data = json.loads(r.stdout)
        validate_output(key, data)
        ran.add(key)
        return data

    a = run("trail add", "trail", "add", "--kind", "question", "--title", "Why is CI slow?")["id"]
    b = run("trail add", "trail", "add", "--kind", "hypothesis", "--title", "pytest dominates",
            "--parent", a)["id"]
    c = run("trail add", "trail", "add", "--kind", "hypothesis", "--title", "setup dominates",
            "--parent", a)["id"]
    run("trail link", "trail", "link", b, c, "--kind", "contradicts")
    run("trail set", "trail", "set", b, "--status", "active")
    run("trail move", "trail", "move", c, "--root")
    run("trail merge", "trail", "merge", c, "--into", b)
    run("trail promote", "trail", "promote", b)
    run("trail digest", "trail", "digest", b, "pytest is most of it")
    run("trail rollback", "trail", "rollback", b, "0")
    run("trail assign", "trail", "assign", b, "--owner", "alice")
    run("trail handoff", "trail", "handoff", b, "--to", "bob", "--actor", "alice")
    for view, args in (("overview", ()), ("frontier", ()), ("stats", ()), ("trunk", ()),
                       ("brief", ()), ("find", ("CI",)), ("node", (a,)), ("path", (b,)),
                       ("tree", (a,)), ("subtree", (a,)), ("snapshot", ())):
        assert run(f"trail {view}", "trail", view, *args)["view"] == view
    run("trail archive", "trail", "archive", b)
    run("trail check", "trail", "check")
    run("trail render --check", "trail", "render", "--check", code=1)
    run("trail render", "trail", "render")
    events = tmp_path / "session.jsonl"
    events.write_text("\n".join(json.dumps(e) for e in (
        {"type": "user", "text": "Why is the CI slow?"},
        {"type": "reasoning", "text": "The pytest step takes most of the time, so look there."},
        {"type": "assistant", "text": "Profiling pytest next."},
        {"type": "turn_end"})) + "\n", encoding="utf-8")
    run("trail ingest", "trail", "ingest", str(events))
    run("trail diff", "trail", "diff", "HEAD~3..HEAD")
    run("diff", "diff", "HEAD~3..HEAD")
    run("log", "log", "H1")
    assert {k for k in OUTPUTS if k.split()[0] in ("diff", "log")} <= ran
