"""PostgreSQL source: one REPEATABLE READ transaction; a concurrent commit is invisible."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from sink.artifacts import LocalArtifactStore
from sink.contracts.source import PostgresqlQuerySource
from sink.source.databases import PostgresqlSourcePort
from sink.source.errors import SourceError
from tests.source.so_helpers import run_freeze

ROW = (date(2026, 3, 1), "00017", Decimal("1.5"), "Москва", True,
       datetime(2026, 3, 1, 8, 0, tzinfo=UTC), 3)


@pytest.fixture
def table(pg_dsn: str) -> Iterator[str]:
    schema = f"src_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.m (business_date date, station_id text, reading numeric, label text,"
                     " valid boolean, observed_at timestamptz, sample_count integer)")
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {schema}.m VALUES (%s, %s, %s, %s, %s, %s, %s)", [ROW] * 3000)
    try:
        yield schema
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _port(schema: str, dsn: str) -> PostgresqlSourcePort:
    query = f"SELECT * FROM {schema}.m WHERE business_date >= %(scope_from)s AND business_date < %(scope_to)s"
    spec = PostgresqlQuerySource(type="postgresql_query", dsn_env="RESTPROOF_TEST_SOURCE_DSN", query=query)
    return PostgresqlSourcePort(spec, environ={"RESTPROOF_TEST_SOURCE_DSN": dsn})


def test_repeatable_read_hides_a_concurrent_commit(pg_dsn: str, table: str) -> None:
    snapshot = _port(table, pg_dsn).open(date(2026, 3, 1), date(2026, 3, 2))
    records = snapshot.records()
    next(records)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"INSERT INTO {table}.m VALUES (%s, %s, %s, %s, %s, %s, %s)", ROW)
    assert 1 + sum(1 for _ in records) == 3000
    assert snapshot.finish().startswith("postgresql:repeatable_read:snapshot=")
    snapshot.close()


def test_typed_values_freeze(pg_dsn: str, table: str, tmp_path: Path) -> None:
    parent = run_freeze(_port(table, pg_dsn), LocalArtifactStore(tmp_path))
    assert parent.row_count == 3000
    first = b"".join(LocalArtifactStore(tmp_path).open(parent.rows_ref).chunks()).split(b"\r\n")[0]
    assert first == "2026-03-01,00017,1.500,Москва,true,2026-03-01T08:00:00Z,3".encode()


def test_missing_dsn_is_a_stable_error(table: str) -> None:
    spec = PostgresqlQuerySource(type="postgresql_query", dsn_env="RESTPROOF_UNSET_DSN", query="SELECT 1")
    with pytest.raises(SourceError) as caught:
        PostgresqlSourcePort(spec, environ={}).open(date(2026, 3, 1), date(2026, 3, 2))
    assert caught.value.code == "source.missing_dsn"


def test_connection_failure_never_shows_the_dsn() -> None:
    sentinel = "SENTINEL-9d2e-DSN-PASSWORD"
    spec = PostgresqlQuerySource(type="postgresql_query", dsn_env="RESTPROOF_TEST_DSN", query="SELECT 1")
    environ = {"RESTPROOF_TEST_DSN": f"postgresql://user:{sentinel}@127.0.0.1:1/db?connect_timeout=2"}
    with pytest.raises(SourceError) as caught:
        PostgresqlSourcePort(spec, environ=environ).open(date(2026, 3, 1), date(2026, 3, 2))
    assert caught.value.code == "source.unavailable"
    assert sentinel not in str(caught.value) and caught.value.__cause__ is None


@pytest.mark.parametrize(
    ("column", "value", "code", "field"),
    [
        ("reading numeric", "1e100", "source.number_too_large", "reading"),
        ("reading numeric", "'NaN'", "source.type_drift", "reading"),
        ("label json", "'\"" + "SENTINEL-4c1d-ROW-CANARY" + "\\ud800\"'", "source.invalid_unicode", "label"),
        ("label jsonb", "'" + "[" * 3000 + "]" * 3000 + "'", "source.nesting_too_deep", None),
        ("label json", "'{\"a\": \"SENTINEL-4c1d-ROW-CANARY\", \"a\": 2}'", "source.duplicate_field", None),
        ("label json", "'" + "9" * 5000 + "'", "source.number_too_large", "label"),
        # PostgreSQL holds it (its range ends in 294276), Python's datetime can not: the driver refuses.
        ("observed_at timestamptz", "'9999-12-31T23:59:59-15:00'", "source.query_failed", None),
        ("observed_at timestamptz", "'infinity'", "source.query_failed", None),
    ],
)
def test_hostile_column_values_take_a_stable_code(pg_dsn: str, tmp_path: Path, column: str, value: str, code: str,
                                                  field: str | None) -> None:
    schema = f"src_{uuid.uuid4().hex[:12]}"
    name = column.split(maxsplit=1)[0]
    columns = ["business_date date", "station_id text", "reading numeric", "label text", "valid boolean",
               "observed_at timestamptz", "sample_count integer"]
    columns = [column if c.split(maxsplit=1)[0] == name else c for c in columns]
    values = ["'2026-03-01'", "'00017'", "1.5", "'x'", "true", "'2026-03-01T08:00:00Z'", "3"]
    values[[c.split(maxsplit=1)[0] for c in columns].index(name)] = value
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.m ({', '.join(columns)})")
        conn.execute(f"INSERT INTO {schema}.m VALUES ({', '.join(values)})")  # type: ignore[arg-type]
    try:
        with pytest.raises(SourceError) as caught:
            run_freeze(_port(schema, pg_dsn), LocalArtifactStore(tmp_path))
        assert (caught.value.code, caught.value.evidence.get("field")) == (code, field)
        assert "SENTINEL" not in str(caught.value) + str(caught.value.to_dict())
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
