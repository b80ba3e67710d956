"""``kb gen rank``: an optional tournament over the pool (AI co-scientist style Elo).

A judge agent submits pairwise comparisons of pool hypotheses::

    {"matches": [{"a": "r1h2", "b": "r2h1", "winner": "r2h1", "rationale": "…"}]}

(``winner`` is ``a``'s or ``b``'s hid, or ``"draw"``). Ratings start at
1200; after each match ``R_a += K·(S_a − E_a)`` with ``K`` = 32,
``E_a = 1 / (1 + 10^((R_b − R_a)/400))`` and ``S_a`` 1, ½ or 0. Ratings and
the match history live in ``<sandbox>/elo.json``; the report shows them
beside the rubric totals.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kb import json_input
from kb.gen.errors import GenError, GenNoFile
from kb.gen.store import Sandbox, write_json

START = 1200.0
K = 32.0
ELO_FILE = "elo.json"


def load_elo(sb: Sandbox) -> dict[str, Any]:
    """``{"ratings": {hid: float}, "matches": [...]}`` (empty when no tournament ran).

    Raises GenError when ``elo.json`` is unreadable, not JSON or not a tournament file.
    """
    path = sb.root / ELO_FILE
    try:
        elo = json_input.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"ratings": {}, "matches": []}
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not JSON
        raise GenError(f"{path}: cannot read it ({exc}); delete it to start the tournament "
                       "again (`kb gen rank` with a matches file)") from None
    if not (isinstance(elo, dict) and isinstance(elo.get("ratings"), dict)
            and isinstance(elo.get("matches"), list)):
        raise GenError(f"{path}: not a tournament file ({{\"ratings\": {{}}, \"matches\": []}}); "
                       "delete it to start the tournament again")
    return elo


def expected(ra: float, rb: float) -> float:
    """The expected score of a player rated ``ra`` against one rated ``rb``."""
    return 1.0 / (1.0 + 10 ** ((rb - ra) / 400.0))


def submit_matches(sb: Sandbox, path: str | Path | None = None, *, data: Any = None) -> dict[str, Any]:
    """Validate ``path`` (or ``data``, the parsed object) as in the module docstring and
    update the ratings; nothing changes on refusal.

    Returns ``{"applied": n, "ratings": [{hid, elo, total, matches}] best first}``.

    Raises GenNoFile (usage) for a missing file, GenError for an unreadable file, bad JSON or
    any invalid match (every problem listed).
    """
    p = Path(path) if path is not None else Path("<matches data>")
    if data is not None:
        raw = data
    else:
        try:
            raw = json_input.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise GenNoFile(f"{p}: no such file") from None
        except json.JSONDecodeError as exc:
            raise GenError(f"{p}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise GenError(f"{p}: cannot read it ({exc}); give a readable UTF-8 JSON file") from None
        except (ValueError, RecursionError):  # a number too long for int(), nesting too deep
            raise GenError(f"{p}: not JSON kb can read (a number too long or a nesting too "
                           "deep)") from None
    pool = {h["hid"]: h for h in sb.state["pool"]}
    problems = []
    matches = raw.get("matches") if isinstance(raw, dict) else None
    if not isinstance(matches, list) or not matches:
        raise GenError(f"{p}: $.matches: expected a non-empty list of matches")
    if isinstance(raw, dict) and set(raw) - {"matches"}:
        problems.append(f"{p}: $: unexpected field(s) {', '.join(sorted(set(raw) - {'matches'}))}")
    for i, m in enumerate(matches):
        at = f"{p}: $.matches[{i}]"
        if not isinstance(m, dict):
            problems.append(f"{at}: expected an object")
            continue
        extra = set(m) - {"a", "b", "winner", "rationale"}
        if extra:
            problems.append(f"{at}: unexpected field(s) {', '.join(sorted(extra))}")
        for side in ("a", "b"):
            if m.get(side) not in pool:
                problems.append(f"{at}.{side}: {m.get(side)!r} is not a pool hypothesis")
        if m.get("a") == m.get("b"):
            problems.append(f"{at}: a hypothesis cannot play itself")
        if m.get("winner") not in (m.get("a"), m.get("b"), "draw"):
            problems.append(f"{at}.winner: must be a's hid, b's hid or \"draw\"")
        if not isinstance(m.get("rationale", ""), str):
            problems.append(f"{at}.rationale: must be text")
    if problems:
        raise GenError(f"{p}: refused", problems)
    with sb.lock():
        return _apply(sb, matches)


def _apply(sb: Sandbox, matches: list[dict[str, Any]]) -> dict[str, Any]:
    elo = load_elo(sb)
    ratings = elo["ratings"]
    for m in matches:
        a, b = m["a"], m["b"]
        ra, rb = ratings.get(a, START), ratings.get(b, START)
        sa = 0.5 if m["winner"] == "draw" else 1.0 if m["winner"] == a else 0.0
        ea = expected(ra, rb)
        ratings[a] = round(ra + K * (sa - ea), 2)
        ratings[b] = round(rb + K * ((1 - sa) - (1 - ea)), 2)
        elo["matches"].append({"a": a, "b": b, "winner": m["winner"],
                               "rationale": m.get("rationale", ""), "round": sb.round,
                               "after": {a: ratings[a], b: ratings[b]}})
    write_json(sb.root / ELO_FILE, elo)
    return {"applied": len(matches), "ratings": standings(sb, elo)}


def standings(sb: Sandbox, elo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Pool hypotheses with their Elo (1200 unplayed), match count and rubric total, best first."""
    elo = elo or load_elo(sb)
    played: dict[str, int] = {}
    for m in elo["matches"]:
        for side in ("a", "b"):
            played[m[side]] = played.get(m[side], 0) + 1
    rows = [{"hid": h["hid"], "elo": elo["ratings"].get(h["hid"], START), "total": h["total"],
             "matches": played.get(h["hid"], 0), "statement": h["statement"]}
            for h in sb.state["pool"]]
    return sorted(rows, key=lambda r: (-r["elo"], -r["total"], r["hid"]))
