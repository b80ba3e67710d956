"""``kb ci``: continuous-integration set-up (``kb ci init``, ``kb ci init --gitlab``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from kb_cli.output import emit_json, err, json_option

WORKFLOW = ".github/workflows/kb-verify.yml"
GITLAB = ".gitlab-ci.yml"


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


def _yaml_str(value: str) -> str:
    """``value`` for the inside of a YAML double-quoted string."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


@command.command("init")
@click.option("--base", default=None, metavar="BRANCH",
              help="The branch pull requests target (default: origin's default branch, else the current one).")
@click.option("--install", "install_spec", default=None, metavar="SPEC",
              help="What `pip install` installs in CI (a git URL with a tag, a wheel URL, name==version). "
                   "Default: where the running kb was installed from, when CI can reach it.")
@click.option("--gitlab", is_flag=True, help=f"Write a GitLab CI job ({GITLAB}) instead of a GitHub workflow.")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@json_option
def init_cmd(base: Optional[str], install_spec: Optional[str], gitlab: bool, force: bool,
             as_json: bool) -> int:
    """Write the CI job: on every pull (merge) request, `kb verify --range` over its
    commits with full history (annotations / a code-quality report), `kb dashboard
    --check`, and the research diff (`kb diff --format markdown`) in the job summary
    (GitHub; opt-in PR comment with the repository variable KB_PR_COMMENT=true) or as
    an artifact and opt-in merge-request note (GitLab, KB_MR_NOTE_TOKEN).

    kb is installed from --install SPEC, else from where the running kb came from
    (its package metadata: a published version or a VCS URL); with neither, kb
    refuses and says what to pass (exit 1, nothing written)."""
    import re

    from kb import git
    from kb.errors import EnvironmentError_, RefusedError, UsageError
    from kb.repo import find_root
    from kb.resources import template
    from kb.review.source import installed_source, refusal

    top = git.toplevel(Path.cwd())
    if top is None:
        raise EnvironmentError_("not inside a git work tree")
    top = top.resolve()
    branch = base or _default_branch(top)
    if not re.fullmatch(r"[A-Za-z0-9._/-]+", branch):
        raise UsageError(f"--base {branch!r} is not a plain branch name")
    how = "--install"
    if install_spec is None:
        src = installed_source()
        if src.spec is None:
            raise RefusedError(refusal(src) + " Nothing was written.")
        install_spec, how = src.spec, src.how
    if not install_spec.strip() or any(c in install_spec for c in "\r\n"):
        raise UsageError("--install takes one pip requirement or URL (one line)")
    root = find_root(Path.cwd())
    kb_dir = "."
    if root is not None and root.resolve() != top and root.resolve().is_relative_to(top):
        kb_dir = root.resolve().relative_to(top).as_posix()
    rel = GITLAB if gitlab else WORKFLOW
    target = top / rel
    if target.exists() and not force:
        raise RefusedError(f"{rel} exists (use --force to overwrite; nothing changed)")
    text = (template("gitlab-ci.yml" if gitlab else "github-workflow.yml")
            .replace("@BASE@", branch).replace("@INSTALL@", _yaml_str(install_spec))
            .replace("@KB_DIR@", _yaml_str(kb_dir)))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", newline="\n")
    except OSError as exc:  # a read-only work tree, .github a file, …
        from kb.errors import os_failure

        raise os_failure(exc, f"write {rel}") from None
    if as_json:
        emit_json({"path": rel, "base": branch, "install": install_spec, "install_from": how,
                   "kb_dir": kb_dir})
    else:
        click.echo(f"wrote {rel}")
        err(f"kb is installed in CI with: pip install {install_spec}  ({how})")
        err(f"{'merge' if gitlab else 'pull'} requests into {branch} run `kb verify --range "
            f"origin/{branch}..HEAD --against origin/{branch}`, `kb dashboard --check` and `kb diff`; "
            f"pushes to {branch} `kb verify --range BEFORE..HEAD` (a force push: its old tip fetched "
            "and judged against the new one); commit the file to enable it")
    return 0
