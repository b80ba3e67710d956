"""The verification records of a KB (``Logs/Verification/*.json``) and ``kb verifiers``.

Records are read by :func:`kb.research.verdict.read_record`; a file that is not
JSON or not a valid record (:func:`kb.research.verdict.record_problems`) is left
out of everything read here — accuracy, the weights of a forced verdict, reports —
and :func:`load_records_checked` says which and why (``kb verify`` warns, KB243).
The accuracy rule is :func:`kb.research.verdict.verifier_accuracy`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

from kb.errors import os_failure
from kb.fileio import read_regular
from kb.repo import KnowledgeBase, resolve_kb
from kb.research.record_faults import checked_record, min_votes_of
from kb.research.verdict import (Accuracy, BadRecord, VerificationRecord, record_order,
                                 verifier_accuracy)


def records_dir(k: KnowledgeBase) -> str:
    """The KB path of the records folder: ``<logs>/Verification``."""
    return f"{k.config.paths['logs'].strip('/')}/Verification"


def load_records_checked(kb: Union[KnowledgeBase, str, Path, None] = None
                         ) -> tuple[list[VerificationRecord], list[BadRecord]]:
    """Every valid verification record of the KB in the working tree, oldest first
    (:func:`record_order`), and the files left out (by path: unreadable, not JSON,
    :func:`kb.research.verdict.record_problems`, or a verdict ``kb verdict`` could not
    have written: :func:`kb.research.record_faults.record_faults`, which KB243 warns of
    and which backs no settlement either).

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails, EnvironmentError_ when the folder cannot be listed.
    """
    k = resolve_kb(kb)
    base = k.root / records_dir(k)
    try:
        # files only, as KB243 lists them (kb.checks.record_rules)
        names = [p for p in sorted(base.glob("*.json")) if p.is_file()] if base.is_dir() else []
    except OSError as exc:  # a folder the user may not read
        raise os_failure(exc, f"list the verification records in {records_dir(k)}") from None
    out: list[VerificationRecord] = []
    bad: list[BadRecord] = []
    need = min_votes_of(k.config)
    for p in names:
        rel = f"{records_dir(k)}/{p.name}"
        try:
            rec = checked_record(rel, read_regular(p), need)
        except OSError as exc:  # unreadable (a folder named *.json, permissions)
            rec = BadRecord(rel, f"not readable ({exc.strerror or exc})")
        (bad if isinstance(rec, BadRecord) else out).append(rec)
    out.sort(key=record_order)
    return out, bad


def load_records(kb: Union[KnowledgeBase, str, Path, None] = None) -> list[VerificationRecord]:
    """Every valid verification record of the KB, oldest first (:func:`record_order`);
    malformed ones are left out (:func:`load_records_checked` says which).

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails.
    """
    return load_records_checked(kb)[0]


def accuracy_report(kb: Union[KnowledgeBase, str, Path, None] = None
                    ) -> tuple[list[Accuracy], list[BadRecord]]:
    """``kb verifiers``: every verifier with its accuracy, best first, and the record files
    left out of it (:func:`load_records_checked`).

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails.
    """
    records, bad = load_records_checked(kb)
    acc = verifier_accuracy(records)
    return sorted(acc.values(), key=lambda a: (-a.rate, -a.counted, a.verifier)), bad


def accuracy_table(kb: Union[KnowledgeBase, str, Path, None] = None) -> list[Accuracy]:
    """Every verifier with its accuracy, best first (:func:`accuracy_report` without the
    files left out).

    Raises NotAKnowledgeBase or ConfigError (environment, exit 2) when there is no readable KB,
    GitError when git fails.
    """
    return accuracy_report(kb)[0]


__all__ = ["records_dir", "load_records", "load_records_checked", "accuracy_report",
           "accuracy_table"]
