"""The tree.md merge driver: a block is its text, not what follows it.

The blank lines after a hypothesis block, the end of the file right after it, the
final newline and CRLF line endings say where the next block starts — not what
the block says. Removing the last block on one side while the other side appends
one (so that the removed block now has a follower there) is a clean merge in
either direction, also for the last child of a parent and in CRLF files; a
block removed on one side and really changed on the other stays a conflict.

Every test runs ``git merge`` in a real repository with kb's registered driver.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, write_files

H1 = "## H1: Loading is the bottleneck\nStatus: 待验\nEvidence: (empty)\n"
H2 = "## H2: Mixed precision slows convergence\nStatus: 待验\nEvidence: (empty)\n"
H3 = "## H3: Batch size hides the stall\nStatus: 待验\nEvidence: (empty)\n"
HEAD = "# Hypothesis Tree\n\n"


def _kb(tmp_path: Path, tree: str) -> Path:
    """A committed KB (kb init: the drivers registered) whose tree.md is ``tree``, on main."""
    from kb.ops.init import init_kb

    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    init_kb(root)
    write_files(root, {"tree.md": tree})
    assert invoke("dashboard", "--no-commit", cwd=root).code in (0, 1)
    commit_all(root, "base")
    return root


def _write(root: Path, text: str, message: str) -> None:
    write_files(root, {"tree.md": text})
    commit_all(root, message)


def _tree(root: Path) -> str:
    return (root / "tree.md").read_bytes().decode("utf-8")


def _merge(root: Path, branch: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "merge", "--no-edit", branch], cwd=root, capture_output=True)


def _driver_messages(proc: subprocess.CompletedProcess) -> list[str]:
    return [ln.strip() for ln in proc.stderr.decode("utf-8", "replace").splitlines()
            if ln.startswith("kb merge: tree.md")]


def _cut(text: str, heading: str, until: str = "") -> str:
    """``text`` without the block from ``heading`` to ``until`` (default: the end of the
    file), keeping the file's own ending (newline style, blank lines, final newline)."""
    i = text.index(heading)
    if until:
        return text[:i] + text[text.index(until):]
    return text[:i].rstrip("\r\n") + text[len(text.rstrip("\r\n")):]


def _clean(proc: subprocess.CompletedProcess, root: Path) -> str:
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    assert _driver_messages(proc) == []
    assert git(root, "status", "--porcelain", "--", "tree.md") == ""
    assert len(git(root, "log", "-1", "--format=%P").split()) == 2  # the merge was committed
    text = _tree(root)
    assert "<<<<<<<" not in text and ">>>>>>>" not in text
    return text


ENDINGS = {"lf": ("\n", "\n"), "crlf": ("\r\n", "\r\n"), "no-final-newline": ("\n", "")}


def _base(nl: str, end: str, *blocks: str) -> str:
    text = HEAD + "\n".join(blocks)
    return text.rstrip("\n").replace("\n", nl) + end


def _remove_on(root: Path, remover: str, text: str, message: str) -> None:
    """Branch ``side`` off ``main``; on the remover's branch (``ours``: main, ``theirs``:
    side) commit ``text`` as tree.md; end on the other branch, for its own change."""
    git(root, "checkout", "-qb", "side")
    git(root, "checkout", "-q", "main" if remover == "ours" else "side")
    _write(root, text, message)
    git(root, "checkout", "-q", "side" if remover == "ours" else "main")


@pytest.mark.parametrize("ending", list(ENDINGS))
@pytest.mark.parametrize("remover", ["theirs", "ours"])
def test_last_block_removed_on_one_side_and_a_block_appended_on_the_other(
        tmp_path: Path, remover: str, ending: str) -> None:
    nl, end = ENDINGS[ending]
    root = _kb(tmp_path, _base(nl, end, H1, H2))
    base = _tree(root)
    # ours (main) vs theirs (side): the remover removes H2, the other appends H3 with kb.
    _remove_on(root, remover, _cut(base, "## H2:"), "remove H2")
    assert invoke("hyp", "add", "Batch size hides the stall", cwd=root).code == 0
    appended = _tree(root)
    assert "## H3: Batch size hides the stall" in appended
    git(root, "checkout", "-q", "main")
    text = _clean(_merge(root, "side"), root)
    # H1 and H3 as the appending side wrote them, H2 gone with its blank line.
    assert text == _cut(appended, "## H2:", "## H3:")
    assert text.count("\n") == text.count(nl)  # one newline style


@pytest.mark.parametrize("remover", ["theirs", "ours"])
@pytest.mark.parametrize("nl", ["\n", "\r\n"])
def test_last_child_removed_on_one_side_and_a_child_added_on_the_other(
        tmp_path: Path, remover: str, nl: str) -> None:
    parent = "## H1: Loading is the bottleneck\nStatus: 进行中\nEvidence: (empty)\nChildren: H1.1, H1.2\n"
    c1 = "### H1.1: JPEG decoding dominates\nStatus: 待验\nEvidence: (empty)\nParent: H1\n"
    c2 = "### H1.2: Disk reads dominate\nStatus: 待验\nEvidence: (empty)\nParent: H1\n"
    root = _kb(tmp_path, _base(nl, nl, parent, c1, c2))
    base = _tree(root)
    removed = _cut(base, "### H1.2:").replace("Children: H1.1, H1.2", "Children: H1.1")
    _remove_on(root, remover, removed, "remove H1.2")
    assert invoke("hyp", "add", "--parent", "H1", "Page cache misses", cwd=root).code == 0
    assert "### H1.3: Page cache misses" in _tree(root)
    git(root, "checkout", "-q", "main")
    text = _clean(_merge(root, "side"), root)
    heads = [ln.split(":")[0] for ln in text.splitlines() if ln.startswith("#")]
    assert heads == ["# Hypothesis Tree", "## H1", "### H1.1", "### H1.3"]
    assert f"Children: H1.1, H1.3{nl}" in text and "H1.2" not in text
    assert nl == "\n" or text.count("\n") == text.count("\r\n")


@pytest.mark.parametrize("remover", ["theirs", "ours"])
@pytest.mark.parametrize("nl, before, after", [("\n", "\n\n", "\n"), ("\n", "\n", "\n\n"),
                                               ("\r\n", "\r\n\r\n", "\r\n")],
                         ids=["blank-line-dropped", "blank-line-added", "crlf-blank-line-dropped"])
def test_the_end_of_the_file_is_not_the_last_blocks_text(
        tmp_path: Path, remover: str, nl: str, before: str, after: str) -> None:
    """One side only changed how the file ends (a blank line after the last block); the
    other removed that last block: a clean removal, the file ending as the first side made it."""
    root = _kb(tmp_path, _base(nl, before, H1, H2))
    base = _tree(root)
    _remove_on(root, remover, _cut(base, "## H2:"), "remove H2")
    _write(root, base[:-len(before)] + after, "end the file differently")
    git(root, "checkout", "-q", "main")
    text = _clean(_merge(root, "side"), root)
    assert text == (HEAD + H1).rstrip("\n").replace("\n", nl) + after


@pytest.mark.parametrize("remover", ["theirs", "ours"])
def test_blank_lines_after_a_block_are_not_its_text(tmp_path: Path, remover: str) -> None:
    """One side only spaced the blocks differently (two blank lines after H2, none
    at the end); the other removed H2: a clean removal."""
    root = _kb(tmp_path, _base("\n", "\n", H1, H2, H3))
    base = _tree(root)
    respaced = base.replace(H2 + "\n", H2 + "\n\n")
    _remove_on(root, remover, _cut(base, "## H2:", "## H3:"), "remove H2")
    _write(root, respaced, "space the blocks")
    git(root, "checkout", "-q", "main")
    text = _clean(_merge(root, "side"), root)
    assert text == HEAD + H1 + "\n" + H3


@pytest.mark.parametrize("editor", ["theirs", "ours"])
@pytest.mark.parametrize("nl", ["\n", "\r\n"])
def test_prose_at_the_end_of_the_last_block_merges_with_a_block_appended_after_it(
        tmp_path: Path, editor: str, nl: str) -> None:
    root = _kb(tmp_path, _base(nl, nl, H1, H2 + "\nMeasured on one GPU.\n"))
    base = _tree(root)
    git(root, "checkout", "-qb", "side")
    git(root, "checkout", "-q", "main" if editor == "ours" else "side")
    _write(root, base.replace("Measured on one GPU.", "Measured on one GPU and on eight."),
           "edit the prose")
    git(root, "checkout", "-q", "side" if editor == "ours" else "main")
    assert invoke("hyp", "add", "Batch size hides the stall", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    text = _clean(_merge(root, "side"), root)
    assert f"Evidence: (empty){nl}{nl}Measured on one GPU and on eight.{nl}{nl}## H3: Batch size" in text


@pytest.mark.parametrize("remover", ["theirs", "ours"])
@pytest.mark.parametrize("nl", ["\n", "\r\n"])
def test_a_block_removed_and_really_changed_is_still_the_only_conflict(
        tmp_path: Path, remover: str, nl: str) -> None:
    """One side removes H2 and the last block H3; the other changes H2 (its status, or
    its prose) and appends H4. H2 is a conflict — and only H2: H3 is removed, H4 kept."""
    root = _kb(tmp_path, _base(nl, nl, H1, H2, H3))
    base = _tree(root)
    _remove_on(root, remover, _cut(base, "## H2:"), "remove H2 and H3")
    if remover == "theirs":
        assert invoke("hyp", "status", "H2", "进行中", cwd=root).code == 0
    else:
        _write(root, base.replace(f"## H2: Mixed precision slows convergence{nl}Status: 待验{nl}"
                                  f"Evidence: (empty){nl}",
                                  f"## H2: Mixed precision slows convergence{nl}Status: 待验{nl}"
                                  f"Evidence: (empty){nl}{nl}Seen twice at fp16.{nl}"), "H2 prose")
    assert invoke("hyp", "add", "Optimizer state thrashes", cwd=root).code == 0
    git(root, "checkout", "-q", "main")
    proc = _merge(root, "side")
    assert proc.returncode != 0
    side = "their" if remover == "theirs" else "our"
    other = "ours" if remover == "theirs" else "theirs"
    assert _driver_messages(proc) == [
        f"kb merge: tree.md: H2 was removed on {side} side and changed on {other}"]
    text = _tree(root)
    assert text.count("<<<<<<<") == 1 and "<<<<<<< ours (H2)" in text
    assert "## H3:" not in text and "## H4: Optimizer state thrashes" in text
    inside = text[text.index("<<<<<<<"):text.index(">>>>>>>")]
    assert ("进行中" in inside) if remover == "theirs" else ("Seen twice at fp16." in inside)
    git(root, "merge", "--abort")
