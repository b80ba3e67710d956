"""``kb lit``: the literature client (search, snippet, cite, paper, keys)."""

from __future__ import annotations

from typing import Any, Callable

import click

from kb_cli.output import emit_json, err, json_option


def _where(f: Callable[..., Any]) -> Callable[..., Any]:
    f = click.option("--cache-dir", default=None, type=click.Path(file_okay=False),
                     help="Cache folder (default: the gen sandbox's literature/.cache, "
                          "else .kb/lit-cache).")(f)
    return click.option("--sandbox", default=None, type=click.Path(file_okay=False),
                        help="Record the requests in this gen run's current round.")(f)


def _run(as_json: bool, call: Callable[[Any], Any], show: Callable[[Any], None],
         cache_dir: str | None, sandbox: str | None) -> int:
    """Open the client, run ``call``; print JSON or ``show``; a LitError -> its exit code with the
    fallback. Human output also hears each retry and a long wait on stderr, and the notes."""
    from kb.lit.context import open_client
    from kb.lit.errors import LitError

    on_note = None if as_json else (lambda text: err(f"kb: {text}"))
    try:
        # a bad KB_LIT_BACKOFF / KB_LIT_TIMEOUT / KB_LIT_MAX_BYTES is a LitError too
        client, ctx = open_client(cache_dir, sandbox, on_note=on_note)
        data = call(client)
    except LitError as exc:
        err(f"kb: {exc}\nkb: fallback: {exc.fallback}")
        if as_json:
            emit_json(exc.to_json())
        return exc.exit_code
    if as_json:
        emit_json({"result": data, "requests": client.requests, **ctx, "notes": client.notes})
    else:
        show(data)
        for note in client.notes:
            err(f"kb: note: {note}")
        err(f"({client.requests} request{'s' if client.requests != 1 else ''}; cache {ctx['cache_dir']}"
            + (f"; recorded in round {ctx['round']}" if ctx["round"] else "") + ")")
    return 0


def _paper_line(p: dict[str, Any]) -> str:
    who = ", ".join(p["authors"][:3]) + (" et al." if len(p["authors"]) > 3 else "")
    ids = " ".join(x for x in (p.get("doi") and f"doi:{p['doi']}",
                               p.get("arxiv_id") and f"arXiv:{p['arxiv_id']}") if x)
    return (f"[{p['source']}:{p['paper_id']}] {p['title']} ({p.get('year') or '?'}; {who or '?'}; "
            f"{p.get('citations') if p.get('citations') is not None else '?'} citations) {ids}").rstrip()


def _papers(papers: list[dict[str, Any]]) -> None:
    for p in papers:
        click.echo(_paper_line(p))


@click.group("lit")
def command() -> None:
    """Literature search: Semantic Scholar, OpenAlex, arXiv (cached, throttled).

    Each request waits KB_LIT_TIMEOUT seconds in all (default 60, retries included);
    an answer above KB_LIT_MAX_BYTES (default 8 MiB) is refused and not cached.
    """


@command.command("search")
@click.argument("query")
@click.option("--limit", default=12, show_default=True, type=int)
@click.option("--year", default=None, help="2019, 2019-2023, 2019- or -2023.")
@click.option("--min-citations", default=0, show_default=True, type=int)
@click.option("--open-access", is_flag=True, help="Only papers with an open-access PDF.")
@click.option("--source", type=click.Choice(["s2", "openalex", "both"]), default="both",
              show_default=True)
@click.option("--sort", type=click.Choice(["relevance", "citations", "date"]), default="relevance",
              show_default=True, help="OpenAlex's order.")
@_where
@json_option
def search(query: str, limit: int, year: str | None, min_citations: int, open_access: bool,
           source: str, sort: str, as_json: bool, cache_dir: str | None, sandbox: str | None) -> int:
    """Search papers (S2 first, then OpenAlex; de-duplicated by DOI or title)."""
    return _run(as_json, lambda c: c.search(query, limit, year, min_citations, open_access, source, sort),
                lambda d: _papers(d["papers"]), cache_dir, sandbox)


@command.command("snippet")
@click.argument("query")
@click.option("--limit", default=10, show_default=True, type=int)
@_where
@json_option
def snippet(query: str, limit: int, as_json: bool, cache_dir: str | None, sandbox: str | None) -> int:
    """Search passages of papers (S2 snippet search): verbatim text to quote."""
    def show(items: list[dict[str, Any]]) -> None:
        for s in items:
            click.echo(f"[{s['paper_id']}] {s['title']} ({s.get('kind') or 'text'})\n    {s['text']}")

    return _run(as_json, lambda c: c.snippet(query, limit), show, cache_dir, sandbox)


@command.command("cite")
@click.argument("paper_id")
@click.option("--direction", type=click.Choice(["references", "citations", "recommend"]),
              default="references", show_default=True)
@click.option("--limit", default=15, show_default=True, type=int)
@click.option("--influential", is_flag=True, help="Only influential references/citations.")
@_where
@json_option
def cite(paper_id: str, direction: str, limit: int, influential: bool, as_json: bool,
         cache_dir: str | None, sandbox: str | None) -> int:
    """References, citations or recommendations of an S2 paper (id, DOI:…, ARXIV:…)."""
    return _run(as_json, lambda c: c.cite(paper_id, direction, limit, influential), _papers,
                cache_dir, sandbox)


@command.command("paper")
@click.argument("arxiv_id")
@_where
@json_option
def paper(arxiv_id: str, as_json: bool, cache_dir: str | None, sandbox: str | None) -> int:
    """arXiv metadata (title, abstract, authors) of one arXiv id."""
    def show(p: dict[str, Any]) -> None:
        click.echo(_paper_line(p))
        click.echo(p.get("abstract") or "")

    return _run(as_json, lambda c: c.paper(arxiv_id), show, cache_dir, sandbox)


@command.command("keys")
@click.option("--init", "init", is_flag=True, help="Add the missing slots to keys.env (never overwrites).")
@json_option
def keys(init: bool, as_json: bool) -> int:
    """Which API keys are set (never their values); --init writes keys.env's slots."""
    from kb.lit.keys import init_keys, key_presence, keys_path

    data: dict[str, Any] = {"path": str(keys_path()), "keys": {}}
    if init:
        data.update(init_keys())
    data["keys"] = key_presence()
    if as_json:
        emit_json(data)
        return 0
    for name, present in data["keys"].items():
        click.echo(f"{name}: {'set' if present else 'not set'}")
    if init:
        err(f"{data['path']}: added {', '.join(data['added']) or 'nothing'} (fill the values in "
            "yourself; never paste keys into a chat)")
    return 0
