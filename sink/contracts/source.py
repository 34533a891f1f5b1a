"""Workload ``source:`` section: where the rows of one delivery come from.

Five closed kinds: a CSV file, an NDJSON file, a SQLite query, a PostgreSQL query and a seeded
synthetic generator (tests and benchmarks). A file path is relative to the workload file's
directory. A query receives the scope as named parameters (``:scope_from``/``:scope_to`` in
SQLite, ``%(scope_from)s``/``%(scope_to)s`` in PostgreSQL); rows outside the scope are dropped
by the freeze anyway. A database credential is never written here: PostgreSQL names the
environment variable holding its DSN.

Also the catalogue of stable source input errors (``SourceError``): raised by the source
adapters, the normalizer and the sealer alike, so it lives below all of them.

Pure data: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from sink.contracts._base import ContractModel, contract_error
from sink.contracts.errors import ExitClass

SOURCE_KINDS = ("csv_file", "ndjson_file", "sqlite_query", "postgresql_query", "synthetic")
MAX_QUERY_LENGTH = 8192
DEFAULT_MAX_FIELD_BYTES = 1_048_576
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}\Z")


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


# ----- stable source errors -------------------------------------------------------------------
# Evidence names the field and the 1-based source record (or byte offset); it never carries the
# offending value, which may be a payload row or a secret pasted into the wrong column. A field
# name read from the source itself (an NDJSON member, a CSV header) is shown escaped and cut to
# ``MAX_EVIDENCE_CHARS``, so a hostile name can neither break the terminal or the JSON it is
# printed into (a lone surrogate is not encodable) nor smuggle a long value into a log line.

SOURCE_ERROR_CODES: dict[str, ExitClass] = {
    "source.not_found": ExitClass.INVALID_INPUT,
    "source.not_regular_file": ExitClass.INVALID_INPUT,
    "source.invalid_utf8": ExitClass.INVALID_INPUT,
    "source.field_too_large": ExitClass.INVALID_INPUT,
    "source.malformed_record": ExitClass.INVALID_INPUT,
    "source.unknown_field": ExitClass.INVALID_INPUT,
    "source.missing_field": ExitClass.INVALID_INPUT,
    "source.missing_scope_field": ExitClass.INVALID_INPUT,
    "source.type_drift": ExitClass.INVALID_INPUT,
    "source.null_not_allowed": ExitClass.INVALID_INPUT,
    "source.empty_not_allowed": ExitClass.INVALID_INPUT,
    "source.too_long": ExitClass.INVALID_INPUT,
    "source.duplicate_field": ExitClass.INVALID_INPUT,
    "source.invalid_unicode": ExitClass.INVALID_INPUT,
    "source.number_too_large": ExitClass.INVALID_INPUT,
    "source.nesting_too_deep": ExitClass.INVALID_INPUT,
    "source.out_of_range": ExitClass.INVALID_INPUT,
    "source.precision_loss": ExitClass.INVALID_INPUT,
    "source.changed_during_read": ExitClass.UNAVAILABLE,
    "source.query_failed": ExitClass.INVALID_INPUT,
    "source.missing_dsn": ExitClass.INVALID_INPUT,
    "source.unavailable": ExitClass.UNAVAILABLE,
    "source.not_configured": ExitClass.INVALID_INPUT,
    "source.empty_boundary": ExitClass.INVALID_INPUT,
    "payload.codec_unavailable": ExitClass.UNAVAILABLE,
    "payload.boundary_exhausted": ExitClass.INVALID_INPUT,
    "preparation.unsupported_scope": ExitClass.INVALID_INPUT,
}


MAX_EVIDENCE_CHARS = 64


def _printable(value: str | int) -> str | int:
    if isinstance(value, int):
        return value
    text = value.encode("utf-8", "backslashreplace").decode("utf-8")
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return text if len(text) <= MAX_EVIDENCE_CHARS else text[: MAX_EVIDENCE_CHARS - 3] + "..."


class SourceError(Exception):
    """Invalid or unavailable source input, found before anything is sealed or admitted."""

    def __init__(self, code: str, message: str, **evidence: str | int) -> None:
        if code not in SOURCE_ERROR_CODES:
            raise ValueError(f"unknown source error code {code}")
        self.code = code
        self.evidence: Mapping[str, str | int] = {key: _printable(value) for key, value in evidence.items()}
        where = ", ".join(f"{key}={value}" for key, value in sorted(self.evidence.items()))
        super().__init__(f"{code}: {message}" + (f" ({where})" if where else ""))
        self.message = message

    @property
    def exit_class(self) -> ExitClass:
        return SOURCE_ERROR_CODES[self.code]

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "evidence": dict(self.evidence)}
