"""kb.toml regexes that backtrack polynomially are refused when kb.toml is read.

Two repetitions one after the other (or with only optional parts between them) whose
characters overlap split a run of n characters between them in about n² ways, n³ for
three: ``H+H+H+Z`` against a heading of 5,000 ``H`` takes minutes. kb.toml refuses such
an ``id_grammar`` or registry ``heading`` at its line, saying what to write instead; the
grammars people write, kb's defaults and the README's still load. No test here times a
match: the refusal comes before any heading is read, and the one CLI run is bounded by its
subprocess timeout only so that a missing refusal fails instead of hanging the suite.
"""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import MakeKB, run_script
from test_config_grammar_backtracking import _config, grammar_strategy
from kb.config import DEFAULT_ID_GRAMMAR, LOOSE_ID, Registry
from kb.errors import ConfigError
from kb.parse.regex_safety import Backtracking, catastrophic_backtracking, polynomial_backtracking

#: Grammars that backtrack polynomially (and not exponentially), with the text the
#: refusal shows before the run and the character that repeats.
POLYNOMIAL = [
    (r"H+H+H+Z", "HH", "H"),  # cubic
    (r"a*a*a*b", "aa", "a"),
    (r"\d+\d+\d+x", "00", "0"),
    (r"H\d*\d*", "H00", "0"),  # quadratic: two are enough
    (r"\d+\.?\d+", "00", "0"),  # separated by an optional item
    (r"H\d+(?:-)?(?:\.)?\d+", "H00", "0"),  # by two
    (r"\w+\d+", "00", "0"),  # overlapping classes, not equal ones
    (r"[A-Z]+[A-Z0-9]*", "AA", "A"),
    (r"H\d+?\d+", None, None),  # a lazy one backtracks as well
    (r"(?:ab)+(?:ab)+x", None, None),  # the runs need not be of one character
    (r"H\d+(?:\.\d+)*\d+", None, None),  # nor the second repetition the first's twin
]

#: ID grammars a user writes, kb's own, and the ones its README, docs and tests use.
ACCEPTED = [
    DEFAULT_ID_GRAMMAR, LOOSE_ID, r"H[0-9]+(?:\.[0-9]+)*", r"[A-Z]+-[0-9]+",
    r"H[1-9][0-9]*(?:\.[1-9][0-9]*)*", r"H\d+(\.\d+)*", r"[KH][1-9][0-9]*", r"X[0-9]+",
    r"K[0-9]+[a-z]?", r"[HK][0-9]+[a-z]?", r"H\d++", r"[A-Z]+\d+", r"[A-Z]{2,4}-\d{3}",
    r"(?:\d+\.)+\d+", r"H\d+[a-z]*", r"H\d+(\.\d+|[a-z])*", r"[A-Z][A-Z0-9]*(\.[A-Z0-9]+)*",
    r"(?:[A-Z]{1,3}-)?\d+(?:\.\d+)*", r"\w+-\d+", r"\S+", r"[^:]+", r".+?", r"(H\d*)+",
    r"\d{2,}", r"H\d+(?:\.\d+){0,5}",
]

#: Registry headings: kb matches each as it is against a line, so a last repetition that
#: reads the rest of any line (``(?P<title>.+)$``) ends the match wherever it starts.
HEADINGS_ACCEPTED = [
    Registry.heading, r"^## (?P<id>P-\d{4}-\d{3}) (?P<title>.+)$",
    r"^## (?P<id>\S+)\s+(?P<title>.+)$", r"^## (?P<id>\S+)\s+(?P<title>.*)",
]
HEADINGS_REFUSED = [
    r"^## (?P<id>\w+\d+) (?P<title>.+)$",  # in the ID
    r"^## (?P<id>\S+)\s+(?P<title>.+)\b",  # the boundary can still refuse the line
    r"^## (?P<id>\S+)\s+(?P<title>[^!]+)$",  # the title reads not every character
    r"^## (?P<id>\S+)\s+(?P<title>.+) x$",  # something must follow it
]


def _grammar_toml(grammar: str) -> str:
    # Comments first: the diagnostic names the grammar's own line (5), not the table's.
    return f"# lab conventions\n[kb]\nlocale = \"en\"\n# hypothesis IDs\nid_grammar = '{grammar}'\n"


@pytest.mark.parametrize("grammar, text, unit", POLYNOMIAL, ids=[p[0] for p in POLYNOMIAL])
def test_a_polynomial_grammar_is_refused_at_its_line(grammar: str, text: str | None,
                                                      unit: str | None) -> None:
    assert catastrophic_backtracking(grammar) is None  # not the exponential kind
    with pytest.raises(ConfigError) as exc:
        _config(_grammar_toml(grammar))
    msg = str(exc.value)
    assert exc.value.line == 5
    assert msg.startswith(f"kb.toml:5: kb.id_grammar `{grammar}` can take polynomial time: two "
                          "repetitions in it, one after the other, can both read "), msg
    assert (r"read each run with one repetition (`\d+`, not `\d+\d+`; `\d+(\.\d+)?`, not "
            r"`\d+\.?\d+`)") in msg, msg
    assert r"(`[A-Z]+[0-9]+`, not `\w+\d+`), e.g. `H\d+(\.\d+)*` (or leave the key out for the " \
           "default)" in msg, msg
    found = polynomial_backtracking(grammar)
    assert found is not None and found.unit and found.text.endswith(found.unit)
    if text is not None:
        assert (found.text, found.unit) == (text, unit)
        assert f"can both read {unit!r}, so a heading such as {text + unit * 3 + '…'!r} " in msg, msg


def test_the_refusal_comes_before_any_heading_is_matched(make_kb: MakeKB) -> None:
    """A heading of 3,000 ``H`` under ``H+H+H+Z``: some 4.5 billion ways to fail. A command
    that reads the tree stops at kb.toml, exit 2, naming the line; without the refusal it
    would run for minutes (the subprocess timeout bounds the test, it times nothing)."""
    root = make_kb({"tree.md": "# Tree\n\n## " + "H" * 3000 + "\n\n## HHZ: a real one\n"},
                   config=_grammar_toml(r"H+H+H+Z"), commit=True)
    r = run_script("ls", "hypotheses", "--json", cwd=root, timeout=60)
    assert "Traceback" not in r.stderr and r.code == 2, (r.code, r.stderr)
    err = r.json()["error"]
    assert err["kind"] == "environment" and err["exit_code"] == 2, err
    assert err["message"].startswith("kb.toml:5: kb.id_grammar `H+H+H+Z` can take polynomial time"), err


@pytest.mark.parametrize("grammar", ACCEPTED)
def test_realistic_grammars_still_load(grammar: str) -> None:
    assert catastrophic_backtracking(grammar) is None
    assert polynomial_backtracking(grammar) is None
    cfg = _config(_grammar_toml(grammar))
    assert cfg.custom_grammar and cfg.id_grammar == grammar


def _registry_toml(heading: str) -> str:
    return f'[kb]\nlocale = "en"\n[[registry]]\npath = "a.md"\nheading = \'{heading}\'\n'


@pytest.mark.parametrize("heading", HEADINGS_ACCEPTED)
def test_a_registry_heading_whose_title_reads_the_rest_of_the_line_loads(heading: str) -> None:
    assert polynomial_backtracking(heading, whole_line=True) is None
    assert _config(_registry_toml(heading)).registries[0].heading == heading


@pytest.mark.parametrize("heading", HEADINGS_REFUSED)
def test_a_polynomial_registry_heading_is_refused_at_its_line(heading: str) -> None:
    with pytest.raises(ConfigError) as exc:
        _config(_registry_toml(heading))
    assert exc.value.line == 5
    msg = str(exc.value)
    assert msg.startswith(f"kb.toml:5: [[registry]] #1 heading `{heading}` can take polynomial "
                          "time"), msg
    assert "leave the key out" not in msg


def test_an_id_grammar_gets_no_whole_line_pass() -> None:
    """kb follows an ``id_grammar`` with its own ``[ \\t]*:``: a repetition reading the rest
    of the line is no end of the match there."""
    assert polynomial_backtracking(r"H\d+\s*.+") is not None
    assert polynomial_backtracking(r"H\d+\s*.+", whole_line=True) is None


def test_a_pattern_too_large_to_check_is_refused_too() -> None:
    """Past the bound on the search kb cannot tell: refused rather than let through."""
    grammar = "".join(f"(?:[a-z]{i}[0-9])*" for i in range(300))
    assert catastrophic_backtracking(grammar) is None
    assert polynomial_backtracking(grammar) == Backtracking(text="", unit="")
    with pytest.raises(ConfigError, match=r"^kb\.toml:5: kb\.id_grammar .* is too large for kb to "
                                          r"check that it cannot take polynomial time"):
        _config(_grammar_toml(grammar))


# -- properties --------------------------------------------------------------------------

#: Small grammars of the pieces ID grammars are made of (no ';' in them).
_ATOMS = st.sampled_from(["H", "K", "a", "1", r"\.", "-", r"\d", "[a-z]", "[0-9]", "[HK]", r"\w"])


def _grammars() -> st.SearchStrategy[str]:
    return grammar_strategy(_ATOMS, ["?", "*", "+", "{2}", "{1,3}"], 5)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(g=_grammars(), between=st.sampled_from(["", "(?:;)?", "(?:;)*", "(?:;|)", "(?=;)"]))
def test_two_repetitions_of_one_text_in_a_row_are_always_refused(g: str, between: str) -> None:
    """Whatever ``g`` reads, two repetitions of it in a row (or with only optional parts
    between them) read a run of its text in more ways the longer it is: one check or the
    other refuses the pattern."""
    pattern = f"(?:{g})+{between}(?:{g})+;"
    assert catastrophic_backtracking(pattern) is not None or polynomial_backtracking(pattern) is not None


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(pattern=st.text(alphabet="Hab1()|*+?.\\d[]{},^$-=!:<>Pis", max_size=14), whole=st.booleans())
def test_any_regex_that_compiles_gets_a_verdict_and_no_error(pattern: str, whole: bool) -> None:
    """kb.toml's reader calls the check on any regex that compiles: it never raises, and a
    refusal's text ends with the unit that repeats."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except re.error:
        return
    found = polynomial_backtracking(pattern, whole)
    assert found is None or found.text.endswith(found.unit)
