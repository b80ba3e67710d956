"""The models of every research object kb reads, and of diagnostics.

Each model is a frozen standard-library dataclass; pydantic validates them and
gives their JSON Schema (:func:`validate`, :func:`json_schema`, through
``pydantic.TypeAdapter``). They are not ``pydantic.BaseModel`` subclasses
because importing pydantic and building its model classes costs about 70 ms,
a seventh of a whole ``kb hyp add`` (DESIGN.md §7, docs/DECISIONS.md): kb
imports pydantic only where it validates or exports a schema, never on the
parse → index → write path.

A parsed object is a value: frozen, compared field by field. Formats come from
DESIGN.md §2 (tree, experiments, dashboard) and VIBEMATH-V3.md (cards).
Line numbers are 1-based and count lines of the file on disk (frontmatter and
BOM included). Probabilities are floats in [0, 1] when valid; an out-of-range
value is kept as read so that ``kb verify`` can report it (never clamped).
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Optional, TypeVar, Union

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

M = TypeVar("M", bound="_Frozen")

#: Every model: a dataclass whose keyword-only ``__init__``, ``__eq__``, ``__hash__``,
#: ``__repr__`` and frozen ``__setattr__``/``__delattr__`` are :class:`_Frozen`'s (generic
#: over ``__dict__``): the dataclass decorator would generate them for each class with
#: ``exec`` (about 1 ms per class; the frozen pair alone ~0.2 ms, paid by every command).
model = dataclass(kw_only=True, init=False, repr=False, eq=False)


class _Frozen:
    """What every model shares: fast building, copying, JSON in and out.

    Parsers build objects with :meth:`build` (no per-field ``__setattr__``;
    values are typed by construction, and a test validates every parsed
    object through pydantic); the index stores :meth:`to_json` and reads it
    back with :meth:`from_json` (trusted: kb wrote it).
    """

    #: pydantic's settings for validating these dataclasses (read by TypeAdapter).
    __pydantic_config__ = {"extra": "forbid"}

    def __init__(self, **values: Any) -> None:
        """Keyword arguments only, one per field; fields with no default are required.
        Not validated (see :func:`validate`); raises TypeError like a dataclass."""
        object.__setattr__(self, "__dict__", _field_values(type(self), values))

    def __setattr__(self, name: str, value: Any) -> None:
        # What ``dataclass(frozen=True)`` generates: a model is a value.
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        # Like a frozen dataclass: raises TypeError when a field holds a dict.
        return hash(tuple(self.__dict__.values()))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({args})"

    @classmethod
    def build(cls: type[M], **values: Any) -> M:
        """An instance from its field values, without validation (the constructor).

        Fields not given take their default (a default factory is called
        only then). Raises TypeError for a name that is not a field or a
        required field not given.
        """
        m = cls.__new__(cls)
        object.__setattr__(m, "__dict__", _field_values(cls, values))
        return m

    def replace(self: M, **changes: Any) -> M:
        """A copy with ``changes`` applied (the object itself is frozen)."""
        values = dict(self.__dict__)
        values.update(changes)
        return type(self).build(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (nested models as dicts, tuples as lists)."""
        return json.loads(self.to_json())

    def to_json(self) -> str:
        """Compact JSON of every field (UTF-8 text, not ASCII-escaped)."""
        return json.dumps(self, default=json_default, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls: type[M], data: dict[str, Any]) -> M:
        """The instance :meth:`to_dict` gave ``data`` for (lists back to tuples,
        nested models rebuilt). Not validated: for data kb wrote itself; use
        :func:`validate` for anything else. Raises TypeError on unknown fields."""
        convert = _layout(cls)[3]
        return cls.build(**{k: (convert[k](v) if k in convert and v is not None else v)
                            for k, v in data.items()})

    @classmethod
    def from_json(cls: type[M], text: str | bytes) -> M:
        """:meth:`from_dict` of JSON text (e.g. a row of the index)."""
        return cls.from_dict(json.loads(text))


def is_model(obj: object) -> bool:
    """True for an instance of one of kb's frozen models (every instance of a model
    class has every field of that class)."""
    return isinstance(obj, _Frozen)


def _field_values(cls: type, values: dict[str, Any]) -> dict[str, Any]:
    """Every field's value in field order: ``values``, else the default."""
    template, factories, required, _ = _layout(cls)
    out = dict(template)
    out.update(values)
    if len(out) != len(template):
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(values.keys() - template.keys())}")
    for name, make in factories.items():
        if out[name] is _MISSING:
            out[name] = make()
    for name in required:
        if out[name] is _MISSING:
            raise TypeError(f"{cls.__name__} missing required field {name!r}")
    return out


def json_default(o: Any) -> Any:
    """``json.dumps(default=…)`` for data holding models: a model is its fields."""
    if isinstance(o, _Frozen):
        return o.__dict__
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


_MISSING = dataclasses.MISSING
_Layout = tuple[dict[str, Any], dict[str, Callable[[], Any]], tuple[str, ...],
                dict[str, Callable[[Any], Any]]]
_LAYOUTS: dict[type, _Layout] = {}


def _layout(cls: type) -> _Layout:
    """A model's (field -> default or MISSING in field order, default factories,
    required fields, JSON converters), computed once per class."""
    hit = _LAYOUTS.get(cls)
    if hit is None:
        fields = dataclasses.fields(cls)
        hints = typing.get_type_hints(cls)
        factories = {f.name: f.default_factory for f in fields if f.default_factory is not _MISSING}
        hit = ({f.name: f.default for f in fields},
               factories,  # type: ignore[dict-item]
               tuple(f.name for f in fields if f.default is _MISSING and f.name not in factories),
               {f.name: c for f in fields if (c := _converter(hints[f.name])) is not None})
        _LAYOUTS[cls] = hit
    return hit


def _converter(tp: Any) -> Callable[[Any], Any] | None:
    """How a JSON value becomes a field value of type ``tp`` (None: as it is)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(tp, type) and issubclass(tp, _Frozen):
        return tp.from_dict
    if origin is Union:
        inner = [c for a in args if a is not type(None) and (c := _converter(a)) is not None]
        return inner[0] if len(inner) == 1 else None
    if origin is tuple:
        item = _converter(args[0]) if args else None
        if item is None:
            return tuple
        return lambda v: tuple(item(x) for x in v)
    return None


def validate(cls: type[M], data: Any) -> M:
    """``data`` (a dict, or an instance) validated by pydantic as a ``cls``.

    Raises ``pydantic.ValidationError`` naming each bad field.
    """
    from pydantic import TypeAdapter

    if isinstance(data, _Frozen):
        data = data.to_dict()
    return TypeAdapter(cls).validate_python(data)


def json_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of a model (pydantic's, draft 2020-12)."""
    from pydantic import TypeAdapter

    return TypeAdapter(cls).json_schema()


@model
class Fix(_Frozen):
    """A mechanical repair: replace line ``line`` (1-based) ``old`` by ``new``.

    ``old`` and ``new`` are the whole line without its line ending; the fix is
    applied only when the line still reads ``old``.
    """

    line: int
    old: str
    new: str


@model
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


@model
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
    anchors: dict[str, str] = field(default_factory=dict)
    anchor_lines: dict[str, int] = field(default_factory=dict)
    frontmatter: dict[str, object] = field(default_factory=dict)


@model
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


@model
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


@model
class Entry(_Frozen):
    """An entry line ``### 解法 N｜title｜概率x｜状态y`` (VIBEMATH-V3.md)."""

    kind: EntryKind
    number: int
    title: str
    probability: float
    status: str
    line: int
    text: str = ""


@model
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


@model
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


@model
class Application(_Frozen):
    """``### 应用 N｜<time>｜问题 <qid> 方向 <dir>`` in a method card."""

    number: int
    time: str
    problem: str
    direction: str = ""
    line: int


@model
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


@model
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


@model
class ProgressDirection(KBObject):
    """``Progress/<qid>/<dir>.md`` header: a research direction of a problem."""

    kind: Literal["direction"] = "direction"
    problem: str = ""
    direction: str = ""
    survival: Optional[float] = None
    rounds: Optional[int] = None
    lemmas: tuple[str, ...] = ()


@model
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


@model
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
    meta: dict[str, object] = field(default_factory=dict)
