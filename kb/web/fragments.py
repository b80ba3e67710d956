"""The two large fragments, written directly: the tree's cards and a file's numbered lines.

The Jinja2 templates render everything else; these are built here because a
template loop over 5,000 cards (or the 50,000 lines of a 5,000-hypothesis
``tree.md``) costs most of the 0.5 s budget (issue 16), string joins a fraction. Every value that comes from the
KB passes through :func:`markupsafe.escape` (``esc`` below) — the same
escaping the templates apply — and URLs are built from URL-quoted IDs only,
never from research text.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from markupsafe import Markup, escape as esc

__all__ = ["tree_html", "source_html"]


def _evidence(evidence: list[dict[str, Any]], obj: Callable[[str], str]) -> str:
    if not evidence:
        return ""
    out = ['<ul class="evidence">']
    for e in evidence:
        if e.get("missing"):
            out.append(f'<li class="missing">{esc(e["id"])} '
                       '<span class="muted">(no such experiment)</span></li>')
            continue
        word = e.get("conclusion") or e.get("status") or ""
        date = f' <span class="muted">{esc(e["date"])}</span>' if e.get("date") else ""
        out.append(f'<li><a href="{esc(obj(e["id"]))}">{esc(e["id"])}</a> '
                   f'<span class="concl {esc(e["conclusion_class"])}">{esc(word)}</span>{date}</li>')
    out.append("</ul>")
    return "".join(out)


def tree_html(events: Iterable[tuple[str, Any]], obj: Callable[[str], str]) -> Markup:
    """The ``<li>`` cards of :func:`kb.web.pages.tree_page`'s ``events``; ``obj(id)`` is an
    object's URL. A card with children is a ``<details>`` (open at the upper levels)."""
    out: list[str] = []
    for ev, c in events:
        if ev == "close":
            out.append("</ul></details></li>")
            continue
        hid = c["id"]
        kids = f'<span class="kids muted">{c["n_children"]} sub</span>' if c.get("n_children") else ""
        card = (f'<div class="card {esc(c["status_class"])}">'
                f'<a class="hid" href="{esc(obj(hid))}">{esc(hid)}</a> '
                f'<span class="status">{esc(c["status"])}</span> '
                f'<span class="stmt">{esc(c["statement"])}</span>{kids}'
                f'{_evidence(c["evidence"], obj)}</div>')
        head = (f'<li class="node" data-t="{esc(c["text"])}" data-depth="{c["depth"]}" '
                f'id="h-{esc(hid)}">')
        if ev == "leaf":
            out.append(f"{head}{card}</li>")
        else:
            state = " open" if c["open"] else ""
            out.append(f'{head}<details{state} data-open="{1 if c["open"] else 0}">'
                       f"<summary>{card}</summary><ul>")
    return Markup("\n".join(out))


def source_html(lines: Iterable[str]) -> Markup:
    """Numbered lines for a ``<pre class="source">``: each line ``n`` after a
    ``<span class="ln" id="L<n>">`` anchor (``#L12`` links land on it)."""
    return Markup("".join(f'<span class="ln" id="L{n}">{n}</span>{esc(text)}\n'
                          for n, text in enumerate(lines, 1)))
