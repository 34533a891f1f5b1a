"""Durability of critical commits (seed: "Zero-RPO mutation admission", "Production journal").

A critical transaction (admission, CAS transitions, the critical submit, frontier promotion, epoch
attestation, marker retirement) authorises an external action once it returns, so its commit must
survive a crash of the journal server. Both adapters refuse to grant on settings that can lose an
acknowledged commit: PostgreSQL ``fsync`` off or ``synchronous_commit`` below ``on`` (pinned per
transaction), SQLite ``synchronous`` below FULL.

``Durability.NON_DURABLE_TESTS_ONLY`` skips those checks so that tests which are not about
durability can run against a fast, lossy throwaway server. It exists for tests only: no CLI, no
configuration file and no default ever selects it, and opening a journal in that mode logs a
warning. Even then an ordinal is never granted twice (the marker's grant claim decides that).
"""

from __future__ import annotations

from enum import StrEnum

from sink.journal.port import JournalDurabilityNotProven


class Durability(StrEnum):
    DURABLE = "durable"
    NON_DURABLE_TESTS_ONLY = "non_durable_tests_only"


NON_DURABLE_WARNING = (
    "journal opened NON-DURABLE (tests only): acknowledged commits can be lost on a crash; "
    "never use this mode outside tests"
)

# PostgreSQL synchronous_commit levels that wait for the local WAL flush: `on` and the stronger
# `remote_apply`. Everything else (off, local, remote_write, a value this code does not know) is refused.
_DURABLE_SYNCHRONOUS_COMMIT = frozenset({"on", "remote_apply"})
REQUIRED_SYNCHRONOUS_COMMIT = "on"
# SQLite PRAGMA synchronous values: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA.
SQLITE_SYNCHRONOUS_FULL = 2


def check_postgres_settings(fsync: str, synchronous_commit: str, *, transaction: str) -> None:
    """Refuse a critical commit unless the server fsyncs and the commit waits for its WAL flush."""
    if fsync.strip().lower() != "on":
        raise JournalDurabilityNotProven(
            f"{transaction}: the journal server runs with fsync={fsync}; a committed grant could be lost "
            "on a crash, so it is refused (nothing was written)"
        )
    if synchronous_commit.strip().lower() not in _DURABLE_SYNCHRONOUS_COMMIT:
        raise JournalDurabilityNotProven(
            f"{transaction}: synchronous_commit={synchronous_commit} is below "
            f"{REQUIRED_SYNCHRONOUS_COMMIT}; the critical commit is refused (nothing was written)"
        )


def check_sqlite_synchronous(level: int, *, transaction: str) -> None:
    """Refuse a critical SQLite write unless every commit syncs the WAL (synchronous FULL or EXTRA)."""
    if level < SQLITE_SYNCHRONOUS_FULL:
        raise JournalDurabilityNotProven(
            f"{transaction}: SQLite synchronous={level} is below FULL (2); the last commits could roll "
            "back after a power loss while their markers survive, so the write is refused"
        )
