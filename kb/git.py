"""Git through its CLI, NUL-separated (``-z``), never through an in-process index.

Decision (docs/DECISIONS.md): kb calls the ``git`` executable with
``subprocess`` rather than GitPython's ``repo.git`` wrapper. Both run the same
CLI; importing GitPython costs about 85 ms, a third of the no-change
``kb index`` budget (DESIGN.md §7), and kb needs none of its object model.
Read-only calls run with ``GIT_OPTIONAL_LOCKS=0`` so they never take git's
index lock (case GIT-01); ``GIT_INDEX_FILE`` is inherited, so the staged
snapshot of a hook is the one git is committing (case GIT-03). A command whose
words kb reads (``CONFLICT (…)``, ``fatal:``, a missing remote ref) runs with git's
messages in English (:func:`english`); every other one speaks the user's language.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import subprocess
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator, Mapping, NamedTuple

from kb.errors import EnvironmentError_, GitError, RefusedError, UsageError

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _env(extra: Mapping[str, str] | None = None, write: bool = False,
         in_english: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    if not write:
        env["GIT_OPTIONAL_LOCKS"] = "0"
    if extra:
        env.update(extra)
    return english(env) if in_english else env


#: The locale categories other than LC_MESSAGES that ``LC_ALL`` sets (glibc's; a C
#: library without one of them ignores it).
_OTHER_CATEGORIES = ("LC_CTYPE", "LC_NUMERIC", "LC_TIME", "LC_COLLATE", "LC_MONETARY",
                     "LC_PAPER", "LC_NAME", "LC_ADDRESS", "LC_TELEPHONE", "LC_MEASUREMENT",
                     "LC_IDENTIFICATION")


def english(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of the environment ``env`` in which git's messages are English and every
    other locale setting is the user's, for a git command whose words kb reads.

    ``LC_MESSAGES=C``: gettext ignores ``LANGUAGE`` when the messages' locale is C
    (``LANGUAGE`` is dropped anyway, for a gettext that would not). ``LC_ALL``
    overrides ``LC_MESSAGES``, so a set ``LC_ALL`` is replaced by its value in each
    other category, which it set anyway: the character set (a hook's or a merge
    driver's UTF-8 text and paths), collation and dates stay the user's, where
    ``LC_ALL=C`` would change them for every hook git starts. Those hooks do inherit
    English messages: what they print goes into the output kb reads.
    """
    out = dict(env)
    whole = out.pop("LC_ALL", "")
    if whole:
        for name in _OTHER_CATEGORIES:
            out[name] = whole
    out.pop("LANGUAGE", None)
    out["LC_MESSAGES"] = "C"
    return out


#: git subcommands that talk to another repository: always bounded in time.
NETWORK_COMMANDS = frozenset({"fetch", "push", "ls-remote", "pull", "clone"})


def network_timeout() -> float:
    """Seconds a git command that talks to a remote may take (``KB_GIT_TIMEOUT``, default 60)."""
    try:
        return max(1.0, float(os.environ.get("KB_GIT_TIMEOUT", "60")))
    except ValueError:
        return 60.0


def run(
    args: list[str],
    cwd: Path | str,
    *,
    input: bytes | None = None,
    check: bool = True,
    write: bool = False,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    in_english: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <args>`` in ``cwd`` and return the completed process (bytes).

    ``in_english``: git's messages in English (:func:`english`), for a caller that
    reads git's words in its output; ``env`` is added to the environment first.

    A command that talks to a remote (``fetch``, ``push``, ``ls-remote``) is
    bounded: ``timeout`` seconds, default :func:`network_timeout`; a local one
    waits as long as git takes unless ``timeout`` is given.
    Raises :class:`GitError` with git's message when ``check`` and git fails or
    a bounded command gets no answer in time (whatever ``check``), and
    :class:`EnvironmentError_` when git is not installed.
    """
    if timeout is None and args and args[0] in NETWORK_COMMANDS:
        timeout = network_timeout()
    if args[:1] == ["config"] and args[1:2] != ["--list"]:
        _forget_config()  # it may set a value: read the configuration again
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, input=input, capture_output=True,
            env=_env(env, write=write, in_english=in_english), timeout=timeout,
        )
    except FileNotFoundError:
        raise EnvironmentError_("git is not installed or not on PATH") from None
    except subprocess.TimeoutExpired:
        why = f"no answer within {timeout:.0f} s (KB_GIT_TIMEOUT sets the bound)"
        raise GitError(f"git {' '.join(args[:1])} gave up: {why}", why) from None
    if check and proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {' '.join(args[:2])} failed: {msg}", msg)
    return proc


# -- configuration read once per scope ------------------------------------------------------

#: Inside :func:`config_scope`: repository top -> key -> its values (None: a key without "=").
_CONFIG: contextvars.ContextVar[dict[str, dict[str, list[str | None]]] | None] = \
    contextvars.ContextVar("kb_git_config", default=None)


@contextmanager
def config_scope() -> Iterator[None]:
    """Within the block, :func:`config` answers from one ``git config --list`` per
    repository (read on first use) instead of one ``git config --get`` per key. A
    long-running server opens one per request; a ``git config`` that may set a value
    (run through :func:`run`) makes the next :func:`config` read the list again."""
    token = _CONFIG.set({})
    try:
        yield
    finally:
        _CONFIG.reset(token)


def in_config_scope() -> bool:
    """True inside :func:`config_scope`."""
    return _CONFIG.get() is not None


def _forget_config() -> None:
    cache = _CONFIG.get()
    if cache:
        cache.clear()


def _config_key(key: str) -> str:
    """git's canonical spelling: section and variable lower-cased, a subsection kept."""
    first, _, rest = key.partition(".")
    sub, _, name = rest.rpartition(".")
    return f"{first.lower()}.{sub}.{name.lower()}" if sub else f"{first.lower()}.{name.lower()}"


def config(key: str, top: Path | str) -> str | None:
    """The value of git config ``key`` as ``git config --get`` gives it (the last one
    wins), or None when unset; ``""`` for a key without ``=``."""
    cache = _CONFIG.get()
    if cache is None:
        proc = run(["config", "--get", key], top, check=False)
        return proc.stdout.decode("utf-8", "replace").rstrip("\n") if proc.returncode == 0 else None
    where = str(top)
    if where not in cache:
        listing: dict[str, list[str | None]] = {}
        proc = run(["config", "--list", "-z"], top, check=False)
        for rec in proc.stdout.decode("utf-8", "replace").split("\0"):
            if rec:
                name, nl, value = rec.partition("\n")
                listing.setdefault(name, []).append(value if nl else None)
        cache[where] = listing
    values = cache[where].get(_config_key(key))
    if not values:
        return None
    return "" if values[-1] is None else values[-1]


def config_bool(key: str, top: Path | str) -> bool | None:
    """git config ``key`` read as a boolean (git's words: true/yes/on/1, false/no/off/0,
    a key without ``=`` is true); None when unset or not a boolean."""
    cache = _CONFIG.get()
    if cache is None:
        proc = run(["config", "--type=bool", "--get", key], top, check=False)
        out = proc.stdout.strip()
        return None if proc.returncode != 0 else out == b"true"
    value = config(key, top)
    if value is None:
        return None
    if cache[str(top)].get(_config_key(key), [""])[-1] is None:
        return True
    word = value.strip().lower()
    if word in ("true", "yes", "on"):
        return True
    if word in ("false", "no", "off", ""):
        return False
    try:
        return int(word) != 0
    except ValueError:
        return None


def start(args: list[str], cwd: Path | str) -> subprocess.Popen[bytes]:
    """Start a read-only ``git <args>`` without waiting (several can run at once)."""
    try:
        return subprocess.Popen(["git", *args], cwd=cwd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=_env())
    except FileNotFoundError:
        raise EnvironmentError_("git is not installed or not on PATH") from None


def finish(proc: subprocess.Popen[bytes], args: list[str]) -> bytes:
    """Wait for a process from :func:`start`; its stdout, or GitError."""
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        msg = stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git {' '.join(args[:2])} failed: {msg}", msg)
    return stdout


def out(args: list[str], cwd: Path | str, **kw: object) -> str:
    """``git <args>`` stdout decoded as UTF-8, trailing newline removed."""
    return run(args, cwd, **kw).stdout.decode("utf-8", "surrogateescape").rstrip("\n")  # type: ignore[arg-type]


def commit_tree(top: Path, tree: str, parents: Iterable[str], message: str,
                env: Mapping[str, str] | None = None) -> str:
    """``git commit-tree`` signed whenever ``git commit`` would sign; the new commit id.

    ``commit-tree`` ignores ``commit.gpgSign``: kb reads it and passes ``-S`` (git's
    own signing configuration decides the rest: ``gpg.format``, ``gpg.program``,
    ``user.signingKey``). When no signing key is configured git signs as the
    committer, so a commit made under another identity (``env``: a lock record)
    names the user's own identity as the key, as their ``git commit`` would. Raises
    RefusedError with git's reason when signing or the commit fails (nothing is written).
    """
    args = ["commit-tree", tree]
    for p in parents:
        args += ["-p", p]
    if config_bool("commit.gpgSign", top):  # one `git config --list` inside config_scope
        if config("user.signingKey", top) is None and env:
            ident = run(["var", "GIT_COMMITTER_IDENT"], top, check=False)
            who = ident.stdout.decode("utf-8", "surrogateescape").rsplit(">", 1)[0]
            args.append(f"-S{who}>" if ident.returncode == 0 and "<" in who else "-S")
        else:
            args.append("-S")
    else:
        args.append("--no-gpg-sign")
    proc = run([*args, "-F", "-"], top, write=True, check=False, env=env,
               input=message.encode("utf-8", "surrogateescape"))
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip()
        raise RefusedError(f"git could not make the commit (nothing was written): {why}")
    return proc.stdout.decode("ascii").strip()


def toplevel(start: Path) -> Path | None:
    """The work tree root containing ``start``, or None outside a work tree."""
    proc = run(["rev-parse", "--show-toplevel"], start, check=False)
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.decode("utf-8", "surrogateescape").strip())


@lru_cache(maxsize=64)
def common_dir(cwd: Path) -> Path:
    """``git rev-parse --git-common-dir`` as an absolute path (shared by worktrees).

    Cached per folder: it cannot change while a kb process runs.
    """
    p = Path(out(["rev-parse", "--git-common-dir"], cwd))
    return p if p.is_absolute() else (cwd / p).resolve()


#: Folder -> its git dir, told by a caller that read it with other things (:func:`note_git_dir`).
_GIT_DIRS: dict[Path, Path] = {}


def note_git_dir(cwd: Path, found: Path) -> None:
    """Remember ``cwd``'s git dir (absolute), read by the caller's own ``git rev-parse``."""
    _GIT_DIRS[Path(cwd)] = found


def git_dir(cwd: Path) -> Path:
    """``git rev-parse --git-dir`` as an absolute path (cached per folder)."""
    hit = _GIT_DIRS.get(Path(cwd))
    return hit if hit is not None else _git_dir(cwd)


@lru_cache(maxsize=64)
def _git_dir(cwd: Path) -> Path:
    p = Path(out(["rev-parse", "--git-dir"], cwd))
    return p if p.is_absolute() else (cwd / p).resolve()


def revision(rev: str, what: str = "") -> str:
    """``rev`` itself, checked for use as a revision argument of a git command.

    A revision a user gives (a range end, ``--rev``, ``--since``, ``--against``, an
    MCP argument, a URL parameter) reaches git as one word on its command line; one
    starting with ``-`` would be read as an option (``--output=<file>`` makes
    ``git diff-tree``/``git log`` write that file). git refuses a branch or tag name
    starting with ``-``, so such a word names nothing kb could show: it is refused
    here, before any git command sees it.
    ``what`` names the argument in the message (``"--against"``; empty: none).
    Raises :class:`kb.errors.UsageError` for an empty ``rev`` or one starting with ``-``.
    """
    named = f"{what} " if what else ""
    if not rev:
        raise UsageError(f"{named}'': an empty revision names no commit")
    if rev.startswith("-"):
        raise UsageError(f"{named}{rev!r} is not a revision: it starts with '-', which git would "
                         "read as an option")
    return rev


def rev_parse(rev: str, cwd: Path) -> str | None:
    """The commit id ``rev`` names, or None when it does not exist (e.g. unborn HEAD).

    An empty ``rev`` names nothing (None, as before: a journal may hold no branch).
    Raises :class:`kb.errors.UsageError` when ``rev`` starts with ``-``
    (:func:`revision`): never an option of git, whoever gave it.
    """
    if not rev:
        return None
    # --end-of-options as well: git reads whatever follows as a revision, never a flag.
    proc = run(["rev-parse", "--verify", "--quiet", "--end-of-options",
                revision(rev) + "^{commit}"], cwd, check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.decode().strip()


def split_z(data: bytes) -> Iterator[str]:
    """Split ``-z`` output into UTF-8 paths/records (no quoting, real bytes)."""
    for rec in data.split(b"\0"):
        if rec:
            yield rec.decode("utf-8", "surrogateescape")


class TreeEntry(NamedTuple):
    """One entry of ``git ls-tree``: its mode (``"100644"``, ``"100755"``, ``"120000"``
    a symlink, ``"040000"`` a folder, ``"160000"`` a submodule), its object type
    (``"blob"``, ``"tree"``, ``"commit"``), its object id (hex) and its
    repository-relative path, as :func:`tree_entries` reads them."""

    mode: str
    type: str
    oid: str
    path: str


_tuple_new = tuple.__new__


def tree_entries(data: bytes) -> Iterator[TreeEntry]:
    """The entries of ``git ls-tree -z`` output ``data`` (with or without ``-r``/``-t``;
    not ``--name-only``, ``--long`` or ``--format``: split those with :func:`split_z`).

    Each NUL-ended record is ``<mode> SP <type> SP <object id> TAB <path>``; the path
    comes raw (no quoting), so it may hold tabs, newlines and bytes that are not
    UTF-8. It is decoded as :func:`split_z` decodes, UTF-8 with ``surrogateescape``
    (``path.encode("utf-8", "surrogateescape")`` gives git's bytes back), and split
    off at the first tab (the three fields before it hold none). Empty records are
    skipped. A record of another shape raises ValueError: the caller passed output
    of another command.
    """
    # One decode of the whole listing (a NUL ends a UTF-8 sequence, so this equals a
    # decode per record); each entry built as TreeEntry(...) builds it, without the
    # call through its __new__ (half the parse time of a 20,000-file tree).
    for rec in data.decode("utf-8", "surrogateescape").split("\0"):
        if rec:
            meta, _, path = rec.partition("\t")
            mode, typ, oid = meta.split(" ")
            yield _tuple_new(TreeEntry, (mode, typ, oid, path))


def blob_id(data: bytes) -> str:
    """The git blob id (SHA-1 of ``blob <size>\\0<data>``) of ``data``."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def object_id(kind: str, data: bytes, like: str) -> str:
    """The id git gives an object of ``kind`` with body ``data``.

    ``like`` is any object id of the repository: its length says the hash
    (40 hex digits SHA-1, 64 SHA-256).
    """
    h = hashlib.sha1() if len(like) == 40 else hashlib.sha256()
    h.update(b"%s %d\0" % (kind.encode("ascii"), len(data)))
    h.update(data)
    return h.hexdigest()


def tree_object(entries: Iterable[tuple[str, str, str]]) -> bytes:
    """The body of the tree object listing ``(mode, id, name)`` entries (``ls-tree`` modes).

    Entries are sorted as git sorts them (a folder's name compares as if it
    ended with ``/``); a tree's mode is written ``40000``.
    """
    recs = []
    for mode, oid, name in entries:
        raw = name.encode("utf-8", "surrogateescape")
        if not raw or b"/" in raw or b"\0" in raw or raw in (b".", b".."):
            raise GitError(f"invalid tree entry name {name!r}", "")
        mode = mode.lstrip("0")
        recs.append((raw + b"/" if mode == "40000" else raw,
                     mode.encode("ascii") + b" " + raw + b"\0" + bytes.fromhex(oid)))
    recs.sort(key=lambda r: r[0])
    return b"".join(r[1] for r in recs)


def write_objects(kind: str, bodies: list[bytes], cwd: Path) -> list[str]:
    """Write ``bodies`` as objects of ``kind`` with one ``git hash-object -w``; their ids.

    git checks each body is a well-formed object of that kind, not that the
    objects it names exist (``mktree`` and ``write-tree`` open every entry's
    object: tens of milliseconds for a folder of loose objects).
    """
    if not bodies:
        return []
    import tempfile  # (here: tempfile pulls shutil, random, bz2, lzma; reads never need it)

    with tempfile.TemporaryDirectory(prefix="kb-objects-") as d:
        files = []
        for i, body in enumerate(bodies):
            f = Path(d) / f"{i}.{kind}"
            f.write_bytes(body)
            files.append(str(f))
        proc = run(["hash-object", "-w", "--no-filters", "-t", kind, "--", *files], cwd,
                   write=True)
    return proc.stdout.decode("ascii").split()


def read_blobs(ids: Iterable[str], cwd: Path) -> dict[str, bytes]:
    """Read many blobs through the process's one ``git cat-file --batch``; id -> bytes.

    Missing objects are left out. Raises GitError when git dies.
    """
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    return BlobReader.of(Path(cwd)).read(wanted)


class BlobReader:
    """One persistent ``git cat-file --batch`` per repository and process.

    Every blob kb reads from git (a snapshot's files, a rule's fix text, the
    dashboard) goes through it, so a command starts one git process for
    contents however many files it reads (issue 18: KB216's fix text used to
    start one per file). Requests go in chunks small enough for the pipe
    buffer (git flushes each object as it answers), so neither side can block
    the other. A forked worker gets its own process, never the parent's pipes.
    """

    _open: dict[tuple[int, Path], "BlobReader"] = {}
    CHUNK = 64  # ids per write: 64 x 65 bytes stays far below a 64 KiB pipe buffer
    KEEP = 4  # readers kept open per process (least recently used closed first)
    _registered = False

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        try:
            self.proc = subprocess.Popen(
                ["git", "cat-file", "--batch"], cwd=cwd, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env())
        except FileNotFoundError:
            raise EnvironmentError_("git is not installed or not on PATH") from None

    @classmethod
    def of(cls, cwd: Path) -> "BlobReader":
        """The reader of the repository at ``cwd`` for this process (started on first use)."""
        key = (os.getpid(), cwd)
        reader = cls._open.pop(key, None)
        if reader is None or reader.proc.poll() is not None:
            if not cls._open and not cls._registered:
                import atexit

                from kb.parallel import at_child_exit

                atexit.register(cls.close_all)
                at_child_exit(cls.close_all)  # a forked worker's reader, not outliving it
                cls._registered = True
            mine = [k for k in cls._open if k[0] == key[0]]
            if len(mine) >= cls.KEEP:  # a long-lived caller (tests, a server) opens many repositories
                cls._open.pop(mine[0]).close()
            reader = cls(cwd)
        cls._open[key] = reader  # the most recently used last
        return reader

    def read(self, ids: list[str]) -> dict[str, bytes]:
        """Contents of the blobs ``ids`` (missing ones left out)."""
        out: dict[str, bytes] = {}
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        try:
            for i in range(0, len(ids), self.CHUNK):
                chunk = ids[i:i + self.CHUNK]
                stdin.write(("\n".join(chunk) + "\n").encode("utf-8", "surrogateescape"))
                stdin.flush()
                for oid in chunk:
                    line = stdout.readline()
                    if not line:
                        raise BrokenPipeError
                    # "<id> <type> <size>", or "<name> missing" / "<name> ambiguous",
                    # where a name such as HEAD:a b/kb.toml may hold spaces.
                    header = line.rstrip(b"\n").rsplit(b" ", 2)
                    if len(header) < 3 or not header[2].isdigit():
                        continue
                    size = int(header[2])
                    data = stdout.read(size + 1)  # the contents and their newline
                    if len(data) != size + 1:
                        raise BrokenPipeError
                    out[oid] = data[:size]
        except (BrokenPipeError, OSError):
            self.close()
            raise GitError("git cat-file --batch stopped while reading objects", "") from None
        return out

    def close(self) -> None:
        """Stop the git process (it exits when its input closes)."""
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        finally:
            if self.proc.stdout:
                self.proc.stdout.close()

    @classmethod
    def close_all(cls) -> None:
        """Stop every reader this process started."""
        pid = os.getpid()
        for key in [k for k in cls._open if k[0] == pid]:
            cls._open.pop(key).close()


def remote_default(top: Path, remote: str) -> str | None:
    """The remote's default branch as a local ref (``refs/remotes/<remote>/HEAD`` or
    main/master), or None."""
    proc = run(["symbolic-ref", "-q", f"refs/remotes/{remote}/HEAD"], top, check=False)
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.decode().strip()
    for name in ("main", "master"):
        ref = f"refs/remotes/{remote}/{name}"
        if rev_parse(ref, top):
            return ref
    return None
