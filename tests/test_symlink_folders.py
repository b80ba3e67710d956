"""A symlink under a folder of cards or experiments is said, never silent.

``ln -s /elsewhere Propos/外部`` (a category folder holding a card), ``Verified/问题/more``
and ``Problems/x``: git tracks the link (mode 120000), not the files it shows, so kb
reads no card through it. A link whose target leaves the KB is KB106 (an error, as a
file that is such a link: the hook refuses a commit that adds one, one HEAD holds as it
is does not block); a link to a folder inside the KB is KB134 (a warning: the files
count where they are). Every reader says so at the link's path: ``kb verify`` in the
working tree, in the staged index (the hook), over a commit and a range in a fresh
clone; ``kb index`` and ``kb ls``. A link to a file inside the KB and links in free
folders (``Notes/``) hide nothing kb reads: no word. Real git repositories, real
symlinks.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import commit_all, count_processes, git, invoke
from test_verify_support import git_run, problem, proposition

#: The testers' links: KB-relative path of each (the folders above exist).
LINKS = ("Propos/外部", "Verified/问题/more", "Problems/x")


def _elsewhere(tmp_path: Path) -> Path:
    """A folder outside the work tree holding a proposition card p9."""
    away = tmp_path / "elsewhere"
    away.mkdir(exist_ok=True)
    (away / "p9.md").write_text(proposition("p9"), encoding="utf-8")
    return away


def _kb(make_kb) -> Path:
    """A committed KB with a problem and a proposition in category 代数."""
    return make_kb({"Problems/q1.md": problem("q1"), "Propos/代数/p1.md": proposition("p1"),
                    "Verified/问题/.keep": "", "Notes/n.md": "free text\n"}, commit=True)


def _link_all(root: Path, away: Path) -> None:
    for rel in LINKS:
        (root / rel).symlink_to(away, target_is_directory=True)


def _codes(r, code: str) -> list[tuple[str, str]]:
    """(path, severity) of each ``code`` diagnostic of a ``--json`` result."""
    return sorted((d["path"], d["severity"]) for d in r.json()["diagnostics"] if d["code"] == code)


def _no_traceback(*results) -> None:
    for r in results:
        assert "Traceback" not in r.stderr + r.stdout, r.stderr


def test_links_leaving_the_kb_under_card_folders_are_kb106_for_every_reader(make_kb, tmp_path) -> None:
    root = _kb(make_kb)
    away = _elsewhere(tmp_path)
    _link_all(root, away)
    # the work tree, before anything is staged (untracked links)
    wt = invoke("verify", "--json", cwd=root)
    assert wt.code == 1 and _codes(wt, "KB106") == sorted((p, "error") for p in LINKS), wt.stdout
    git(root, "add", "-A")
    staged = invoke("verify", "--staged", "--json", cwd=root)
    found = [(d["path"], d["blocking"]) for d in staged.json()["diagnostics"] if d["code"] == "KB106"]
    assert staged.code == 1 and sorted(found) == sorted((p, True) for p in LINKS), staged.stdout
    msg = next(d["message"] for d in staged.json()["diagnostics"] if d["path"] == "Propos/外部")
    assert f"is a symlink to {os.path.realpath(away)}, outside the work tree" in msg, msg
    assert "cp -R" in msg, msg
    base = git(root, "rev-parse", "HEAD")
    commit_all(root, "links")  # plain git: no hook
    for args in (["verify"], ["verify", "--rev", "HEAD"], ["index"]):
        r = invoke(*args, "--json", cwd=root)
        assert r.code == 1 and _codes(r, "KB106") == sorted((p, "error") for p in LINKS), (args, r.stdout)
    # committed as it is, the link does not block a later commit of something else
    (root / "Notes" / "n.md").write_text("more free text\n", encoding="utf-8")
    git(root, "add", "-A")
    again = invoke("verify", "--staged", "--json", cwd=root)
    pre = [(d["path"], d["pre_existing"], d["blocking"]) for d in again.json()["diagnostics"]
           if d["code"] == "KB106"]
    assert again.code == 0 and sorted(pre) == sorted((p, True, False) for p in LINKS), again.stdout
    # kb ls says why a listing may miss cards; nothing of p9 is read
    listed = invoke("ls", "propositions", cwd=root)
    assert listed.code == 0 and "p9" not in listed.stdout and "p1" in listed.stdout
    assert "kb: Propos/外部:1: KB106 [error] Propos/外部 is a symlink" in listed.stderr, listed.stderr
    # a fresh clone's range check (CI) refuses the commit that made the links
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(root), str(clone))
    rng = invoke("verify", "--range", f"{base}..HEAD", "--json", cwd=clone)
    assert rng.code == 1 and _codes(rng, "KB106") == sorted((p, "error") for p in LINKS), rng.stdout
    _no_traceback(wt, staged, again, listed, rng)


def test_the_pre_commit_hook_refuses_a_link_leaving_the_kb_in_a_category(make_kb, tmp_path) -> None:
    root = _kb(make_kb)
    assert invoke("hooks", "install", cwd=root).code == 0
    commit_all(root, "hooks")
    head = git(root, "rev-parse", "HEAD")
    away = _elsewhere(tmp_path)
    (root / "Propos" / "外部").symlink_to(away, target_is_directory=True)
    git(root, "add", "-A")
    proc = git_run(root, "commit", "-q", "-m", "cards elsewhere")
    said = (proc.stdout + proc.stderr).decode("utf-8")
    assert proc.returncode == 1 and "Propos/外部:1:1: KB106 [error]" in said, said
    assert "Traceback" not in said and git(root, "rev-parse", "HEAD") == head
    assert os.listdir(away) == ["p9.md"]


def test_a_link_to_a_folder_inside_the_kb_is_a_warning(make_kb, tmp_path) -> None:
    """``Propos/别名`` -> ``代数`` (a folder of the KB): the cards are read where they
    are; the link is KB134, a warning that blocks nothing, in every mode."""
    root = _kb(make_kb)
    (root / "Propos" / "别名").symlink_to("代数", target_is_directory=True)
    wt = invoke("verify", "--json", cwd=root)
    assert _codes(wt, "KB134") == [("Propos/别名", "warning")], wt.stdout
    msg = next(d["message"] for d in wt.json()["diagnostics"] if d["code"] == "KB134")
    assert "symlink to the folder Propos/代数 of the KB" in msg, msg
    git(root, "add", "-A")
    staged = invoke("verify", "--staged", "--json", cwd=root)
    assert staged.code == 0 and _codes(staged, "KB134") == [("Propos/别名", "warning")], staged.stdout
    commit_all(root, "alias")
    for args in (["verify"], ["verify", "--rev", "HEAD"], ["index"]):
        r = invoke(*args, "--json", cwd=root)
        assert r.code == 0 and _codes(r, "KB134") == [("Propos/别名", "warning")], (args, r.stdout)
        assert _codes(r, "KB106") == [], (args, r.stdout)
    listed = invoke("ls", "propositions", cwd=root)
    assert "p1" in listed.stdout and "KB134" in listed.stderr, (listed.stdout, listed.stderr)
    _no_traceback(wt, staged, listed)


def test_a_chain_through_a_link_elsewhere_in_the_kb_is_followed(make_kb, tmp_path) -> None:
    """``Propos/ch`` -> ``../ext`` and ``ext`` -> a folder outside: the link leaves the KB
    in git's snapshots too (``ext`` is a link git lists, not a folder); ``ext`` itself,
    outside every folder of cards, hides nothing kb reads."""
    root = _kb(make_kb)
    away = _elsewhere(tmp_path)
    (root / "ext").symlink_to(away, target_is_directory=True)
    (root / "Propos" / "ch").symlink_to("../ext", target_is_directory=True)
    git(root, "add", "-A")
    staged = invoke("verify", "--staged", "--json", cwd=root)
    assert _codes(staged, "KB106") == [("Propos/ch", "error")], staged.stdout
    commit_all(root, "chain")
    for args in (["verify"], ["verify", "--rev", "HEAD"]):
        r = invoke(*args, "--json", cwd=root)
        assert _codes(r, "KB106") == [("Propos/ch", "error")], (args, r.stdout)


def test_links_that_hide_nothing_kb_reads_are_not_said(make_kb, tmp_path) -> None:
    """A link to a file inside the KB (an image a card shows), links in free folders and
    at the KB's top, and a link to nothing under a card folder: no diagnostic."""
    root = _kb(make_kb)
    away = _elsewhere(tmp_path)
    (root / "assets").mkdir()
    (root / "assets" / "a.png").write_bytes(b"\x89PNG")
    (root / "Problems" / "a.png").symlink_to("../assets/a.png")
    (root / "Notes" / "ext").symlink_to(away, target_is_directory=True)
    (root / "data").symlink_to(away, target_is_directory=True)
    (root / "Problems" / "gone").symlink_to("nothing-here")
    commit_all(root, "links kb does not read through")
    for args in (["verify"], ["verify", "--staged"], ["verify", "--rev", "HEAD"], ["index"]):
        r = invoke(*args, "--json", cwd=root)
        said = [d for d in r.json()["diagnostics"] if d["code"] in ("KB005", "KB106", "KB134")]
        assert r.code == 0 and said == [], (args, r.stdout)


def test_the_kbs_severity_setting_applies(make_kb, tmp_path) -> None:
    root = make_kb({"Problems/q1.md": problem("q1")},
                   config='[kb]\n\n[rules.severity]\nKB106 = "warning"\nKB134 = "off"\n', commit=True)
    away = _elsewhere(tmp_path)
    (root / "Problems" / "x").symlink_to(away, target_is_directory=True)
    (root / "Problems" / "y").symlink_to(".", target_is_directory=True)
    commit_all(root, "links")
    for args in (["verify"], ["verify", "--staged"], ["verify", "--rev", "HEAD"], ["index"]):
        r = invoke(*args, cwd=root)
        assert r.code == 0 and "Problems/x:1:1: KB106 [warning]" in r.stdout, (args, r.stdout)
        assert "KB134" not in r.stdout, (args, r.stdout)


def test_the_listing_finds_links_under_card_folders_without_a_git_process(make_kb, tmp_path,
                                                                         monkeypatch) -> None:
    """The hook's listing: the links are in git's output already (none of a free folder)."""
    from kb.repo import staged_snapshot, open_kb

    root = _kb(make_kb)
    _link_all(root, _elsewhere(tmp_path))
    (root / "Notes" / "ext").symlink_to(tmp_path, target_is_directory=True)
    commit_all(root, "links")
    k = open_kb(root)
    listing = subprocess.run(["git", "ls-files", "-s", "-z"], cwd=root, capture_output=True,
                             check=True).stdout
    started = count_processes(monkeypatch)
    snap = staged_snapshot(k, listing)
    assert started == [] and sorted(snap.folder_links) == sorted(LINKS)


def test_a_link_to_the_git_folder_leaves_the_kb(make_kb, tmp_path) -> None:
    """``Problems/gitdir`` -> ``../.git``: git's own folder is no part of the KB (git tracks
    nothing in it), so the link leaves the KB — KB106, worded as such — in every mode, and
    is never KB134's "folder of the KB"; the same for a folder inside ``.git``."""
    root = _kb(make_kb)
    (root / "Problems" / "gitdir").symlink_to("../.git", target_is_directory=True)
    (root / "Propos" / "refs").symlink_to("../.git/refs", target_is_directory=True)
    want = [("Problems/gitdir", "error"), ("Propos/refs", "error")]
    wt = invoke("verify", "--json", cwd=root)
    assert _codes(wt, "KB106") == want and _codes(wt, "KB134") == [], wt.stdout
    msgs = [d["message"] for d in wt.json()["diagnostics"] if d["code"] == "KB106"]
    assert all("outside the work tree (git's own folder)" in m for m in msgs), msgs
    assert not any("of the KB" in m for m in msgs), msgs
    git(root, "add", "-A")
    staged = invoke("verify", "--staged", "--json", cwd=root)
    assert _codes(staged, "KB106") == want and _codes(staged, "KB134") == [], staged.stdout
    commit_all(root, "links to git's folder")
    for args in (["verify"], ["verify", "--rev", "HEAD"]):
        r = invoke(*args, "--json", cwd=root)
        assert _codes(r, "KB106") == want and _codes(r, "KB134") == [], (args, r.stdout)
    _no_traceback(wt, staged)


def test_a_link_to_a_folder_holding_the_kb_is_not_advised_to_be_copied_into_itself(make_kb) -> None:
    """`Propos/外部 -> <a folder holding the KB>`: KB106 advised `cp -R <that folder>
    'Propos/外部'`, a copy of the folder into itself. Such a link is a loop: remove it."""
    root = _kb(make_kb)
    (root / "Propos").mkdir(exist_ok=True)
    os.symlink(root.parent, root / "Propos" / "外部", target_is_directory=True)
    r = invoke("verify", "--json", cwd=root)
    (d,) = [d for d in r.json()["diagnostics"] if d["code"] == "KB106"]
    assert "cp -R" not in d["message"] and "holds the KB itself" in d["message"], d["message"]
    assert "git rm 'Propos/外部'" in d["message"]
    _no_traceback(r)
