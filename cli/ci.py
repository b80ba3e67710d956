"""``kb ci``: continuous-integration set-up (``kb ci init``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from kb_cli.output import emit_json, err, json_option

WORKFLOW = ".github/workflows/kb-verify.yml"


@click.group("ci")
def command() -> None:
    """Continuous integration: check every commit of a pull request."""


def _default_branch(top: Path) -> str:
    from kb import git

    proc = git.run(["symbolic-ref", "-q", "--short", "refs/remotes/origin/HEAD"], top, check=False)
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.decode().strip().split("/", 1)[-1]
    proc = git.run(["symbolic-ref", "-q", "--short", "HEAD"], top, check=False)
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.decode().strip()
    return "main"


@command.command("init")
@click.option("--base", default=None, metavar="BRANCH",
              help="The branch pull requests target (default: origin's default branch, else the current one).")
@click.option("--install", "install_spec", default="kb-research", show_default=True,
              help="What `pip install` installs in CI (a version pin, a git URL, …).")
@click.option("--force", is_flag=True, help="Overwrite an existing workflow file.")
@json_option
def init_cmd(base: Optional[str], install_spec: str, force: bool, as_json: bool) -> int:
    """Write .github/workflows/kb-verify.yml: `kb verify --range origin/<base>..HEAD
    --format github` with full history on every pull request (and on pushes to <base>)."""
    import re

    from kb import git
    from kb.errors import EnvironmentError_, RefusedError, UsageError
    from kb.resources import template

    top = git.toplevel(Path.cwd())
    if top is None:
        raise EnvironmentError_("not inside a git work tree")
    branch = base or _default_branch(top)
    if not re.fullmatch(r"[A-Za-z0-9._/-]+", branch):
        raise UsageError(f"--base {branch!r} is not a plain branch name")
    target = top / WORKFLOW
    if target.exists() and not force:
        raise RefusedError(f"{WORKFLOW} exists (use --force to overwrite; nothing changed)")
    text = template("github-workflow.yml").replace("@BASE@", branch).replace("@INSTALL@", install_spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8", newline="\n")
    if as_json:
        emit_json({"path": WORKFLOW, "base": branch})
    else:
        click.echo(f"wrote {WORKFLOW}")
        err(f"pull requests into {branch} run `kb verify --range origin/{branch}..HEAD --format github`;"
            " commit the file to enable it")
    return 0
