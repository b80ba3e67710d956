"""``kb index``: index the KB and report parse diagnostics."""

from __future__ import annotations

import click

from kb_cli.output import echo_lines, emit_json, err, fmt_diag, json_option, kb_option


@click.command("index")
@json_option
@kb_option
@click.option("--stats", is_flag=True, help="Also print timing and cache figures.")
def command(as_json: bool, kb_path: str | None, stats: bool) -> int:
    """Index the KB (incrementally) and report files kb cannot read.

    Exits 1 when any file has a parse error, 0 otherwise.
    """
    from kb.api import index_kb

    report = index_kb(kb_path)
    errors = [d for d in report.diagnostics if d.severity == "error"]
    failed = sorted({d.path for d in errors})
    from kb.vocab import KIND_PLURALS

    plural = {one: many for many, one in KIND_PLURALS.items()}
    if as_json:
        emit_json({
            "kb": str(report.root), "files": report.stats.files, "parsed": report.stats.parsed,
            "counts": {plural.get(k, k): n for k, n in report.counts.items()}, "seconds": round(report.stats.seconds, 4),
            "rebuilt": report.stats.rebuilt, "errors": len(errors), "failed_files": failed,
            "diagnostics": [d.to_dict() for d in report.diagnostics],
        })
    else:
        echo_lines(fmt_diag(d) for d in report.diagnostics)
        parts = ", ".join(f"{n} {k if n == 1 else plural.get(k, k)}"
                          for k, n in report.counts.items()) or "no objects"
        warn = sum(1 for d in report.diagnostics if d.severity == "warning")
        err(f"indexed {report.stats.files} files ({report.stats.parsed} parsed): {parts}")
        if stats:
            err(f"time {report.stats.seconds:.3f}s, cache {'rebuilt' if report.stats.rebuilt else 'reused'}, "
                f"{report.stats.removed} removed")
        else:
            err(f"time {report.stats.seconds:.3f}s")
        if errors or warn:
            err(f"{len(errors)} error(s) in {len(failed)} file(s), {warn} warning(s)")
    return 1 if errors else 0
