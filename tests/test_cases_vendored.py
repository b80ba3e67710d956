"""tests/cases is the project's shared case set, byte for byte (see conftest.CASES)."""

from __future__ import annotations

from pathlib import Path

from conftest import CASES, git

SHARED = Path(__file__).resolve().parents[2] / "shared" / "cases"


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_vendored_cases_are_byte_exact() -> None:
    """Every case named in the README is there; git stores them unconverted (-text); and,
    where the shared folder sits beside the checkout (the project's CI), they equal it."""
    have = _files(CASES)
    readme = have["README.md"].decode("utf-8")
    for name in ("FM-01", "FM-02", "FM-15", "MD-06"):
        assert f"| {name} |" in readme and any(p.startswith(f"inputs/{name}_") for p in have)
    assert b"\r\n" in have["inputs/FM-02_crlf.md"] and have["inputs/FM-01_bom.md"][:3] == b"\xef\xbb\xbf"
    attrs = git(CASES, "check-attr", "text", "--", "inputs/FM-02_crlf.md")
    assert attrs.endswith("text: unset"), attrs
    if SHARED.is_dir():
        assert have == _files(SHARED)
