"""Paths stay inside the knowledge base; lock records are unforgeable (issue 11).

- every ``kb.toml [paths]`` value resolves inside the KB folder and outside
  ``.git``: otherwise kb.toml is an error naming the key and nothing is read
  or written;
- a committed symlink whose target leaves the work tree is never read (a
  diagnostic) nor written through (writes refuse);
- ``kb hooks install`` never changes hooks outside the repository
  (``core.hooksPath``) unless asked to explicitly;
- lock owners and reasons refuse every Unicode line or paragraph separator
  and control character, and lock records are read by ``\\n`` only;
- an uncommitted ``kb.toml`` grants no lead rights.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import commit_all, git, invoke, tree_snapshot

TREE = "# Tree\n\n## H1: Root\nStatus: 待验证\n"


@pytest.mark.parametrize("key,value", [
    ("tree", "/etc/passwd"),
    ("tree", "../outside.md"),
    ("experiments", "a/../../x"),
    ("dashboard", ".git/config"),
    ("verified", ".GIT/hooks"),
    ("logs", "C:/Windows"),
    ("problems", "a\\..\\..\\b"),
    ("tree", ""),
])
def test_configured_paths_must_stay_inside(make_kb, key: str, value: str) -> None:
    root = make_kb({"tree.md": TREE}, commit=True,
                   config=f'[kb]\n\n[paths]\n{key} = {value!r}\n'.replace("'", '"')
                   if "\\" not in value else f"[kb]\n\n[paths]\n{key} = '{value}'\n")
    before = tree_snapshot(root.parent, skip_git=False)
    for args in (["ls"], ["hyp", "add", "X", "--no-commit"], ["dashboard", "--no-commit"]):
        r = invoke(*args, cwd=root)
        assert r.code == 2, (args, r.stdout, r.stderr)
        assert f"paths.{key}" in r.stderr, r.stderr
    assert tree_snapshot(root.parent, skip_git=False) == before


def test_symlink_leaving_the_work_tree_is_never_read_or_written(make_kb, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\n## H7: Leaked from outside\nStatus: 待验证\n", encoding="utf-8")
    root = make_kb({"notes.md": "x\n"})
    (root / "tree.md").symlink_to(secret)
    commit_all(root, "a symlinked tree")
    r = invoke("ls", "--json", cwd=root)
    assert r.code in (0, 1), r.stderr
    assert "Leaked" not in r.stdout
    # an empty listing says why it may be incomplete (once, on stderr)
    r = invoke("ls", "hypotheses", cwd=root)
    assert r.code == 0 and "Leaked" not in r.stdout
    assert r.stderr.count("tree.md:1 KB106") == 1 and "`kb index` lists them" in r.stderr, r.stderr
    (root / "tree.md").unlink()
    (root / "tree.md").write_text("# Tree\n\n## H1: Inside\nStatus: 待验\n", encoding="utf-8")
    r = invoke("find", "Inside", cwd=root)
    assert r.code == 0 and "H1" in r.stdout and "KB106" not in r.stderr, r.stderr
    git(root, "checkout", "--", "tree.md")
    idx = invoke("index", "--json", cwd=root)
    assert "symlink" in idx.stdout and "outside" in idx.stdout, idx.stdout
    w = invoke("hyp", "add", "Y", cwd=root)
    assert w.code == 1 and "symlink" in w.stderr, w.stderr
    assert secret.read_text(encoding="utf-8").count("## H") == 1


def test_a_tree_path_that_is_a_directory_is_an_error_not_a_crash(make_kb) -> None:
    root = make_kb({"tree.md/notes.md": "# notes\n"}, config="[kb]\n\n[paths]\ntree = \"tree.md\"\n",
                   commit=True)
    head = git(root, "rev-parse", "HEAD")
    before = tree_snapshot(root, skip_git=True)
    for args in (("hyp", "add", "An idea"), ("exp", "new", "--hyp", "H1", "Measure")):
        r = invoke(*args, "--json", cwd=root)
        assert r.code == 1 and r.json()["error"]["kind"] == "refused", (args, r.stdout, r.stderr)
        assert "tree.md is a directory" in r.json()["error"]["message"]
    assert git(root, "rev-parse", "HEAD") == head
    assert {k: v for k, v in tree_snapshot(root, skip_git=True).items() if not k.startswith(".kb")} == {
        k: v for k, v in before.items() if not k.startswith(".kb")}
    r = invoke("index", "--json", cwd=root)
    kb002 = [d for d in r.json()["diagnostics"] if d["code"] == "KB002"]
    assert r.code == 1 and len(kb002) == 1 and kb002[0]["path"] == "kb.toml" and kb002[0]["line"] == 4
    r = invoke("ls", "hypotheses", cwd=root)
    assert r.code == 0 and "kb.toml:4 KB002" in r.stderr, r.stderr
    r = invoke("verify", "--json", cwd=root)  # an error that blocks, not "pre-existing"
    assert r.code == 1 and [d["blocking"] for d in r.json()["diagnostics"] if d["code"] == "KB002"] == [True]


def test_hooks_outside_the_repository_are_left_alone(git_repo: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared-hooks"
    shared.mkdir()
    (shared / "pre-commit").write_text("#!/bin/sh\necho shared\n")
    git(git_repo, "config", "core.hooksPath", str(shared))
    before = tree_snapshot(shared)
    r = invoke("hooks", "install", cwd=git_repo)
    assert r.code == 1 and "core.hooksPath" in r.stderr and "--shared" in r.stderr, r.stderr
    assert tree_snapshot(shared) == before
    r = invoke("hooks", "uninstall", cwd=git_repo)
    assert r.code == 1 and tree_snapshot(shared) == before
    r = invoke("hooks", "install", "--shared", cwd=git_repo)
    assert r.code == 0, r.stderr
    assert (shared / "pre-commit.kb-chained").exists()


def test_hooks_path_inside_the_repository_is_fine(git_repo: Path) -> None:
    git(git_repo, "config", "core.hooksPath", ".githooks")
    r = invoke("hooks", "install", cwd=git_repo)
    assert r.code == 0, r.stderr
    assert (git_repo / ".githooks" / "pre-commit").exists()


@pytest.mark.parametrize("bad", ["alice\u2028Kb-Lock-Expires-Epoch: 1", "alice\u2029x",
                                 "alice\u0085x", "alice\x1b[31m", "alice\u202ex", "alice\x9bx"])
def test_lock_owner_refuses_separators_and_controls(make_kb, bad: str) -> None:
    root = make_kb({"tree.md": TREE}, commit=True)
    r = invoke("lock", "claim", "tree.md", "--owner", bad, cwd=root)
    assert r.code == 2, r.stderr
    r = invoke("lock", "claim", "tree.md", "--owner", "bob", cwd=root)
    assert r.code == 0
    r = invoke("lock", "steal", "tree.md", "--owner", "carol", "--reason", "x" + bad[5:], cwd=root)
    assert r.code == 2, r.stderr
    assert git(root, "for-each-ref", "refs/kb/locks") != ""


def test_lock_records_are_read_by_newline_only() -> None:
    from kb.locks import parse_lock

    msg = ("kb lock: a\n\nKb-Lock-Scope: file\nKb-Lock-Path: a\n"
           "Kb-Lock-Owner: mallory\u2028Kb-Lock-Expires-Epoch: 9999999999\n"
           "Kb-Lock-Expires-Epoch: 100\n")
    lk = parse_lock("refs/kb/locks/x", "0" * 40, msg)
    assert lk.expires == 100
    assert lk.owner == "mallory\u2028Kb-Lock-Expires-Epoch: 9999999999"


def test_uncommitted_kb_toml_grants_no_lead_rights(make_kb) -> None:
    root = make_kb({"tree.md": TREE}, commit=True,
                   config='[kb]\n\n[locks]\nttl = "10m"\nleads = ["lead"]\n')
    assert invoke("lock", "claim", "tree.md", "--owner", "alice", cwd=root).code == 0
    toml = root / "kb.toml"
    toml.write_text(toml.read_text() .replace('["lead"]', '["lead", "mallory"]'))
    r = invoke("lock", "steal", "tree.md", "--owner", "mallory", "--reason", "mine", cwd=root)
    assert r.code == 1, r.stderr
    r = invoke("lock", "steal", "tree.md", "--owner", "lead", "--reason", "reassigned", cwd=root)
    assert r.code == 0, r.stderr


def test_unportable_names_are_refused_on_write_and_reported(tree_kb: Path) -> None:
    root = tree_kb
    commits = git(root, "rev-list", "--count", "HEAD")
    r = invoke("propo", "add", "CON", "p1", "A statement", "--new-category", cwd=root)
    assert r.code == 1 and "reserves" in r.stderr, r.stderr
    r = invoke("propo", "add", "数论", "aux", "A statement", "--new-category", cwd=root)
    assert r.code == 1 and "reserves" in r.stderr, r.stderr
    assert git(root, "rev-list", "--count", "HEAD") == commits
    assert invoke("propo", "add", "数论", "p1", "A statement", "--new-category", cwd=root).code == 0
    r = invoke("propo", "add", "数论", "P1", "Another statement", cwd=root)
    assert r.code == 1 and "only in case" in r.stderr, r.stderr
    # a file committed by hand is reported by verify
    folder = root / "Propos" / "数论"
    (folder / "P1.md").write_bytes((folder / "p1.md").read_bytes().replace(b"p1", b"P1"))
    r = invoke("verify", "--json", cwd=root)
    assert "KB219" in {d["code"] for d in r.json()["diagnostics"]}, r.stdout


def test_categories_differing_only_in_case_or_normalisation_are_one_folder(tree_kb: Path) -> None:
    """A category typed in another Unicode form is the folder that is there; one that
    differs only in case is refused even with --new-category (macOS and Windows take the
    two folders for one); a second such folder committed by hand is KB219."""
    root = tree_kb
    nfc, nfd = "G\u00e9om", "Ge\u0301om"
    assert invoke("propo", "add", nfc, "p1", "A statement", "--new-category", cwd=root).code == 0
    assert invoke("propo", "add", "Algebra", "a1", "A statement", "--new-category", cwd=root).code == 0
    r = invoke("propo", "add", nfd, "p2", "Another statement", cwd=root)
    assert r.code == 0, r.stderr
    assert (root / "Propos" / nfc / "p2.md").is_file()
    assert sorted(os.listdir(root / "Propos")) == sorted(["Algebra", nfc])
    commits = git(root, "rev-list", "--count", "HEAD")
    for flags in ((), ("--new-category",)):
        r = invoke("propo", "add", "algebra", "a2", "A statement", *flags, cwd=root)
        assert r.code == 2 and "only in case" in r.stderr and "'Algebra'" in r.stderr, r.stderr
    assert git(root, "rev-list", "--count", "HEAD") == commits
    (root / "Propos" / "algebra").mkdir()
    (root / "Propos" / "algebra" / "a3.md").write_bytes(
        (root / "Propos" / "Algebra" / "a1.md").read_bytes().replace(b"a1", b"a3"))
    r = invoke("verify", "--json", cwd=root)
    hits = [d for d in r.json()["diagnostics"] if d["code"] == "KB219"]
    assert hits and hits[0]["path"] == "Propos/algebra/a3.md" and "folders" in hits[0]["message"]


def test_nul_bytes_are_a_diagnostic(tree_kb: Path) -> None:
    root = tree_kb
    tree = root / "tree.md"
    tree.write_bytes(tree.read_bytes() + "\n## H1: a\x00b\nStatus: 待验\n".encode())
    r = invoke("index", "--json", cwd=root)
    hits = [d for d in r.json()["diagnostics"] if d["code"] == "KB107"]
    assert hits and hits[0]["severity"] == "error" and hits[0]["line"] > 1


def test_unportable_judges_names_as_its_definition_does() -> None:
    """kb.repo.unportable (a length check before upper(), one regex for the characters)
    says what its definition says: a component whose stem before the first dot
    upper-cases to a reserved name, that ends in a dot or a space, or that holds one of
    <>:"|?*\\ or a control character -- for every code point alone and in names built
    from the reserved ones."""
    import random

    from kb.repo import _BAD_CHARS, _RESERVED, unportable

    def reference(path: str) -> str | None:
        for part in path.split("/"):
            if part.split(".")[0].upper() in _RESERVED:
                return f"{part!r} is a name Windows reserves"
            if part.endswith((".", " ")):
                return f"{part!r} ends in a dot or a space (Windows drops it)"
            if _BAD_CHARS & set(part):
                return f"{part!r} holds a character Windows does not allow in file names"
        return None

    rng = random.Random(18)
    # every code point of the first blocks (the characters that matter are ASCII, and
    # the letters that upper-case to ASCII ones: ı, ſ, ﬅ…), a sample of the rest
    names = [chr(c) for c in [*range(0x3000), *range(0xFB00, 0xFB07), *range(0xFF00, 0xFF60)]]
    names += [chr(c) for c in rng.sample(range(0x3000, 0x110000), 20000) if not 0xD800 <= c < 0xE000]
    pieces = ["con", "CoN", "aux", "nul", "com1", "lpt³", "COM¹", "prn", "ı", "ſ", "ß", "ﬅ", "ｃ", ".md",
              ".", " ", "x", "数论", "\x1f", "|", "\\", "a.b", "CONIN$"]
    for _ in range(3000):
        names.append("".join(rng.choice(pieces) for _ in range(rng.randint(1, 4))))
    for name in names:
        for path in (name, f"Propos/{name}", f"{name}/p1.md"):
            assert unportable(path) == reference(path), repr(path)
