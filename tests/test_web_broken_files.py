"""``kb serve`` says a file is broken on the pages that show it or miss what it holds: a
file's own page lists its diagnostics (code, line, message, escaped), the page of an ID
no readable file declares names the files with parse errors (the one named like the ID
first), and the Board counts and names the verification records it left out (unreadable,
or a verdict no vote gives: KB243, as ``kb verifiers`` leaves them out) instead of silently
counting fewer. A real ``kb serve`` on a free loopback port,
a real repository."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from conftest import EXAMPLES, commit_all, git_init, write_files
from webkb import Server, serve

#: A problem card with an unresolved merge conflict (KB190) whose marker line holds markup
#: (the markers are built: this file must hold none itself).
CONFLICTED = f"""# 问题｜qbad
- 标题: qbad
- ID: qbad
- 类型: 问题
{"<" * 7} HEAD
- 状态: 待解决
{"=" * 7}
- 状态: 已解决
{">" * 7} theirs <b>x</b>
- 优先级: 3

## 陈述
Is it stale?
"""

#: A proposition card saved in GBK (KB101: not UTF-8).
PLAT = "# 命题｜plat\n- 标题: 平台\n- ID: plat\n- 类型: 命题\n- 状态: 未定论\n- 概率: 0.5\n"

#: A verification record without votes' numbers: KB243 (malformed), left out of the board.
BAD_RECORD = {"r": "r-p1", "verdict": 0.9, "results": [{"verifier": "v1", "result": "<i>yes</i>"}],
              "at": "2026-11-05T10:00:00"}

#: A record that reads but holds a verdict no vote gives (two 0 votes, verdict 1.0): KB243,
#: left out of the board's list, count and accuracy as ``kb verifiers`` leaves it out.
FORGED_RECORD = {"r": "r-q1-s1", "verdict": 1.0, "mode": "forced",
                 "results": [{"verifier": "zz", "result": 0}, {"verifier": "yy", "result": 0}],
                 "transcript": [], "history": [], "at": "2026-12-01T10:00:00"}


@pytest.fixture(scope="module")
def kbdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("webbroken") / "kb"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".kb", "__pycache__"))
    git_init(root)
    write_files(root, {
        "Problems/qbad.md": CONFLICTED,
        "Propos/数论/plat.md": PLAT.encode("gbk"),
        "Logs/Verification/r-p1_20261105T100000.json": json.dumps(BAD_RECORD) + "\n",
        "Logs/Verification/r-p2_20261106T100000.json": "{not json\n",
        "Logs/Verification/r-q1-s1_20261201T100000.json": json.dumps(FORGED_RECORD) + "\n",
    })
    commit_all(root, "the example KB with broken files")
    return root


@pytest.fixture(scope="module")
def server(kbdir: Path) -> Iterator[Server]:
    with serve(kbdir) as s:
        yield s


def get(server: Server, path: str, status: int = 200) -> str:
    r = httpx.get(server.url + path, timeout=60)
    assert r.status_code == status, (path, r.status_code)
    return r.text


def section(html: str, cls: str) -> str:
    found = re.findall(rf'<section class="{cls}".*?</section>', html, re.S)
    assert found, f"no {cls} section on the page"
    return "".join(found)


def test_a_conflicted_files_page_lists_its_diagnostics_escaped(server: Server) -> None:
    html = get(server, "/file/Problems/qbad.md")
    b = section(html, "parse-errors")
    assert "<b>Problems/qbad.md</b> has 1 parse error" in b
    assert re.search(r'<a href="/file/Problems/qbad.md#L5">Problems/qbad.md:5:\d+</a> '
                     r'<code class="code">KB190</code>', b)
    assert "<b>x</b>" not in html.replace("<b>Problems/qbad.md</b>", "")  # the text stays text


def test_an_undecodable_files_page_says_it_is_not_utf8(server: Server) -> None:
    html = get(server, "/file/Propos/%E6%95%B0%E8%AE%BA/plat.md")
    b = section(html, "parse-errors")
    assert "<b>Propos/数论/plat.md</b> has 1 parse error" in b
    assert '<code class="code">KB101</code>' in b and "not valid UTF-8" in b


def test_a_clean_files_page_says_nothing(server: Server) -> None:
    html = get(server, "/file/Problems/q1.md")
    assert "parse-errors" not in html and "parse-warnings" not in html


def test_a_missing_id_names_the_unparsed_file_that_would_hold_it(server: Server) -> None:
    html = get(server, "/o/qbad", 404)
    msg = re.search(r'id="error-message">(.*?)</p>', html, re.S).group(1)
    assert "no object with ID &#39;qbad&#39; at HEAD" in msg
    assert "Problems/qbad.md has parse errors" in msg
    assert re.search(r'id="error-files".*?<b>2</b> files at this revision have parse errors', html,
                     re.S)


def test_a_missing_id_without_a_namesake_still_points_at_the_broken_files(server: Server) -> None:
    html = get(server, "/o/q77", 404)
    assert "2 files with parse errors may declare it" in html
    assert 'id="error-files"' in html


def test_board_counts_and_names_the_records_it_left_out(server: Server, kbdir: Path) -> None:
    html = get(server, "/board")
    kept = len(list((kbdir / "Logs" / "Verification").glob("*.json"))) - 3
    counts = re.search(r'id="board-counts">(.*?)</section>', html, re.S).group(1)
    assert f"<b>{kept}</b> verification records; " in counts
    assert "3 files left out (below)" in counts and "unreadable" not in counts
    b = section(html, "parse-errors")  # the board has no other banner of this class
    assert "<b>3</b> verification record files are left out" in b
    assert "Logs/Verification/r-p1_20261105T100000.json" in b
    assert "Logs/Verification/r-p2_20261106T100000.json" in b and "not JSON" in b
    assert "&lt;i&gt;yes&lt;/i&gt;" in b and "<i>yes</i>" not in html


def test_board_leaves_out_a_record_no_verdict_could_write(server: Server) -> None:
    html = get(server, "/board")
    b = section(html, "parse-errors")
    assert "Logs/Verification/r-q1-s1_20261201T100000.json" in b
    assert "does not follow from its results" in b
    records = html[html.index('id="records"'):html.index('id="accuracy"')]
    assert "r-q1-s1_20261201T100000" not in records.replace(b, "")
    assert "2026-12-01T10:00:00" not in html
    accuracy = html[html.index('id="accuracy"'):]
    assert "<td>zz</td>" not in accuracy and "<td>yy</td>" not in accuracy
    assert ">zz<" not in accuracy and ">yy<" not in accuracy
