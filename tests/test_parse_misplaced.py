"""KB108 (kb/parse/misplaced.py): a Markdown file under a folder of cards or experiments where
kb reads none is a warning naming the file, never silence (acceptance finding: a card in
Problems/sub/ was ignored without a word); kb index and every kb verify mode agree."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import commit_all, git, git_init, run_script, write_files

CARD = ("# 问题｜P001\n- 标题: P001\n- ID: P001\n- 类型: 问题\n- 状态: 求解中\n- 优先级: 1\n"
        "- 依赖: []\n- 被依赖: []\n- 来源: 原始\n- 计划: \n\n## 陈述\nS.\n\n## 解法候选\n（暂无解法候选）\n")


def _kb108(res) -> list[tuple[str, int, str]]:
    return sorted((d["path"], d["line"], d["message"]) for d in json.loads(res.stdout)["diagnostics"]
                  if d["code"] == "KB108")


def test_a_card_in_a_subfolder_is_a_warning_in_index_and_every_verify_mode(tmp_path: Path) -> None:
    root = git_init(tmp_path / "r")
    write_files(root, {"kb.toml": "[kb]\n", ".gitignore": ".kb/\n", "tree.md": "# T\n"})
    commit_all(root, "kb")
    write_files(root, {"Problems/sub/P001-x.md": CARD, "Propos/P002.md": CARD,
                       "Problems/sub/notes.txt": "not markdown\n"})
    idx = run_script("index", "--json", cwd=root)
    got = sorted((d["path"], d["line"], d["code"]) for d in json.loads(idx.stdout)["diagnostics"])
    assert got == [("Problems/sub/P001-x.md", 1, "KB108"), ("Propos/P002.md", 1, "KB108")], idx.stdout
    work = run_script("verify", "--format", "json", cwd=root)
    assert work.code == 0  # a warning: nothing blocks
    (sub, propos) = _kb108(work)
    assert sub[:2] == ("Problems/sub/P001-x.md", 1)
    assert "is not read by kb" in sub[2] and "Problems/<id>.md" in sub[2]
    assert propos[:2] == ("Propos/P002.md", 1) and "Propos/<category>/<id>.md" in propos[2]
    git(root, "add", "-A")
    staged = run_script("verify", "--staged", "--format", "json", cwd=root)
    assert staged.code == 0 and _kb108(staged) == _kb108(work), staged.stdout
    commit_all(root, "cards in the wrong place")
    for args in (("--rev", "HEAD"), ("--range", "HEAD~1..HEAD")):
        r = run_script("verify", *args, "--format", "json", cwd=root)
        assert r.code == 0 and _kb108(r) == _kb108(work), (args, r.stdout)
    # Moved where cards go, it is read (and the warning is gone).
    git(root, "mv", "Problems/sub/P001-x.md", "Problems/P001.md")
    git(root, "rm", "-q", "Propos/P002.md")
    after = run_script("verify", "--format", "json", cwd=root)
    assert _kb108(after) == []
    assert "P001" in run_script("ls", "--json", cwd=root).stdout


def test_configured_folders_and_the_kb_root_as_a_folder(tmp_path: Path) -> None:
    """The folders are kb.toml's; a folder set to the KB's root has no 'elsewhere'."""
    root = git_init(tmp_path / "r")
    # (the tree and dashboard in a folder of their own: a folder of records at the top
    # would hold them, which kb.toml refuses)
    write_files(root, {"kb.toml": '[kb]\n[paths]\nproblems = "cards/problems"\nexperiments = "."\n'
                                  'tree = "Logs/tree.md"\ndashboard = "Logs/DASHBOARD.md"\n',
                       ".gitignore": ".kb/\n", "Logs/tree.md": "# T\n",
                       "cards/problems/deep/P001.md": CARD, "notes/E001.md": "# E001: H1 - x\n",
                       "Problems/sub/P002.md": CARD})
    commit_all(root, "kb")
    idx = run_script("index", "--json", cwd=root)
    got = [(d["path"], d["code"]) for d in json.loads(idx.stdout)["diagnostics"]]
    assert got == [("cards/problems/deep/P001.md", "KB108")], idx.stdout
    msg = json.loads(idx.stdout)["diagnostics"][0]["message"]
    assert "cards/problems/<id>.md" in msg
