"""Where the running kb was installed from, as a ``pip install`` argument CI can use.

The installed distribution's metadata says it (PEP 610, ``direct_url.json``):

- no ``direct_url.json``: installed from a package index -> ``kb-research==<version>``;
- ``vcs_info``: a VCS URL -> ``git+<url>@<commit>`` (the exact commit, not the branch);
- ``archive_info`` at an ``http(s)`` URL -> that URL (a wheel or sdist on a server);
- a local folder (an editable or ``pip install .`` install) or a local file: CI cannot
  reach it, so there is no source; the caller must be given one (``--install SPEC``).

Never a name no index has: kb's distribution name is only used when the
metadata says it came from an index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional
from kb import json_input

DIST = "kb-research"


@dataclass(frozen=True)
class InstallSource:
    """``spec`` is what ``pip install`` takes (None: no source CI can reach);
    ``how`` says where it came from (``index``, ``vcs``, ``url``, ``local``, ``unknown``);
    ``detail`` explains it in a sentence (the folder or file for ``local``)."""

    spec: Optional[str]
    how: str
    detail: str


def _dist():  # type: ignore[no-untyped-def]
    """The installed kb distribution: a pip-installed ``.dist-info`` first (a stray
    ``.egg-info`` in a source checkout on ``sys.path`` says nothing about the install)."""
    from importlib.metadata import distributions

    found = [d for d in distributions()
             if re.sub(r"[-_.]+", "-", (d.metadata["Name"] or "").lower()) == DIST]
    found.sort(key=lambda d: 0 if str(getattr(d, "_path", "")).endswith(".dist-info") else 1)
    return found[0] if found else None


def installed_source() -> InstallSource:
    """Where the running kb came from (module docstring)."""
    d = _dist()
    if d is None:
        return InstallSource(None, "unknown", "kb is not installed as a distribution "
                             "(run from a source folder?)")
    return source_from(d.version, d.read_text("direct_url.json"))


def source_from(version: str, raw: Optional[str]) -> InstallSource:
    """The source a distribution of ``version`` with this ``direct_url.json`` text
    (None: absent) was installed from (module docstring)."""
    d_version = version
    if not raw:
        return InstallSource(f"{DIST}=={d_version}", "index", f"{DIST} {d_version} from a package index")
    try:
        info = json_input.loads(raw)
    except ValueError:
        info = None
    if not isinstance(info, dict):
        return InstallSource(None, "unknown", "the installed metadata (direct_url.json) is unreadable")
    url = str(info.get("url", ""))
    sub = (info.get("subdirectory") or "")
    frag = f"#subdirectory={sub}" if sub else ""
    vcs = info.get("vcs_info")
    if isinstance(vcs, dict) and url:
        ref = vcs.get("commit_id") or vcs.get("requested_revision")
        kind = vcs.get("vcs", "git")
        at = f"@{ref}" if ref else ""
        return InstallSource(f"{kind}+{url}{at}{frag}", "vcs", f"{kind} {url} at {ref or 'its default branch'}")
    if url.startswith(("http://", "https://")):
        return InstallSource(url + frag, "url", f"the archive {url}")
    where = url[len("file://"):] if url.startswith("file://") else url
    what = "an editable install of" if (info.get("dir_info") or {}).get("editable") else "a local install from"
    return InstallSource(None, "local", f"{what} {where}, which a CI runner cannot reach")


def refusal(src: InstallSource) -> str:
    """What to tell a user when there is no source CI can install (one paragraph)."""
    return (f"kb does not know where CI can install kb from: the running kb is {src.detail}. "
            "Pass --install SPEC with what `pip install` should take, e.g. "
            "--install 'git+https://github.com/OWNER/kb.git@v0.1.24' (a tag of kb's repository), "
            "or --install 'https://example.org/kb_research-0.1.24-py3-none-any.whl' (a published wheel).")


def install_hint(spec: Optional[str]) -> str:
    """The install line of the hook's fallback message."""
    if spec:
        return f"python -m pip install '{spec}'"
    return ("python -m pip install <the wheel or git URL kb came from> "
            "(e.g. 'git+https://github.com/OWNER/kb.git@v0.1.24')")
