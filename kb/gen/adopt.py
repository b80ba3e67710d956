"""``kb gen adopt r2h1 [--parent H1]``: a kept hypothesis becomes research in ``tree.md``.

A normal hypothesis write through :func:`kb.ops.hypotheses.add_hypothesis` (one
commit, the usual ``Kb-Op: hyp.add`` / ``Kb-Id`` trailers), with the
provenance in the hypothesis's prose (run, round, total, cites, how to test)
and in ``Kb-Gen-Run`` / ``Kb-Gen-Hid`` / ``Kb-Gen-Total`` trailers. The
sandbox remembers the adoption, so the same candidate is not adopted twice.
"""

from __future__ import annotations

from typing import Any

from kb.gen.errors import GenConflict, GenNotFound
from kb.gen.store import Sandbox


def provenance(sb: Sandbox, h: dict[str, Any]) -> list[str]:
    """The prose lines recorded under the adopted hypothesis (one paragraph per line)."""
    def clean(text: str) -> str:
        return " ".join(str(text).split())

    ev = h.get("evidence", {})
    # a cite whose snippet the round's cache does not hold is marked, as hypotheses.md
    # marks it (kb.gen.report): adopted without it, tree.md gave it as verified
    cites = [f"{k} {clean(ev[k]['title'])}" + (f" ({ev[k]['id']})" if ev[k].get("id") else "")
             + ("" if ev[k].get("check") in ("verified", "web")
                else " (snippet not found in the round's cache)")
             for k in sorted(ev)]
    lines = [f"*Generated* by the literature-grounded generation loop: run {sb.state['run_id']}, "
             f"round {h['round']}, candidate {h['hid']}, rubric total {h['total']:g}/100 "
             f"(novelty {h['scores']['novelty']}, {clean(h['novelty_assessment'])}).",
             f"*How to test*: {clean(h['how_to_test'])}"]
    if cites:
        lines.append(f"*Cites*: {'; '.join(cites)}.")
    return lines


def adopt(sb: Sandbox, hid: str, kb: Any = None, parent: str | None = None,
          **write_kw: Any) -> Any:
    """Append pool hypothesis ``hid`` to ``tree.md`` (under ``parent``); returns the OpResult.

    Refuses (GenError, exit 1) a hid that is not in the pool or was adopted
    already; the tree write refuses like ``kb hyp add`` does.
    """
    with sb.lock():
        return _adopt(sb, hid, kb, parent, write_kw)


def _adopt(sb: Sandbox, hid: str, kb: Any, parent: str | None, write_kw: dict[str, Any]) -> Any:
    from kb.ops.hypotheses import add_hypothesis

    h = next((p for p in sb.state["pool"] if p["hid"] == hid), None)
    if h is None:
        known = ", ".join(p["hid"] for p in sb.state["pool"]) or "the pool is empty"
        raise GenNotFound(f"{hid} is not a kept hypothesis of run {sb.state['run_id']} ({known})")
    done = sb.state.get("adopted", {}).get(hid)
    if done:
        raise GenConflict(f"{hid} was adopted already as {done}")
    trailers = [("Kb-Gen-Run", sb.state["run_id"]), ("Kb-Gen-Hid", hid),
                ("Kb-Gen-Total", f"{h['total']:g}")]
    res = add_hypothesis(kb, h["statement"], parent, prose=provenance(sb, h), trailers=trailers,
                         **write_kw)
    if res.commit or write_kw.get("no_commit"):
        sb.state.setdefault("adopted", {})[hid] = res.id
        sb.save()
    res.details["generated"] = {"run": sb.state["run_id"], "hid": hid, "round": h["round"],
                                "total": h["total"]}
    return res
