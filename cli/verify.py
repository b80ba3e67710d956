"""``kb verify``: the rules of the research record (DESIGN.md §4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import click

from kb_cli.output import echo_lines, emit_json, err, kb_option


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


def github_annotation(f: Any) -> str:
    """A finding as a GitHub Actions workflow command (``::error file=…::message``)."""
    if f.blocking:
        level = "error"
    elif f.severity in ("error", "warning"):
        level = "warning"
    else:
        level = "notice"
    title = f.code + (" (pre-existing)" if f.pre_existing else "")
    props = [f"file={_gh_escape(f.path, True)}"]
    if f.line:
        props += [f"line={f.line}", f"col={f.col}"]
    props.append(f"title={_gh_escape(title, True)}")
    where = f"[{f.commit[:10]}] " if f.commit else ""
    return f"::{level} {','.join(props)}::{_gh_escape(where + f.message)}"


def _codequality(f: Any) -> dict[str, Any]:
    """A finding as a GitLab code-quality issue (the merge request shows it on the line)."""
    import hashlib

    sev = "critical" if f.blocking else {"error": "major", "warning": "minor"}.get(f.severity, "info")
    where = f"[{f.commit[:10]}] " if f.commit else ""
    key = "\0".join((f.code, f.path, str(f.line), f.message, f.commit or ""))
    return {"description": f"{f.code} {where}{f.message}", "check_name": f.code,
            "fingerprint": hashlib.sha1(key.encode("utf-8")).hexdigest(), "severity": sev,
            "location": {"path": f.path, "lines": {"begin": max(f.line, 1)}}}


def summary_line(report: Any, label: str) -> str:
    """The one-line stderr summary of a report (counts, and whether it refuses)."""
    blocking = report.blocking
    errors = [f for f in report.findings if f.severity == "error" and not f.blocking]
    warnings = [f for f in report.findings if f.severity == "warning"]
    notes = [f for f in report.findings if f.severity == "info"]
    kbs = f"{len(report.kbs)} KB" + ("s" if len(report.kbs) != 1 else "")
    if report.mode in ("range", "rev"):
        kbs += f", {report.commits} commit" + ("s" if report.commits != 1 else "")
    parts = []
    if blocking:
        what = "introduced by this change" if report.mode != "worktree" else ""
        parts.append(f"{len(blocking)} error(s) {what}".rstrip())
    if errors:
        parts.append(f"{len(errors)} pre-existing error(s) (not failing)")
    if warnings:
        parts.append(f"{len(warnings)} warning(s)")
    if notes:
        parts.append(f"{len(notes)} accepted override(s)")
    body = ", ".join(parts) if parts else "no problems"
    verdict = ""
    if blocking:
        verdict = {"staged": " — commit refused", "range": " — refused",
                   "rev": " — refused"}.get(report.mode, "")
    return f"{label} ({kbs}): {body}{verdict}"


@click.command("verify")
@click.option("--staged", is_flag=True,
              help="Check the staged index against HEAD (the pre-commit hook), every KB of the repository.")
@click.option("--rev", "rev", metavar="R", default=None, help="Check commit R against its first parent.")
@click.option("--range", "range_", metavar="A..B", default=None,
              help="Check every commit of A..B (each against its first parent) and the final snapshot.")
@click.option("--against", "against", metavar="REF", default=None,
              help="With --range: the branch the range merges into (e.g. origin/main); an ID the "
                   "range adds that REF already has with other content is an error.")
@click.option("--rewrite", is_flag=True,
              help="With --range A..B: B replaces A (a branch's old and new tip, e.g. after a "
                   "force push); when A is not an ancestor of B, what B removed or changed of "
                   "A's history is judged too (the push hooks do this).")
@click.option("--fix", is_flag=True,
              help="Apply the fixes diagnostics carry to working-tree files (never in hook or CI modes).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github", "codequality"]),
              default="text", show_default=True,
              help="Output: text, json, github (workflow annotations) or codequality (a GitLab report).")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@kb_option
def command(staged: bool, rev: Optional[str], range_: Optional[str], against: Optional[str],
            rewrite: bool, fix: bool, fmt: str, as_json: bool, kb_path: Optional[str]) -> int:
    """Check the rules of the research record (`kb rules` lists them).

    Without options: the KB containing the current directory, working tree
    against HEAD, everything reported. --staged / --rev / --range check every
    KB of the repository and fail on history violations and on errors the
    change introduces (errors already in the base are listed as pre-existing).
    Under the pre-commit framework, kb reads PRE_COMMIT_FROM_REF /
    PRE_COMMIT_TO_REF (pre-push) itself.

    Exit 0 clean, 1 violations, 2 usage or environment error.
    """
    from kb.checks.report import sort_findings
    from kb.checks.verify import resolve_mode, run, with_target
    from kb.errors import UsageError

    if as_json:
        fmt = "json"
    mode = with_target(resolve_mode(staged, rev, range_), against, rewrite)
    if fix and mode.kind != "worktree":
        why = "the hook never fixes" if mode.source != "options" else "fixes apply to the working tree"
        raise UsageError(f"--fix works only without --staged/--rev/--range ({why}); "
                         "run `kb verify --fix` yourself")
    kb_dir = Path(kb_path) if kb_path else None
    if fix:
        from kb.merge.markers import refuse_if_conflicted
        from kb import git as _git

        # A fix inside a conflicted file would edit a guessed side (issue: team work).
        top = _git.toplevel(kb_dir or Path.cwd())
        if top is not None:
            refuse_if_conflicted(top, "", "kb verify --fix changes")
    label = {"worktree": "kb verify", "staged": "kb verify --staged", "rev": "kb verify --rev",
             "range": "kb verify --range"}[mode.kind]
    if fix:
        from kb.checks.fix import fix_until_stable

        try:
            report, done = fix_until_stable(lambda: run(mode, Path.cwd(), kb_dir))
        except OSError as exc:  # a read-only work tree, …: each file is written whole or not at all
            from kb.errors import os_failure

            raise os_failure(exc, "apply the fixes",
                             "files fixed before it stay fixed; the others are unchanged") from None
        msg = f"kb verify --fix: applied {done.applied} fix(es) in {len(done.files)} file(s)"
        if done.regenerated:
            msg += f", regenerated {done.regenerated} DASHBOARD.md"
        if done.skipped:
            msg += f" ({done.skipped} skipped)"
        err(msg)
        for where in done.skipped_at:
            err(f"  skipped {where}")
    else:
        report = run(mode, Path.cwd(), kb_dir)
    findings = sort_findings(report.findings)
    if fmt == "json":
        counts: dict[str, int] = {}
        for f in findings:
            counts[f.severity] = counts.get(f.severity, 0) + 1
        emit_json({
            "mode": mode.kind, "ok": report.exit_code == 0, "exit_code": report.exit_code,
            "kbs": report.kbs, "commits": report.commits,
            "blocking": len(report.blocking), "counts": counts,
            "notes": report.notes,
            # The one error object (kb.errors), so that agents test "error" alike everywhere.
            "error": ({"message": report.env_error, "exit_code": 2, "kind": "environment"}
                      if report.env_error else None),
            "diagnostics": [f.as_dict() for f in findings],
        })
    elif fmt == "github":
        echo_lines(github_annotation(f) for f in findings)
        err(summary_line(report, label))
    elif fmt == "codequality":
        emit_json([_codequality(f) for f in findings])
        err(summary_line(report, label))
    else:
        echo_lines(f.format() for f in findings)
        err(summary_line(report, label))
    if fmt != "json":
        for note in report.notes:
            err(f"kb: {note}")
        if report.env_error and report.env_error not in report.notes:
            err(f"kb: {report.env_error}")
        if report.blocking and mode.kind == "staged":
            err("kb: fix the errors above and commit again (`kb rules` explains every code)")
    return report.exit_code
