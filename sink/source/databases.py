"""SQLite and PostgreSQL query snapshots: one read transaction each.

SQLite: the file is opened read-only and the whole query runs inside one ``BEGIN`` ... ``COMMIT``
read transaction, so a concurrent writer is invisible. Text comes back as bytes and is decoded
here strictly, so invalid UTF-8 is reported with its column, not as a driver error that quotes the
value. PostgreSQL: ``BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`` and a server-side cursor
(bounded memory); the version is the transaction's ``pg_current_snapshot()``. The DSN comes from
the environment variable the workload names; it is never logged or stored.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator, Mapping
from datetime import date
from pathlib import Path
from typing import Any

from sink.contracts.source import PostgresqlQuerySource, SqliteQuerySource
from sink.source.errors import SourceError
from sink.source.ndjson import decode

_FETCH_ROWS = 2000


def _decoded(name: str, value: object, number: int, limit: int) -> object:
    if isinstance(value, bytes):
        if len(value) > limit:
            raise SourceError("source.field_too_large", "a value is longer than max_field_bytes", field=name,
                              record=number)
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise SourceError("source.invalid_utf8", "a text value is not valid UTF-8", field=name,
                              record=number) from None
    if isinstance(value, str) and len(value) > limit:
        raise SourceError("source.field_too_large", "a value is longer than max_field_bytes", field=name,
                          record=number)
    return value


class SqliteSnapshot:
    kind = "sqlite_query"

    def __init__(self, path: Path, spec: SqliteQuerySource, scope_from: date, scope_to: date) -> None:
        if not path.is_file():
            raise SourceError("source.not_found", "the SQLite database file does not exist")
        self._spec = spec
        try:
            self._conn: sqlite3.Connection | None = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                                                   isolation_level=None)
            self._conn.text_factory = bytes
            self._conn.execute("BEGIN")
            self._cursor = self._conn.execute(spec.query, {"scope_from": scope_from.isoformat(),
                                                           "scope_to": scope_to.isoformat()})
        except sqlite3.Error as exc:
            self.close()
            raise SourceError("source.query_failed", f"the SQLite query failed ({type(exc).__name__})") from None
        self._columns = [str(column[0]) for column in self._cursor.description or ()]

    def columns(self) -> list[str] | None:
        return list(self._columns)

    def records(self) -> Iterator[tuple[int, Mapping[str, object]]]:
        number = 0
        limit = self._spec.max_field_bytes
        try:
            while batch := self._cursor.fetchmany(_FETCH_ROWS):
                for row in batch:
                    number += 1
                    yield number, {name: _decoded(name, value, number, limit)
                                   for name, value in zip(self._columns, row, strict=True)}
        except sqlite3.Error as exc:
            raise SourceError("source.query_failed", f"reading the SQLite query failed ({type(exc).__name__})",
                              record=number) from None

    def finish(self) -> str:
        assert self._conn is not None
        version = self._conn.execute("PRAGMA schema_version").fetchone()[0]
        return f"sqlite:read_transaction:schema_version={int(version)}"

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            self._conn.close()
            self._conn = None


class SqliteSourcePort:
    def __init__(self, spec: SqliteQuerySource, base_dir: Path) -> None:
        self._spec = spec
        path = Path(spec.path)
        self._path = path if path.is_absolute() else base_dir / path

    def open(self, scope_from: date, scope_to: date) -> SqliteSnapshot:
        return SqliteSnapshot(self._path, self._spec, scope_from, scope_to)


class _JsonColumnRefused(Exception):
    def __init__(self, error: SourceError) -> None:
        self.error = error


def _json_column(data: bytes | str) -> Any:
    try:
        return decode(data, 0)
    except SourceError as error:
        raise _JsonColumnRefused(error) from None


class PostgresqlSnapshot:
    kind = "postgresql_query"

    def __init__(self, dsn: str, spec: PostgresqlQuerySource, scope_from: date, scope_to: date) -> None:
        import psycopg  # noqa: PLC0415 - optional driver, loaded only for this source kind
        from psycopg.types.json import set_json_loads  # noqa: PLC0415

        self._psycopg = psycopg
        self._spec = spec
        try:
            self._conn: Any = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise SourceError("source.unavailable", f"PostgreSQL is unreachable ({type(exc).__name__})") from None
        # json/jsonb columns are parsed under the NDJSON reader's bounds (depth, number length,
        # duplicate members), not by json.loads, which fails on them with RecursionError/ValueError.
        set_json_loads(_json_column, self._conn)
        try:
            self._conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            # The snapshot is taken by the first query of the transaction: this one.
            snapshot = self._conn.execute("SELECT pg_current_snapshot()::text").fetchone()
            self._version = str(snapshot[0] if snapshot else "")
            self._cursor = self._conn.cursor(name="restproof_freeze")
            self._cursor.itersize = _FETCH_ROWS
            self._cursor.execute(spec.query, {"scope_from": scope_from, "scope_to": scope_to})
            self._columns = [str(column.name) for column in self._cursor.description or ()]
        except psycopg.Error as exc:
            self.close()
            raise SourceError("source.query_failed", f"the PostgreSQL query failed ({type(exc).__name__})") from None

    def columns(self) -> list[str] | None:
        return list(self._columns)

    def records(self) -> Iterator[tuple[int, Mapping[str, object]]]:
        number = 0
        limit = self._spec.max_field_bytes
        try:
            for row in self._cursor:
                number += 1
                yield number, {name: _decoded(name, value, number, limit)
                               for name, value in zip(self._columns, row, strict=True)}
        except _JsonColumnRefused as refused:
            raise SourceError(refused.error.code, refused.error.message, record=number + 1) from None
        except self._psycopg.Error as exc:
            raise SourceError("source.query_failed", f"reading the PostgreSQL query failed ({type(exc).__name__})",
                              record=number) from None

    def finish(self) -> str:
        return f"postgresql:repeatable_read:snapshot={self._version}"

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(self._psycopg.Error):
                conn.execute("ROLLBACK")
            conn.close()


class PostgresqlSourcePort:
    def __init__(self, spec: PostgresqlQuerySource, environ: Mapping[str, str] | None = None) -> None:
        self._spec = spec
        self._environ = os.environ if environ is None else environ

    def open(self, scope_from: date, scope_to: date) -> PostgresqlSnapshot:
        dsn = self._environ.get(self._spec.dsn_env)
        if not dsn:
            raise SourceError("source.missing_dsn", "the DSN environment variable is not set",
                              field=self._spec.dsn_env)
        return PostgresqlSnapshot(dsn, self._spec, scope_from, scope_to)
