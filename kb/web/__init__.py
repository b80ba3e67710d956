"""``kb serve``: a read-only local web view of the KB (issue 16).

:mod:`kb.web.source` reads one commit through the index, :mod:`kb.web.pages`
turns it into page data with the same library calls as the ``--json``
commands, :mod:`kb.web.app` is the Starlette application (Jinja2 templates,
one stylesheet, one script, no build step) and :mod:`kb.web.server` binds
it to a loopback socket and runs it with uvicorn.
"""
