"""Pydantic models of every research object kb reads, and of diagnostics.

All models are frozen: a parsed object is a value. Formats come from
DESIGN.md §2 (tree, experiments, dashboard) and VIBEMATH-V3.md (cards).
Line numbers are 1-based and count lines of the file on disk (frontmatter and
BOM included). Probabilities are floats in [0, 1] when valid; an out-of-range
value is kept as read so that ``kb verify`` can report it (never clamped).
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["error", "warning", "info"]

ObjectKind = Literal[
    "hypothesis",
    "experiment",
    "problem",
    "proposition",
    "method",
    "verified",
    "direction",
    "record",
]



class _Frozen(BaseModel):
    """Frozen, strict about unknown fields. Parsers build objects with
    ``build`` (model_construct without its overhead; values are typed by construction, and
    validation would cost a tenth of a cold index); tests validate the same
    objects through ``model_validate`` to keep them honest."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    @classmethod
    def build(cls, **values: Any) -> Any:
        """``model_construct`` for kb's plain models, without its per-call overhead.

        kb's models have no aliases, no private attributes and no post-init,
        so an instance is its field values in field order plus the set of
        fields given. A default factory is called only when its field is not
        given (most parsers pass every such field). Values are not validated:
        parsers type them by construction (and a test validates them all).
        """
        order, defaults, factories = _layout(cls)
        fields_values = {}
        for name in order:
            if name in values:
                fields_values[name] = values[name]
            elif name in defaults:
                fields_values[name] = defaults[name]
            elif name in factories:
                fields_values[name] = factories[name]()
        unknown = values.keys() - fields_values.keys()
        if unknown:
            raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
        m = cls.__new__(cls)
        object.__setattr__(m, "__dict__", fields_values)
        object.__setattr__(m, "__pydantic_fields_set__", set(values))
        object.__setattr__(m, "__pydantic_extra__", None)
        object.__setattr__(m, "__pydantic_private__", None)
        return m


_LAYOUTS: dict[type, tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]] = {}


def _layout(cls: type) -> tuple[tuple[str, ...], dict[str, Any], dict[str, Any]]:
    hit = _LAYOUTS.get(cls)
    if hit is None:
        fields = cls.__pydantic_fields__  # type: ignore[attr-defined]
        hit = (tuple(fields),
               {n: f.default for n, f in fields.items()
                if f.default_factory is None and not f.is_required()},
               {n: f.default_factory for n, f in fields.items() if f.default_factory is not None})
        _LAYOUTS[cls] = hit
    return hit


class Fix(_Frozen):
    """A mechanical repair: replace line ``line`` (1-based) ``old`` by ``new``.

    ``old`` and ``new`` are the whole line without its line ending; the fix is
    applied only when the line still reads ``old``.
    """

    line: int
    old: str
    new: str


class Diagnostic(_Frozen):
    """One problem found in one file: where, what, how bad, how to fix it."""

    path: str
    line: int = 0
    col: int = 1
    code: str
    severity: Severity
    message: str
    fix: Optional[Fix] = None

    def format(self) -> str:
        """``path:line:col: CODE message`` — the text form of DESIGN.md §4."""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"


class KBObject(_Frozen):
    """Fields every research object has.

    ``anchors`` holds every anchor as read (key -> raw value), known or not, so
    that unknown anchors survive and can be shown; ``anchor_lines`` maps the
    same keys to their 1-based line numbers.
    """

    id: str
    kind: ObjectKind
    path: str
    line: int
    title: str = ""
    status: str = ""
    anchors: dict[str, str] = Field(default_factory=dict)
    anchor_lines: dict[str, int] = Field(default_factory=dict)
    frontmatter: dict[str, object] = Field(default_factory=dict)


class Hypothesis(KBObject):
    """A node of ``tree.md`` (DESIGN.md §2.1, seed hypothesis-tree.md).

    ``level`` is the number of ``#`` of its heading; ``statement`` the text
    after ``<ID>: ``; ``status`` the canonical (Chinese) status word or the
    raw word when it is not in the vocabulary; ``end_line`` the last line of
    its section (before the next declaration heading of the same or a higher
    level), used to splice edits.
    """

    kind: Literal["hypothesis"] = "hypothesis"
    statement: str
    level: int
    evidence: tuple[str, ...] = ()
    children: tuple[str, ...] = ()
    parent: Optional[str] = None
    has_children_line: bool = False
    end_line: int = 0


class Experiment(KBObject):
    """``experiments/Exxx.md`` (DESIGN.md §2.2).

    ``conclusion`` is the first word of the ``**结论**`` line (支持 / 推翻 /
    不确定, canonical Chinese) or None when the result is not written yet.
    """

    kind: Literal["experiment"] = "experiment"
    hypothesis: Optional[str] = None
    hypothesis_text: str = ""
    action: str = ""
    date: Optional[str] = None
    conclusion: Optional[str] = None
    conclusion_line: int = 0
    sections: tuple[str, ...] = ()


EntryKind = Literal["解法", "证明", "证伪"]


class Entry(_Frozen):
    """An entry line ``### 解法 N｜title｜概率x｜状态y`` (VIBEMATH-V3.md)."""

    kind: EntryKind
    number: int
    title: str
    probability: float
    status: str
    line: int
    text: str = ""


class Problem(KBObject):
    """``Problems/<id>.md`` (VIBEMATH-V3.md). ``priority`` is an int or "never"."""

    kind: Literal["problem"] = "problem"
    priority: Union[int, Literal["never"], None] = None
    depends: tuple[str, ...] = ()
    depended_by: tuple[str, ...] = ()
    source: str = ""
    plan: str = ""
    statement: str = ""
    entries: tuple[Entry, ...] = ()


class Proposition(KBObject):
    """``Propos/<category>/<id>.md``; ``probability``/``value`` in [0,1] when valid."""

    kind: Literal["proposition"] = "proposition"
    category: str = ""
    probability: Optional[float] = None
    value: Optional[float] = None
    priority: Union[int, Literal["never"], None] = None
    depends: tuple[str, ...] = ()
    source_problem: str = ""
    statement: str = ""
    entries: tuple[Entry, ...] = ()


class Application(_Frozen):
    """``### 应用 N｜<time>｜问题 <qid> 方向 <dir>`` in a method card."""

    number: int
    time: str
    problem: str
    direction: str = ""
    line: int


class Method(KBObject):
    """``Methods/<id>.md`` (VIBEMATH-V3.md)."""

    kind: Literal["method"] = "method"
    type: str = ""
    claims: tuple[str, ...] = ()
    parents: tuple[str, ...] = ()
    submethods: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    scenario: str = ""
    applications: tuple[Application, ...] = ()


class VerifiedCard(KBObject):
    """``Verified/命题/<id>.md`` or ``Verified/问题/<id>.md`` (generated, immutable)."""

    kind: Literal["verified"] = "verified"
    object_type: str = ""
    conclusion: str = ""
    probability: Optional[float] = None
    category: str = ""
    source: str = ""
    time: str = ""
    statement: str = ""


class ProgressDirection(KBObject):
    """``Progress/<qid>/<dir>.md`` header: a research direction of a problem."""

    kind: Literal["direction"] = "direction"
    problem: str = ""
    direction: str = ""
    survival: Optional[float] = None
    rounds: Optional[int] = None
    lemmas: tuple[str, ...] = ()


class Record(KBObject):
    """An entry of a configured registry file (several cards in one file)."""

    kind: Literal["record"] = "record"


AnyObject = Union[
    Hypothesis, Experiment, Problem, Proposition, Method, VerifiedCard, ProgressDirection, Record
]

MODEL_BY_KIND: dict[str, type[KBObject]] = {
    "hypothesis": Hypothesis,
    "experiment": Experiment,
    "problem": Problem,
    "proposition": Proposition,
    "method": Method,
    "verified": VerifiedCard,
    "direction": ProgressDirection,
    "record": Record,
}


class ParseResult(_Frozen):
    """What parsing one file gives: its objects and its diagnostics.

    ``kind`` is the file format (``tree``, ``experiment``, ``dashboard``,
    ``problem``, ``proposition``, ``method``, ``verified``, ``direction``,
    ``progress``, ``registry``, ``other``).
    """

    path: str
    kind: str
    objects: tuple[AnyObject, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    meta: dict[str, object] = Field(default_factory=dict)
