"""The research diff (:func:`kb.review.diff.research_diff`'s dict) as text or Markdown.

Markdown is for a pull-request comment or a CI job summary: every piece of
research text (statements, titles, reasons, votes' reasons — written by
people and agents) is escaped so that it renders as the text it is: no
HTML, no links, no @mentions, no Markdown emphasis. Overrides and
renumberings come first, highlighted: they are what a reviewer must look at.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

def md_text(text: Any) -> str:
    """``text`` as inert Markdown inline text: one line, the dashboard's
    :func:`markdown_text` (HTML escaped, Markdown punctuation backslash-escaped),
    and no autolink or @mention (a PR comment would notify people)."""
    from kb.render.dashboard import markdown_text

    s = markdown_text(" ".join(str(text).split()))
    return s.replace("@", "&#64;").replace("://", "&#58;//").replace("www.", "www&#46;")


def _plain(text: Any) -> str:
    return " ".join(str(text).split())


class _Style:
    def __init__(self, markdown: bool, link_base: Optional[str]) -> None:
        self.md = markdown
        self.link_base = link_base.rstrip("/") if link_base else None
        self.t: Callable[[Any], str] = md_text if markdown else _plain

    def id(self, x: Any) -> str:
        s = str(x)
        if self.md:
            return "`" + s.replace("`", "'") + "`"
        return s

    def b(self, x: str) -> str:
        """``x`` in bold (Markdown). Spaces at its ends go outside the markers: ``**a: **``
        does not render bold (a closing ``**`` must follow text), and empty text stays
        empty (``****`` is no emphasis)."""
        if not self.md:
            return x
        core = x.strip()
        if not core:
            return x
        lead, trail = x[:len(x) - len(x.lstrip())], x[len(x.rstrip()):]
        return f"{lead}**{core}**{trail}"

    def where(self, path: str, line: int) -> str:
        loc = f"{path}:{line}" if line else path
        if not self.md:
            return loc
        if self.link_base:
            anchor = f"#L{line}" if line else ""
            return f"[{md_text(loc)}]({self.link_base}/{_url_path(path)}{anchor})"
        return "`" + loc.replace("`", "'") + "`"

    def commits(self, cs: list[str]) -> str:
        if not cs:
            return ""
        return " (" + ", ".join(c[:10] for c in cs[:3]) + (", …" if len(cs) > 3 else "") + ")"


def _url_path(path: str) -> str:
    from urllib.parse import quote

    return quote(path, safe="/")


def _what(x: dict[str, Any], t: Any) -> str:
    """What an ``edited`` entry changed: its fields, then its sections (``§ 实验设计``);
    "text only" when neither is named."""
    named = [t(f) for f in x.get("fields") or []] + [f"§ {t(s)}" for s in x.get("sections") or []]
    return ", ".join(named) or "text only"


def _how(x: dict[str, Any]) -> str:
    """How a verdict of ``d["verdicts"]`` was reached (``consensus``, ``split, forced``), as
    ``kb verdict`` says it; a dict without ``how`` (made before it existed) names its mode."""
    return str(x.get("how") or f"mode {x.get('mode') or '?'}")


def _num(x: Any) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return "—" if x is None else str(x)


def _sections(d: dict[str, Any], st: _Style) -> list[tuple[str, list[str]]]:
    t, i = st.t, st.id
    out: list[tuple[str, list[str]]] = []
    review: list[str] = []
    for u in d.get("unreadable") or []:
        review.append(f"unreadable {st.where(u['path'], u['line'])}: {t(u['message'])} "
                      "(its objects are not compared)")
    for r in d["renumberings"]:
        review.append(f"renumbered {i(r['from'])} → {i(r['to'])}{st.commits([r['commit']])}")
    for o in d["overrides"]:
        where = st.commits([o["commit"]]) if o["commit"] else " (KB_OVERRIDE)"
        review.append(f"override on {i(o['id'])}: {t(o['reason'] or '(no reason given)')}{where}")
    for x in d["cards"]["settled"]:
        if x.get("record") is False:
            review.append(f"settled {x['kind']} {i(x['id'])} ({t(x['status'])}) with no "
                          "verification record in the range: only a verdict settles it (KB312)")
    if review:
        out.append(("Review these (overrides, renumberings, unreadable files, settlements "
                    "without a record)", review))
    h = d["hypotheses"]
    lines = []
    for x in h["added"]:
        parent = f" under {i(x['parent'])}" if x.get("parent") else ""
        lines.append(f"added {i(x['id'])}{parent}: {t(x['statement'])} [{t(x['status'])}]")
    for x in h["corrected"]:
        why = f" — override: {t(x['reason'])}" if x.get("reason") else " — no override"
        lines.append(f"corrected {i(x['id'])}: {t(x['from'])} → {t(x['to'])}{why}")
    for x in h["status"]:
        ev = "; ".join(
            f"{i(e['id'])}" + (f" {t(e['conclusion'])}" if e.get("conclusion") else "")
            + (f" ({t(e['status'])})" if e.get("status") else "") for e in x["evidence"])
        why = f" — override: {t(x['reason'])}" if x.get("reason") else ""
        lines.append(f"status {i(x['id'])}: {t(x['from'])} → {st.b(t(x['to']))}"
                     + (f", evidence {ev}" if ev else "") + why)
    for x in h["evidence"]:
        parts = []
        if x["added"]:
            parts.append("+ " + ", ".join(i(e) for e in x["added"]))
        if x["removed"]:
            parts.append("− " + ", ".join(i(e) for e in x["removed"]))
        lines.append(f"evidence {i(x['id'])}: {' '.join(parts)}")
    for x in h["removed"]:
        lines.append(f"removed {i(x['id'])}: {t(x['statement'])}")
    if lines:
        out.append(("Hypotheses", lines))
    e = d["experiments"]
    lines = []
    for x in e["added"]:
        lines.append(f"added {i(x['id'])} for {i(x.get('hypothesis') or '?')}: {t(x['action'])} [{t(x['status'])}]")
    for x in e["finished"]:
        data = f"; data: {t(x['data'])}" if x.get("data") else ""
        lines.append(f"finished {i(x['id'])} ({i(x.get('hypothesis') or '?')}): conclusion "
                     f"{st.b(t(x.get('conclusion') or 'none'))}{data}")
    for x in e["conclusion_changed"]:
        why = f" — override: {t(x['reason'])}" if x.get("reason") else ""
        lines.append(f"conclusion of {i(x['id'])} rewritten: {t(x['from'])} → {t(x['to'])}{why}")
    for x in e["logged"]:
        lines.append(f"log of {i(x['id'])}: {x['entries']} entr{'y' if x['entries'] == 1 else 'ies'} appended")
    for x in e["edited"]:
        lines.append(f"edited {i(x['id'])} ({_what(x, t)})")
    for x in e["removed"]:
        lines.append(f"removed {i(x['id'])}")
    if lines:
        out.append(("Experiments", lines))
    c = d["cards"]
    lines = []
    for x in c["added"]:
        cat = f" in {t(x['category'])}" if x.get("category") else ""
        lines.append(f"added {x['kind']} {i(x['id'])}{cat}: {t(x['title'])} [{t(x['status'])}]")
    for x in c["entries_added"]:
        lines.append(f"entry {i(x['id'])} {t(x['entry'])} {x['number']}: {t(x['title'])} "
                     f"(概率{_num(x['probability'])}, {t(x['status'])})")
    for x in c["entries_changed"]:
        f = x["from"]
        parts = []
        if f.get("title") is not None and f["title"] != x["title"]:  # a retitled entry
            parts.append(f"{t(f['title'])} → {t(x['title'])}")
        if (f["probability"], f["status"]) != (x["probability"], x["status"]) or not parts:
            parts.append(f"概率{_num(f['probability'])} {t(f['status'])} → 概率{_num(x['probability'])} "
                         f"{t(x['status'])}")
        lines.append(f"entry {i(x['id'])} {t(x['entry'])} {x['number']}: " + "; ".join(parts))
    for x in c["status"]:
        lines.append(f"status {x['kind']} {i(x['id'])}: {t(x['from'])} → {st.b(t(x['to']))}")
    for x in c["probabilities"]:
        lines.append(f"probability {i(x['id'])}: {_num(x['from'])} → {_num(x['to'])}")
    for x in c["priorities"]:
        lines.append(f"priority {i(x['id'])}: {_num(x['from'])} → {_num(x['to'])}")
    for x in c["dependencies"]:
        parts = ([("+ " + ", ".join(i(v) for v in x["added"]))] if x["added"] else []) + \
                ([("− " + ", ".join(i(v) for v in x["removed"]))] if x["removed"] else [])
        lines.append(f"depends {i(x['id'])}: {' '.join(parts)}")
    for x in c["applications"]:
        lines.append(f"method {i(x['id'])} applied to {i(x['problem'])}")
    for x in c["settled"]:
        lines.append(st.b(f"settled {x['kind']} {i(x['id'])}: {t(x['status'])}"))
    for x in c["edited"]:
        lines.append(f"edited {x['kind']} {i(x['id'])} ({_what(x, t)})")
    for x in c["removed"]:
        lines.append(f"removed {x['kind']} {i(x['id'])}")
    if lines:
        out.append(("Problems, propositions, methods", lines))
    lines = []
    for x in d["verdicts"]:
        if "error" in x:
            lines.append(f"{st.where(x['path'], 0)}: {x['error']}")
            continue
        votes = ", ".join(f"{t(v['verifier'])} {_num(v['result'])}" for v in x["votes"])
        bad = f" — not valid: {t(x['invalid'])} (KB243; it settles nothing)" if x.get("invalid") else ""
        lines.append(f"verdict on {i(x['target'])}: {st.b(_num(x['verdict']))} from {len(x['votes'])} "
                     f"votes ({votes}), {t(_how(x))}{bad}")
    for x in d["verified"]["added"]:
        lines.append(f"Verified card {i(x['id'])} ({t(x['object_type'])}): {t(x['conclusion'])} — "
                     f"{st.where(x['path'], 0)}")
    for x in d["verified"]["changed"]:
        lines.append(st.b(f"Verified card {'deleted' if x['deleted'] else 'modified'}:") + " "
                     + st.where(x["path"], 0))
    for x in d.get("records_changed") or []:
        lines.append(st.b(f"Verification record {'deleted' if x['deleted'] else 'modified'}:")
                     + " " + st.where(x["path"], 0) + " (records are append-only)")
    if lines:
        out.append(("Verification", lines))
    tr = d.get("trail")
    if tr and any(tr.values()):
        lines = [f"node added {i(n.get('id'))} ({t(n.get('kind', ''))}, {t(n.get('status', ''))}): "
                 f"{t(n.get('title', ''))}" for n in tr.get("added", [])]
        lines += [f"node closed {i(n.get('id'))} ({t(n.get('kind', ''))}, {st.b(t(n.get('status', '')))}): "
                  f"{t(n.get('title', ''))}" for n in tr.get("closed", [])]
        out.append(("Exploration graph", lines))
    fs = d.get("findings")
    if fs:
        lines = []
        for f in fs:
            mark = "error" if f["blocking"] else f["severity"] + (" (pre-existing)" if f["pre_existing"] else "")
            lines.append(f"{st.where(f['path'], f['line'])} {f['code']} [{mark}] {t(f['message'])}")
        out.append(("Rule findings", lines))
    return out


def render(d: dict[str, Any], fmt: str = "text", link_base: Optional[str] = None,
           max_chars: Optional[int] = None) -> str:
    """The diff as ``text`` or ``markdown`` (Mermaid sub-diagram included in Markdown).

    ``link_base`` (Markdown): a URL prefix for file:line links, e.g.
    ``https://github.com/OWNER/REPO/blob/SHA``. ``max_chars`` bounds the output
    (a PR comment holds 65,536 characters): the diagram goes first, then the
    last list lines, and a final line says how much was left out.
    """
    text = _render(d, fmt, link_base, with_diagram=True)
    if max_chars is None or len(text) <= max_chars:
        return text
    text = _render(d, fmt, link_base, with_diagram=False)
    note = "Mermaid diagram left out (size limit)."
    if len(text) + len(note) + 2 <= max_chars:
        return text + "\n" + note + "\n"
    lines = text.splitlines()
    kept: list[str] = []
    size = 0
    for ln in lines:
        if size + len(ln) + 1 > max_chars - 200:
            break
        kept.append(ln)
        size += len(ln) + 1
    left = len(lines) - len(kept)
    kept += ["", f"{left} more line(s) left out (size limit {max_chars:,} characters); "
             "run `kb diff` locally for the whole diff."]
    return "\n".join(kept) + "\n"


def _rules_verdict(errors: int, blocking: int, warnings: int) -> str:
    """The Rules line's counts. The blocking errors are some of the errors, so they are
    said inside the error count ("3 error(s) (all blocking)"), never beside it ("3
    blocking error(s), 3 error(s)" read as six)."""
    if not (errors or warnings):
        return "no problems"
    which = ""
    if errors:
        which = " (all blocking)" if blocking >= errors else \
            f" ({blocking} blocking)" if blocking else " (none blocking)"
    return f"{errors} error(s){which}, {warnings} warning(s)"


def _render(d: dict[str, Any], fmt: str, link_base: Optional[str], with_diagram: bool) -> str:
    st = _Style(fmt == "markdown", link_base)
    base = d["base"][:12] if d["base"] else "the empty history"
    tip = d["tip"][:12] if d["source"] == "range" else d["source"].replace("worktree", "working tree")
    n = len(d["commits"])
    head = f"Research diff {base}..{tip}" + (f" ({n} commit{'s' if n != 1 else ''})" if d["source"] == "range" else "")
    if d["kb"] != ".":
        head += f", KB {d['kb']}"
    out = [("## " if st.md else "") + head, ""]
    secs = _sections(d, st)
    fsum = d.get("findings_summary")
    if fsum is not None:
        verdict = _rules_verdict(fsum["errors"], fsum["blocking"], fsum["warnings"])
        out += [("**Rules:** " if st.md else "Rules: ") + verdict, ""]
    if d["empty"]:
        out += ["No research objects changed.", ""]
    for title, lines in secs:
        out.append(("### " if st.md else "") + title)
        out += [("- " if st.md else "  ") + ln for ln in lines]
        out.append("")
    mm = d.get("mermaid")
    if st.md and mm and with_diagram:
        out.append("### Changed part of the tree")
        out += mm["lines"]
        if mm["note"]:
            out.append("")
            out.append(f"_{mm['note']}_")
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
