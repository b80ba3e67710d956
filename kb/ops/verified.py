"""Verified cards: stage ``Verified/<问题|命题>/<id>.md`` for an object verification settled.

Called by the verdict write-back (:mod:`kb.ops.verdict`) and by
``kb problem status … 已解决`` (:mod:`kb.ops.problems`) inside their workspace.
"""

from __future__ import annotations

from typing import Any

from kb import clock
from kb.model import VerifiedCard
from kb.ops.card_edit import CardError
from kb.ops.workspace import Workspace
from kb.parse import parse_file
from kb.render.card import render_card
from kb.research.dependencies import object_final


def _verified_text(card: Any) -> str:
    return render_card(VerifiedCard(**card))


def _strip_time(text: str) -> str:
    return "\n".join(ln for ln in text.replace("\r\n", "\n").split("\n")
                     if not ln.startswith("- 时间:")).strip()


def write_verified_card(ws: Workspace, obj_id: str, word: str) -> str | None:
    """Stage ``Verified/<word>/<id>.md`` for a settled object (VIBEMATH-V3.md "Verified cards").

    The trusted content is every entry at probability 1 (``【解法 #i】`` /
    ``【证明 #i】`` / ``【证伪 #i】``, joined by a blank line). Returns the KB
    path written, or None when the card exists with the same content (the
    ``时间`` line is not compared); a card with other content is refused:
    Verified cards are immutable (raises :class:`kb.ops.card_edit.CardError`).
    """
    o = ws.edit(obj_id, ("problem",) if word == "问题" else ("proposition",)).model()
    parts: list[str] = []
    if word == "问题":
        sols = [e for e in o.entries if e.kind == "解法" and e.probability == 1]
        parts = [f"【解法 #{i}】{e.text.strip()}" for i, e in enumerate(sols, 1)]
        if not parts:
            pid = o.anchors.get("判断命题", "").strip()
            p = ws.obj(pid, ("proposition",)) if pid else None
            if p is not None and object_final(p):
                ans = "成立" if p.probability == 1 else "不成立"
                parts = [f"【结论】命题 {pid} {ans}，可信内容见 "
                         f"{ws.kb.prefix}{ws.verified_rel('命题', pid)}"]
        card = dict(id=obj_id, path="", line=1, title=o.title, object_type="问题",
                    conclusion="真", probability=1.0, category="问题", source=obj_id)
    else:
        proofs = [e for e in o.entries if e.kind == "证明" and e.probability == 1]
        refs = [e for e in o.entries if e.kind == "证伪" and e.probability == 1]
        parts = [f"【证明 #{i}】{e.text.strip()}" for i, e in enumerate(proofs, 1)]
        parts += [f"【证伪 #{i}】{e.text.strip()}" for i, e in enumerate(refs, 1)]
        true = o.probability == 1
        card = dict(id=obj_id, path="", line=1, title=o.title, object_type="命题",
                    conclusion="真" if true else "假", probability=1.0 if true else 0.0,
                    category=o.category, source=o.source_problem)
    card.update(time=clock.fmt_time(clock.now()), statement=o.statement,
                anchors={"可信内容": "\n\n".join(parts)})
    rel = ws.verified_rel(word, obj_id)
    new = _verified_text(card)
    old = ws.tx.read(rel)
    if old is not None:
        if _strip_time(old.decode("utf-8", "replace")) == _strip_time(new):
            return None
        raise CardError(f"{ws.kb.prefix}{rel} exists with other content; Verified cards are "
                        "immutable — nothing was written")
    data = new.encode("utf-8")
    ws.tx.write(rel, data)
    ws.remember(rel, data, parse_file(rel, data, ws.kb.config, "verified"))
    return rel


__all__ = ["write_verified_card"]
