"""``DASHBOARD.md``: regenerate it, check it (DESIGN.md §2.3; seed "updateDashboard").

The text is exactly ``render_dashboard(hypotheses, experiments, next_steps,
locale, newline)`` (kb.render.dashboard) where ``hypotheses`` are the
declarations of ``tree.md`` in file order, ``experiments`` every experiment,
``next_steps`` the lines of the existing file's ``## Next Steps`` section and
``newline`` its line-ending style (``\\n`` for a new file); a BOM of the
existing file is kept. ``kb verify``'s stale-dashboard rule calls the same
renderer the same way, so the two always agree.

Every write operation of kb.ops.hypotheses / kb.ops.experiments refreshes the
dashboard in its own transaction (:func:`stage_dashboard`);
:func:`refresh_dashboard` is ``kb dashboard`` and :func:`is_stale` is
``kb dashboard --check``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, NamedTuple

from kb import git
from kb.checks.dashboard_rule import unreadable_inputs
from kb.fileio import read_regular
from kb.ops.session import Session, expect_map
from kb.ops.tree_edit import NODE_FIELDS, nodes_from
from kb.repo import KnowledgeBase, Snapshot, resolve_kb

if TYPE_CHECKING:  # annotations only
    from kb.model import Experiment, Hypothesis

__all__ = ["dashboard_text", "is_stale", "refresh_dashboard", "stage_dashboard",
           "DashboardCheck"]


def dashboard_text(kb: KnowledgeBase, hypotheses: Iterable[Hypothesis],
                   experiments: Iterable[Experiment], existing: bytes | None) -> str:
    """The text DASHBOARD.md should have, given the current file's bytes (None: absent)."""
    from kb.render.dashboard import render_dashboard

    steps, newline, _ = _carried(kb, existing)
    return render_dashboard(hypotheses, experiments, steps, kb.config.locale, newline)


def _carried(kb: KnowledgeBase, existing: bytes | None,
             meta: dict[str, Any] | None = None) -> tuple[list[str] | None, str, bool]:
    """(next steps, newline, bom) of the existing dashboard (from the index meta when given)."""
    if meta is not None:
        return meta.get("next_steps"), meta.get("newline", "\n"), bool(meta.get("bom"))
    if existing is None:
        return None, "\n", False
    from kb.parse.dashboard import next_steps
    from kb.text import DecodeError, SourceText, decode

    try:
        text, bom = decode(existing, kb.config.paths["dashboard"])
    except DecodeError:
        return None, "\n", False
    src = SourceText.from_text(text, kb.config.paths["dashboard"], bom)
    return next_steps(src), src.newline, bom


def _encode(text: str, bom: bool) -> bytes:
    return (("\ufeff" if bom else "") + text).encode("utf-8")


# -- inputs from the index ----------------------------------------------------------------


class ExperimentView(NamedTuple):
    """What the dashboard reads of an experiment (a light stand-in for the model)."""

    id: str
    date: str | None


def _hypotheses(nodes: Iterable[Any]) -> list[Any]:
    """The hypotheses for the renderer: kb.ops.tree_edit.Node values carry what it reads
    (``id``, ``status``, ``statement``, ``parent``), in file order, without building
    thousands of models."""
    return list(nodes)


def _current_nodes(k: KnowledgeBase, idx: Any) -> list[Any]:
    tree_rel = k.config.paths["tree"]
    blob = idx.current_blob(tree_rel)
    if blob is None:
        return []
    return nodes_from(idx.extract("hypothesis", NODE_FIELDS, tree_rel, blob))


def _experiments(idx: Any, pending: dict[str, Experiment | None] | None = None,
                 rows: list[tuple[Any, ...]] | None = None) -> list[Any]:
    """Every experiment of the indexed working tree, with ``pending`` (path -> new) applied.

    ``rows`` are ``idx.extract("experiment", ("date",))`` rows when the caller has them.
    """
    pending = pending or {}
    if rows is None:
        rows = idx.extract("experiment", ("date",), fmt="experiment")
    out: list[Any] = [ExperimentView(i, d) for p, i, _ln, _st, _t, d in rows if p not in pending]
    out += [e for e in pending.values() if e is not None]
    return out


def stage_dashboard(s: Any, pending: dict[str, Experiment | None] | None = None,
                    experiment_rows: list[tuple[Any, ...]] | None = None) -> str | None:
    """Render DASHBOARD.md for the session's new state and stage it; its path when it changes.

    ``s`` is a kb.ops.session.Session; the tree is its pending version when it
    edited one; ``pending`` maps experiment paths to the experiments it writes.
    """
    from kb.render.dashboard import render_dashboard

    k, idx = s.kb, s.idx
    tree = s._tree
    if tree is not None:
        nodes = tree.new_outline if tree.new_outline is not None else tree.outline
    else:  # the tree as indexed (even when it has format errors: it is only read)
        nodes = _current_nodes(k, idx)
    hyps = _hypotheses(nodes)
    exps = _experiments(idx, pending, experiment_rows)
    rel = k.config.paths["dashboard"]
    old = s.tx.read(rel)
    meta = None
    if old is not None:
        blob = s.tx.blob_id(old)
        meta = idx.parse_meta(rel, blob)
        if meta is not None:
            errors = [d for d in idx.diagnostics_of(rel, blob) if d.severity == "error"]
            s.tx.known_errors[blob] = errors
    steps, newline, bom = _carried(k, old, meta)
    new = _encode(render_dashboard(hyps, exps, steps, k.config.locale, newline), bom)
    if new == old:
        return None
    blob = s.tx.blob_id(new)
    s.idx.put(rel, blob, rendered_parse(rel, steps, newline, bom))
    s.tx.known_errors[blob] = []
    s.tx.write(rel, new)
    return rel


def check_dashboard_inputs(k: KnowledgeBase, idx: Any, commit: bool) -> None:
    """Refuse to render DASHBOARD.md from inputs kb cannot trust (``kb dashboard``).

    The tree or an experiment with format errors would drop hypotheses from
    the dashboard without a word (an unreadable tree.md gave an empty one);
    when the dashboard is committed (``commit``), uncommitted changes to
    them would put a state into history that no commit holds. Raises
    RefusedError naming the file (nothing written).
    """
    from kb.errors import RefusedError

    bad = unreadable_inputs(k, idx)
    if bad:
        raise RefusedError(f"{bad}: the dashboard would leave out what kb cannot read; fix the "
                           "file first (kb index lists the errors) — nothing was written")
    if not commit:
        return
    from kb.ops.git_state import refuse_uncommitted, uncommitted

    paths = k.config.paths
    refuse_uncommitted(uncommitted(k.top, [k.repo_path(paths["tree"]),
                                           k.repo_path(paths["experiments"].strip("/"))]), "dashboard")


def rendered_parse(rel: str, steps: list[str] | None, newline: str, bom: bool) -> Any:
    """The ParseResult of a dashboard kb rendered, known without parsing it.

    What ``parse_file`` gives for ``render_dashboard(…, steps, …, newline)``:
    no objects, no diagnostics (the dashboard format has none of its own and
    the rendered text has no frontmatter), and the Next Steps lines it was
    given back (the default placeholder when None). Parsing it instead costs a
    full markdown-it pass over a file that lists every active hypothesis;
    tests/test_ops_dashboard.py checks the two agree.
    """
    from kb.model import ParseResult
    from kb.render.dashboard import DEFAULT_NEXT_STEPS

    meta = {"next_steps": list(DEFAULT_NEXT_STEPS if steps is None else steps),
            "bom": bom, "newline": newline}
    return ParseResult(path=rel, kind="dashboard", meta=meta)


# -- kb dashboard ---------------------------------------------------------------------


class DashboardCheck:
    """Result of :func:`is_stale`: ``stale``, the path, and the expected text."""

    def __init__(self, path: str, stale: bool, expected: str, exists: bool) -> None:
        self.path = path
        self.stale = stale
        self.expected = expected
        self.exists = exists

    def __bool__(self) -> bool:
        return self.stale


def _inputs_from(k: KnowledgeBase, source: Any) -> tuple[list[Any], list[Any], bytes | None,
                                                          dict[str, Any] | None]:
    """(hypotheses, experiments, dashboard bytes, its index meta) of a Snapshot or the working tree."""
    from kb.index import Index

    tree_rel, dash_rel = k.config.paths["tree"], k.config.paths["dashboard"]
    with Index(k) as idx:
        if isinstance(source, Snapshot):
            snap = source
            idx.ensure(snap)
            files = snap.files
            hyps, exps = [], []
            for path, blob in files.items():
                fmt = snap.formats.get(path)
                if fmt == "tree" and path == tree_rel:
                    hyps = nodes_from(idx.extract("hypothesis", NODE_FIELDS, path, blob))
                elif fmt == "experiment":
                    exps += [ExperimentView(i, d) for _, i, _ln, _st, _t, d
                             in idx.extract("experiment", ("date",), path, blob)]
            existing = snap.read([dash_rel]).get(dash_rel) if dash_rel in files else None
            meta = idx.parse_meta(dash_rel, files[dash_rel]) if dash_rel in files else None
            return hyps, exps, existing, meta
        idx.refresh()
        bad = unreadable_inputs(k, idx)
        if bad:  # e.g. conflict markers of a stopped merge: "stale" would send the user astray
            from kb.errors import RefusedError

            raise RefusedError(f"{bad}: kb cannot tell whether {k.prefix}{dash_rel} is current "
                               "until the file reads without errors (kb index lists them)")
        hyps = _hypotheses(_current_nodes(k, idx))
        exps = _experiments(idx)
        try:
            existing = read_regular(k.root / dash_rel)
        except OSError:
            existing = None
        meta = idx.parse_meta(dash_rel, git.blob_id(existing)) if existing is not None else None
    return hyps, exps, existing, meta


def is_stale(kb: Any = None, source: Any = None) -> DashboardCheck:
    """Compare DASHBOARD.md with what :func:`dashboard_text` gives (read-only, no lock).

    ``source`` is a :class:`kb.repo.Snapshot` (e.g. the staged index or a
    commit) or None for the working tree. Raises RefusedError when the working
    tree's tree file or an experiment has format errors (conflict markers of a
    stopped merge, say): the check cannot judge, as ``kb dashboard`` cannot render.
    """
    from kb.render.dashboard import render_dashboard

    k = resolve_kb(kb)
    hyps, exps, existing, meta = _inputs_from(k, source)
    steps, newline, _ = _carried(k, existing, meta)
    expected = render_dashboard(hyps, exps, steps, k.config.locale, newline)
    rel = k.config.paths["dashboard"]
    if existing is None:
        return DashboardCheck(rel, True, expected, False)
    have = existing[3:] if existing.startswith(b"\xef\xbb\xbf") else existing
    return DashboardCheck(rel, have != expected.encode("utf-8"), expected, True)


def refresh_dashboard(kb: Any = None, *, no_commit: bool = False, owner: str | None = None,
                      expect: Any = None, on_wait: Any = None) -> Any:
    """``kb dashboard``: regenerate DASHBOARD.md and commit it (one transaction)."""
    with Session(kb, "dashboard", summary="dashboard: refresh", no_commit=no_commit, owner=owner,
                 on_wait=on_wait) as s:
        rel = s.kb.config.paths["dashboard"]
        s.tx.expect = expect_map(s.kb, expect, rel)
        check_dashboard_inputs(s.kb, s.idx, commit=not no_commit)
        changed = stage_dashboard(s)
        changes = [f"refreshed {s.kb.prefix}{rel}"] if changed else \
            [f"{s.kb.prefix}{rel} is up to date (nothing to do)"]
    return s.result("dashboard", rel, changes, {"path": s.kb.prefix + rel, "changed": bool(changed)})
