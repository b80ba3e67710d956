"""Differential check of verify's caches (issue 18): random edits, cached vs cold.

The hook and CI paths reuse what earlier checks stored -- per-blob parses and
rule results, HEAD's snapshot results, per-rule results kept when a change
leaves what the rule reads alone, light reads of untouched cards in a range.
Each of those is a chance to report something other than what a check from
nothing reports. Here a seeded sequence of edits of the kinds a team makes
(anchor values, dependency lists and their spacing, IDs made duplicate,
files moved, deleted and added, prose shifting lines, statuses, experiment
links) is staged one at a time; after each, ``kb verify --staged`` on the warm
cache must give exactly the report of the same check with no ``.kb/`` at all.
Some steps are committed without a hook (what a pull or ``--no-verify`` does),
and at the end ``kb verify --range`` over the whole history must report the
same in the warm clone and in a fresh clone.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest

from conftest import commit_all, git
from test_verify_support import experiment, make_repo, problem, proposition, verify_json

PROBLEMS = [f"q{i}" for i in range(2, 8)]


def _start_files() -> dict[str, str]:
    files = {f"Problems/{q}.md": problem(q) for q in PROBLEMS}
    files["Problems/q3.md"] = problem("q3", depends='["q2"]')
    files["Problems/q2.md"] = problem("q2", depended_by='["q3"]')
    files["Propos/代数/p2.md"] = proposition("p2", depends='["p3"]')
    files["Propos/代数/p3.md"] = proposition("p3")
    files["experiments/E002.md"] = experiment("E002", hyp="H2")
    return files


def _cards(root: Path) -> list[Path]:
    return sorted(p for p in (root / "Problems").glob("*.md")) + \
        sorted(p for p in (root / "Propos").rglob("*.md"))


def _edit(path: Path, old: str, new: str) -> bool:
    text = path.read_text(encoding="utf-8")
    if old not in text:
        return False
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return True


def _set_anchor(path: Path, key: str, value: str) -> bool:
    text = path.read_text(encoding="utf-8")
    new, n = re.subn(rf"^- {re.escape(key)}: .*$", f"- {key}: {value}", text, count=1, flags=re.M)
    if not n or new == text:
        return False
    path.write_text(new, encoding="utf-8")
    return True


def _list_of(path: Path, key: str) -> list[str]:
    m = re.search(rf"^- {re.escape(key)}: \[(.*)\]$", path.read_text(encoding="utf-8"), re.M)
    return re.findall(r'"([^"]+)"', m.group(1)) if m else []


def _mutate(root: Path, rng: random.Random, step: int) -> str:
    """Apply one random edit; returns what it did (for the failure message)."""
    cards = _cards(root)
    card = rng.choice(cards)
    other = rng.choice(PROBLEMS + ["p2", "p3", "q99"])
    kind = rng.choice(["priority", "depends", "depended_by", "spacing", "duplicate_id", "delete",
                       "add", "lines", "status", "move", "experiment", "tree", "prose"])
    if kind == "priority":
        _set_anchor(card, "优先级", str(rng.randint(0, 9)))
    elif kind == "depends":
        deps = _list_of(card, "依赖")
        deps = deps[:-1] if deps and rng.random() < 0.4 else deps + [other]
        _set_anchor(card, "依赖", "[" + ",".join(f'"{d}"' for d in deps) + "]")
    elif kind == "depended_by":
        back = _list_of(card, "被依赖") + [other]
        _set_anchor(card, "被依赖", "[" + ",".join(f'"{d}"' for d in back) + "]")
    elif kind == "spacing":  # the same list, spaced otherwise
        for key in ("依赖", "被依赖"):
            items = _list_of(card, key)
            if items:
                _set_anchor(card, key, "[" + ", ".join(f'"{d}"' for d in items) + " ]")
                break
    elif kind == "duplicate_id":
        _set_anchor(card, "ID", other)
    elif kind == "delete":
        if len(cards) > 4:
            card.unlink()
    elif kind == "add":
        new = root / "Problems" / f"q{20 + step}.md"
        new.write_text(problem(f"q{20 + step}", depends=f'["{other}"]'), encoding="utf-8")
    elif kind == "lines":  # prose above the anchors: every anchor line moves
        _edit(card, "\n- 标题", "\n\nA note above the anchors.\n- 标题")
    elif kind == "status":
        _set_anchor(card, "状态", rng.choice(["求解中", "已解决", "未定论", "已验证·真", "搁置"]))
    elif kind == "move":
        dest = card.with_name(f"moved{step}-{card.name}")
        git(root, "mv", str(card.relative_to(root)), str(dest.relative_to(root)))
    elif kind == "experiment":
        e2 = root / "experiments" / "E002.md"
        hyp = rng.choice(["H1", "H2", "H1.1", "H9"])
        _edit(e2, e2.read_text(encoding="utf-8").split("**Hypothesis**: ")[1].split(" ")[0] + " ",
              hyp + " ")
    elif kind == "tree":
        tree = root / "tree.md"
        _edit(tree, "Status: 待验", rng.choice(["Status: 进行中", "Status: 待验\n\nprose line"]))
    else:
        card.write_text(card.read_text(encoding="utf-8") + f"\nMore prose {step}.\n", encoding="utf-8")
    return f"{kind} {card.name} {other}"


def _cold(root: Path, *args: str):
    """The same check with no cache at all (the warm ``.kb/`` put back afterwards)."""
    saved = root.parent / (root.name + "-kb-saved")
    shutil.move(str(root / ".kb"), str(saved))
    try:
        return verify_json(root, *args)
    finally:
        shutil.rmtree(root / ".kb", ignore_errors=True)
        shutil.move(str(saved), str(root / ".kb"))


@pytest.mark.parametrize("seed", range(4))
def test_cached_checks_report_what_a_check_from_nothing_reports(make_kb, tmp_path, seed) -> None:
    rng = random.Random(seed)
    root = make_repo(make_kb, _start_files())
    start = git(root, "rev-parse", "HEAD").strip()
    assert verify_json(root, "--rev", "HEAD")[0] in (0, 1)  # HEAD's results stored, as the hook does
    done = []
    for step in range(8):
        done.append(_mutate(root, rng, step))
        git(root, "add", "-A")
        warm = verify_json(root, "--staged")
        assert warm == _cold(root, "--staged"), f"seed {seed}, after: {done}"
        if rng.random() < 0.5:  # committed without a hook: the next check starts "after a pull"
            commit_all(root, f"step {step}")
        elif rng.random() < 0.5:
            verify_json(root, "--rev", "HEAD")
    commit_all(root, "last")
    spec = f"{start}..HEAD"
    warm = verify_json(root, "--range", spec)
    fresh = tmp_path / f"fresh-{seed}"
    git(tmp_path, "clone", "-q", str(root), str(fresh))
    assert not (fresh / ".kb").exists()
    assert verify_json(fresh, "--range", spec) == warm, f"seed {seed}, after: {done}"
    assert verify_json(root, "--range", spec) == warm  # and again on the now warmer cache
