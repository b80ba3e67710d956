"""The verification records of a KB (``Logs/Verification/*.json``) and ``kb verifiers``.

Records are parsed by :func:`kb.research.verdict.parse_record`; unreadable
files are skipped (rule checks report them). The accuracy rule is
:func:`kb.research.verdict.verifier_accuracy`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Union

from kb.errors import os_failure
from kb.repo import KnowledgeBase, resolve_kb
from kb.research.verdict import Accuracy, VerificationRecord, parse_record, record_order, verifier_accuracy


def records_dir(k: KnowledgeBase) -> str:
    """The KB path of the records folder: ``<logs>/Verification``."""
    return f"{k.config.paths['logs'].strip('/')}/Verification"


def load_records(kb: Union[KnowledgeBase, str, Path, None] = None) -> list[VerificationRecord]:
    """Every readable verification record of the KB, oldest first (:func:`record_order`).

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails. Unreadable records are skipped.
    """
    k = resolve_kb(kb)
    base = k.root / records_dir(k)
    out = []
    try:
        names = sorted(base.glob("*.json")) if base.is_dir() else []
    except OSError as exc:  # a folder the user may not read
        raise os_failure(exc, f"list the verification records in {records_dir(k)}") from None
    if names:
        for p in names:
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            rec = parse_record(f"{records_dir(k)}/{p.name}", data)
            if rec is not None:
                out.append(rec)
    out.sort(key=record_order)
    return out


def accuracy_table(kb: Union[KnowledgeBase, str, Path, None] = None) -> list[Accuracy]:
    """``kb verifiers``: every verifier with its accuracy, best first.

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails.
    """
    acc = verifier_accuracy(load_records(kb))
    return sorted(acc.values(), key=lambda a: (-a.rate, -a.counted, a.verifier))


__all__ = ["records_dir", "load_records", "accuracy_table"]
