"""The freeze's fast path for text rows (a CSV file): raw field text -> encoded row bytes.

The reference path (``RowNormalizer.normalize`` on a record dict, then ``RowEncoder.encode``)
costs a dict, seven converter calls and seven writer calls per row. Here each mapped column is
compiled once into a memo: a bounded dict from the raw text to the written piece (normalize and
encode fused), so a value seen before — a business date, a label, a flag, a small count — costs
one C-level dict lookup, and the row is one ``str.join`` over ``map``. Values not seen before go
through the same normalizer and encoder functions; decimals and timestamps, which rarely repeat,
first try a shortcut that is only taken when its answer is provably the reference's (a decimal
already in canonical form is its own normalized text; a timestamp's UTC minute is remembered per
local minute, zone and fraction width, and its seconds and fraction are copied, since zones are
whole minutes).

Strictness is unchanged by construction: any failure on this path (a refused value, an encoder
refusal, anything unexpected) raises ``Fallback``, and the caller runs that row through the
reference path, which raises the reference's SourceError with its code, field and record — or
accepts the row, if the shortcut was only stricter. tests/source/test_so_transcode.py checks that
both paths give identical bytes and identical refusals over generated hostile rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from operator import getitem, itemgetter
from typing import Generic, TypeVar

from sink.payload.encoding import RowEncoder, Value
from sink.source.normalize import RowNormalizer

MEMO_ENTRIES = 32_768
"""Remembered raw values over all columns of one freeze (split evenly between the columns)."""
MEMO_MAX_CHARS = 48
"""A raw value longer than this is never remembered: the memo's memory stays bounded (about
``MEMO_ENTRIES`` x a few hundred bytes) whatever the mapping's ``max_length``."""

_MAX_DECIMAL_CHARS = 60  # normalize.py refuses longer decimal text; the shortcut must too.
_TIMESTAMP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})T([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])"
                        r"(?:\.([0-9]{1,6}))?(Z|[+-][0-9]{2}:[0-9]{2})")
_ONE_DAY = timedelta(days=1)
_CLOCK = [f"{minute // 60:02d}:{minute % 60:02d}" for minute in range(1440)]


class Fallback(Exception):
    """This row must take the reference path (which decides whether and how it is refused)."""


Piece = str | None
_T = TypeVar("_T")
_Normalize = Callable[[str], Value]


class _Memo(dict[str, _T], Generic[_T]):
    """raw text -> result; a miss computes (``Fallback`` on any failure) and remembers, bounded."""

    __slots__ = ("_compute", "_room")

    def __init__(self, compute: Callable[[str], _T], room: int) -> None:
        super().__init__()
        self._compute = compute
        self._room = room

    def __missing__(self, raw: str) -> _T:
        try:
            result = self._compute(raw)
        except Exception:  # every failure is decided again by the reference path
            raise Fallback from None
        if self._room > 0 and len(raw) <= MEMO_MAX_CHARS:
            self._room -= 1
            self[raw] = result
        return result


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
    """Compiled once per freeze for one header: ``encode(fields)`` -> (business date, row bytes).

    ``fields`` is one CSV record as read (text; ``empty`` stands in for an empty field, as in the
    reference records). Raises ``Fallback`` when the row must take the reference path.
    """

    def __init__(self, normalizer: RowNormalizer, encoder: RowEncoder, header: Sequence[str],
                 empty: str | None) -> None:
        fields = normalizer.mapping.fields
        positions = [list(header).index(field.source_name) for field in fields]
        self._pick: Callable[[Sequence[str]], Sequence[str]] = (
            itemgetter(*positions) if len(positions) > 1 else lambda row: (row[positions[0]],))
        writers, self._separator, self._start, end = encoder.row_pieces()
        self._end = end
        self._omits = encoder.encoding.format != "csv"
        room = max(1024, MEMO_ENTRIES // len(fields))
        self._memos: list[_Memo[Piece]] = [_Memo(self._piece(normalizer, encoder, index, writer, empty), room)
                       for index, writer in enumerate(writers)]
        self._scope = normalizer.scope_index
        self._days: _Memo[date] = _Memo(self._day(normalizer, empty), room)

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
