"""Workload ``source:`` section: where the rows of one delivery come from.

Five closed kinds: a CSV file, an NDJSON file, a SQLite query, a PostgreSQL query and a seeded
synthetic generator (tests and benchmarks). A file path is relative to the workload file's
directory. A query receives the scope as named parameters (``:scope_from``/``:scope_to`` in
SQLite, ``%(scope_from)s``/``%(scope_to)s`` in PostgreSQL); rows outside the scope are dropped
by the freeze anyway. A database credential is never written here: PostgreSQL names the
environment variable holding its DSN.

Pure data: no I/O.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from sink.contracts._base import ContractModel, contract_error

SOURCE_KINDS = ("csv_file", "ndjson_file", "sqlite_query", "postgresql_query", "synthetic")
MAX_QUERY_LENGTH = 8192
DEFAULT_MAX_FIELD_BYTES = 1_048_576
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")


def _check_path(value: str) -> str:
    if not value or len(value) > 1024 or "\x00" in value:
        raise contract_error("contract.invalid_value", "a source path is 1-1024 characters without NUL")
    return value


def _check_query(value: str) -> str:
    if not value.strip() or len(value) > MAX_QUERY_LENGTH:
        raise contract_error("contract.invalid_value", f"a query is 1-{MAX_QUERY_LENGTH} characters")
    if ";" in value.strip().rstrip(";"):
        raise contract_error("contract.invalid_value", "one statement only")
    return value


class _Bounded(ContractModel):
    # A single field longer than this is refused with field evidence (a hostile source must not
    # make the freeze allocate without bound).
    max_field_bytes: StrictInt = Field(default=DEFAULT_MAX_FIELD_BYTES, ge=1, le=64 * 1_048_576)


class _FileSource(_Bounded):
    path: str

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return _check_path(value)


class _QuerySource(_Bounded):
    query: str

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        return _check_query(value)


class CsvFileSource(_FileSource):
    type: Literal["csv_file"]
    delimiter: Literal[",", ";", "\t", "|"] = ","
    # What an empty CSV field means: CSV text can not tell null from "" by itself.
    empty_field: Literal["null", "empty_string"] = "null"


class NdjsonFileSource(_FileSource):
    type: Literal["ndjson_file"]


class SqliteQuerySource(_FileSource, _QuerySource):
    type: Literal["sqlite_query"]


class PostgresqlQuerySource(_QuerySource):
    type: Literal["postgresql_query"]
    dsn_env: str

    @field_validator("dsn_env")
    @classmethod
    def _env(cls, value: str) -> str:
        if not _ENV_NAME.fullmatch(value):
            raise contract_error("contract.invalid_value", "dsn_env names an environment variable (A-Z 0-9 _)")
        return value


class SyntheticSource(_Bounded):
    """Deterministic rows of the measurements shape: the same seed and date give the same rows."""

    type: Literal["synthetic"]
    seed: StrictInt = Field(ge=0)
    min_rows_per_day: StrictInt = Field(ge=0, le=10_000_000)
    max_rows_per_day: StrictInt = Field(ge=0, le=10_000_000)
    # ``skewed``: roughly one day in seven carries ``heavy_factor`` times the rows.
    distribution: Literal["uniform", "skewed"] = "uniform"
    heavy_factor: StrictInt = Field(default=20, ge=1, le=1000)
    # Extra characters in the ``label`` field, to make large decoded volumes cheaply.
    padding: StrictInt = Field(default=0, ge=0, le=1_000_000)

    @model_validator(mode="after")
    def _ordered(self) -> SyntheticSource:
        if self.min_rows_per_day > self.max_rows_per_day:
            raise contract_error("contract.inconsistent_policy", "min_rows_per_day exceeds max_rows_per_day")
        return self


SourceSpec = Annotated[
    CsvFileSource | NdjsonFileSource | SqliteQuerySource | PostgresqlQuerySource | SyntheticSource,
    Field(discriminator="type"),
]


def check_source_kind(value: object) -> object:
    if isinstance(value, dict) and value.get("type") not in SOURCE_KINDS:
        raise contract_error(
            "contract.unsupported_source",
            "source.type must be csv_file, ndjson_file, sqlite_query, postgresql_query or synthetic",
        )
    return value
