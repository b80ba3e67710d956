"""Block-level three-way merge of ``tree.md`` (the kb-tree merge driver).

A tree is a preamble and one *block* per hypothesis (its heading, its anchor
lines up to the first blank line, then its prose). The merge works on blocks
keyed by ID, where git's line merge sees only neighbouring lines.

A block is its text without the blank lines that follow it: those are the
*gap* to the next block (or, after the last block, the end of the file), so
what a block is never depends on what comes after it — a block that became
the last one (the blocks after it removed) or stopped being the last one (a
block appended after it) is unchanged. Gaps are layout, merged apart from the
blocks: one side's changed gap is taken, a block followed by another keeps at
least one blank line, and the end of the file (blank lines, final newline) is
merged on its own.

- a block added on one side is kept where that side put it: in the same
  section, after the same neighbour as in that side's file (top-level blocks need
  not be in ID order: ``kb sync`` leaves a renumbered block where it was); blocks
  both sides added at the same place are both kept, siblings in ID order
  (``H1.2`` < ``H1.10`` < ``H2``);
- a statement, status or other anchor changed on one side only is taken, even
  when the other side changed a neighbouring line of the same block;
- Evidence and Children added on both sides are the union: our list in our
  order (less what their side removed), then what only theirs added, in their
  order (Children are then sorted by ID);
- prose changed on both sides is merged line by line (``git merge-file``);
- contradictions — the same ID added with different statements, the same
  anchor (e.g. Status) moved differently on both sides, prose both sides
  changed in the same place, a block removed on one side and changed on the
  other — leave that block as a conflict (git's markers around the two
  versions) and one clear diagnostic each.

Source: issue "team work through git"; format DESIGN.md §2.1.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, TypeVar

from kb.config import Config

_ANCHOR = re.compile(r"^([A-Za-z\u4e00-\u9fff]+)\s*[:：]\s?(.*)$")
_SEP = re.compile(r"[,，、;]")  # split, then each item stripped (linear; see kb.parse.common)
T = TypeVar("T")


@dataclass
class Block:
    """One hypothesis: ``heading`` line, ``anchors`` (key -> (raw line, value)) in
    file order, ``rest`` (the lines after the anchor block: blank + prose, without
    the blank lines that end the block) and ``gap`` (those blank lines: the layout
    up to the next block or the end of the file, never part of the block's text)."""

    id: str
    statement: str
    heading: str
    anchors: dict[str, tuple[str, str]] = field(default_factory=dict)
    rest: list[str] = field(default_factory=list)
    gap: list[str] = field(default_factory=list)
    level: int = 0  # the number of ``#`` of its heading

    def lines(self) -> list[str]:
        """The block's text in file order: heading, anchor lines, then the rest
        (without the ``gap``: two sides' blocks are compared by these lines)."""
        return [self.heading, *(raw for raw, _ in self.anchors.values()), *self.rest]


@dataclass
class Tree:
    """A parsed tree: ``preamble`` lines (without the blank lines that end it, kept
    in ``preamble_gap``), blocks in file order, the newline, a final newline."""

    preamble: list[str]
    blocks: list[Block]
    newline: str = "\n"
    final_newline: bool = True
    bom: bool = False
    preamble_gap: list[str] = field(default_factory=list)

    def tail(self) -> list[str]:
        """The blank lines that end the file (the gap of its last part)."""
        return self.blocks[-1].gap if self.blocks else self.preamble_gap

    def separators(self) -> dict[str, tuple[str, ...]]:
        """ID (``""``: the preamble) -> the gap after it, for every part another part
        follows (the last part's gap is the end of the file, not a separator)."""
        parts: list[tuple[str, list[str]]] = [("", self.preamble_gap)]
        parts += [(b.id, b.gap) for b in self.blocks]
        return {hid: tuple(gap) for hid, gap in parts[:-1]}


def _split_gap(lines: list[str]) -> tuple[list[str], list[str]]:
    """``lines`` without its trailing blank (or whitespace-only) lines, and those lines."""
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    return lines[:end], lines[end:]


@dataclass
class MergeResult:
    """``data``: the merged bytes (with conflict markers where ``conflicts``);
    ``conflicts``: one message per contradiction."""

    data: bytes
    conflicts: list[str]


class Unmergeable(Exception):
    """An input kb cannot read as a tree (bad UTF-8, conflict markers, parse
    errors that hide blocks): the caller falls back to git's line merge."""


def id_key(hid: str) -> tuple:
    """Sort key of a hypothesis ID in tree order (``H1.2`` < ``H1.10`` < ``H2``)."""
    out: list = []
    for part in hid.split("."):
        m = re.match(r"^(\D*)(\d+)(.*)$", part)
        out.append((m.group(1), int(m.group(2)), m.group(3)) if m else (part, -1, ""))
    return tuple(out)


def read_tree(data: bytes, config: Config, path: str = "tree.md") -> Tree:
    """Split tree bytes into preamble and blocks (kb's own tree parser finds the
    headings: fences, grammar and heading separators as everywhere else).
    Raises :class:`Unmergeable`."""
    from kb.merge.markers import may_have_conflict
    from kb.parse import parse_file
    from kb.text import DecodeError, SourceText, decode

    try:
        text, bom = decode(data, path)
    except DecodeError as exc:
        raise Unmergeable(str(exc)) from None
    if may_have_conflict(text):
        raise Unmergeable(f"{path} holds conflict markers")
    src = SourceText.from_text(text, path, bom)
    parsed = parse_file(path, data, config, fmt="tree")
    hyps = sorted((o for o in parsed.objects if o.kind == "hypothesis"), key=lambda o: o.line)
    lines = src.lines
    starts = [h.line - 1 for h in hyps]
    blocks: list[Block] = []
    seen: set[str] = set()
    for n, h in enumerate(hyps):
        if h.id in seen:
            raise Unmergeable(f"{path} declares {h.id} twice")
        seen.add(h.id)
        a = starts[n]
        b = starts[n + 1] if n + 1 < len(starts) else len(lines)
        body = lines[a + 1:b]
        anchors: dict[str, tuple[str, str]] = {}
        i = 0
        while i < len(body) and body[i].strip():
            m = _ANCHOR.match(body[i])
            if m is None or m.group(1) in anchors:
                break
            anchors[m.group(1)] = (body[i], m.group(2).strip())
            i += 1
        rest, gap = _split_gap(body[i:])
        blocks.append(Block(h.id, h.statement, lines[a], anchors, rest, gap, h.level))
    preamble, pre_gap = _split_gap(lines[: starts[0]] if starts else list(lines))
    final = text.endswith("\n") or not text
    return Tree(preamble, blocks, src.newline, final, bom, pre_gap)


def _three(base: Optional[T], ours: Optional[T], theirs: Optional[T]) -> tuple[Optional[T], bool]:
    """Scalar three-way merge: (value, conflict; ours when both changed it differently)."""
    if ours == theirs:
        return ours, False
    if ours == base:
        return theirs, False
    if theirs == base:
        return ours, False
    return ours, True


def _items(value: Optional[str]) -> list[str]:
    if value is None:
        return []
    v = value.strip()
    if not v or v in ("(empty)", "（空）"):
        return []
    return [x for x in (y.strip() for y in _SEP.split(v)) if x]


def _union(base: list[str], ours: list[str], theirs: list[str]) -> list[str]:
    """Ours in our order (without what their side removed of the base), then the items
    only theirs added, in their order: our list stays a prefix of the result and their
    additions keep their order (an append-only list: the merge commits as a plain append
    on our side, and the judgement of a merge counts only lost items against theirs)."""
    out = [x for x in ours if x not in base or x in theirs]
    for x in theirs:
        if x not in out and x not in base:
            out.append(x)
    return out


def _merge_lines(base: list[str], ours: list[str], theirs: list[str]) -> tuple[list[str], bool]:
    """Line merge of prose through ``git merge-file`` (no repository needed)."""
    if ours == theirs or theirs == base:
        return ours, False
    if ours == base:
        return theirs, False
    with tempfile.TemporaryDirectory(prefix="kb-merge-") as d:
        files = []
        for name, ls in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = Path(d) / name
            p.write_text("".join(x + "\n" for x in ls), encoding="utf-8", newline="")
            files.append(str(p))
        proc = subprocess.run(["git", "merge-file", "-p", *files], capture_output=True)
    if proc.returncode == 0:
        return proc.stdout.decode("utf-8", "surrogateescape").split("\n")[:-1], False
    return ours, True


def _merge_block(o: Optional[Block], a: Block, b: Block) -> tuple[Optional[Block], list[str]]:
    """Merge one hypothesis present on both sides (``o`` None: added on both)."""
    why: list[str] = []
    if o is None and " ".join(a.statement.split()) != " ".join(b.statement.split()):
        return None, [f"{a.id} was added on both sides with different statements "
                      f"(ours: “{a.statement}”, theirs: “{b.statement}”); renumber one side "
                      f"(`kb sync` does it with every reference)"]
    stmt, bad = _three(o.statement if o else None, a.statement, b.statement)
    if bad:
        why.append(f"the statement of {a.id} was changed differently on both sides")
    heading = a.heading if stmt == a.statement else b.heading
    anchors: dict[str, tuple[str, str]] = {}
    keys = list(a.anchors) + [k for k in b.anchors if k not in a.anchors]
    for k in keys:
        ov = o.anchors.get(k) if o else None
        av, bv = a.anchors.get(k), b.anchors.get(k)
        if k in ("Evidence", "Children", "证据", "子节点"):
            items = _union(_items(ov[1] if ov else None), _items(av[1] if av else None),
                           _items(bv[1] if bv else None))
            if k in ("Children", "子节点"):
                items.sort(key=id_key)
            side = av or bv
            assert side is not None
            if av is not None and _items(av[1]) == items:
                anchors[k] = av
            elif bv is not None and _items(bv[1]) == items:
                anchors[k] = bv
            else:
                colon = "：" if f"{k}：" in side[0] else ":"
                value = ", ".join(items) if items else "(empty)"
                anchors[k] = (f"{k}{colon} {value}", value)
            continue
        val, bad = _three(ov[1] if ov else None, av[1] if av else None, bv[1] if bv else None)
        if bad:
            what = "status" if k in ("Status", "状态") else f"the {k} line"
            why.append(f"{what} of {a.id} was changed differently on both sides "
                       f"(ours: {av[1] if av else '(none)'}, theirs: {bv[1] if bv else '(none)'}, "
                       f"base: {ov[1] if ov else '(none)'})")
            continue
        if val is None:
            continue
        anchors[k] = av if av is not None and av[1] == val else bv  # type: ignore[assignment]
    rest, bad = _merge_lines(o.rest if o else [], a.rest, b.rest)
    if bad:
        why.append(f"the prose under {a.id} was changed in the same place on both sides")
    if why:
        return None, why
    return Block(a.id, stmt or a.statement, heading, anchors, rest), []


def _conflict_lines(a: Optional[Block], b: Optional[Block], hid: str) -> list[str]:
    return ([f"<<<<<<< ours ({hid})", *(a.lines() if a else []), "=======",
             *(b.lines() if b else []), f">>>>>>> theirs ({hid})"])


def merge_trees(base: bytes, ours: bytes, theirs: bytes, config: Config,
                path: str = "tree.md") -> MergeResult:
    """Three-way merge of tree.md bytes. Raises :class:`Unmergeable` when an
    input cannot be read as a tree (the driver then falls back to a line merge)."""
    O = read_tree(base, config, path) if base else Tree([], [])
    A = read_tree(ours, config, path)
    B = read_tree(theirs, config, path)
    ob = {x.id: x for x in O.blocks}
    bb = {x.id: x for x in B.blocks}
    ab = {x.id: x for x in A.blocks}
    conflicts: list[str] = []
    out: list[tuple[str, list[str]]] = []  # (id, lines)
    levels = {x.id: x.level for x in B.blocks}
    levels.update((x.id, x.level) for x in A.blocks)
    their_order = {x.id: n for n, x in enumerate(B.blocks)}
    for blk in A.blocks:
        o, b = ob.get(blk.id), bb.get(blk.id)
        if b is None:
            # Compared without the gap: the blank lines after a block (or the end of
            # the file right after it) tell what follows the block, not what it says.
            if o is not None and o.lines() != blk.lines():
                conflicts.append(f"{blk.id} was removed on their side and changed on ours")
                out.append((blk.id, _conflict_lines(blk, None, blk.id)))
            elif o is None:
                out.append((blk.id, blk.lines()))
            continue  # removed by them, unchanged by us: removed (kb verify reports KB301)
        merged, why = _merge_block(o, blk, b)
        if merged is None:
            conflicts.extend(why)
            out.append((blk.id, _conflict_lines(blk, b, blk.id)))
        else:
            out.append((blk.id, merged.lines()))
    for blk in B.blocks:
        if blk.id in ab:
            continue
        o = ob.get(blk.id)
        if o is not None:
            if o.lines() != blk.lines():
                conflicts.append(f"{blk.id} was removed on our side and changed on theirs")
                lines = _conflict_lines(None, blk, blk.id)
            else:
                continue  # removed by us, unchanged by them
        else:
            lines = blk.lines()
        out.insert(_place(blk, B, their_order, out, levels), (blk.id, lines))
    pre, bad = _merge_lines(O.preamble, A.preamble, B.preamble)
    if bad:
        conflicts.append("the text above the first hypothesis was changed in the same place on both sides")
    lines = _lay_out([("", pre), *out], O, A, B)
    # A block that lost its trailing blank line by moving to the end (or away from it) keeps
    # the next heading apart: a heading directly after an anchor would read as an anchor.
    fixed: list[str] = []
    for ln in lines:
        if fixed and ln.startswith("#") and fixed[-1].strip() and _is_decl(ln, ab, bb):
            fixed.append("")
        fixed.append(ln)
    nl = A.newline
    final, _ = _three(O.final_newline, A.final_newline, B.final_newline)
    text = nl.join(fixed) + (nl if final else "")
    data = text.encode("utf-8")
    if A.bom:
        data = b"\xef\xbb\xbf" + data
    return MergeResult(data, conflicts)


def _place(blk: Block, B: Tree, theirs: dict[str, int], out: list[tuple[str, list[str]]],
           levels: dict[str, int]) -> int:
    """Where in ``out`` (ours' blocks in our order, theirs' placed so far) a block only
    their side has goes: after the block that precedes it in their file (the nearest
    one ``out`` has), then past what belongs to another section there — blocks
    deeper than it (the subtree of that neighbour or of a sibling before it),
    siblings that precede it in their file and siblings only we added with a lower
    ID — stopping at a block of a higher level (its parent's section ends) or a
    sibling that follows it. Never by ID order alone: top-level blocks need not be
    in ID order (``kb sync`` leaves a renumbered block in place)."""
    mine = theirs[blk.id]
    at = {hid: n for n, (hid, _) in enumerate(out)}
    prev = next((at[B.blocks[n].id] for n in range(mine - 1, -1, -1) if B.blocks[n].id in at), -1)
    key = id_key(blk.id)
    i = prev + 1
    while i < len(out):
        hid = out[i][0]
        level = levels.get(hid, blk.level)
        if level < blk.level:
            break
        if level == blk.level:
            n = theirs.get(hid)
            if (id_key(hid) > key) if n is None else (n > mine):
                break
        i += 1
    return i


def _lay_out(parts: list[tuple[str, list[str]]], O: Tree, A: Tree, B: Tree) -> list[str]:
    """The merged parts (``""``: the preamble, then blocks by ID) joined by their gaps.

    The gap after a part another part follows is taken three-way from the sides on
    which another part followed it too (the last part of a side says nothing about
    separators); a block followed by another keeps at least one blank line. The end
    of the file (blank lines after the last part) is merged three-way on its own.
    """
    seps = (O.separators(), A.separators(), B.separators())
    tail, _ = _three(tuple(O.tail()), tuple(A.tail()), tuple(B.tail()))
    lines: list[str] = []
    for n, (hid, ls) in enumerate(parts):
        lines.extend(ls)
        if n == len(parts) - 1:
            lines.extend(tail or ())
            break
        o, a, b = (s.get(hid) for s in seps)
        if a is None and b is None:
            gap = o
        elif a is None or b is None:
            gap = a if b is None else b
        else:
            gap, _ = _three(o, a, b)  # both changed it differently: ours
        if not gap and (hid or ls):  # a block (or preamble text) followed by a block
            gap = ("",)
        lines.extend(gap or ())
    return lines


def _is_decl(line: str, *sides: dict[str, Block]) -> bool:
    return any(line == blk.heading for s in sides for blk in s.values())
