"""The CI templates of ``kb ci init``, run: a simulated pull (merge) request, a fresh
virtual environment that installs kb from a wheel built from this checkout through
the template's own install line, bash running the steps with the variables the
platform sets, and a loopback server standing in for the forge's API."""

from __future__ import annotations

import json
import shutil
import subprocess
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


def _merge_request(project: Path, head: str, api: str) -> dict[str, str]:
    """The variables GitLab gives a merge-request pipeline of branch feat into main."""
    return {"GITLAB_CI": "true", "CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
            "CI_MERGE_REQUEST_IID": "3", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
            "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feat", "CI_COMMIT_SHA": head,
            "CI_PROJECT_DIR": str(project), "CI_PROJECT_ID": "42",
            "CI_PROJECT_URL": "https://gitlab.example/group/research",
            "CI_API_V4_URL": api + "/api/v4"}


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
        env = clean_env(bindir, {**_merge_request(project, head, api.url),
                                 "KB_MR_NOTE_TOKEN": "glpat-test"})
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


# -- what the templates pass: the merge request's target, a push's old tip ---------------


def test_both_templates_pass_the_target_and_never_fall_back_silently(tmp_path: Path) -> None:
    """The text `kb ci init` writes: a pull (merge) request is checked `--against` its
    target in both; a push's old tip is fetched when this clone lacks it (a force push),
    the job fails when it cannot be; only a push with no old tip checks the last commit,
    and says so."""
    repo = git_init(tmp_path / "r")
    shutil.copy(EXAMPLES / "kb.toml", repo / "kb.toml")
    texts = {}
    for flag in ("", "--gitlab"):
        args = [flag] if flag else []
        texts[flag or "github"] = _write_template(repo, *args, "--install", "kb-research==0.1.11",
                                                  "--base", "trunk").read_text(encoding="utf-8")
    github, gitlab = texts["github"], texts["--gitlab"]
    assert 'echo "against=origin/$KB_BASE"' in github and '--against "$KB_AGAINST"' in github
    assert 'KB_AGAINST="origin/$KB_BASE"' in gitlab
    job = yaml.safe_load(gitlab)["kb"]
    [verify] = [line for line in job["script"] if line.startswith("kb verify")]
    assert '${KB_AGAINST:+--against "$KB_AGAINST"}' in verify
    for text, before, last in ((github, "$BEFORE", "range=HEAD~1..HEAD"),
                               (gitlab, "$CI_COMMIT_BEFORE_SHA", 'KB_RANGE="HEAD~1..HEAD"')):
        assert f'git fetch --no-tags --quiet origin "{before}"' in text
        assert "cannot be fetched" in text and "exit 2" in text
        # HEAD~1..HEAD only when there is no old tip, and said
        assert text.count(last) == 1 and text.count("HEAD~1..HEAD") == 2 and "no old tip" in text
        assert "it never checks less than the push" in text  # the comments say which


def _origin_with_force_push(tmp: Path) -> tuple[Path, str, str]:
    """A bare ``origin`` whose ``main`` was force-pushed: the old tip (H1.3 and E005
    added to the example KB) replaced by the example KB plus another H1.3.
    Returns (origin, old tip, new tip)."""
    dev = tmp / "dev"
    shutil.copytree(EXAMPLES, dev, ignore=shutil.ignore_patterns(".kb", "__pycache__"))
    git_init(dev)
    commit_all(dev, "example KB")
    start = git(dev, "rev-parse", "HEAD")
    origin = tmp / "origin.git"
    git(tmp, "init", "-q", "--bare", str(origin))
    git(dev, "remote", "add", "origin", str(origin))
    for args in (("hyp", "add", "Caching wheels halves setup", "--parent", "H1"),
                 ("exp", "new", "--hyp", "H1.3", "Warm the cache")):
        r = invoke(*args, cwd=dev)
        assert r.code == 0, r.stderr
    git(dev, "push", "-q", "origin", "main")
    old = git(dev, "rev-parse", "HEAD")
    git(dev, "reset", "-q", "--hard", start)
    r = invoke("hyp", "add", "Sharding the suite over runners", "--parent", "H1", cwd=dev)
    assert r.code == 0, r.stderr
    git(dev, "push", "-q", "--force", "origin", "main")
    return origin, old, git(dev, "rev-parse", "HEAD")


def _fresh_clone(origin: Path, dest: Path, head: str, lacks: str) -> Path:
    """A clone over git's transport (not a local copy of every object), HEAD detached at
    ``head``: a force push's old tip ``lacks`` is on no branch, so it is not here."""
    git(dest.parent, "clone", "-q", "--no-local", "--no-checkout", str(origin), str(dest))
    git(dest, "checkout", "-q", "--detach", head)
    assert subprocess.run(["git", "cat-file", "-e", f"{lacks}^{{commit}}"], cwd=dest,
                          capture_output=True).returncode != 0
    return dest


GONE = "1234567890" * 4


@pytest.mark.parametrize("before", ["old-tip", "gone"])
def test_github_push_job_judges_a_force_push(toolchain, tmp_path: Path, before: str) -> None:
    wheel, deps, _ = toolchain
    origin, old, new = _origin_with_force_push(tmp_path)
    ws = _fresh_clone(origin, tmp_path / "workspace", new, old)
    wf_path = _write_template(ws, "--install", str(wheel), "--base", "main")
    workflow = yaml.safe_load(wf_path.read_text(encoding="utf-8"))
    wf_path.unlink()
    bindir = fresh_venv(tmp_path / "venv", deps)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    summary = temp / "summary.md"
    summary.write_text("")
    sha = old if before == "old-tip" else GONE
    with Api() as api:
        env = clean_env(bindir, {
            "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_EVENT_NAME": "push", "GITHUB_SHA": new,
            "GITHUB_REF": "refs/heads/main", "GITHUB_REPOSITORY": HEAD_REPO,
            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_API_URL": api.url,
            "GITHUB_WORKSPACE": str(ws), "GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(temp)})
        ctx = {"github": {"event_name": "push", "base_ref": "", "sha": new, "token": "ghs_test",
                          "repository": HEAD_REPO, "event": {"before": sha}},
               "vars": {"KB_PR_COMMENT": "true"}}
        steps = {s["name"]: s for s in run_github_job(workflow, "kb", ws, ctx, env, temp)}
    assert steps["Install kb"]["code"] == 0, steps["Install kb"]["stderr"]
    rng, verify = steps["Range"], steps["kb verify (every commit of the range)"]
    if before == "old-tip":
        assert rng["code"] == 0, rng
        assert ctx["steps"]["range"]["outputs"]["range"] == f"{old}..HEAD"
        assert verify["code"] == 1, verify
        errors = [ln for ln in verify["stdout"].splitlines() if ln.startswith("::error")]
        assert any("KB301" in ln and "E005" in ln for ln in errors), verify["stdout"]
        assert any("KB302" in ln and "H1.3" in ln for ln in errors), verify["stdout"]
        assert "not an ancestor" in verify["stderr"]
    else:
        assert rng["code"] == 2 and f"::error title=kb::the push's old tip {GONE}" in rng["stdout"], rng
        assert not verify["ran"] and not steps["Research diff (job summary)"]["ran"]
    assert api.posts == []


@pytest.mark.parametrize("before", ["old-tip", "gone"])
def test_gitlab_push_job_judges_a_force_push(toolchain, tmp_path: Path, before: str) -> None:
    wheel, deps, _ = toolchain
    origin, old, new = _origin_with_force_push(tmp_path)
    project = _fresh_clone(origin, tmp_path / "project", new, old)
    path = _write_template(project, "--gitlab", "--install", str(wheel), "--base", "main")
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    path.unlink()
    bindir = fresh_venv(tmp_path / "venv", deps)
    sha = old if before == "old-tip" else GONE
    env = clean_env(bindir, {
        "GITLAB_CI": "true", "CI": "true", "CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main",
        "CI_COMMIT_BEFORE_SHA": sha, "CI_COMMIT_SHA": new, "CI_PROJECT_DIR": str(project),
        "CI_PROJECT_ID": "42", "CI_PROJECT_URL": "https://gitlab.example/group/research",
        "CI_API_V4_URL": "http://127.0.0.1:9/api/v4"})
    proc = run_gitlab_job(config, "kb", project, env)
    if before == "old-tip":
        assert proc.returncode == 1, proc.stdout + proc.stderr
        report = json.loads((project / "gl-code-quality-report.json").read_text(encoding="utf-8"))
        crit = [i for i in report if i["severity"] == "critical"]
        assert any(i["check_name"] == "KB301" and "E005" in i["description"] for i in crit), report
        assert "not an ancestor" in proc.stderr
    else:
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"kb: the push's old tip {GONE} cannot be fetched" in proc.stderr
        assert not (project / "gl-code-quality-report.json").exists()


def test_gitlab_merge_request_is_checked_against_its_target(toolchain, tmp_path: Path) -> None:
    """Both the merge request and its target, since they parted, added H1.3: KB350, as
    GitHub's pull-request check reports it (the target is passed with --against)."""
    wheel, deps, _ = toolchain
    origin, head = _origin_with_pr(tmp_path, bad=False)
    dev = tmp_path / "dev"
    git(dev, "checkout", "-q", "main")
    r = invoke("hyp", "add", "Sharding the suite over runners", "--parent", "H1", cwd=dev)
    assert r.code == 0, r.stderr
    git(dev, "push", "-q", "origin", "main")
    project = _checkout(origin, tmp_path / "project", head)
    path = _write_template(project, "--gitlab", "--install", str(wheel), "--base", "main")
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    path.unlink()
    bindir = fresh_venv(tmp_path / "venv", deps)
    env = clean_env(bindir, _merge_request(project, head, "http://127.0.0.1:9"))
    proc = run_gitlab_job(config, "kb", project, env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    report = json.loads((project / "gl-code-quality-report.json").read_text(encoding="utf-8"))
    hits = [i for i in report if i["check_name"] == "KB350"]
    assert hits and all(i["severity"] == "critical" for i in hits), report
    assert any("H1.3" in i["description"] for i in hits)
    # the reviewer's research diff says what the check says (it was "no problems")
    diff = (project / "kb-diff.md").read_text(encoding="utf-8")
    assert "KB350" in diff and "H1.3" in diff
