"""Rule KB240: DASHBOARD.md is what ``kb dashboard`` would render (whole snapshot).

:func:`render_expected` gives the expected text (``kb verify --fix`` writes it);
:func:`stale_dashboard` compares it with the file, caching its verdict in the
index keyed by the inputs it depends on.
"""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple, Optional

from kb.checks.diagnostics import diag
from kb.checks.facts import Facts
from kb.checks.registry import snapshot_rule


def _experiment_key(s: Facts) -> str:
    h = hashlib.sha1()
    for p in s.paths("experiment"):
        h.update(f"{p}\0{s.files[p]}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


class _Fields(dict):
    """An object's JSON with attribute access that raises on a missing field, so
    that a renderer needing more than the model's fields falls back to models."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class _Brief(NamedTuple):
    """The fields of a hypothesis the renderer reads today: read at C speed (a
    renderer reading another raises AttributeError, as :class:`_Fields` does)."""

    id: str
    statement: str
    status: str
    parent: Optional[str]


class _Dated(NamedTuple):
    """The one field of an experiment the renderer reads today."""

    date: Any


def render_expected(s: Facts) -> Optional[str]:
    """What ``kb dashboard`` renders for this snapshot (None without a DASHBOARD.md).

    ``render_dashboard`` reads the objects' fields only, so it is given the
    index's JSON of the Hypothesis and Experiment models (no model is built on
    the hook's path); if it ever needs more, the models themselves are built.
    """
    import json

    dash = s.config.paths["dashboard"]
    if dash not in s.files:
        return None
    from kb.render.dashboard import render_dashboard

    tree = s.config.paths["tree"]
    meta = s.meta(dash)
    steps = meta.get("next_steps")
    newline = meta.get("newline") or "\n"
    locale = s.config.locale
    formats = s.formats
    tree_blob = s.files.get(tree)
    # 1. the fields the renderer reads today, straight from SQLite (strict views:
    #    a field it starts reading later raises and we fall back to the full JSON).
    try:
        hyps = [] if tree_blob is None else [_Brief(*row) for row in s.hypotheses_brief(tree)]
        exps = [_Dated(d) for p, d in sorted(s.field_of_kind("experiment", "date"))
                if formats.get(p) == "experiment"]
        return render_dashboard(hyps, exps, steps, locale, newline)
    except (AttributeError, TypeError):
        pass
    hyp_rows = [r for r in s.full_rows(tree) if r.kind == "hypothesis"] if tree_blob else []
    exp_rows = [(p, data) for p, data in s.data_of_kind("experiment") if formats.get(p) == "experiment"]
    # 2. the whole JSON of the models; 3. the models themselves.
    try:
        hyps = [json.loads(r.data, object_hook=_Fields) for r in hyp_rows]
        exps = [json.loads(d, object_hook=_Fields) for _, d in sorted(exp_rows)]
        return render_dashboard(hyps, exps, steps, locale, newline)
    except (AttributeError, TypeError):
        from kb.model import Experiment, Hypothesis

        hyps = [Hypothesis.from_json(r.data) for r in hyp_rows]
        exps = [Experiment.from_json(d) for _, d in sorted(exp_rows)]
        return render_dashboard(hyps, exps, steps, locale, newline)


def _first_difference(a: str, b: str) -> int:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return i + 1
    return min(len(la), len(lb)) + 1


def _config_id(cfg: Any) -> str:
    """The configuration's fields as text, the same in every process (sets sorted)."""
    from dataclasses import fields

    return repr([(f.name, sorted(v) if isinstance(v, (set, frozenset)) else v)
                 for f in fields(cfg) if f.repr for v in (getattr(cfg, f.name),)])


def _date_key(s: Facts) -> Optional[str]:
    """Where the latest experiment date of snapshot ``s`` is kept: its results key (its
    ``{path: blob}`` map), kb's version (the parse) and its configuration (the formats);
    None before its results key is known."""
    import kb

    key = getattr(s, "results_key", None)
    if not key:
        return None
    body = f"dashdate\0{kb.__version__}\0{key}\0{_config_id(s.config)}"
    return "dashdate:" + hashlib.sha1(body.encode("utf-8", "surrogateescape")).hexdigest()


def _dates(s: Facts, paths: list[str]) -> list[Any]:
    """The experiment dates declared in ``paths`` of ``s`` (those it holds as experiments)."""
    from kb import index_facts

    return [d for p in paths if s.formats.get(p) == "experiment" and p in s.files
            for d in index_facts.version_field(s.index, p, s.files[p], "experiment", "date") if d]


def _remember(s: Facts, latest: Any) -> None:
    key = _date_key(s)
    if key is not None and isinstance(latest, str):
        s.store([(key, latest)])


def _known_latest(s: Facts) -> Optional[str]:
    """The latest experiment date of ``s`` without reading every experiment: stored for
    ``s``, or from the checked snapshot it was derived from (``s.checked_base``: that
    snapshot and the paths whose blob differs), whose latest date is stored, when no
    changed file held that date there (else None: every experiment is read)."""
    mine = _date_key(s)
    if mine is None:
        return None
    hit = s.stored(mine)
    if hit is not None:
        return hit
    derived = getattr(s, "checked_base", None)
    if derived is None:
        return None
    src, changed = derived
    theirs = _date_key(src)
    old = src.stored(theirs) if theirs is not None else None
    if old is None or old in _dates(src, changed):
        return None  # unknown, or it may have gone with a changed file (a tie too)
    latest = max([old, *_dates(s, changed)])
    _remember(s, latest)
    return latest


def _all_latest(s: Facts) -> Any:
    """The latest experiment date of ``s``, every experiment read ("" without one)."""
    formats = s.formats
    dates = [d for p, d in s.field_of_kind("experiment", "date")
             if d and formats.get(p) == "experiment"]
    latest = max(dates, default="")
    _remember(s, latest)
    return latest


@snapshot_rule("KB240", volatile=True)
def stale_dashboard(s: Facts) -> list:
    """KB240: DASHBOARD.md is byte for byte what ``kb dashboard`` renders.

    Silent when the KB has no DASHBOARD.md. Cached per (tree, dashboard,
    experiments) blob ids, then per latest experiment date: the dashboard
    depends on the experiments only through that date. The latest date is
    kept per snapshot and updated from the snapshot a check starts from
    (:func:`_known_latest`), so a change reads only its changed files' dates.
    """
    import kb

    dash = s.config.paths["dashboard"]
    if dash not in s.files:
        return []
    tree = s.config.paths["tree"]
    base = f"dash\0{kb.__version__}\0{s.config.locale}\0{s.files.get(tree, '')}\0{s.files[dash]}"
    latest: Any = _known_latest(s)
    verdict = key1 = None
    if latest is None:
        # (the verdict and the latest date, stored together)
        key1 = hashlib.sha1(f"{base}\0{_experiment_key(s)}\0+date".encode("utf-8", "surrogateescape")).hexdigest()
        hit = s.stored(key1)
        if hit is not None and "\0" in hit:
            verdict, latest = hit.split("\0", 1)
            _remember(s, latest)
    if verdict is None:
        if latest is None:
            latest = _all_latest(s)
        key2 = hashlib.sha1(f"{base}\0{latest}".encode("utf-8", "surrogateescape")).hexdigest()
        verdict = s.stored(key2)
        if verdict is None:
            want = render_expected(s)
            have = (s.read(dash) or b"").removeprefix(b"\xef\xbb\xbf")
            if want is None or have == want.encode("utf-8"):
                verdict = "fresh"
            else:
                verdict = f"stale:{_first_difference(have.decode('utf-8', 'replace'), want)}"
            s.store([(key2, verdict)])
        if key1 is not None:
            s.store([(key1, f"{verdict}\0{latest}")])
    if verdict == "fresh":
        return []
    line = int(verdict.split(":", 1)[1]) if ":" in verdict else 1
    at = s.kb.prefix  # messages name repository paths, as the location does
    return [diag(dash, line, "KB240",
                 f"{at}{dash} is stale: it is not what `kb dashboard` renders from {at}{tree} and the "
                 "experiments (first difference at this line); run `kb dashboard` and commit it")]


def unreadable_inputs(k: Any, idx: Any) -> Optional[str]:
    """What ``kb dashboard`` (and ``kb verify --fix``) will not render the dashboard from:
    ``<path> has format errors (<its first error>)`` for each file of the working tree
    the dashboard is rendered from (the tree file, the experiments) that has errors,
    the first five joined with ``; ``, or None."""
    paths = k.config.paths
    tree, exps = paths["tree"], paths["experiments"].strip("/") + "/"
    first: dict[str, Any] = {}
    for d in idx.diagnostics():
        if d.severity == "error" and (d.path == tree or d.path.startswith(exps)):
            first.setdefault(d.path, d)
    if not first:
        return None
    said = [f"{k.prefix}{path} has format errors ({d.format()})" for path, d in list(first.items())[:5]]
    more = f"; and {len(first) - 5} more file(s)" if len(first) > 5 else ""
    return "; ".join(said) + more
