"""Correctness of the speed work of issue 18 (no timings here: those are in benchmarks/).

Each optimisation is checked against the straightforward computation it replaces.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import config_for
from kb.parse import parse_file


def _naive_section_ends(text: str) -> dict[str, int]:
    """The quadratic reference: a section ends before the next heading of the same
    or a higher level, trailing blank lines left out (what the parser did before)."""
    lines = text.split("\n")
    heads = [(i, len(ln) - len(ln.lstrip("#"))) for i, ln in enumerate(lines)
             if ln.startswith("#") and ln.lstrip("#").startswith(" ")]
    out = {}
    for k, (i, lvl) in enumerate(heads):
        end = len(lines)
        for j, lv in heads[k + 1:]:
            if lv <= lvl:
                end = j
                break
        while end - 1 > i and not lines[end - 1].strip():
            end -= 1
        name = lines[i].lstrip("#").strip().split(":")[0]
        out[name] = end
    return out


def _random_tree(seed: int, n: int) -> str:
    rng = random.Random(seed)
    parts = ["# Tree\n"]
    stack: list[str] = []
    top = 0
    for _ in range(n):
        depth = rng.randint(0, min(len(stack), 6))
        stack = stack[:depth]
        if not stack:
            top += 1
            hid = f"H{top}"
        else:
            hid = f"{stack[-1]}.{rng.randint(1, 10**6)}"
        stack.append(hid)
        block = f"{'#' * (2 + depth)} {hid}: statement {hid}\nStatus: 待验\n"
        if rng.random() < 0.5:
            block += "\nprose under it\n\n" + ("## Notes (not a hypothesis)\n\ntext\n" if rng.random() < 0.1 else "")
        parts.append(block)
    return "\n".join(parts) + "\n\n"


@pytest.mark.parametrize("seed", range(5))
def test_section_ends_match_the_quadratic_reference(seed: int) -> None:
    text = _random_tree(seed, 300)
    res = parse_file("tree.md", text.encode(), config_for(Path("/kb")))
    want = _naive_section_ends(text)
    got = {h.id: h.end_line for h in res.objects}
    assert len(got) == len(res.objects) >= 300
    assert got == {k: v for k, v in want.items() if k in got}


def test_deep_tree_of_many_hypotheses_parses_every_section() -> None:
    # 20,000 siblings under one root: the quadratic loop scanned ~2e8 headings here.
    n = 20_000
    text = "## H1: root\nStatus: 待验\n\n" + "".join(
        f"### H1.{i}: child {i}\nStatus: 待验\n\n" for i in range(1, n + 1))
    res = parse_file("tree.md", text.encode(), config_for(Path("/kb")))
    hyps = {h.id: h for h in res.objects}
    assert len(hyps) == n + 1
    assert hyps["H1"].end_line == 3 * (n + 1) - 1  # the root's section is the whole file
    assert hyps["H1.7"].end_line == hyps["H1.7"].line + 1  # heading + Status, blank left out


def test_ls_prints_a_long_listing_as_plain_aligned_lines(make_kb, run_kb, monkeypatch) -> None:
    import kb_cli.ls

    tree = "# Tree\n\n" + "".join(f"## H{i}: 假设 number {i}\nStatus: {'待验' if i % 2 else '进行中'}\n\n"
                                  for i in range(1, 13))
    root = make_kb({"tree.md": tree}, config='[kb]\nlocale = "zh"\n', commit=True)
    rich_out = run_kb("ls", "hypotheses", cwd=root).stdout
    monkeypatch.setattr(kb_cli.ls, "RICH_MAX_ROWS", 5)
    plain = run_kb("ls", "hypotheses", cwd=root).stdout.splitlines()
    assert plain[0].split() == ["ID", "Status", "Statement"]
    assert plain[1] == "H1   待验    假设 number 1"
    assert plain[2] == "H2   进行中  假设 number 2"  # 进行中 is 6 columns wide, the widest status
    assert len(plain) == 13
    # the same rows and words as the rich table (which may wrap a long statement)
    assert [ln.split()[:2] for ln in plain] == [ln.split()[:2] for ln in rich_out.splitlines()]


def _git_processes(trace: Path) -> list[str]:
    """The git commands a traced run started: one ``built-in:`` line per git process."""
    return [ln.split("built-in: ", 1)[1] for ln in trace.read_text().splitlines()
            if "trace: built-in: " in ln]


def _kb216_repo(make_kb, n: int) -> Path:
    from test_verify_support import make_repo, problem

    # Every problem claims a dependant that does not depend on it: n KB216 warnings,
    # each with fix text read from the committed blob.
    files = {f"Problems/q{i}.md": problem(f"q{i}", depended_by=f'["q{i + 100}"]') for i in range(2, 2 + n)}
    return make_repo(make_kb, files)


def test_blob_contents_come_through_one_cat_file_whatever_the_file_count(make_kb, tmp_path) -> None:
    from conftest import run_script

    counts = {}
    for n in (3, 25):
        root = _kb216_repo(make_kb, n)
        trace = tmp_path / f"trace-{n}.txt"
        res = run_script("verify", "--rev", "HEAD", "--json", cwd=root, env={"GIT_TRACE": str(trace)})
        kb216 = [d for d in res.json()["diagnostics"] if d["code"] == "KB216"]
        assert len(kb216) == n, res.stdout
        assert all(d["fix"]["new"].startswith("- 被依赖: ") and d["fix"]["old"].startswith("- 被依赖: [\"q")
                   for d in kb216)
        procs = _git_processes(trace)
        assert sum("cat-file --batch" in p for p in procs) == 1, procs
        counts[n] = len(procs)
    assert counts[3] == counts[25]  # bounded: independent of the number of files


def test_blob_reader_reads_many_blobs_and_skips_missing_ones(git_repo) -> None:
    from conftest import commit_all

    from kb import git

    bodies = {f"f{i}.md": (f"file {i}\n" * (i * 50)).encode() for i in range(200)}  # > one chunk
    for name, data in bodies.items():
        (git_repo / name).write_bytes(data)
    commit_all(git_repo)
    ids = {name: git.blob_id(data) for name, data in bodies.items()}
    missing = "0" * 39 + "1"
    got = git.read_blobs([*ids.values(), missing], git_repo)
    assert got == {ids[n]: d for n, d in bodies.items()}
    again = git.read_blobs([ids["f7.md"]], git_repo)  # the same process answers again
    assert again == {ids["f7.md"]: bodies["f7.md"]}
    assert len([k for k in git.BlobReader._open if k[1] == git_repo]) == 1


# -- the dashboard's header comment needs no markdown-it parse ------------------------


COMMENT_LINES = st.sampled_from([
    "", "text", "## H1: heading", "<!-- Generated by kb dashboard; edit Next Steps only -->",
    "<!-- c -->", "<!-- open", "close -->", "<!---->", "<!-->", " <!-- c -->", "<!-- a --> tail",
    "    indented", "```", "- item", "> quote", "<div>", "---", "Status: 待验",
])


@settings(max_examples=500, deadline=None)
@given(st.lists(COMMENT_LINES, max_size=20))
def test_mask_with_comment_lines_matches_markdown_it(lines: list[str]) -> None:
    from kb.text import _code_ranges, compute_mask

    want = [False] * len(lines)
    for begin, end in _code_ranges("\n".join(lines)):
        for i in range(begin, min(end, len(lines))):
            want[i] = True
    got = compute_mask(lines)
    assert [g for g, ln in zip(got, lines) if ln.strip()] == \
        [w for w, ln in zip(want, lines) if ln.strip()]


def test_dashboard_header_comment_is_read_without_markdown_it(monkeypatch) -> None:
    import kb.text
    from conftest import EXAMPLES

    def refuse(body: str) -> list:
        raise AssertionError("markdown-it parse of a dashboard")

    data = (EXAMPLES / "DASHBOARD.md").read_bytes()
    assert b"<!-- Generated by `kb dashboard`" in data
    want = parse_file("DASHBOARD.md", data, config_for(Path("/kb"))).meta["next_steps"]
    monkeypatch.setattr(kb.text, "_code_ranges", refuse)
    res = parse_file("DASHBOARD.md", data, config_for(Path("/kb")))
    assert res.meta["next_steps"] == want and want


# -- verify --range: every version parsed in one pass, tree versions derived -----------

def _tree(n: int, extra: str = "") -> str:
    blocks = ["# Hypothesis Tree\n"]
    for i in range(1, n + 1):
        blocks.append(f"## H{i}: Statement {i}\nStatus: 待验\nEvidence: (empty)\n\nProse about {i}.\n")
    return "\n".join(blocks) + extra


TREE_EDITS = [
    lambda t: t + "\n## H99: Appended at the end\nStatus: 待验\nEvidence: (empty)\n",
    lambda t: t.replace("## H3: Statement 3\n", "## H3: Statement 3 (reworded)\n"),
    lambda t: t.replace("Prose about 5.\n", "Prose about 5.\n\n```python\n# not a heading\n```\n"),
    lambda t: t.replace("## H7: Statement 7\nStatus: 待验\nEvidence: (empty)\n\nProse about 7.\n\n", ""),
    lambda t: t.replace("Prose about 2.\n", "Prose about 2.\n\n### H2.1: A child\nStatus: 待验\n"),
    lambda t: t.replace("Prose about 9.\n", "Prose about 9.\n\n```\nan open fence at the end\n"),
    lambda t: t.replace("# Hypothesis Tree\n", "# The tree, renamed\n"),
    lambda t: t.replace("## H4: Statement 4\n", "## H4 Statement 4 without its colon\n"),
    lambda t: t + "\n## H3: Declared twice\nStatus: 待验\n",
]


def _cache_rows(clone: Path, sql: str) -> list[tuple]:
    """The rows ``sql`` reads from ``clone``'s cache, sorted."""
    import sqlite3

    db = sqlite3.connect(clone / ".kb" / "index.sqlite")
    try:
        return sorted(db.execute(sql))
    finally:
        db.close()


def _edited_tree_repo(make_kb, extra: dict[str, str] | None = None,
                      edits: list | None = None) -> tuple[Path, str]:
    """A KB whose tree.md went through every edit of ``edits`` (default TREE_EDITS), a
    commit each: (root, the commit before the first edit). ``extra``: more files,
    committed with the tree."""
    from conftest import commit_all, git

    root = make_kb({"tree.md": _tree(12), **(extra or {})}, commit=True)
    base = git(root, "rev-parse", "HEAD").strip()
    text = _tree(12)
    for i, edit in enumerate(TREE_EDITS if edits is None else edits):
        text = edit(text)
        (root / "tree.md").write_text(text, encoding="utf-8")
        commit_all(root, f"tree edit {i}")
    return root, base


def test_range_derives_tree_versions_equal_to_full_parses(make_kb, tmp_path, monkeypatch) -> None:
    import json
    import shutil
    import subprocess

    import kb.checks.tree_versions as tv
    from kb.index import Index
    from kb.index_rows import result_rows as _result_rows
    from kb.repo import open_kb

    root, base = _edited_tree_repo(make_kb)

    spliced: list[bool] = []
    real = tv.splice_tree_version

    def spy(*args):
        spliced.append(real(*args))
        return spliced[-1]

    def verify(where):
        from test_verify_support import verify_json

        return verify_json(where, "--range", f"{base}..HEAD")

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    monkeypatch.setattr(tv, "splice_tree_version", spy)
    got = verify(clone)
    assert True in spliced and False in spliced  # both paths taken by these edits
    # every derived version's index rows are those of a full parse
    k = open_kb(clone)
    with Index(k) as idx:
        blobs = [b for (b,) in idx.db.execute("SELECT blob FROM parsed WHERE path='tree.md'")]
        assert len(blobs) == len(TREE_EDITS) + 1
        from kb import git as kgit
        from kb.parse import parse_file

        data = kgit.read_blobs(blobs, k.top)
        for b in blobs:
            rp, ro, rl, rd = _result_rows("tree.md", b, parse_file("tree.md", data[b], k.config))
            q = "SELECT * FROM {} WHERE path='tree.md' AND blob=?"
            norm = lambda rows: sorted((r[:7], json.dumps(json.loads(r[7]), sort_keys=True)) for r in rows)
            assert norm(idx.db.execute(q.format("objects"), (b,))) == norm(ro)
            assert sorted(idx.db.execute(q.format("links"), (b,))) == sorted(rl)
            assert sorted(idx.db.execute(q.format("diagnostics"), (b,))) == sorted(rd)
    # and the report is the one of a check that parses every version whole
    shutil.rmtree(clone / ".kb")
    monkeypatch.setattr(tv, "splice_tree_version", lambda *a: False)
    assert verify(clone) == got


#: Edits after which no rule of the range reads a derived tree version's rows.
QUIET_TREE_EDITS = [
    TREE_EDITS[0],
    lambda t: t.replace("Prose about 4.\n", "Prose about 4, longer.\nAnd more.\n"),
    lambda t: t.replace("Prose about 5.\n", "Prose about 5.\n\n## H100: Inserted\nStatus: 待验\n"
                        "Evidence: (empty)\n"),
    lambda t: t.replace("Prose about 2.\nAnd more.\n", "Prose about 2.\n"),
    lambda t: t.replace("Prose about 1.\n", ""),
]


@pytest.mark.parametrize("edits", ["every", "quiet"])
def test_range_holds_derived_tree_versions_with_the_rows_a_store_gives(make_kb, tmp_path,
                                                                         monkeypatch, edits):
    """The tree versions a fresh-clone range derives are held in memory
    (Index.put_derived), stored only when a reader needs their rows: what the range
    knew of them (objects, links, history rows) is, in order, what storing them gives;
    after quiet edits none is stored; the report is that of a check that stores every
    version as it derives it."""
    import shutil
    import subprocess

    import kb.checks.verify_range as vr
    import kb.index
    from kb.index_facts import history_rows, version_links, version_objects
    from test_verify_support import verify_json

    chosen = TREE_EDITS if edits == "every" else QUIET_TREE_EDITS
    root, base = _edited_tree_repo(make_kb, edits=chosen)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    seen: dict = {}
    real_derive, real_close = vr._derive_tree_versions, kb.index.Index.close

    def derive(idx, k, steps, roots, history=None, read=None, light=None, stored=None):
        real_derive(idx, k, steps, roots, history, read, light, stored)
        seen.update(held=idx.held(), light=dict(light or {}), history=dict(history or {}))

    compared: list = []

    def close(self):  # store what is still held, then compare it with what was known
        if seen.get("held"):
            unstored = self.held()
            self.store_derived()
            for key in seen["held"]:
                objects, links, anchor_lines = seen["light"][key]
                assert objects == version_objects(self, *key) and anchor_lines is None
                assert links == [(key[0], *x) for x in version_links(self, *key)]
                assert seen["history"][key] == history_rows(self, *key)
                compared.append((key, key in unstored))
        real_close(self)

    monkeypatch.setattr(vr, "_derive_tree_versions", derive)
    monkeypatch.setattr(kb.index.Index, "close", close)
    got = verify_json(clone, "--range", f"{base}..HEAD")
    assert len(compared) >= 3  # versions were held, and read back equal once stored
    if edits == "quiet":  # no finding needs the versions' rows: none was stored
        assert got[0] == 0, [(d["code"], d["message"]) for d in got[1]["diagnostics"]]
        assert all(unstored for _, unstored in compared)

    # the report of a check that stores each version as it derives it
    shutil.rmtree(clone / ".kb")
    monkeypatch.setattr(kb.index.Index, "close", real_close)
    monkeypatch.setattr(kb.index.Index, "put_derived", kb.index.Index.put_spliced)
    assert verify_json(clone, "--range", f"{base}..HEAD") == got


_PIECES = [b"## H1: A\n", b"Status: \xe5\xbe\x85\xe9\xaa\x8c\n", b"prose\n", b"\n", b"x", b"```\n",
           "中".encode(), b"\r\n", b"\xff", b"\xe4\xb8"]


@pytest.mark.parametrize("span", [1, 2, 3, 1 << 16])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_tree_versions_split_a_version_from_its_neighbour_as_decoding_it_whole(span, data) -> None:
    """A derived tree version's lines, taken from its neighbour's lines where their
    bytes agree (compared a span at a time) and decoded only where they differ, are the
    lines of the version decoded whole -- or None when it cannot be read plainly (a
    BOM, CR, bytes that are not UTF-8), as ``_lines`` says; the bytes they share at the
    start and the end are those a byte loop finds."""
    import kb.checks.tree_versions as tv

    def loop(a: bytes, b: bytes, n: int) -> tuple[int, int]:
        p = 0
        while p < n and a[p] == b[p]:
            p += 1
        s = 0
        while s < n and a[-1 - s] == b[-1 - s]:
            s += 1
        return p, s

    pieces = st.lists(st.sampled_from(_PIECES[:7]), max_size=12).map(b"".join)
    old = data.draw(pieces)
    new = data.draw(st.one_of(pieces, st.lists(st.sampled_from(_PIECES), max_size=12).map(b"".join)))
    for _ in range(data.draw(st.integers(0, 3))):  # a few edits of the old version, or another text
        i = data.draw(st.integers(0, len(old)))
        j = data.draw(st.integers(i, len(old)))
        new = old[:i] + data.draw(st.sampled_from(_PIECES)) + old[j:]
    n = data.draw(st.integers(0, min(len(old), len(new))))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tv, "_SPAN", span)
        assert (tv._shared_start(old, new, n), tv._shared_end(old, new, n)) == loop(old, new, n)
        lines = tv._lines(old)
        assert lines is not None
        assert tv._spliced_lines(lines, old, new) == tv._lines(new)


def test_range_takes_the_tree_roots_rows_from_their_parse_as_the_index_reads_them(
        make_kb, tmp_path, monkeypatch) -> None:
    """What the derivation knows of the tree version parsed in full (its hypotheses'
    lines and levels, its objects' and links' light rows) comes from the rows just
    stored, not read back: they are, in order, what the index reads of it."""
    import subprocess

    import kb.checks.verify_range as vr
    from kb.index_facts import light_rows_of, version_links, version_objects
    from test_verify_support import verify_json

    children = "".join(f"\n### H2.{i}: Child {i}\nStatus: 待验\nParent: H2\n" for i in range(1, 5))
    root, base = _edited_tree_repo(make_kb, edits=[
        lambda t: t.replace("Prose about 2.\n", "Prose about 2.\n" + children), *TREE_EDITS])
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    real = vr._derive_tree_versions
    checked: list = []

    def derive(idx, k, steps, roots, history=None, read=None, light=None, stored=None):
        for key, (rows, heads) in (stored or {}).items():
            read_back = idx.extract("hypothesis", ["level"], path=key[0], blob=key[1])
            assert heads == [(r[2], r[5] or 0) for r in read_back] and len(heads) >= 5
            objects, links = light_rows_of(rows)
            assert objects == version_objects(idx, *key) and len(objects) == len(heads)
            assert links == [(key[0], *x) for x in version_links(idx, *key)] and len(links) >= 4
            checked.append(key)
        real(idx, k, steps, roots, history, read, light, stored)

    monkeypatch.setattr(vr, "_derive_tree_versions", derive)
    got = verify_json(clone, "--range", f"{base}..HEAD")
    assert got[0] != 3, got
    assert checked == [("tree.md", subprocess.run(
        ["git", "rev-parse", "HEAD:tree.md"], cwd=clone, capture_output=True, text=True,
        check=True).stdout.strip())]
    monkeypatch.setattr(vr, "_derive_tree_versions", real)
    (clone / ".kb" / "index.sqlite").unlink()
    monkeypatch.setattr(vr, "_tree_roots", _rows_unkept(vr._tree_roots))
    assert verify_json(clone, "--range", f"{base}..HEAD") == got  # the same as read back


def _rows_unkept(tree_roots):
    """``_tree_roots`` as it was: nothing stored handed on (the derivation reads back)."""
    from contextlib import contextmanager

    @contextmanager
    def wrapped(*args, **kwargs):
        with tree_roots(*args, **kwargs):
            yield {}
    return wrapped


def test_range_runs_the_tree_roots_rules_in_a_worker_with_the_same_results(make_kb, tmp_path,
                                                                          monkeypatch) -> None:
    """The per-file rules of the tip's tree.md run in a child forked after its parse,
    beside the light reading, while this process derives the tree's other versions:
    the report and the stored results are those of a check that runs them here (no
    workers)."""
    import os
    import shutil
    import subprocess

    import kb.checks.verify_range as vr
    import kb.parallel
    from test_verify_support import problem, verify_json

    cards = {f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 12)}  # untouched: light
    root, base = _edited_tree_repo(make_kb, cards)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    log = tmp_path / "rules.txt"  # the checker writes down who checked which tree
    real = vr._root_rules

    def spy(k, key, parsed):
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {key[0]}\n")
        return real(k, key, parsed)

    def stored() -> list[tuple]:
        return _cache_rows(clone, "SELECT * FROM kb_check_diags WHERE path = 'tree.md'")

    import hashlib

    import kb.parse

    parses = tmp_path / "parses.txt"  # every process writes down each tree it parses
    real_parse = kb.parse.parse_file

    def parse_spy(path, data, *args, **kwargs):
        if path == "tree.md":
            with open(parses, "a", encoding="utf-8") as f:
                f.write(hashlib.sha1(data).hexdigest() + "\n")
        return real_parse(path, data, *args, **kwargs)

    monkeypatch.setattr(vr, "_root_rules", spy)
    monkeypatch.setattr(kb.parse, "parse_file", parse_spy)
    monkeypatch.setattr(vr, "LIGHT_CHUNK", 3)  # several chunks: the workers run
    got = verify_json(clone, "--range", f"{base}..HEAD")
    in_worker = stored()
    assert any(d["code"] == "KB204" and d["path"] == "tree.md" for d in got[1]["diagnostics"])
    assert in_worker and {r[4] for r in in_worker} >= {"KB204"}
    tip = hashlib.sha1((clone / "tree.md").read_bytes()).hexdigest()
    assert parses.read_text(encoding="utf-8").split().count(tip) == 1  # parsed once, here
    if kb.parallel.cpu_workers() > 1 and kb.parallel.can_fork():
        (line,) = log.read_text(encoding="utf-8").splitlines()  # checked once, by a child
        assert line.split() != [str(os.getpid()), "tree.md"] and line.endswith(" tree.md")
    shutil.rmtree(clone / ".kb")
    log.unlink(missing_ok=True)
    monkeypatch.setenv("KB_NO_PARALLEL", "1")  # no workers: this process runs the rules
    assert verify_json(clone, "--range", f"{base}..HEAD") == got
    assert stored() == in_worker
    assert log.read_text(encoding="utf-8").splitlines() == [f"{os.getpid()} tree.md"]


def test_range_snapshot_rules_shared_out_give_the_report_and_results_of_one_process(
        make_kb, tmp_path, monkeypatch) -> None:
    """A fresh clone's range shares the tip's snapshot check out between the forked
    child and this process (``verify_range._HERE``): the report, and the results it
    stores, are those of the whole check in one part, whichever parts go where; the
    parts joined (``store_scoped``) are what the unshared check gives."""
    import shutil
    import subprocess

    import kb.checks.verify_range as vr
    from conftest import commit_all
    from kb.checks.results import FILE_PART, _raw_snapshot, scoped_parts, store_scoped
    from test_verify_support import problem, proposition, verify_json

    cards = {f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 12)}
    root, base = _edited_tree_repo(make_kb, cards)
    # findings of several parts at the tip: a duplicate ID (KB202), a reserved file
    # name (KB219), an unreadable card (a parse diagnostic), the tree's KB204
    for folder, pid, depends in (("数论", "p2", "[]"), ("代数", "p2", "[]"), ("代数", "p3", '["p99"]')):
        (root / "Propos" / folder).mkdir(parents=True, exist_ok=True)
        (root / "Propos" / folder / f"{pid}.md").write_text(proposition(pid, depends=depends),
                                                             encoding="utf-8")
    (root / "Problems" / "aux.md").write_text(problem("aux"), encoding="utf-8")
    (root / "Problems" / "q5.md").write_bytes(b"\xff\xfe not UTF-8\n")
    commit_all(root, "findings at the tip")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)

    def stored() -> list[tuple]:
        return _cache_rows(clone, "SELECT * FROM kb_check_kv WHERE key LIKE 'snap:%'")

    def run(here: tuple) -> tuple:
        shutil.rmtree(clone / ".kb", ignore_errors=True)
        monkeypatch.setattr(vr, "_HERE", here)
        return verify_json(clone, "--range", f"{base}..HEAD"), stored()

    every = (FILE_PART, "kb.checks.id_rules.duplicate_ids", "kb.checks.id_rules.missing_references",
             "kb.checks.id_rules.unportable_paths", "kb.checks.dashboard_rule.stale_dashboard")
    got, results = run(vr._HERE)
    codes = {d["code"] for d in got[1]["diagnostics"]}
    assert {"KB202", "KB204", "KB219", "KB101"} <= codes, codes
    assert results
    assert run(()) == (got, results)  # all in the child
    assert run(every) == (got, results)  # most here
    monkeypatch.setenv("KB_NO_PARALLEL", "1")  # no child: both halves here, in turn
    assert run(vr._HERE) == (got, results)

    # the parts joined are the unshared check's results
    from kb.checks.facts import Facts
    from kb.checks.targets import open_index
    from kb.repo import commit_snapshot, open_kb

    k = open_kb(clone)
    scope = {"Propos/数论/p2.md", "Propos/代数/p2.md", "Propos/代数/p3.md", "Problems/aux.md",
             "Problems/q5.md", "tree.md"}
    shutil.rmtree(clone / ".kb")
    with open_index(k) as idx:
        tip = Facts(idx, commit_snapshot(k, "HEAD"), "HEAD")
        want = _raw_snapshot(tip, None, None, scope)
        for split in (set(), {FILE_PART}, set(every), set(every[1:3])):
            joined = store_scoped(tip, scope, {**scoped_parts(tip, scope, without=frozenset(split)),
                                               **scoped_parts(tip, scope, parts=split)})
            assert joined == want, split


def test_range_pauses_the_collector_and_restores_it(make_kb, tmp_path, monkeypatch) -> None:
    """The range's check runs with Python's cyclic collector paused (what it keeps, ~10^6
    objects at 7.5k files, was scanned again by each collection) and leaves it as it
    found it, enabled or not, also when the check fails."""
    import gc
    import subprocess

    import kb.checks.verify_range as vr
    from test_verify_support import verify_json

    root, base = _edited_tree_repo(make_kb)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    seen: list[bool] = []
    real = vr._verify_commits

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(vr, "_verify_commits", spy)
    assert gc.isenabled()
    verify_json(clone, "--range", f"{base}..HEAD")
    assert seen == [False] and gc.isenabled()

    def boom(*args, **kwargs):
        raise RuntimeError("stop")

    monkeypatch.setattr(vr, "_verify_commits", boom)
    with pytest.raises(RuntimeError):
        vr.verify_commit_range(clone, base, "HEAD")
    assert gc.isenabled()
    gc.disable()
    try:
        monkeypatch.setattr(vr, "_verify_commits", spy)
        vr.verify_commit_range(clone, base, "HEAD")
        assert not gc.isenabled()  # left as found
    finally:
        gc.enable()


@pytest.mark.parametrize("step", [1, 2, 3, 256])
def test_tree_versions_find_the_shared_first_and_last_lines_as_a_line_loop(monkeypatch, step) -> None:
    """The lines two tree versions share at the start and the end (compared a slice at a
    time) are those a line-by-line loop finds, across slice boundaries."""
    import random

    import kb.checks.tree_versions as tv

    def loop(a, b):
        n = min(len(a), len(b))
        p = 0
        while p < n and a[p] == b[p]:
            p += 1
        s = 0
        while s < n - p and a[-1 - s] == b[-1 - s]:
            s += 1
        return p, s

    monkeypatch.setattr(tv, "_STEP", step)
    rng = random.Random(step)
    for _ in range(500):
        a = [str(rng.randint(0, 3)) for _ in range(rng.randint(0, 30))]
        b = list(a)
        for _ in range(rng.randint(0, 3)):
            op = rng.random()
            if op < 0.4 and b:
                b.pop(rng.randrange(len(b)))
            elif op < 0.8:
                b.insert(rng.randint(0, len(b)), str(rng.randint(0, 3)))
            elif b:
                b[rng.randrange(len(b))] = "x"
        n = min(len(a), len(b))
        p = tv._same_first(a, b, n)
        assert (p, tv._same_last(a, b, n - p)) == loop(a, b), (a, b)


def test_range_knows_derived_tree_versions_history_rows(make_kb, tmp_path, monkeypatch) -> None:
    """The history rows a range derives along its chain of tree versions (heads and
    rows carried from version to version, shifted past each edit) are those SQLite
    reads of the stored versions, and the report is the same without them."""
    import contextlib
    import shutil
    import subprocess

    import kb.checks.facts as facts_mod
    import kb.checks.tree_versions as tv
    import kb.checks.verify_range as vr
    from kb import index_facts
    from kb.index import Index
    from kb.repo import open_kb
    from test_verify_support import verify_json

    root, base = _edited_tree_repo(make_kb)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)

    known: dict = {}
    real = facts_mod.known_history.__init__

    def spy(self, index, rows):
        real(self, index, rows)
        known.update(rows)  # filled before the block: the same dict

    spliced: list[bool] = []
    real_splice = tv.splice_tree_version

    def splice_spy(*args):
        spliced.append(real_splice(*args))
        return spliced[-1]

    monkeypatch.setattr(facts_mod.known_history, "__init__", spy)
    monkeypatch.setattr(tv, "splice_tree_version", splice_spy)
    got = verify_json(clone, "--range", f"{base}..HEAD")
    assert spliced.count(True) >= 3  # versions derived from their neighbours
    assert len(known) == len(TREE_EDITS) + 1  # every version's rows known
    with Index(open_kb(clone)) as idx:
        for (path, blob), rows in known.items():
            assert rows == index_facts.history_rows(idx, path, blob), blob
    assert any(r[6] is not None and r[7] is not None for rows in known.values() for r in rows)
    shutil.rmtree(clone / ".kb")
    monkeypatch.setattr(vr, "known_history", lambda index, rows: contextlib.nullcontext(rows))
    assert verify_json(clone, "--range", f"{base}..HEAD") == got


# -- the first hook after a pull reuses the results of the state before the pull --------

@pytest.mark.parametrize("pulled", ["prose", "anchor"])
def test_first_check_after_a_pull_equals_a_full_check(make_kb, monkeypatch, pulled) -> None:
    import shutil

    import kb.checks.results as results
    import kb.checks.verify_staged as verify
    from conftest import commit_all, git
    from test_verify_support import make_repo, problem, verify_json

    files = {f"Problems/q{i}.md": problem(f"q{i}", depends='["q2"]' if i > 2 else "[]",
                                          depended_by='["q3","q4","q5"]' if i == 2 else "[]")
             for i in range(2, 6)}
    root = make_repo(make_kb, files)
    assert verify_json(root, "--rev", "HEAD")[0] == 0  # HEAD's results stored, as the hook does
    q3 = root / "Problems" / "q3.md"
    if pulled == "prose":
        q3.write_text(q3.read_text(encoding="utf-8") + "\nA pulled paragraph.\n", encoding="utf-8")
    else:  # q3 no longer depends on q2: q2's 被依赖 goes stale (KB216), q3 moves down
        q3.write_text(q3.read_text(encoding="utf-8").replace('- 依赖: ["q2"]', "- 依赖: []"),
                      encoding="utf-8")
    commit_all(root, "pulled")  # no hook: kb has no results for this HEAD
    q4 = root / "Problems" / "q4.md"
    q4.write_text(q4.read_text(encoding="utf-8") + "\nMy own paragraph.\n", encoding="utf-8")
    git(root, "add", "Problems/q4.md")

    used = []
    real = verify.before_head

    def spy(*args):
        used.append(real(*args))
        return used[-1]

    neutral = []
    real_neutral = results.neutral

    def spy_neutral(*args):
        neutral.append(real_neutral(*args))
        return neutral[-1]

    monkeypatch.setattr(verify, "before_head", spy)
    monkeypatch.setattr(results, "neutral", spy_neutral)
    got = verify_json(root, "--staged")
    assert used and used[0] is not None and used[0].snap.rev  # HEAD@{1}: the state before
    assert neutral == [pulled == "prose"]  # prose only: its cross-file results are inherited
    # the same report as a check that computes everything
    shutil.rmtree(root / ".kb")
    monkeypatch.setattr(verify, "before_head", lambda *a: None)
    assert verify_json(root, "--staged") == got
    codes = [d["code"] for d in got[1]["diagnostics"]]
    assert ("KB216" in codes) == (pulled == "anchor")


def test_first_check_after_a_pull_asks_the_index_only_about_the_runs_it_changed(
        make_kb, monkeypatch) -> None:
    """The staged index's files without a stored parse are looked for in the runs of
    files the index has not marked parsed whole: after a checked HEAD, a pull changing
    one card and one staged change, only those two runs; the report is a full check's."""
    import shutil

    import kb.digests as digests
    import kb.index_facts as index_facts
    from test_verify_support import make_repo, problem, pull_and_stage, verify_json

    monkeypatch.setattr(digests, "RUN", 32)
    root = make_repo(make_kb, {f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 302)})
    asked: list[int] = []
    real = index_facts.SnapshotTable.unparsed
    monkeypatch.setattr(index_facts.SnapshotTable, "unparsed",
                        lambda self: asked.append(len(self.files)) or real(self))
    assert verify_json(root, "--staged")[0] == 0  # HEAD checked, as the hook does
    assert max(asked) > 300  # every run looked at once
    # A run holding a file parsed by that check (none was stored before it) is marked
    # by the next one; then every run is marked and none is looked at.
    verify_json(root, "--staged")
    asked.clear()
    verify_json(root, "--staged")
    assert asked == []
    pull_and_stage(root, "Problems/q3.md", "Problems/q200.md")
    asked.clear()
    got = verify_json(root, "--staged")
    assert asked and sum(asked) <= 2 * 32, asked
    shutil.rmtree(root / ".kb")
    assert verify_json(root, "--staged") == got


def test_range_per_file_results_from_the_parse_workers_equal_the_checks_own(make_kb, tmp_path,
                                                                            monkeypatch) -> None:
    import shutil
    import subprocess

    import kb.checks.file_results as fr
    from conftest import git
    from test_verify_support import commit_prose_edits, experiment, make_repo, problem, verify_json

    files = {f"Problems/q{i}.md": problem(f"q{i}", status="奇怪" if i % 3 == 0 else "求解中",
                                          depended_by='["q2"]' if i % 4 == 0 else "[]")
             for i in range(2, 14)}
    files.update({f"experiments/E00{i}.md": experiment(f"E00{i}", status="已完成") for i in range(1, 4)})
    root = make_repo(make_kb, files)
    base = git(root, "rev-parse", "HEAD").strip()
    commit_prose_edits(root, [f"q{i}" for i in range(2, 6)])
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)

    log = tmp_path / "computed.txt"  # the rules run in forked workers: they write it down
    real = fr.rule_rows

    def spy(*args):
        rows = real(*args)
        with open(log, "a", encoding="utf-8") as f:
            f.writelines(f"{r[0]} {r[4]}\n" for r in rows)
        return rows

    monkeypatch.setattr(fr, "rule_rows", spy)
    got = verify_json(clone, "--range", f"{base}..HEAD")
    codes = {d["code"] for d in got[1]["diagnostics"]}
    assert {"KB205", "KB216"} <= codes  # per-file and cross-file warnings both there
    assert "Problems/q3.md KB205" in log.read_text(encoding="utf-8").splitlines()
    shutil.rmtree(clone / ".kb")
    import kb.checks.verify_range as vr

    real_prepare = vr.prepare_cache
    # the workers compute no rule results: the check computes them itself
    monkeypatch.setattr(vr, "prepare_cache", lambda idx: real_prepare(idx) and False)
    assert verify_json(clone, "--range", f"{base}..HEAD") == got


def test_object_rows_built_in_bulk_equal_those_built_one_by_one() -> None:
    import dataclasses

    from kb.index import ObjectRow

    raw = [("H1", "hypothesis", "待验", "t", "tree.md", 3, "{}", "ab" * 20),
           ("q1", "problem", "求解中", "Q", "Problems/q1.md", 1, '{"priority": 2}', None)]
    many = ObjectRow.many(raw)
    assert many == [ObjectRow(*r) for r in raw]
    assert hash(many[0]) == hash(ObjectRow(*raw[0])) and many[1].fields() == {"priority": 2}
    with pytest.raises(dataclasses.FrozenInstanceError):
        many[0].id = "H2"  # still frozen


def test_staged_check_after_a_checked_head_keeps_the_index_file(make_kb) -> None:
    # A snapshot's temporary table used to leave a transaction open: the next index
    # write failed, kb fell back to an in-memory index and then crashed (exit 3).
    from conftest import git, run_script
    from test_verify_support import make_repo, problem

    # more than 256 files: the checks join through the snapshot's temporary table
    root = make_repo(make_kb, {f"Problems/q{i}.md": problem(f"q{i}") for i in range(2, 302)})
    assert run_script("verify", "--rev", "HEAD", cwd=root).code == 0
    q2 = root / "Problems" / "q2.md"
    for edit in ("\nMore prose.\n", None):
        text = q2.read_text(encoding="utf-8")
        q2.write_text(text + edit if edit else text.replace("- 优先级: 1", "- 优先级: 3"),
                      encoding="utf-8")
        git(root, "add", "Problems/q2.md")
        res = run_script("verify", "--staged", cwd=root)
        assert res.code == 0, res.stderr
        assert "in-memory" not in res.stderr and "internal error" not in res.stderr


def test_range_starts_as_many_git_processes_for_3_commits_as_for_12(make_kb, tmp_path) -> None:
    from conftest import commit_all, git, run_script
    from test_verify_support import make_repo, problem

    counts = {}
    for n in (3, 12):
        root = make_repo(make_kb, {"Problems/q2.md": problem("q2")})
        base = git(root, "rev-parse", "HEAD").strip()
        q2 = root / "Problems" / "q2.md"
        for i in range(n):
            q2.write_text(q2.read_text(encoding="utf-8") + f"\nRun {i}.\n", encoding="utf-8")
            commit_all(root, f"run {i}")
        trace = tmp_path / f"range-{n}.txt"
        res = run_script("verify", "--range", f"{base}..HEAD", cwd=root, env={"GIT_TRACE": str(trace)})
        assert res.code == 0, res.stderr
        counts[n] = len(_git_processes(trace))
    assert counts[3] == counts[12], counts


def test_blob_reader_reads_names_with_spaces_and_skips_missing_ones(git_repo) -> None:
    from conftest import commit_all

    from kb import git

    (git_repo / "知识 库").mkdir()
    (git_repo / "知识 库" / "kb.toml").write_text("[kb]\n", encoding="utf-8")
    commit_all(git_repo)
    got = git.read_blobs(["HEAD:知识 库/kb.toml", "HEAD:知识 库/absent.toml", "HEAD:no such"], git_repo)
    assert got == {"HEAD:知识 库/kb.toml": b"[kb]\n"}


# -- a cold index streams tree files (memory: a 100,000-hypothesis tree.md) -----------

def _streamed(path: str, data: bytes, cfg):
    """What kb.parse.iter_parse_file gives, put back together as one ParseResult."""
    from kb.parse import iter_parse_file

    it = iter_parse_file(path, data, cfg)
    objects = []
    while True:
        try:
            objects.append(next(it))
        except StopIteration as stop:
            return stop.value.replace(objects=tuple(objects))


_TREE_TEXTS = [
    _random_tree(7, 200),
    "---\nid: H2\nstatus: 被支持\n---\n# T\n\n## H1: one\nStatus: 待验\n\n## H2: two\nStatus: 待验\n",
    "---\nstatus: 被支持\n---\n# T\n\n## H1: the only one\nStatus: 待验\n",
    "---\nstatus: 被支持\n---\n# T\n\n## H1: one\nStatus: 待验\n\n## H2: two\nStatus: 待验\n",
    "# T\n\n## H1: no status\n\n## X1: looks like one\nStatus: 待验\n\n## H2: ok\n**Status**: 待验\n"
    "Status：进行中\n\n##H3: no space\n",
    "# T\n\n## H1: one\nStatus: 待验\n<<<<<<< ours\nEvidence: E1\n=======\nEvidence: E2\n>>>>>>> theirs\n",
    "# T\n\n## H1: one\nStatus: 待验\n\nnul \x00 here\n",
    "\ufeff# T\r\n\r\n## H1: one\r\nStatus: 待验\r\n```\r\n## H2: in a fence\r\n```\r\n",
]


@pytest.mark.parametrize("text", _TREE_TEXTS)
def test_streamed_tree_parse_equals_the_whole_parse(text: str) -> None:
    cfg = config_for(Path("/kb"))
    data = text.encode("utf-8")
    whole = parse_file("tree.md", data, cfg)
    assert _streamed("tree.md", data, cfg) == whole
    assert whole.objects or whole.diagnostics


def test_streamed_parse_of_bytes_that_are_not_utf8() -> None:
    cfg = config_for(Path("/kb"))
    data = b"# T\n\n## H1: \xff\nStatus: x\n"
    got = _streamed("tree.md", data, cfg)
    assert got == parse_file("tree.md", data, cfg) and got.diagnostics[0].code == "KB101"


def test_index_stores_a_tree_in_parts_as_one_parse(make_kb, monkeypatch) -> None:
    """A tree.md stored in parts of 7 hypotheses holds the rows, in the order, of
    its whole parse; re-parsed after losing rows, it replaces them all."""
    import kb.index_rows as index
    from kb.index import Index
    from kb.index_rows import result_rows as _result_rows
    from kb.repo import open_kb

    monkeypatch.setattr(index, "STREAM_PART", 7)
    text = _random_tree(3, 60) + "\n## H99 no separator\n\n## H98: no status\n\nStatus: 待验\n"
    root = make_kb({"tree.md": text}, commit=True)
    k = open_kb(root)
    data = (root / "tree.md").read_bytes()
    with Index(k) as idx:
        idx.refresh(check=True)
        b = idx.current_blob("tree.md")
        want = _result_rows("tree.md", b, parse_file("tree.md", data, k.config))
        assert len(want[1]) > 7 * 5 and want[3]  # several parts, and diagnostics

        def stored():
            q = "SELECT * FROM {} WHERE path='tree.md' AND blob=? ORDER BY rowid"
            return tuple(list(idx.db.execute(q.format(t), (b,)))
                         for t in ("parsed", "objects", "links", "diagnostics"))

        assert stored() == tuple(want)
        with idx.db:
            idx.db.execute("DELETE FROM objects WHERE path='tree.md' AND rowid % 5 = 0")
        assert not idx.has_parse("tree.md", b)
        assert idx.refresh(check=True).parsed == 1
        assert stored() == tuple(want)


def test_range_checks_only_changed_files_per_file_and_reports_what_a_full_check_reports(
        make_kb, tmp_path, monkeypatch) -> None:
    """A fresh-clone range runs the per-file rules on the files it changed only; every
    history finding and every error it introduces (in a changed file, or a cross-file
    error in an untouched one) is the full check's."""
    import shutil
    import subprocess

    import kb.checks.verify_range as vr
    from conftest import commit_all, git
    from test_verify_support import experiment, make_repo, problem, proposition, verify_json

    files = {f"Problems/q{i}.md": problem(f"q{i}") for i in (2, 3)}
    files["Problems/q4.md"] = problem("q4", depended_by='["q5"]')
    files["Problems/q5.md"] = problem("q5", depends='["q4"]')
    files["Problems/q6.md"] = problem("q6", status="奇怪")  # an error the range does not touch
    files["experiments/E002.md"] = experiment("E002", status="已完成")  # another (KB207)
    root = make_repo(make_kb, files)
    base = git(root, "rev-parse", "HEAD").strip()
    (root / "Propos" / "数论" / "q2.md").write_text(proposition("q2"), encoding="utf-8")
    commit_all(root, "a second q2")  # KB202 across files (cards share one namespace)
    q3 = root / "Problems" / "q3.md"
    q3.write_text(problem("q3", depends='["q99"]', status="怪"), encoding="utf-8")
    commit_all(root, "q3: a dangling dependency and an unknown status")  # KB212, KB205
    (root / "Problems" / "q4.md").unlink()
    commit_all(root, "q4 removed")  # a history violation; q5 (untouched) now dangles
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)

    code, got = verify_json(clone, "--range", f"{base}..HEAD")
    # the untouched files were not marked checked: a whole check in this clone still sees q6
    _, whole = verify_json(clone)
    assert ("KB205", "Problems/q6.md") in {(d["code"], d["path"]) for d in whole["diagnostics"]}
    shutil.rmtree(clone / ".kb")
    monkeypatch.setattr(vr, "_rule_scope", lambda ch: None)  # every file, as before
    full_code, full = verify_json(clone, "--range", f"{base}..HEAD")

    def keys(data, pred=lambda d: True):
        return sorted((d["code"], d["path"], d["message"], d["blocking"], d["commit"] or "")
                      for d in data["diagnostics"] if pred(d))

    assert code == full_code == 1
    blocking = keys(got, lambda d: d["blocking"])
    assert blocking == keys(full, lambda d: d["blocking"])
    assert keys(got, lambda d: d["family"] == "history") == keys(full, lambda d: d["family"] == "history")
    assert {"KB202", "KB205", "KB212"} <= {c for c, *_ in blocking}
    assert ("KB212", "Problems/q5.md") in {(c, p) for c, p, *_ in blocking}  # untouched, introduced
    assert any(d["family"] == "history" and d["severity"] == "error" for d in got["diagnostics"])
    # what the scoped check leaves out: the untouched files' own (pre-existing) findings
    left_out = set(keys(full)) - set(keys(got))
    assert {(c, p) for c, p, *_ in left_out} == {("KB205", "Problems/q6.md"),
                                                ("KB207", "experiments/E002.md")}
    assert not any(b for *_, b, _ in left_out)
    assert set(keys(got)) <= set(keys(full))
    assert any(n.split(" ", 1)[0].isdigit() and "untouched by the range" in n
               for n in got["notes"])  # a KB at the top: no folder named, not "."
    assert not any("untouched by the range" in n for n in full["notes"])


def test_range_reads_untouched_cards_light_and_reports_exactly_what_their_full_parse_gives(
        make_kb, tmp_path, monkeypatch) -> None:
    """A fresh-clone range reads the cards it leaves untouched light (IDs, statuses,
    links: kb.parse.light); its report -- every finding, blocking or not, in order, and
    its notes -- is the one the same range gives with every card parsed in full, with
    cross-file faults in untouched files: a dangling reference, a duplicate ID the
    range introduces against an untouched card, dependency lists and a cycle the range
    changes, method hierarchies, Verified cards, and untouched cards with parse
    diagnostics or code blocks (read in full)."""
    import shutil
    import subprocess

    import kb.checks.facts as facts_mod
    import kb.checks.verify_range as vr
    from conftest import commit_all, git
    from test_verify_support import (experiment, make_repo, method, problem, proposition, verified,
                                     verify_json)

    files = {f"Problems/q{i}.md": problem(f"q{i}") for i in (2, 3, 11)}
    files["Problems/q4.md"] = problem("q4", depended_by='["q5"]')
    files["Problems/q5.md"] = problem("q5", depends='["q4"]')
    files["Problems/q7.md"] = problem("q7", depended_by='["q1"]')        # KB216, untouched
    files["Problems/q8.md"] = problem("q8")
    files["Problems/q10.md"] = problem("q10", depends='["q9"]')          # a cycle once q9 is
    files["Problems/q12.md"] = problem("q12", depends="q2, q3")          # KB120: read in full
    files["Problems/q13.md"] = problem("q13", extra="\n```\n- 状态: x\n```\n")  # a fence
    files["Problems/q14.md"] = problem("q14", status="奇怪")              # per-file, pre-existing
    files["Methods/m0.md"] = method("m0")
    files["Methods/m1.md"] = method("m1", parents='["m0"]', claims='["p9"]')  # KB215, KB214
    files["Propos/数论/p3.md"] = proposition("p3", status="已验证·真", prob="1")  # KB217
    files["Verified/命题/p4.md"] = verified("p4")                          # KB221: no p4
    files["experiments/E0005.md"] = experiment("E0005", hyp="H9")        # KB211, untouched
    files["experiments/E0006.md"] = experiment("E0006", date="2026-03-04")
    files["experiments/E0008.md"] = experiment("E0008") + "\n```\n**Status**: x\n# E9: H9 - y\n```\n"
    files["experiments/E0011.md"] = experiment("E0011", date="2 Jan 2026")  # KB131: read in full
    root = make_repo(make_kb, files)
    base = git(root, "rev-parse", "HEAD").strip()
    (root / "experiments" / "E0009.md").write_text(experiment("E0009", date="2026-05-05"),
                                                  encoding="utf-8")
    (root / "experiments" / "E0010.md").write_text(experiment("E0005"), encoding="utf-8")
    commit_all(root, "two experiments")                  # KB240; KB202 against untouched E0005
    (root / "Propos" / "数论" / "q2.md").write_text(proposition("q2"), encoding="utf-8")
    commit_all(root, "a second q2")                       # KB202 against untouched Problems/q2.md
    (root / "Problems" / "q8.md").write_text(problem("q8", depends='["q7","q11"]'), encoding="utf-8")
    commit_all(root, "q8 depends on q7 and q11")          # KB216 of untouched q7 and q11 change
    (root / "Problems" / "q9.md").write_text(problem("q9", depends='["q10"]'), encoding="utf-8")
    commit_all(root, "q9 closes a cycle")                 # KB213 through untouched q10
    (root / "Problems" / "q4.md").unlink()
    commit_all(root, "q4 removed")                        # untouched q5 now dangles (KB212)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)

    seen: list[int] = []
    real = facts_mod.light_versions.__init__

    light_paths: set[str] = set()

    def spy(self, index, rows):
        seen.append(len(rows))
        light_paths.update(p for p, _ in rows)
        real(self, index, rows)

    monkeypatch.setattr(facts_mod.light_versions, "__init__", spy)
    # Chunks of 3 cards: several, so that forked workers read them while this process
    # derives the tree versions (kb.parallel.Workers.meanwhile).
    import kb.parallel

    meanwhile: list[bool] = []
    real_meanwhile = kb.parallel.Workers.meanwhile

    def spy_meanwhile(self, job):
        meanwhile.append(True)
        return real_meanwhile(self, job)

    monkeypatch.setattr(vr, "LIGHT_CHUNK", 3)
    monkeypatch.setattr(kb.parallel.Workers, "meanwhile", spy_meanwhile)
    code, got = verify_json(clone, "--range", f"{base}..HEAD")
    assert meanwhile or kb.parallel.cpu_workers() < 2 or not kb.parallel.can_fork()
    assert seen and seen[0] >= 10  # the untouched cards were read light
    assert {"experiments/E0005.md", "experiments/E0006.md"} <= light_paths  # and experiments
    assert "experiments/E0008.md" in light_paths  # its fence masked as the parser masks it
    assert "experiments/E0011.md" not in light_paths  # KB131: read in full
    shutil.rmtree(clone / ".kb")
    seen.clear()
    monkeypatch.setattr(vr, "_light_candidates", lambda *a: {})  # every card parsed in full
    full_code, full = verify_json(clone, "--range", f"{base}..HEAD")
    assert seen == [0]
    assert (code, got["diagnostics"], got["notes"]) == (full_code, full["diagnostics"], full["notes"])
    found = {(d["code"], d["path"]) for d in got["diagnostics"]}
    assert any(d["code"] == "KB202" and "Problems/q2.md" in d["message"] for d in got["diagnostics"])
    assert {("KB212", "Problems/q5.md"), ("KB216", "Problems/q7.md"),
            ("KB216", "Problems/q11.md"), ("KB215", "Methods/m1.md"), ("KB214", "Methods/m1.md"),
            ("KB217", "Propos/数论/p3.md"), ("KB221", "Verified/命题/p4.md"),
            ("KB120", "Problems/q12.md"), ("KB211", "experiments/E0005.md")} <= found
    assert any(d["code"] == "KB202" and "E0005" in d["message"] for d in got["diagnostics"])
    assert any(c == "KB213" for c, _ in found)
    blocking = {(d["code"], d["path"]) for d in got["diagnostics"] if d["blocking"]}
    assert ("KB212", "Problems/q5.md") in blocking and ("KB216", "Problems/q7.md") not in blocking
    # and a whole check afterwards (the light rows were never stored) finds every file
    _, whole = verify_json(clone)
    assert ("KB205", "Problems/q14.md") in {(d["code"], d["path"]) for d in whole["diagnostics"]}


def test_facts_answer_from_light_rows_as_from_the_full_parses(make_kb, tmp_path) -> None:
    """kb.checks.facts with light rows registered (light_versions) answers every
    whole-snapshot and point query as a Facts over the full parses does, and parses a
    light file in full when a rule asks for its fields."""
    import shutil

    from kb.checks.facts import Facts, light_versions
    from kb.index import Index
    from kb.parse.light import light_read
    from kb.repo import commit_snapshot, open_kb
    from test_verify_support import experiment, make_repo, method, problem, proposition, verified

    files = {"Problems/q2.md": problem("q2", depends='["q1","q9"]', depended_by='["q3"]'),
             "Problems/q3.md": problem("q3", depends='["q2"]', status="已解决"),
             "Propos/数论/q2.md": proposition("q2"),                  # a duplicate ID
             "Methods/m1.md": method("m1", parents='["m0"]', claims='["p1"]'),
             "Verified/命题/p1.md": verified("p1"),
             "experiments/E0005.md": experiment("E0005", hyp="H9", date="2026-03-04")}
    root = make_repo(make_kb, files)
    k = open_kb(root)
    snap = commit_snapshot(k, "HEAD")
    shutil.rmtree(root / ".kb", ignore_errors=True)
    full_idx = Index(k, tmp_path / "full.sqlite")
    light_idx = Index(k, tmp_path / "light.sqlite")
    light = {}
    for p, b in snap.files.items():
        res = light_read(p, b, (root / p).read_bytes(), snap.formats[p])
        if res is not None:
            light[(p, b)] = res
    assert len(light) >= 5
    full = Facts(full_idx, snap, "HEAD")
    with light_versions(light_idx, light):
        lite = Facts(light_idx, snap, "HEAD")
        stored = {p for (p,) in light_idx.db.execute("SELECT path FROM parsed")}
        assert not {p for p, _ in light} & stored  # not parsed, not stored
        assert sorted(lite.rows()) == sorted(full.rows())
        assert lite.links() == full.links()
        assert lite.duplicates() == full.duplicates()
        for kind in ("problem", "proposition", "method", "verified", "hypothesis", "experiment"):
            assert Facts(light_idx, snap, "x", ensure=()).kind_ids(kind) == full.kind_ids(kind)
        for oid in ("q2", "q3", "m1", "p1", "q9"):
            kinds = ("problem", "proposition", "method", "verified")
            assert sorted(Facts(light_idx, snap, "x", ensure=()).find(oid, kinds)) == \
                sorted(full.find(oid, kinds))
        for path, oid, key in (("Problems/q2.md", "q2", "被依赖"), ("Methods/m1.md", "m1", "上级体系"),
                               ("Problems/q3.md", "q3", "计划"), ("Problems/q3.md", "q3", "无此键"),
                               ("Problems/q3.md", "q2", "依赖")):
            assert lite.anchor_line(path, oid, key) == full.anchor_line(path, oid, key)
            assert lite.declared_line(path, oid) == full.declared_line(path, oid)
        assert sorted(lite.field_of_kind("problem", "priority")) == \
            sorted(full.field_of_kind("problem", "priority"))
        # the problems were parsed in full to answer that, and only they
        now = {p for (p,) in light_idx.db.execute("SELECT path FROM parsed")}
        assert {"Problems/q2.md", "Problems/q3.md"} <= now
        assert "Methods/m1.md" not in now
        assert sorted(lite.data_of_kind("method")) == sorted(full.data_of_kind("method"))
        # an experiment's date comes with its light reading: not parsed for it
        assert ("experiments/E0005.md", snap.files["experiments/E0005.md"]) in light
        assert lite.field_of_kind("experiment", "date") == full.field_of_kind("experiment", "date")
        now = {p for (p,) in light_idx.db.execute("SELECT path FROM parsed")}
        assert "experiments/E0005.md" not in now
        assert sorted(lite.data_of_kind("experiment")) == sorted(full.data_of_kind("experiment"))
    full_idx.close()
    light_idx.close()
