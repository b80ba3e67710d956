"""MCP tools of the generation loop and the literature client (kb.gen, kb.lit): the
functions of :data:`kb.gen.api.TOOLS`, described by their docstrings. Literature
tools ask outside services (``openWorldHint``)."""

from kb.mcp.registry import Registry

REQUIRES = "kb.gen"

#: Tools that only read (the rest write the run's sandbox; gen_adopt commits tree.md).
READS = {"gen_status", "gen_brief", "gen_schema", "lit_search", "lit_snippet", "lit_cite",
         "lit_paper", "lit_keys"}


def register(reg: Registry) -> None:
    from kb.gen.api import TOOLS

    for name, fn in TOOLS.items():
        desc = " ".join((fn.__doc__ or name).split())
        outside = name.startswith("lit_") and name != "lit_keys"
        if name in READS:
            reg.read(name, fn, desc, open_world=outside, takes_kb=False)
        else:
            reg.write(name, fn, desc, takes_kb=False)
