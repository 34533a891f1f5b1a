"""Admission into the PostgreSQL journal: the same topology, one transaction, resume without resealing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import psycopg
import pytest

from sink.artifacts import LocalArtifactStore
from sink.journal.durability import Durability
from sink.journal.markers import FileMarkerStore
from sink.journal.postgres import open_postgres_journal
from sink.preparation import prepare
from tests.payload.pl_helpers import GOLDEN_RECORDS, ListSource, bundled_plan


@pytest.fixture
def schema(pg_dsn: str) -> Iterator[str]:
    name = "prep_" + uuid.uuid4().hex[:12]
    try:
        yield name
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def test_postgres_admission_and_resume(pg_dsn: str, schema: str, tmp_path: Path) -> None:
    # The shared test server runs with fsync=off: only the loudly named tests-only mode opens on it.
    journal = open_postgres_journal(pg_dsn, schema=schema, markers=FileMarkerStore(tmp_path / "markers"),
                                    durability=Durability.NON_DURABLE_TESTS_ONLY)
    try:
        store = LocalArtifactStore(tmp_path / "artifacts")
        plan = bundled_plan("measurements-sync")
        first = prepare(plan, date(2026, 3, 1), date(2026, 3, 8), source=ListSource(GOLDEN_RECORDS), store=store,
                        journal=journal)
        assert first.admitted.created and len(first.admitted.children) > 1
        # The same rows again resume the admitted parent (its boundary is frozen only to compare).
        untouched = ListSource(GOLDEN_RECORDS)
        again = prepare(plan, date(2026, 3, 1), date(2026, 3, 8), source=untouched, store=store, journal=journal)
        assert again.resumed and again.topology is None
        assert [c.descriptor for c in again.admitted.children] == [c.descriptor for c in first.admitted.children]
    finally:
        journal.close()
