"""The `journal` fixture: one DeliveryJournalPort per test, parametrised over both adapters.

* sqlite: a fresh file under tmp_path, with an injected clock the test can advance (that clock
  IS the SQLite journal's database clock).
* postgres: a fresh `jn_*` schema in the session server from `pg_dsn` (tests/conftest.py), built
  by `sink.journal.postgres.open_postgres_journal` and dropped at teardown; time advances by
  really sleeping, so lease tests use short TTLs.

Whether PostgreSQL can be had at all is decided by `pg_dsn` (skip with the reason locally, fail in
CI where RESTPROOF_REQUIRE_POSTGRES=1).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from sink.journal.durability import Durability
from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort
from sink.journal.postgres import open_postgres_journal
from sink.journal.sqlite.adapter import open_sqlite_journal

TESTS_ONLY = Durability.NON_DURABLE_TESTS_ONLY
"""The session server runs lossy (fsync=off, synchronous_commit=off) for speed: tests that are not
about durability open the journal in the explicit tests-only mode; durability has its own tests."""


class SteppingClock:
    """A controllable database clock for the SQLite adapter."""

    def __init__(self) -> None:
        self._now = datetime(2026, 9, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> None:
        self._now += delta


@dataclass
class JournalEnv:
    journal: DeliveryJournalPort
    markers: FileMarkerStore
    advance: Callable[[timedelta], None]
    kind: str


def drop_schema(dsn: str, schema: str) -> None:
    """DROP SCHEMA ... CASCADE through its own short connection (the journal's pool is closed by
    then), so per-test schemas do not pile up on a long-lived RESTPROOF_PG_DSN server."""
    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@contextmanager
def postgres_journal_env(dsn: str, markers: FileMarkerStore) -> Iterator[JournalEnv]:
    """A journal in a fresh `jn_*` schema, dropped again on exit (also when the test fails or the
    journal cannot be opened after creating part of it)."""
    schema = "jn_" + uuid.uuid4().hex[:12]
    try:
        journal = open_postgres_journal(dsn, durability=TESTS_ONLY, schema=schema, markers=markers)
        try:
            yield JournalEnv(journal, markers, lambda delta: time.sleep(delta.total_seconds()), "postgres")
        finally:
            journal.close()
    finally:
        drop_schema(dsn, schema)


def _open_postgres(request: pytest.FixtureRequest, markers: FileMarkerStore) -> Iterator[JournalEnv]:
    with postgres_journal_env(request.getfixturevalue("pg_dsn"), markers) as env:
        yield env


@pytest.fixture(params=["sqlite", "postgres"])
def journal_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[JournalEnv]:
    markers = FileMarkerStore(tmp_path / "markers")
    if request.param == "postgres":
        yield from _open_postgres(request, markers)
        return
    clock = SteppingClock()
    journal = open_sqlite_journal(tmp_path / "journal.sqlite3", markers=markers, clock=clock)
    try:
        yield JournalEnv(journal, markers, clock.advance, "sqlite")
    finally:
        journal.close()


@pytest.fixture
def journal(journal_env: JournalEnv) -> DeliveryJournalPort:
    return journal_env.journal
