"""``kb gen``: the literature-grounded hypothesis generation loop."""

from __future__ import annotations

from typing import Any, Callable

import click

from kb_cli.output import emit_json, err, json_option, kb_option, write_kwargs, write_options


def sandbox_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--sandbox", default=None, type=click.Path(file_okay=False),
                        help="The run's folder (default: $KB_GEN_SANDBOX, ., or ./sandbox).")(f)


def _open(sandbox: str | None) -> Any:
    from kb.gen.loop import open_run

    return open_run(sandbox)


@click.group("gen")
def command() -> None:
    """Generate hypotheses: Generator → LiteratureScout → Judge, until the pool saturates."""


@command.command("init")
@click.option("--question", required=True, help="The research question and its scope.")
@click.option("--gen-n", default=6, show_default=True, type=int, help="Candidates per round.")
@click.option("--keep-threshold", default=65.0, show_default=True, type=float, help="0–100.")
@click.option("--eval-scale", type=click.Choice(["low", "medium", "high"]), default="medium",
              show_default=True)
@click.option("--budget", default=6, show_default=True, type=int, help="Maximum rounds.")
@click.option("--patience", default=2, show_default=True, type=int,
              help="Rounds without a new keep before stopping.")
@sandbox_option
@json_option
def init(question: str, gen_n: int, keep_threshold: float, eval_scale: str, budget: int,
         patience: int, sandbox: str | None, as_json: bool) -> int:
    """Start a run: loop.run.yaml, ledger.tsv, literature/.cache/ (default folder ./sandbox)."""
    from kb.gen.loop import init_run

    run = init_run(sandbox, question, gen_n=gen_n, keep_threshold=keep_threshold,
                   eval_scale=eval_scale, budget=budget, patience=patience)
    if as_json:
        emit_json(run)
        return 0
    click.echo(f"run {run['run_id']} in {run['sandbox']}")
    for key in ("question", "gen_n", "keep_threshold", "eval_scale", "budget", "patience"):
        click.echo(f"  {key}: {run[key]}")
    tiers = ", ".join(f"{k} {'set' if v else 'not set'}" for k, v in run["literature_tiers"].items())
    click.echo(f"  literature keys: {tiers}")
    err("next: kb gen brief generator")
    return 0


@command.command("status")
@sandbox_option
@json_option
def status(sandbox: str | None, as_json: bool) -> int:
    """The round, the step, the pool, the gaps, the dry counter."""
    from kb.gen.loop import status as get

    st = get(_open(sandbox))
    if as_json:
        emit_json(st)
        return 0
    click.echo(f"run {st['run_id']}: {st['question']}")
    click.echo(f"round {st['round']}/{st['budget']} · " + (f"stopped ({st['stopped']})" if st["stopped"]
               else f"next: {st['step']}") + f" · dry {st['dry']}/{st['patience']}")
    click.echo(f"pool ({len(st['pool'])}):")
    for p in st["pool"]:
        click.echo(f"  {p['hid']} [{p['total']:g}] {p['statement']}")
    open_gaps = [g for g in st["gaps"] if not g.get("filled_by")]
    click.echo(f"open gaps ({len(open_gaps)}; the last 10):")
    for g in open_gaps[-10:]:
        click.echo(f"  - {g['claim']}" + (f" ({g['hid']})" if g.get("hid") else ""))
    return 0


@command.command("brief")
@click.argument("role")
@sandbox_option
@json_option
def brief(role: str, sandbox: str | None, as_json: bool) -> int:
    """What ROLE (generator, litscout, judge, ranker) needs for the current round."""
    from kb.gen.brief import brief as make, render

    b = make(_open(sandbox), role)
    if as_json:
        emit_json(b)
    else:
        click.echo(render(b), nl=False)
    return 0


@command.command("submit")
@click.argument("kind", type=click.Choice(["candidates", "litscout", "verdict"]))
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--reason", default=None, help="Why fewer candidates than --gen-n.")
@sandbox_option
@json_option
def submit(kind: str, file: str, reason: str | None, sandbox: str | None, as_json: bool) -> int:
    """Validate FILE as the round's KIND and advance the loop (kb computes totals and gates)."""
    from kb.gen.loop import submit as run

    res = run(_open(sandbox), kind, file, reason)
    if as_json:
        emit_json(res)
        return 0
    if kind == "candidates":
        click.echo(f"round {res['round']}: {len(res['accepted'])} candidates accepted "
                   f"({', '.join(res['accepted'])}); next: litscout")
    elif kind == "litscout":
        ok = sum(1 for v in res["evidence"].values() if v != "not-found")
        click.echo(f"round {res['round']}: {ok}/{len(res['evidence'])} snippets checked "
                   f"against {res['cache_keys']} cached responses; next: verdict")
        for key in res["not_found"]:
            click.echo(f"  evidence gate: {key}: snippet not found verbatim in this round's cache")
    else:
        for v in res["verdicts"]:
            gates = f" gates: {'; '.join(v['gate_failures'])}" if v["gate_failures"] else ""
            click.echo(f"  {v['hid']} total {v['total']:g} {'KEEP' if v['keep'] else 'drop'}{gates}")
        for c in res["corrections"]:
            click.echo(f"  corrected: {c}")
        click.echo(f"round {res['round']}: kept {len(res['kept'])}, pool {res['pool_size']}, dry "
                   f"{res['dry']}" + (f"; stopped: {res['stopped']}" if res["stopped"]
                                      else f"; next: round {res['next_round']}"))
    return 0


@command.command("report")
@sandbox_option
@json_option
def report(sandbox: str | None, as_json: bool) -> int:
    """Write the ranked report (hypotheses.md in the sandbox)."""
    from kb.gen.report import write_report

    res = write_report(_open(sandbox))
    if as_json:
        emit_json(res)
    else:
        click.echo(f"wrote {res['path']} ({len(res['hypotheses'])} hypotheses)")
    return 0


@command.command("schema")
@click.argument("kind", required=False, type=click.Choice(["candidates", "litscout", "verdict"]))
@json_option
def schema(kind: str | None, as_json: bool) -> int:
    """Print the JSON Schema of candidates.json, litscout.json and verdict.json."""
    from kb.gen.models import schemas

    all_ = schemas()
    emit_json(all_[kind] if kind else all_)
    return 0


@command.command("rank")
@click.argument("file", required=False, type=click.Path(dir_okay=False))
@sandbox_option
@json_option
def rank(file: str | None, sandbox: str | None, as_json: bool) -> int:
    """Apply pairwise comparisons in FILE (Elo 1200, K 32); without FILE show the ratings.

    FILE is JSON: {"matches": [{"a": HID, "b": HID, "winner": HID or "draw",
    "rationale": TEXT (optional)}, ...]}, a and b two hypotheses of the run's pool; the
    whole file is refused (every problem listed) when one match is invalid.
    """
    from kb.gen.rank import standings, submit_matches

    sb = _open(sandbox)
    res = submit_matches(sb, file) if file else {"applied": 0, "ratings": standings(sb)}
    if as_json:
        emit_json(res)
        return 0
    for r in res["ratings"]:
        click.echo(f"{r['hid']}  Elo {r['elo']:7.2f}  total {r['total']:g}  "
                   f"({r['matches']} matches)  {r['statement']}")
    return 0


@command.command("adopt")
@click.argument("hid")
@click.option("--parent", metavar="ID", default=None, help="Add it as a child of this hypothesis.")
@sandbox_option
@write_options
@json_option
@kb_option
def adopt(hid: str, parent: str | None, sandbox: str | None, as_json: bool, kb_path: str | None,
          **kw: Any) -> int:
    """Add kept hypothesis HID to tree.md (one commit, provenance in prose and trailers)."""
    from kb.gen.adopt import adopt as run

    from kb_cli.output import print_result

    return print_result(run(_open(sandbox), hid, kb_path, parent, **write_kwargs(kw)), as_json)
