"""The deterministic thought classifier and selector of ``kb trail ingest`` (issue 15, seed §4).

No model is called. A thought (one sentence cut from an agent's reasoning) is
scored for each of the six thought kinds by weighted cue features over
English and Chinese text (:data:`CUES`); each feature counts once. The best
kind wins when its score is at least :data:`MIN_CONFIDENCE` (1.2) and beats
the second by at least :data:`MIN_MARGIN` (0.35); otherwise the thought is a
``note`` and is folded into the step's summary.

Per turn, :func:`select` then drops near-duplicates (Jaccard ≥ 0.85 over
English words and Chinese character bigrams), and picks at most 10 thoughts
by per-kind quotas (question 2, hypothesis 3, decision 3, evidence 3,
conclusion 1, dead_end 3; one slot kept for a conclusion when there is one)
and MMR: repeatedly the candidate with the highest ``score − 0.7 · maxSim``
to those already chosen (ties: the earlier one). The chosen thoughts keep
their order in the transcript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kb.research import similarity

MIN_CONFIDENCE = 1.2
MIN_MARGIN = 0.35
DEDUPE_JACCARD = 0.85
MMR_LAMBDA = 0.7
MAX_PER_TURN = 10
QUOTAS = {"question": 2, "hypothesis": 3, "decision": 3, "evidence": 3, "conclusion": 1,
          "dead_end": 3}
RESERVE_CONCLUSION = 1
MIN_CHARS = 12
MAX_CHARS = 400

_I = re.IGNORECASE
#: kind -> [(weight, pattern)]; every matching pattern adds its weight once.
CUES: dict[str, list[tuple[float, re.Pattern[str]]]] = {
    "question": [
        (1.5, re.compile(r"[?？]\s*$")),
        (0.8, re.compile(r"^\s*(why|how|what|which|whether|is it|are they|does|do we|should|"
                         r"can we|could it)\b", _I)),
        (0.8, re.compile(r"为什么|为何|怎么|如何|是否|吗[？?]?\s*$|呢[？?]?\s*$")),
        (0.6, re.compile(r"\b(i wonder|not sure (why|whether|if)|unclear (why|whether|if)|"
                         r"open question)\b|不确定|不清楚|疑问", _I)),
    ],
    "hypothesis": [
        (1.3, re.compile(r"\b(maybe|perhaps|probably|likely|might|could be|i suspect|"
                         r"suspect that|my guess|presumably|hypothes\w+)\b", _I)),
        (1.3, re.compile(r"可能|也许|大概|猜测|怀疑|假设|或许|估计是")),
        (0.4, re.compile(r"\b(because|due to|caused by)\b|因为|导致|由于", _I)),
    ],
    "evidence": [
        (1.0, re.compile(r"\b(shows?|showed|shown|according to|the (log|output|trace|diff"
                         r"|benchmark)s?|tests? (passed|failed)|measured|confirms?|returns?|returned|prints?|reports?"
                         r"|i see|we see|observed)\b", _I)),
        (1.0, re.compile(r"显示|日志|输出|测得|证实|看到|数据表明|报错|返回了|打印|实测")),
        (0.6, re.compile(r"\d+(\.\d+)?\s*(%|ms|s\b|bytes?|kb\b|mb\b|字节|秒|毫秒|次|行)", _I)),
        (0.4, re.compile(r"[\w./-]+\.(py|js|ts|md|json|toml|rs|go|c|h)(:\d+)?\b")),
    ],
    "decision": [
        (1.4, re.compile(r"\b(i'll|i will|let me|let's|we should|i should|decide[ds]?|"
                         r"going to|plan to|instead,? i|switch to|i'm going to)\b", _I)),
        (1.4, re.compile(r"决定|我会|我先|先把|接下来|改为|打算|就用|采用|我来|下一步")),
    ],
    "dead_end": [
        (1.4, re.compile(r"\b(doesn't work|does not work|didn't work|did not work|dead end|"
                         r"no luck|not the cause|ruled out|won't work|gave up|give up|"
                         r"abandon\w*|failed|fails)\b", _I)),
        (1.4, re.compile(r"不行|失败|走不通|排除了?|不是原因|死路|没用|放弃|行不通")),
        (0.3, re.compile(r"\b(wrong|not|no)\b|不是|没有", _I)),
    ],
    "conclusion": [
        (1.4, re.compile(r"\b(therefore|in conclusion|this means|root cause|the answer is|"
                         r"turns out|thus|overall|so the (cause|problem|issue|fix) is|"
                         r"confirmed that)\b", _I)),
        (1.4, re.compile(r"因此|所以|结论|说明了?|原来|根因|综上|总之|最终")),
        (0.5, re.compile(r"\bthe (cause|reason|fix) (is|was)\b|原因是|问题在于", _I)),
    ],
}
THOUGHT_KINDS = tuple(CUES)

_SENT = re.compile(r"(?<=[。！？!?；;])|(?<=\.)\s+|\n+")


@dataclass
class Thought:
    """A candidate thought: its text, position, scores and the chosen kind ('note' if none)."""

    text: str
    pos: int
    scores: dict[str, float] = field(default_factory=dict)
    kind: str = "note"
    score: float = 0.0
    tokens: frozenset[str] = frozenset()


def scores(text: str) -> dict[str, float]:
    """The score of ``text`` for each thought kind (sum of the weights of matching cues)."""
    return {k: round(sum(w for w, p in cues if p.search(text)), 3) for k, cues in CUES.items()}


def classify(text: str) -> tuple[str, float, dict[str, float]]:
    """``(kind, best score, all scores)``: the best kind, or ``note`` below 1.2 or within
    0.35 of the second (ties between kinds go to the earlier kind in :data:`CUES`)."""
    sc = scores(text)
    ranked = sorted(sc.items(), key=lambda kv: -kv[1])
    (k1, s1), (_, s2) = ranked[0], ranked[1]
    if s1 < MIN_CONFIDENCE or s1 - s2 < MIN_MARGIN:
        return "note", s1, sc
    return k1, s1, sc


def tokens(text: str) -> frozenset[str]:
    """English words and Chinese bigrams of ``text`` (:func:`kb.research.similarity.tokens`)."""
    return similarity.tokens(text)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two token sets; two empty thoughts count as the same."""
    return similarity.jaccard(a, b, both_empty=1.0)


def split_thoughts(text: str, start: int = 0) -> list[Thought]:
    """Cut reasoning text into sentence thoughts of 12–400 characters (longer ones clipped)."""
    out = []
    for i, raw in enumerate(_SENT.split(text or "")):
        s = " ".join((raw or "").split()).lstrip("-*•> ").strip()
        if len(s) < MIN_CHARS:
            continue
        if len(s) > MAX_CHARS:
            s = s[: MAX_CHARS - 1] + "…"
        kind, best, sc = classify(s)
        out.append(Thought(text=s, pos=start + i, scores=sc, kind=kind, score=best,
                           tokens=tokens(s)))
    return out


def dedupe(thoughts: list[Thought]) -> list[Thought]:
    """Drop each thought with Jaccard ≥ 0.85 to an earlier kept one."""
    kept: list[Thought] = []
    for t in thoughts:
        if all(jaccard(t.tokens, k.tokens) < DEDUPE_JACCARD for k in kept):
            kept.append(t)
    return kept


def select(thoughts: list[Thought]) -> tuple[list[Thought], list[Thought]]:
    """``(chosen, notes)``: the classified thoughts after de-duplication, quotas and MMR
    (chosen, in transcript order) and the ones folded into the step (notes and the
    classified thoughts not chosen, in order)."""
    uniq = dedupe(thoughts)
    cands = [t for t in uniq if t.kind != "note"]
    chosen: list[Thought] = []
    used = {k: 0 for k in QUOTAS}
    reserve = RESERVE_CONCLUSION if any(t.kind == "conclusion" for t in cands) else 0
    pool = list(cands)
    while pool and len(chosen) < MAX_PER_TURN:
        room = MAX_PER_TURN - len(chosen)
        best: Thought | None = None
        best_v = 0.0
        for t in pool:
            if used[t.kind] >= QUOTAS[t.kind]:
                continue
            if t.kind != "conclusion" and room <= reserve - used["conclusion"]:
                continue  # keep the conclusion's slot
            sim = max((jaccard(t.tokens, c.tokens) for c in chosen), default=0.0)
            v = t.score - MMR_LAMBDA * sim
            if best is None or v > best_v or (v == best_v and t.pos < best.pos):
                best, best_v = t, v
        if best is None:
            break
        chosen.append(best)
        used[best.kind] += 1
        pool.remove(best)
    chosen.sort(key=lambda t: t.pos)
    ids = {id(t) for t in chosen}
    notes = [t for t in uniq if id(t) not in ids]
    return chosen, notes
