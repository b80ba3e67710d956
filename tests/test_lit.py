"""The literature client against a local stand-in server (tests/litserver.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke, source_env
from litserver import LitServer

FAST = {"s2": 0.01, "search": 0.01, "default": 0.01}


@pytest.fixture
def lit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    with LitServer() as srv:
        for k, v in srv.env().items():
            monkeypatch.setenv(k, v)
        monkeypatch.setenv("KB_LIT_BACKOFF", "0.01")
        for k in ("S2_API_KEY", "OPENALEX_EMAIL", "KB_GEN_SANDBOX"):
            monkeypatch.delenv(k, raising=False)
        monkeypatch.chdir(tmp_path)
        yield srv


def client(tmp_path: Path, **kw):
    from kb.lit import LitClient

    return LitClient(tmp_path / "cache", intervals=FAST, keys_root=tmp_path, **kw)


def test_search_both_sources_dedupes_by_doi_and_keeps_s2_first(lit, tmp_path):
    c = client(tmp_path)
    res = c.search("spacing motor skills", limit=12, source="both")
    titles = [p["title"] for p in res["papers"]]
    # OpenAlex's W100 has the DOI of the first S2 paper (in upper case): dropped, S2's kept.
    assert titles == ["Spacing Effects in Motor Skill Consolidation",
                      "Sleep-Dependent Memory Consolidation: A Review",
                      "Distributed Practice and Declarative Learning in Classrooms",
                      "Interleaved Practice Across the Lifespan"]
    assert res["papers"][0]["source"] == "s2" and res["sources"] == {"s2": "ok", "openalex": "ok"}
    p3 = res["papers"][2]
    assert len(p3["authors"]) == 6 and p3["arxiv_id"] == "2101.00001" and p3["tldr"]
    assert res["papers"][3]["abstract"] == "Older adults benefit from interleaving"
    s2 = next(r for r in lit.requests if r["path"] == "/s2/paper/search")
    assert s2["query"]["limit"] == ["36"] and "authors.name" in s2["query"]["fields"][0]
    oa = next(r for r in lit.requests if r["path"] == "/openalex/works")
    assert oa["query"]["per-page"] == ["12"] and "mailto" not in oa["query"]
    assert "x-api-key" not in {k.lower() for k in s2["headers"]}


def test_dedupe_by_normalised_title_first_wins():
    from kb.lit.papers import dedupe, paper

    a = paper(source="s2", title="Spacing Effects: in Motor-Skill Consolidation!")
    b = paper(source="openalex", title="spacing effects in motor skill consolidation")
    c = paper(source="openalex", title="Another paper", doi="10.1/X")
    d = paper(source="s2", title="Another paper, retitled", doi="10.1/x")
    assert dedupe([a, b, c, d]) == [a, c]


def test_search_filters_citations_and_year(lit, tmp_path):
    res = client(tmp_path).search("q", limit=2, year="2018-2022", min_citations=10, source="s2")
    assert [p["citations"] for p in res["papers"]] == [142, 57]
    assert lit.requests[0]["query"]["year"] == ["2018-2022"]
    res = client(tmp_path).search("q2", limit=5, year="2019-", min_citations=10, source="openalex",
                                  sort="citations")
    q = lit.requests[-1]["query"]
    assert q["filter"] == ["from_publication_date:2019-01-01,cited_by_count:>9"]
    assert q["sort"] == ["cited_by_count:desc"]


def test_cache_hit_makes_no_request(lit, tmp_path):
    from kb.lit.http import build_url, cache_key

    served = []
    c = client(tmp_path, on_key=served.append)
    first = c.snippet("spacing procedural", limit=10)
    assert c.requests == 1 and len(lit.requests) == 1
    again = client(tmp_path, on_key=served.append)
    assert again.snippet("spacing procedural", limit=10) == first
    assert again.requests == 0 and len(lit.requests) == 1  # served from disk
    url = build_url(lit.base + "/s2", "/snippet/search", {"query": "spacing procedural", "limit": 10})
    key = cache_key("GET", url)
    assert served == [key, key]
    rec = json.loads((tmp_path / "cache" / f"{key}.json").read_text("utf-8"))
    assert rec["url"] == url and rec["body"]["data"][0]["snippet"]["snippetKind"] == "abstract"


def test_retry_after_429_then_success(lit, tmp_path):
    lit.script("/s2/snippet", [429, 503])
    c = client(tmp_path)
    out = c.snippet("sleep consolidation")
    assert [s["kind"] for s in out] == ["abstract", "Introduction", "body"]
    assert out[1]["paper_id"] == 1002
    assert lit.paths() == ["/s2/snippet/search"] * 3 and c.requests == 3


def test_500_storm_ends_in_the_fallback_error(lit, tmp_path):
    from kb.lit import LitUnavailable

    lit.script("/openalex", [500] * 10)
    c = client(tmp_path)
    with pytest.raises(LitUnavailable) as exc:
        c.search("anything", source="openalex")
    assert "failed 4 times" in str(exc.value) and "HTTP 500" in str(exc.value)
    assert "web" in exc.value.fallback
    assert len(lit.requests) == 4
    assert not list((tmp_path / "cache").glob("*.json"))  # a failure is never cached


def test_500_storm_cli_prints_error_and_fallback(lit, tmp_path):
    lit.script("/openalex", [502] * 10)
    r = invoke("lit", "search", "anything", "--source", "openalex", "--json",
               "--cache-dir", str(tmp_path / "c"))
    assert r.code == 1
    data = r.json()
    assert data["error"]["kind"] == "refused" and data["error"]["exit_code"] == 1
    assert "failed 4 times; last: HTTP 502" in data["error"]["message"]
    assert "web tools" in data["fallback"]
    assert "fallback" in r.stderr


def test_both_sources_one_failing_still_answers(lit, tmp_path):
    lit.script("/s2/paper/search", [500] * 4)
    res = client(tmp_path).search("x", source="both")
    assert res["sources"]["openalex"] == "ok" and "HTTP 500" in res["sources"]["s2"]
    assert [p["source"] for p in res["papers"]] == ["openalex", "openalex"]


def test_malformed_json_fails_at_once(lit, tmp_path):
    from kb.lit import LitResponseError

    lit.script("/s2/snippet", ["garbage"])
    with pytest.raises(LitResponseError, match="not JSON"):
        client(tmp_path).snippet("x")
    assert len(lit.requests) == 1


def test_404_is_not_retried(lit, tmp_path):
    from kb.lit import LitNotFound

    lit.script("/s2/paper/", [404])
    with pytest.raises(LitNotFound, match="HTTP 404"):
        client(tmp_path).cite("nope")
    assert len(lit.requests) == 1
    lit.script("/s2/paper/", [404])
    r = invoke("lit", "cite", "nope", "--json", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 1 and r.json()["error"]["kind"] == "not_found"


def test_network_error_maps_to_kb_error(monkeypatch, tmp_path):
    from kb.lit import LitClient, LitUnavailable

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("KB_LIT_S2_URL", f"http://127.0.0.1:{port}")
    c = LitClient(tmp_path / "c", intervals=FAST, backoff=0.001, timeout=2, keys_root=tmp_path)
    with pytest.raises(LitUnavailable, match="cannot connect") as exc:
        c.snippet("x")
    # nothing ever listened: the machine cannot reach the API (environment, exit 2)
    assert exc.value.kind == "environment" and exc.value.exit_code == 2
    assert c.requests == 4  # a refused connection is retried (the server may be restarting)


def test_unresolvable_host_fails_at_once_as_environment(monkeypatch, tmp_path):
    from kb.lit import LitClient, LitUnavailable

    # .invalid never resolves (RFC 6761), with or without a network
    monkeypatch.setenv("KB_LIT_S2_URL", "http://kb-lit-test.invalid")
    c = LitClient(tmp_path / "c", intervals=FAST, backoff=0.001, timeout=2, keys_root=tmp_path)
    with pytest.raises(LitUnavailable, match="no connection to the server") as exc:
        c.snippet("x")
    assert exc.value.kind == "environment" and c.requests == 1
    r = invoke("lit", "snippet", "x", "--json", "--cache-dir", str(tmp_path / "c2"))
    assert r.code == 2 and r.json()["error"]["kind"] == "environment"
    assert "web tools" in r.json()["fallback"]


def test_cite_references_citations_recommend(lit, tmp_path):
    c = client(tmp_path)
    refs = c.cite("a1b2", "references", limit=15)
    assert [p["title"] for p in refs] == ["The Spacing Effect: A Meta-Analysis", "Massed Practice Revisited"]
    assert refs[0]["influential"] is True and refs[0]["authors"] == ["N. Cepeda"]
    assert [p["title"] for p in c.cite("a1b2", "citations", influential_only=True)] == [
        "The Spacing Effect: A Meta-Analysis"]
    rec = c.cite("a1b2", "recommend", limit=5)
    assert rec[0]["doi"] == "10.1000/neuron.2018.5"
    assert lit.paths() == ["/s2/paper/a1b2/references", "/s2/paper/a1b2/citations",
                           "/rec/papers/forpaper/a1b2"]
    assert "tldr" not in lit.requests[0]["query"]["fields"][0]
    assert "isInfluential" in lit.requests[0]["query"]["fields"][0]


def test_arxiv_paper_metadata(lit, tmp_path):
    p = client(tmp_path).paper("arXiv:2101.00001")
    assert p["title"] == "Distributed Practice and Declarative Learning in Classrooms"
    assert p["arxiv_id"] == "2101.00001" and p["doi"] == "10.1000/edpsy.2021.7"
    assert p["year"] == 2021 and p["pdf_url"] == "http://arxiv.org/pdf/2101.00001v2"
    assert lit.requests[0]["query"]["id_list"] == ["2101.00001"]
    r = invoke("lit", "paper", "not an id", "--json", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 2 and "arXiv id" in r.json()["error"]["message"]


def test_keys_env_file_and_environment(lit, tmp_path, monkeypatch):
    from kb.lit import LitClient

    (tmp_path / "keys.env").write_text("# mine\nS2_API_KEY=file-secret-123\n", encoding="utf-8")
    LitClient(tmp_path / "c", intervals=FAST, keys_root=tmp_path).snippet("one")
    assert lit.requests[-1]["headers"].get("x-api-key") == "file-secret-123"
    monkeypatch.setenv("S2_API_KEY", "env-secret-456")
    LitClient(tmp_path / "c", intervals=FAST, keys_root=tmp_path).snippet("two")
    assert lit.requests[-1]["headers"].get("x-api-key") == "env-secret-456"  # env wins
    r = invoke("lit", "keys", "--json")
    assert r.code == 0 and r.json()["keys"] == {"S2_API_KEY": True, "OPENALEX_EMAIL": False}
    assert "secret" not in r.stdout + r.stderr


def test_keys_init_appends_slots_never_overwrites(tmp_path, monkeypatch):
    from conftest import git_init

    repo = git_init(tmp_path / "proj")
    monkeypatch.chdir(repo)
    monkeypatch.delenv("S2_API_KEY", raising=False)
    (repo / "keys.env").write_text("S2_API_KEY=keep-me", encoding="utf-8")
    r = invoke("lit", "keys", "--init", "--json")
    assert r.code == 0 and r.json()["added"] == ["OPENALEX_EMAIL"]
    text = (repo / "keys.env").read_text("utf-8")
    assert text.startswith("S2_API_KEY=keep-me\n") and "OPENALEX_EMAIL=\n" in text
    assert oct((repo / "keys.env").stat().st_mode & 0o777) == "0o600"
    assert "keys.env" in (repo / ".gitignore").read_text("utf-8").splitlines()
    assert "keep-me" not in r.stdout
    again = invoke("lit", "keys", "--init", "--json").json()
    assert again["added"] == [] and again["gitignore"] is False
    assert (repo / "keys.env").read_text("utf-8") == text
    from conftest import git

    assert git(repo, "status", "--porcelain", "--", "keys.env") == ""  # ignored


THROTTLE_CHILD = """
import sys, json
from kb.lit import LitClient
c = LitClient(sys.argv[1], keys_root=sys.argv[1])
for q in sys.argv[2:]:
    c.snippet(q)
print(c.requests)
"""


@pytest.mark.slow
def test_s2_throttle_holds_across_two_processes(lit, tmp_path):
    cache = tmp_path / "shared-cache"
    env = source_env()
    procs = [subprocess.Popen([sys.executable, "-c", THROTTLE_CHILD, str(cache), f"{tag}1", f"{tag}2"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for tag in ("a", "b")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    times = sorted(r["t"] for r in lit.requests)
    queries = [r["query"]["query"][0] for r in sorted(lit.requests, key=lambda r: r["t"])]
    assert sorted(queries) == ["a1", "a2", "b1", "b2"]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # Nominal spacing 1.1 s (3.3 s for the four); generously bounded for scheduling jitter
    # on a loaded machine, yet far above what no throttle gives (a few milliseconds).
    assert min(gaps) >= 0.5 and times[-1] - times[0] >= 2.5, gaps


def test_a_timeout_is_the_whole_wait_then_reported(lit, tmp_path):
    from kb.lit import LitClient, LitUnavailable

    # the timeout bounds the request, retries included: the attempt that timed out used it up
    lit.script("/openalex", ["slow", "slow", "slow", "slow"])
    c = LitClient(tmp_path / "c", intervals=FAST, backoff=0.001, timeout=0.2, keys_root=tmp_path)
    with pytest.raises(LitUnavailable, match=r"no answer within 0.2s, the whole wait for one "
                                             r"request \(KB_LIT_TIMEOUT\), after 1 attempt; "
                                             r"last: timed out \(ReadTimeout\)") as exc:
        c.search("x", source="openalex")
    assert exc.value.kind == "refused" and c.requests == 1
    lit.script("/openalex", ["slow"])  # a slow answer within the wait is taken
    c = LitClient(tmp_path / "c", intervals=FAST, backoff=0.001, timeout=20, keys_root=tmp_path)
    assert c.search("y", source="openalex")["papers"] and c.requests == 1


def test_cli_human_output(lit, tmp_path):
    r = invoke("lit", "search", "spacing", "--source", "s2", "--limit", "2", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 0
    assert r.stdout.splitlines()[0] == ("[s2:a1b2c3d4e5f60718293a4b5c6d7e8f9012345678] Spacing Effects in "
                                        "Motor Skill Consolidation (2019; Ana Ruiz, Bo Chen; 142 citations) "
                                        "doi:10.1000/jmb.2019.001")
    assert "(1 request; cache " in r.stderr
    r = invoke("lit", "snippet", "spacing", "--cache-dir", str(tmp_path / "c"))
    assert "    Spaced practice improved retention after one week" in r.stdout
    r = invoke("lit", "keys")
    assert r.stdout == "S2_API_KEY: not set\nOPENALEX_EMAIL: not set\n"


def test_backoff_doubles_from_two_seconds(lit, tmp_path, monkeypatch):
    from kb.lit.errors import LitUnavailable
    from kb.lit.http import Fetcher

    monkeypatch.delenv("KB_LIT_BACKOFF")
    slept: list[float] = []
    f = Fetcher(tmp_path / "c", intervals=FAST, backoff=None, sleep=slept.append)
    lit.script("/s2", [503] * 4)
    with pytest.raises(LitUnavailable):
        f.get_json(lit.base + "/s2/snippet/search?query=x", "s2")
    assert slept == [2.0, 4.0, 8.0] and f.requests == 4


# -- answers of the wrong shape (valid JSON, not what kb reads) ----------------------------

def _s2_search(c: Any) -> Any:
    return c.search("q", source="s2")


def _openalex(c: Any) -> Any:
    return c.search("q", source="openalex")


#: (scripted path, the call, a 200 answer of the wrong shape, the place the error names)
WRONG_SHAPES = [
    ("/s2/paper/search", _s2_search, {"data": "oops"}, "data: expected an array"),
    ("/s2/paper/search", _s2_search, [], "the answer: expected an object"),
    ("/s2/paper/search", _s2_search, {"data": [{"title": "T", "citationCount": "12"}]},
     "data[0].citationCount: expected an integer"),
    ("/s2/paper/search", _s2_search, {"data": [{"title": 5}]}, "data[0].title: expected a string"),
    ("/s2/snippet/search", lambda c: c.snippet("q"), {"data": "oops"}, "data: expected an array"),
    ("/s2/snippet/search", lambda c: c.snippet("q"), {"data": [{"snippet": "text"}]},
     "data[0].snippet: expected an object"),
    ("/s2/paper/", lambda c: c.cite("a1b2", "references"),
     {"data": [{"citedPaper": {"title": "T", "externalIds": ["DOI"]}}]},
     "data[0].citedPaper.externalIds: expected an object"),
    ("/s2/paper/", lambda c: c.cite("a1b2", "citations"),
     {"data": [{"citingPaper": {"title": "T", "authors": [{"name": 7}]}}]},
     "data[0].citingPaper.authors[0].name: expected a string"),
    ("/rec/papers/forpaper/", lambda c: c.cite("a1b2", "recommend"),
     {"recommendedPapers": {"paperId": "x"}}, "recommendedPapers: expected an array"),
    ("/openalex/works", _openalex, {"results": 5}, "results: expected an array"),
    ("/openalex/works", _openalex, {"results": [{"abstract_inverted_index": {"word": ["zero"]}}]},
     "results[0].abstract_inverted_index.word[0]: expected an integer"),
    ("/openalex/works", _openalex, {"results": [{"authorships": [{"author": {"display_name": ["A"]}}]}]},
     "results[0].authorships[0].author.display_name: expected a string"),
]


@pytest.mark.parametrize("prefix, call, body, where", WRONG_SHAPES,
                         ids=[f"{p}-{i}" for i, (p, *_rest) in enumerate(WRONG_SHAPES)])
def test_an_answer_of_the_wrong_shape_fails_at_once_and_is_not_cached(lit, tmp_path, prefix, call,
                                                                        body, where):
    from kb.lit import LitResponseError

    lit.script(prefix, [body])
    c = client(tmp_path)
    with pytest.raises(LitResponseError, match="not of the expected shape") as exc:
        call(c)
    assert where in str(exc.value), str(exc.value)
    assert exc.value.exit_code == 1 and "web tools" in exc.value.fallback
    assert c.requests == 1  # like a malformed body: not retried
    assert not list((tmp_path / "cache").glob("*.json"))  # and never cached
    again = client(tmp_path)  # so the same call asks again, and gets the good answer
    assert call(again) and again.requests == 1


@pytest.mark.parametrize("script", ["garbage", {"not": "xml"}])
def test_an_arxiv_answer_that_is_no_atom_feed_is_not_cached(lit, tmp_path, script):
    from kb.lit import LitResponseError

    lit.script("/arxiv", [script])  # "garbage" is XML (<html>…), but no Atom feed
    with pytest.raises(LitResponseError, match="not of the expected shape") as exc:
        client(tmp_path).paper("2101.00001")
    assert exc.value.kind == "refused" and len(lit.requests) == 1
    assert not list((tmp_path / "cache").glob("*.json"))
    assert client(tmp_path).paper("2101.00001")["arxiv_id"] == "2101.00001"


def test_cli_wrong_shape_exits_1_with_the_fallback_and_caches_nothing(lit, tmp_path):
    weird = {"data": "oops", "results": 5}  # the report's server: every API answers this
    cache = tmp_path / "c"
    lit.script("/s2", [weird, weird])
    lit.script("/openalex", [weird])
    r = invoke("lit", "search", "q", "--json", "--cache-dir", str(cache))
    assert r.code == 1, r.stderr
    assert r.json()["error"]["kind"] == "refused" and "web tools" in r.json()["fallback"]
    assert "results: expected an array" in r.json()["error"]["message"]  # the last source's error
    r = invoke("lit", "snippet", "q", "--json", "--cache-dir", str(cache))
    assert r.code == 1 and "data: expected an array" in r.json()["error"]["message"]
    assert "fallback" in r.stderr
    assert not list(cache.glob("*.json"))
    # nothing bad was cached: the same calls now get the server's good answers
    assert invoke("lit", "search", "q", "--json", "--cache-dir", str(cache)).code == 0
    assert invoke("lit", "snippet", "q", "--json", "--cache-dir", str(cache)).code == 0


def test_a_cached_answer_of_the_wrong_shape_is_a_miss(lit, tmp_path):
    from kb.lit.http import Cache, build_url, cache_key

    # what an older kb cached from a server answering {"data": "oops"}
    url = build_url(lit.base + "/s2", "/snippet/search", {"query": "q", "limit": 10})
    key = cache_key("GET", url)
    Cache(tmp_path / "cache").put(key, {"key": key, "method": "GET", "url": url, "status": 200,
                                        "body": {"data": "oops"}})
    c = client(tmp_path)
    assert [s["kind"] for s in c.snippet("q")] == ["abstract", "Introduction", "body"]
    assert c.requests == 1  # asked again instead of failing on the bad entry for ever
    rec = json.loads((tmp_path / "cache" / f"{key}.json").read_text("utf-8"))
    assert isinstance(rec["body"]["data"], list)  # replaced by the good answer


def test_shapes_accept_the_recorded_answers_and_nulls_and_name_the_place():
    from litserver import load

    from kb.lit import shapes

    for name, shape in [("s2_search.json", shapes.S2_SEARCH), ("s2_snippet.json", shapes.S2_SNIPPET),
                        ("s2_references.json", shapes.S2_EDGES), ("s2_citations.json", shapes.S2_EDGES),
                        ("s2_recommend.json", shapes.S2_RECOMMEND),
                        ("openalex_works.json", shapes.OPENALEX_WORKS)]:
        shapes.check(load(name), shape)
    # the APIs omit and null fields freely: S2 sends no "data" when nothing matched
    shapes.check({"total": 0, "offset": 0}, shapes.S2_SEARCH)
    shapes.check({"data": [None, {"snippet": None, "paper": {"corpusId": 12}}]}, shapes.S2_SNIPPET)
    shapes.check({"data": [{"citedPaper": None, "isInfluential": None}]}, shapes.S2_EDGES)
    with pytest.raises(shapes.ShapeError, match=r"^data\[1\]\.year: expected an integer, got true or "
                                                r"false \(true\)$"):
        shapes.check({"data": [{}, {"year": True}]}, shapes.S2_SEARCH)
    with pytest.raises(shapes.ShapeError, match="the answer: expected an object, got null"):
        shapes.check(None, shapes.OPENALEX_WORKS)


# -- answers that are no answer: none of the fields the endpoint always sends ------------

#: An error note served with 200: valid JSON, but none of the fields any endpoint documents.
RATE_LIMITED = {"error": "rate limited"}

#: (scripted path, the call, the always-sent fields the error names)
NO_ANSWER = [
    ("/s2/paper/search", _s2_search, '"total"'),
    ("/openalex/works", _openalex, '"meta" and "results"'),
    ("/s2/snippet/search", lambda c: c.snippet("q"), '"data"'),
    ("/s2/paper/", lambda c: c.cite("DOI:10.1/x"), '"data"'),
    ("/s2/paper/", lambda c: c.cite("a1b2", "citations"), '"data"'),
    ("/rec/papers/forpaper/", lambda c: c.cite("a1b2", "recommend"), '"recommendedPapers"'),
]


@pytest.mark.parametrize("prefix, call, fields", NO_ANSWER,
                         ids=[f"{p}-{i}" for i, (p, *_rest) in enumerate(NO_ANSWER)])
def test_an_answer_without_the_fields_its_endpoint_always_sends_is_refused_not_cached(
        lit, tmp_path, prefix, call, fields):
    from kb.lit import LitResponseError

    lit.script(prefix, [RATE_LIMITED])
    c = client(tmp_path)
    with pytest.raises(LitResponseError, match="not of the expected shape") as exc:
        call(c)  # not an empty result
    msg = str(exc.value)
    assert f"the answer: no {fields}, which every answer of this endpoint has" in msg, msg
    assert '{"error": "rate limited"}' in msg  # the server's note, quoted
    assert exc.value.exit_code == 1 and "web tools" in exc.value.fallback
    assert c.requests == 1 and not list((tmp_path / "cache").glob("*.json"))
    again = client(tmp_path)  # nothing cached: the same call asks again, and gets the answer
    assert call(again) and again.requests == 1


def test_cli_an_error_note_from_every_endpoint_exits_1_quoting_it_and_caches_nothing(lit, tmp_path):
    note = {"error": "rate limited", "message": "Too Many Requests. Please wait and try again."}
    cache = tmp_path / "c"
    lit.script("/s2", [note] * 3)  # search (s2 of both), snippet, cite
    lit.script("/rec", [note])
    lit.script("/openalex", [note])
    calls = [["search", "x"], ["snippet", "x"], ["cite", "DOI:10.1/x"],
             ["cite", "DOI:10.1/x", "--direction", "recommend"]]
    for args in calls:
        r = invoke("lit", *args, "--json", "--cache-dir", str(cache))
        assert r.code == 1, (args, r.stdout, r.stderr)
        err = r.json()["error"]
        assert err["kind"] == "refused" and "web tools" in r.json()["fallback"]
        assert json.dumps(note) in err["message"] and "fallback" in r.stderr, err
    assert len(lit.requests) == 5 and not list(cache.glob("*.json"))
    for args, asked in zip(calls, [2, 1, 1, 1]):  # later runs ask again, get the real answers
        r = invoke("lit", *args, "--json", "--cache-dir", str(cache))
        assert r.code == 0 and r.json()["requests"] == asked, (args, r.stderr)


def test_a_cached_error_note_is_a_miss(lit, tmp_path):
    from kb.lit.http import Cache, build_url, cache_key

    # what an older kb cached from an OpenAlex answering 200 {"error": "rate limited"}
    url = build_url(lit.base + "/openalex", "/works", {"search": "q", "per-page": 12})
    key = cache_key("GET", url)
    Cache(tmp_path / "cache").put(key, {"key": key, "method": "GET", "url": url, "status": 200,
                                        "body": RATE_LIMITED})
    c = client(tmp_path)
    assert [p["source"] for p in c.search("q", source="openalex")["papers"]] == ["openalex"] * 2
    assert c.requests == 1  # asked again instead of serving "no papers" for ever
    assert "results" in json.loads((tmp_path / "cache" / f"{key}.json").read_text("utf-8"))["body"]


def test_shapes_require_the_fields_every_answer_of_an_endpoint_has():
    from kb.lit import shapes

    # empty answers, as the APIs send them, still pass (S2 search sends no "data" then)
    for body, shape in [({"total": 0, "offset": 0}, shapes.S2_SEARCH),
                        ({"data": []}, shapes.S2_SNIPPET),
                        ({"offset": 0, "data": []}, shapes.S2_EDGES),
                        ({"recommendedPapers": []}, shapes.S2_RECOMMEND),
                        ({"meta": {"count": 0}, "results": []}, shapes.OPENALEX_WORKS)]:
        shapes.check(body, shape)
    note = {"error": "Not Found", "message": "Paper with id x not found"}
    for shape, fields in [(shapes.S2_SEARCH, '"total"'), (shapes.S2_SNIPPET, '"data"'),
                          (shapes.S2_EDGES, '"data"'), (shapes.S2_RECOMMEND, '"recommendedPapers"'),
                          (shapes.OPENALEX_WORKS, '"meta" and "results"')]:
        with pytest.raises(shapes.ShapeError,
                           match=rf"^the answer: no {fields}, which every answer of this endpoint "
                                 rf"has; got \{{"):
            shapes.check(note, shape)
    with pytest.raises(shapes.ShapeError) as exc:
        shapes.check(note, shapes.S2_SEARCH)
    assert str(exc.value).endswith('got {"error": "Not Found", "message": "Paper with id x not found"}')
    # null is no better than absent; a long note is quoted briefly
    with pytest.raises(shapes.ShapeError, match=r'^the answer: no "total",'):
        shapes.check({"total": None, "data": []}, shapes.S2_SEARCH)
    with pytest.raises(shapes.ShapeError) as exc:
        shapes.check({"error": "x" * 1000}, shapes.S2_SNIPPET)
    assert len(str(exc.value)) < 250 and str(exc.value).endswith("…")
    # a required field is still checked for its shape
    with pytest.raises(shapes.ShapeError, match=r"^meta: expected an object, got an integer"):
        shapes.check({"meta": 5, "results": []}, shapes.OPENALEX_WORKS)


# -- malformed settings: exit 2 at once, no request --------------------------------------

#: (value, what the message says about it)
BAD_BASE_URLS = [("http://[::1", "Invalid IPv6 URL"), ("not a url", "a space"),
                 ("notaurl", "http:// or https://"), ("ftp://example.org", "http:// or https://"),
                 ("http://", "no host"), ("http://127.0.0.1:99999", "Port out of range"),
                 ("http://127.0.0.1:8/api?x=1", "no ?query")]


@pytest.mark.parametrize("value, why", BAD_BASE_URLS, ids=[v for v, _ in BAD_BASE_URLS])
def test_a_malformed_base_url_is_an_environment_error_before_any_request(lit, tmp_path, monkeypatch,
                                                                          value, why):
    from kb.lit import LitError

    monkeypatch.setenv("KB_LIT_S2_URL", value)
    c = client(tmp_path)
    with pytest.raises(LitError) as exc:
        c.snippet("q")
    assert exc.value.kind == "environment" and exc.value.exit_code == 2
    assert f"KB_LIT_S2_URL={value!r}" in str(exc.value) and why in str(exc.value), str(exc.value)
    assert c.requests == 0 and lit.requests == []  # no attempt, so no retries and no backoff


@pytest.mark.parametrize("var, args", [
    ("KB_LIT_S2_URL", ["snippet", "q"]),
    ("KB_LIT_S2_RECOMMEND_URL", ["cite", "a1b2", "--direction", "recommend"]),
    ("KB_LIT_OPENALEX_URL", ["search", "q", "--source", "openalex"]),
    ("KB_LIT_ARXIV_URL", ["paper", "2101.00001"]),
])
def test_cli_malformed_base_url_exits_2_naming_the_variable(lit, tmp_path, monkeypatch, var, args):
    monkeypatch.setenv(var, "http://[::1")
    r = invoke("lit", *args, "--json", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 2, r.stderr
    err = r.json()["error"]
    assert err["kind"] == "environment" and f"{var}='http://[::1'" in err["message"]
    assert var in r.stderr and "fallback" in r.stderr
    assert lit.requests == []


def test_cli_search_both_sources_fails_on_one_malformed_base_url(lit, tmp_path, monkeypatch):
    # S2 would answer, but a setting to fix is no source that is down: no quiet half answer
    monkeypatch.setenv("KB_LIT_OPENALEX_URL", "not a url")
    r = invoke("lit", "search", "q", "--json", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 2 and "KB_LIT_OPENALEX_URL='not a url'" in r.json()["error"]["message"]
    assert "/openalex/works" not in lit.paths()


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf"])
def test_cli_malformed_backoff_exits_2_naming_the_variable(lit, tmp_path, monkeypatch, value):
    monkeypatch.setenv("KB_LIT_BACKOFF", value)
    r = invoke("lit", "snippet", "q", "--json", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 2, r.stderr
    assert r.json()["error"]["kind"] == "environment"
    assert f"KB_LIT_BACKOFF={value!r}" in r.json()["error"]["message"]
    assert "web tools" in r.json()["fallback"]  # read as the client opens: still a LitError
    assert lit.requests == []


def test_cli_paper_id_with_a_control_character_is_a_usage_error(lit, tmp_path):
    r = invoke("lit", "cite", "ab\x01c", "--json", "--cache-dir", str(tmp_path / "c"))
    assert r.code == 2 and r.json()["error"]["kind"] == "usage", r.stderr
    assert lit.requests == []


@pytest.mark.parametrize("url", ["not a url", "http://127.0.0.1:1/a\x01b"])
def test_fetcher_refuses_a_url_httpx_cannot_use_at_once(tmp_path, url):
    from kb.lit import LitError
    from kb.lit.http import Fetcher

    # what slips past the base URL check still fails at once as a kb error, not InvalidURL
    f = Fetcher(tmp_path / "c", intervals=FAST, backoff=0.001)
    with pytest.raises(LitError, match="not a usable URL") as exc:
        f.get_json(url, "s2")
    assert exc.value.kind == "environment" and f.requests == 1


@pytest.mark.parametrize("call", [
    lambda c: c.search("   ", source="both"), lambda c: c.search("", source="s2"),
    lambda c: c.s2_search(" \t\n"), lambda c: c.openalex_search(""), lambda c: c.snippet("  "),
    lambda c: c.search("q", year="2023-2019"), lambda c: c.s2_search("q", year="2023-2019"),
    lambda c: c.openalex_search("q", year="2023-2019")])
def test_a_blank_query_or_an_inverted_year_range_is_refused_before_any_request(lit, tmp_path, call):
    from kb.errors import UsageError

    c = client(tmp_path)
    with pytest.raises(UsageError):
        call(c)
    assert lit.requests == [] and c.requests == 0
    assert not list((tmp_path / "cache").glob("*.json"))


INVERTED = "the from-year 2023 is after the to-year 2019"


@pytest.mark.parametrize("args, words", [
    (("search", "   "), "empty query"), (("search", ""), "empty query"),
    (("snippet", " \t"), "empty query"),
    (("search", "spacing", "--year", "2023-2019"), INVERTED),
    (("search", "spacing", "--year", "2023-2019", "--source", "openalex"), INVERTED)])
def test_cli_blank_query_or_inverted_years_exit_2_and_cache_nothing(lit, tmp_path, args, words):
    cache = tmp_path / "c"
    r = invoke("lit", *args, "--json", "--cache-dir", str(cache))
    assert r.code == 2, (r.stdout, r.stderr)
    assert r.json()["error"]["kind"] == "usage" and words in r.json()["error"]["message"], r.stdout
    assert lit.requests == [] and not list(cache.glob("*.json"))
    assert invoke("lit", *args, "--cache-dir", str(cache)).code == 2
    # a range of one year (from = to) is no inverted range: it still goes out
    assert invoke("lit", "search", "spacing", "--year", "2019-2019", "--source", "s2", "--json",
                  "--cache-dir", str(cache)).code == 0
