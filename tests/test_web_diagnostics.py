"""``kb serve`` says when the files a page draws on have parse errors: a banner naming
the file and its diagnostics (code, line, message, escaped) on the tree page for the
tree file and on an object's page for its own file, and on the Tree and Board pages
the count ``kb ls`` notes ("N file(s) have errors"). All from the diagnostics the index
stored with each parse. A real ``kb serve`` on a free loopback port, a real repository."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from webkb import Server, serve

#: A tree.md saved in GBK, as a Windows editor may leave it: not UTF-8 (KB101).
GBK_TREE = "# Hypothesis Tree\n\n## H1: 缓存命中率低于一半\nStatus: 待验\nEvidence: (empty)\n"

#: A problem card with its title given twice (KB112) and a priority that is no number
#: (KB125), whose value is markup: the page must show it as text.
BAD_CARD = """# 问题｜a
- 标题: a
- 标题: b
- ID: q1
- 类型: 问题
- 状态: 待解决
- 优先级: <i>abc</i>
- 依赖: []
- 被依赖: []
- 来源: 原始
- 计划: 无

## 陈述
Is the cache ever stale?
"""

GOOD_CARD = BAD_CARD.replace("- 标题: b\n", "").replace("<i>abc</i>", "3").replace("q1", "q2")


@pytest.fixture(scope="module")
def kbdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from conftest import commit_all, git_init, write_files

    root = git_init(tmp_path_factory.mktemp("webdiag") / "kb")
    write_files(root, {"kb.toml": "[kb]\n", "tree.md": GBK_TREE.encode("gbk"),
                       "Problems/q1.md": BAD_CARD, "Problems/q2.md": GOOD_CARD})
    commit_all(root, "a GBK tree and a card with errors")
    return root


@pytest.fixture(scope="module")
def server(kbdir: Path) -> Iterator[Server]:
    with serve(kbdir) as s:
        yield s


def get(server: Server, path: str) -> str:
    r = httpx.get(server.url + path, timeout=60)
    assert r.status_code == 200, (path, r.status_code)
    return r.text


def banner(html: str) -> str:
    """The page's parse-error banner(s); fails when there is none."""
    found = re.findall(r'<section class="parse-errors".*?</section>', html, re.S)
    assert found, "no parse-error banner on the page"
    return "".join(found)


def test_tree_page_names_the_unreadable_tree_file_and_its_diagnostic(server: Server) -> None:
    html = get(server, "/tree")
    b = banner(html)
    assert "<b>tree.md</b> has 1 parse error" in b
    assert '<a href="/file/tree.md#L3">tree.md:3:1</a> <code class="code">KB101</code>' in b
    assert "not valid UTF-8" in b
    # The empty tree says why it is empty.
    assert "No hypotheses at this revision that kb could read: tree.md has parse errors" in html
    # The count of every file with errors at this commit, as `kb ls` notes it.
    assert re.search(r'id="error-files".*?<b>2</b> files at this revision have parse errors', html,
                     re.S)


def test_object_page_shows_its_own_files_errors_escaped(server: Server) -> None:
    html = get(server, "/o/q1")
    b = banner(html)
    assert "<b>Problems/q1.md</b> has 2 parse errors" in b
    assert '<a href="/file/Problems/q1.md#L3">Problems/q1.md:3:1</a> <code class="code">KB112</code>' in b
    assert '<a href="/file/Problems/q1.md#L7">Problems/q1.md:7:1</a> <code class="code">KB125</code>' in b
    assert "&lt;i&gt;abc&lt;/i&gt;" in b and "<i>abc</i>" not in html
    assert "tree.md" not in b  # another file's errors are not this page's


def test_board_counts_the_files_with_errors(server: Server) -> None:
    html = get(server, "/board")
    assert re.search(r'id="error-files".*?<b>2</b> files at this revision have parse errors '
                     r'and may hold objects not shown \(first: <a href="/file/Problems/q1.md#L3">'
                     r'Problems/q1.md:3 KB112</a>\)', html, re.S)


def test_a_clean_files_page_has_no_banner(server: Server) -> None:
    html = get(server, "/o/q2")
    assert 'class="parse-errors"' not in html and 'class="oid">q2<' in html


def test_a_kb_without_errors_shows_neither(make_kb) -> None:
    root = make_kb({"tree.md": GBK_TREE, "Problems/q2.md": GOOD_CARD}, commit=True)
    with serve(root) as s:
        for path in ("/tree", "/board", "/o/q2", "/o/H1"):
            html = get(s, path)
            assert "parse-errors" not in html and 'id="error-files"' not in html, path
