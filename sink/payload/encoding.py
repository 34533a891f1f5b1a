"""Deterministic row encoders: normalized row values -> the profile's payload bytes.

Normalized values (``sink.source.normalize``) are ``None``, ``bool``, ``int`` or ``str``; a
decimal is its canonical text with the mapping's scale, a date ``YYYY-MM-DD``, a timestamp the
UTC form ``YYYY-MM-DDTHH:MM:SS.ffffffZ``. The profile owns the bytes (seed: "Deterministic CSV
parameters"): CSV dialect, JSON number/timestamp/null/Unicode policy, and framing. Nothing here
depends on dict order, locale or ``PYTHONHASHSEED``.

Each encoded row is self-delimited: a CSV record ends with its line terminator, a JSON row with
``\\n`` (JSON text never holds a raw newline), so the frozen parent stores rows back to back and
a child body is a prefix, a byte range of rows and a suffix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sink.contracts.mapping import MappedField, PayloadMapping
from sink.contracts.profile import OperationProfile
from sink.contracts.profile_request import (
    Compression,
    CsvBody,
    CsvDialect,
    JsonArrayBody,
    JsonFormat,
    MultipartFileBody,
    PayloadFormat,
    TimestampPrecision,
)

Value = None | bool | int | str
Row = Sequence[Value]

BOM = "\ufeff".encode()
_CSV_SPECIAL = {",": re.compile(r'[,"\r\n]'), ";": re.compile(r'[;"\r\n]'), "\t": re.compile('[\t"\r\n]'),
                "|": re.compile(r'[|"\r\n]')}

# What json.dumps escapes in a string (json.encoder's ESCAPE and ESCAPE_ASCII): anything else is
# written as itself between quotes.
_JSON_ESCAPE = re.compile(r'[\x00-\x1f\\"]')
_JSON_ESCAPE_ASCII = re.compile(r'[^\ -~]|[\\"]')


def _always(texts: Sequence[str]) -> bool:
    return True


class EncodeError(ValueError):
    """A normalized value the profile's format can not write without losing information."""

    def __init__(self, code: str, field: str) -> None:
        super().__init__(f"{code}: field {field}")
        self.code = code
        self.field = field


@dataclass(frozen=True, slots=True)
class PayloadEncoding:
    format: PayloadFormat
    compression: Compression
    gzip_level: int
    csv: CsvDialect | None
    json: JsonFormat | None

    def canonical(self) -> dict[str, object]:
        return {
            "format": self.format,
            "compression": self.compression,
            "gzip_level": self.gzip_level if self.compression == "gzip" else None,
            "csv": None if self.csv is None else self.csv.model_dump(mode="json"),
            "json": None if self.json is None else self.json.model_dump(mode="json"),
        }


def payload_encoding(profile: OperationProfile) -> PayloadEncoding:
    body = profile.request.body
    if isinstance(body, MultipartFileBody):
        part = body.payload_part
        csv = (part.csv_dialect or CsvDialect()) if part.format == "csv" else None
        fmt = None if part.format == "csv" else (part.json_format or JsonFormat())
        return PayloadEncoding(part.format, part.compression, part.gzip_level, csv, fmt)
    if isinstance(body, CsvBody):
        return PayloadEncoding("csv", body.compression, body.gzip_level, body.csv_dialect, None)
    fmt_name: PayloadFormat = "json_array" if isinstance(body, JsonArrayBody) else "ndjson"
    return PayloadEncoding(fmt_name, body.compression, body.gzip_level, None, body.json_format)


def _timestamp(value: str, precision: TimestampPrecision, field: str) -> str:
    # value is canonical UTC with microseconds: 2026-03-01T05:00:00.000000Z
    if precision == "microseconds":
        return value
    if precision == "milliseconds":
        if value[23:26] != "000":
            raise EncodeError("source.precision_loss", field)
        return value[:23] + "Z"
    if value[20:26] != "000000":
        raise EncodeError("source.precision_loss", field)
    return value[:19] + "Z"


class RowEncoder:
    """Encodes one normalized row; ``prefix``/``suffix`` frame a whole body."""

    def __init__(self, mapping: PayloadMapping, encoding: PayloadEncoding) -> None:
        self.mapping = mapping
        self.encoding = encoding
        if encoding.format == "csv":
            assert encoding.csv is not None
            self._csv = encoding.csv
            self._terminator = "\r\n" if self._csv.line_terminator == "crlf" else "\n"
            self._special = _CSV_SPECIAL[self._csv.delimiter]
            self._csv_cells = [self._csv_cell(field) for field in mapping.fields]
        else:
            assert encoding.json is not None
            self._json = encoding.json
            self._json_values = [self._json_value(field) for field in mapping.fields]
            self._keys = [json.dumps(field.name, ensure_ascii=self._json.unicode == "ascii_escaped")
                          for field in mapping.fields]

    # ----- framing -----------------------------------------------------------------------------
    def prefix(self) -> bytes:
        if self.encoding.format == "csv":
            bom = BOM if self._csv.bom else b""
            if not self._csv.header:
                return bom
            header = self._csv.delimiter.join(self._quote(field.name) for field in self.mapping.fields)
            return bom + (header + self._terminator).encode("utf-8")
        return b"[" if self.encoding.format == "json_array" else b""

    def suffix(self) -> bytes:
        return b"]" if self.encoding.format == "json_array" else b""

    @property
    def rows_are_comma_joined(self) -> bool:
        """JSON array: the stored ``row\\n`` separators become ``,`` and the last one is dropped."""
        return self.encoding.format == "json_array"

    # ----- rows --------------------------------------------------------------------------------
    def encode(self, row: Row) -> bytes:
        if self.encoding.format == "csv":
            cells = [cell(value) for cell, value in zip(self._csv_cells, row, strict=True)]
            return (self._csv.delimiter.join(cells) + self._terminator).encode("utf-8")
        members = [f"{key}:{encode(value)}" for key, encode, value in zip(self._keys, self._json_values, row,
                                                                          strict=True)
                   if not (value is None and self._json.null == "omit")]
        return ("{" + ",".join(members) + "}\n").encode("utf-8")

    def row_pieces(self) -> tuple[list[Callable[[Value], str | None]], str, str, str]:
        """Per-field writers and the text around them, for a caller that writes fields one at a
        time: ``(start + separator.join(pieces) + end).encode()`` equals ``encode(row)``, where a
        piece that is None (a JSON null the format omits) is left out. A writer raises where
        ``encode`` would."""
        if self.encoding.format == "csv":
            return list(self._csv_cells), self._csv.delimiter, "", self._terminator
        omit_null = self._json.null == "omit"

        def member(key: str, encode: Callable[[Value], str]) -> Callable[[Value], str | None]:
            def piece(value: Value) -> str | None:
                if value is None and omit_null:
                    return None
                return f"{key}:{encode(value)}"

            return piece

        return [member(key, encode) for key, encode in zip(self._keys, self._json_values, strict=True)], ",", "{", "}\n"

    def csv_verbatim(self) -> Callable[[str], bool] | None:
        """For CSV: a test that a non-empty text value of a string or decimal field is written as
        itself (no quoting, not the null text); None for JSON formats."""
        if self.encoding.format != "csv":
            return None
        special = self._special.search
        null_text = self._csv.null_text

        def verbatim(text: str) -> bool:
            return text != null_text and special(text) is None

        return verbatim

    def verbatim_affixes(self, index: int) -> tuple[str, str, Callable[[Sequence[str]], bool]] | None:
        """For a caller that writes a whole column at once: ``(before, after, plain)`` such that the
        writer of field ``index`` writes every value of a batch as ``before + text + after``, where
        ``text`` is the value's own text (a string or decimal as it is, an integer's ``str``),
        provided ``plain(texts)`` holds for the batch. None for the other types (a boolean, a date,
        a timestamp are not written as their text). ``plain`` looks at the batch as one string, so
        it costs no Python call per value."""
        field = self.mapping.fields[index]
        if field.type not in ("string", "decimal", "integer"):
            return None
        if self.encoding.format == "csv":
            special = self._special.search
            null_text = self._csv.null_text
            if field.type == "integer":  # an int is written by str(), never quoted (see _csv_cell)
                return "", "", _always

            def csv_plain(texts: Sequence[str]) -> bool:
                # "" is the empty string's own form (quoted or not); the null text is quoted.
                return "" not in texts and null_text not in texts and special("".join(texts)) is None

            return "", "", csv_plain
        key = self._keys[index] + ":"
        if field.type == "integer" or (field.type == "decimal" and self._json.decimal == "number"):
            return key, "", _always
        escape = (_JSON_ESCAPE_ASCII if self._json.unicode == "ascii_escaped" else _JSON_ESCAPE).search

        def json_plain(texts: Sequence[str]) -> bool:
            return escape("".join(texts)) is None  # json.dumps quotes such text and changes nothing

        return key + '"', '"', json_plain

    def _quote(self, text: str) -> str:
        if self._special.search(text):
            return '"' + text.replace('"', '""') + '"'
        return text

    def _csv_cell(self, field: MappedField) -> Callable[[Value], str]:
        dialect = self._csv
        empty = '""' if dialect.empty_string == "quoted" else ""
        true_text, false_text = ("true", "false") if dialect.boolean_text == "true_false" else ("1", "0")

        def cell(value: Value) -> str:
            if value is None:
                return dialect.null_text
            if value is True:
                return true_text
            if value is False:
                return false_text
            if isinstance(value, int):
                return str(value)
            if field.type == "timestamp":
                return _timestamp(value, dialect.timestamp_precision, field.name)
            if value == "":
                return empty
            # A string equal to the null text would read back as null.
            if value == dialect.null_text:
                return '"' + value + '"'
            return self._quote(value)

        return cell

    def _json_value(self, field: MappedField) -> Callable[[Value], str]:
        fmt = self._json
        ascii_only = fmt.unicode == "ascii_escaped"

        def value_text(value: Value) -> str:
            if value is None:
                return "null"
            if isinstance(value, bool):
                return "true" if value else "false"
            if isinstance(value, int):
                return str(value)
            if field.type == "decimal" and fmt.decimal == "number":
                return value
            if field.type == "timestamp":
                value = _timestamp(value, fmt.timestamp_precision, field.name)
            return json.dumps(value, ensure_ascii=ascii_only)

        return value_text
