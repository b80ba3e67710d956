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


def test_every_output_is_an_object_naming_its_properties() -> None:
    """No command prints a bare array: lists come inside an object (``kb ls`` is
    {kind, status, count, objects}); ``kb gen schema`` prints JSON Schemas, open by nature."""
    from kb.contract import OUTPUTS, schema_of

    for words, model in OUTPUTS.items():
        if model is None or words == "gen schema":
            continue
        s = schema_of(words)
        assert s.get("type") == "object" and s.get("properties"), words
    assert list(invoke("schema", "ls").json()["properties"]) == ["kind", "status", "count",
                                                                  "objects"]
    assert list(invoke("schema", "find").json()["properties"]) == ["text", "count", "objects"]
    assert list(invoke("schema", "verifiers").json()["properties"]) == ["count", "verifiers"]


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
        ("ci init", ("ci", "init", "--base", "main", "--install",
                     "git+https://example.org/kb.git@v0.1.0"), ex),
        ("diff", ("diff", "HEAD~5..HEAD"), ex), ("diff", ("diff", "--staged", "--no-findings"), ex),
        ("log", ("log", "H2"), ex), ("log", ("log", "q2"), ex),
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
    # kb gen / kb lit outputs need a run and a literature server: tests/test_gen_loop.py
    # validates every one of them; kb serve runs until stopped: test_web.py validates it
    assert ran == {k for k, v in OUTPUTS.items()
                   if v is not None and k.split()[0] not in ("gen", "lit", "serve")}
