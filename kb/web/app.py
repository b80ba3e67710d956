"""``kb serve``'s application: a read-only Starlette app over one KB (issue 16).

Routes (every one ``GET``/``HEAD`` only; ``?rev=`` picks the commit, default
the server's ``--rev``, itself default ``HEAD``):

- ``/`` → ``/tree``; ``/tree`` the hypothesis tree; ``/board`` the Vibe Math board;
- ``/o/<ID>`` one object (an experiment's page is its object page; an ID holding a
  slash, a direction's ``q2/d1``, is linked as ``/o/q2%2Fd1``);
- ``/file/<KB-relative path>`` a file of the KB at the commit, with line anchors;
- ``/static/<name>`` the page's CSS and JavaScript (a fixed list);
- with :mod:`kb.trail`: ``/trail`` and ``/trail.json``; with :mod:`kb.review`:
  ``/diff``, ``/log/<ID>`` and ``/at/<commit>/file/<path>`` (see docs/DECISIONS.md).

Safety (DESIGN.md §8 "Web view"): :class:`kb.web.guard.Guard` refuses a request whose
``Host`` header is not one of the bound addresses (DNS rebinding) and every
method but GET/HEAD; responses carry a strict Content-Security-Policy (no
inline script, nothing from another origin); templates autoescape; a path
with an empty, ``.`` or ``..`` segment is refused (:func:`kb.web.source.safe_rel`).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote, urlencode

from kb.errors import KbError, RefusedError, UsageError
from kb.numbers import small_int
from kb.repo import KnowledgeBase
from kb.web.guard import Guard
from kb.web.source import Source, safe_rel

__all__ = ["create_app", "STATIC"]

HERE = Path(__file__).parent
STATIC = {"kb.css": "text/css; charset=utf-8", "kb.js": "text/javascript; charset=utf-8",
          "trail.js": "text/javascript; charset=utf-8"}


class _Cache:
    """A small LRU of page data by (page, commit): a commit never changes."""

    def __init__(self, size: int = 16) -> None:
        self.size, self.lock = size, threading.Lock()
        self.data: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any, make: Callable[[], Any]) -> Any:
        with self.lock:
            if key in self.data:
                self.data.move_to_end(key)
                return self.data[key]
        value = make()
        with self.lock:
            self.data[key] = value
            while len(self.data) > self.size:
                self.data.popitem(last=False)
        return value


#: The characters that reorder the text around them (bidirectional overrides, embeddings,
#: isolates and marks), as `kb ls` shows them too (kb_cli.output): escaped, never acting.
_BIDI = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _shown(value: Any) -> Any:
    """Jinja's ``finalize`` for every ``{{ … }}``: a string with a character that reorders
    the text shown as ``\\u202e`` (a hand-written `## H3: a <U+202E> b` made the browser
    show the rest of the line, and of the page's line, reversed: the web view and `kb ls`
    disagreed). Then autoescape escapes it as any text; HTML kb built (Markup) stays
    markup, its escapes being plain text."""
    if isinstance(value, str) and not value.isascii() and _BIDI.search(value):
        from markupsafe import Markup

        shown = _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", value)
        return Markup(shown) if isinstance(value, Markup) else shown
    return value


def create_app(k: KnowledgeBase, *, rev: str = "HEAD", hosts: set[str] | None = None,
               warm: bool = False) -> Any:
    """The ASGI app serving KB ``k`` (wrapped in :class:`Guard` when ``hosts`` is given).

    ``warm`` builds the Tree and Board of ``rev`` (data and HTML, and the
    Trail's data) in a background thread at once, so that the first visit
    finds them ready (on the 7.5k-file corpus they cost a few hundred ms of
    CPU each, once per commit). Raises UsageError when ``rev`` names no commit.
    """
    from jinja2 import Environment, FileSystemLoader, select_autoescape
    from markupsafe import Markup
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    from kb.web import pages, review, trail as trail_mod

    features = {"diff": review.available(), "trail": trail_mod.available()}
    src = Source(k, rev)
    src.resolve(None)  # fail at startup, not on the first page
    cache = _Cache()
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True, finalize=_shown)
    env.globals["flatten_forest"] = pages.flatten_forest

    def ctx(request: Request | None, view: Any, **kw: Any) -> dict[str, Any]:
        asked = request.query_params.get("rev") if request is not None else None
        q = ("?" + urlencode({"rev": asked})) if asked else ""

        def link(path: str, **params: Any) -> str:
            p = {**({"rev": asked} if asked else {}), **{a: b for a, b in params.items() if b}}
            return path + ("?" + urlencode(p) if p else "")

        # An ID is quoted whole (a direction's ``q2/d1`` as ``q2%2Fd1``): the routes take
        # the rest of the path as the ID (see ``routes``), so it lands either way.
        return {"rev": view.rev, "commit": view.commit, "q": q, "link": link, "asked": asked,
                "obj": lambda i, **params: link("/o/" + quote(str(i), safe=""), **params),
                "history": lambda i: link("/log/" + quote(str(i), safe="")),
                "file": lambda p, line=None: link("/file/" + quote(p, safe="/"))
                + (f"#L{int(line)}" if line else ""),
                "kb_name": k.root.name, "features": features, **kw}

    def page(name: str, status: int = 200, **data: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(name).render(**data), status_code=status)

    def error(request: Request, status: int, message: str) -> HTMLResponse:
        # a request refused (400: a ?rev= that names no commit, among others) is no view
        # of the revision it asked for: the footer names the server's own
        asked = request.query_params.get("rev") if status != 400 else None
        return page("error.html", status, message=message, link=lambda p, **_: p,
                    rev=asked or rev, commit="", q="",
                    kb_name=k.root.name, features=features, nav="")

    def guarded(fn: Callable[..., Response]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return src.call(request.query_params.get("rev"), lambda view: fn(request, view))
            except UsageError as exc:
                return error(request, 400, str(exc))
            except KbError as exc:  # git or the KB refused: a page, not a traceback
                return error(request, 400 if exc.exit_code == 2 else 404, str(exc))
        endpoint.__name__ = fn.__name__
        return endpoint

    @guarded
    def tree(request: Request, view: Any) -> Response:
        c = ctx(request, view, nav="tree")
        data, body = tree_parts(c, view)
        tree_lock = pages.locks_by_path(view).get(k.repo_path(k.config.paths["tree"]))
        return page("tree.html", **c, tree=data, tree_body=body, tree_lock=tree_lock)

    def tree_parts(c: dict[str, Any], view: Any) -> tuple[dict[str, Any], Any]:
        from kb.web.fragments import tree_html

        data = cache.get(("tree", view.commit), lambda: pages.tree_page(view))
        # The cards are the same for every request of this commit and ?rev= spelling.
        body = cache.get(("tree-html", view.commit, c["asked"]),
                         lambda: tree_html(data["events"], c["obj"]))
        return data, body

    @guarded
    def board(request: Request, view: Any) -> Response:
        return HTMLResponse(board_html(ctx(request, view, nav="board"), view))

    def board_html(c: dict[str, Any], view: Any) -> str:
        def render() -> str:
            data = cache.get(("board", view.commit), lambda: pages.board_page(view))
            return env.get_template("board.html").render(**c, board=data)

        return cache.get(("board-html", view.commit, c["asked"]), render)

    @guarded
    def obj(request: Request, view: Any) -> Response:
        oid = request.path_params["obj_id"]
        exps = cache.get(("exps", view.commit), lambda: pages.experiments_map(view))
        data = pages.object_page(view, oid, exps)
        if data is None:
            # An object in a file kb could not parse is missing too: say which files those are.
            missing = pages.missing_object(view, oid)
            return page("error.html", 404, **ctx(request, view, nav=""), message=missing["message"],
                        error_files=missing["error_files"])
        return page("object.html", **ctx(request, view, nav="", data=data))

    @guarded
    def file(request: Request, view: Any) -> Response:
        from kb.web.fragments import source_html

        rel = safe_rel(request.path_params["path"])
        text = view.read_text(rel) if rel else None
        if text is None:
            return error(request, 404, "no such file in the KB at this revision")
        c = ctx(request, view, nav="")
        # A file's page depends on the commit and the ?rev= spelling only (tree.md: megabytes).
        return HTMLResponse(cache.get(("file", rel, view.commit, c["asked"]), lambda: env.get_template(
            "file.html").render(**c, path=rel, source=source_html(text.splitlines()),
                                notes=pages.file_notes(view, rel))))

    def at_file(request: Request) -> Response:
        # `kb diff`'s Markdown links files as <link_base>/<path>#L<n>: the tip in the path.
        commit, path = request.path_params["commit"], request.path_params["path"]
        if safe_rel(path) is None or not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
            return error(request, 404, "no such file in the KB at this revision")
        return RedirectResponse("/file/" + quote(path, safe="/") + "?" + urlencode({"rev": commit}), 303)

    @guarded
    def diff(request: Request, view: Any) -> Response:
        from kb.web import review

        c = ctx(request, view, nav="diff")
        a = request.query_params.get("a") or review.default_target(k)
        b = view.rev
        if not a:
            return page("diff.html", **c, a="", b=b, diff=None,
                        note="No main or master branch to compare with: give ?a=REV.")
        base_rev, base = src.resolve(a)
        note = None
        if base == view.commit:
            note = f"{b} is {a} itself: pick another revision (?rev=) or base (?a=)."
        known = set(view.all_ids())
        data = cache.get(("diff", base, view.commit, c["asked"]), lambda: review.diff_page(
            k, base, view.commit, view.commit, known.__contains__, c["obj"]))
        return page("diff.html", **c, a=base_rev, b=b, diff=data, note=note,
                    html=Markup(data["html"]))

    @guarded
    def history(request: Request, view: Any) -> Response:
        from kb.web import review

        oid = request.path_params["obj_id"]
        try:
            data = review.log_page(k, oid, view.commit)
        except RefusedError as exc:
            return error(request, 404, str(exc))
        return page("log.html", **ctx(request, view, nav="", log=data))

    @guarded
    def trail(request: Request, view: Any) -> Response:
        c = ctx(request, view, nav="trail")
        return page("trail.html", **c, data_url=c["link"]("/trail.json"))

    @guarded
    def trail_json(request: Request, view: Any) -> Response:
        return JSONResponse(trail_payload(ctx(request, view, nav="trail"), view))

    def trail_payload(c: dict[str, Any], view: Any) -> dict[str, Any]:
        from kb.web import trail as tr

        def build() -> dict[str, Any]:
            ids = set(view.all_ids())

            def ref_url(ref: str) -> str | None:
                if ref in ids:
                    return c["obj"](ref)
                path, _, line = ref.partition(":")
                if safe_rel(path) and path in view.snap.files:
                    return c["file"](path, small_int(line) if line.isdecimal() else None)
                return None

            return tr.trail_data(view, tr.graph_at(view), ref_url)

        return cache.get(("trail", view.commit, c["asked"]), build)

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found\n", 404, media_type="text/plain")
        return Response((HERE / "static" / name).read_bytes(), media_type=STATIC[name])

    def favicon(request: Request) -> Response:
        return Response(b"", 204)

    def home(request: Request) -> Response:
        asked = request.query_params.get("rev")
        return RedirectResponse("/tree" + ("?" + urlencode({"rev": asked}) if asked else ""), 303)

    def not_found(request: Request, exc: Exception) -> Response:
        return error(request, 404, "no such page")

    # An ID route takes the rest of the path (``:path``): the server decodes %2F before
    # routing, so a direction's ``/o/q2%2Fd1`` arrives as ``/o/q2/d1``, which a one-segment
    # ``{obj_id}`` never matches. The ID is only looked up in the index, never opened as
    # a file, so ``/o/..%2Fkb.toml`` is an unknown ID (404), as before.
    routes = [Route("/", home), Route("/tree", tree), Route("/board", board),
              Route("/o/{obj_id:path}", obj), Route("/file/{path:path}", file),
              Route("/static/{name}", static), Route("/favicon.ico", favicon)]
    if features["trail"]:  # kb.trail installed: the Trail page exists
        routes += [Route("/trail", trail), Route("/trail.json", trail_json)]
    if features["diff"]:  # kb.review installed: the Diff and History pages exist
        routes += [Route("/diff", diff), Route("/log/{obj_id:path}", history),
                   Route("/at/{commit}/file/{path:path}", at_file)]
    def prepare() -> None:
        try:
            def build(view: Any) -> None:
                tree_parts(ctx(None, view, nav="tree"), view)
                board_html(ctx(None, view, nav="board"), view)
                cache.get(("exps", view.commit), lambda: pages.experiments_map(view))
                if features["trail"]:
                    trail_payload(ctx(None, view, nav="trail"), view)

            src.call(None, build)
        except Exception:  # a warm-up only: the page itself reports any problem
            return

    if warm:
        threading.Thread(target=prepare, name="kb-serve-warm", daemon=True).start()
    app = Starlette(routes=routes, exception_handlers={404: not_found})
    return Guard(app, hosts) if hosts is not None else app


