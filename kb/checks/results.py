"""The rules over one snapshot (and one change), with their results cached.

:func:`snapshot_diagnostics` runs the parse checks, the per-file rules and
the cross-file rules (KB2xx) of a snapshot; :func:`history_diagnostics` the
history rules (KB3xx) of a change; :func:`split_introduced` tells the errors
a change introduces from those its base already had.

Results are kept in the index (:mod:`kb.index_results`): per-file rule
results by blob, and the results of a whole snapshot under a hash of its
``{path: blob}`` map. A snapshot that differs from a stored one only in
files whose index facts (the objects' JSON and the links) are identical on
both sides -- prose appended to an experiment, a card's free sections --
inherits the stored cross-file results; only its changed files' parse and
per-file results are read, and the "volatile" rules (the dashboard, which
reads file bytes) run again. The common pre-commit check then costs what
its change costs.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Optional

from kb import index_facts, index_results
from kb.digests import file_digests
from kb.checks.diagnostics import LightDiagnostic as _D
from kb.checks.diagnostics import fix_of

#: Formats the per-file rules read (the others have none).
_RULED = ("tree", "experiment", "problem", "proposition", "method", "verified")


def prepare_cache(index: Any) -> bool:
    """Make the index's results tables usable for kb's current rules (results of other
    rules are dropped). Takes a :class:`kb.index.Index`; False when they cannot be
    used (everything is then computed and nothing stored)."""
    from kb.checks.registry import rules_fingerprint

    return index_results.prepare(index, rules_fingerprint())


def file_rule_results(facts: Any, paths: Optional[list[str]] = None) -> list[_D]:
    """Per-file rule diagnostics of every file of ``facts`` (a :class:`kb.checks.facts.Facts`),
    or of ``paths``: read from the index, or computed (then stored there).

    Returns diagnostics with the catalogue's severities (config not applied).
    Raises :class:`kb.errors.EnvironmentError_` when the index cannot be read.
    """
    from kb.checks.facts import FileFacts
    from kb.checks.registry import FILE_RULES

    index = facts.index
    files, formats = facts.files, facts.formats
    scope = list(files) if paths is None else [p for p in paths if p in files]
    big = facts.table() if len(scope) > 64 else None
    cached = prepare_cache(index)
    missing = index_results.unchecked(index, files, scope, big) if cached else scope
    todo = [p for p in missing if formats.get(p) in _RULED]
    fresh: list[tuple] = []
    out: list[_D] = []
    keep = facts.config.paths["tree"]
    for p in todo:
        ff = FileFacts(facts, p, formats[p])
        for rule in FILE_RULES:
            for d in rule.func(ff):
                x = _D.of(d)
                out.append(x)
                fresh.append((p, files[p], x.line, x.col, x.code, x.severity, x.message, x.fix_json()))
        if p != keep:  # a cold sweep of a large KB must not hold every file's objects
            facts.forget(p)
    if cached and todo:
        index_results.store_file_results(index, [(p, files[p]) for p in todo], fresh)
    if cached:
        todo_set = set(todo)
        in_scope = set(scope)
        seen = set()
        for p, b, ln, col, code, sev, msg, fx in index_results.file_results(index, files, scope, big):
            if p in todo_set or p not in in_scope or files.get(p) != b or (p, ln, col, code, msg) in seen:
                continue
            seen.add((p, ln, col, code, msg))
            out.append(_D(p, ln, col, code, sev, msg, fix_of(fx)))
    return out


def snapshot_key(facts: Any) -> str:
    """The key a snapshot's results are stored under: ``snap:`` and a SHA-1 of its
    ``{path: blob}`` map (:func:`file_digests`) and of what else the rules read (the
    registry's key parts)."""
    key = facts.results_key
    if key is None:
        import hashlib

        from kb.checks.registry import KEY_PARTS, load_rules

        load_rules()
        digest = hashlib.sha1(b"".join(file_digests(facts.snap)[1]))
        rest = "".join("\n\1" + part(facts) for part in KEY_PARTS) + "\n\2" + _RESULTS_LAYOUT
        # Messages name repository paths (KB202's "at sub/tree.md:3"): a KB moved to another
        # folder keeps its .kb/ cache, not its results.
        rest += "\n\3" + facts.kb.prefix
        digest.update(rest.encode("utf-8", "surrogateescape"))
        key = "snap:" + digest.hexdigest()
        facts.results_key = key
    return key


def _load_results(facts: Any, key: str) -> Optional[list[tuple[str, _D]]]:
    # Used again: kept among the most recent (HEAD's results are the base of every
    # pre-commit check; evicted, every check would redo the whole KB).
    raw = index_results.get(facts.index, key, touch=True)
    if raw is None:
        return None
    out = []
    for origin, p, ln, col, code, sev, msg, fx in json.loads(raw):
        out.append((origin, _D(p, ln, col, code, sev, msg, tuple(fx) if fx else None)))
    return out


def _store_results(facts: Any, key: str, results: list[tuple[str, _D]]) -> None:
    """Store the results of a snapshot (the few most recently stored or used are kept)."""
    data = json.dumps([[o, *d] for o, d in results], ensure_ascii=False)
    index_results.put_snapshot(facts.index, key, data)


#: Version of the stored snapshot results' layout (part of their key): origins name
#: each cross-file rule (``x`` and its first code); 3: messages name repository paths.
_RESULTS_LAYOUT = "3"


def _origin(rule: Any) -> str:
    """The origin tag of a stable cross-file rule's results: ``x`` and its first code."""
    return "x" + rule.codes[0]


def _changed(facts: Any, src: Any) -> list[str]:
    """Paths whose blob differs between two snapshots (either side may lack them)."""
    from kb.repo import differing_paths

    near = differing_paths(facts.snap, src.snap)  # one derived from the other: few to compare
    if near is not None:
        return sorted(near)
    # the symmetric difference of the (path, blob) pairs, computed by the dict views
    return sorted({p for p, _blob in facts.files.items() ^ src.files.items()})


class _SameReads:
    """Whether the changed files read the same on both sides for a rule declaring
    ``reads`` (:data:`kb.checks.registry.READS`); each comparison is made once."""

    def __init__(self, facts: Any, src: Any, changed: list[str]) -> None:
        self.facts, self.src, self.changed = facts, src, changed
        self._memo: dict[Any, bool] = {}

    def __call__(self, reads: Optional[str]) -> bool:
        if reads not in self._memo:
            self._memo[reads] = self._same(reads)
        return self._memo[reads]

    def _same(self, reads: Optional[str]) -> bool:
        facts, src = self.facts, self.src
        for p in self.changed:
            a, b = facts.files.get(p), src.files.get(p)
            if a is None or b is None or facts.formats.get(p) != src.formats.get(p):
                return False
        if reads == "paths":
            return True
        if reads is None:
            return neutral(facts, src, self.changed)
        index = facts.index
        for p in self.changed:
            a, b = facts.files[p], src.files[p]
            if _rows(index, p, a) != _rows(index, p, b):
                return False
            if reads in ("refs", "fixes") and (_refs(index, p, a) != _refs(index, p, b)):
                return False
        return True


def _fix_lines_hold(facts: Any, diags: list[_D], changed: set[str]) -> bool:
    """Whether every line that ``diags`` (a rule's stored results) would fix in a changed
    file still reads as it did (what a ``reads="fixes"`` rule reads of file text); a
    diagnostic without a fix in a changed file: False (its rule runs again)."""
    mine = [d for d in diags if d.path in changed]
    if not mine:
        return True
    if any(d.fix is None for d in mine):
        return False
    texts = facts.read_many(sorted({d.path for d in mine}))
    for d in mine:
        data = texts.get(d.path)
        if data is None:
            return False
        lines = data.decode("utf-8", "replace").lstrip("\ufeff").split("\n")
        ln, old, _new = d.fix
        if not 1 <= ln <= len(lines) or lines[ln - 1].rstrip("\r") != old:
            return False
    return True


def _rows(index: Any, path: str, blob: str) -> set[tuple]:
    """(id, kind, status, line) of the objects of one file version."""
    return {(i, k, s, ln) for i, k, s, _p, ln, _b in index_facts.version_objects(index, path, blob)}


def _refs(index: Any, path: str, blob: str) -> tuple[set, set]:
    """The links of one file version and the anchor lines of each of its objects."""
    from kb.checks.facts import XREF_LINKS

    links = set(index_facts.version_links(index, path, blob, XREF_LINKS))
    anchors = {(r.id, r.kind, r.line, json.dumps(json.loads(r.data).get("anchor_lines"), sort_keys=True))
               for r in index.rows_of(path, blob)}
    return links, anchors


def neutral(facts: Any, base: Any, changed: list[str]) -> bool:
    """True when every changed path has the same objects (JSON) and links on both sides
    (``facts`` and ``base``: :class:`kb.checks.facts.Facts` of one index)."""
    for p in changed:
        a, b = facts.files.get(p), base.files.get(p)
        if a is None or b is None or facts.formats.get(p) != base.formats.get(p):
            return False
        if not index_facts.same_facts(facts.index, p, a, b):
            return False
    return True


def _parse_rows(facts: Any, paths: Optional[list[str]] = None) -> list[_D]:
    return [_D(p, ln, col, code, sev, msg, fix_of(fx))
            for p, ln, col, code, sev, msg, fx in facts.parse_diagnostics(paths)]


#: The part of :func:`scoped_parts` that is not a snapshot rule: parse and per-file results.
FILE_PART = ""


def _scoped_key(facts: Any, file_scope: set[str]) -> str:
    import hashlib

    body = "\n".join(sorted(file_scope)).encode("utf-8", "surrogateescape")
    return snapshot_key(facts) + ":files:" + hashlib.sha1(body).hexdigest()


def scoped_stored(facts: Any, file_scope: set[str]) -> Optional[list[tuple[str, _D]]]:
    """The stored ``(origin, diagnostic)`` results of a snapshot checked with its
    per-file rules limited to ``file_scope`` (:func:`_raw_snapshot`): the whole
    snapshot's, in scope, or those of a check with that scope; None when neither is."""
    prepare_cache(facts.index)
    full = _load_results(facts, snapshot_key(facts))
    if full is not None:  # the whole snapshot was checked: its results, in scope
        return [(o, d) for o, d in full if o != "f" or d.path in file_scope]
    return _load_results(facts, _scoped_key(facts, file_scope))


def scoped_parts(facts: Any, file_scope: set[str], parts: Optional[set[str]] = None,
                 without: frozenset[str] = frozenset()) -> dict[str, list[tuple[str, _D]]]:
    """The ``(origin, diagnostic)`` results of a scoped check (see :func:`scoped_stored`)
    by part, computed, not stored: :data:`FILE_PART` (the parse and per-file results
    of ``file_scope``) and each enabled snapshot rule, by its
    :attr:`~kb.checks.registry.Registered.name`. ``parts`` (None: every part) names
    those to compute, ``without`` those to leave out. The parts are independent:
    two processes may share them out (:func:`kb.checks.verify_range._at_once`) and
    :func:`store_scoped` join them."""
    from kb.checks.registry import SNAPSHOT_RULES, enabled, load_rules

    load_rules()

    def wanted(name: str) -> bool:
        return (parts is None or name in parts) and name not in without

    out: dict[str, list[tuple[str, _D]]] = {}
    if wanted(FILE_PART):
        out[FILE_PART] = [("p", d) for d in _parse_rows(facts)]
        out[FILE_PART] += [("f", d) for d in file_rule_results(facts, sorted(file_scope))]
    for rule in SNAPSHOT_RULES:
        if enabled(rule, facts.config) and wanted(rule.name):
            tag = "v" if rule.volatile else _origin(rule)
            out[rule.name] = [(tag, _D.of(d)) for d in rule.func(facts)]
    return out


def store_scoped(facts: Any, file_scope: set[str],
                 parts: dict[str, list[tuple[str, _D]]]) -> list[tuple[str, _D]]:
    """Every part of a scoped check (:func:`scoped_parts`), joined in the rules' order,
    stored for :func:`scoped_stored`; returns the joined results."""
    from kb.checks.registry import SNAPSHOT_RULES

    out = list(parts.get(FILE_PART, []))
    for rule in SNAPSHOT_RULES:
        out += parts.get(rule.name, [])
    _store_results(facts, _scoped_key(facts, file_scope), out)
    return out


def _raw_snapshot(facts: Any, base: Optional[Any],
                  earlier: Optional[Any] = None,
                  file_scope: Optional[set[str]] = None) -> list[tuple[str, _D]]:
    """(origin, diagnostic) of every snapshot rule: origin ``p`` parse, ``f`` per-file
    rule, ``x`` and its first code a cross-file rule, ``v`` volatile cross-file rule. ``file_scope``: the
    per-file rules run on those paths only (the whole snapshot's stored results are
    used when there, filtered; partial results are stored under their own key)."""
    from kb.checks.registry import SNAPSHOT_RULES, enabled, load_rules

    load_rules()
    cfg = facts.config
    prepare_cache(facts.index)
    if file_scope is not None:
        hit = scoped_stored(facts, file_scope)
        if hit is not None:
            return hit
        return store_scoped(facts, file_scope, scoped_parts(facts, file_scope))
    key = snapshot_key(facts)
    hit = _load_results(facts, key)
    if hit is not None:
        return hit
    volatile = [r for r in SNAPSHOT_RULES if r.volatile and enabled(r, cfg)]
    stable = [r for r in SNAPSHOT_RULES if not r.volatile and enabled(r, cfg)]
    inherited = None
    src, prev = base, None
    if base is not None:
        prev = _load_results(base, snapshot_key(base))
        if prev is None and earlier is not None:
            # The base was never checked (a pull, a merge, a --no-verify commit): the
            # state checked before it may be, and differ from this one only in prose.
            src = earlier()
            prev = _load_results(src, snapshot_key(src)) if src is not None else None
    if src is not None and prev is not None:
        changed = _changed(facts, src)
        if src.config == cfg:
            # Parse and per-file results depend only on the path, the blob and the
            # config: the unchanged files' are the stored ones.
            cset = set(changed)
            # the volatile rules may start from it too (KB240's latest experiment date)
            facts.checked_base = (src, changed)
            inherited = [(o, d) for o, d in prev if o in ("p", "f") and d.path not in cset]
            inherited += [("p", d) for d in _parse_rows(facts, changed)]
            inherited += [("f", d) for d in file_rule_results(facts, changed)]
            same = _SameReads(facts, src, changed)
            everything = same(None)  # same objects and links: every rule reads the same
            for rule in stable:
                tag = _origin(rule)
                mine = [d for o, d in prev if o == tag]
                if ((everything or same(rule.reads))
                        and (rule.reads != "fixes" or _fix_lines_hold(facts, mine, cset))):
                    inherited.extend((tag, d) for d in mine)  # it reads what it read in src
                else:
                    inherited.extend((tag, _D.of(d)) for d in rule.func(facts))
    if inherited is not None:
        out = inherited
    else:
        out = [("p", d) for d in _parse_rows(facts)]
        out += [("f", d) for d in file_rule_results(facts)]
        for rule in stable:
            out.extend((_origin(rule), _D.of(d)) for d in rule.func(facts))
    for rule in volatile:
        out.extend(("v", _D.of(d)) for d in rule.func(facts))
    _store_results(facts, key, out)
    return out


def snapshot_diagnostics(facts: Any, base: Optional[Any] = None,
                         earlier: Optional[Any] = None,
                         file_scope: Optional[set[str]] = None,
                         raw: Optional[list[tuple[str, _D]]] = None) -> list[_D]:
    """Every snapshot diagnostic of ``facts`` (parse + KB2xx), config severities applied.

    ``base`` is a snapshot whose stored results may be inherited (see above);
    ``earlier`` (a callable returning Facts or None) offers another one when
    the base's results are not stored. ``file_scope`` limits the per-file rules
    to those paths (a range check: the others are unchanged since its origin).
    ``raw``, when given, is what :func:`_raw_snapshot` would return, computed
    already (:func:`store_scoped`).
    """
    from kb.checks.catalogue import effective_severity

    cfg = facts.config
    out = []
    if raw is None:
        raw = _raw_snapshot(facts, base, earlier, file_scope)
    # a conflicted (KB190) or undecodable (KB101) file is read as empty
    conflicted = {facts.formats.get(d.path) for _, d in raw if d.code in ("KB190", "KB101")}
    if conflicted:
        # A conflicted file is read as empty: what follows from that (a stale
        # dashboard, references to the objects it would declare) is noise until
        # the conflict is resolved.
        noise = {"KB240"} | {code for fmt in conflicted for code in _FOLLOW_ONS.get(fmt, ())}
        raw = [(k, d) for k, d in raw if d.code not in noise]
    for _, d in raw:
        sev = effective_severity(d.code, d.severity, cfg)
        if sev is not None:
            out.append(d if sev == d.severity else d._replace(severity=sev))
    return out


#: Format of a conflicted file -> the missing-reference codes that only say "its objects
#: are not read" (KB211 a tested hypothesis, KB210 evidence, KB212/KB214 cards).
_FOLLOW_ONS = {"tree": ("KB211",), "experiment": ("KB210",),
               **{f: ("KB212", "KB214") for f in ("problem", "proposition", "method", "verified")}}


def history_diagnostics(change: Any) -> list[_D]:
    """Every history diagnostic of ``change`` (config severities applied)."""
    from kb.checks.catalogue import effective_severity
    from kb.checks.registry import HISTORY_RULES, enabled, load_rules

    load_rules()
    cfg = change.config
    out = []
    # A file with conflict markers is one KB190 (kb.merge.markers), an undecodable
    # one one KB101, each read as empty: the objects it seems to lose are not
    # reported as removed.
    conflicted = {p for p in change.paths if p in change.new.files
                  and (change.new.meta(p).get("conflict") or change.new.meta(p).get("unreadable"))}
    for rule in HISTORY_RULES:
        if rule.modes is not None and change.mode not in rule.modes:
            continue
        if not enabled(rule, cfg):
            continue
        for d in rule.func(change):
            x = _D.of(d)
            if x.path in conflicted:
                continue
            if x.severity == "info":  # accepted by an override: never raised by config
                out.append(x)
                continue
            sev = effective_severity(x.code, x.severity, cfg)
            if sev is not None:
                out.append(x if sev == x.severity else x._replace(severity=sev))
    return out


_LOCATIONS = re.compile(r"(?<=\.md):\d+|\blines? \d+(?:(?:, | and )\d+)*")


def _key(d: _D) -> tuple[str, str, str]:
    """Identity of a diagnostic across two snapshots (line numbers left out)."""
    return (d.code, d.path, _LOCATIONS.sub("", d.message))


def split_introduced(new: list[_D], base: list[_D]) -> tuple[list[_D], list[_D]]:
    """(introduced, pre-existing) errors of ``new`` compared with ``base``."""
    budget = Counter(_key(d) for d in base if d.severity == "error")
    introduced, pre = [], []
    for d in new:
        if d.severity != "error":
            continue
        k = _key(d)
        if budget[k] > 0:
            budget[k] -= 1
            pre.append(d)
        else:
            introduced.append(d)
    return introduced, pre
