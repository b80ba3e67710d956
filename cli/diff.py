"""``kb diff``: what the research changed in a range, staged, or in the working tree."""

from __future__ import annotations

from typing import Optional

import click

from kb_cli.output import emit_json, err, kb_option


@click.command("diff")
@click.argument("revs", nargs=-1, metavar="[A..B | A B]")
@click.option("--staged", is_flag=True, help="The staged index against HEAD.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text",
              show_default=True, help="text, markdown (a PR comment or job summary), or json.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--no-findings", is_flag=True, help="Leave out the rule findings of the change.")
@click.option("--link-base", default=None, metavar="URL",
              help="Markdown: link file:line to URL/<path>#L<line> (e.g. a GitHub blob URL).")
@click.option("--max-chars", type=click.IntRange(min=1000), default=None, metavar="N",
              help="Bound text/markdown output to N characters (a PR comment holds 65,536): "
                   "the diagram goes first, then the last lines, and it says so.")
@click.option("--exit-code", is_flag=True,
              help="Exit 1 when the change has blocking rule findings (as kb verify would).")
@click.option("--against", metavar="REV", default=None,
              help="Range: judge the findings as `kb verify --range A..B --against REV` (a pull "
                   "request into REV: an ID its target already has is KB350).")
@click.option("--rewrite", is_flag=True,
              help="Range: B replaces A (a force push): judge A -> B as one change too, as "
                   "`kb verify --range A..B --rewrite`.")
@kb_option
def command(revs: tuple[str, ...], staged: bool, fmt: str, as_json: bool, no_findings: bool,
            link_base: Optional[str], max_chars: Optional[int], exit_code: bool,
            against: Optional[str], rewrite: bool, kb_path: Optional[str]) -> int:
    """The research diff: hypotheses added, corrected and moved (with the evidence
    that moved them), experiments added and finished, cards, entries, priorities,
    dependencies, verdicts, settled objects and Verified cards, renumberings and
    overrides (highlighted), the rule findings of the change, and (Markdown) a
    Mermaid diagram of the changed part of the tree.

    `kb diff A..B` (or `A B`): B against the merge base of A and B, with the
    commits of A..B; `kb diff --staged`: the staged index against HEAD; `kb diff`:
    the working tree against HEAD. Built from parsed snapshots and kb's commit
    trailers, never from textual diffs. Exit 0 (1 with --exit-code and blocking
    findings), 2 usage or environment error.
    """
    from kb.errors import UsageError
    from kb.repo import open_kb
    from kb.review.diff import research_diff
    from kb.review.render import render
    from kb.review.sides import parse_spec

    if as_json:
        fmt = "json"
    a, b = parse_spec(revs)
    if staged and a:
        raise UsageError("use either a range or --staged")
    source = "range" if a else ("staged" if staged else "worktree")
    k = open_kb(kb_path)
    d = research_diff(k, source, a, b, findings=not no_findings, against=against, rewrite=rewrite)
    if fmt == "json":
        emit_json(d)
    else:
        click.echo(render(d, fmt, link_base, max_chars), nl=False)
        for note in (d.get("findings_summary") or {}).get("notes", []):
            err(f"kb: {note}")
    fsum = d.get("findings_summary") or {}
    return 1 if exit_code and fsum.get("blocking") else 0
