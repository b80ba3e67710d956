"""Rule KB240: DASHBOARD.md is what ``kb dashboard`` would render (whole snapshot).

:func:`render_expected` gives the expected text (``kb verify --fix`` writes it);
:func:`stale_dashboard` compares it with the file, caching its verdict in the
index keyed by the inputs it depends on.
"""

from __future__ import annotations

import hashlib
from typing import Any, Optional

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
        hyps = [] if tree_blob is None else [_Fields(id=i, statement=st, status=su, parent=pa)
                                             for i, st, su, pa in s.hypotheses_brief(tree)]
        exps = [_Fields(date=d) for p, d in sorted(s.field_of_kind("experiment", "date"))
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


@snapshot_rule("KB240", volatile=True)
def stale_dashboard(s: Facts) -> list:
    """KB240: DASHBOARD.md is byte for byte what ``kb dashboard`` renders.

    Silent when the KB has no DASHBOARD.md. Cached per (tree, dashboard,
    experiments) blob ids, then per latest experiment date: the dashboard
    depends on the experiments only through that date.
    """
    import kb

    dash = s.config.paths["dashboard"]
    if dash not in s.files:
        return []
    tree = s.config.paths["tree"]
    base = f"dash\0{kb.__version__}\0{s.config.locale}\0{s.files.get(tree, '')}\0{s.files[dash]}"
    key1 = hashlib.sha1(f"{base}\0{_experiment_key(s)}".encode("utf-8", "surrogateescape")).hexdigest()
    verdict = s.stored(key1)
    if verdict is None:
        formats = s.formats
        dates = [d for p, d in s.field_of_kind("experiment", "date")
                 if d and formats.get(p) == "experiment"]
        key2 = hashlib.sha1(f"{base}\0{max(dates, default='')}".encode("utf-8", "surrogateescape")).hexdigest()
        verdict = s.stored(key2)
        if verdict is None:
            want = render_expected(s)
            have = (s.read(dash) or b"").removeprefix(b"\xef\xbb\xbf")
            if want is None or have == want.encode("utf-8"):
                verdict = "fresh"
            else:
                verdict = f"stale:{_first_difference(have.decode('utf-8', 'replace'), want)}"
        s.store([(key1, verdict), (key2, verdict)])
    if verdict == "fresh":
        return []
    line = int(verdict.split(":", 1)[1]) if ":" in verdict else 1
    return [diag(dash, line, "KB240",
                 f"{dash} is stale: it is not what `kb dashboard` renders from {tree} and the "
                 "experiments (first difference at this line); run `kb dashboard` and commit it")]
