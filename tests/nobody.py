"""Running kb as the unprivileged user ``nobody`` (permissions do not apply to root, and CI
runs the suite as root): a fixture giving the command prefix, its environment and a folder
``nobody`` owns, and a runner. Skips (never fails) where that cannot be set up."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Iterator

import pytest


def system_python() -> str | None:
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(cand):
            out = subprocess.run([cand, "-c", "import sys; print(sys.version_info[:2])"],
                                 capture_output=True, text=True)
            if out.returncode == 0 and out.stdout.strip() == str(sys.version_info[:2]):
                return cand
    return None


@pytest.fixture(scope="module")
def nobody_env() -> Iterator[tuple[list[str], dict[str, str], Path]]:
    """(command prefix running ``kb`` as ``nobody``, environment, a folder ``nobody`` owns)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run kb as another user (CI runs the suite as root)")
    import pwd

    try:
        user = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no unprivileged user 'nobody' on this machine")
    py = system_python()
    if py is None:
        pytest.skip("no system Python of this interpreter's version for the unprivileged user")
    base = Path(tempfile.mkdtemp(prefix="kb-nobody-"))
    try:
        os.chmod(base, 0o755)
        venv = base / "venv"
        subprocess.run([py, "-m", "venv", "--without-pip", str(venv)], check=True)
        site = subprocess.run([str(venv / "bin" / "python"), "-c",
                               "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()
        # This installation's packages (and, for an editable install, its sources).
        mine = sysconfig.get_paths()["purelib"]
        src = str(Path(__file__).resolve().parents[1])
        Path(site, "kb-under-test.pth").write_text(
            f"import site; site.addsitedir({mine!r})\n{src}\n", encoding="utf-8")
        work = base / "work"
        work.mkdir()
        os.chown(work, user.pw_uid, user.pw_gid)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["HOME"] = str(work)
        (work / ".gitconfig").write_text(
            "[user]\n\tname = KB Test\n\temail = kb-test@example.invalid\n"
            "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
        os.chown(work / ".gitconfig", user.pw_uid, user.pw_gid)
        probe = subprocess.run(["runuser", "-u", "nobody", "--", str(venv / "bin" / "python"),
                                "-c", "import kb_cli.main, kb.index"], capture_output=True,
                               text=True, env=env)
        if probe.returncode != 0:
            pytest.skip(f"the unprivileged user cannot import kb: {probe.stderr.strip()[-200:]}")
        yield ["runuser", "-u", "nobody", "--", str(venv / "bin" / "python"), "-c",
               "import sys; from kb_cli.main import main; sys.exit(main())"], \
            env, work
    finally:
        shutil.rmtree(base, ignore_errors=True)


def as_nobody(prefix: list[str], env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
