"""The CI templates of ``kb ci init``, run: a simulated pull (merge) request, a fresh
virtual environment that installs kb from a wheel built from this checkout through
the template's own install line, bash running the steps with the variables the
platform sets, and a loopback server standing in for the forge's API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import kb
from ci_sim import Api, build_wheel, clean_env, dependency_links, fresh_venv, run, run_github_job, run_gitlab_job
from conftest import EXAMPLES, commit_all, git, git_init, invoke

HEAD_REPO = "owner/research"


@pytest.fixture(scope="module")
def toolchain(tmp_path_factory):
    """(wheel, deps folder, work folder): built once for the module."""
    work = tmp_path_factory.mktemp("ci")
    wheel = build_wheel(work / "build")
    deps = dependency_links(work / "deps")
    return wheel, deps, work


def _origin_with_pr(tmp: Path, bad: bool) -> tuple[Path, str]:
    """A bare ``origin`` with ``main`` (the example KB) and ``feat`` (a pull request).

    ``bad``: the PR also removes a hypothesis by hand (a history violation) and
    leaves DASHBOARD.md stale. Returns (origin, head commit).
    """
    dev = tmp / "dev"
    shutil.copytree(EXAMPLES, dev, ignore=shutil.ignore_patterns(".kb", "__pycache__"))
    git_init(dev)
    commit_all(dev, "example KB")
    origin = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", str(origin))
    git(dev, "remote", "add", "origin", str(origin))
    git(dev, "push", "-q", "origin", "main")
    git(dev, "checkout", "-q", "-b", "feat")
    for args in (("hyp", "add", "Caching wheels halves setup", "--parent", "H1"),
                 ("exp", "new", "--hyp", "H1.3", "Warm the cache"),
                 ("exp", "result", "E005", "--data", "12 min to 6 min", "--conclusion", "支持",
                  "--reason", "halved")):
        r = invoke(*args, cwd=dev)
        assert r.code == 0, r.stderr
    if bad:
        tree = (dev / "tree.md").read_text(encoding="utf-8")
        start, end = tree.index("### H1.2:"), tree.index("### H1.3:")
        (dev / "tree.md").write_text(tree[:start] + tree[end:], encoding="utf-8")
        git(dev, "commit", "-q", "--no-verify", "-am", "drop H1.2 by hand")
    git(dev, "push", "-q", "origin", "feat")
    return origin, git(dev, "rev-parse", "HEAD")


def _checkout(origin: Path, dest: Path, head: str) -> Path:
    """actions/checkout with fetch-depth: 0 (every branch as origin/*), HEAD detached at ``head``."""
    git(dest.parent, "clone", "-q", "--no-checkout", str(origin), str(dest))
    git(dest, "checkout", "-q", "--detach", head)
    return dest


def _write_template(repo: Path, *args: str) -> Path:
    r = invoke("ci", "init", *args, "--json", cwd=repo)
    assert r.code == 0, r.stdout + r.stderr
    return repo / r.json()["path"]


@pytest.mark.parametrize("bad", [False, True], ids=["clean-pr", "violating-pr"])
def test_github_workflow_runs_in_a_simulated_pull_request(toolchain, tmp_path: Path, bad: bool) -> None:
    wheel, deps, _ = toolchain
    origin, head = _origin_with_pr(tmp_path, bad)
    ws = _checkout(origin, tmp_path / "workspace", head)
    wf_path = _write_template(ws, "--install", str(wheel), "--base", "main")
    workflow = yaml.safe_load(wf_path.read_text(encoding="utf-8"))
    wf_path.unlink()  # the workspace stays the PR's checkout
    assert workflow["jobs"]["kb"]["steps"][0]["with"]["fetch-depth"] == 0
    bindir = fresh_venv(tmp_path / "venv", deps)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    summary = temp / "summary.md"
    summary.write_text("")
    with Api() as api:
        env = clean_env(bindir, {
            "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_BASE_REF": "main", "GITHUB_HEAD_REF": "feat", "GITHUB_SHA": head,
            "GITHUB_REF": "refs/pull/7/merge", "GITHUB_REPOSITORY": HEAD_REPO,
            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_API_URL": api.url,
            "GITHUB_WORKSPACE": str(ws), "GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(temp)})
        ctx = {"github": {"event_name": "pull_request", "base_ref": "main", "head_ref": "feat",
                          "sha": head, "token": "ghs_test", "repository": HEAD_REPO,
                          "event": {"pull_request": {"number": 7}, "before": ""}},
               "vars": {"KB_PR_COMMENT": "true"}}
        steps = {s["name"]: s for s in run_github_job(workflow, "kb", ws, ctx, env, temp)}
    install = steps["Install kb"]
    assert install["code"] == 0, install["stderr"]
    # The kb that ran is the wheel's, in the fresh venv.
    where = run([str(bindir / "python"), "-c", "import kb; print(kb.__file__)"], tmp_path, env)
    assert where.startswith(str(tmp_path / "venv")), where
    assert run([str(bindir / "kb"), "--version"], tmp_path, env).strip() == f"kb {kb.__version__}"
    assert steps["Range"]["code"] == 0
    verify = steps["kb verify (every commit of the range)"]
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## Research diff") and "added `H1.3` under `H1`" in text, \
        steps["Research diff (job summary)"]["stderr"]
    assert "finished `E005` (`H1.3`): conclusion **支持**" in text
    [post] = api.posts
    assert post["path"] == f"/repos/{HEAD_REPO}/issues/7/comments"
    assert post["headers"]["Authorization"] == "Bearer ghs_test"
    assert post["json"]["body"].startswith("## Research diff")
    if not bad:
        assert verify["code"] == 0 and "::error" not in verify["stdout"], verify
        assert steps["kb dashboard --check"]["code"] == 0, steps["kb dashboard --check"]
        # The same job on the push that merges the branch: the range is before..HEAD, no comment.
        base = git(ws, "rev-parse", "origin/main")
        summary.write_text("")
        with Api() as api2:
            env.update({"GITHUB_EVENT_NAME": "push", "GITHUB_API_URL": api2.url, "GITHUB_BASE_REF": ""})
            ctx = {"github": {"event_name": "push", "base_ref": "", "sha": head, "token": "ghs_test",
                              "repository": HEAD_REPO, "event": {"before": base}},
                   "vars": {"KB_PR_COMMENT": "true"}}
            push = {s["name"]: s for s in run_github_job(workflow, "kb", ws, ctx, env, temp)}
        assert ctx["steps"]["range"]["outputs"]["range"] == f"{base}..HEAD"
        assert push["kb verify (every commit of the range)"]["code"] == 0
        assert not push["Research diff (pull-request comment, opt-in)"]["ran"] and api2.posts == []
        assert "added `H1.3` under `H1`" in summary.read_text(encoding="utf-8")
    else:
        assert verify["code"] == 1
        assert any(line.startswith("::error file=tree.md,line=") and "H1.2" in line
                   for line in verify["stdout"].splitlines()), verify["stdout"]
        assert not steps["kb dashboard --check"]["ran"]  # after a failed step, only always() steps
        assert "removed `H1.2`" in text and "### Rule findings" in text
        assert f"(https://github.com/{HEAD_REPO}/blob/{head}/tree.md#L" in text


def test_github_comment_step_is_opt_in(toolchain, tmp_path: Path) -> None:
    wheel, _, _ = toolchain
    root = EXAMPLES  # reading the template only: written into a scratch repository
    repo = git_init(tmp_path / "r")
    shutil.copy(root / "kb.toml", repo / "kb.toml")
    workflow = yaml.safe_load(_write_template(repo, "--install", str(wheel)).read_text(encoding="utf-8"))
    step = next(s for s in workflow["jobs"]["kb"]["steps"] if "comment" in (s.get("name") or ""))
    assert "vars.KB_PR_COMMENT == 'true'" in step["if"]
    from ci_sim import gh_eval

    cond = step["if"]
    assert gh_eval(cond, {"github": {"event_name": "pull_request"}, "vars": {}}) is False
    assert gh_eval(cond, {"github": {"event_name": "push"}, "vars": {"KB_PR_COMMENT": "true"}}) is False


@pytest.mark.parametrize("bad", [False, True], ids=["clean-mr", "violating-mr"])
def test_gitlab_job_runs_in_a_simulated_merge_request(toolchain, tmp_path: Path, bad: bool) -> None:
    wheel, deps, _ = toolchain
    origin, head = _origin_with_pr(tmp_path, bad)
    project = _checkout(origin, tmp_path / "project", head)
    path = _write_template(project, "--gitlab", "--install", str(wheel), "--base", "main")
    assert path.name == ".gitlab-ci.yml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    path.unlink()
    job = config["kb"]
    assert job["variables"]["GIT_DEPTH"] == "0"
    assert job["artifacts"]["reports"]["codequality"] == "gl-code-quality-report.json"
    bindir = fresh_venv(tmp_path / "venv", deps)
    with Api() as api:
        env = clean_env(bindir, {
            "GITLAB_CI": "true", "CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
            "CI_MERGE_REQUEST_IID": "3", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
            "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feat", "CI_COMMIT_SHA": head,
            "CI_PROJECT_DIR": str(project), "CI_PROJECT_ID": "42",
            "CI_PROJECT_URL": "https://gitlab.example/group/research",
            "CI_API_V4_URL": api.url + "/api/v4", "KB_MR_NOTE_TOKEN": "glpat-test"})
        proc = run_gitlab_job(config, "kb", project, env)
    assert proc.returncode == (1 if bad else 0), proc.stdout + proc.stderr
    report = json.loads((project / "gl-code-quality-report.json").read_text(encoding="utf-8"))
    assert isinstance(report, list)
    diff_md = (project / "kb-diff.md").read_text(encoding="utf-8")
    assert "added `H1.3` under `H1`" in diff_md
    [post] = api.posts
    assert post["path"] == "/api/v4/projects/42/merge_requests/3/notes"
    assert post["headers"]["PRIVATE-TOKEN"] == "glpat-test"
    assert post["json"]["body"] == diff_md
    if bad:
        crit = [i for i in report if i["severity"] == "critical"]
        assert crit and all(i["location"]["path"] and i["location"]["lines"]["begin"] >= 1 for i in crit)
        assert any(i["location"]["path"] == "tree.md" and "H1.2" in i["description"] for i in crit)
        assert len({i["fingerprint"] for i in report}) == len(report)
        assert "removed `H1.2`" in diff_md
    else:
        assert not [i for i in report if i["severity"] in ("critical", "major")]


def test_ci_init_refuses_without_a_reachable_source(tmp_path: Path) -> None:
    """The tests' kb is installed from this checkout (editable for a developer, a local
    folder under the README's test command): no source a CI machine can reach."""
    repo = git_init(tmp_path / "r")
    r = invoke("ci", "init", "--gitlab", "--json", cwd=repo)
    assert r.code == 1
    msg = r.json()["error"]["message"]
    assert "--install SPEC" in msg and "git+https://" in msg  # an example
    assert "editable" in msg or "local install" in msg
    assert "kb-research" not in msg  # never the distribution name as if an index served it
    assert not (repo / ".gitlab-ci.yml").exists()
