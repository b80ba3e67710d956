"""Cards merged as text: a problem's derived ``被依赖`` taken from both sides, entries kept.

``被依赖`` lists the problems whose ``依赖`` names the card (VIBEMATH-V3.md); kb
writes it whenever a problem is added or its ``依赖`` changes, so two branches that
each add a problem depending on one card both rewrite that card's one line, and
git's line merge stops on it although nobody disagrees. :func:`settle_derived`
gives the three versions one ``被依赖`` line before the line merge: the IDs of
both sides, less those either side removed from the base, in natural ID order
(what ``kb refresh`` computes when each side's list was right for its side; KB216
says so after the merge when it was not). Every other line is git's to merge.

When git's line merge stops, :func:`merge_entries` tries once more with the entries
each side added (``### 解法 3｜…`` blocks, numbers the base has not) taken out, the rest
line-merged, and the entries put back after their own side's neighbour: two teammates'
``kb entry add`` on one card, numbered apart by ``kb sync``, then merge cleanly, and a
conflict elsewhere in the card (two header lines) is left alone, outside the entries.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Optional

from kb.parse.common import dump_list, parse_list
from kb.research.dependencies import natural_key

#: A card's ``被依赖`` anchor line (:data:`kb.parse.card.CARD_ANCHOR` with the key fixed):
#: the part before the value, and the value.
_DEPENDED_BY = re.compile(r"^(?P<head>- 被依赖[ \t]*[:：][ \t]?)(?P<value>.*?)[ \t]*(?P<end>\r?)$",
                          re.MULTILINE)


def _line(text: str) -> Optional[re.Match[str]]:
    """The one ``被依赖`` line of ``text``; None when it has none or more than one
    (a card kb would report: the line merge decides)."""
    found = list(_DEPENDED_BY.finditer(text))
    return found[0] if len(found) == 1 else None


def _ids(m: re.Match[str]) -> Optional[tuple[str, ...]]:
    """The IDs of a ``被依赖`` line; None when unreadable (KB121: kept for the line merge)."""
    ids, diags = parse_list(m.group("value"), "", 0, m.group(0), "被依赖")
    return None if any(d.severity == "error" for d in diags) else ids


def settle_derived(base: bytes, ours: bytes, theirs: bytes) -> Optional[tuple[bytes, bytes, bytes]]:
    """The three versions with one merged ``被依赖`` line, or None when there is nothing
    to settle (the sides agree, a side has no such line or an unreadable one, a text
    is not UTF-8): then the versions are merged as they are.

    The merged line is our line with the merged list (our spelling of the key kept);
    the base gets it too when it had the line, so the line merge sees no change there.
    """
    try:
        texts = [b.decode("utf-8") for b in (base, ours, theirs)]
    except UnicodeDecodeError:
        return None
    b_m, o_m, t_m = (_line(t) for t in texts)
    if o_m is None or t_m is None or o_m.group("value") == t_m.group("value"):
        return None
    o_ids, t_ids = _ids(o_m), _ids(t_m)
    b_ids = _ids(b_m) if b_m is not None else ()
    if o_ids is None or t_ids is None or b_ids is None:
        return None
    gone = (set(b_ids) - set(o_ids)) | (set(b_ids) - set(t_ids))
    merged = sorted((set(o_ids) | set(t_ids)) - gone, key=natural_key)

    def put(text: str, m: Optional[re.Match[str]]) -> bytes:
        if m is None:
            return text.encode("utf-8")
        line = o_m.group("head") + dump_list(merged) + m.group("end")
        return (text[:m.start()] + line + text[m.end():]).encode("utf-8")

    return put(texts[0], b_m), put(texts[1], o_m), put(texts[2], t_m)


def conflict_regions(merged: bytes) -> list[str]:
    """What each conflict of a line-merged card is about, for the merge's message: the
    anchors both sides changed there (``- 计划:``) or else its lines, with the line of its
    ``<<<<<<<`` marker: ``["line 11: 计划"]``."""
    text = merged.decode("utf-8", "replace")
    out: list[str] = []
    start: Optional[int] = None
    keys: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("<<<<<<<"):
            start, keys = n, []
        elif start is not None and line.startswith(">>>>>>>"):
            what = ", ".join(dict.fromkeys(keys)) if keys else f"lines {start + 1}–{n - 1}"
            out.append(f"line {start}: {what}")
            start = None
        elif start is not None:
            m = _ANCHOR_KEY.match(line)
            if m is not None:
                keys.append(m.group(1))
    return out


#: The key of a card's anchor line (``- 计划: …``).
_ANCHOR_KEY = re.compile(r"^- ([A-Za-z\u4e00-\u9fff/·]+)[ \t]*[:：]")


# -- entries added on both sides ------------------------------------------------------

#: A heading that starts a segment of a card: levels 1-3 (an entry's ``####`` is its own).
_HEADING = re.compile(r"^#{1,3}(?:[ \t]|\r?$)")

Segment = tuple[tuple[Any, ...], str]


def _segments(text: str) -> Optional[list[Segment]]:
    """``text`` cut before every heading of level 1-3 outside code: (key, text) pairs whose
    texts join to ``text``. The key of an entry the card parser reads
    (:func:`kb.parse.card.entry_heading`; a malformed one, KB122, is no entry) is
    ``("entry", kind, number)``, of another heading ``("head", its line, its occurrence)``,
    of what comes before any ``("pre",)``. None when a side numbers two entries alike
    (KB142: nothing to merge by)."""
    from kb.parse.card import entry_heading
    from kb.text import compute_mask

    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    mask = compute_mask([ln.rstrip("\r\n") for ln in lines])
    out: list[Segment] = []
    key: tuple[Any, ...] = ("pre",)
    seen: dict[str, int] = {}
    entries: set[tuple[Any, ...]] = set()
    cur: list[str] = []
    for i, ln in enumerate(lines):
        if ln.startswith("#") and not mask[i] and _HEADING.match(ln):
            if cur or out:
                out.append((key, "".join(cur)))
            head = ln.rstrip("\r\n")
            entry = entry_heading(head)
            if entry is not None:
                key = ("entry", *entry)
                if key in entries:
                    return None
                entries.add(key)
            else:
                head = head.rstrip()
                seen[head] = seen.get(head, 0) + 1
                key = ("head", head, seen[head])
            cur = [ln]
        else:
            cur.append(ln)
    out.append((key, "".join(cur)))
    return out


class EntryMerge(NamedTuple):
    """What :func:`merge_entries` made of a card: ``data`` the merged bytes (None: nothing,
    git's line merge stands), ``clash`` each entry number both sides added with other text
    (``解法 1``), ``conflicted`` whether ``data`` holds conflict markers (the rest of the card
    conflicted; the entries are kept whole around them)."""

    data: Optional[bytes]
    clash: list[str]
    conflicted: bool = False


def merge_entries(base: bytes, ours: bytes, theirs: bytes) -> EntryMerge:
    """A card both sides changed, merged with the entries each side added kept whole.

    Each side's added entries (numbers the base has not) are taken out, the rest merged by
    git's line merge, and the entries put back after the heading block they followed on
    their side: theirs first, ours after (``kb sync`` numbered ours above theirs). When the
    rest conflicts, its markers stay and the entries are still put back: what is left to
    resolve is the rest alone. Nothing (``data`` None) for texts that are not UTF-8, a
    repeated number on a side, a number both sides added with other text (named in
    ``clash``: ``kb sync`` renumbers it), a neighbour the merge lost, or a merged card in
    which an entry put back would not be read (a block left open before it)."""
    try:
        texts = [b.decode("utf-8") for b in (base, ours, theirs)]
    except UnicodeDecodeError:
        return EntryMerge(None, [])
    b_s, o_s, t_s = (_segments(t) for t in texts)
    if b_s is None or o_s is None or t_s is None:
        return EntryMerge(None, [])
    old = {k for k, _t in b_s}
    t_add = {k: t for k, t in t_s if k[0] == "entry" and k not in old}
    o_add = {k: t for k, t in o_s if k[0] == "entry" and k not in old}
    clash = [k for k in o_add if k in t_add and t_add[k].strip() != o_add[k].strip()]
    if clash:
        return EntryMerge(None, [f"{k[1]} {k[2]}" for k in clash])
    if not t_add or not o_add:
        return EntryMerge(None, [])  # one side added none: the line merge has said what it had to
    o_add = {k: t for k, t in o_add.items() if k not in t_add}  # the same entry on both sides
    rest = _line_merged(texts[0], "".join(t for k, t in o_s if k not in o_add and k not in t_add),
                        "".join(t for k, t in t_s if k not in t_add))
    merged = _segments(rest[0]) if rest is not None else None
    if rest is None or merged is None:
        return EntryMerge(None, [])
    put: set[tuple[Any, ...]] = set()
    for side, added in ((t_s, t_add), (o_s, o_add)):
        for i, (k, text) in enumerate(side):
            if k not in added:
                continue
            before = side[i - 1][0] if i else None
            at = next((j for j, (mk, _t) in enumerate(merged) if mk == before), None)
            if at is None:
                return EntryMerge(None, [])
            at += 1
            while at < len(merged) and merged[at][0] in put and merged[at][0] not in added:
                at += 1  # after the other side's entries put at the same place
            prev_key, prev = merged[at - 1]
            if not prev.endswith("\n"):
                prev += "\n"
            if not _blank_end(prev) and prev.count("\n") > 1:
                # a blank line between the entry and a block of text before it: right after
                # an HTML block (`</details>`) its heading would be read as the block's text
                prev += "\r\n" if prev.endswith("\r\n") else "\n"
            merged[at - 1] = (prev_key, prev)
            merged.insert(at, (k, text if text.endswith("\n") or at == len(merged) else text + "\n"))
            put.add(k)
    out = "".join(t for _k, t in merged)
    read = _segments(out)
    if read is None or not put <= {k for k, _t in read}:
        return EntryMerge(None, [])  # an entry put back would not be read there
    return EntryMerge(out.encode("utf-8"), [], rest[1])


def _blank_end(text: str) -> bool:
    """Whether ``text`` ends with a blank line (a segment followed by one)."""
    return text.endswith(("\n\n", "\n\r\n"))


def _line_merged(base: str, ours: str, theirs: str) -> Optional[tuple[str, bool]]:
    """git's line merge of three texts (``git merge-file -p``): (the merged text, whether
    it holds conflict markers); None when git fails."""
    import subprocess
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="kb-card-") as d:
        files = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            f = Path(d) / name
            f.write_bytes(text.encode("utf-8"))
            files.append(str(f))
        proc = subprocess.run(["git", "merge-file", "-p", "-q", "-L", "ours", "-L", "base",
                               "-L", "theirs", *files], capture_output=True)
    if proc.returncode < 0 or proc.returncode > 127:
        return None
    try:
        return proc.stdout.decode("utf-8"), proc.returncode != 0
    except UnicodeDecodeError:
        return None
