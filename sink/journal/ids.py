"""Validated identifiers of journal rows and the deterministic operation and attempt ids.

Ids are derived with the project's canonical, length-delimited encoding (``sink.canonical``), so
the same admission always names the same operation in both adapters.
"""

from __future__ import annotations

import re
from datetime import datetime

from sink.canonical import hash_fields, is_digest

_UTC_INSTANT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_IDENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,255}\Z")
_ID_HEX_CHARS = 40


def require_digest(value: str, name: str) -> None:
    if not is_digest(value):
        raise ValueError(f"{name} must be 'sha256:<64 lowercase hex>'")


def require_ident(value: str, name: str) -> None:
    if not _IDENT.match(value):
        raise ValueError(f"{name} must be 1-256 characters of [A-Za-z0-9._:/@+=-]")


def require_utc_instant(value: str, name: str) -> None:
    # One fixed textual form makes lexicographic order equal chronological order in both adapters.
    if not _UTC_INSTANT.fullmatch(value):  # fullmatch: "$" would let a trailing newline through
        raise ValueError(f"{name} must be an ISO-8601 UTC instant 'YYYY-MM-DDTHH:MM:SSZ'")
    # The shape is checked above; the calendar (month, day of month, hour, minute, second) here,
    # by the C parser: strptime did the same at about twenty times the CPU, on every row read.
    datetime.fromisoformat(value[:-1])


def _stable_id(prefix: str, purpose: str, **parts: str | int) -> str:
    digest = hash_fields(purpose, dict(parts))
    return prefix + digest.removeprefix("sha256:")[:_ID_HEX_CHARS]


def operation_id_for(operation_namespace: str, delivery_key: str) -> str:
    """Deterministic operation id: the same admission always names the same operation."""
    return _stable_id(
        "op_", "journal.operation_id", operation_namespace=operation_namespace, delivery_key=delivery_key
    )


def attempt_id_for(operation_id: str, attempt_ordinal: int) -> str:
    """Deterministic attempt id (seed: "assign the next monotonic attempt_ordinal and deterministic attempt_id")."""
    return _stable_id("at_", "journal.attempt_id", operation_id=operation_id, attempt_ordinal=attempt_ordinal)
