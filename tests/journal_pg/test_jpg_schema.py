"""Schema, migrations and index behaviour of the PostgreSQL journal."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from jpg_support import TESTS_ONLY, daily_parent, drop_schema, new_schema

from sink.journal.markers import FileMarkerStore
from sink.journal.port import (
    JournalConfigurationError,
    JournalRejection,
    JournalSchemaMismatch,
    JournalUnavailable,
    NotAJournal,
)
from sink.journal.postgres import open_postgres_journal
from sink.journal.postgres.schema import bundled_migrations

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def _query(dsn: str, schema: str, sql: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}", public')
        return conn.execute(sql).fetchall()


def test_jpg_concurrent_opens_of_a_new_schema_migrate_once(pg_dsn: str, tmp_path: Path) -> None:
    schema = new_schema()
    markers = FileMarkerStore(tmp_path)
    try:
        with ThreadPoolExecutor(4) as pool:
            journals = list(pool.map(lambda _: open_postgres_journal(
                pg_dsn, durability=TESTS_ONLY, schema=schema, markers=markers), range(4)))
        assert {j.schema_version() for j in journals} == {bundled_migrations()[-1].version}
        for journal in journals:
            journal.close()
        rows = _query(pg_dsn, schema, "SELECT version, name FROM schema_version ORDER BY version")
        assert rows == [(m.version, m.name) for m in bundled_migrations()]
    finally:
        drop_schema(pg_dsn, schema)


def test_jpg_schema_newer_than_the_code_is_refused(pg_dsn: str, tmp_path: Path) -> None:
    schema = new_schema()
    try:
        open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=FileMarkerStore(tmp_path)).close()
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"INSERT INTO {schema}.schema_version (version, name) VALUES (999, '0999_future.sql')")
        with pytest.raises(JournalConfigurationError, match="newer than this code"):
            open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=FileMarkerStore(tmp_path))
    finally:
        drop_schema(pg_dsn, schema)


@pytest.mark.parametrize("bad", ["", "Upper", "1starts_with_digit", "semi;colon", "x" * 64, 'quo"te'])
def test_jpg_invalid_schema_names_are_refused(pg_dsn: str, tmp_path: Path, bad: str) -> None:
    with pytest.raises(JournalConfigurationError, match="schema must be"):
        open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=bad, markers=FileMarkerStore(tmp_path))


def test_jpg_unknown_option_is_refused(pg_dsn: str, tmp_path: Path) -> None:
    with pytest.raises(JournalConfigurationError, match="unknown PostgreSQL journal option"):
        open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema="unused", markers=FileMarkerStore(tmp_path),
                              colour="blue")


def test_jpg_unreachable_server_is_journal_unavailable_without_secrets(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    secret = "sentinel-password-7f3a"
    dsn = f"host=127.0.0.1 port={port} user=postgres password={secret} dbname=postgres connect_timeout=2"
    with pytest.raises(JournalUnavailable) as refused:
        open_postgres_journal(dsn, schema="unreachable", markers=FileMarkerStore(tmp_path), connect_timeout_s=2)
    assert secret not in str(refused.value)


def test_jpg_overlap_queries_can_use_the_gist_index_and_the_map_rejects_overlap(pg_dsn: str, tmp_path: Path) -> None:
    schema = new_schema()
    journal = open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=FileMarkerStore(tmp_path))
    try:
        journal.admit_parent(daily_parent("gist", 30))
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}", public')
            conn.execute("SET enable_seqscan = off")
            plan = "\n".join(str(r[0]) for r in conn.execute(
                "EXPLAIN SELECT operation_id FROM operations WHERE effect_conflict_domain = 'domain-a' "
                "AND scope_range && tstzrange('2026-08-01', '2026-08-02', '[)')").fetchall())
            assert "operations_effect_scope_gist" in plan
            conn.execute("INSERT INTO rest_delivery_effect_domain_lock VALUES ('d') ON CONFLICT DO NOTHING")
            conn.execute("INSERT INTO applied_generation_map VALUES ('d', tstzrange('2026-08-01', '2026-08-03', '[)'), "
                         "'2026-10-01', 0)")
            # Half-open: touching is fine, overlapping is an exclusion violation (SQLSTATE 23P01).
            conn.execute("INSERT INTO applied_generation_map VALUES ('d', tstzrange('2026-08-03', '2026-08-04', '[)'), "
                         "'2026-10-02', 0)")
            with pytest.raises(psycopg.errors.ExclusionViolation):
                conn.execute("INSERT INTO applied_generation_map VALUES ('d', "
                             "tstzrange('2026-08-02', '2026-08-05', '[)'), '2026-10-03', 0)")
    finally:
        journal.close()
        drop_schema(pg_dsn, schema)


def test_jpg_read_only_opening_creates_migrates_and_writes_nothing(pg_dsn: str, tmp_path: Path) -> None:
    """Inspection opens an existing journal read-only: a missing schema is NotAJournal (and stays
    missing), an older one is a mismatch (never migrated), and a write is refused by the server."""
    schema = new_schema()
    markers = FileMarkerStore(tmp_path)
    try:
        with pytest.raises(NotAJournal, match="no restproof journal"):
            open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=markers, read_only=True)
        assert _query(pg_dsn, "public", f"SELECT count(*) FROM pg_namespace WHERE nspname = '{schema}'") == [(0,)]
        writer = open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=markers)
        admitted = writer.admit_parent(daily_parent("ro", 2))
        writer.close()
        viewer = open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=markers, read_only=True)
        try:
            assert viewer.schema_version() == bundled_migrations()[-1].version
            parent = viewer.get_parent(admitted.parent.parent_id)
            assert parent is not None and parent.parent_id == admitted.parent.parent_id
            with pytest.raises(JournalRejection, match="read-only"):
                viewer.configure_capacity("scope", 1)
        finally:
            viewer.close()
        assert _query(pg_dsn, schema, "SELECT count(*) FROM capacity_scopes") == [(0,)]
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"DELETE FROM {schema}.schema_version WHERE version = {bundled_migrations()[-1].version}")
        with pytest.raises(JournalSchemaMismatch, match="older than this code"):
            open_postgres_journal(pg_dsn, durability=TESTS_ONLY, schema=schema, markers=markers, read_only=True)
    finally:
        drop_schema(pg_dsn, schema)
