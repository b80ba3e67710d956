"""``kb hooks``: install / uninstall kb's git hooks and the DASHBOARD.md merge driver."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from kb_cli.output import emit_json, err, json_option


@click.group("hooks")
def command() -> None:
    """Git hooks: pre-commit (kb verify --staged), pre-push (kb verify --range over
    what each ref adds), and the merge driver that keeps DASHBOARD.md conflict-free."""


def _report(res, as_json: bool, verb: str) -> None:
    if as_json:
        emit_json({"hooks_dir": str(res.hooks_dir), "hooks": res.actions,
                   "merge_driver": res.merge_driver})
        return
    for hook, action in res.actions.items():
        click.echo(f"{hook}: {action}")
    if res.merge_driver:
        click.echo(f"merge drivers: {res.merge_driver}")
    err(f"{verb} in {res.hooks_dir}")


@command.command("install")
@click.option("--no-pre-push", is_flag=True, help="Do not install the pre-push hook.")
@click.option("--no-merge-driver", is_flag=True,
              help="Do not register kb's merge drivers (tree.md, DASHBOARD.md, TRAIL.md, "
                   "kb report's report, problem cards' 被依赖).")
@click.option("--shared", is_flag=True,
              help="Also when core.hooksPath points outside the repository (hooks other "
                   "repositories may share).")
@click.option("--server", is_flag=True,
              help="In a bare repository (a git server): install the pre-receive hook that "
                   "refuses pushes breaking kb's rules.")
@json_option
def install_cmd(no_pre_push: bool, no_merge_driver: bool, shared: bool, server: bool,
                as_json: bool) -> int:
    """Install the hooks where git runs them (core.hooksPath respected); an existing
    hook is kept and run first. Also registers kb's merge drivers (tree.md, DASHBOARD.md,
    TRAIL.md, kb report's report, problem cards' 被依赖) and names them in the KB's
    .gitattributes."""
    from kb.hooks import HOOKS, install, install_server

    if server:
        res = install_server(Path.cwd(), shared=shared)
        _report(res, as_json, "hooks")
        return 0
    hooks = [h for h in HOOKS if not (no_pre_push and h == "pre-push")]
    res = install(Path.cwd(), hooks, merge_driver=not no_merge_driver, shared=shared)
    _report(res, as_json, "hooks")
    return 0


@command.command("uninstall")
@click.option("--shared", is_flag=True,
              help="Also when core.hooksPath points outside the repository.")
@json_option
def uninstall_cmd(shared: bool, as_json: bool) -> int:
    """Remove exactly what `kb hooks install` added (chained hooks are put back)."""
    from kb.hooks import uninstall

    res = uninstall(Path.cwd(), shared=shared)
    _report(res, as_json, "hooks")
    return 0


@command.command("status")
@json_option
def status_cmd(as_json: bool) -> int:
    """Show which kb hooks are installed."""
    from kb.hooks import status

    res = status(Path.cwd())
    _report(res, as_json, "hooks")
    return 0


@command.command("pre-push", hidden=True)
@click.argument("remote", required=False, default="origin")
@click.argument("url", required=False, default="")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text")
def pre_push_cmd(remote: str, url: str, fmt: str) -> int:
    """Run by the pre-push hook: reads git's ref lines on stdin and checks, for each
    pushed ref, the commits it adds (kb verify --range)."""
    from kb.checks.push import check_push
    from kb.checks.report import Report, sort_findings
    from kb_cli.verify import github_annotation, summary_line

    total = Report(mode="range")
    pushes = check_push(Path.cwd(), remote, sys.stdin.read().splitlines())
    for pushed in pushes:
        rep = pushed.report
        for f in sort_findings(rep.findings):
            click.echo(github_annotation(f) if fmt == "github" else f.format())
        err(summary_line(rep, f"kb pre-push {pushed.ref} ({(pushed.base or 'root')[:10]}..{pushed.tip[:10]})"))
        for note in rep.notes:
            err(f"kb: {note}")
        total.merge(rep)
    from kb.checks.push import check_push_locks

    # Shared locks (team work): the lock remote's locks, fetched now, never a stale copy.
    locked = check_push_locks(Path.cwd(), pushes, os.environ.get("KB_OWNER"))
    for msg in locked:
        err(f"kb: {msg}")
    if total.blocking or locked:
        err("kb: push refused; fix the commits above (`kb rules` explains every code)")
        return max(total.exit_code, 1)
    return total.exit_code


@command.command("post-commit", hidden=True)
def post_commit_cmd() -> int:
    """Run by the post-commit hook during a cherry-pick: warns (stderr) when the new
    commit breaks kb's rules. Always exits 0 (the commit is made)."""
    from kb.hooks import check_after

    for line in check_after(Path.cwd(), ["HEAD"]):
        err(line)
    return 0


@command.command("post-rewrite", hidden=True)
@click.argument("kind", required=False, default="")
def post_rewrite_cmd(kind: str) -> int:
    """Run by the post-rewrite hook (amend, rebase): warns (stderr) about rewritten
    commits that break kb's rules. Always exits 0."""
    from kb.hooks import check_after, rewritten_commits

    for line in check_after(Path.cwd(), rewritten_commits(sys.stdin.read().splitlines())):
        err(line)
    return 0


@command.command("pre-receive", hidden=True)
@click.option("--format", "fmt", type=click.Choice(["text", "github"]), default="text")
def pre_receive_cmd(fmt: str) -> int:
    """Run by the pre-receive hook of a server: reads ``old new ref`` lines on stdin and
    checks the commits each pushed ref adds (kb verify --range); exit 1 refuses the push."""
    from kb.checks.report import Report, sort_findings
    from kb.checks.targets import repo_top
    from kb.checks.verify_range import verify_commit_range
    from kb.hooks import pre_receive_ranges
    from kb_cli.verify import github_annotation, summary_line

    top = repo_top(Path.cwd())
    total = Report(mode="range")
    for base, tip, ref in pre_receive_ranges(top, sys.stdin.read().splitlines()):
        rep = verify_commit_range(top, base, tip, allow_root=True, rewrite=True)
        for f in sort_findings(rep.findings):
            err(github_annotation(f) if fmt == "github" else f.format())
        err(summary_line(rep, f"kb pre-receive {ref} ({(base or 'root')[:10]}..{tip[:10]})"))
        total.merge(rep)
    if total.blocking:
        err("kb: push refused by the server; fix the commits above (`kb rules` explains every code)")
    return total.exit_code
