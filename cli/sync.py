"""``kb sync [UPSTREAM]``: fetch, renumber colliding IDs, merge with kb's drivers, verify."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from kb_cli.output import emit_json, err, json_option, kb_option, note_sync, print_waiting


@click.command("sync")
@click.argument("upstream", required=False)
@click.option("--dry-run", is_flag=True, help="Print the renumbering map; change nothing.")
@click.option("--no-fetch", is_flag=True, help="Use the upstream as already fetched.")
@json_option
@kb_option
def command(upstream: Optional[str], dry_run: bool, no_fetch: bool, as_json: bool,
            kb_path: Optional[str]) -> int:
    """Bring this branch up to date with UPSTREAM (default: the branch's upstream, or the
    remote's default branch when that upstream is the branch's own pushed copy, such as
    origin/feat for feat; else origin's default branch).

    Fetches; commits the merge-driver lines .gitattributes lacks; renumbers
    the IDs this branch added that UPSTREAM already holds (hypotheses,
    experiments, cards, with every reference) in one commit with Kb-Renumber
    trailers (the refs of the trail nodes this branch recorded
    follow); merges UPSTREAM with kb's merge drivers (what they say, e.g. a
    report to refresh, is printed); regenerates DASHBOARD.md, and TRAIL.md when
    the merge left stale one that was rendered; verifies. Refuses on a dirty
    work tree. The merge is up to date, fast-forward, merged, conflict
    (aborted: resolve by hand) or refused (a hook, e.g. kb's pre-merge-commit,
    refused the merge commit; aborted: fix what it reports).
    Exit 0 done, 1 a conflict, refused merge or violation left (reported), 2 usage
    or environment.
    """
    from kb.ops.sync import sync

    res = sync(Path(kb_path) if kb_path else Path.cwd(), upstream, dry_run=dry_run,
               fetch=not no_fetch, on_wait=print_waiting)
    if as_json:
        emit_json(res.to_json())
        return 0 if res.ok else 1
    if not dry_run:
        note_sync(res.to_json())  # said should the output fail (a retry is not blind)
    for c in res.collisions:
        err(f"kb sync: {c['id']} ({c['kind']}) at {c['ours']} is taken on {res.upstream} ({c['theirs']})")
    for old, new in res.renumbered.items():
        click.echo(f"{old} -> {new}")
    if dry_run:
        err(f"kb sync --dry-run: {len(res.renumbered)} ID(s) would be renumbered against "
            f"{res.upstream} ({res.upstream_commit[:12]}); nothing changed")
        return 0
    if res.attributes_commit:
        err(f"kb sync: .gitattributes now names kb's merge drivers "
            f"(commit {res.attributes_commit[:12]})")
    if res.renumber_commit:
        err(f"kb sync: renumbered in {res.renumber_commit[:12]}")
    for r in res.refs_left:
        err(f"kb sync: trail node {r['node']} still refs {r['ref']} ({r['path']}, which "
            f"{res.upstream} holds too, is not rewritten): {r['old']} is {res.upstream}'s after "
            f"the merge, this branch's is {r['new']} now — `kb trail set {r['node']} --refs …` "
            "if the node meant this branch's")
    err(f"kb sync: merge of {res.upstream}: {res.merge}"
        + (f" ({res.merge_commit[:12]})" if res.merge_commit else ""))
    for note in res.notes:  # a merge driver's word on a clean merge (a file to refresh)
        err(note)
    made = [f"the .gitattributes commit {res.attributes_commit[:12]}"] if res.attributes_commit else []
    made += [f"the renumber commit {res.renumber_commit[:12]}"] if res.renumber_commit else []
    kept = f", plus {' and '.join(made)}" if made else ""
    if res.merge == "refused":
        # No conflict: every path merged, but a hook would not let the merge commit in.
        err("kb sync: a git hook refused the merge commit (kb's pre-merge-commit hook runs "
            "`kb verify --staged`); it reported:")
        for c in res.conflicts:
            err(f"  {c}")
        err(f"kb sync: the merge was aborted (your branch is as it was{kept}); fix what the hook "
            f"reports on this branch and run kb sync again, or run `git merge {res.upstream}` "
            "and resolve what the hook reports before committing the merge")
    elif res.conflicts:
        for c in res.conflicts:
            err(f"kb sync: {c}")
        err(f"kb sync: the merge was aborted (your branch is as it was{kept}); "
            f"run `git merge {res.upstream}` and resolve the conflicts above by hand")
    if res.dashboard_commit:
        err(f"kb sync: DASHBOARD.md regenerated in {res.dashboard_commit[:12]}")
    if res.trail_commit:
        err(f"kb sync: TRAIL.md rendered again in {res.trail_commit[:12]}")
    for f in res.findings:
        err(f"{f.get('path', '')}:{f.get('line', 0)}: {f.get('code', '')} {f.get('message', '')}")
    if res.findings:
        err("kb sync: kb verify found the problems above in the result")
    return 0 if res.ok else 1
