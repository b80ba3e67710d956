"""``kb trail``: the exploration graph — record (one commit each), view, ingest, render."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import click

from kb import json_input
from kb.numbers import quoted
from kb.trail.model import MAX_LEASE_SECONDS
from kb_cli.output import emit_json, err, json_option, kb_option, print_result, print_waiting


@click.group("trail")
def command() -> None:
    """The exploration graph: a shared research trajectory in .explore-tree/ (one commit per
    recording; views read a cache in .kb/)."""


# -- shared options -------------------------------------------------------------------


class Count(click.ParamType):
    """An integer of at least ``minimum``: every count of the trail commands (``--limit``,
    ``--lease``, ``--depth``), so that they all refuse alike when parsed — a click usage
    error, exit 2 (``kind`` "usage" with ``--json``), before any view is computed or
    anything recorded. Unchecked, a negative ``--limit`` sliced the results away
    (``find`` said "nothing matches", exit 0) and a negative ``--lease`` handed over a
    lease already expired.

    Named "integer" like ``click.INT`` (not a ``click.IntRange``, whose range the help
    would add): the help, and docs/cli.md generated from it, read as before.
    """

    name = "integer"

    def __init__(self, minimum: int = 1, maximum: int | None = None, unit: str = "") -> None:
        self.minimum, self.maximum, self.unit = minimum, maximum, unit

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        n: int = click.INT.convert(value, param, ctx)
        if n < self.minimum:
            self.fail(f"{n}: must be at least {self.minimum}", param, ctx)
        if self.maximum is not None and n > self.maximum:
            self.fail(f"{quoted(str(n), limit=20, quote=False)}: must be at most "
                      f"{self.maximum:,}{self.unit}", param, ctx)
        return n


#: A count of things (results, nodes, minutes): 1 or more.
COUNT = Count(1)
#: A depth counts levels below a node: 0 (the node alone) is one.
DEPTH = Count(0)
#: A lease's minutes: 1 to a year's (kb.trail.model.MAX_LEASE_SECONDS).
LEASE_MINUTES = Count(1, MAX_LEASE_SECONDS // 60, " minutes (a year)")


def record_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Options every recording shares."""
    f = click.option("--expect-version", type=int, default=None, metavar="N",
                     help="Refuse (STALE_REVISION) unless the node is still at version N.")(f)
    f = click.option("--role", type=click.Choice(["agent", "lead", "curator"]), default=None,
                     help="The actor's role: lead and curator are exempt from write scopes.")(f)
    f = click.option("--actor", default=None,
                     help="Who writes; with it, the write must stay inside the actor's live lease.")(f)
    f = click.option("--no-commit", is_flag=True,
                     help="Write the log file but leave it uncommitted.")(f)
    return json_option(kb_option(f))


def _kw(kw: dict[str, Any]) -> dict[str, Any]:
    return {"actor": kw.pop("actor"), "role": kw.pop("role"), "no_commit": kw.pop("no_commit"),
            "on_wait": print_waiting, "expect_version": kw.pop("expect_version")}


def _children(path: str | None) -> list[dict[str, Any]]:
    from kb.errors import UsageError

    if path is None:
        return []
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8; re-save it as UTF-8 JSON") from None
    try:
        data = json_input.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg})") from None
    if not isinstance(data, list):
        raise UsageError(f"{path}: expected a JSON array of children (objects with kind and title)")
    return data


# -- recordings ----------------------------------------------------------------------


@command.command("add")
@click.option("--kind", required=True, help="goal topic question hypothesis step action evidence "
              "decision dead_end conclusion artifact note")
@click.option("--title", required=True, help="One line, at most 120 characters.")
@click.option("--summary", default=None, help="Reasons, evidence, references (≤ 1,200 characters).")
@click.option("--parent", default=None, metavar="ID", help="Parent node (default: a new root).")
@click.option("--status", default="open", help="open active done abandoned")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@click.option("--ref", "refs", multiple=True, help="A reference: H1.2, E004, q1, a file, a URL.")
@click.option("--children-json", default=None, metavar="FILE",
              help="A JSON array of up to 20 children ({kind, title, summary?}) to add under it.")
@record_options
def add(kind: str, title: str, summary: str | None, parent: str | None, status: str,
        tags: tuple[str, ...], refs: tuple[str, ...], children_json: str | None, as_json: bool,
        kb_path: str | None, **kw: Any) -> int:
    """Add a node (and up to 20 children) as one recording."""
    from kb.trail.ops import add as do

    return print_result(do(kb_path, kind=kind, title=title, summary=summary, parent=parent,
                     status=status, tags=list(tags), refs=list(refs),
                     children=_children(children_json), **_kw(kw)), as_json)


@command.command("link")
@click.argument("src", metavar="FROM")
@click.argument("dst", metavar="TO")
@click.option("--kind", "edge_kind", required=True,
              help="supports contradicts refines depends replaces duplicates continues related")
@click.option("--note", default=None)
@record_options
def link(src: str, dst: str, edge_kind: str, note: str | None, as_json: bool, kb_path: str | None,
         **kw: Any) -> int:
    """Add a side edge FROM -[kind]-> TO."""
    from kb.trail.ops import link as do

    return print_result(do(kb_path, src, dst, edge_kind, note, **_kw(kw)), as_json)


@command.command("set")
@click.argument("nid", metavar="ID")
@click.option("--status", default=None)
@click.option("--title", default=None)
@click.option("--summary", default=None)
@click.option("--tags", default=None, help="Comma-separated; replaces the tags ('' clears).")
@click.option("--refs", default=None, help="Comma-separated; replaces the refs ('' clears).")
@record_options
def set_(nid: str, status: str | None, title: str | None, summary: str | None, tags: str | None,
         refs: str | None, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Change a node's status, title, summary, tags or refs."""
    from kb.trail.ops import set_fields

    return print_result(set_fields(kb_path, nid, status=status, title=title, summary=summary, tags=tags,
                             refs=refs, **_kw(kw)), as_json)


@command.command("move")
@click.argument("nid", metavar="ID")
@click.option("--parent", default=None, metavar="ID", help="The new parent.")
@click.option("--root", is_flag=True, help="Make it a root.")
@record_options
def move(nid: str, parent: str | None, root: bool, as_json: bool, kb_path: str | None,
         **kw: Any) -> int:
    """Move a node (with its subtree) under another, or to the roots."""
    from kb.errors import UsageError
    from kb.trail.ops import move as do

    if (parent is None) == (not root):
        raise UsageError("give --parent ID or --root")
    return print_result(do(kb_path, nid, None if root else parent, **_kw(kw)), as_json)


@command.command("merge")
@click.argument("nid", metavar="ID")
@click.option("--into", required=True, metavar="ID")
@record_options
def merge(nid: str, into: str, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Fold node ID into another (children, edges, tags, refs, hits move over)."""
    from kb.trail.ops import merge as do

    return print_result(do(kb_path, nid, into, **_kw(kw)), as_json)


@command.command("promote")
@click.argument("nid", metavar="ID")
@record_options
def promote(nid: str, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Promote a leaf to a topic."""
    from kb.trail.ops import promote as do

    return print_result(do(kb_path, nid, **_kw(kw)), as_json)


@command.command("archive")
@click.argument("nid", metavar="ID")
@click.option("--unarchive", is_flag=True, help="Bring it back into the live views.")
@record_options
def archive(nid: str, unarchive: bool, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Archive a node out of the live views (marked done), or --unarchive it."""
    from kb.trail.ops import archive as do

    return print_result(do(kb_path, nid, unarchive=unarchive, **_kw(kw)), as_json)


@command.command("digest")
@click.argument("nid", metavar="ID")
@click.argument("text", required=False)
@click.option("--auto", is_flag=True, help="Return the digest to the template.")
@record_options
def digest(nid: str, text: str | None, auto: bool, as_json: bool, kb_path: str | None,
           **kw: Any) -> int:
    """Write a topic's digest by hand (≤ 120 characters), or --auto."""
    from kb.trail.ops import digest as do

    return print_result(do(kb_path, nid, text, auto=auto, **_kw(kw)), as_json)


@command.command("rollback")
@click.argument("nid", metavar="ID")
@click.argument("version", type=int)
@record_options
def rollback(nid: str, version: int, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Roll a topic's digest back (VERSION 0 = newest history entry, 1 = the one before)."""
    from kb.trail.ops import rollback as do

    return print_result(do(kb_path, nid, version, **_kw(kw)), as_json)


@command.command("assign")
@click.argument("nid", metavar="ID")
@click.option("--owner", default=None, help="Who takes the lease.")
@click.option("--lease", "lease_minutes", type=LEASE_MINUTES, default=30, show_default=True,
              help="Lease length in minutes.")
@click.option("--renew", is_flag=True, help="Extend your own lease.")
@click.option("--steal", is_flag=True, help="Take a live lease (role lead or curator).")
@click.option("--release", is_flag=True, help="Give the lease up.")
@record_options
def assign(nid: str, owner: str | None, lease_minutes: int, renew: bool, steal: bool,
           release: bool, as_json: bool, kb_path: str | None, **kw: Any) -> int:
    """Claim, renew, steal or release the lease on a node (every change bumps its epoch)."""
    from kb.errors import UsageError
    from kb.trail.ops import assign as do

    if release == (owner is not None):
        raise UsageError("give --owner NAME, or --release")
    return print_result(do(kb_path, nid, None if release else owner, lease_seconds=lease_minutes * 60,
                     renew=renew, steal=steal, **_kw(kw)), as_json)


@command.command("handoff")
@click.argument("nid", metavar="ID")
@click.option("--to", "to_actor", required=True, help="Who takes over.")
@click.option("--lease", "lease_minutes", type=LEASE_MINUTES, default=30, show_default=True)
@record_options
def handoff(nid: str, to_actor: str, lease_minutes: int, as_json: bool, kb_path: str | None,
            **kw: Any) -> int:
    """Hand a topic's lease to another actor and write a handoff package under it."""
    from kb.trail.ops import handoff as do

    return print_result(do(kb_path, nid, to_actor, lease_seconds=lease_minutes * 60, **_kw(kw)), as_json)


# -- views ------------------------------------------------------------------------------


def _view(name: str, as_json: bool, kb_path: str | None, **params: Any) -> int:
    from kb.trail.views import run_view

    v = run_view(kb_path, name, **params)
    if as_json:
        emit_json(v)
    else:
        from kb.trail.text import format_view

        click.echo(format_view(v))
    return 0


def _simple_view(name: str, doc: str) -> None:
    @command.command(name, help=doc)
    @json_option
    @kb_option
    def cmd(as_json: bool, kb_path: str | None) -> int:
        return _view(name, as_json, kb_path)


_simple_view("overview", "Goal, focus, recent nodes, open questions, dead ends, artifacts, "
                         "conclusions.")
_simple_view("frontier", "Next-step suggestions (verify, resolve, claim, converge, switch) and "
                         "the dead ends to avoid.")
_simple_view("stats", "Counts per kind, status, edge kind and actor; duplicate work.")


@command.command("trunk")
@click.option("--archived", is_flag=True, help="Also list archived leaf roots.")
@json_option
@kb_option
def trunk(archived: bool, as_json: bool, kb_path: str | None) -> int:
    """goal → topic → leaf roots with digest, progress, owner, ⚠ conflicts, claimable leases."""
    return _view("trunk", as_json, kb_path, archived=archived)


@command.command("brief")
@click.option("--goal", "goal", default=None, metavar="ID", help="The goal (default: the newest).")
@json_option
@kb_option
def brief(goal: str | None, as_json: bool, kb_path: str | None) -> int:
    """A brief of at most 400 characters: goal, trunk, other trunks, open leaves, next."""
    return _view("brief", as_json, kb_path, id=goal)


@command.command("find")
@click.argument("query")
@click.option("--limit", type=COUNT, default=20, show_default=True)
@json_option
@kb_option
def find(query: str, limit: int, as_json: bool, kb_path: str | None) -> int:
    """Search titles, digests, summaries, tags and refs (title and digest hits first)."""
    return _view("find", as_json, kb_path, query=query, limit=limit)


def _id_view(name: str, doc: str, depth: int | None = None) -> None:
    @command.command(name, help=doc)
    @click.argument("nid", metavar="ID")
    @json_option
    @kb_option
    def cmd(nid: str, as_json: bool, kb_path: str | None, **kw: Any) -> int:
        return _view(name, as_json, kb_path, id=nid, **kw)

    if depth is not None:
        click.option("--depth", type=DEPTH, default=depth, show_default=True)(cmd)


_id_view("node", "One node in full (version is the --expect-version token), children, edges.")
_id_view("path", "The path from the root to the node.")
_id_view("subtree", "A node's details and its subtree.", depth=6)


@command.command("tree")
@click.argument("nid", metavar="[ID]", required=False)
@click.option("--depth", type=DEPTH, default=3, show_default=True)
@json_option
@kb_option
def tree(nid: str | None, depth: int, as_json: bool, kb_path: str | None) -> int:
    """The live forest (or the subtree at ID), DEPTH levels deep."""
    return _view("tree", as_json, kb_path, id=nid, depth=depth)


@command.command("snapshot")
@click.option("--focus", default=None, metavar="ID")
@click.option("--limit", type=COUNT, default=2000, show_default=True)
@json_option
@kb_option
def snapshot(focus: str | None, limit: int, as_json: bool, kb_path: str | None) -> int:
    """The live graph for a panel: recent nodes with their ancestors, edges, frontier, stats."""
    from kb.trail.views import run_view

    v = run_view(kb_path, "snapshot", id=focus, limit=limit)
    if as_json:
        emit_json(v)
    else:
        click.echo(f"{len(v['nodes'])} node(s), {len(v['edges'])} edge(s)"
                   + (" (truncated)" if v["truncated"] else "") + f"; focus {v['focus']}")
    return 0


@command.command("check")
@json_option
@kb_option
def check(as_json: bool, kb_path: str | None) -> int:
    """Replay the log from scratch and list torn or corrupt entries (exit 1 if any)."""
    from kb.repo import resolve_kb
    from kb.trail.replay import load

    g = load(resolve_kb(kb_path), use_cache=False)
    probs = [p.to_json() for p in g.problems]
    if as_json:
        emit_json({"operations": g.ops, "nodes": len(g.nodes), "problems": probs})
    else:
        for p in g.problems:
            click.echo(p.format())
        err(f"{g.ops} operation(s), {len(g.nodes)} node(s), {len(probs)} problem(s)")
    return 1 if probs else 0


@command.command("ingest")
@click.argument("transcript", type=click.Path(dir_okay=False, path_type=str))
@click.option("--actor", default="extractor", show_default=True,
              help="Who the ingested nodes are attributed to (no write scope applies).")
@click.option("--no-commit", is_flag=True, help="Write the log file but leave it uncommitted.")
@json_option
@kb_option
def ingest(transcript: str, actor: str, no_commit: bool, as_json: bool, kb_path: str | None) -> int:
    """Turn an agent session transcript into trail nodes (one recording; no model is called).

    TRANSCRIPT is Claude Code's JSONL, or the generic events format: one JSON object per
    line with type user | injected | reasoning | assistant | tool_call (id, name, input) |
    tool_result (id, ok, error) | artifact (path, description) | turn_end (interrupted),
    and an optional session. The same transcript again records nothing (no commit); a
    node another session yields again counts one hit.
    """
    from kb.trail.ingest import ingest as do

    res = do(kb_path, transcript, no_commit=no_commit, on_wait=print_waiting, actor=actor)
    for p in res.details["problems"]:
        err(f"kb: {p['path']}:{p['line']}: {p['message']}")
    return print_result(res, as_json)


@command.command("render")
@click.option("--check", is_flag=True, help="Only report whether TRAIL.md is stale (exit 1).")
@click.option("--no-commit", is_flag=True, help="Write TRAIL.md but leave it uncommitted.")
@json_option
@kb_option
def render(check: bool, no_commit: bool, as_json: bool, kb_path: str | None) -> int:
    """Write TRAIL.md (deterministic, with a Mermaid view of the trunk) as one commit."""
    from kb.repo import resolve_kb
    from kb.trail.render import TRAIL_FILE, is_stale
    from kb.trail.render_file import render_kb
    from kb.trail.replay import load

    if check:
        k = resolve_kb(kb_path)
        path = k.root / TRAIL_FILE
        try:
            have = path.read_bytes() if path.is_file() else None
        except OSError as exc:
            from kb.errors import os_failure

            raise os_failure(exc, f"read {k.prefix}{TRAIL_FILE}") from None
        line = is_stale(load(k), have) if have is not None else 1
        data = {"path": k.prefix + TRAIL_FILE, "exists": have is not None,
                "stale": line is not None, "line": line}
        if as_json:
            emit_json(data)
        elif line is not None:
            err(f"{data['path']}:{line}: " + ("stale: run `kb trail render`" if have is not None
                                              else "missing: run `kb trail render`"))
        else:
            err(f"{data['path']} is up to date")  # as kb dashboard --check says it
        return 1 if line is not None else 0
    return print_result(render_kb(kb_path, no_commit=no_commit, on_wait=print_waiting), as_json)


@command.command("diff")
@click.argument("rev_range", metavar="A..B")
@json_option
@kb_option
def diff(rev_range: str, as_json: bool, kb_path: str | None) -> int:
    """The trail nodes the commits A..B added or closed (B defaults to HEAD)."""
    from kb.trail.diff import range_changes
    from kb.trail.text import line

    base, sep, head = rev_range.partition("..")
    if not sep or not base:
        from kb.errors import UsageError

        raise UsageError(f"give a range A..B, not {rev_range!r}")
    res = range_changes(kb_path, base, head or "HEAD")
    if as_json:
        emit_json(res)
        return 0
    for key in ("added", "closed"):
        click.echo(f"{key} ({len(res[key])}):")
        for d in res[key]:
            click.echo(f"  {line(d)}")
    return 0
