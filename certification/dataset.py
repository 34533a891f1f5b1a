"""What a correct delivery applies, computed by the harness's own reader of the dataset.

The judge never asks the sink (nor its ``delivery bundle``) what should arrive: it reads the
workload's source itself (CSV, NDJSON or a SQLite query, with the standard library), applies the
workload's payload mapping by the documented value rules (docs/payloads.md, "Mappings"), and keeps,
per day of the delivered scope, the multiset of rows a correct delivery leaves at the receiver.

Rows are compared as *values*, not bytes: ``12.500`` and ``12.5`` are the same decimal, a zoned
timestamp is its UTC instant, an empty CSV field of a nullable field is null. So a sink may choose
any honest encoding (CSV or JSON, any batching) and still be judged on what it applied; a sink that
changes a value is caught whatever it keeps the row count at.

Rows never leave this process: histories hold counts and digests, reasons name fields and days.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from pydantic import ValidationError

from certification.documents import DocumentError, load_yaml, read_bytes
from sink.contracts.mapping import MappedField, PayloadMapping
from sink.contracts.source import CsvFileSource, NdjsonFileSource, SqliteQuerySource
from sink.contracts.workload import WorkloadManifest

MAX_SOURCE_BYTES = 256 * 1024 * 1024
_INTEGER = re.compile(r"^-?(0|[1-9][0-9]*)\Z")
_DECIMAL = re.compile(r"^-?[0-9]+(\.[0-9]+)?\Z")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
Value = tuple[str, str] | None
"""A typed value: (type tag, canonical text), or None for null. Tags keep ``"1"`` and ``1`` apart."""
RowKey = tuple[tuple[str, Value], ...]
"""One row as sorted (field, value) pairs: hashable, so a day's rows are a Counter (a multiset)."""


class DatasetError(ValueError):
    """The dataset cannot be read as the workload describes (invalid input: exit 2)."""


MAX_RANGE_DAYS = 36_600
"""About a century: a longer range is no delivery scope, and listing its days would cost without bound."""


class RangeTooLong(ValueError):
    """A range longer than MAX_RANGE_DAYS days."""


def day_range(start: str, end: str) -> tuple[str, ...]:
    """Every day of the half-open scope [start, end); RangeTooLong beyond MAX_RANGE_DAYS days."""
    first, last = date.fromisoformat(start), date.fromisoformat(end)
    if (last - first).days > MAX_RANGE_DAYS:
        raise RangeTooLong(f"a range of more than {MAX_RANGE_DAYS} days")
    return tuple((first + timedelta(days=n)).isoformat() for n in range((last - first).days))


def clipped_days(start: str, end: str, universe: Sequence[str]) -> tuple[str, ...]:
    """The days of [start, end) a checker needs: all of them, or for a range too long to list, the
    universe's days inside it plus its own first and last day (which lie outside the universe)."""
    try:
        return day_range(start, end)
    except RangeTooLong:
        last = (date.fromisoformat(end) - timedelta(days=1)).isoformat()
        inside = tuple(day for day in universe if start <= day < end)
        return tuple(sorted({start, last, *inside}))


def _decimal(text: str) -> str:
    number = Decimal(text).normalize()
    return format(number.copy_abs() if number.is_zero() else number, "f")  # -0 is 0, as the sink writes it


def _timestamp(text: str) -> str | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.astimezone(UTC).isoformat()


def _valid_date(text: str) -> bool:
    if not _DATE.fullmatch(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def typed_value(spec: MappedField, raw: object) -> Value | str:
    """The semantic value of one field, or an error text (naming the rule, never the value).

    ``raw`` is what a reader produced: text from CSV or from the receiver's row encoding, or a JSON
    scalar (NDJSON, SQLite). The empty string of a nullable field that is not ``preserve`` is null:
    CSV cannot tell them apart, and the compiler refuses a mapping that would need it to."""
    if raw is None or (raw == "" and spec.nullable and (spec.type != "string" or spec.empty_string != "preserve")):
        return None if spec.nullable else "null in a non-nullable field"
    if spec.type == "string":
        if not isinstance(raw, str):
            return "not text"
        if raw == "" and spec.empty_string == "refuse":
            return "an empty string the mapping refuses"
        return ("str", raw)
    if isinstance(raw, bool):
        return ("bool", "true" if raw else "false") if spec.type == "boolean" else "a boolean"
    if spec.type == "boolean":
        mapped = {"true": "true", "false": "false", "1": "true", "0": "false"}.get(str(raw))
        return ("bool", mapped) if mapped is not None else "not a boolean"
    text = str(raw) if isinstance(raw, int | Decimal | str) else None
    if text is None:
        return "not a scalar"
    if spec.type == "integer":
        return ("int", str(int(text))) if _INTEGER.fullmatch(text) else "not an integer"
    if spec.type == "decimal":
        if isinstance(raw, Decimal):
            text = format(raw, "f")  # 1E-7 as its digits, so the scale applies to it too
        if not _DECIMAL.fullmatch(text):
            return "not a decimal"
        fraction = text.partition(".")[2]
        if spec.scale is not None and len(fraction.rstrip("0")) > spec.scale:
            return "more fraction digits than the scale"
        return ("dec", _decimal(text))
    if spec.type == "date":
        return ("date", text) if _valid_date(text) else "not a YYYY-MM-DD date"
    stamp = _timestamp(text)
    return ("ts", stamp) if stamp is not None else "not a zoned ISO 8601 timestamp"


@dataclass(frozen=True, slots=True)
class Dataset:
    """The expected content of one delivery: per day of the scope, the rows a correct sink applies."""

    resource: str
    mutation_kind: str
    scope_field: str
    fields: tuple[MappedField, ...]
    universe: tuple[str, ...]
    expected: Mapping[str, Counter[RowKey]]
    """day -> multiset of rows (every day of the universe, empty days included)."""

    def rows_of(self, day: str) -> Counter[RowKey]:
        return self.expected.get(day, Counter())

    def row_count(self, day: str) -> int:
        return sum(self.rows_of(day).values())

    def days_with_rows(self) -> tuple[str, ...]:
        return tuple(day for day in self.universe if self.row_count(day))

    def receiver_row(self, values: Mapping[str, str | None]) -> RowKey | None:
        """A row as the receiver holds it, in the same semantic form; None when a value does not
        read under its field's type or the row has a field the mapping does not deliver."""
        names = {spec.name for spec in self.fields}
        if set(values) - names:
            return None
        pairs: list[tuple[str, Value]] = []
        for spec in self.fields:
            value = typed_value(spec, values.get(spec.name))
            if isinstance(value, str):
                return None
            pairs.append((spec.name, value))
        return tuple(sorted(pairs, key=lambda pair: pair[0]))

    def digest(self) -> str:
        """Names the expected content without holding it (for the history)."""
        hasher = hashlib.sha256()
        for day in self.universe:
            for row, count in sorted(self.rows_of(day).items(), key=repr):
                hasher.update(f"{day}|{count}|{row!r}\n".encode())
        return "sha256:" + hasher.hexdigest()


def row_digest(rows: Counter[RowKey]) -> str:
    hasher = hashlib.sha256()
    for row, count in sorted(rows.items(), key=repr):
        hasher.update(f"{count}|{row!r}\n".encode())
    return "sha256:" + hasher.hexdigest()


def _csv_rows(path: Path, spec: CsvFileSource) -> Iterator[tuple[int, dict[str, object]]]:
    try:
        text = read_bytes(path, limit=MAX_SOURCE_BYTES).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DatasetError(f"{path}: not UTF-8") from None
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=spec.delimiter, strict=True)
    try:
        header = next(reader)
        for number, record in enumerate(reader, start=2):
            if len(record) != len(header):
                raise DatasetError(f"{path}: line {number} has {len(record)} fields, the header {len(header)}")
            empty: object = None if spec.empty_field == "null" else ""
            yield number, {name: (empty if value == "" else value) for name, value in zip(header, record, strict=True)}
    except StopIteration:
        return
    except csv.Error as exc:
        raise DatasetError(f"{path}: not CSV ({exc})") from None


def _ndjson_rows(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    try:
        text = read_bytes(path, limit=MAX_SOURCE_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise DatasetError(f"{path}: not UTF-8") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            document = json.loads(line, parse_float=Decimal)
        except (ValueError, RecursionError):
            raise DatasetError(f"{path}: line {number} is not JSON") from None
        if not isinstance(document, dict):
            raise DatasetError(f"{path}: line {number} is not an object")
        yield number, document


def _sqlite_rows(path: Path, spec: SqliteQuerySource, scope: tuple[str, str]
                 ) -> Iterator[tuple[int, dict[str, object]]]:
    try:
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        raise DatasetError(f"{path}: cannot be opened read-only") from None
    try:
        cursor = connection.execute(spec.query, {"scope_from": scope[0], "scope_to": scope[1]})
        names = [column[0] for column in cursor.description or ()]
        for number, record in enumerate(cursor, start=1):
            yield number, {name: (Decimal(repr(value)) if isinstance(value, float) else value)
                           for name, value in zip(names, record, strict=True)}
    except sqlite3.Error as exc:
        raise DatasetError(f"{path}: the query failed ({type(exc).__name__})") from None
    finally:
        connection.close()


def _source_rows(workload_path: Path, source: object, scope: tuple[str, str]
                 ) -> Iterable[tuple[int, dict[str, object]]]:
    base = workload_path.parent
    if isinstance(source, CsvFileSource):
        return _csv_rows(base / source.path, source)
    if isinstance(source, NdjsonFileSource):
        return _ndjson_rows(base / source.path)
    if isinstance(source, SqliteQuerySource):
        return _sqlite_rows(base / source.path, source, scope)
    kind = getattr(source, "type", "none")
    raise DatasetError(f"{workload_path}: the harness reads csv_file, ndjson_file and sqlite_query sources, "
                       f"not {kind}: it cannot compute what a correct delivery applies")


def _mapping(workload_path: Path, mapping_ref: str, mappings_dir: Path | None) -> PayloadMapping:
    directory = mappings_dir if mappings_dir is not None else workload_path.parent.parent / "mappings"
    path = directory / f"{mapping_ref}.yaml"
    try:
        return PayloadMapping.model_validate(load_yaml(path))
    except ValidationError as exc:
        raise DatasetError(f"{path}: not a payload mapping ({exc.error_count()} problem(s))") from None


def _expected(rows: Iterable[tuple[int, dict[str, object]]], mapping: PayloadMapping,
              universe: Sequence[str]) -> dict[str, Counter[RowKey]]:
    expected: dict[str, Counter[RowKey]] = {day: Counter() for day in universe}
    scope = mapping.field(mapping.scope_field)
    for number, record in rows:
        pairs: list[tuple[str, Value]] = []
        for spec in mapping.fields:
            if spec.source_name not in record:
                raise DatasetError(f"source row {number}: no column {spec.source_name!r}")
            value = typed_value(spec, record[spec.source_name])
            if isinstance(value, str):
                raise DatasetError(f"source row {number}, field {spec.name!r}: {value}")
            pairs.append((spec.name, value))
        day_value = dict(pairs)[scope.name]
        if day_value is None:
            raise DatasetError(f"source row {number}: no scope date")
        if day_value[1] in expected:  # rows outside the scope are not part of this delivery
            expected[day_value[1]][tuple(sorted(pairs, key=lambda pair: pair[0]))] += 1
    return expected


def read_dataset(workload_path: Path, scope_from: str, scope_to: str, *, mappings_dir: Path | None = None) -> Dataset:
    """Read the workload's dataset for the half-open scope [scope_from, scope_to)."""
    try:
        workload = WorkloadManifest.model_validate(load_yaml(workload_path))
    except ValidationError as exc:
        raise DatasetError(f"{workload_path}: not a workload ({exc.error_count()} problem(s))") from None
    except DocumentError as exc:
        raise DatasetError(str(exc)) from None
    if not (_valid_date(scope_from) and _valid_date(scope_to)) or scope_from >= scope_to:
        raise DatasetError(f"scope [{scope_from}, {scope_to}) is not a non-empty range of YYYY-MM-DD days")
    try:
        mapping = _mapping(workload_path, workload.sink.payload.mapping_ref, mappings_dir)
    except DocumentError as exc:
        raise DatasetError(str(exc)) from None
    universe = day_range(scope_from, scope_to)
    source = getattr(workload, "source", None)
    try:
        expected = _expected(_source_rows(workload_path, source, (scope_from, scope_to)), mapping, universe)
    except DocumentError as exc:
        raise DatasetError(str(exc)) from None
    return Dataset(resource=workload.sink.resource, mutation_kind=workload.sink.mutation.kind,
                   scope_field=mapping.scope_field, fields=mapping.fields, universe=universe, expected=expected)
