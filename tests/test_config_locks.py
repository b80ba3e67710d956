"""kb.toml `[locks]` values kb cannot use are kb.toml errors at their line, for every
command: `grace = "abc"` passed `kb verify` and the pre-commit hook, then every write and
lock command exited 2 with no line; `offline = "maybe"` was read as `refuse` silently.
And a `[paths]` clash whose file key kb.toml does not write is blamed at the line it does
write (`experiments = "."` named no line)."""

from __future__ import annotations

import pytest

from conftest import MakeKB, run_script

TREE = "# Tree\n\n## H1: First\nStatus: 待验\nEvidence: (empty)\n"


@pytest.mark.parametrize("value, key, says", [
    ('grace = "abc"', "grace", "locks.grace 'abc' does not parse"),
    ('ttl = "abc"', "ttl", "locks.ttl 'abc' does not parse"),
    ('grace = "-5s"', "grace", "locks.grace '-5s' does not parse"),
    ('ttl = "0s"', "ttl", "locks.ttl '0s' must be longer than 0s"),
    ('ttl = "400d"', "ttl", "locks.ttl '400d' is longer than a year"),
    ('offline = "maybe"', "offline", "locks.offline must be 'refuse' or 'warn', not 'maybe'"),
])
@pytest.mark.parametrize("command", [("verify",), ("ls", "hypotheses", "--json"),
                                     ("lock", "status", "--json")])
def test_a_locks_value_kb_cannot_use_is_refused_at_its_line(make_kb: MakeKB, value: str, key: str,
                                                            says: str, command: tuple) -> None:
    root = make_kb({"tree.md": TREE}, config=f'[kb]\n\n[locks]\nleads = []\n{value}\n', commit=True)
    r = run_script(*command, cwd=root)
    assert r.code == 2 and "Traceback" not in r.stderr, (r.code, r.stdout, r.stderr)
    assert f"kb.toml:5: {says}" in r.stdout + r.stderr, (r.stdout, r.stderr)


def test_good_locks_values_pass(make_kb: MakeKB) -> None:
    root = make_kb({"tree.md": TREE}, config='[kb]\n[locks]\nttl = "1h30m"\ngrace = "0s"\n'
                   'offline = "warn"\n', commit=True)
    r = run_script("ls", "hypotheses", "--json", cwd=root)
    assert r.code == 0 and [h["id"] for h in r.json()["objects"]] == ["H1"], (r.code, r.stderr)


def test_a_default_file_in_a_written_record_folder_is_blamed_at_the_folders_line(
        make_kb: MakeKB) -> None:
    root = make_kb({"tree.md": TREE}, config='[kb]\n\n[paths]\nexperiments = "."\n', commit=True)
    r = run_script("ls", "hypotheses", "--json", cwd=root)
    assert r.code == 2 and "Traceback" not in r.stderr, (r.code, r.stderr)
    assert r.json()["error"]["message"].startswith(
        "kb.toml:4: paths.tree = 'tree.md' lies in the folder of paths.experiments ('.')"), r.stdout
