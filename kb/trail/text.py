"""Text forms of the views (for people and for the ``explore_tree`` tool's ``text``).

:func:`format_view` turns a view dict of :mod:`kb.trail.views` into short
lines; it never prints. Status marks: ``○`` open, ``◐`` active, ``●`` done,
``✗`` abandoned; ``⚠`` a topic with contradicting leaves.
"""

from __future__ import annotations

from typing import Any

MARK = {"open": "○", "active": "◐", "done": "●", "abandoned": "✗"}


def line(d: dict[str, Any]) -> str:
    """One node as ``○ n3f9a1c0e5b hypothesis: title [owner]``."""
    extra = f" [{d['owner']}]" if d.get("owner") else ""
    hits = f" ×{d['hits']}" if d.get("hits", 1) > 1 else ""
    return f"{MARK.get(d['status'], '?')} {d['id']} {d['kind']}: {d['title']}{extra}{hits}"


def _overview(v: dict[str, Any]) -> list[str]:
    out = [f"Goal: {line(v['goal']) if v['goal'] else '(none)'}",
           f"Focus: {line(v['focus']) if v['focus'] else '(none)'}", "Recent:"]
    out += [f"  {line(d)}" for d in v["recent"]] or ["  (none)"]
    folded = ", ".join(f"{k} {n}" for k, n in v["open_folded"].items())
    out.append(f"Open ({v['open_total']}" + (f"; folded: {folded}" if folded else "") + "):")
    out += [f"  {line(d)}" for d in v["open"]]
    for key, title in (("dead_ends", "Dead ends"), ("artifacts", "Artifacts"),
                       ("conclusions", "Conclusions")):
        if v[key]:
            out.append(f"{title}:")
            out += [f"  {line(d)}" for d in v[key]]
    return out


def _trunk(v: dict[str, Any]) -> list[str]:
    out = []
    for gl in v["goals"]:
        out.append(f"goal {line(gl['goal'])}" if gl["goal"] else "(topics without a goal)")
        for t in gl["topics"]:
            p = t["progress"]
            own = f" owner {t['owner']}" if t["owner"] else ""
            warn = " ⚠ conflict" if t["conflict"] else ""
            out.append(f"  topic {t['id']} {t['title']} — {t['digest']} "
                       f"[{p['done']}/{p['total']}]{own}{warn}")
            out += [f"    {line(lf)}" for lf in t["leaves"]]
            if t["archived_leaves"]:
                out.append(f"    (+{t['archived_leaves']} archived)")
    if v["claimable"]:
        out.append("Claimable: " + "; ".join(f"{c['id']} {c['title']}"
                                             + (" (expired)" if c["expired"] else "")
                                             for c in v["claimable"]))
    return out or ["The trail has no goal or topic yet."]


def _frontier(v: dict[str, Any]) -> list[str]:
    out = [f"{s['action']} {s['id']} {s['title']} — {s['reason']}" for s in v["suggestions"]]
    out = out or ["No suggestions."]
    if v["avoid"]:
        out.append("Avoid:")
        out += [f"  {a['id']} {a['title']}" + (f" — {a['reason']}" if a["reason"] else "")
                for a in v["avoid"]]
    return out


def _stats(v: dict[str, Any]) -> list[str]:
    def kv(d: dict[str, int]) -> str:
        return ", ".join(f"{k} {n}" for k, n in d.items()) or "-"

    return [f"nodes {v['nodes']} (all {v['all_nodes']}, archived {v['archived']}, "
            f"hidden {v['hidden']}), operations {v['operations']}, problems {v['problems']}",
            f"by kind: {kv(v['by_kind'])}", f"by status: {kv(v['by_status'])}",
            f"edges: {kv(v['edges'])}", f"created by: {kv(v['actors']['created'])}",
            f"updated by: {kv(v['actors']['updated'])}",
            f"duplicates: {kv(v['duplicates'])}"]


def _tree_lines(d: dict[str, Any], depth: int, out: list[str]) -> None:
    out.append("  " * depth + line(d))
    for c in d["children"]:
        _tree_lines(c, depth + 1, out)
    if d.get("more"):
        out.append("  " * (depth + 1) + f"… {d['more']} more")


def _node(v: dict[str, Any]) -> list[str]:
    out = [line(v), f"version {v['version']} · updated {v['updated_at']} by {v['updated_by']}"
           f" · created {v['created_at']} by {v['created_by']}",
           "path: " + " › ".join(p["id"] for p in v["path"])]
    if v["summary"]:
        out.append(v["summary"])
    if v["digest"]:
        out.append(f"digest: {v['digest']}" + (" (manual)" if v["digest_manual"] else ""))
    for key in ("tags", "refs"):
        if v[key]:
            out.append(f"{key}: {', '.join(v[key])}")
    if v["owner"]:
        out.append(f"lease: {v['owner']} until {v['lease_until']} (epoch {v['lease_epoch']})")
    out += [f"  child {line(c)}" for c in v["children"]]
    out += [f"  → {e['kind']} {e['to']}" + (f" ({e['note']})" if e["note"] else "")
            for e in v["edges"]["out"]]
    out += [f"  ← {e['kind']} {e['from']}" for e in v["edges"]["in"]]
    return out


def format_view(v: dict[str, Any]) -> str:
    """The text of view dict ``v`` (any view of :mod:`kb.trail.views`)."""
    name = v["view"]
    if name == "overview":
        out = _overview(v)
    elif name == "trunk":
        out = _trunk(v)
    elif name == "brief":
        out = [v["text"]]
    elif name == "frontier":
        out = _frontier(v)
    elif name == "stats":
        out = _stats(v)
    elif name == "find":
        out = [line(d) + (f"\n    …{d['snippet']}" if d.get("snippet") else "") for d in v["results"]]
        out = out or [f"nothing matches {v['query']!r}"]
    elif name == "path":
        out = ["  " * i + line(d) for i, d in enumerate(v["path"])]
    elif name == "node":
        out = _node(v)
    elif name == "tree":
        out = []
        for r in v["roots"]:
            _tree_lines(r, 0, out)
        out = out or ["The trail is empty."]
    elif name == "subtree":
        out = _node(v["node"])[:3]
        _tree_lines(v["tree"], 0, out)
    else:
        out = [str(v)]
    if v.get("log_problems"):
        out.append(f"({len(v['log_problems'])} log problem(s): kb trail check lists them)")
    return "\n".join(out)
