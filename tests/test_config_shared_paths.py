"""Two `[paths]` keys naming one file or folder are a kb.toml error at the later key's
line: with `dashboard = "tree.md"`, `kb dashboard` replaced the tree by the dashboard and
committed it (every hypothesis gone from HEAD)."""

from __future__ import annotations

import pytest

from conftest import MakeKB, git, run_script

TREE = "# Tree\n\n## H1: First\nStatus: 待验\nEvidence: (empty)\n"


def test_a_dashboard_at_the_trees_path_is_refused_and_the_tree_kept(make_kb: MakeKB) -> None:
    root = make_kb({"tree.md": TREE}, config='[kb]\n[paths]\ndashboard = "tree.md"\n', commit=True)
    head = git(root, "rev-parse", "HEAD")
    r = run_script("dashboard", "--json", cwd=root)
    assert r.code == 2, (r.code, r.stdout, r.stderr)
    assert r.json()["error"]["message"].startswith(
        "kb.toml:3: paths.dashboard = 'tree.md' names what paths.tree names ('tree.md')"), r.stdout
    assert (root / "tree.md").read_text(encoding="utf-8") == TREE
    assert git(root, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("paths, line, key", [
    ('experiments = "tree.md"\n', 3, "experiments"),
    ('problems = "X"\npropositions = "X/"\n', 4, "propositions"),
    ('methods = "Notes"\nverified = "./Notes"\n', 4, "verified"),
])
def test_any_two_keys_naming_one_path_are_refused(make_kb: MakeKB, paths: str, line: int,
                                                   key: str) -> None:
    root = make_kb({"tree.md": TREE}, config="[kb]\n[paths]\n" + paths, commit=True)
    r = run_script("ls", "hypotheses", "--json", cwd=root)
    assert r.code == 2 and "Traceback" not in r.stderr, (r.code, r.stderr)
    assert r.json()["error"]["message"].startswith(f"kb.toml:{line}: paths.{key} = "), r.stdout


def test_distinct_paths_and_the_defaults_spelled_out_pass(make_kb: MakeKB) -> None:
    root = make_kb({"tree.md": TREE}, config='[kb]\n[paths]\ntree = "tree.md"\n'
                   'dashboard = "DASHBOARD.md"\nproblems = "X/P"\npropositions = "X/Q"\n', commit=True)
    r = run_script("ls", "hypotheses", "--json", cwd=root)
    assert r.code == 0 and [h["id"] for h in r.json()["objects"]] == ["H1"], (r.code, r.stderr)


@pytest.mark.parametrize("paths, key, folder", [
    ('dashboard = "experiments/E001.md"\n', "dashboard", "experiments"),
    ('tree = "Problems/q1.md"\n', "tree", "problems"),
])
def test_a_file_of_kbs_inside_a_folder_of_records_is_refused(make_kb: MakeKB, paths: str, key: str,
                                                              folder: str) -> None:
    """`dashboard = "experiments/E001.md"`: `kb dashboard` replaced experiment E001 by the
    dashboard and committed it. A tree or dashboard inside a folder of records is refused
    at its line; the logs folder (no records kb parses as cards) may hold one."""
    root = make_kb({"tree.md": TREE}, config="[kb]\n[paths]\n" + paths, commit=True)
    r = run_script("dashboard", "--json", cwd=root)
    assert r.code == 2 and "Traceback" not in r.stderr, (r.code, r.stderr)
    assert r.json()["error"]["message"].startswith(
        f"kb.toml:3: paths.{key} = ") and f"lies in the folder of paths.{folder}" in r.stdout


def test_a_dashboard_in_the_logs_folder_is_fine(make_kb: MakeKB) -> None:
    root = make_kb({"tree.md": TREE}, config='[kb]\n[paths]\ndashboard = "Logs/DASHBOARD.md"\n',
                   commit=True)
    r = run_script("ls", "hypotheses", "--json", cwd=root)
    assert r.code == 0, r.stderr



@pytest.mark.parametrize("key", ["experiments", "problems", "methods"])
@pytest.mark.parametrize("value", [".", "./"])
def test_a_folder_of_records_at_the_kbs_top_may_not_hold_the_tree(make_kb: MakeKB, key: str,
                                                                  value: str) -> None:
    """`experiments = "."` with the tree at the KB's top read tree.md's neighbours as
    experiments (a `notes.md` listed as experiment `notes`), the tree among them. Refused
    at the line; with the tree and dashboard in a folder of their own it is a layout."""
    root = make_kb({"tree.md": TREE, "notes.md": "# Notes\n"},
                   config=f'[kb]\n[paths]\n{key} = "{value}"\n', commit=True)
    r = run_script("ls", "experiments", "--json", cwd=root)
    assert r.code == 2 and "Traceback" not in r.stderr, (r.code, r.stderr)
    assert r.json()["error"]["message"].startswith("kb.toml:") and \
        f"lies in the folder of paths.{key} ('{value}')" in r.stdout, r.stdout
    ok = make_kb({"Logs/tree.md": TREE}, config=f'[kb]\n[paths]\n{key} = "{value}"\n'
                 'tree = "Logs/tree.md"\ndashboard = "Logs/DASHBOARD.md"\n', commit=True)
    assert run_script("ls", "hypotheses", "--json", cwd=ok).code == 0
