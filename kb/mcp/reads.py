"""MCP read tools: ``kb index``, ``ls``, ``show``, ``find``, ``brief``, ``report --stdout``,
``verify``, ``rules``, ``verifiers``, ``prime``, ``schema``. Each returns what the
CLI prints with ``--json`` and changes nothing."""

from typing import Any, Optional

from kb.checks.catalogue import Family
from kb.errors import NotFoundError, UsageError
from kb.mcp.registry import Registry
from kb.mcp.warm import WarmKB
from kb.repo import KnowledgeBase


def index(kb: KnowledgeBase) -> object:
    """Tool ``index``: refresh the index; ``{kb, files, parsed, counts, seconds, rebuilt,
    errors,
    failed_files, diagnostics}`` (``seconds`` wall time, 4 decimals).

    Raises EnvironmentError_ when the KB cannot be read.
    """
    from kb.api import index_kb
    from kb.vocab import KIND_PLURALS

    rep = index_kb(kb.root)
    plural = {one: many for many, one in KIND_PLURALS.items()}
    errors = [d for d in rep.diagnostics if d.severity == "error"]
    return {"kb": str(rep.root), "files": rep.stats.files, "parsed": rep.stats.parsed,
            "counts": {plural.get(k, k): n for k, n in rep.counts.items()},
            "seconds": round(rep.stats.seconds, 4), "rebuilt": rep.stats.rebuilt,
            "errors": len(errors), "failed_files": sorted({d.path for d in errors}),
            "diagnostics": [d.to_dict() for d in rep.diagnostics]}


def ls(warm: WarmKB, kind: Optional[str] = None, status: Optional[str] = None) -> object:
    """Tool ``ls``: the objects of ``kind`` (and ``status``), as ``kb ls --json`` prints them.

    Raises UsageError for an unknown kind or status word.
    """
    from kb.api import list_objects
    from kb.contract import ls_data

    idx = warm.index()
    _k, rows = list_objects(kind, status, idx=idx)
    return ls_data(kind, status, rows, warm.get().config.locale)


def show(warm: WarmKB, id: str) -> object:
    """Tool ``show``: object ``id`` with its declarations (``[{kind, path, line}]``).

    Raises NotFoundError when no object has that ID.
    """
    from kb.api import show_object
    from kb.vocab import display_status

    idx = warm.index()
    kb = warm.get()
    _k, found = show_object(id, idx=idx)
    if not found:
        raise NotFoundError(f"no object with ID {id!r} (try the find tool)")
    for d in found:
        d["status"] = display_status(d["kind"], d.get("status") or "", kb.config.locale)
    first = dict(found[0])
    first["declarations"] = [{"kind": d["kind"], "path": d["path"], "line": d["line"]} for d in found]
    return first


def find(warm: WarmKB, text: str) -> object:
    """Tool ``find``: the objects whose ID, title or text holds ``text``, as ``kb find --json``."""
    from kb.api import find_objects
    from kb.contract import find_data

    _k, rows = find_objects(text, idx=warm.index())
    return find_data(text, rows)


def brief(kb: KnowledgeBase, max_chars: Optional[int] = None) -> object:
    """Tool ``brief``: the research brief, cut to ``max_chars`` characters when given.

    Raises UsageError when ``max_chars`` is below 1.
    """
    from kb.views.brief import brief_data, fit_brief

    if max_chars is not None and max_chars < 1:
        raise UsageError(f"max_chars {max_chars} must be a positive number of characters")
    data, _dropped = fit_brief(brief_data(kb), max_chars, True)
    return data


def report_text(kb: KnowledgeBase, date: Optional[str] = None) -> object:
    """Tool ``report_text``: ``{path, text}`` of the day's report (``date`` YYYY-MM-DD) without
    writing it.

    Raises UsageError for a malformed date.
    """
    from kb.views.report import report_date, report_text as text_of

    path, text = text_of(kb, report_date(date))
    return {"path": path, "text": text}


def verify(kb: KnowledgeBase, staged: bool = False, rev: Optional[str] = None,
           range: Optional[str] = None, against: Optional[str] = None,
           rewrite: bool = False) -> object:
    """Tool ``verify``: the rules over the working tree, ``staged`` index, ``rev`` or ``range``
    (with ``against``, a branch merging into that target: the pull-request check; with
    ``rewrite``, a force-push replacing the range's base);
    ``{mode, ok, exit_code, kbs, commits, blocking, counts, notes, error, diagnostics}``.

    Raises UsageError for more than one mode, a malformed range, or ``against``/``rewrite``
    without a range.
    """
    from kb.checks.report import sort_findings
    from kb.checks.verify import resolve_mode, run, with_target

    mode = with_target(resolve_mode(staged, rev, range), against, rewrite)
    report = run(mode, kb.root, None)
    findings = sort_findings(report.findings)
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    return {"mode": mode.kind, "ok": report.exit_code == 0, "exit_code": report.exit_code,
            "kbs": report.kbs, "commits": report.commits, "blocking": len(report.blocking),
            "counts": counts, "notes": report.notes,
            "error": ({"message": report.env_error, "exit_code": 2, "kind": "environment"}
                      if report.env_error else None),
            "diagnostics": [f.as_dict() for f in findings]}


def rules(kb: KnowledgeBase, codes: Optional[list[str]] = None,
          family: Optional[Family] = None) -> object:
    """Tool ``rules``: the rule catalogue (``codes`` and ``family`` filter it) with each rule's
    effective severity; ``{rules, unknown}`` (``unknown`` is always empty: see below).

    Raises UsageError naming a code that does not exist or a family that is not
    ``snapshot`` / ``history``, as ``kb rules KB999`` and ``kb rules --family bogus`` exit 2.
    """
    import typing

    from kb.checks.catalogue import CATALOGUE, Family, effective_severity

    families = typing.get_args(Family)
    if family is not None and family not in families:
        raise UsageError(f"unknown rule family {family!r} (one of: {', '.join(families)})")
    wanted = {c.upper() for c in codes or []}
    unknown = sorted(wanted - {r.code for r in CATALOGUE})
    if unknown:
        raise UsageError(f"unknown rule code{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(unknown)} (the rules tool without codes lists every rule)")
    out: list[dict[str, Any]] = []
    for r in CATALOGUE:
        if (wanted and r.code not in wanted) or (family and r.family != family):
            continue
        d = r.as_dict()
        d["effective_severity"] = effective_severity(r.code, r.severity, kb.config) or "off"
        out.append(d)
    return {"rules": out, "unknown": unknown}


def verifiers(kb: KnowledgeBase) -> object:
    """Tool ``verifiers``: each verifier's accuracy over the recorded verdicts, as ``kb
    verifiers --json``.
    """
    from kb.contract import verifiers_data
    from kb.views.verification import accuracy_table

    return verifiers_data(accuracy_table(kb))


def prime(kb: KnowledgeBase, since: Optional[str] = None) -> object:
    """Tool ``prime``: ``{text, head}``, the session-start context (changes ``since`` a commit)
    and HEAD.

    Raises GitError when ``since`` is not a commit.
    """
    from kb import git
    from kb.prime import prime_text

    return {"text": prime_text(kb, since), "head": git.rev_parse("HEAD", kb.top)}


def schema(kb: KnowledgeBase, command: str) -> object:
    """Tool ``schema``: the JSON Schema of ``command``'s ``--json`` output.

    Raises UsageError for a command without a JSON output.
    """
    from kb.contract import OUTPUTS, schema_of

    if command not in OUTPUTS:
        raise UsageError(f"no command {command!r} with a JSON output; use e.g. 'ls', "
                         "'lock status', 'hyp add'")
    return schema_of(command)


def register(reg: Registry) -> None:
    """Register this module's tools on ``reg`` (names, descriptions, read/write annotations)."""
    reg.read("index", index, "kb index: index the KB incrementally; counts by plural kind and "
             "parse diagnostics.")
    reg.read("ls", ls, "kb ls: objects of one `kind` (hypotheses, experiments, problems, "
             "propositions, methods, verified, directions, records; all when omitted), "
             "optionally with `status`: {kind, status, count, objects}, each object with its file's "
             "`blob` for expect.")
    reg.read("show", show, "kb show: everything about object `id`: fields, file, line, blob, "
             "entries and links.")
    reg.read("find", find, "kb find: objects whose ID, title or statement contain `text`: "
             "{text, count, objects}.")
    reg.read("brief", brief, "kb brief: the planning state (open problems, verifiable entries, "
             "settled results, methods), within max_chars when given.")
    reg.read("report_text", report_text, "kb report --stdout: the project report's path and "
             "Markdown text (nothing written).")
    reg.read("verify", verify, "kb verify: check the rules on the working tree, the staged "
             "state (staged), one commit (rev) or a range (range, A..B); with a range, `against` "
             "TARGET checks it as a branch merging into TARGET (IDs both took: KB350, fixed by "
             "`kb sync`), `rewrite` as a force-push replacing A.")
    reg.read("rules", rules, "kb rules: the rule catalogue (codes, severity, what fixes it).")
    reg.read("verifiers", verifiers, "kb verifiers: each verifier's accuracy on settled targets: "
             "{count, verifiers}.")
    reg.read("prime", prime, "kb prime: the session-start context (layout, rules, active "
             "hypotheses, open problems, locks; changes after commit `since`), ≤ 8,000 chars.")
    reg.read("schema", schema, "kb schema: the JSON Schema of a command's output, e.g. "
             "command='lock status'.")
