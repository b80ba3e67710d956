"""The sandbox of a generation run: run file, state, ledger, round folders.

Layout (HYPOTHESIS-GEN.md "Sandbox")::

    <sandbox>/
    ├── .gitignore          everything ignored except itself and the report
    ├── .lock               the run's lock (one state change at a time)
    ├── loop.run.yaml       the bindings + literature_tiers (key presence only)
    ├── state.json          round, step, pool, gaps, dry counter, stop reason (kb's own)
    ├── ledger.tsv          round generated kept_new pool_size top_kept
    ├── literature/.cache/  the literature client's cache
    ├── round<N>/           candidates.json litscout.json verdict.json cache-keys.txt …
    └── hypotheses.md       the report (``kb gen report``)

Writes are atomic (temp file + rename) and happen only after a submission
passed every check, so a refused command changes nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kb import json_input
from kb.errors import UsageError, os_failure
from kb.gen.errors import GenError

RUN_FILE = "loop.run.yaml"
STATE_FILE = "state.json"
LEDGER_FILE = "ledger.tsv"
REPORT_FILE = "hypotheses.md"
CACHE_DIR = "literature/.cache"
KEYS_FILE = "cache-keys.txt"
LEDGER_HEADER = ["round", "generated", "kept_new", "pool_size", "top_kept"]
EVAL_SCALES: dict[str, dict[str, Any]] = {
    "low": {"candidates_in_depth": 2, "queries_per_candidate": 1, "fulltext_reads": 0},
    "medium": {"candidates_in_depth": "all", "queries_per_candidate": 2, "fulltext_reads": 1},
    "high": {"candidates_in_depth": "all", "queries_per_candidate": 3, "fulltext_reads": 3},
}
GITIGNORE = f"# kb gen sandbox: only the final report is tracked\n*\n!.gitignore\n!{REPORT_FILE}\n"
STEPS = ("candidates", "litscout", "verdict")


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file and a rename.

    Raises a kb error (:func:`kb.errors.os_failure`: environment 2 for a read-only
    sandbox or a full disk) when the file system refuses; ``path`` is then unchanged.
    """
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        raise os_failure(exc, f"write {path}") from None


def read_round_file(path: Path, model: Any = None) -> Any:
    """A file the loop itself wrote into a round (``candidates.json``, …): parsed JSON, or
    ``model.model_validate_json`` of it when ``model`` (a pydantic model) is given.

    Raises GenError (refused) when it is missing, unreadable, not JSON or no longer valid:
    it was changed by hand or damaged, and the message says how to recover.
    """
    from pydantic import ValidationError

    try:
        text = path.read_text(encoding="utf-8")
        return model.model_validate_json(text) if model is not None else json_input.loads(text)
    except (OSError, ValueError, ValidationError) as exc:  # ValidationError is a ValueError too
        why = exc.strerror if isinstance(exc, OSError) else str(exc).splitlines()[0]
        raise GenError(f"{path}: the run's own file is missing or damaged ({why}); put it back "
                       "(git, a backup) or start a new run with another --sandbox") from None


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON to ``path`` (atomically, as :func:`write_atomic`)."""
    write_atomic(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def find_sandbox(explicit: str | Path | None = None, *, required: bool = True) -> Path | None:
    """The sandbox folder: ``explicit``, else ``$KB_GEN_SANDBOX``, else the current
    folder or ``./sandbox`` when it holds ``loop.run.yaml``.

    Raises UsageError (exit 2) when ``required`` and none is found, or when
    ``explicit`` holds no run; EnvironmentError_ when a candidate folder cannot be entered.
    """
    cands = [Path(explicit)] if explicit else []
    if not explicit and os.environ.get("KB_GEN_SANDBOX", "").strip():
        cands = [Path(os.environ["KB_GEN_SANDBOX"].strip())]
    if not cands:
        cands = [Path.cwd(), Path.cwd() / "sandbox"]
    for c in cands:
        try:
            if (c / RUN_FILE).is_file():
                return c.resolve()
        except OSError as exc:  # a sandbox folder the user may not enter
            raise os_failure(exc, f"look for a generation run in {c}") from None
    if required:
        where = " or ".join(str(c) for c in cands)
        raise UsageError(f"no generation run in {where} (no {RUN_FILE}); "
                         "start one with `kb gen init --question Q`")
    return None


#: key -> type(s) of the fields a run file and a state file must have (what the loop reads).
_RUN_SHAPE: dict[str, Any] = {"question": str, "gen_n": int, "keep_threshold": (int, float),
                              "budget": int, "patience": int}
_STATE_SHAPE: dict[str, Any] = {"run_id": str, "round": int, "step": str, "dry": int,
                                "stopped": (str, type(None)), "pool": list, "gaps": list,
                                "trajectory": list, "adopted": dict}


def _shape_problems(data: Any, shape: dict[str, Any], name: str) -> list[str]:
    """What is missing or of the wrong type in ``data`` (a loaded run or state file)."""
    if not isinstance(data, dict):
        return [f"{name} is a {type(data).__name__}, not a mapping"]
    out = []
    for key, want in shape.items():
        if key not in data:
            out.append(f"{name} lacks {key}")
        elif not isinstance(data[key], want) or isinstance(data[key], bool):
            out.append(f"{name}: {key} is {type(data[key]).__name__}")
    return out


class Sandbox:
    """One run's folder; ``run`` the bindings, ``state`` the mutable loop state.

    ``state`` keys: ``run_id``, ``round`` (N), ``step`` (candidates | litscout
    | verdict), ``stopped`` (None | "saturated" | "budget"), ``dry``,
    ``pool`` (kept hypotheses with their scores and grounding), ``gaps``
    (``{claim, cites, hid, round}``), ``trajectory`` (``{round, generated,
    kept_new, pool_size}``), ``adopted`` (hid -> tree ID).
    """

    def __init__(self, root: Path) -> None:
        import yaml

        self.root = root
        try:
            self.run: dict[str, Any] = yaml.safe_load((root / RUN_FILE).read_text(encoding="utf-8")) or {}
            self.state: dict[str, Any] = json_input.loads((root / STATE_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise UsageError(f"{root}: not a complete generation run ({exc.filename} missing)") from None
        except (ValueError, yaml.YAMLError) as exc:
            raise GenError(f"{root}: the run files cannot be read: {exc}") from None
        except OSError as exc:  # no permission, a folder in a file's place, …
            raise os_failure(exc, f"read the generation run in {root}") from None
        bad = _shape_problems(self.run, _RUN_SHAPE, RUN_FILE) + \
            _shape_problems(self.state, _STATE_SHAPE, STATE_FILE)
        if bad:
            raise GenError(f"{root}: the run files were changed by hand or damaged ({'; '.join(bad)}); "
                           "put them back (git, a backup) or start a new run with another --sandbox")

    @classmethod
    def open(cls, explicit: str | Path | None = None) -> "Sandbox":
        """The run in ``explicit`` (or found from the current folder).

        Raises UsageError when there is no run, GenError when its files are damaged.
        """
        found = find_sandbox(explicit)
        assert found is not None
        return cls(found)

    # -- paths ----------------------------------------------------------------------

    @property
    def round(self) -> int:
        """The current round number (1-based)."""
        return int(self.state["round"])

    def round_dir(self, n: int | None = None) -> Path:
        """The folder of round ``n`` (default: the current round); it may not exist yet."""
        return self.root / f"round{self.round if n is None else n}"

    @property
    def cache_dir(self) -> Path:
        """The run's literature cache folder."""
        return self.root / CACHE_DIR

    @property
    def report_path(self) -> Path:
        """Where the ranked report is written (``hypotheses.md`` unless the run names another)."""
        return self.root / str(self.run.get("report") or REPORT_FILE)

    # -- state ----------------------------------------------------------------------

    def lock(self, timeout: float = 60.0) -> Any:
        """The run's lock (a file lock in the sandbox): one state change at a time.

        Raises GenError after ``timeout`` seconds.
        """
        import contextlib

        from filelock import FileLock, Timeout

        @contextlib.contextmanager
        def held() -> Any:
            fl = FileLock(str(self.root / ".lock"))
            try:
                fl.acquire(timeout=timeout)
            except Timeout:
                raise GenError(f"{self.root}: another kb gen command holds the run's lock") from None
            except OSError as exc:  # a read-only sandbox, …
                raise os_failure(exc, f"take the run's lock in {self.root}") from None
            try:
                # Re-read under the lock: another process may have advanced the run.
                try:
                    state = json_input.loads((self.root / STATE_FILE).read_text(encoding="utf-8"))
                except (OSError, ValueError) as exc:
                    raise GenError(f"{self.root}: the run files cannot be read: {exc}") from None
                bad = _shape_problems(state, _STATE_SHAPE, STATE_FILE)
                if bad:
                    raise GenError(f"{self.root}: the run files were changed by hand or damaged "
                                   f"({'; '.join(bad)}); put them back (git, a backup) or start "
                                   "a new run with another --sandbox")
                self.state = state
                yield self
            finally:
                fl.release()

        return held()

    def save(self) -> None:
        """Write the state file (atomically). Raises EnvironmentError_ when the sandbox is not
        writable.
        """
        write_json(self.root / STATE_FILE, self.state)

    def record_cache_key(self, key: str) -> None:
        """Remember that the current round used cache entry ``key`` (once per round)."""
        if self.state.get("stopped"):
            return
        path = self.round_dir() / KEYS_FILE
        known = set(path.read_text(encoding="ascii", errors="replace").split()) if path.exists() else set()
        if key in known:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="ascii") as fh:
                fh.write(key + "\n")
        except OSError as exc:
            raise os_failure(exc, f"write {path}") from None

    def cache_keys(self, n: int | None = None) -> list[str]:
        """The cache keys round ``n`` (default: the current one) requested or was served."""
        path = self.round_dir(n) / KEYS_FILE
        try:
            return path.read_text(encoding="ascii", errors="replace").split() if path.exists() else []
        except OSError as exc:
            raise os_failure(exc, f"read {path}") from None

    def cached_bodies(self, n: int | None = None) -> list[Any]:
        """The response bodies of the round's cache keys (missing files skipped)."""
        out = []
        for key in self.cache_keys(n):
            try:
                rec = json_input.loads((self.cache_dir / f"{key}.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(rec, dict):
                out.append(rec.get("body"))
        return out

    def write_ledger(self) -> None:
        """Rewrite ``ledger.tsv`` from the state's trajectory (atomically): the header and one
        row per finished round; tabs, line breaks and commas are kept out of free text."""
        rows = ["\t".join(LEDGER_HEADER)]
        for t in self.state["trajectory"]:
            rows.append("\t".join(clean_cell(str(t[k])) for k in LEDGER_HEADER))
        write_atomic(self.root / LEDGER_FILE, "\n".join(rows) + "\n")


def clean_cell(text: str) -> str:
    """A ledger cell: no tabs or line breaks, commas (``,`` ``，``) as ``;``."""
    return " ".join(text.replace(",", ";").replace("，", "；").split())
