"""``kb prime``: the compact session-start context an agent reads first.

At most :data:`LIMIT` characters of Markdown: the KB's layout and its rules in
brief, active hypotheses, open problems by priority, held locks, and (with
``since``) the commits and paths changed since a given commit. Sections are
cut from their end (least urgent last) so the whole fits; what was cut is
counted. The same text is the MCP server's ``kb://prime`` resource and
``prime`` prompt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

from kb import git
from kb.errors import UsageError
from kb.repo import KnowledgeBase, open_kb

#: The most characters :func:`prime_text` returns (issue: ≤ 8,000).
LIMIT = 8000

RULES = """\
- Write only through kb (CLI `kb …`, or the MCP tools): each write is one transaction
  and one commit with Kb-Op / Kb-Id trailers; hand edits of anchor lines are checked by
  `kb verify` and the pre-commit hook.
- IDs are never reused. A hypothesis moves 待验 → 进行中 → 被支持 | 被推翻, and 被支持 /
  被推翻 need Evidence (an experiment); a recorded experiment conclusion is final.
- Problems and propositions settle only through `kb verdict` (two or more votes);
  Verified cards are immutable.
- Compare-and-swap: reads return `blob`, writes return `blobs`; pass it as `expect`
  (`--expect`) and a write is refused with kind `stale` if the file changed.
- Locks: `kb lock claim PATH` before a long edit; a file locked by another owner is
  refused with kind `locked`. Errors carry a kind: usage, environment, internal,
  refused, not_found, conflict, locked, stale."""


def _kb(kb: Union[KnowledgeBase, str, Path, None]) -> KnowledgeBase:
    return kb if isinstance(kb, KnowledgeBase) else open_kb(Path(kb) if kb else None)


def _section(title: str, lines: list[str], budget: int) -> tuple[list[str], int]:
    """The section's lines within ``budget`` characters, and how many items were cut."""
    out = [f"## {title}", ""]
    used = sum(len(x) + 1 for x in out)
    kept = 0
    for ln in lines:
        if used + len(ln) + 1 > budget:
            break
        out.append(ln)
        used += len(ln) + 1
        kept += 1
    cut = len(lines) - kept
    if cut:
        out.append(f"- … {cut} more (see `kb ls` / `kb brief`)")
    if not lines:
        out.append("(none)")
    return out + [""], cut


def since_lines(k: KnowledgeBase, since: str) -> list[str]:
    """``- <short> <subject>`` per commit in ``since..HEAD``, then ``  M path`` per changed path.

    Raises UsageError when ``since`` is not a commit of this repository."""
    if git.rev_parse(since, k.top) is None:
        raise UsageError(f"--since {since!r} is not a commit of this repository")
    log = git.run(["log", "--format=%h %s", f"{since}..HEAD", "--", k.root.as_posix()],
                  k.top).stdout.decode("utf-8", "replace").splitlines()
    diff = git.run(["diff", "--name-status", since, "HEAD", "--", k.root.as_posix()],
                   k.top).stdout.decode("utf-8", "replace").splitlines()
    return [f"- {ln}" for ln in log] + [f"  {ln.replace(chr(9), ' ')}" for ln in diff]


def prime_text(kb: Union[KnowledgeBase, str, Path, None] = None, since: str | None = None,
               limit: int = LIMIT) -> str:
    """The session-start Markdown of the KB at ``kb`` (default: the current directory).

    ``since``: a commit; the changes after it are listed. At most ``limit``
    characters. Raises NotAKnowledgeBase, UsageError (a bad ``since``)."""
    from kb.api import list_objects
    from kb.ops.lock_status import status
    from kb.views.brief import brief_data

    k = _kb(kb)
    cfg = k.config
    head = git.rev_parse("HEAD", k.top)
    layout = [f"- KB `{k.root.name}` (locale {cfg.locale}), HEAD {head[:12] if head else '(none)'}"]
    layout += [f"- {key}: `{p}`" for key, p in sorted(cfg.paths.items())]
    _k, hyps = list_objects("hypotheses", None, k.root)
    active = [f"- {r.id} [{r.status}] {r.fields().get('statement', r.title)}"
              for r in hyps if r.status in ("进行中", "待验")]
    brief = brief_data(k)
    problems = [f"- {p['id']} (priority {p.get('priority')}, {p.get('status')}) {p.get('title', '')}"
                + (f" — waits for {', '.join(p['unsettled_depends'])}" if p.get("unsettled_depends")
                   else "") for p in brief.get("open_problems", [])]
    rep = status(k)
    locks = [f"- {st.lock.path or '[project]'} held by {st.lock.owner} until "
             f"{st.lock.as_dict()['expires']}{' (expired)' if st.expired else ''}"
             for st in list(rep.locks) + ([rep.project] if rep.project else [])]
    changed = since_lines(k, since) if since else []
    header = ["# kb prime", "", "## Layout", "", *layout, "", "## Rules", "", RULES, ""]
    out = list(header)
    budget = limit - sum(len(x) + 1 for x in header)
    parts = [("Locks held", locks), ("Active hypotheses", active),
             ("Open problems by priority", problems)]
    if since:
        parts.append((f"Changed since {since}", changed))
    # Each remaining section gets an equal share of what is left, at least.
    for i, (title, lines) in enumerate(parts):
        share = budget // (len(parts) - i)
        sec, _cut = _section(title, lines, share)
        out += sec
        budget -= sum(len(x) + 1 for x in sec)
    text = "\n".join(out).rstrip("\n") + "\n"
    return text if len(text) <= limit else text[: limit - 2] + "…\n"


__all__ = ["prime_text", "since_lines", "LIMIT", "RULES"]
