"""The keys file ``keys.env`` and the configurable base URLs (HYPOTHESIS-GEN.md "Keys").

``keys.env`` sits at the project root (the git work tree's top, else the
current folder), mode 0600, git-ignored; ``KEY=VALUE`` lines and ``#``
comments. Real environment variables win over the file. Values are never
printed or returned by :func:`key_presence`; only whether each key is set.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from kb.errors import EnvironmentError_, os_failure
from kb.lit.errors import LitConfigError

KEYS_FILE = "keys.env"

#: The slots ``keys --init`` writes, each with the comment that explains it.
SLOTS: dict[str, str] = {
    "S2_API_KEY": "Semantic Scholar API key (free; steadier snippet/cite): "
                  "https://www.semanticscholar.org/product/api",
    "OPENALEX_EMAIL": "your e-mail for OpenAlex's polite pool (free, no sign-up)",
}

#: Environment variable -> default base URL (the public APIs).
BASE_URLS: dict[str, str] = {
    "KB_LIT_S2_URL": "https://api.semanticscholar.org/graph/v1",
    "KB_LIT_S2_RECOMMEND_URL": "https://api.semanticscholar.org/recommendations/v1",
    "KB_LIT_OPENALEX_URL": "https://api.openalex.org",
    "KB_LIT_ARXIV_URL": "http://export.arxiv.org/api/query",
}


def project_root(start: Path | None = None) -> Path:
    """The git work tree containing ``start`` (default: the cwd), else ``start`` itself."""
    here = Path(start or Path.cwd()).resolve()
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=here,
                             capture_output=True, text=True, check=False)
    except OSError:
        return here
    top = out.stdout.strip()
    return Path(top) if out.returncode == 0 and top else here


def keys_path(root: Path | None = None) -> Path:
    """``keys.env`` of the project (see :func:`project_root`)."""
    return (root or project_root()) / KEYS_FILE


def read_keys_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` pairs of ``path`` (missing file: empty); quotes around values stripped.

    Raises EnvironmentError_ when the file cannot be read (no permission) or is not UTF-8.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError):
        return {}
    except OSError as exc:
        raise os_failure(exc, f"read the literature keys {path}") from None
    except UnicodeDecodeError:
        raise EnvironmentError_(f"{path} is not UTF-8: re-save it as UTF-8 (KEY=VALUE lines)") from None
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip()
        if key.startswith("export "):
            key = key[len("export "):].strip()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key] = value
    return out


def load_keys(root: Path | None = None) -> dict[str, str]:
    """The effective keys: the file's values overridden by the environment; empty = unset."""
    values = read_keys_file(keys_path(root))
    for name in SLOTS:
        if os.environ.get(name, "").strip():
            values[name] = os.environ[name].strip()
    return {k: v for k, v in values.items() if v}


def key_presence(root: Path | None = None) -> dict[str, bool]:
    """``{"S2_API_KEY": True, "OPENALEX_EMAIL": False}``: presence only, never values."""
    keys = load_keys(root)
    return {name: name in keys for name in SLOTS}


def init_keys(root: Path | None = None) -> dict[str, object]:
    """Create or extend ``keys.env`` with the missing slots (never overwrites a line).

    The file gets mode 0600 and the project's ``.gitignore`` gains a
    ``keys.env`` line when it has none. Returns ``{"path", "added": [names],
    "gitignore": bool (line added)}``.
    """
    top = root or project_root()
    path = keys_path(top)
    try:
        return _init_keys(top, path)
    except OSError as exc:  # a read-only project folder, …
        raise os_failure(exc, f"write {path}") from None


def _init_keys(top: Path, path: Path) -> dict[str, object]:
    existing = read_keys_file(path)
    added = [name for name in SLOTS if name not in existing]
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    chunks = [old] if old else ["# API keys of the literature client (never commit this file)\n"]
    if old and not old.endswith("\n"):
        chunks.append("\n")
    for name in added:
        chunks.append(f"# {SLOTS[name]}\n{name}=\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("".join(chunks))
    os.chmod(path, 0o600)
    return {"path": str(path), "added": added, "gitignore": ensure_ignored(top, KEYS_FILE)}


def ensure_ignored(top: Path, name: str) -> bool:
    """Append ``name`` to ``top/.gitignore`` unless a line already names it; True if added."""
    gi = top / ".gitignore"
    text = gi.read_text(encoding="utf-8", errors="surrogateescape") if gi.exists() else ""
    if any(ln.strip() in (name, "/" + name) for ln in text.splitlines()):
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    gi.write_text(text + sep + name + "\n", encoding="utf-8", errors="surrogateescape")
    return True


def base_url(var: str) -> str:
    """The base URL for ``var`` (one of :data:`BASE_URLS`), without a trailing slash.

    Raises LitConfigError (kind ``environment``, exit 2) naming ``var`` and its value when the
    environment sets it to something that is no ``http(s)://host[:port][/path]`` URL.
    """
    value = os.environ.get(var, "").strip()
    if not value:
        return BASE_URLS[var].rstrip("/")
    problem = url_problem(value)
    if problem:
        # Checked here, before any request: httpx would raise InvalidURL (not a kb error) or
        # retry a URL without a scheme with backoff, though no attempt can ever succeed.
        from kb.lit.http import redact_url

        raise LitConfigError(f"{var}={redact_url(value)!r} is not a usable base URL: {problem}; "
                             f"write http(s)://host[:port][/path], or unset {var} to use "
                             f"{BASE_URLS[var]}")
    return value.rstrip("/")


def url_problem(url: str) -> str | None:
    """What makes ``url`` unusable as a base URL (``"it has no host"``, …), or None when it is
    an ``http(s)://host[:port][/path]`` URL."""
    if any(not c.isprintable() or c.isspace() for c in url):
        return "it contains a space or a control character"
    try:
        parts = urlsplit(url)
        _ = parts.port  # parsed on access: ValueError when it is no number 0-65535
    except ValueError as exc:  # "Invalid IPv6 URL", "Port out of range 0-65535", …
        return str(exc)
    if parts.scheme.lower() not in ("http", "https"):
        return "it does not start with http:// or https://"
    if not parts.hostname:
        return "it has no host"
    if parts.query or parts.fragment:
        return "a base URL takes no ?query or #fragment (kb appends the path and the query)"
    return None
