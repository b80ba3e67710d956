"""The Diff and History pages: ``kb diff --format markdown`` and ``kb log ID`` in the browser.

Both come from :mod:`kb.review` (the review issue's library); when kb is
installed without it, :func:`available` is False and the pages do not exist
(no route, no link). The Diff page is exactly the Markdown ``kb diff``
prints — :func:`kb.review.render.render` of :func:`kb.review.diff.research_diff`
— turned into HTML by markdown-it-py with raw HTML disabled (the renderer
already escapes research text; markdown-it refuses ``javascript:`` links;
a Mermaid block stays an inert code block). Links into the pages are added
afterwards: ``file:line`` through ``link_base`` (``/at/<tip>/file/…``) and
every ``<code>ID</code>`` naming an object of the tip commit.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from kb import git
from kb.repo import KnowledgeBase

__all__ = ["available", "default_target", "diff_page", "log_page"]


def available() -> bool:
    """True when :mod:`kb.review` (``kb diff`` / ``kb log``) is installed with kb."""
    try:
        import kb.review.diff  # noqa: F401
        import kb.review.log  # noqa: F401
        import kb.review.render  # noqa: F401
    except ImportError:
        return False
    return True


def default_target(k: KnowledgeBase) -> str | None:
    """The branch a branch is reviewed against: ``origin/HEAD``'s branch, else ``main``,
    else ``master`` (the first that exists), else None."""
    proc = git.run(["symbolic-ref", "-q", "refs/remotes/origin/HEAD"], k.top, check=False)
    ref = proc.stdout.decode().strip()
    candidates = ([ref.removeprefix("refs/remotes/")] if ref else []) + ["main", "master"]
    for c in candidates:
        if git.run(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{c}^{{commit}}"], k.top,
                   check=False).returncode == 0:
            return c
    return None


_CODE = re.compile(r"<code>([^<>&\s]{1,80})</code>")


def diff_page(k: KnowledgeBase, a: str, b: str, tip: str, known: Callable[[str], bool],
              obj_url: Callable[[str], str]) -> dict[str, Any]:
    """``{"markdown", "html", "data"}`` of ``kb diff a..b --format markdown``.

    ``tip`` is b's commit id (file links name it), ``known(id)`` says whether
    an ID is an object at the tip, ``obj_url(id)`` is its page. Raises
    UsageError for a bad range (as ``kb diff``).
    """
    from markdown_it import MarkdownIt
    from markupsafe import escape

    from kb.review.diff import research_diff
    from kb.review.render import render

    data = research_diff(k, "range", a, b, findings=True)
    md = render(data, "markdown", link_base=f"/at/{tip}/file")
    html = MarkdownIt("commonmark", {"html": False}).enable("table").render(md)

    def link(m: re.Match[str]) -> str:
        oid = m.group(1)
        # markdown-it escaped the text; an ID is plain (no &, <, > or spaces).
        if not known(oid):
            return m.group(0)
        return f'<a href="{escape(obj_url(oid))}"><code>{oid}</code></a>'

    return {"markdown": md, "html": _CODE.sub(link, html), "data": data}


def log_page(k: KnowledgeBase, obj_id: str, commit: str) -> dict[str, Any]:
    """``kb log ID --rev COMMIT --json``'s dict (:func:`kb.review.log.object_log`)."""
    from kb.review.log import object_log

    return object_log(k, obj_id, commit)
