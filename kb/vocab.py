"""Status vocabularies (Chinese is canonical; English via ``locale = "en"``).

Source: seeds/hypothesis-tree.md (hypothesis and experiment words), DESIGN.md
§2.1–2.2. kb stores the canonical Chinese word internally, reads either
language, and writes the KB's own locale.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Vocabulary:
    """A closed set of status words: canonical zh word -> en word, plus aliases."""

    name: str
    zh_to_en: dict[str, str]
    aliases: dict[str, str] = field(default_factory=dict)

    def canonical(self, word: str) -> str | None:
        """Return the canonical (zh) word for ``word`` in either language, else None."""
        w = word.strip()
        if w in self.zh_to_en:
            return w
        low = w.lower().replace("_", "-").replace(" ", "-")
        for zh, en in self.zh_to_en.items():
            if low == en:
                return zh
        return self.aliases.get(low)

    def word(self, canonical: str, locale: str) -> str:
        """The word to write for ``canonical`` in ``locale`` (``zh`` or ``en``)."""
        if locale == "en":
            return self.zh_to_en.get(canonical, canonical)
        return canonical

    def accepted(self) -> str:
        """A human list of the accepted words, for error messages."""
        return ", ".join(f"{zh}|{en}" for zh, en in self.zh_to_en.items())


HYPOTHESIS_STATUS = Vocabulary(
    "hypothesis status",
    {"待验": "untested", "进行中": "in-progress", "被支持": "supported", "被推翻": "refuted"},
    {"testing": "进行中", "active": "进行中", "running": "进行中", "open": "待验"},
)

EXPERIMENT_STATUS = Vocabulary(
    "experiment status",
    {"进行中": "in-progress", "已完成": "completed"},
    {"running": "进行中", "done": "已完成", "finished": "已完成"},
)

CONCLUSION = Vocabulary(
    "conclusion",
    {"支持": "supports", "推翻": "refutes", "不确定": "inconclusive"},
    {"support": "支持", "refute": "推翻", "supported": "支持", "refuted": "推翻", "uncertain": "不确定"},
)

#: Card vocabularies (VIBEMATH-V3.md); Vibe Math writes only Chinese.
PROBLEM_STATUS = ("原始", "求解中", "等待依赖", "已解决", "死路")
PROBLEM_SOURCE = ("原始", "后生", "promote")
PROPOSITION_STATUS = ("未定论", "已验证·真", "已验证·假")
ENTRY_STATUS = ("未定论", "已验")
METHOD_TYPE = ("理论体系", "框架", "工具", "方法", "思想", "范式", "技巧")
METHOD_STATUS = ("经验", "应用验证", "含已验证断言")
DIRECTION_STATUS = ("active", "success", "dead-end", "queued")

ACTIVE_HYPOTHESIS = ("待验", "进行中")
CLOSED_HYPOTHESIS = ("被支持", "被推翻")

#: Legal status moves without an override (DESIGN.md §4 "an illegal status move"),
#: canonical words, from -> allowed targets. Staying put is not a move. The
#: hypothesis moves follow the seed's rule: 待验 -> 进行中 when an experiment
#: starts; -> 被支持 / 被推翻 once evidence decides (a supported hypothesis can
#: still be refuted by a later experiment, never the other way round); nothing
#: goes back to 待验 or 进行中. Anything else needs ``--force --reason`` (a
#: ``Kb-Override:`` trailer). ``kb hyp status``, ``kb exp result`` and
#: ``kb verify``'s history rule all read these two tables.
HYPOTHESIS_MOVES: dict[str, frozenset[str]] = {
    "待验": frozenset({"进行中", "被支持", "被推翻"}),
    "进行中": frozenset({"被支持", "被推翻"}),
    "被支持": frozenset({"被推翻"}),
    "被推翻": frozenset(),
}

EXPERIMENT_MOVES: dict[str, frozenset[str]] = {
    "进行中": frozenset({"已完成"}),
    "已完成": frozenset(),
}


def is_legal_move(moves: dict[str, frozenset[str]], old: str, new: str) -> bool:
    """True when ``old`` -> ``new`` (canonical words) needs no override.

    Staying put is legal; a word outside the vocabulary on either side is not
    judged here (the unknown-status rule reports it), so it counts as legal.
    """
    if old == new or old not in moves or new not in moves:
        return True
    return new in moves[old]


#: The ``ls`` names of the object kinds, in display order.
KIND_PLURALS: dict[str, str] = {
    "hypotheses": "hypothesis",
    "experiments": "experiment",
    "problems": "problem",
    "propositions": "proposition",
    "methods": "method",
    "verified": "verified",
    "directions": "direction",
    "records": "record",
}


def display_status(kind: str, status: str, locale: str) -> str:
    """A status as the KB's locale writes it (hypotheses and experiments have two
    words, :data:`HYPOTHESIS_STATUS` / :data:`EXPERIMENT_STATUS`); other kinds' as is."""
    vocab = {"hypothesis": HYPOTHESIS_STATUS, "experiment": EXPERIMENT_STATUS}.get(kind)
    return vocab.word(status, locale) if vocab and status else status


#: The status words of each kind that has a closed list: hypotheses and experiments in
#: either language, the cards in the one Vibe Math writes, a Verified card's 结论. A
#: record's status is its registry's: no list to hold it to.
STATUS_WORDS: dict[str, Vocabulary | tuple[str, ...]] = {
    "hypothesis": HYPOTHESIS_STATUS, "experiment": EXPERIMENT_STATUS,
    "problem": PROBLEM_STATUS, "proposition": PROPOSITION_STATUS,
    "method": METHOD_STATUS, "direction": DIRECTION_STATUS,
    "verified": ("真", "假"),  # a Verified card's 结论 (VIBEMATH-V3: 真 or 假)
}


def known_status(status: str) -> bool:
    """Whether some kind's closed list holds ``status`` (either language of the
    hypotheses' and experiments'); a record's status has no list."""
    w = status.strip()
    return any(words.canonical(w) is not None if isinstance(words, Vocabulary) else w in words
               for words in STATUS_WORDS.values())


def status_word(kind: str | None, status: str) -> str:
    """``status`` as the index stores it (the canonical word) for objects of ``kind``
    (``"problem"``; None: every kind, which takes either vocabulary of the hypotheses'
    and experiments' two languages, ``completed`` an experiment's).

    Raises UsageError, naming the accepted words, for a word no object of ``kind`` can
    have: listing none would read as "none has it".
    """
    if kind is None:
        return HYPOTHESIS_STATUS.canonical(status) or EXPERIMENT_STATUS.canonical(status) or status
    words = STATUS_WORDS.get(kind)
    if words is None:
        return status
    if isinstance(words, Vocabulary):
        word, accepted = words.canonical(status), words.accepted()
    else:
        word, accepted = (status.strip() if status.strip() in words else None), ", ".join(words)
    if word is None:
        from kb.errors import UsageError

        raise UsageError(f"unknown {kind} status {status!r}; use one of: {accepted}")
    return word
