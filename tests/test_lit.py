"""The literature client against a local stand-in server (tests/litserver.py)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

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


def test_timeout_is_retried_then_reported(lit, tmp_path):
    from kb.lit import LitClient, LitUnavailable

    lit.script("/openalex", ["slow", "slow", "slow", "slow"])
    c = LitClient(tmp_path / "c", intervals=FAST, backoff=0.001, timeout=0.2, keys_root=tmp_path)
    with pytest.raises(LitUnavailable, match=r"timed out after 0.2s"):
        c.search("x", source="openalex")
    lit.script("/openalex", ["slow"])
    c = LitClient(tmp_path / "c", intervals=FAST, backoff=0.001, timeout=0.2, keys_root=tmp_path)
    assert c.search("y", source="openalex")["papers"] and c.requests == 2


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
