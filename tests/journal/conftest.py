"""The `journal` fixture: one DeliveryJournalPort per test, parametrised over both adapters.

* sqlite: a fresh file under tmp_path, with an injected clock the test can advance (that clock
  IS the SQLite journal's database clock).
* postgres: a fresh schema in the session server from `pg_dsn` (tests/conftest.py), built by
  `sink.journal.postgres.open_postgres_journal`; time advances by really sleeping, so lease tests
  use short TTLs.

Whether PostgreSQL can be had at all is decided by `pg_dsn` (skip with the reason locally, fail in
CI where RESTPROOF_REQUIRE_POSTGRES=1).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort
from sink.journal.postgres import open_postgres_journal
from sink.journal.sqlite.adapter import open_sqlite_journal


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


def _open_postgres(request: pytest.FixtureRequest, markers: FileMarkerStore) -> Iterator[JournalEnv]:
    dsn = request.getfixturevalue("pg_dsn")
    schema = "jn_" + uuid.uuid4().hex[:12]
    journal = open_postgres_journal(dsn, schema=schema, markers=markers)
    try:
        yield JournalEnv(journal, markers, lambda delta: time.sleep(delta.total_seconds()), "postgres")
    finally:
        journal.close()


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
