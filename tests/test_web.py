"""``kb serve`` over HTTP (issue 16): pages from git objects, escaping, Host check,
read-only, no path outside the KB. A real ``kb serve`` process on a free loopback
port, a real repository; the browser tests are in test_web_browser.py."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from conftest import git, invoke, kb_script, source_env
from webkb import (NEW_H2, OLD_H2, TRAIL_HOSTILE, UNCOMMITTED, Server, build_kb, serve,
                   trail_available)


@pytest.fixture(scope="module")
def kbdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_kb(tmp_path_factory.mktemp("web") / "kb")


@pytest.fixture(scope="module")
def server(kbdir: Path) -> Iterator[Server]:
    with serve(kbdir) as s:
        yield s


def get(server: Server, path: str, **kw) -> httpx.Response:
    return httpx.get(server.url + path, timeout=60, **kw)


def test_binds_loopback_and_prints_the_url(server: Server) -> None:
    from kb.contract import validate_output

    validate_output("serve", server.info)  # the agents' contract (kb schema serve)
    assert server.url.startswith("http://127.0.0.1:")
    assert server.port > 0 and server.info["rev"] == "HEAD"
    r = get(server, "/", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/tree"


def test_tree_page_is_the_committed_tree_with_counts_and_evidence(server: Server) -> None:
    html = get(server, "/tree").text
    for hid in ("H1", "H1.1", "H1.1.1", "H1.2", "H2", "H3"):
        assert f'id="h-{hid}"' in html
    assert NEW_H2 in html and OLD_H2 not in html
    assert UNCOMMITTED not in html  # the working tree's edit is not served
    assert "Most of the 40-minute CI run is spent inside pytest" in html
    assert '<b id="count-active">3</b>' in html and '<b id="count-closed">3</b>' in html
    # Evidence with each experiment's conclusion and date, linked to its page.
    assert re.search(r'<a href="/o/E003">E003</a> <span class="concl c-refutes">推翻</span> '
                     r'<span class="muted">2026-11-04</span>', html)
    # Status colours by class; upper levels unfolded, the deepest folded.
    assert 'class="card st-supported"' in html and 'class="card st-refuted"' in html
    assert '<li class="node" data-t="h1.1 ' in html


def test_rev_selects_another_commit(server: Server) -> None:
    html = get(server, "/tree?rev=HEAD~1").text
    assert OLD_H2 in html and NEW_H2 not in html and 'id="h-H3"' not in html
    # Links keep the revision.
    assert 'href="/o/H1?rev=HEAD~1"' in html
    assert "HEAD~1" in get(server, "/o/H2?rev=HEAD~1").text
    assert OLD_H2 in get(server, "/o/H2?rev=HEAD~1").text


@pytest.mark.parametrize("rev", ["nope", "--output=x", "HEAD..main", "a b"])
def test_bad_rev_is_a_clear_400(server: Server, rev: str) -> None:
    r = get(server, "/tree", params={"rev": rev})
    assert r.status_code == 400
    assert "not a revision" in r.text or "no commit" in r.text
    # the footer names the view the server shows, not the revision it refused
    footer = r.text[r.text.index("<footer>"):]
    assert "Read-only view of the committed KB at <code>HEAD</code>" in footer, footer


def test_hostile_text_is_escaped_everywhere(server: Server) -> None:
    for path in ("/tree", "/o/H3", "/file/tree.md", "/board"):
        html = get(server, path).text
        assert "<script>alert" not in html and "<img src=x" not in html
        assert 'href="javascript' not in html.lower() and "onerror=alert" not in html.replace(
            "onerror=alert(2)&gt;", "")
    html = get(server, "/o/H3").text
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in html
    assert "%%{init: {&#34;securityLevel&#34;: &#34;loose&#34;}}%%" in html
    board = get(server, "/board").text
    assert "&lt;b&gt;sound&lt;/b&gt; argument" in board


def test_strict_security_headers(server: Server) -> None:
    r = get(server, "/tree")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert re.fullmatch(r"app;dur=[0-9.]+, cpu;dur=[0-9.]+", r.headers["server-timing"])


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1",
                                  "127.0.0.1:1", "localhost.evil.example"])
def test_foreign_host_header_is_refused(server: Server, host: str) -> None:
    status, body = server.raw_get("/tree", host=host)
    assert status == 421 and "not served here" in body


def test_own_host_names_are_accepted(server: Server) -> None:
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"LOCALHOST:{server.port}"):
        status, body = server.raw_get("/tree", host=host)
        assert status == 200 and 'id="h-H1"' in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_read_only(server: Server, method: str) -> None:
    r = httpx.request(method, server.url + "/tree", timeout=30)
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"


@pytest.mark.parametrize("path", ["/file/../kb.toml", "/file/../../etc/passwd",
                                  "/file/%2e%2e/%2e%2e/etc/passwd", "/file/Problems/../kb.toml",
                                  "/file/./tree.md", "/file//etc/passwd", "/file/.git/config",
                                  "/file/Problems", "/static/../app.py", "/static/kb.css/../../source.py",
                                  "/o/..%2Fkb.toml"])
def test_no_path_outside_the_kb(server: Server, path: str) -> None:
    status, body = server.raw_get(path)
    assert status == 404, (path, status)
    assert "[kb]" not in body and "root:" not in body


def test_file_page_serves_committed_kb_files_with_line_anchors(server: Server) -> None:
    html = get(server, "/file/tree.md").text
    assert '<span class="ln" id="L3">3</span>## H1: Most of the 40-minute' in html
    assert UNCOMMITTED not in html
    assert get(server, "/file/kb.toml").status_code == 200


def test_file_outside_a_kb_subfolder_is_refused(make_kb) -> None:
    root = make_kb({"tree.md": "# Hypothesis Tree\n"}, subdir="research")
    (root.parent / "secret.txt").write_text("top secret\n", encoding="utf-8")
    git(root.parent, "add", "-A")
    git(root.parent, "commit", "-qm", "kb in a subfolder")
    with serve(root) as s:
        for path in ("/file/../secret.txt", "/file/secret.txt", "/file/%2e%2e/secret.txt"):
            status, body = s.raw_get(path)
            assert status == 404 and "top secret" not in body
        assert s.raw_get("/file/tree.md")[0] == 200


def test_experiment_page(server: Server) -> None:
    html = get(server, "/o/E003").text
    assert 'class="oid">E003<' in html
    assert '<a class="fileline" href="/file/experiments/E003.md#L1">experiments/E003.md:1</a>' in html
    assert '<a href="/o/H1.2">H1.2</a>' in html
    assert '<dd class="conclusion">推翻</dd>' in html and "2026-11-04" in html
    assert '<code class="history">kb log E003</code>' in html


def test_object_page_links_file_line_history_and_lock(server: Server, kbdir: Path) -> None:
    html = get(server, "/o/H1.1").text
    assert 'href="/file/tree.md#L' in html and "tree.md:" in html
    assert '<code class="history">kb log H1.1</code>' in html
    assert "not locked" in html
    r = invoke("lock", "claim", "experiments/E002.md", "--owner", "agent-7", "--ttl", "30m",
               cwd=kbdir)
    assert r.code == 0, r.stderr
    try:
        html = get(server, "/o/E002").text
        assert "held by agent-7" in html
        assert "not locked" in get(server, "/o/E001").text
    finally:
        refs = git(kbdir, "for-each-ref", "--format=%(refname)", "refs/kb/locks")
        for ref in refs.splitlines():
            git(kbdir, "update-ref", "-d", ref)
    assert "not locked" in get(server, "/o/E002").text


#: Pages the link crawl below fetches at most (the example KB and its history: under 200).
CRAWL_LIMIT = 1500
_LINK = re.compile(r'(?:href|src|data-src)="([^"]*)"')


def test_every_link_the_view_generates_resolves(server: Server) -> None:
    """Crawl every same-origin link (and the Trail's ref URLs) reachable from the index,
    bounded: none may be a 404. A research direction's ID holds a slash (``q2/d1``): its
    object and history links carry it encoded as %2F and must still land on a page."""
    import html as htmllib
    from urllib.parse import urldefrag

    seen: set[str] = set()
    todo = ["/"]
    broken: list[tuple[str, str, int]] = []
    parent: dict[str, str] = {"/": "(start)"}
    with httpx.Client(base_url=server.url, timeout=60, follow_redirects=True) as client:
        for _ in range(CRAWL_LIMIT):
            if not todo:
                break
            url = todo.pop()
            r = client.get(url)
            if r.status_code != 200:
                broken.append((parent[url], url, r.status_code))
                continue
            kind = r.headers.get("content-type", "")
            if kind.startswith("application/json"):  # /trail.json: its refs are links too
                found = list(r.json().get("ref_urls", {}).values())
            elif kind.startswith("text/html"):
                found = [htmllib.unescape(m) for m in _LINK.findall(r.text)]
            else:
                continue
            for link in found:
                link = urldefrag(link)[0]
                if not link:  # a fragment of the page itself (#problems)
                    continue
                assert link.startswith("/") and not link.startswith("//"), (url, link)
                if link not in seen:
                    seen.add(link)
                    parent[link] = url
                    todo.append(link)
        assert not todo, f"more than {CRAWL_LIMIT} pages: raise CRAWL_LIMIT"
    assert not broken, broken
    # The crawl met the direction and its encoded slash (else it proves nothing).
    assert "/o/q2%2Fd1" in seen
    if __import__("kb.web.review", fromlist=["available"]).available():
        assert any(u.startswith("/log/q2%2Fd1") for u in seen), sorted(seen)


def test_a_direction_id_with_a_slash_has_its_pages(server: Server) -> None:
    """``q2/d1`` links as ``/o/q2%2Fd1``; the server decodes %2F before routing, and the
    page (and its history) must still be found, while a slash never reaches a file."""
    html = get(server, "/o/q2").text
    assert 'href="/o/q2%2Fd1"' in html
    for path in ("/o/q2%2Fd1", "/o/q2/d1"):
        r = get(server, path)
        assert r.status_code == 200 and 'class="oid">q2/d1<' in r.text, path
        assert 'href="/file/Progress/q2/d1.md#L1"' in r.text
    # The ID is looked up, never opened: an encoded or plain traversal is an unknown ID.
    for path in ("/o/..%2F..%2Fkb.toml", "/o/%2e%2e%2Fkb.toml", "/o/.git%2Fconfig",
                 "/o/.kb/index.sqlite", "/o/q2%2F..%2Fkb.toml"):
        status, body = server.raw_get(path)
        assert status == 404 and "[kb]" not in body, path
    if not __import__("kb.web.review", fromlist=["available"]).available():
        return
    assert 'class="historylink" href="/log/q2%2Fd1"' in get(server, "/o/q2%2Fd1").text
    r = get(server, "/log/q2%2Fd1")
    assert r.status_code == 200 and "History of" in r.text
    assert re.search(r'href="/o/q2%2Fd1\?rev=[0-9a-f]{40}"', r.text)
    for path in ("/log/..%2Fkb.toml", "/log/%2e%2e%2F.git%2Fconfig"):
        status, body = server.raw_get(path)
        assert status == 404 and "[kb]" not in body, path


def test_unknown_object_is_404(server: Server) -> None:
    r = get(server, "/o/H99")
    assert r.status_code == 404 and "no object with ID" in r.text


def test_board_page(server: Server) -> None:
    html = get(server, "/board").text
    # Problems by state, with priority and dependencies.
    assert re.search(r"<h3>求解中 <span class=\"muted\">1</span></h3>", html)
    assert '<a href="/o/q2">q2</a>' in html and '<a href="/o/p1">p1</a>' in html
    # The dependency graph: p1 above q2, an edge between them.
    assert '<svg id="depgraph"' in html and "<title>q2 depends on p1</title>" in html
    # Propositions by category with probability.
    assert "<h3>数论 <span class=\"muted\">2</span></h3>" in html
    assert '<meter min="0" max="1" value="1.0"></meter> 1.0' in html
    # Methods, Verified cards, records with votes, mode and transcript; accuracy.
    assert '<a href="/o/m1">m1</a>' in html
    assert "Verified/" in html
    assert "mode forced" in html and "v1: Euclid&#39;s argument covers every finite list." in html
    assert "<td>v3</td><td>0.0</td><td>step 3 has a gap</td>" in html
    assert re.search(r"<td>v1</td><td>[0-9.]+</td><td>\d+ / \d+</td><td>4</td>", html)


def test_static_assets_are_a_fixed_list(server: Server) -> None:
    assert get(server, "/static/kb.js").headers["content-type"].startswith("text/javascript")
    assert get(server, "/static/kb.css").status_code == 200
    assert get(server, "/static/app.py").status_code == 404


def test_port_in_use_is_an_environment_error(kbdir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run([kb_script(), "serve", "--port", str(port), "--json"], cwd=kbdir,
                              env=source_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert json.loads(proc.stdout)["error"]["kind"] == "environment"


def test_bad_default_rev_and_outside_a_kb(kbdir: Path, tmp_path: Path) -> None:
    r = invoke("serve", "--port", "0", "--rev", "no-such-branch", "--json", cwd=kbdir)
    assert r.code == 2 and "no commit 'no-such-branch'" in r.stderr
    r = invoke("serve", "--port", "0", "--json", cwd=tmp_path)
    assert r.code == 2 and "kb.toml" in r.stderr
    r = invoke("serve", "--port", "70000", cwd=kbdir)
    assert r.code == 2 and "not a TCP port" in r.stderr


REVIEW = pytest.mark.skipif(not __import__("kb.web.review", fromlist=["available"]).available(),
                            reason="kb.review (kb diff, kb log) is not part of this kb")
NO_REVIEW = pytest.mark.skipif(__import__("kb.web.review", fromlist=["available"]).available(),
                               reason="kb.review is installed: the Diff page exists")


@NO_REVIEW
def test_without_kb_review_the_diff_and_history_pages_are_absent(server: Server) -> None:
    assert 'href="/diff' not in get(server, "/tree").text
    assert get(server, "/diff").status_code == 404
    assert get(server, "/log/H1").status_code == 404
    assert 'class="historylink"' not in get(server, "/o/H1").text


@REVIEW
def test_diff_page_is_kb_diff_markdown_with_links(server: Server, kbdir: Path) -> None:
    html = get(server, "/diff").text
    assert 'href="/diff"' in html  # in the navigation
    tip = git(kbdir, "rev-parse", "HEAD")
    r = invoke("diff", "main..feature", "--format", "markdown", "--link-base", f"/at/{tip}/file",
               cwd=kbdir)
    assert r.code == 0, r.stderr
    import html as htmllib

    shown = re.search(r'<pre class="source" id="diff-markdown">(.*?)</pre>', html, re.S)
    assert shown and htmllib.unescape(shown.group(1)) == r.stdout
    # IDs link into the pages; research text stays inert.
    assert '<a href="/o/H3"><code>H3</code></a>' in html
    assert "<script>alert" not in html and 'href="javascript' not in html.lower()
    assert 'class="language-mermaid"' in html
    # The diff's file links (link base /at/<tip>/file) land on the file at the tip.
    r2 = get(server, f"/at/{tip}/file/tree.md", follow_redirects=False)
    assert r2.status_code == 303 and r2.headers["location"] == f"/file/tree.md?rev={tip}"
    assert get(server, f"/at/{tip}/file/../kb.toml").status_code == 404


@REVIEW
def test_diff_of_main_against_itself_says_so(server: Server) -> None:
    html = get(server, "/diff?rev=main").text
    assert 'id="diff-note"' in html and "main is main itself" in html


@REVIEW
def test_history_page_is_kb_log(server: Server, kbdir: Path) -> None:
    html = get(server, "/o/H2").text
    assert '<a class="historylink" href="/log/H2">history</a>' in html
    html = get(server, "/log/H2").text
    r = invoke("log", "H2", "--json", cwd=kbdir)
    commits = [e["commit"] for e in r.json()["entries"]]
    assert len(commits) == 2
    for c in commits:
        assert f'href="/o/H2?rev={c}"' in html
    assert get(server, "/log/H99").status_code == 404


TRAIL = pytest.mark.skipif(not trail_available(), reason="kb.trail is not part of this kb")
NO_TRAIL = pytest.mark.skipif(trail_available(), reason="kb.trail is installed: the Trail page exists")


@NO_TRAIL
def test_without_kb_trail_the_trail_page_is_absent(server: Server) -> None:
    assert 'href="/trail' not in get(server, "/tree").text
    assert get(server, "/trail").status_code == 404
    assert get(server, "/trail.json").status_code == 404


@TRAIL
def test_trail_data_is_the_commits_graph(server: Server) -> None:
    assert 'href="/trail"' in get(server, "/tree").text
    html = get(server, "/trail?rev=feature").text
    assert 'data-src="/trail.json?rev=feature"' in html
    d = get(server, "/trail.json").json()
    titles = {n["title"]: n for n in d["nodes"]}
    assert TRAIL_HOSTILE in titles and "Make the prompt cache hit" in titles
    h1 = titles["Tool order changes the prefix"]
    assert h1["parent"] == titles["Prefix stability"]["id"]
    # Refs that name an object or a KB file link into the pages; others stay text.
    assert d["ref_urls"] == {"H1": "/o/H1", "tree.md:3": "/file/tree.md#L3"}
    assert [e["kind"] for e in d["edges"]] == ["contradicts"]
    assert d["frontier"]["avoid"][0]["title"] == "Sorting the tools did not help"
    assert d["stats"]["nodes"] == 9 and d["roots"] == [titles["Make the prompt cache hit"]["id"]]
    # Read from the commit: main has no graph yet.
    assert get(server, "/trail.json?rev=main").json()["nodes"] == []


def test_allowed_hosts_are_the_bound_names_with_the_port() -> None:
    from kb.web.guard import allowed_hosts

    assert allowed_hosts("127.0.0.1", 8765) == {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"}
    assert allowed_hosts("::1", 80) >= {"[::1]:80", "[::1]", "localhost"}
    wild = allowed_hosts("0.0.0.0", 9000, ["kb.lab.example"])
    assert {f"{socket.gethostname().lower()}:9000", "kb.lab.example:9000", "0.0.0.0:9000"} <= wild
    assert "evil.example:9000" not in wild


def test_loopback_detection_and_safe_paths() -> None:
    from kb.web.server import is_loopback, url_for
    from kb.web.source import safe_rel

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.2", "example.com"))
    assert url_for("::1", 8) == "http://[::1]:8/" and url_for("127.0.0.1", 8) == "http://127.0.0.1:8/"
    assert safe_rel("Problems/q1.md") == "Problems/q1.md"
    for bad in ("", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a\\b", "a\x00b", "a/"):
        assert safe_rel(bad) is None, bad


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback (::1)")
def test_serves_on_ipv6_loopback(kbdir: Path) -> None:
    with serve(kbdir, "--host", "::1") as s:
        assert s.url.startswith("http://[::1]:")
        status, body = s.raw_get("/tree")
        assert status == 200 and 'id="h-H1"' in body
        assert s.raw_get("/tree", host=f"evil.example:{s.port}")[0] == 421


def test_another_host_warns_what_it_exposes(kbdir: Path) -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the warning comes first,
    # then binding fails cleanly; nothing is ever exposed by the test.
    proc = subprocess.run([kb_script(), "serve", "--host", "192.0.2.1", "--port", "0"], cwd=kbdir,
                          env=source_env(), capture_output=True, text=True, timeout=60)
    assert "not loopback: anyone who can reach this address can read" in proc.stderr
    assert proc.returncode == 2 and "cannot listen on 192.0.2.1:0" in proc.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_stops_cleanly_on_ctrl_c_and_sigterm(kbdir: Path, sig: int) -> None:
    with serve(kbdir) as s:
        assert s.raw_get("/tree")[0] == 200
        s.proc.send_signal(sig)
        assert s.proc.wait(timeout=30) == 0
        assert s.proc.stderr is not None and b"aborted" not in s.proc.stderr.read()


def test_characters_that_reorder_text_are_shown_escaped(tmp_path: Path) -> None:
    """A hand-written `## H1: hand <U+202E> RTL override <script>z</script>` passed kb verify,
    and the web view put U+202E in the page as it was: the browser showed the rest of the
    line reversed ("hand <tpircs/>z<tpircs> edirrevo LTR"), while `kb ls` escapes it. Every
    page shows such characters escaped (`\\u202e`), as kb ls does."""
    from conftest import commit_all, git_init

    root = git_init(tmp_path / "kb")
    assert invoke("init", cwd=root).code == 0
    (root / "tree.md").write_text("# Tree\n\n## H1: hand \u202e RTL override <script>z</script>"
                                  " \u2067isolated\u2069\nStatus: 待验\nEvidence: (empty)\n",
                                  encoding="utf-8")
    commit_all(root, "a hand-written statement")
    with serve(root) as s:
        for path in ("/tree", "/o/H1", "/board", "/file/tree.md"):
            html = get(s, path).text
            assert "\u202e" not in html and "\u2067" not in html, path
        html = get(s, "/o/H1").text
        assert "hand \\u202e RTL override &lt;script&gt;" in html and "\\u2067isolated" in html
