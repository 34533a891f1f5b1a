"""The freeze's fast path for text rows (a CSV file): raw field text -> encoded row bytes.

The reference path (``RowNormalizer.normalize`` on a record dict, then ``RowEncoder.encode``)
costs a dict, seven converter calls and seven writer calls per row. Here rows are written a batch
at a time, column by column (``encode_batch``): each mapped column is compiled once into a column
writer (``sink.source.columns``) that turns the column's raw text into written pieces (normalize
and encode fused) in a few C-level calls, and the rows are ``str.join`` over ``zip`` of the
columns. A column the batch shortcut can not vouch for is written value by value from a bounded
memo of raw text -> piece (``encode``, also used alone for a batch that fell back): a repeated
value is one dict lookup, and a value not seen before goes through the same normalizer and
encoder functions; decimals and timestamps, which rarely repeat, first try a shortcut that is
only taken when its answer is provably the reference's (a decimal already in canonical form is
its own normalized text; a timestamp's UTC minute is remembered per local minute, zone and
fraction width, and its seconds and fraction are copied, since zones are whole minutes).

Strictness is unchanged by construction: any failure on this path (a refused value, an encoder
refusal, anything unexpected) raises ``Fallback``, and the caller runs that batch row by row, and
a row that fails again through the reference path, which raises the reference's SourceError with
its code, field and record — or accepts the row, if the shortcut was only stricter.
tests/source/test_so_transcode.py and test_so_columns.py check that all paths give identical
bytes and identical refusals over generated hostile rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from itertools import repeat
from operator import add, getitem, itemgetter

from sink.payload.encoding import RowEncoder, Value
from sink.source.columns import (
    CANONICAL_INTEGERS,
    MAX_DECIMAL_CHARS,
    MEMO_ENTRIES,
    MEMO_MAX_CHARS,
    ColumnWriter,
    Fallback,
    Memo,
    Piece,
    canonical_decimals,
    joined,
    memo_column,
    text_column,
    timestamp_column,
)
from sink.source.normalize import RowNormalizer

__all__ = ["MEMO_ENTRIES", "MEMO_MAX_CHARS", "Fallback", "TextRowTranscoder"]

_MAX_DECIMAL_CHARS = MAX_DECIMAL_CHARS
_TIMESTAMP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})T([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])"
                        r"(?:\.([0-9]{1,6}))?(Z|[+-][0-9]{2}:[0-9]{2})")
_ONE_DAY = timedelta(days=1)
_CLOCK = [f"{minute // 60:02d}:{minute % 60:02d}" for minute in range(1440)]
_Normalize = Callable[[str], Value]


def _canonical_decimal(scale: int) -> re.Pattern[str]:
    """Text the normalizer returns unchanged: no leading zero, exactly ``scale`` fraction digits,
    never a negative zero."""
    whole = r"(?:0|[1-9][0-9]*)"
    if scale == 0:
        return re.compile(rf"(?!-0\Z)-?{whole}")
    return re.compile(rf"(?!-0\.0+\Z)-?{whole}\.[0-9]{{{scale}}}")


def _decimal(reference: _Normalize, scale: int) -> _Normalize:
    canonical = _canonical_decimal(scale).fullmatch

    def normalize(raw: str) -> Value:
        if len(raw) <= _MAX_DECIMAL_CHARS and canonical(raw):
            return raw
        return reference(raw)

    return normalize


_Shift = tuple[str | None, str, str | None, int]
"""(UTC date text of the day before, of the day, of the day after, zone offset in minutes)."""


def _day_shift(reference: _Normalize, local_day: str, zone: str, width: int) -> _Shift | None:
    """Whether the reference accepts this date, zone and fraction width (asked once, at noon), and
    the dates an instant of that day can fall on in UTC; None: leave such values to the reference."""
    fraction = "." + "0" * width if width else ""
    try:
        noon = reference(f"{local_day}T12:00:00{fraction}{zone}")
        day = date.fromisoformat(local_day)
    except Exception:  # refused or odd: the full value is decided by the reference
        return None
    if not isinstance(noon, str) or day.year < 1000:
        return None  # below year 1000 the reference writes the year unpadded: not this shortcut's form
    offset = 0 if zone == "Z" else (int(zone[1:3]) * 60 + int(zone[4:6])) * (1 if zone[0] == "+" else -1)
    previous = day - _ONE_DAY
    before = previous.isoformat() if previous.year >= 1000 else None
    after = None if day == date.max else (day + _ONE_DAY).isoformat()
    return before, local_day, after, offset


def _timestamp(reference: _Normalize) -> _Normalize:
    """UTC by minute arithmetic: zones are whole minutes, so seconds and fraction are copied."""
    shape = _TIMESTAMP.fullmatch
    shifts: dict[tuple[str, str, int], _Shift | None] = {}

    def normalize(raw: str) -> Value:
        match = shape(raw)
        if match is None:
            return reference(raw)
        local_day, hour, minute, seconds, fraction, zone = match.groups()
        key = (local_day, zone, len(fraction or ""))
        if key in shifts:
            shift = shifts[key]
        else:
            shift = _day_shift(reference, *key)
            if len(shifts) < MEMO_ENTRIES:
                shifts[key] = shift
        if shift is None:
            return reference(raw)
        days, minutes = divmod(int(hour) * 60 + int(minute) - shift[3], 1440)
        utc_day = shift[days + 1]
        if utc_day is None:
            return reference(raw)
        return f"{utc_day}T{_CLOCK[minutes]}:{seconds}.{(fraction or '').ljust(6, '0')}Z"

    return normalize


class TextRowTranscoder:
    """Compiled once per freeze for one header: ``encode(fields)`` -> (business date, row bytes) and
    ``encode_batch(rows)`` -> (business dates, rows bytes).

    ``fields`` is one CSV record as read (text; ``empty`` stands in for an empty field, as in the
    reference records). Raises ``Fallback`` when the row (the batch) must take the reference path
    (row by row).
    """

    def __init__(self, normalizer: RowNormalizer, encoder: RowEncoder, header: Sequence[str],
                 empty: str | None) -> None:
        fields = normalizer.mapping.fields
        self._positions = positions = [list(header).index(field.source_name) for field in fields]
        self._pick: Callable[[Sequence[str]], Sequence[str]] = (
            itemgetter(*positions) if len(positions) > 1 else lambda row: (row[positions[0]],))
        writers, self._separator, self._start, end = encoder.row_pieces()
        self._end = end
        self._omits = encoder.encoding.format != "csv"
        room = max(1024, MEMO_ENTRIES // len(fields))
        self._memos: list[Memo[Piece]] = [Memo(self._piece(normalizer, encoder, index, writer, empty), room)
                                          for index, writer in enumerate(writers)]
        self._columns = [self._column(normalizer, encoder, index, writer, empty=empty, room=room)
                         for index, writer in enumerate(writers)]
        self._scope = normalizer.scope_index
        self._days: Memo[date] = Memo(self._day(normalizer, empty), room)

    def _column(self, normalizer: RowNormalizer, encoder: RowEncoder, index: int, writer: Callable[[Value], Piece], *,
                empty: str | None, room: int) -> ColumnWriter:
        """The batch writer of mapped field ``index`` (its per-value memo is the fallback)."""
        field = normalizer.mapping.fields[index]
        memo = self._memos[index]
        if field.type == "timestamp":
            def piece(raw: str) -> tuple[str, Piece]:
                value = normalizer.field_value(index, empty if raw == "" else raw)
                return str(value), writer(value)

            return timestamp_column(memo, piece, room)
        affixes = encoder.verbatim_affixes(index)
        if affixes is None:
            return memo_column(memo)
        if field.type == "string":
            # A non-empty string within max_length is its own normalized value.
            longest = field.max_length
            return text_column(memo, affixes, lambda column: max(map(len, column)) <= longest)
        decimals = canonical_decimals(int(field.scale or 0))
        # Canonical text within the bound is the normalizer's answer for it, unchanged.
        pattern, bound = (decimals, _MAX_DECIMAL_CHARS) if field.type == "decimal" else (CANONICAL_INTEGERS, None)
        return text_column(memo, affixes, lambda column: (bound is None or max(map(len, column)) <= bound)
                           and joined(column, pattern))

    @staticmethod
    def _piece(normalizer: RowNormalizer, encoder: RowEncoder, index: int, writer: Callable[[Value], Piece],
               empty: str | None) -> Callable[[str], Piece]:
        field = normalizer.mapping.fields[index]

        def reference(raw: str) -> Value:
            return normalizer.field_value(index, empty if raw == "" else raw)

        def general(raw: str) -> Piece:
            return writer(normalize(raw))

        normalize: _Normalize = reference
        if field.type == "timestamp":
            normalize = _timestamp(reference)
        verbatim = encoder.csv_verbatim()
        if verbatim is not None and field.type == "string":
            # Written as read: non-empty, within max_length, nothing to quote, not the null text.
            longest = field.max_length

            def string(raw: str) -> Piece:
                return raw if raw and len(raw) <= longest and verbatim(raw) else general(raw)

            return string
        if field.type == "decimal":
            normalize = _decimal(reference, int(field.scale or 0))
            if verbatim is not None:
                canonical = _canonical_decimal(int(field.scale or 0)).fullmatch

                def decimal(raw: str) -> Piece:
                    if len(raw) <= _MAX_DECIMAL_CHARS and canonical(raw) and verbatim(raw):
                        return raw
                    return general(raw)

                return decimal
        return general

    @staticmethod
    def _day(normalizer: RowNormalizer, empty: str | None) -> Callable[[str], date]:
        index = normalizer.scope_index

        def day(raw: str) -> date:
            return date.fromisoformat(str(normalizer.field_value(index, empty if raw == "" else raw)))

        return day

    def encode(self, fields: Sequence[str]) -> tuple[date, bytes]:
        picked = self._pick(fields)
        pieces = map(getitem, self._memos, picked)
        body = self._separator.join(filter(None, pieces) if self._omits else pieces)  # type: ignore[arg-type]
        try:
            return self._days[picked[self._scope]], (self._start + body + self._end).encode("utf-8")
        except UnicodeEncodeError:
            raise Fallback from None

    def encode_batch(self, rows: Sequence[Sequence[str]]) -> tuple[list[date], list[bytes]]:
        """``encode`` of every row, a column at a time; ``Fallback``: encode the rows one by one."""
        table = list(zip(*rows, strict=False))  # the header's columns (the reader checked every width)
        columns = [writer(table[position]) for writer, position in zip(self._columns, self._positions, strict=True)]
        records = zip(*columns, strict=True)
        # A JSON null the format omits is a None piece, left out as in ``encode``.
        texts = map(self._separator.join, map(filter, repeat(None), records) if self._omits  # type: ignore[arg-type]
                    else records)
        if self._start:
            texts = map(add, repeat(self._start), texts)
        try:
            encoded = list(map(str.encode, map(add, texts, repeat(self._end))))
        except UnicodeEncodeError:
            raise Fallback from None
        return list(map(self._days.__getitem__, table[self._positions[self._scope]])), encoded

