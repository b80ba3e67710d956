"""kb.toml regexes that can backtrack catastrophically are refused when kb.toml is read.

kb compiles ``[kb] id_grammar`` into its declaration regexes and a ``[[registry]]
heading`` as it is, and matches them against every heading line. A repetition whose
text can be read in more than one way (``(H+)+Z``, ``(H|H)*Z``, ``(\\d+)*$``) makes a
failing match take exponential time: one heading of 64 ``H`` would keep ``kb index``,
the hooks and CI matching for longer than the age of the universe. No test here times
a match: the refusal comes before any heading is read, and a CLI run is bounded by its
subprocess timeout only so that a missing refusal fails instead of hanging the suite.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO_ROOT, MakeKB, run_script
from kb.config import DEFAULT_ID_GRAMMAR, LOOSE_ID, Config, Registry, config_from_dict, read_toml
from kb.errors import ConfigError
from kb.parse import regex_safety
from kb.parse.regex_safety import Backtracking, catastrophic_backtracking

SETTINGS = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

#: Patterns Python's matcher takes exponential time to fail on, each with the text the
#: refusal shows and the unit whose every repetition doubles the ways.
CATASTROPHIC = [
    (r"(H+)+Z", "HH", "H"),
    (r"(H|H)*Z", "HH", "H"),
    (r"(\d+)*$", "00", "0"),
    (r"(a*)*b", "aa", "a"),
    (r"(\w+-?)+", None, None),  # the classic slug regex
    (r"(a|a?)+b", None, None),
    (r"(a{1,3})*b", None, None),  # a bounded inner repeat is no way out
    (r"(\d|\d\d)+", None, None),
    (r"(a|ab|b)*c", None, None),
    (r"(.*,)*", None, None),
    (r"(;\d*\d*)*", None, None),  # a separator does not help when each part is ambiguous
    (r"(?=(a+)+b)a", None, None),  # inside a lookahead
    (r"(x)(\1|x)*", None, None),  # a backreference reads its group's text
    (r"(?i:(h|\u212a|k)+)+", None, None),
    (r"H\d+(\.\d+)*(?:(\d+)*)!", None, None),
]

#: Grammars a user writes, and the ones kb itself, its README and its tests use.
REALISTIC = [
    DEFAULT_ID_GRAMMAR, LOOSE_ID, Registry.heading,
    r"[KH][1-9][0-9]*", r"X[0-9]+", r"K[0-9]+[a-z]?", r"[HK][0-9]+[a-z]?",  # tests' kb.toml
    r"^## (?P<id>P-\d{4}-\d{3}) (?P<title>.+)$",  # README's registry
    r"H\d+(\.\d+)*", r"H\d+(?:\.\d+)*", r"H[0-9]+(-[0-9]+)*", r"H\d+([.-]\d+)*",
    r"H\d{1,3}(\.\d{1,3})*", r"H\d+(?:\.\d+){0,5}", r"H(\d+)(\.(\d+))*",
    r"[A-Z]+-\d+", r"[A-Z]{2,4}-\d{3}", r"HYP-\d{4}", r"(?:H|Hyp)\d+", r"(H|K)\d+(\.\d+)*",
    r"H\d+[a-z]*", r"H\d+(\.\d+)*[a-z]?", r"H\d+(\.\d+)*(-[a-z]+)?", r"H\d+(\.\d+|[a-z])*",
    r"[A-Z]\d+(\.[A-Z]?\d+)*", r"[A-Z][A-Z0-9]*(\.[A-Z0-9]+)*", r"(?:[A-Z]{1,3}-)?\d+(?:\.\d+)*",
    r"\w+-\d+", r"\S+", r"[^:]+", r".+?", r"(?i:h)\d+", r"(H\d*)+",
    r"(a|ab)*c", r"(a?)*b", r"(a|)*b",  # Python reads each of these one way
    r"(a|a){1,10}",  # bounded: not what is refused (polynomial ones: test_config_grammar_polynomial.py)
]


def _config(toml: str) -> Config:
    text, data = read_toml(toml.encode("utf-8"))
    return config_from_dict(Path("/kb"), data, text)


def _grammar_toml(grammar: str) -> str:
    # A TOML literal string holds any regex here without escapes (none holds a quote).
    return f"[kb]\nlocale = \"en\"\nid_grammar = '{grammar}'\n"


# -- what is refused ---------------------------------------------------------------------


@pytest.mark.parametrize("grammar, text, unit", CATASTROPHIC, ids=[c[0] for c in CATASTROPHIC])
def test_a_grammar_that_backtracks_catastrophically_is_refused_at_its_line(grammar: str, text: str | None,
                                                                           unit: str | None) -> None:
    with pytest.raises(ConfigError) as exc:
        _config(_grammar_toml(grammar))
    msg = str(exc.value)
    assert exc.value.line == 3
    assert msg.startswith(f"kb.toml:3: kb.id_grammar `{grammar}` can take exponential time: "), msg
    assert r"e.g. `H\d+(\.\d+)*` (or leave the key out for the default)" in msg, msg
    found = catastrophic_backtracking(grammar)
    assert found is not None and found.unit and found.text.endswith(found.unit)
    if text is not None:
        assert (found.text, found.unit) == (text, unit)
        assert f"reads {text!r} in more than one way, and each further {unit!r} doubles" in msg


def test_the_refusal_comes_before_any_heading_is_matched(make_kb: MakeKB) -> None:
    """A heading of 64 ``H`` under ``(H+)+Z``: 2**64 ways to fail. Every command that reads
    the tree (what CI and the hooks run among them) stops at kb.toml, exit 2, naming the
    line; without the refusal the run never ends (the subprocess timeout bounds the test)."""
    root = make_kb({"tree.md": "# Tree\n\n## " + "H" * 64 + "\n\n## H1Z: a real one\n"},
                   config=_grammar_toml(r"(H+)+Z"), commit=True)
    for args in (("index",), ("verify",), ("verify", "--staged"), ("ls", "hypotheses")):
        r = run_script(*args, "--json", cwd=root, timeout=60)
        assert "Traceback" not in r.stderr and r.code == 2, (args, r.code, r.stderr)
        err = r.json()["error"]
        assert err["kind"] == "environment" and err["exit_code"] == 2, err
        assert err["message"].startswith("kb.toml:3: kb.id_grammar `(H+)+Z` can take exponential time"), err


def test_a_registry_heading_that_backtracks_is_refused_at_its_line() -> None:
    toml = ('[kb]\nlocale = "en"\n[[registry]]\npath = "a.md"\n[[registry]]\npath = "b.md"\n'
            "heading = '^## (?P<id>(\\w+-?)+) (?P<title>.+)$'\n")
    with pytest.raises(ConfigError) as exc:
        _config(toml)
    assert exc.value.line == 7
    assert str(exc.value).startswith(
        r"kb.toml:7: [[registry]] #2 heading `^## (?P<id>(\w+-?)+) (?P<title>.+)$` can take "
        "exponential time"), exc.value
    assert "leave the key out" not in str(exc.value)


def test_a_pattern_too_large_to_check_is_refused_too() -> None:
    """Past a bound on the search (a loop over 2,000 alternatives) kb cannot tell: the
    pattern is refused rather than let through unchecked."""
    grammar = "(?:" + "|".join(f"H{i}x" for i in range(2000)) + ")+"
    assert catastrophic_backtracking(grammar) == Backtracking(text="", unit="")
    with pytest.raises(ConfigError, match=r"^kb\.toml:3: kb\.id_grammar `\(\?:H0x\|.* is too large for kb "
                                          r"to check that it cannot take exponential time"):
        _config(_grammar_toml(grammar))


@pytest.mark.parametrize("grammar, says", [
    (r"(?P<id>H\d+)", "redefinition of group name 'id'"),  # kb's own group around it
    (r"(?i)h\d+", "global flags not at the start"),  # legal alone, not inside kb's patterns
])
def test_a_grammar_kb_cannot_embed_is_refused_at_its_line(make_kb: MakeKB, grammar: str,
                                                           says: str) -> None:
    """Valid alone, these fail where kb puts the grammar (inside ``(?P<id>…)`` of its
    heading patterns): kb.toml's line says so, exit 2, instead of an internal error
    (exit 3) at the first heading."""
    root = make_kb({"tree.md": "# Tree\n\n## H1: one\nStatus: 待验\n"},
                   config=_grammar_toml(grammar), commit=True)
    r = run_script("ls", "hypotheses", "--json", cwd=root, timeout=60)
    assert "Traceback" not in r.stderr and r.code == 2, (r.code, r.stderr)
    message = r.json()["error"]["message"]
    assert message.startswith("kb.toml:3: kb.id_grammar cannot be used inside kb's heading "
                              "patterns") and says in message, message


@pytest.mark.parametrize("grammar", [r"H\d+|", r"H?", r"(H\d+)*", r"(?:H\d+)?", r"\S*"])
def test_a_grammar_matching_the_empty_text_is_refused_at_its_line(make_kb: MakeKB, grammar: str) -> None:
    """A grammar that reads the empty text made ``## : statement`` a hypothesis with an
    empty ID (listed, judged, linked to as ""): kb.toml refuses it at its line, exit 2."""
    root = make_kb({"tree.md": "# Tree\n\n## H1: one\nStatus: 待验\n\n## : statement\n"},
                   config=_grammar_toml(grammar), commit=True)
    r = run_script("ls", "hypotheses", "--json", cwd=root, timeout=60)
    assert "Traceback" not in r.stderr and r.code == 2, (r.code, r.stdout, r.stderr)
    err = r.json()["error"]
    assert err["kind"] == "environment" and err["exit_code"] == 2, err
    assert err["message"].startswith(f"kb.toml:3: kb.id_grammar `{grammar}` matches the empty "
                                     "text, so a heading such as `## : statement` would be a "
                                     "hypothesis with an empty ID"), err


@pytest.mark.parametrize("heading", [
    r"^## (?P<id>\S*) ?(?P<title>.*)$",  # the group reads nothing on `## `
    r"^## (?:(?P<id>P\d+) )?(?P<title>.+)$",  # the group is skipped on `## hello`
    r"^## (?P<id>P\d+) (?P<title>.+)$|^### (?P<title2>.+)$",  # an alternative without it
])
def test_a_registry_heading_whose_id_can_be_empty_is_refused_at_its_line(heading: str) -> None:
    """A registry heading whose ``id`` group can be empty made a record with the ID ""; one
    whose group can be skipped failed the index cache ("NOT NULL constraint failed")."""
    toml = f'[kb]\nlocale = "en"\n[[registry]]\npath = "a.md"\nheading = \'{heading}\'\n'
    with pytest.raises(ConfigError) as exc:
        _config(toml)
    assert exc.value.line == 5
    assert str(exc.value).startswith(f"kb.toml:5: [[registry]] #1 heading `{heading}` can leave "
                                     "its (?P<id>…) group empty or skip it"), exc.value


@pytest.mark.parametrize("pattern, empty", [
    (r"^## (?:x(?P<id>\w))+ (?P<title>.+)$", False),  # a repeat of at least one sets it
    (r"^## (?=(?P<id>\w+))(?P<title>.+)$", False),  # a lookahead that matched set it
    (r"^## (?:(?P<id>A\d+) x|(?P<id2>B))(?P<title>.*)$", True),  # one alternative never does
    (r"^## (?P<id>(?=x))(?P<title>.+)$", True),  # a lookahead alone reads nothing
])
def test_the_empty_id_check_follows_the_pattern(pattern: str, empty: bool) -> None:
    assert regex_safety.group_may_be_empty(pattern, "id") is empty


def test_a_grammar_nested_too_deep_to_compile_is_a_config_error() -> None:
    """``re.compile`` itself recurses: past Python's limit it raises RecursionError, which
    kb.toml's line reports like any regex that does not compile."""
    grammar = "(" * 1200 + "H" + ")" * 1200
    with pytest.raises(ConfigError, match=r"^kb\.toml:3: kb\.id_grammar is not a valid regex"):
        _config(_grammar_toml(grammar))


# -- what passes -------------------------------------------------------------------------


@pytest.mark.parametrize("grammar", REALISTIC)
def test_realistic_grammars_pass(grammar: str) -> None:
    assert catastrophic_backtracking(grammar) is None
    if "(?P<id>" not in grammar:  # a registry heading is no ID grammar (its groups clash)
        cfg = _config(_grammar_toml(grammar))
        assert cfg.custom_grammar and cfg.id_grammar == grammar


def test_the_readme_kb_toml_passes() -> None:
    """The README's kb.toml, every key set, loads: its id_grammar and registry heading
    are checked and pass."""
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## kb\.toml\n.*?```toml\n(.*?)```", readme, re.S)
    assert block is not None
    cfg = _config(block.group(1))
    assert cfg.custom_grammar and cfg.registries
    assert catastrophic_backtracking(cfg.id_grammar) is None
    assert catastrophic_backtracking(cfg.registries[0].heading) is None


def _deepest_compiling(unit: str) -> str:
    """``unit`` nested as deep as re.compile still follows here, less a margin."""
    def nested(n: int) -> str:
        return "(?:" * n + "H" + f"){unit}" * n

    lo, hi = 1, 2000
    while lo < hi - 1:
        mid = (lo + hi) // 2
        try:
            re.compile(nested(mid))
            lo = mid
        except RecursionError:
            hi = mid
    return nested(lo - 20)


def test_a_regex_nested_too_deep_to_walk_is_refused_not_a_crash() -> None:
    """A regex Python compiles but nested deeper than the check's walk can follow is
    refused as too large to check: never a RecursionError (exit 3) at kb.toml."""
    grammar = _deepest_compiling("*")
    with pytest.raises(ConfigError, match=r"^kb\.toml:3: kb\.id_grammar .* is too large for kb to check"):
        _config(_grammar_toml(grammar))


# -- no check rather than a crash -----------------------------------------------------------


class _ParserOfAnotherShape:
    """Python's private parser as a later Python might have it: an unknown node."""

    class state:  # noqa: N801 - the attribute re._parser's result has
        flags = 0

    def parse(self, pattern: str) -> "_ParserOfAnotherShape":
        return self

    def __iter__(self):  # noqa: ANN204
        return iter([(type("Op", (), {"name": "NEW_NODE"})(), None)])


@pytest.mark.parametrize("parser", [None, _ParserOfAnotherShape()], ids=["missing", "other-shape"])
def test_without_a_parser_it_knows_kb_checks_nothing_and_loads(monkeypatch: pytest.MonkeyPatch,
                                                               parser: object) -> None:
    monkeypatch.setattr(regex_safety, "_sre", parser)
    catastrophic_backtracking.cache_clear()
    try:
        assert catastrophic_backtracking(r"(H+)+Y") is None
        assert _config(_grammar_toml(r"(H+)+Y")).custom_grammar
    finally:
        catastrophic_backtracking.cache_clear()


# -- properties --------------------------------------------------------------------------

#: Small grammars of the pieces ID grammars are made of (no ';' or 'x' or 'y' in them).
_ATOMS = st.sampled_from(["H", "K", "a", "b", "1", r"\.", "-", r"\d", "[a-z]", "[0-9]", "[HK]", r"\w"])


def grammar_strategy(atoms: st.SearchStrategy[str], repeats: list[str],
                     max_leaves: int) -> st.SearchStrategy[str]:
    """Grammars of ``atoms`` joined, alternated and repeated (by one of ``repeats``)."""
    return st.recursive(
        atoms,
        lambda inner: st.one_of(
            st.tuples(inner, inner).map("".join),
            st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
            st.tuples(inner, st.sampled_from(repeats)).map(lambda t: f"(?:{t[0]}){t[1]}"),
        ),
        max_leaves=max_leaves)


def _grammars() -> st.SearchStrategy[str]:
    return grammar_strategy(_ATOMS, ["?", "*", "+", "{2}", "{1,3}", "{0,12}"], 6)


@SETTINGS
@given(g=_grammars())
def test_a_repetition_of_a_repetition_or_of_twin_alternatives_is_always_refused(g: str) -> None:
    """Whatever ``g`` is (each reads some text), ``(g)+`` repeated again, or repeating
    ``g|g``, reads a run of that text in exponentially many ways."""
    assert catastrophic_backtracking(f"(?:(?:{g})+)+") is not None
    assert catastrophic_backtracking(f"(?:(?:{g})|(?:{g}))+;") is not None


@SETTINGS
@given(g=_grammars())
def test_the_verdict_is_about_repetitions(g: str) -> None:
    """Putting a pattern between fixed texts, making it optional or repeating it a fixed
    number of times adds no repetition: the verdict stays; a larger pattern holding a
    refused one is refused."""
    refused = catastrophic_backtracking(g) is not None
    for around in (f"x(?:{g})y", f"(?:{g})?;", f"(?:{g}){{2}}", f"(?:{g})|y", f"(?=x)(?:{g})"):
        assert (catastrophic_backtracking(around) is not None) == refused, around
    if refused:
        assert catastrophic_backtracking(f"(?:x(?:{g}))*") is not None


@SETTINGS
@given(pattern=st.text(alphabet="Hab1()|*+?.\\d[]{},^$-=!:<>Pi", max_size=14))
def test_any_regex_that_compiles_gets_a_verdict_and_no_error(pattern: str) -> None:
    """kb.toml's reader calls the check on any regex that compiles: it never raises, and
    a refusal's text ends with the unit that repeats."""
    try:
        with warnings.catch_warnings():  # "possible nested set" and the like: not the point
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except re.error:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the check itself warns about nothing
        found = catastrophic_backtracking(pattern)
    assert found is None or found.text.endswith(found.unit)


def test_the_check_runs_on_this_python() -> None:
    """The private parser is found here (3.11+: re._parser; before: sre_parse), so the
    tests above test a check that runs."""
    assert regex_safety._sre is not None
    assert regex_safety._sre.__name__ in ("re._parser", "sre_parse"), sys.version
