"""The generation loop: init, status, submit (HYPOTHESIS-GEN.md; issue 17)::

    from kb.gen import loop
    loop.init_run("sandbox", question="Why does spacing help motor learning?")
    loop.submit("sandbox", "candidates", "round1-candidates.json")
    loop.submit("sandbox", "litscout", "litscout.json")
    res = loop.submit("sandbox", "verdict", "verdict.json")
    res["corrections"], res["kept"], res["stopped"]

Round N: Generator → candidates, LiteratureScout → litscout, Judge →
verdict. kb validates each file (schema + rules), computes the Judge's
totals, applies the novelty cap and the gates, updates pool, gaps and the
dry counter, appends the ledger row and stops at saturation (dry ==
patience) or when the budget of rounds is spent. A refused submission
raises :class:`kb.gen.errors.GenError` (exit 1) naming the file, the JSON
path and what is wrong, and changes nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kb.errors import UsageError, os_failure
from kb.gen import rules
from kb.gen.errors import GenConflict, GenError
from kb.gen.store import (CACHE_DIR, EVAL_SCALES, GITIGNORE, LEDGER_FILE, LEDGER_HEADER,
                          REPORT_FILE, RUN_FILE, STATE_FILE, Sandbox, read_round_file, write_atomic,
                          write_json)

__all__ = ["init_run", "status", "submit", "open_run"]


def open_run(sandbox: str | Path | None = None) -> Sandbox:
    """The run in ``sandbox`` (or found from the cwd; see :func:`kb.gen.store.find_sandbox`)."""
    return sandbox if isinstance(sandbox, Sandbox) else Sandbox.open(sandbox)


# -- init / status ---------------------------------------------------------------------


def init_run(sandbox: str | Path | None, question: str, *, gen_n: int = 6, keep_threshold: float = 65,
             eval_scale: str = "medium", budget: int = 6, patience: int = 2) -> dict[str, Any]:
    """Create the sandbox: ``.gitignore``, ``loop.run.yaml``, ``ledger.tsv`` (header),
    ``literature/.cache/``, ``state.json``. Returns the run bindings.

    Refuses (GenError) when the folder already holds a run; UsageError for a
    bad binding. The literature tiers record key presence only.

    Raises UsageError for an out-of-range number or an empty question, GenConflict when the
    sandbox holds a run, GenError when it is a file, EnvironmentError_
    (:func:`kb.errors.os_failure`) when it cannot be written.
    """
    import yaml

    from kb import clock
    from kb.lit.keys import key_presence, project_root

    root = Path(sandbox or "sandbox")
    q = " ".join((question or "").split())
    problems = []
    if not q:
        problems.append("--question is empty")
    if gen_n < 1:
        problems.append(f"--gen-n must be at least 1, not {gen_n}")
    if not 0 <= keep_threshold <= 100:
        problems.append(f"--keep-threshold must be within 0–100, not {keep_threshold:g}")
    if eval_scale not in EVAL_SCALES:
        problems.append(f"--eval-scale {eval_scale!r}: use low, medium or high")
    if budget < 1 or patience < 1:
        problems.append("--budget and --patience must be at least 1")
    if problems:
        raise UsageError("; ".join(problems))
    try:
        exists = (root / RUN_FILE).exists()
    except OSError as exc:  # a sandbox folder the user may not enter
        raise os_failure(exc, f"look into the sandbox {root}", "no run was started") from None
    if exists:
        raise GenConflict(f"{root / RUN_FILE} exists: this sandbox already holds a run "
                       "(kb gen status shows it; use another --sandbox for a new run)")
    if root.exists() and not root.is_dir():
        raise GenError(f"{root} is a file, not a folder")
    # A run makes its folder its own (a `.gitignore` of `*` first): `--sandbox .` ignored the
    # whole KB in git, `--sandbox Problems` the cards, `.git` wrote into git's own folder.
    if ".git" in root.resolve().parts:
        raise UsageError(f"--sandbox {root}: a folder inside .git is git's own; name another")
    try:
        used = root.is_dir() and next(root.iterdir(), None) is not None
    except OSError as exc:
        raise os_failure(exc, f"look into the sandbox {root}", "no run was started") from None
    if used:
        raise GenConflict(f"{root} is a folder with files in it: a run makes its own folder "
                          "(its .gitignore ignores everything else there); name a new or empty "
                          "one with --sandbox")
    now = clock.now()
    run = {"question": q, "gen_n": gen_n, "keep_threshold": keep_threshold,
           "eval_scale": eval_scale, "sandbox_root": str(root), "budget": budget,
           "patience": patience, "report": REPORT_FILE,
           "literature_tiers": {},
           "run_id": "gen-" + now.strftime("%Y%m%dT%H%M%SZ"), "created": now.isoformat()}
    # Presence only, never values; read before anything is written (from the nearest folder
    # that exists: the sandbox may not yet).
    near = next((p for p in (root, *root.resolve().parents) if p.is_dir()), Path.cwd())
    tiers = key_presence(project_root(near))
    try:
        (root / CACHE_DIR).mkdir(parents=True, exist_ok=True)
        (root / ".lock").touch()  # the run's lock file (Sandbox.lock), there from the start
    except OSError as exc:  # a read-only project folder, …
        raise os_failure(exc, f"create the sandbox {root}", "no run was started") from None
    run["literature_tiers"] = tiers
    write_atomic(root / ".gitignore", GITIGNORE)
    write_atomic(root / LEDGER_FILE, "\t".join(LEDGER_HEADER) + "\n")
    state = {"run_id": run["run_id"], "round": 1, "step": "candidates", "stopped": None, "dry": 0,
             "pool": [], "gaps": [{"claim": q, "cites": [], "hid": None, "round": 0}],
             "trajectory": [], "adopted": {}}
    write_json(root / STATE_FILE, state)
    # The run file last: its presence is what makes the folder a run.
    write_atomic(root / RUN_FILE, yaml.safe_dump(run, allow_unicode=True, sort_keys=False))
    return dict(run, sandbox=str(root.resolve()))


def status(sandbox: str | Path | Sandbox | None = None) -> dict[str, Any]:
    """``{run_id, question, round, step, stopped, dry, patience, budget, keep_threshold,
    pool: [{hid, statement, total}], gaps: [...], trajectory, adopted, sandbox}``.

    ``round`` is the current round, or once the run has stopped the last round run."""
    sb = open_run(sandbox)
    st, run = sb.state, sb.run
    # The verdict advances the counter before it decides to stop, so a stopped state points
    # one past the last round: shown as is, a budget of 1 read "round 2/1".
    shown = st["round"] - 1 if st["stopped"] else st["round"]
    return {"run_id": st["run_id"], "question": run["question"], "round": shown,
            "step": None if st["stopped"] else st["step"], "stopped": st["stopped"],
            "dry": st["dry"], "patience": run["patience"], "budget": run["budget"],
            "keep_threshold": run["keep_threshold"], "gen_n": run["gen_n"],
            "eval_scale": run["eval_scale"],
            "pool": [{"hid": p["hid"], "statement": p["statement"], "total": p["total"]}
                     for p in st["pool"]],
            "gaps": st["gaps"], "trajectory": st["trajectory"], "adopted": st.get("adopted", {}),
            "sandbox": str(sb.root)}


# -- submit ----------------------------------------------------------------------------


def submit(sandbox: str | Path | Sandbox | None, kind: str, path: str | Path | None = None,
           reason: str | None = None, *, data: Any = None) -> dict[str, Any]:
    """Validate ``path`` (or ``data``: JSON text or a parsed value, e.g. from an MCP
    client) as the round's ``kind`` (candidates | litscout | verdict) and advance.

    ``reason`` explains fewer candidates than gen_n. Returns what kb decided
    (see the ``_candidates`` / ``_litscout`` / ``_verdict`` results).

    Raises UsageError for an unknown kind, GenError listing every problem of the file,
    GenConflict when another step is due or the run stopped.
    """
    from kb.gen.models import KINDS

    if kind not in KINDS:
        raise UsageError(f"submit {kind!r}: use candidates, litscout or verdict")
    sb = open_run(sandbox)
    with sb.lock():
        return _submit(sb, kind, path, reason, data)


def _submit(sb: Sandbox, kind: str, path: str | Path | None, reason: str | None,
            data: Any) -> dict[str, Any]:
    from kb.gen.models import load

    st = sb.state
    if st["stopped"]:
        raise GenConflict(f"the run has stopped ({st['stopped']} after round {st['round'] - 1}); "
                       "`kb gen report` writes the ranked report")
    if kind != st["step"]:
        raise GenConflict(f"round {st['round']} expects {st['step']} next, not {kind}")
    if (path is None) == (data is None):
        raise UsageError("submit needs a file or data (one of them)")
    p = Path(path) if path is not None else Path(f"<{kind} data>")
    raw, model = load(kind, p, data)
    if model.round != sb.round:
        raise GenError(f"{p}: $.round: is {model.round}, but the current round is {sb.round}")
    handler = {"candidates": _candidates, "litscout": _litscout, "verdict": _verdict}[kind]
    return handler(sb, p, raw, model, reason)


def _candidates(sb: Sandbox, path: Path, raw: Any, m: Any, reason: str | None) -> dict[str, Any]:
    n, gen_n = len(m.candidates), int(sb.run["gen_n"])
    problems = []
    seen: dict[str, int] = {}
    for i, c in enumerate(m.candidates):
        at = f"{path}: $.candidates[{i}]"
        if not re.fullmatch(rf"r{sb.round}h[1-9][0-9]*", c.hid):
            problems.append(f"{at}.hid: {c.hid!r} is not r{sb.round}h<n> (round {sb.round})")
        if c.hid in seen:
            problems.append(f"{at}.hid: {c.hid} repeats $.candidates[{seen[c.hid]}].hid")
        seen.setdefault(c.hid, i)
        for field in ("statement", "how_to_test"):
            if not getattr(c, field).strip():
                problems.append(f"{at}.{field}: is empty")
    if n == 0:
        problems.append(f"{path}: $.candidates: is empty; the Generator proposes {gen_n}")
    elif n > gen_n:
        problems.append(f"{path}: $.candidates: {n} candidates, but gen_n is {gen_n}")
    elif n < gen_n and not (reason or "").strip():
        problems.append(f"{path}: $.candidates: {n} candidates, fewer than gen_n {gen_n}; "
                        "state why with --reason")
    if problems:
        raise GenError(f"{path}: refused", problems)
    rd = sb.round_dir()
    write_json(rd / "candidates.json", raw)
    if n < gen_n:
        write_atomic(rd / "candidates.reason.txt", reason.strip() + "\n")  # type: ignore[union-attr]
    sb.state["step"] = "litscout"
    sb.save()
    return {"kind": "candidates", "round": sb.round, "accepted": [c.hid for c in m.candidates],
            "reason": reason if n < gen_n else None, "next": "litscout"}


def _litscout(sb: Sandbox, path: Path, raw: Any, m: Any, reason: str | None) -> dict[str, Any]:
    from kb.gen.models import Candidates

    cands = read_round_file(sb.round_dir() / "candidates.json", Candidates)
    hids = [c.hid for c in cands.candidates]
    problems = []
    keys: dict[str, int] = {}
    for i, e in enumerate(m.evidence):
        if e.key in keys:
            problems.append(f"{path}: $.evidence[{i}].key: {e.key} repeats $.evidence[{keys[e.key]}].key")
        keys.setdefault(e.key, i)
        if e.source == "web" and not rules.is_url(e.id):
            problems.append(f"{path}: $.evidence[{i}].id: a web snippet needs its URL here")
        if not e.snippet.strip():
            problems.append(f"{path}: $.evidence[{i}].snippet: is empty")
    seen: dict[str, int] = {}
    for i, ev in enumerate(m.evaluations):
        at = f"{path}: $.evaluations[{i}]"
        if ev.hid not in hids:
            problems.append(f"{at}.hid: {ev.hid} is not a candidate of round {sb.round} "
                            f"({', '.join(hids)})")
        if ev.hid in seen:
            problems.append(f"{at}.hid: {ev.hid} repeats $.evaluations[{seen[ev.hid]}].hid")
        seen.setdefault(ev.hid, i)
        for field in ("closest_prior_work", "support", "gap"):
            for j, pt in enumerate(getattr(ev, field)):
                for k, key in enumerate(pt.cites):
                    if key not in keys:
                        problems.append(f"{at}.{field}[{j}].cites[{k}]: {key} is not a key of $.evidence")
    missing = [h for h in hids if h not in seen]
    in_depth = EVAL_SCALES[sb.run["eval_scale"]]["candidates_in_depth"]
    need = len(hids) if in_depth == "all" else min(int(in_depth), len(hids))
    if len(seen) < need:
        problems.append(f"{path}: $.evaluations: {', '.join(missing)} not evaluated "
                        f"(eval_scale {sb.run['eval_scale']} evaluates {in_depth})")
    if problems:
        raise GenError(f"{path}: refused", problems)
    corpus = rules.corpus_of(sb.cached_bodies())
    check: dict[str, str] = {}
    for e in m.evidence:
        if e.source == "web":
            check[e.key] = "web"
        else:
            check[e.key] = "verified" if rules.occurs(e.snippet, corpus) else "not-found"
    unbacked = _unbacked_claims(m, check)
    rd = sb.round_dir()
    write_json(rd / "litscout.json", raw)
    write_json(rd / "evidence-check.json", {"cache_keys": sb.cache_keys(), "evidence": check,
                                            "unbacked_claims": unbacked})
    sb.state["step"] = "verdict"
    sb.save()
    return {"kind": "litscout", "round": sb.round, "evidence": check,
            "not_found": [k for k, v in check.items() if v == "not-found"],
            "unbacked_claims": unbacked, "cache_keys": len(sb.cache_keys()), "next": "verdict"}


BACKED = ("verified", "web")


def _unbacked_claims(m: Any, check: dict[str, str]) -> list[dict[str, Any]]:
    """Claims no checked snippet backs (the evidence gate): ``{hid, field, index, claim}``."""
    out = []
    for ev in m.evaluations:
        for field in ("closest_prior_work", "support", "gap"):
            for j, pt in enumerate(getattr(ev, field)):
                if not any(check.get(k) in BACKED for k in pt.cites):
                    out.append({"hid": ev.hid, "field": field, "index": j, "claim": pt.claim})
    return out


def _verdict(sb: Sandbox, path: Path, raw: Any, m: Any, reason: str | None) -> dict[str, Any]:
    from kb.gen.judge import apply

    return apply(sb, path, raw, m, reason)
