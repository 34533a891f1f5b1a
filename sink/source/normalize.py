"""Source values -> normalized, typed row values under the pinned mapping.

Accepted inputs per type (text from CSV/NDJSON/SQLite, native values from PostgreSQL/NDJSON):

* string: text only (a number where text is mapped is type drift; leading zeros stay as text);
* integer: ``-?(0|[1-9][0-9]*)`` text or an int (never a bool or a float);
* decimal: ``-?digits[.digits]`` text, an int or a ``Decimal``; at most ``scale`` digits after
  the point (more is refused, never rounded); rendered with exactly ``scale`` digits, ``-0`` as 0;
* boolean: ``true``/``false`` text or a bool;
* date: ``YYYY-MM-DD`` text or a ``date``;
* timestamp: ISO 8601 WITH a zone (``Z`` or ``±HH:MM``) or an aware ``datetime``; stored in UTC
  as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``. A zone-less timestamp is refused: its instant is unknown.

Numbers are bounded before they are converted: an integer of more than 40 digits, a decimal of
more than 60 characters or with an exponent beyond 60 (``1E+999999999`` is 12 characters, and
a billion once written out), and a reader's ``OversizedNumber`` are ``source.number_too_large``.
A timestamp whose UTC instant falls outside years 1-9999 (``9999-12-31T23:59:59-23:59``) is
``source.out_of_range``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal

from sink.contracts.mapping import MappedField, PayloadMapping
from sink.payload.encoding import Row, Value
from sink.source.errors import SourceError
from sink.source.port import OversizedNumber

_INTEGER = re.compile(r"^-?(0|[1-9][0-9]*)\Z")
_DECIMAL = re.compile(r"^(-?)([0-9]+)(?:\.([0-9]+))?\Z")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}\Z")
_MAX_INTEGER_DIGITS = 40
_MAX_DECIMAL_CHARS = 60
_INTEGER_LIMIT = 10**_MAX_INTEGER_DIGITS
_DATE_CACHE = 4096
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})\Z")


class _Drift(Exception):
    def __init__(self, code: str = "source.type_drift") -> None:
        self.code = code


def _string(field: MappedField, value: object) -> Value:
    if not isinstance(value, str):
        raise _Drift
    if value == "":
        if field.empty_string == "refuse":
            raise _Drift("source.empty_not_allowed")
        return None if field.empty_string == "as_null" else ""
    if len(value) > field.max_length:
        raise _Drift("source.too_long")
    return value


def _integer(field: MappedField, value: object) -> Value:
    if isinstance(value, bool):
        raise _Drift
    if isinstance(value, int):
        if not -_INTEGER_LIMIT < value < _INTEGER_LIMIT:
            raise _Drift("source.number_too_large")
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        if len(value.lstrip("-")) > _MAX_INTEGER_DIGITS:
            raise _Drift("source.number_too_large")
        return int(value)
    raise _Drift


def _decimal(field: MappedField, value: object) -> Value:
    scale = int(field.scale or 0)
    if isinstance(value, bool):
        raise _Drift
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise _Drift
        # Bounded BEFORE it is written out: format(Decimal("1E+999999999"), "f") is a gigabyte.
        if abs(value.adjusted()) > _MAX_DECIMAL_CHARS or -int(value.as_tuple().exponent) > _MAX_DECIMAL_CHARS:
            raise _Drift("source.number_too_large")
        text = format(value, "f")
    elif isinstance(value, str):
        text = value
    else:
        raise _Drift
    match = _DECIMAL.fullmatch(text)
    if match is None:
        raise _Drift
    if len(text) > _MAX_DECIMAL_CHARS:
        raise _Drift("source.number_too_large")
    sign, whole, fraction = match.group(1), match.group(2).lstrip("0") or "0", match.group(3) or ""
    if len(fraction.rstrip("0")) > scale:
        raise _Drift("source.precision_loss")
    fraction = (fraction + "0" * scale)[:scale]
    if whole == "0" and not fraction.strip("0"):
        sign = ""
    return f"{sign}{whole}.{fraction}" if scale else f"{sign}{whole}"


def _boolean(field: MappedField, value: object) -> Value:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise _Drift


def _date(field: MappedField, value: object) -> Value:
    if isinstance(value, datetime):
        raise _Drift
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str) and _DATE.fullmatch(value):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            raise _Drift from None
    raise _Drift


def _timestamp(field: MappedField, value: object) -> Value:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str) and _TIMESTAMP.fullmatch(value):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise _Drift from None
    else:
        raise _Drift
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise _Drift
    try:
        instant = moment.astimezone(UTC)
    except OverflowError:
        raise _Drift("source.out_of_range") from None
    if instant.year < 1000:
        # strftime's %Y does not pad years below 1000 here (glibc); kept so the bytes never change.
        return instant.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    # The same text, a few times faster: "YYYY-MM-DDTHH:MM:SS.ffffff+00:00" cut before the zone.
    return instant.isoformat(timespec="microseconds")[:26] + "Z"


_Converter = Callable[[MappedField, object], Value]
_PlanEntry = tuple[str, bool, MappedField, _Converter]

_CONVERTERS: dict[str, _Converter] = {
    "string": _string, "integer": _integer, "decimal": _decimal, "boolean": _boolean, "date": _date,
    "timestamp": _timestamp,
}


_MESSAGES = {
    "source.number_too_large": "the number is beyond the bound for type {type}",
    "source.out_of_range": "the instant is outside the years 1-9999 once moved to UTC",
    "source.empty_not_allowed": "an empty string where the mapping refuses one",
    "source.too_long": "the text is longer than the field's max_length",
    "source.precision_loss": "the value has more fraction digits than the field keeps",
}


class RowNormalizer:
    """Checks one record's columns against the closed mapping and converts its values."""

    def __init__(self, mapping: PayloadMapping) -> None:
        self.mapping = mapping
        self._fields = [(field, _CONVERTERS[field.type]) for field in mapping.fields]
        # Read once: the per-row loop touches plain tuples, not model properties.
        self._plan: list[_PlanEntry] = [(field.source_name, field.nullable, field, convert)
                                        for field, convert in self._fields]
        # A business date repeats on every row of its day: its checked text is remembered (bounded).
        self._dates: dict[str, Value] = {}
        self._known = {field.source_name for field in mapping.fields} | set(mapping.ignore_source_fields)
        self._scope_source = mapping.field(mapping.scope_field).source_name
        self.scope_index = mapping.scope_index

    def check_columns(self, columns: list[str], *, record: int = 0) -> None:
        """A header or a record's key set: unknown and missing columns are refused."""
        present = set(columns)
        if len(present) != len(columns):
            repeated = next(name for index, name in enumerate(columns) if name in columns[:index])
            raise SourceError("source.duplicate_field", "a column name repeats", field=repeated, record=record)
        unknown = sorted(present - self._known)
        if unknown:
            raise SourceError("source.unknown_field", "a source column is not in the mapping",
                              field=unknown[0], record=record)
        if self._scope_source not in present:
            raise SourceError("source.missing_scope_field", "the scope field is missing",
                              field=self._scope_source, record=record)
        missing = [field.source_name for field, _ in self._fields if field.source_name not in present]
        if missing:
            raise SourceError("source.missing_field", "a mapped column is missing", field=missing[0], record=record)

    def normalize(self, record: Mapping[str, object], number: int) -> Row:
        row: list[Value] = []
        dates = self._dates
        for entry in self._plan:
            raw = record.get(entry[0])
            if entry[3] is _date and type(raw) is str:
                if raw not in dates:
                    value = self._value(entry, raw, number)
                    if len(dates) >= _DATE_CACHE:
                        row.append(value)
                        continue
                    dates[raw] = value
                row.append(dates[raw])
                continue
            row.append(self._value(entry, raw, number))
        return row

    def field_value(self, index: int, raw: object) -> Value:
        """The normalized value of mapped field ``index`` (mapping order) for one raw value:
        exactly what ``normalize`` puts in that place, or the SourceError it raises (record 0)."""
        return self._value(self._plan[index], raw, 0)

    @staticmethod
    def _value(entry: _PlanEntry, raw: object, number: int) -> Value:
        _, nullable, field, convert = entry
        if raw is None:
            if not nullable:
                raise SourceError("source.null_not_allowed", "null in a non-nullable field",
                                  field=field.name, record=number)
            return None
        if isinstance(raw, OversizedNumber):
            raise SourceError("source.number_too_large", f"a number longer than the bound for {field.type}",
                              field=field.name, record=number)
        try:
            value = convert(field, raw)
        except _Drift as drift:
            raise SourceError(drift.code, _MESSAGES.get(drift.code, "the value does not fit type {type}").format(
                type=field.type), field=field.name, record=number) from None
        if value is None and not field.nullable:
            raise SourceError("source.null_not_allowed", "null in a non-nullable field",
                              field=field.name, record=number)
        return value
