"""Whether a regex written in kb.toml can backtrack catastrophically.

Python's ``re`` is a backtracking matcher: when a match fails, it tries every way the
pattern could have read the text. A repetition whose body can read the same text in
more than one way (``(H+)+``, ``(H|H)*``, ``(\\d+)*``) has exponentially many ways
to read a long run of that text, so one long heading makes the match run for hours.
kb compiles ``[kb] id_grammar`` into its declaration regexes (``kb.parse.tree``:
the ID, then spaces and a separator that a failing heading does not hold) and a
``[[registry]] heading`` as it is (``kb.parse.card``), and matches them against every
heading line, in ``kb index``, the hooks and CI; kb.config refuses such a pattern when it
reads kb.toml.

The test is the classic one for exponential ambiguity (Weber and Seidl): build the
pattern's position (Glushkov) automaton, counting the ways each transition arises
(in ``(H+)+`` an ``H`` follows an ``H`` by the inner loop and by the outer one), and
look, in the product of the automaton with itself, for a state that returns to itself
along two different paths reading the same text. Embedding the pattern in kb's
larger regexes adds no such loop (what kb puts around it repeats single characters
only), so the pattern is judged alone.

The pattern is parsed by Python's own parser, a private module: where it is missing
nothing is checked, never a crash. The model errs towards refusing: lookarounds and
anchors read as empty, a backreference as its group, an atomic group or a possessive
repeat as an ordinary one, a repeat of more than :data:`UNROLL` as unbounded. Two
character classes overlap when some character of a sample (ASCII and Latin-1, the
characters the pattern names and a few of other scripts) is in both.

Polynomial backtracking (:func:`polynomial_backtracking`) is the weaker kind: two
repetitions one after the other (or with only optional parts between them) whose
characters overlap (``H+H+H+Z``, ``\\d+\\.?\\d+``, ``\\w+\\d+``) can split a run of
``n`` characters between them in about ``n**2`` ways, ``n**3`` for three, so a heading of
a few thousand characters takes seconds to minutes. The test is Weber and Seidl's for
infinite ambiguity: two positions ``p`` and ``q`` and a text ``v`` that leads from ``p``
back to ``p``, from ``p`` to ``q`` and from ``q`` back to ``q``, searched in the product of
the automaton with itself three times (the same ``v`` on three paths). Once no loop reads
a text two ways (the exponential test found nothing), ``p`` and ``q`` lie on two
different loops, one reachable from the other. Here too the pattern is judged alone: the
``[ \\t]*`` kb puts after an ID makes a grammar ending in a repetition that reads spaces
(``[^:]+``) quadratic on a heading of spaces, a cost of kb's own pattern.
"""

from __future__ import annotations

import re
import warnings
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Optional

from kb.research.dependencies import strongly_connected

_sre: Any
try:  # the parser behind re.compile: re._parser from Python 3.11, sre_parse before
    from re import _parser as _sre  # type: ignore[attr-defined, no-redef]
except ImportError:  # pragma: no cover - Python 3.10
    try:
        import sre_parse as _sre  # type: ignore[no-redef]
    except ImportError:
        _sre = None

#: A repeat of at most this many is unrolled (``\d{4}``); a larger one is read as
#: unbounded, which can only add ways of reading a text.
UNROLL = 10
#: Positions unrolling may create; past it a bounded repeat is read as unbounded.
_MAX_POSITIONS = 400
#: Pairs of states explored before the pattern counts as too large to check.
_MAX_PAIRS = 50_000

_CATEGORIES = {"CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
               "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W"}
#: The flags that change which characters a one-character class reads.
_CLASS_FLAGS = re.IGNORECASE | re.DOTALL | re.ASCII
#: Printable ASCII first, so that the text a refusal shows reads well.
_BASE_SAMPLE = "".join(map(chr, range(0x20, 0x7f))) + "".join(map(chr, range(0x20))) \
    + "".join(map(chr, range(0x7f, 0x250)))
_OTHER_SCRIPTS = ("\u00a0\u2003\u3000\u200b\u0663\u0967\uff10\u4e2d\u0436\u03a9\u3042\uff1a"
                  "\u2014\u3002\u212a\u017f\U0001f600\uffff")

#: Anchors that hold at the start or the end of a line only: after a repetition that reads
#: the rest of the line they cannot refuse it.
_LINE_ANCHORS = ("AT_BEGINNING", "AT_BEGINNING_STRING", "AT_END", "AT_END_STRING")

Pair = tuple[int, int]
Triple = tuple[int, int, int]


@dataclass(frozen=True)
class Backtracking:
    """Why a regex can backtrack catastrophically: a repetition in it reads ``text`` in
    more than one way, and each further ``unit`` after it doubles the ways. Both are
    empty when the regex is too large to check (it is refused all the same)."""

    text: str
    unit: str


class _Unsupported(Exception):
    """A parse tree of a shape this module does not know (a newer Python's): no verdict."""


@dataclass
class _Frag:
    """A piece of the pattern in the automaton: the ways it reads the empty text (capped
    at 2: "several"), and the positions reading its first and last character, each with
    the number of ways it does."""

    empty: int
    first: dict[int, int]
    last: dict[int, int]


def _cap(n: int) -> int:
    # One way or several is all the test asks.
    return min(n, 2)


def _merge(*counts: tuple[dict[int, int], int]) -> dict[int, int]:
    """The sum of position counts, each scaled by its factor."""
    out: dict[int, int] = {}
    for ways, factor in counts:
        for pos, n in ways.items():
            out[pos] = _cap(out.get(pos, 0) + n * factor)
    return {pos: n for pos, n in out.items() if n}


@dataclass
class _Automaton:
    """The position automaton being built: each position's one-character regex and
    flags, the ways each position follows another, the positions a text starts with."""

    classes: list[tuple[str, int]] = field(default_factory=list)
    follow: list[dict[int, int]] = field(default_factory=list)
    starts: dict[int, int] = field(default_factory=dict)
    named: set[int] = field(default_factory=set)  # code points the pattern names
    #: the pattern holds a lookaround, a word boundary or a backreference: something the
    #: automaton reads as empty that can still refuse a text
    guarded: bool = False
    #: the positions a match can end with
    ends: dict[int, int] = field(default_factory=dict)

    def position(self, regex: str, flags: int) -> _Frag:
        self.classes.append((regex, flags))
        self.follow.append({})
        pos = len(self.classes) - 1
        return _Frag(0, {pos: 1}, {pos: 1})

    def link(self, last: dict[int, int], first: dict[int, int]) -> None:
        for p, m in last.items():
            for q, n in first.items():
                self.follow[p][q] = _cap(self.follow[p].get(q, 0) + m * n)


class _Builder:
    """Walks Python's parse tree of a pattern into an :class:`_Automaton`."""

    def __init__(self) -> None:
        self.aut = _Automaton()
        self.groups: dict[int, tuple[Any, int]] = {}

    def seq(self, nodes: Any, flags: int) -> _Frag:
        out = _Frag(1, {}, {})
        for op, av in nodes:
            out = self.concat(out, self.node(getattr(op, "name", ""), av, flags))
        return out

    def concat(self, a: _Frag, b: _Frag) -> _Frag:
        self.aut.link(a.last, b.first)
        return _Frag(_cap(a.empty * b.empty), _merge((a.first, 1), (b.first, a.empty)),
                     _merge((b.last, 1), (a.last, b.empty)))

    def node(self, name: str, av: Any, flags: int) -> _Frag:
        if name in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            return self.atom(name, av, flags)
        if name == "SUBPATTERN":
            group, add, drop, body = av
            inner = (flags | add) & ~drop
            frag = self.seq(body, inner)
            if group is not None:
                self.groups[group] = (body, inner)
            return frag
        if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            return self.repeat(av[0], av[1], av[2], flags)
        if name == "BRANCH":
            return _union([self.seq(b, flags) for b in av[1]])
        return self.other(name, av, flags)

    def other(self, name: str, av: Any, flags: int) -> _Frag:
        if name == "ATOMIC_GROUP":  # read as an ordinary group: it can only refuse more
            return self.seq(av, flags)
        if name == "AT":
            self.aut.guarded |= getattr(av, "name", "") not in _LINE_ANCHORS
            return _Frag(1, {}, {})
        self.aut.guarded |= name in ("ASSERT", "ASSERT_NOT", "GROUPREF", "GROUPREF_EXISTS")
        if name in ("ASSERT", "ASSERT_NOT"):
            # A lookaround is matched on its own: its automaton joins this one, unlinked.
            inner = self.seq(av[1], flags)
            self.aut.starts = _merge((self.aut.starts, 1), (inner.first, 1))
            return _Frag(1, {}, {})
        if name == "GROUPREF":  # reads a text its group read: read as the group
            body, inner_flags = self.groups[av]
            return self.seq(body, inner_flags)
        if name == "GROUPREF_EXISTS":
            _, yes, no = av
            return _union([self.seq(yes, flags), self.seq(no, flags) if no else _Frag(1, {}, {})])
        raise _Unsupported(name)

    def atom(self, name: str, av: Any, flags: int) -> _Frag:
        regex, points = _class_regex(name, av)
        self.aut.named.update(points)
        return self.aut.position(regex, flags & _CLASS_FLAGS)

    def repeat(self, lo: int, hi: int, body: Any, flags: int) -> _Frag:
        if hi == 0:
            return _Frag(1, {}, {})
        before = len(self.aut.classes)
        one = self.seq(body, flags)
        size = len(self.aut.classes) - before
        bounded = hi <= UNROLL
        # Unbounded: B{3,} as B B B*, so that a shown text repeats B as often as it must.
        copies = hi if bounded else min(lo, UNROLL) + 1
        if not bounded and lo <= 1 or len(self.aut.classes) + size * (copies - 1) > _MAX_POSITIONS:
            return self.loop(one, lo)
        frags = [one] + [self.seq(body, flags) for _ in range(copies - 1)]
        if bounded:
            return self.unrolled(frags, lo)
        out = _Frag(1, {}, {})
        for f in frags[:-1]:
            out = self.concat(out, f)
        return self.concat(out, self.loop(frags[-1], 0))

    def loop(self, one: _Frag, lo: int) -> _Frag:
        # An iteration reading nothing ends Python's loop, so the body's own ways of
        # reading nothing add no path: zero iterations is the one way (lo 0).
        self.aut.link(one.last, one.first)
        return _Frag(1 if lo == 0 else one.empty, one.first, one.last)

    def unrolled(self, copies: list[_Frag], lo: int) -> _Frag:
        # B{1,3} as B(B(B)?)?, one way per count, as Python tries them; not B B? B?,
        # which would read "BB" in two ways that Python does not have.
        tail: Optional[_Frag] = None
        for c in reversed(copies[lo:]):
            inner = c if tail is None else self.concat(c, tail)
            tail = _Frag(_cap(inner.empty + 1), inner.first, inner.last)
        out = _Frag(1, {}, {})
        for c in copies[:lo] + ([tail] if tail is not None else []):
            out = self.concat(out, c)
        return out


def _union(frags: list[_Frag]) -> _Frag:
    return _Frag(_cap(sum(f.empty for f in frags)), _merge(*((f.first, 1) for f in frags)),
                 _merge(*((f.last, 1) for f in frags)))


def _class_regex(name: str, av: Any) -> tuple[str, list[int]]:
    """A regex reading the one character an atom reads, and the code points it names."""
    if name == "ANY":
        return ".", []
    if name in ("LITERAL", "NOT_LITERAL"):
        return ("[^" if name == "NOT_LITERAL" else "[") + f"\\U{av:08x}]", [av]
    parts: list[str] = []
    points: list[int] = []
    for op, x in av:
        kind = getattr(op, "name", "")
        if kind == "NEGATE":
            parts.append("^")
        elif kind == "LITERAL":
            parts.append(f"\\U{x:08x}")
            points.append(x)
        elif kind == "RANGE":
            parts.append(f"\\U{x[0]:08x}-\\U{x[1]:08x}")
            points += [x[0] - 1, x[0], x[1], x[1] + 1]  # each side of the range's ends
        elif kind == "CATEGORY" and getattr(x, "name", "") in _CATEGORIES:
            parts.append(_CATEGORIES[x.name])
        else:
            raise _Unsupported(kind)
    return "[" + "".join(parts) + "]", points


def _sample(named: set[int]) -> str:
    """The characters classes are tried on: the base sample, the characters the pattern
    names with their other cases, and a few of other scripts."""
    chars = [chr(p) for p in sorted(named) if 0 <= p <= 0x10FFFF]
    cased = [v for c in chars for v in (c.lower(), c.upper(), c.casefold()) if len(v) == 1]
    return "".join(dict.fromkeys(_BASE_SAMPLE + "".join(chars + cased) + _OTHER_SCRIPTS))


def _bits(aut: _Automaton, sample: str) -> list[int]:
    """Each position's characters of ``sample``, as a bit set (bit i: ``sample[i]``)."""
    known: dict[tuple[str, int], int] = {}
    for cls in aut.classes:
        if cls not in known:
            found = re.compile(cls[0], cls[1]).finditer(sample)
            known[cls] = sum(1 << m.start() for m in found)
    return [known[cls] for cls in aut.classes]


def _loops(aut: _Automaton) -> list[int]:
    """Each position's loop: the number of the strongly connected part of the automaton
    holding it when that part has a cycle, else -1. Two paths that part and meet again
    stay inside one such part, so the search looks nowhere else."""
    graph = {str(p): [str(q) for q in follow] for p, follow in enumerate(aut.follow)}
    out = [-1] * len(aut.follow)
    for n, comp in enumerate(strongly_connected(graph)):
        if len(comp) > 1 or int(comp[0]) in aut.follow[int(comp[0])]:
            for p in comp:
                out[int(p)] = n
    return out


def _product(aut: _Automaton, bits: list[int]) -> Optional[dict[Pair, list[Pair]]]:
    """The pairs of positions of one loop reachable from a position paired with itself by
    reading the same text, with their successors; None when there are more than _MAX_PAIRS."""
    loop = _loops(aut)
    graph: dict[Pair, list[Pair]] = {}
    todo = [(q, q) for q in range(len(bits)) if loop[q] >= 0]
    while todo:
        pair = todo.pop()
        if pair in graph:
            continue
        if len(graph) >= _MAX_PAIRS:
            return None
        succ = [(q, s) for q in aut.follow[pair[0]] for s in aut.follow[pair[1]]
                if loop[q] == loop[s] == loop[pair[0]] and bits[q] & bits[s]]
        graph[pair] = succ
        todo.extend(x for x in succ if x not in graph)
    return graph


def _split(aut: _Automaton, graph: dict[Pair, list[Pair]], comp: set[Pair]) -> Optional[tuple[Pair, Pair]]:
    """In the component ``comp``, a step ``(a, b)`` where two paths part: into a pair of two
    positions, or along a transition that arises in more than one way; None if none."""
    for a in comp:
        for b in graph[a]:
            if b in comp and (b[0] != b[1] or a[0] == a[1] and aut.follow[a[0]][b[0]] > 1):
                return a, b
    return None


def _path(graph: dict[Pair, list[Pair]], comp: set[Pair], start: Pair, goal: Pair) -> list[Pair]:
    """The pairs after ``start`` on a shortest path to ``goal`` inside ``comp``."""
    back: dict[Pair, Pair] = {start: start}
    todo = deque([start])
    while todo and goal not in back:
        node = todo.popleft()
        for nxt in graph[node]:
            if nxt in comp and nxt not in back:
                back[nxt] = node
                todo.append(nxt)
    out: list[Pair] = []
    while goal != start:
        out.append(goal)
        goal = back[goal]
    return out[::-1]


def _char(sample: str, bits: int) -> str:
    return sample[(bits & -bits).bit_length() - 1]


def _prefix(aut: _Automaton, bits: list[int], sample: str, goal: int) -> str:
    """A shortest text from the pattern's start to position ``goal`` (goal included)."""
    back: dict[int, Optional[int]] = {p: None for p in aut.starts if bits[p]}
    todo = deque(back)
    while todo and goal not in back:
        p = todo.popleft()
        for q in aut.follow[p]:
            if q not in back and bits[q]:
                back[q] = p
                todo.append(q)
    text = ""
    at: Optional[int] = goal if goal in back else None
    while at is not None:
        text = _char(sample, bits[at]) + text
        at = back[at]
    return text


def _witness(aut: _Automaton, graph: dict[Pair, list[Pair]], bits: list[int],
             sample: str) -> Optional[Backtracking]:
    """The text of a loop read in two ways, when the automaton has one."""
    nodes = {f"{p} {q}": (p, q) for p, q in graph}
    for names in strongly_connected({k: [f"{a} {b}" for a, b in graph[v]] for k, v in nodes.items()}):
        comp = {nodes[n] for n in names}
        home = next((x for x in comp if x[0] == x[1]), None)
        step = _split(aut, graph, comp) if home is not None else None
        if home is None or step is None:
            continue
        loop = _path(graph, comp, home, step[0]) + [step[1]] + _path(graph, comp, step[1], home)
        unit = "".join(_char(sample, bits[p] & bits[q]) for p, q in loop)
        return Backtracking(text=_prefix(aut, bits, sample, home[0]) + unit, unit=unit)
    return None


def group_may_be_empty(pattern: str, name: str) -> bool:
    """Whether some match of ``pattern`` (a regex that compiles, with a group ``name``)
    leaves that group empty or unset: the group reads no character on some path
    (``(?P<id>\\S*)``, ``(?P<id>H\\d+|)``), or some path skips it (``(?:(?P<id>\\S+) )?``,
    an alternative without it). False when this Python's parser is not one this module
    reads (nothing is checked then, as for :func:`catastrophic_backtracking`)."""
    if _sre is None:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = _sre.parse(pattern)
        return not _reads_group(parsed, parsed.state.groupdict[name])
    except (RecursionError, re.error, AttributeError, KeyError, TypeError, ValueError, IndexError):
        return False


def _reads_group(nodes: Any, group: int) -> bool:
    """Whether every match of the parsed sequence ``nodes`` sets ``group`` to a text of
    at least one character (its last setting, where a repeat sets it more than once)."""
    for op, av in nodes:
        name = getattr(op, "name", "")
        if name == "SUBPATTERN":
            if av[0] == group:
                if av[3].getwidth()[0] > 0:
                    return True
            elif _reads_group(av[3], group):
                return True
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            if av[0] >= 1 and _reads_group(av[2], group):
                return True
        elif name == "BRANCH":
            if all(_reads_group(b, group) for b in av[1]):
                return True
        elif name == "ATOMIC_GROUP":
            if _reads_group(av, group):
                return True
        elif name == "ASSERT":  # a lookaround that matched set its groups
            if _reads_group(av[1], group):
                return True
        elif name == "GROUPREF_EXISTS":
            if av[2] is not None and _reads_group(av[1], group) and _reads_group(av[2], group):
                return True
    return False


def _automaton(pattern: str) -> "_Automaton | Backtracking | None":
    """The position automaton of ``pattern``, a refusal when the pattern is nested too deep
    to walk, or None when this Python's parser is not one this module reads."""
    if _sre is None:
        return None
    try:
        with warnings.catch_warnings():  # re.compile has already warned the user once
            warnings.simplefilter("ignore")
            parsed = _sre.parse(pattern)
        builder = _Builder()
        frag = builder.seq(parsed, parsed.state.flags)
    except RecursionError:  # nested deeper than the walk can follow: too large to check
        return Backtracking(text="", unit="")
    except (_Unsupported, re.error, AttributeError, KeyError, TypeError, ValueError):
        # The private parser's tree is no public API: a shape not known here means no
        # verdict, never a failure to read kb.toml.
        return None
    aut = builder.aut
    aut.starts = _merge((aut.starts, 1), (frag.first, 1))
    aut.ends = dict(frag.last)
    return aut


@lru_cache(maxsize=64)
def catastrophic_backtracking(pattern: str) -> Optional[Backtracking]:
    """How ``pattern`` (a regex that compiles) can take exponential time to fail a match,
    or None when it cannot, or when this Python's parser is not one this module reads."""
    aut = _automaton(pattern)
    if not isinstance(aut, _Automaton):
        return aut
    sample = _sample(aut.named)
    bits = _bits(aut, sample)
    graph = _product(aut, bits)
    if graph is None:
        return Backtracking(text="", unit="")
    return _witness(aut, graph, bits, sample)


@lru_cache(maxsize=64)
def polynomial_backtracking(pattern: str, whole_line: bool = False) -> Optional[Backtracking]:
    """How ``pattern`` (a regex that compiles, which :func:`catastrophic_backtracking`
    passed) can take polynomial time to fail a match: two of its repetitions, one after
    the other or with only optional parts between them, read ``unit`` both, so a run of
    it after ``text`` is split between them in about n² ways (n³ for three). None when it
    cannot, or when this Python's parser is not one this module reads; both empty when
    the pattern is too large to check.

    ``whole_line``: the pattern is matched as it is against one line (a registry
    heading), so a last repetition that reads any character but a newline
    (``(?P<title>.+)$``) reads the rest of any line: once a path reaches it the match
    succeeds, and a split before it costs nothing (``\\s+(?P<title>.+)$`` passes). Not
    for ``id_grammar``, which kb follows with its own ``[ \\t]*:``."""
    aut = _automaton(pattern)
    if not isinstance(aut, _Automaton):
        return aut
    sample = _sample(aut.named)
    bits = _bits(aut, sample)
    return _polynomial(aut, bits, sample, whole_line)


def _reaching(aut: _Automaton) -> list[set[int]]:
    """For each position, the positions from which a path leads to it (itself included)."""
    back: list[list[int]] = [[] for _ in aut.follow]
    for p, follow in enumerate(aut.follow):
        for q in follow:
            back[q].append(p)
    out: list[set[int]] = []
    for goal in range(len(aut.follow)):
        seen = {goal}
        todo = [goal]
        while todo:
            for p in back[todo.pop()]:
                if p not in seen:
                    seen.add(p)
                    todo.append(p)
        out.append(seen)
    return out


def _reads_any_rest(aut: _Automaton, bits: list[int], sample: str, q: int) -> bool:
    """Whether position ``q`` repeats over every character but a newline and a match can end
    with it, in a pattern holding nothing that refuses a text without reading it: a path
    reaching ``q`` reads any rest of a line and matches."""
    every = (1 << len(sample)) - 1
    newline = 1 << sample.index("\n")
    return (not aut.guarded and q in aut.follow[q] and q in aut.ends
            and bits[q] | newline == every)


def _polynomial(aut: _Automaton, bits: list[int], sample: str,
                whole_line: bool) -> Optional[Backtracking]:
    """A text ``v`` leading from ``p`` to ``p``, from ``p`` to ``q`` and from ``q`` to ``q``
    for two positions on two different loops, as a :class:`Backtracking` (the shortest text
    to ``p``, then ``v``); None when there is none."""
    loop = _loops(aut)
    reaching = _reaching(aut)
    budget = _MAX_PAIRS
    for p in range(len(bits)):
        for q in range(len(bits)):
            if loop[p] < 0 or loop[q] < 0 or loop[p] == loop[q] or p not in reaching[q]:
                continue
            if whole_line and _reads_any_rest(aut, bits, sample, q):
                continue
            found, budget = _three_paths(aut, bits, loop, reaching[q], (p, p, q), (p, q, q), budget)
            if budget < 0:
                return Backtracking(text="", unit="")
            if found:
                unit = "".join(_char(sample, bits[a] & bits[b] & bits[c]) for a, b, c in found)
                return Backtracking(text=_prefix(aut, bits, sample, p) + unit, unit=unit)
    return None


def _three_paths(aut: _Automaton, bits: list[int], loop: list[int], to_goal: set[int],
                 start: Triple, goal: Triple, budget: int) -> tuple[list[Triple], int]:
    """The steps of a shortest walk from ``start`` to ``goal`` in the automaton's product with
    itself three times (the first path inside its loop, the second towards the goal, the
    third inside its loop; all three read each character), and the budget left; no steps
    when there is no walk, a negative budget when the search ran out of it."""
    back: dict[Triple, Triple] = {start: start}
    todo = deque([start])
    while todo:
        a, b, c = node = todo.popleft()
        for a2 in aut.follow[a]:
            if loop[a2] != loop[start[0]]:
                continue
            for b2 in aut.follow[b]:
                both = bits[a2] & bits[b2]
                if not both or b2 not in to_goal:
                    continue
                for c2 in aut.follow[c]:
                    nxt = (a2, b2, c2)
                    if loop[c2] != loop[start[2]] or not both & bits[c2] or nxt in back:
                        continue
                    back[nxt] = node
                    budget -= 1
                    if budget < 0:
                        return [], budget
                    if nxt == goal:
                        steps = [nxt]
                        while back[steps[-1]] != start:
                            steps.append(back[steps[-1]])
                        return steps[::-1], budget
                    todo.append(nxt)
    return [], budget
