"""Running CI templates locally: a fresh virtual environment that installs kb offline,
GitHub Actions steps and GitLab CI scripts run by bash with the variables each
platform sets, and a loopback HTTP server standing in for the forge's API.

Offline install: the new venv gets a ``.pth`` line naming a folder of links to
kb's dependencies as installed in the environment running the tests (never
kb itself), so ``pip install <the wheel>`` with ``PIP_NO_INDEX=1`` finds every
requirement already satisfied and installs only the wheel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Mapping, Optional

from conftest import REPO_ROOT

SOURCES = ("kb", "cli", "templates", "hooks", "pyproject.toml", "setup.py", "README.md", "LICENSE")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dependency_links(dest: Path) -> Path:
    """A folder of symlinks to every installed distribution kb-research requires
    (transitively, no extras), as they are installed here; kb itself is left out."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    dists = {_norm(d.metadata["Name"] or ""): d for d in md.distributions()}
    seen: set[tuple[str, str]] = set()
    # (requirement, the extra it was asked with): ``pyjwt[crypto]`` brings in the
    # requirements of pyjwt whose marker is ``extra == "crypto"``
    todo = [(r, "") for r in dists["kb-research"].requires or []]
    dest.mkdir(parents=True, exist_ok=True)
    for _ in range(5000):  # bounded walk of the requirement graph
        if not todo:
            break
        text, extra = todo.pop()
        req = Requirement(text)
        if req.marker and not req.marker.evaluate({"extra": extra}):
            continue
        name = _norm(req.name)
        if name == "kb-research":
            continue
        d = dists[name]
        for want in ("", *sorted(req.extras)):
            if (name, want) not in seen:
                seen.add((name, want))
                todo += [(r, want) for r in d.requires or []]
        base = Path(str(d.locate_file("")))
        for f in d.files or []:
            top = Path(str(f)).parts[0]
            if top == ".." or (dest / top).exists():
                continue
            if (base / top).exists():
                (dest / top).symlink_to(base / top)
    return dest


def build_wheel(work: Path) -> Path:
    """The wheel of a copy of the checkout (``pip wheel --no-deps --no-build-isolation``)."""
    src = work / "src"
    src.mkdir(parents=True)
    for name in SOURCES:
        p = REPO_ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns(
                "__pycache__", "*.pyc", "*.egg-info", ".kb"))
        elif p.is_file():
            shutil.copy2(p, src / name)
    dist = work / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(src)], work)
    [wheel] = list(dist.glob("kb_research-*.whl"))
    return wheel


def fresh_venv(path: Path, deps: Path) -> Path:
    """A new venv (with pip) whose only extra packages are ``deps``; its bin folder."""
    base = getattr(sys, "_base_executable", sys.executable)
    run([base, "-m", "venv", str(path)], path.parent)
    bindir = path / "bin"
    purelib = run([str(bindir / "python"), "-I", "-c",
                   "import sysconfig; print(sysconfig.get_paths()['purelib'])"], path.parent).strip()
    (Path(purelib) / "_kb_ci_deps.pth").write_text(str(deps) + "\n", encoding="utf-8")
    return bindir


def clean_env(bindir: Optional[Path] = None, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """The test's git environment without Python's or a venv's variables; ``bindir`` first
    on PATH; pip offline."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "PIP_", "GITHUB_", "CI_", "RUNNER_")) and k not in ("VIRTUAL_ENV", "CI")}
    env["PIP_NO_INDEX"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    if bindir is not None:
        env["PATH"] = f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin"
    env.update(extra or {})
    return env


def run(args: list[str], cwd: Path, env: Optional[Mapping[str, str]] = None, timeout: float = 600) -> str:
    full = clean_env() if env is None else dict(env)
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=full, timeout=timeout)
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# -- a forge API on loopback -------------------------------------------------------


class Api:
    """A loopback HTTP server recording every POST (path, headers, JSON body); 201 replies."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                size = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(size)
                outer.posts.append({"path": self.path, "headers": dict(self.headers),
                                    "json": json.loads(body.decode("utf-8"))})
                self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"id": 1}')

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Api":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


# -- GitHub Actions ----------------------------------------------------------------

_TOKEN = re.compile(r"\s*(\|\||&&|==|!=|\(|\)|'[^']*'|[A-Za-z_][\w.-]*(?:\(\))?)")


def gh_eval(expr: str, ctx: Mapping[str, Any]) -> Any:
    """A GitHub expression of the subset the templates use: context paths, 'strings',
    ``always()``, ``==``, ``!=``, ``&&``, ``||`` (``||``/``&&`` return an operand, as GitHub's do)."""
    toks = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        assert m, f"unsupported expression {expr!r} at {pos}"
        toks.append(m.group(1))
        pos = m.end()

    def value(t: str) -> Any:
        if t.startswith("'"):
            return t[1:-1]
        if t == "always()":
            return True
        if t in ("true", "false"):
            return t == "true"
        cur: Any = ctx
        for part in t.split("."):
            cur = cur.get(part, "") if isinstance(cur, Mapping) else ""
        return cur

    def parse_or(i: int) -> tuple[Any, int]:
        v, i = parse_and(i)
        while i < len(toks) and toks[i] == "||":
            w, i = parse_and(i + 1)
            v = v or w
        return v, i

    def parse_and(i: int) -> tuple[Any, int]:
        v, i = parse_cmp(i)
        while i < len(toks) and toks[i] == "&&":
            w, i = parse_cmp(i + 1)
            v = v and w
        return v, i

    def parse_cmp(i: int) -> tuple[Any, int]:
        v = value(toks[i])
        i += 1
        while i < len(toks) and toks[i] in ("==", "!="):
            w = value(toks[i + 1])
            v = (str(v) == str(w)) if toks[i] == "==" else (str(v) != str(w))
            i += 2
        return v, i

    v, i = parse_or(0)
    assert i == len(toks), f"unparsed tokens in {expr!r}: {toks[i:]}"
    return v


def gh_subst(text: str, ctx: Mapping[str, Any]) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(gh_eval(m.group(1), ctx)), text)


def run_github_job(workflow: dict, job: str, workspace: Path, ctx: dict[str, Any],
                   env: dict[str, str], runner_temp: Path) -> list[dict[str, Any]]:
    """Run a job's ``run`` steps with bash as GitHub does (``bash -e -o pipefail``);
    ``uses`` steps are the caller's (checkout and setup-python done beforehand).

    Returns one record per step: name, ran, exit code, stdout, stderr.
    """
    spec = workflow["jobs"][job]
    wdir = spec.get("defaults", {}).get("run", {}).get("working-directory", ".")
    base_env = dict(env)
    for k, v in (workflow.get("env") or {}).items():
        base_env[k] = gh_subst(str(v), ctx)
    for k, v in (spec.get("env") or {}).items():
        base_env[k] = gh_subst(str(v), ctx)
    ctx.setdefault("steps", {})
    out = []
    failed = False
    for step in spec["steps"]:
        if "run" not in step:
            continue
        cond = step.get("if")
        if cond is None:
            ran = not failed
        else:
            c = cond[3:-2] if cond.startswith("${{") else cond
            ran = bool(gh_eval(c, {**ctx, "always": True})) and (not failed or "always()" in c)
        if not ran:
            out.append({"name": step.get("name"), "ran": False})
            continue
        output = runner_temp / f"output-{len(out)}"
        output.write_text("")
        senv = dict(base_env, GITHUB_OUTPUT=str(output))
        for k, v in (step.get("env") or {}).items():
            senv[k] = gh_subst(str(v), ctx)
        script = runner_temp / f"step-{len(out)}.sh"
        script.write_text(gh_subst(step["run"], ctx), encoding="utf-8")
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=workspace / wdir, env=senv, capture_output=True, text=True, timeout=600)
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        if step.get("id"):
            ctx["steps"][step["id"]] = {"outputs": outputs}
        out.append({"name": step.get("name"), "ran": True, "code": proc.returncode,
                    "stdout": proc.stdout, "stderr": proc.stderr})
        failed = failed or proc.returncode != 0
    return out


def run_gitlab_job(config: dict, job: str, project_dir: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """A GitLab job's ``before_script`` + ``script`` in one bash session (``set -eo pipefail``,
    as the shell executor runs them), with the job's ``variables`` exported."""
    spec = config[job]
    full = dict(env)
    for k, v in (spec.get("variables") or {}).items():
        full[k] = str(v)
    lines = ["set -eo pipefail", *(spec.get("before_script") or []), *spec["script"]]
    script = project_dir.parent / f"{job}-script.sh"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return subprocess.run(["bash", "--noprofile", "--norc", str(script)], cwd=project_dir, env=full,
                          capture_output=True, text=True, timeout=600)
