"""Parallel IDs across an upstream ``[paths]`` move: `kb sync` and the range check's
``--against`` read each side with its own kb.toml.

A fresh tester found that once the upstream moved ``tree.md`` to ``hyp.md`` (or the
experiments folder), an H2 both sides added went unseen: `kb sync` renumbered nothing, and
the merge it then made was refused by kb's own hook; ``kb verify --range … --against``
passed. Two clones of one bare remote, real hooks.
"""

from __future__ import annotations

from pathlib import Path

from conftest import git, invoke


def _ok(*args: str, cwd: Path) -> None:
    res = invoke(*args, cwd=cwd)
    assert res.code == 0, (args, res.stdout, res.stderr)


def _move(root: Path, old: str, new: str, key: str, monkeypatch) -> None:
    """``git mv old new`` with kb.toml's ``[paths] key`` set to ``new``, committed through
    the hooks with the override a move needs."""
    git(root, "mv", old, new)
    toml = (root / "kb.toml").read_text(encoding="utf-8")
    (root / "kb.toml").write_text(toml + f'\n[paths]\n{key} = "{new}"\n', encoding="utf-8")
    git(root, "add", "-A")
    monkeypatch.setenv("KB_OVERRIDE", f"paths.{key} reorg")
    git(root, "commit", "-q", "-m", f"move {key}\n\nKb-Override: paths.{key} reorg")
    monkeypatch.delenv("KB_OVERRIDE")


def test_sync_renumbers_across_an_upstream_tree_move(team, monkeypatch) -> None:
    a, b = team["a"], team["b"]
    _ok("hooks", "install", cwd=a)
    _ok("hooks", "install", cwd=b)
    _ok("hyp", "add", "A one", cwd=a)
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "origin", "main")
    _move(a, "tree.md", "hyp.md", "tree", monkeypatch)
    _ok("hyp", "add", "A two after the move", cwd=a)
    git(a, "push", "-q", "origin", "main")
    # b, in parallel, still with tree.md
    _ok("hyp", "add", "B two", cwd=b)
    _ok("hyp", "add", "B child", "--parent", "H1", cwd=b)
    git(b, "fetch", "-q")
    res = invoke("verify", "--range", "origin/main..HEAD", "--against", "origin/main", "--json", cwd=b)
    blocking = [d for d in res.json()["diagnostics"] if d["blocking"]]
    assert res.code == 1 and [(d["code"], d["path"]) for d in blocking] == [("KB350", "tree.md")], res.stdout
    assert "hyp.md:" in blocking[0]["message"]  # where the upstream declares its H2

    res = invoke("sync", "--json", cwd=b)
    data = res.json()
    assert res.code == 0, (res.stdout, res.stderr)
    assert data["renumbered"] == {"H2": "H3"} and data["merge"] == "merged"
    # sync regenerated the dashboard: the driver's "run `kb dashboard`" is not repeated
    assert data["dashboard_commit"] and not any("DASHBOARD.md" in n for n in data["notes"]), data
    assert not (b / "tree.md").exists()
    tree = (b / "hyp.md").read_text(encoding="utf-8")
    # merged hypothesis by hypothesis (the upstream's path named kb's driver): H1's
    # Children stays under H1
    assert [ln for ln in tree.splitlines() if ln.startswith("#")] == [
        "# Hypothesis Tree", "## H1: A one", "### H1.1: B child", "## H2: A two after the move",
        "## H3: B two"], tree
    assert "hyp.md merge=kb-tree" in (b / ".gitattributes").read_text(encoding="utf-8").splitlines()
    res = invoke("verify", "--json", cwd=b)
    assert res.code == 0, res.stdout
    res = invoke("verify", "--range", "origin/main..HEAD", "--against", "origin/main", cwd=b)
    assert res.code == 0, res.stdout


def _experiments_moved_upstream(team, monkeypatch, *added_upstream: str) -> tuple[Path, Path]:
    """E001 at the fork; `a` moves the experiments folder to exps/ (adding ``added_upstream``
    there) and pushes; `b` adds E002 under experiments/ in parallel."""
    a, b = team["a"], team["b"]
    _ok("hyp", "add", "A one", cwd=a)
    _ok("exp", "new", "--hyp", "H1", "A first", cwd=a)
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "origin", "main")
    _move(a, "experiments", "exps", "experiments", monkeypatch)
    for title in added_upstream:
        _ok("exp", "new", "--hyp", "H1", title, cwd=a)
    git(a, "push", "-q", "origin", "main")
    _ok("exp", "new", "--hyp", "H1", "B second", cwd=b)
    return a, b


def test_against_sees_experiments_an_upstream_move_placed(team, monkeypatch) -> None:
    _, b = _experiments_moved_upstream(team, monkeypatch, "A second")
    git(b, "fetch", "-q")
    res = invoke("verify", "--range", "origin/main..HEAD", "--against", "origin/main", "--json", cwd=b)
    blocking = [d for d in res.json()["diagnostics"] if d["blocking"]]
    assert res.code == 1 and [(d["code"], d["path"]) for d in blocking] == [
        ("KB350", "experiments/E002.md")], res.stdout
    res = invoke("sync", "--dry-run", cwd=b)
    assert res.code == 0 and res.stdout.splitlines() == ["E002 -> E003"], (res.stdout, res.stderr)


def test_an_agent_runs_the_pull_request_check_and_kb_sync_over_mcp(team) -> None:
    """MCP's `verify` takes `against` (and `rewrite`) as `kb verify` does, and `sync` is a
    tool: an agent can see KB350 and repair its branch without a shell."""
    import asyncio
    import json

    from mcp import Client

    from kb.mcp import build_server

    a, b = team["a"], team["b"]
    _ok("hyp", "add", "A one", cwd=a)
    git(a, "push", "-q", "origin", "main")
    _ok("hyp", "add", "B one", cwd=b)
    git(b, "fetch", "-q")

    async def session() -> tuple:
        async with Client(build_server(b)) as c:
            async def call(name: str, **args) -> tuple[bool, dict]:
                res = await c.call_tool(name, args)
                return res.is_error, json.loads(res.content[0].text)

            bad = await call("verify", against="origin/main")  # no range
            check = await call("verify", range="origin/main..HEAD", against="origin/main")
            dry = await call("sync", dry_run=True, fetch=False)
            done = await call("sync")
            after = await call("verify", range="origin/main..HEAD", against="origin/main")
            return bad, check, dry, done, after

    bad, check, dry, done, after = asyncio.run(session())
    assert bad[0] and bad[1]["error"]["kind"] == "usage", bad
    assert not check[0] and not check[1]["ok"] and \
        [d["code"] for d in check[1]["diagnostics"] if d["blocking"]] == ["KB350"], check
    assert dry[1]["renumbered"] == {"H1": "H2"} and dry[1]["merge"] == "not run", dry
    assert not done[0] and done[1]["ok"] and done[1]["merge"] == "merged", done
    assert after[1]["ok"], after
    assert "## H2: B one" in (b / "tree.md").read_text(encoding="utf-8")


def _grow_past_rename_detection(team, monkeypatch, mover: str) -> tuple[Path, Path]:
    """One hypothesis at the fork; ``mover`` moves the tree to hyp.md and adds two, the other
    adds two in tree.md: git no longer sees tree.md -> hyp.md as a rename."""
    a, b = team["a"], team["b"]
    for root in (a, b):
        _ok("hooks", "install", cwd=root)
    _ok("hyp", "add", "Base one", cwd=a)
    git(a, "push", "-q", "origin", "main")
    git(b, "pull", "-q", "origin", "main")
    stay = b if mover == "a" else a
    moving = team[mover]
    _move(moving, "tree.md", "hyp.md", "tree", monkeypatch)
    for n in ("two", "three"):
        _ok("hyp", "add", f"moved {n}", cwd=moving)
        _ok("hyp", "add", f"stayed {n}", cwd=stay)
    return moving, stay


def test_sync_merges_a_tree_git_lost_track_of_in_the_upstreams_move(team, monkeypatch) -> None:
    """A tester's team was blocked: after two `kb hyp add` on each side git stopped on
    `tree.md deleted in … and modified in HEAD`, and kb sync aborted."""
    moving, stay = _grow_past_rename_detection(team, monkeypatch, "a")
    git(moving, "push", "-q", "origin", "main")
    res = invoke("sync", "--json", cwd=stay)
    data = res.json()
    assert res.code == 0 and data["merge"] == "merged", (res.stdout, res.stderr)
    assert data["renumbered"] == {"H2": "H4", "H3": "H5"}
    assert not (stay / "tree.md").exists()
    heads = [ln for ln in (stay / "hyp.md").read_text(encoding="utf-8").splitlines()
             if ln.startswith("## ")]
    assert heads == ["## H1: Base one", "## H2: moved two", "## H3: moved three",
                     "## H4: stayed two", "## H5: stayed three"], heads
    assert invoke("verify", cwd=stay).code == 0


def test_sync_merges_its_own_move_with_an_upstream_that_edited_the_old_tree(team, monkeypatch) -> None:
    moving, stay = _grow_past_rename_detection(team, monkeypatch, "b")
    git(stay, "push", "-q", "origin", "main")
    res = invoke("sync", "--json", cwd=moving)
    data = res.json()
    assert res.code == 0 and data["merge"] == "merged", (res.stdout, res.stderr)
    tree = (moving / "hyp.md").read_text(encoding="utf-8")
    assert "## H2: stayed two" in tree and "## H4: moved two" in tree and not (moving / "tree.md").exists()
    assert invoke("verify", cwd=moving).code == 0


def test_sync_carries_an_experiment_added_under_a_folder_the_upstream_moved(team, monkeypatch) -> None:
    """git's default (`merge.directoryRenames=conflict`) stopped on every experiment the
    branch added under the old folder, with no ID collision at all."""
    _, b = _experiments_moved_upstream(team, monkeypatch)
    res = invoke("sync", "--json", cwd=b)
    assert res.code == 0 and res.json()["merge"] == "merged", (res.stdout, res.stderr)
    assert (b / "exps" / "E002.md").is_file() and not (b / "experiments").exists()
    assert invoke("verify", cwd=b).code == 0
