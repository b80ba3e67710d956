"""The workspace of one card operation: a transaction, the index, pending card edits.

Every card write (:mod:`kb.ops.problems`, :mod:`kb.ops.propositions`,
:mod:`kb.ops.entries`, :mod:`kb.ops.methods`, :mod:`kb.ops.verdict`,
:mod:`kb.ops.promote`, :mod:`kb.ops.priority`, :mod:`kb.ops.refresh`,
:mod:`kb.ops.report`) is :func:`run_op`: one
:class:`kb.ops.transaction.Transaction` and so one commit. Reads come from the
index (:class:`kb.index.Index`, refreshed incrementally), overlaid with the
operation's own edits, never from a parse of every card.

Derived fields are kept up to date inside the same transaction
(:meth:`Workspace.sync_dependencies`, rules in :mod:`kb.research.dependencies`):
``被依赖`` of a problem lists the problems whose ``依赖`` names it (natural ID
order), and a problem moves between ``求解中`` and ``等待依赖`` as its
dependencies settle. Those fields are computed from other cards as the working
tree holds them; when a commit is made, a card read so that has uncommitted
changes to what is read (its ``依赖``, whether it is settled) refuses the write
(:func:`uncommitted_cards`, :meth:`Workspace.refuse_uncommitted`): the commit
would hold derived values that its own cards contradict (KB216), as ``kb
dashboard`` refuses to commit a dashboard of uncommitted inputs.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence, Union

from kb import git
from kb.errors import ConflictError, NotFoundError, RefusedError, UsageError
from kb.index import Index
from kb.ops.card_edit import CARD_KINDS, CardEdit, CardError
from kb.ops.git_state import head_entries, refuse_uncommitted, uncommitted, uncommitted_files
from kb.ops.result import OpResult, expect_blob
from kb.ops.transaction import Transaction
from kb.parse import classify, parse_file
from kb.parse.common import dump_list
from kb.repo import KnowledgeBase, read_worktree, resolve_kb
from kb.research import dependencies
from kb.research.dependencies import natural_key, object_settled


class Workspace:
    """The KB as one write operation sees it: the index, overlaid with its own edits."""

    def __init__(self, k: KnowledgeBase, tx: Any) -> None:
        self.kb = k
        self.tx = tx
        self.idx = Index(k)
        self.idx.refresh()
        self.edits: dict[str, CardEdit] = {}
        self.by_id: dict[str, CardEdit] = {}
        self.notes: list[str] = []
        self._uncommitted: dict[str, "UncommittedCard"] | None = None
        #: card ID -> what of its uncommitted changes this operation read (see refuse_uncommitted)
        self.uncommitted_read: dict[str, str] = {}

    def close(self) -> None:
        """Close the index."""
        self.idx.close()

    # -- paths --------------------------------------------------------------
    def path_of(self, key: str) -> str:
        """The KB folder of ``key`` (``problems``, ``propositions``, …) from kb.toml."""
        return self.kb.config.paths[key].strip("/")

    def problem_rel(self, qid: str) -> str:
        """``Problems/<qid>.md``."""
        return f"{self.path_of('problems')}/{qid}.md"

    def proposition_rel(self, category: str, pid: str) -> str:
        """``Propos/<category>/<pid>.md``."""
        return f"{self.path_of('propositions')}/{category}/{pid}.md"

    def method_rel(self, mid: str) -> str:
        """``Methods/<mid>.md``."""
        return f"{self.path_of('methods')}/{mid}.md"

    def verified_rel(self, kind_word: str, obj_id: str) -> str:
        """``Verified/<问题|命题>/<id>.md``."""
        return f"{self.path_of('verified')}/{kind_word}/{obj_id}.md"

    # -- lookups ------------------------------------------------------------
    def rows(self, obj_id: str) -> list[Any]:
        """The index rows declaring ``obj_id`` (any kind)."""
        return self.idx.get(obj_id)

    def row(self, obj_id: str, kinds: Sequence[str] = CARD_KINDS) -> Any:
        """The one row of ``obj_id`` among ``kinds`` or None; CardError when declared twice."""
        rows = [r for r in self.idx.get(obj_id) if r.kind in kinds]
        if len(rows) > 1:
            where = ", ".join(f"{self.kb.prefix}{r.path}" for r in rows)
            raise CardError(f"ID {obj_id} is declared {len(rows)} times ({where}); fix the "
                            "duplicate first (kb verify lists it)")
        return rows[0] if rows else None

    def obj(self, obj_id: str, kinds: Sequence[str] = CARD_KINDS) -> Any:
        """The object as this operation sees it (its own edits first), or None."""
        e = self.by_id.get(obj_id)
        if e is not None and e.fmt in kinds:
            return e.model()
        r = self.row(obj_id, kinds)
        return r.model() if r is not None else None

    def exists(self, obj_id: str) -> bool:
        """Whether ``obj_id`` is declared (indexed, or created by this operation)."""
        return obj_id in self.by_id or bool(self.idx.get(obj_id))

    def require(self, obj_id: str, kinds: Sequence[str], what: str) -> Any:
        """The object ``obj_id`` of ``kinds``; NotFoundError naming the known IDs otherwise."""
        o = self.obj(obj_id, kinds)
        if o is None:
            raise NotFoundError(f"unknown {what} {obj_id!r}; " + self.known_hint(kinds))
        return o

    def known_hint(self, kinds: Sequence[str]) -> str:
        """``known: q1, q2, …`` (at most 12) for an error message."""
        ids: list[str] = []
        for kind in kinds:
            ids += [r.id for r in self.idx.objects(kind)]
        ids = sorted(set(ids), key=natural_key)
        if not ids:
            return "there are none yet"
        shown = ", ".join(ids[:12]) + (f", … ({len(ids)} in all)" if len(ids) > 12 else "")
        return f"known: {shown}"

    def categories(self) -> list[str]:
        """The proposition categories (folders under Propos/)."""
        return proposition_categories(self.kb, self.idx)

    # -- edits --------------------------------------------------------------
    def edit(self, obj_id: str, kinds: Sequence[str] = CARD_KINDS) -> CardEdit:
        """The edit of an existing card (opened once per operation)."""
        e = self.by_id.get(obj_id)
        if e is not None:
            return e
        r = self.row(obj_id, kinds)
        if r is None:
            raise NotFoundError(f"unknown ID {obj_id!r}; " + self.known_hint(kinds))
        return self.open(r.path, r.kind, obj_id)

    def open(self, rel: str, fmt: str, obj_id: str | None = None) -> CardEdit:
        """The edit of the card at ``rel`` (read once per operation); CardError when missing."""
        e = self.edits.get(rel)
        if e is None:
            data = self.tx.read(rel)
            if data is None:
                raise CardError(f"{self.kb.prefix}{rel} does not exist (the index is stale? run "
                                "kb index)")
            e = CardEdit(self.kb, rel, fmt, data)
            self.edits[rel] = e
        self.by_id[obj_id or e.model().id] = e
        return e

    def create(self, rel: str, fmt: str, text: str, obj_id: str) -> CardEdit:
        """Start a new card at ``rel`` with ``text``; ConflictError when the file exists."""
        if self.tx.read(rel) is not None:
            raise ConflictError(f"{self.kb.prefix}{rel} already exists; choose another ID")
        e = CardEdit(self.kb, rel, fmt, None, text)
        self.edits[rel] = e
        self.by_id[obj_id] = e
        return e

    def flush(self) -> list[str]:
        """Stage every changed card in the transaction; return their KB paths."""
        out = []
        for rel, e in self.edits.items():
            if e.changed():
                data = e.to_bytes()
                self.tx.write(rel, data)
                self.remember(rel, data, e.result())
                out.append(rel)
        return out

    def remember(self, rel: str, data: bytes, result: Any) -> None:
        """Store the parse of bytes kb writes, so the next refresh need not parse them."""
        put = getattr(self.idx, "put", None)
        if put is None:
            return
        try:
            put(rel, git.blob_id(data), result)
        except Exception:  # a cache: never let it fail a write
            pass

    # -- derived fields ----------------------------------------------------------
    def dependants(self, target: str) -> set[str]:
        """Problems whose ``依赖`` names ``target`` (index, overlaid with this op's edits)."""
        out = set()
        _, inc = self.idx.links(target)
        for src, _dst, kind in inc:
            if kind == "depends":
                out.add(src)
        for obj_id, e in self.by_id.items():
            if e.fmt == "problem":
                out.add(obj_id)
        result = set()
        for q in out:
            o = self.obj(q, ("problem",))
            if o is not None and target in o.depends:
                result.add(q)
        for q, u in self.uncommitted_inputs().items():
            if u.depends_differ(target):
                self.note_uncommitted(q, u.what("依赖"))
        return result

    def dep_settled(self, obj_id: str) -> bool:
        """Whether dependency ``obj_id`` is settled (an unknown ID counts as settled)."""
        o = self.obj(obj_id, ("problem", "proposition"))
        u = self.uncommitted_inputs().get(obj_id)
        if u is not None and u.settled_differs():
            self.note_uncommitted(obj_id, u.what("settled or not"))
        return True if o is None else object_settled(o)

    # -- uncommitted inputs ------------------------------------------------------
    def uncommitted_inputs(self) -> dict[str, "UncommittedCard"]:
        """:func:`uncommitted_cards` (once per operation); empty with ``--no-commit``, whose
        files the user commits together."""
        if self.tx.no_commit:
            return {}
        if self._uncommitted is None:
            self._uncommitted = uncommitted_cards(self.kb)
        return self._uncommitted

    def note_uncommitted(self, obj_id: str, what: str) -> None:
        """Record that this operation derived something from ``obj_id``'s uncommitted ``what``."""
        self.uncommitted_read.setdefault(obj_id, what)

    def refuse_uncommitted(self) -> None:
        """RefusedError naming the cards :meth:`note_uncommitted` recorded, when this
        operation changes a card: its commit would hold 被依赖 / 等待依赖 derived from a
        state no commit holds (KB216 at that commit). Nothing is written."""
        if not self.uncommitted_read or not any(e.changed() for e in self.edits.values()):
            return
        ids = sorted(self.uncommitted_read, key=natural_key)
        inputs = self.uncommitted_inputs()
        said = [f"{self.kb.prefix}{inputs[i].path} ({self.uncommitted_read[i]})" for i in ids[:5]]
        more = f" and {len(ids) - 5} more" if len(ids) > 5 else ""
        one = len(ids) == 1
        raise RefusedError(
            f"{', '.join(said)}{more} {'has' if one else 'have'} uncommitted changes that 被依赖 / "
            "等待依赖 would be derived from: the commit would hold derived fields its own cards "
            f"contradict; commit {'that card' if one else 'those cards'} first (or use --no-commit "
            "and commit everything together) — nothing was written")

    def refuse_uncommitted_files(self, formats: Iterable[str], what: str) -> None:
        """RefusedError (:func:`kb.ops.git_state.refuse_uncommitted`) naming the files of
        ``formats`` (:func:`kb.ops.git_state.uncommitted_files`) with uncommitted changes,
        when this operation commits: ``kb priority adjust`` and ``kb promote`` compute what
        they write from every such file as the working tree holds it, and their commit would
        hold ``what`` derived from a state no commit holds. Nothing with ``--no-commit`` (the user commits it all
        together). Nothing is written."""
        if not self.tx.no_commit:
            refuse_uncommitted(uncommitted_files(self.kb, formats), what)

    def waiting_status(self, q: Any) -> str | None:
        """The status ``q`` should move to by dependency state, or None."""
        if q.kind != "problem":
            return None
        return dependencies.waiting_move(q.status, q.priority,
                                         all(self.dep_settled(d) for d in q.depends))

    def sync_dependencies(self) -> list[str]:
        """Recompute ``被依赖`` and ``等待依赖`` wherever this operation's edits matter."""
        changes: list[str] = []
        targets: set[str] = set()
        check: set[str] = set()
        settled_changed: list[str] = []
        for obj_id, e in list(self.by_id.items()):
            if e.fmt not in ("problem", "proposition"):
                continue
            old, new = e.orig_model, e.model()
            if e.fmt == "problem":
                old_deps = set(old.depends) if old is not None else set()
                if old is None or old_deps != set(new.depends):
                    targets |= old_deps | set(new.depends)
                    check.add(obj_id)
                if old is None:
                    targets.add(obj_id)
            if old is None or object_settled(old) != object_settled(new):
                settled_changed.append(obj_id)
        for t in sorted(targets, key=natural_key):
            o = self.obj(t, ("problem",))
            if o is None:
                continue
            want = tuple(sorted(self.dependants(t), key=natural_key))
            if want != tuple(o.depended_by):
                self.edit(t, ("problem",)).set_anchor("被依赖", dump_list(want))
                changes.append(f"{t}: 被依赖 {dump_list(want)}")
        for x in settled_changed:
            check |= self.dependants(x)
        for q in sorted(check, key=natural_key):
            o = self.obj(q, ("problem",))
            if o is None:
                continue
            st = self.waiting_status(o)
            if st:
                self.edit(q, ("problem",)).set_anchor("状态", st)
                changes.append(f"{q}: 状态 {o.status} → {st}")
        return changes

def run_op(kb: Union[KnowledgeBase, str, Path, None], op: str, summary: str,
           build: Callable[[Workspace], tuple[list[str], dict[str, Any]]], *,
           ids: Sequence[str] = (), target_id: str | None = None, no_commit: bool = False,
           owner: str | None = None, expect: Union[str, Mapping[str, str], None] = None,
           on_wait: Callable[[str], None] | None = None, sync: bool = True) -> OpResult:
    """Run ``build`` inside one transaction; it edits through the workspace.

    ``build(ws)`` returns ``(lines, data)``; derived fields are synced after
    it (``sync``), every changed card is staged and the transaction commits.
    ``expect`` is the blob id the caller read of ``target_id``'s card
    (compare-and-swap), or a mapping KB path -> blob id.

    Raises UsageError for ``expect`` on a create or not a blob id (an empty one too:
    :func:`kb.ops.result.expect_blob`), NotFoundError for an unknown ``target_id``,
    RefusedError when a card changed would hold values derived from another card's
    uncommitted changes (:meth:`Workspace.refuse_uncommitted`; not with ``no_commit``),
    and whatever ``build`` raises; every write also raises LockedError (another owner's lock),
    StaleError (``expect`` no longer matches), ConflictError (the file is dirty or HEAD moved)
    and EnvironmentError_ (git failed, the work tree is not writable); nothing is written then.
    """
    k = resolve_kb(kb)
    exp: dict[str, str] = {}
    if isinstance(expect, Mapping):
        exp = {path: expect_blob(blob) for path, blob in expect.items()}
    elif expect is not None:  # "" too: refused, never an unguarded write
        if target_id is None:
            raise UsageError("--expect applies to commands that edit an existing card; this "
                            "one creates a new card")
        expect = expect_blob(expect)
    tx = Transaction(k, op, summary=summary, no_commit=no_commit, owner=owner, expect=exp,
                     on_wait=on_wait)
    with tx:
        ws = Workspace(k, tx)
        try:
            if isinstance(expect, str):
                r = ws.row(target_id or "")
                if r is None:
                    raise NotFoundError(f"unknown ID {target_id!r}; " + ws.known_hint(CARD_KINDS))
                tx.expect[r.path] = expect
            lines, data = build(ws)
            if sync:
                derived = ws.sync_dependencies()
                if derived:
                    lines = lines + [f"  (derived) {c}" for c in derived]
                    data.setdefault("derived", derived)
            ws.refuse_uncommitted()
            ws.flush()
            tx.ids.extend(i for i in ids if i not in tx.ids)
        finally:
            ws.close()
    return OpResult.of(tx, op, target_id or (ids[0] if ids else None), lines, data)


class UncommittedCard(NamedTuple):
    """A problem or proposition card with uncommitted changes: its KB path, its object
    at HEAD and in the working tree (None where it is absent or not a card)."""

    path: str
    head: Any
    work: Any

    def depends_differ(self, target: str | None = None) -> bool:
        """Whether its ``依赖`` (as a problem's; none otherwise) differ between HEAD and the
        working tree: as a whole, or in naming ``target``."""
        was, now = _depends(self.head), _depends(self.work)
        return was != now if target is None else (target in was) != (target in now)

    def settled_differs(self) -> bool:
        """Whether it is settled on one side and not on the other (absent counts as settled,
        as an unknown dependency does)."""
        return _settled(self.head) != _settled(self.work)

    def what(self, changed: str) -> str:
        """``changed``, or what the card's state is when HEAD or the working tree lacks it."""
        if self.head is None:
            return "not committed yet"
        if self.work is None:
            return "removed, not committed"
        return changed


def _depends(o: Any) -> set[str]:
    return set(o.depends) if o is not None and o.kind == "problem" else set()


def _settled(o: Any) -> bool:
    return True if o is None else object_settled(o)


def uncommitted_cards(k: KnowledgeBase) -> dict[str, UncommittedCard]:
    """Card ID -> :class:`UncommittedCard` of every problem and proposition card whose
    file differs from HEAD (modified, staged, new, removed or moved; ``git status``
    over the two folders, then the few files parsed from both sides).

    The cards whose ``依赖`` and settled state the derived fields are computed from:
    a writer that commits refuses to derive them from such a card
    (:meth:`Workspace.refuse_uncommitted`, ``kb refresh``)."""
    folders = [k.repo_path(k.config.paths[key].strip("/")) for key in ("problems", "propositions")]
    rels = []
    for path in uncommitted(k.top, folders):
        rel = k.rel(path)
        if rel is not None and classify(rel, k.config) in ("problem", "proposition"):
            rels.append(rel)
    if not rels:
        return {}
    entries = head_entries(k.top, git.rev_parse("HEAD", k.top), [k.repo_path(r) for r in rels])
    blobs = {rel: oid for p, (mode, oid) in entries.items()
             if (rel := k.rel(p)) is not None and mode != "120000"}
    data = git.read_blobs(blobs.values(), k.top)
    heads = {rel: data[oid] for rel, oid in blobs.items() if oid in data}
    works, _outside = read_worktree(k, rels)

    def card(rel: str, raw: bytes | None) -> Any:
        if raw is None:
            return None
        objs = [o for o in parse_file(rel, raw, k.config).objects
                if o.kind in ("problem", "proposition")]
        return objs[0] if objs else None

    was: dict[str, tuple[str, Any]] = {}
    now: dict[str, tuple[str, Any]] = {}
    for rel in rels:  # a card moved is a removal and an addition: its ID joins them
        for side, raw in ((was, heads.get(rel)), (now, works.get(rel))):
            o = card(rel, raw)
            if o is not None:
                side.setdefault(o.id, (rel, o))
    out: dict[str, UncommittedCard] = {}
    for obj_id in [*now, *(i for i in was if i not in now)]:
        rel = (now.get(obj_id) or was[obj_id])[0]
        out[obj_id] = UncommittedCard(rel, was.get(obj_id, (rel, None))[1],
                                      now.get(obj_id, (rel, None))[1])
    return out


def check_depends(ws: Workspace, depends: Iterable[str], self_id: str) -> tuple[str, ...]:
    """The 依赖 list of ``self_id``: existing problems or propositions, once each, in order.

    Raises :class:`CardError` for a self-dependency or an unknown ID."""
    out: list[str] = []
    for d in depends:
        d = d.strip()
        if not d:
            continue
        if d == self_id:
            raise CardError(f"{self_id} cannot depend on itself")
        if ws.obj(d, ("problem", "proposition")) is None:
            raise CardError(f"dependency {d!r} is not a problem or proposition; "
                            + ws.known_hint(("problem", "proposition")))
        if d not in out:
            out.append(d)
    return tuple(out)


def check_free_id(ws: Workspace, obj_id: str) -> None:
    """Raise :class:`kb.errors.ConflictError` when ``obj_id`` is taken (indexed or new here),
    :class:`kb.errors.RefusedError` when the history had it (a card of that name deleted,
    or kb's commit trailers naming it: :func:`kb.ops.history.history_ids`) — IDs are never
    reused (DESIGN §4; ``kb verify --range`` would refuse the commit, KB307)."""
    rows = ws.rows(obj_id)
    if rows or obj_id in ws.by_id:
        where = f" ({ws.kb.prefix}{rows[0].path})" if rows else ""
        raise ConflictError(f"ID {obj_id!r} already exists{where}; choose another ID")
    from kb.ops.history import history_ids

    ids, deleted = history_ids(ws.kb)
    if obj_id in ids or obj_id in deleted:
        raise RefusedError(f"ID {obj_id!r} existed before and was removed (git history); IDs are "
                           "never reused — choose another ID (nothing was written)")


def proposition_categories(k: KnowledgeBase, idx: Any) -> list[str]:
    """Folders under Propos/ that hold propositions (indexed) or exist on disk, sorted."""
    cats = {PurePosixPath(path).parts[-2] for path in idx.proposition_paths()
            if len(PurePosixPath(path).parts) >= 2}
    base = k.root / k.config.paths["propositions"].strip("/")
    if base.is_dir():
        cats |= {p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")}
    return sorted(cats)


__all__ = ["Workspace", "run_op", "check_depends", "check_free_id", "proposition_categories",
           "UncommittedCard", "uncommitted_cards"]
