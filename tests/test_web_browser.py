"""``kb serve`` in a real browser (issue 16): Playwright driving the system's Chromium.

Playwright's own browser download is never used: the tests launch
``/usr/bin/chromium`` (``$KB_CHROMIUM`` to use another), headless, without
the sandbox. Without Chromium they are skipped with how to install it (and
only then). Each page's screenshot is saved as a test artifact in the
git-ignored ``test-artifacts/web/`` (the path is printed). Any console error fails a test: a Content-Security-
Policy violation shows up there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest
from playwright.sync_api import expect

from conftest import REPO_ROOT
from webkb import HOSTILE, NEW_H2, TRAIL_HOSTILE, Server, build_kb, serve, trail_available

CHROMIUM = os.environ.get("KB_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).is_file(),
    reason=f"Chromium not found at {CHROMIUM}: install it (Debian/Ubuntu: "
           "`apt-get update && apt-get install -y chromium`) or set KB_CHROMIUM to its path")


REVIEW = pytest.mark.skipif(not __import__("kb.web.review", fromlist=["available"]).available(),
                            reason="kb.review (kb diff) is not part of this kb: no Diff page")


@pytest.fixture(scope="module")
def kbdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_kb(tmp_path_factory.mktemp("webui") / "kb")


@pytest.fixture(scope="module")
def server(kbdir: Path) -> Iterator[Server]:
    with serve(kbdir) as s:
        yield s


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def shots() -> Path:
    """``test-artifacts/web/`` of the checkout (git-ignored; ``$KB_TEST_ARTIFACTS`` elsewhere)."""
    base = Path(os.environ.get("KB_TEST_ARTIFACTS") or REPO_ROOT / "test-artifacts")
    d = base / "web"
    d.mkdir(parents=True, exist_ok=True)
    print(f"\nkb serve screenshots: {d}")
    return d


class Page:
    """A browser page that records console errors and dialogs (neither may happen)."""

    def __init__(self, browser: object, server: Server) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
        self.server = server
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def dialog(d: object) -> None:
            self.dialogs.append(d.message)  # type: ignore[attr-defined]
            d.dismiss()  # type: ignore[attr-defined]

        self.page.on("dialog", dialog)

    def goto(self, path: str) -> object:
        return self.page.goto(self.server.url + path)


@pytest.fixture
def page(browser: object, server: Server) -> Iterator[Page]:
    p = Page(browser, server)
    yield p
    try:
        assert p.errors == [], p.errors
        assert p.dialogs == [], p.dialogs
    finally:
        p.page.close()


@pytest.mark.parametrize("path,name,expect", [
    ("/tree", "tree", "#tree"), ("/board", "board", "#depgraph"), ("/o/H1.1", "hypothesis", ".oid"),
    ("/o/E001", "experiment", ".oid"), ("/o/q2", "problem", ".oid"),
    ("/file/tree.md", "file", "pre.source"),
])
def test_each_page_renders(page: Page, shots: Path, path: str, name: str, expect: str) -> None:
    resp = page.goto(path)
    assert resp.status == 200  # type: ignore[attr-defined]
    assert page.page.locator(expect).first.is_visible()
    out = shots / f"{name}.png"
    page.page.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 5000


def test_click_tree_to_experiment_to_its_file_line(page: Page) -> None:
    page.goto("/tree")
    page.page.locator('[id="h-H1.2"] .evidence a', has_text="E003").click()
    page.page.wait_for_url("**/o/E003")
    assert page.page.locator("h1 .oid").inner_text() == "E003"
    assert page.page.locator(".conclusion").inner_text() == "推翻"
    page.page.locator("a.fileline").click()
    page.page.wait_for_url("**/file/experiments/E003.md#L1")
    assert page.page.locator("#L1").is_visible()
    page.page.go_back()
    page.page.locator("dd a", has_text="H1.2").first.click()
    page.page.wait_for_url("**/o/H1.2")


@REVIEW
def test_click_tree_to_experiment_to_diff_to_an_object(page: Page, shots: Path) -> None:
    page.goto("/tree")
    page.page.locator('[id="h-H1.1"] .evidence a', has_text="E002").first.click()
    page.page.wait_for_url("**/o/E002")
    page.page.locator("header nav a", has_text="Diff").click()
    page.page.wait_for_url("**/diff")
    assert "Research diff" in page.page.locator("#diff h2").inner_text()
    page.page.screenshot(path=str(shots / "diff.png"), full_page=True)
    page.page.locator("#diff a", has_text="H3").first.click()
    page.page.wait_for_url("**/o/H3")
    assert page.page.locator(".title").inner_text() == HOSTILE


def test_tree_search_jumps_to_matches_and_hides_the_rest(page: Page, shots: Path) -> None:
    page.goto("/tree")
    box = page.page.locator("#tree-search")
    box.fill("xdist")
    box.press("Enter")
    h2 = page.page.locator('[id="h-H2"]')
    hits = page.page.locator("#tree-hits")
    expect(hits).to_have_text("1 / 1 matches")
    assert "current" in (h2.get_attribute("class") or "")
    assert h2.is_visible() and NEW_H2 in h2.inner_text()
    assert not page.page.locator('[id="h-H1.2"]').is_visible()
    page.page.screenshot(path=str(shots / "tree-search.png"))
    box.fill("H1.1")
    expect(hits).to_have_text("1 / 2 matches")
    box.press("Enter")
    expect(hits).to_have_text("2 / 2 matches")
    assert "current" in (page.page.locator('[id="h-H1.1.1"]').get_attribute("class") or "")
    box.fill("")
    expect(hits).to_have_text("")
    assert page.page.locator('[id="h-H1.2"]').is_visible()


def test_tree_cards_fold(page: Page) -> None:
    page.goto("/tree")
    child = page.page.locator('[id="h-H1.2"]')
    assert child.is_visible()
    page.page.locator('[id="h-H1"] > details > summary .stmt').click()
    assert not child.is_visible()
    page.page.locator("#tree-expand").click()
    assert child.is_visible()


def test_hostile_title_renders_as_text(page: Page, shots: Path) -> None:
    for path in ("/tree", "/o/H3"):
        page.goto(path)
        card = page.page.locator('[id="h-H3"] .stmt') if path == "/tree" else page.page.locator(".title")
        assert card.inner_text() == HOSTILE
        assert card.locator("script, img, a").count() == 0
    page.page.screenshot(path=str(shots / "hostile.png"))
    assert page.page.evaluate("document.querySelectorAll('script:not([src])').length") == 0


def test_follow_a_ref_link_on_the_board(page: Page) -> None:
    page.goto("/board")
    row = page.page.locator("tr", has=page.page.locator("a", has_text="q2")).first
    row.locator("a", has_text="p1").click()
    page.page.wait_for_url("**/o/p1")
    # The proposition and its Verified card share the ID: two declarations, no warning.
    assert page.page.locator("h1 .oid").all_inner_texts() == ["p1", "p1"]
    assert page.page.locator("h1 .kind").all_text_contents() == ["proposition", "verified"]
    assert page.page.locator(".warn").count() == 0
    page.goto("/board")
    page.page.locator("#depgraph a").first.click()
    page.page.wait_for_url("**/o/*")


def test_dot_dot_paths_are_refused(page: Page) -> None:
    # A browser resolves `..` before sending (test_web.py sends it raw); what reaches
    # the server from these is still refused.
    for path in ("/file/%2e%2e/%2e%2e/etc/passwd", "/file/%2E%2E/kb.toml", "/file/.git/config",
                 "/file/..%2Fkb.toml"):
        resp = page.goto(path)
        assert resp.status == 404, path  # type: ignore[attr-defined]
        assert "[kb]" not in page.page.content() and "root:" not in page.page.content()
    page.errors.clear()  # the 404 responses are logged as console errors by design


def test_foreign_host_is_refused(browser: object, server: Server) -> None:
    ctx = browser.new_context(extra_http_headers={"Host": "evil.example"})  # type: ignore[attr-defined]
    try:
        resp = ctx.request.get(server.url + "/tree")
        assert resp.status == 421 and "not served here" in resp.text()
    finally:
        ctx.close()
    status, _ = server.raw_get("/tree", host=f"rebind.evil.example:{server.port}")
    assert status == 421


TRAIL = pytest.mark.skipif(not trail_available(), reason="kb.trail is not part of this kb: no Trail page")


def open_trail(page: Page) -> object:
    page.goto("/trail")
    expect(page.page.locator("#trail-stats")).to_contain_text("9 nodes")
    return page.page


def card(p: object, title: str) -> object:
    return p.locator(".tcard", has=p.locator(".ttitle", has_text=title))  # type: ignore[attr-defined]


@TRAIL
def test_trail_renders_the_card_tree(page: Page, shots: Path) -> None:
    p = open_trail(page)
    assert p.locator(".tcard").count() == 9
    assert card(p, TRAIL_HOSTILE).locator(".ttitle").inner_text() == TRAIL_HOSTILE
    assert p.locator(".tcard script").count() == 0
    # The rounds outline and chips locate a round.
    p.locator("#trail-rounds .chip", has_text="Round 1").click()
    assert "sel" in (card(p, "Round 1").get_attribute("class") or "")
    p.screenshot(path=str(shots / "trail.png"))


@TRAIL
def test_trail_search_jumps_to_matches(page: Page) -> None:
    p = open_trail(page)
    box = p.locator("#trail-search")
    box.fill("prefix")
    box.press("Enter")
    hits = p.locator("#trail-hits")
    expect(hits).to_contain_text("1 / ")
    first = p.locator(".tcard.sel").get_attribute("data-id")
    box.press("Enter")
    expect(hits).to_contain_text("2 / ")
    assert p.locator(".tcard.sel").get_attribute("data-id") != first
    assert p.locator(".tcard.match").count() >= 2
    expect(p.locator("#trail-detail h3")).to_have_count(1)


@TRAIL
def test_trail_kind_legend_filters(page: Page, shots: Path) -> None:
    p = open_trail(page)
    p.locator(".legend-chip", has_text="dead_end").click()
    # The dead end and its ancestors stay (the ancestors dimmed); the rest goes.
    assert p.locator(".tcard:not(.dim)").count() == 1
    assert p.locator(".tcard:not(.dim) .badge").inner_text().lower() == "dead_end"
    assert p.locator(".tcard").count() == 3  # goal, topic, dead end
    p.screenshot(path=str(shots / "trail-filter.png"))
    p.locator(".legend-chip", has_text="dead_end").click()
    assert p.locator(".tcard.dim").count() == 0 and p.locator(".tcard").count() == 9


@TRAIL
def test_trail_trunk_toggle(page: Page) -> None:
    p = open_trail(page)
    p.locator("#mode-trunk").click()
    kinds = {b.lower() for b in p.locator(".tcard .badge").all_inner_texts()}
    assert kinds == {"goal", "topic", "hypothesis", "dead_end", "conclusion"}
    p.locator("#mode-research").click()
    assert p.locator(".tcard").count() == 9


@TRAIL
def test_trail_detail_pane_follows_a_ref_link(page: Page) -> None:
    p = open_trail(page)
    card(p, "Tool order changes the prefix").click()
    detail = p.locator("#trail-detail")
    expect(detail.locator("h3")).to_have_text("Tool order changes the prefix")
    text = detail.text_content() or ""
    assert "contradicts → " in text and "Path to root" in text and "Prefix stability" in text
    assert detail.locator("a.ref").count() == 2  # nowhere.md and the javascript: ref stay text
    assert "javascript:alert(1)" in (detail.text_content() or "")
    assert p.locator("#trail-detail a[href^=\"javascript\"]").count() == 0
    detail.locator("a.ref", has_text="H1").click()
    p.wait_for_url("**/o/H1")


@TRAIL
def test_trail_polling_keeps_zoom_selection_and_folds(page: Page, kbdir: Path) -> None:
    from kb.trail import ops

    from conftest import git

    p = open_trail(page)
    card(p, "Round 1").click()
    card(p, TRAIL_HOSTILE).locator(".tfold").click()  # fold the hostile hypothesis
    assert card(p, "Prefix differs").count() == 0
    p.locator("#z-in").click()
    zoom = p.locator("#z-pct").inner_text()
    before = p.locator("#trail").get_attribute("data-commit")
    # The graph grows: a new recording is committed on the served branch.
    goal = card(p, "Make the prompt cache hit").get_attribute("data-id")
    ops.add(kbdir, kind="question", title="Does the TTL expire early?", parent=goal)
    after = git(kbdir, "rev-parse", "HEAD")
    assert after != before
    expect(p.locator("#trail")).to_have_attribute("data-commit", after, timeout=20000)
    expect(card(p, "Does the TTL expire early?")).to_have_count(1)
    assert p.locator("#z-pct").inner_text() == zoom
    assert "sel" in (card(p, "Round 1").get_attribute("class") or "")
    assert card(p, "Prefix differs").count() == 0  # still folded


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A committed tree of 20 × 4 × 4 hypotheses (420), three levels deep."""
    from conftest import commit_all, git_init

    root = tmp_path_factory.mktemp("bigtree") / "kb"
    root.mkdir()
    out = ["# Hypothesis Tree", ""]
    for i in range(1, 21):
        out += [f"## H{i}: top claim {i}", "Status: 进行中", ""]
        for j in range(1, 5):
            out += [f"### H{i}.{j}: middle claim {i}-{j}", "Status: 待验", f"Parent: H{i}", ""]
            for k in range(1, 5):
                out += [f"#### H{i}.{j}.{k}: leaf claim zz{i}x{j}x{k}", "Status: 被支持",
                        f"Parent: H{i}.{j}", ""]
    (root / "tree.md").write_text("\n".join(out), encoding="utf-8")
    (root / "kb.toml").write_text("[kb]\n", encoding="utf-8")
    git_init(root)
    commit_all(root, "a big tree")
    with serve(root) as s:
        yield s


def test_a_big_tree_opens_folded_and_search_reveals_deep_cards(browser: object, big_tree: Server,
                                                                shots: Path) -> None:
    page = Page(browser, big_tree)
    try:
        page.goto("/tree")
        p = page.page
        expect(p.locator("#count-active")).to_have_text("100")  # 进行中 + 待验
        expect(p.locator("#count-closed")).to_have_text("320")
        assert p.locator('[id="h-H7.3"]').is_visible()  # the upper levels are unfolded
        assert not p.locator('[id="h-H7.3.2"]').is_visible()  # deeper ones start folded
        box = p.locator("#tree-search")
        box.fill("zz7x3x2")
        box.press("Enter")
        expect(p.locator("#tree-hits")).to_have_text("1 / 1 matches")
        assert p.locator('[id="h-H7.3.2"]').is_visible()
        assert not p.locator('[id="h-H8"]').is_visible()
        p.screenshot(path=str(shots / "tree-big-search.png"))
        box.fill("")
        expect(p.locator("#tree-hits")).to_have_text("")
        assert not p.locator('[id="h-H7.3.2"]').is_visible()  # folds restored
        p.locator("#tree-expand").click()
        assert p.locator('[id="h-H20.4.4"]').is_visible()
        assert page.errors == [] and page.dialogs == []
    finally:
        page.page.close()
