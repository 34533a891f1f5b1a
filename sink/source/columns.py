"""Column writers of the CSV fast path: a whole column of a batch of rows in a few calls.

``sink.source.transcode`` writes a batch of CSV records column by column: each mapped column is
turned from raw text into written pieces (normalized and encoded in one step) by one call per
batch, so the per-value work is C-level (``map``, ``str.join``, one regular expression over the
column joined) or one comprehension step, not three to five Python calls per value.

* ``memo_column``: a bounded memo from the raw text to the piece (a business date, a label, a
  flag, a small count repeat); a miss takes the per-value path (``transcode``).
* ``text_column``: a string, decimal or integer column whose every value is already its own
  normalized text (checked once over the joined column: non-empty and short enough, or canonical)
  and that the format writes as itself (``RowEncoder.verbatim_affixes``) is its own pieces.
* ``timestamp_column``: the UTC piece of ``YYYY-MM-DDTHH:MM:SS<fraction><zone>`` is the piece of
  a checked representative of its local hour with the clock copied: zones are whole minutes, so
  the seconds are the same in UTC, and so are the minutes in a whole-hour zone (a zone with
  minutes shifts them by a constant, from a table).

Every shortcut is only taken when its answer is provably the reference's; otherwise the column
falls back to ``memo_column``, and a value that the per-value path can not vouch for either raises
``Fallback``, which sends the whole batch row by row to the reference path (tests/source/
test_so_columns.py and test_so_transcode.py hold all paths to the same bytes).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date
from typing import Generic, TypeVar

MEMO_ENTRIES = 32_768
"""Remembered raw values over all columns of one freeze (split evenly between the columns)."""
MEMO_MAX_CHARS = 48
"""A raw value longer than this is never remembered: the memo's memory stays bounded (about
``MEMO_ENTRIES`` x a few hundred bytes) whatever the mapping's ``max_length``."""
MAX_DECIMAL_CHARS = 60  # normalize.py refuses longer decimal text; a shortcut must too.
MAX_INTEGER_DIGITS = 40  # likewise for integers

Piece = str | None
Column = Sequence[str]
ColumnWriter = Callable[[Column], Sequence[Piece]]
_T = TypeVar("_T")


class Fallback(Exception):
    """This row (or batch) must take the reference path (which decides whether and how it is refused)."""


class Memo(dict[str, _T], Generic[_T]):
    """raw text -> result; a miss computes (``Fallback`` on any failure) and remembers, bounded.

    A full memo is emptied rather than frozen: sources are mostly ordered by time, so what repeats
    next is what was seen last (timestamps of the same hours, the same day's dates)."""

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
        if len(raw) <= MEMO_MAX_CHARS:
            if len(self) >= self._room:
                self.clear()
            self[raw] = result
        return result


def memo_column(memo: Memo[Piece]) -> ColumnWriter:
    get = memo.__getitem__

    def write(column: Column) -> list[Piece]:
        return list(map(get, column))

    return write


def _batch_of(value: str, ends: str = r"(?:\n|\Z)") -> re.Pattern[str]:
    """Values of ``value``'s pattern joined by newlines (``ends`` marks the end of one value)."""
    one = value.format(end=ends)
    return re.compile(rf"(?:{one}\n)*{one}")


def canonical_decimals(scale: int) -> re.Pattern[str]:
    """Joined text the normalizer returns unchanged: no leading zero, exactly ``scale`` fraction
    digits, never a negative zero."""
    whole = r"(?:0|[1-9][0-9]*)"
    if scale == 0:
        return _batch_of(rf"(?!-0{{end}})-?{whole}")
    return _batch_of(rf"(?!-0\.0+{{end}})-?{whole}\.[0-9]{{{{{scale}}}}}")


CANONICAL_INTEGERS = _batch_of(rf"(?!-0{{end}})-?(?:0|[1-9][0-9]{{{{0,{MAX_INTEGER_DIGITS - 1}}}}})")
"""Joined integer text whose int is written back as the same text, within the digit bound."""


def joined(column: Column, pattern: re.Pattern[str]) -> bool:
    """Every value matches ``pattern``'s one value (none holds a newline of its own)."""
    text = "\n".join(column)
    return text.count("\n") == len(column) - 1 and pattern.fullmatch(text) is not None


def text_column(memo: Memo[Piece], affixes: tuple[str, str, Callable[[Column], bool]],
                normal: Callable[[Column], bool]) -> ColumnWriter:
    """``normal(column)``: every value (none empty) is its own normalized text."""
    before, after, plain = affixes
    fallback = memo_column(memo)

    def write(column: Column) -> Sequence[Piece]:
        if "" in column or not normal(column) or not plain(column):
            return fallback(column)
        if before or after:
            return [before + value + after for value in column]
        return column

    return write


# The timestamp shapes the column shortcut vouches for (ASCII digits, hours 00-23, minutes and
# seconds 00-59); anything else goes value by value.
_STAMP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                    r"(?:\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})")
_CLOCKS = re.compile(r"(?::[0-5][0-9]:[0-5][0-9])*")
# A local date in here stays within years 1000-9999 in UTC at any hour and zone (|zone| < 24 h):
# no overflow, and the reference's four-digit year form.
_SAFE_DAYS = (date(1000, 1, 2), date(9999, 12, 30))
_Shift = dict[str, tuple[bool, str]]
"""Local ``:MM`` -> (whether in the next UTC hour, the UTC ``:MM``), for a zone with minutes."""
_Hour = tuple[str, str, bool, str, _Shift]
"""(piece up to the UTC hour of the local hour's first minute, piece after the seconds, whether the
zone is whole hours; for a zone with minutes: piece up to the UTC hour of the local hour's last
minute, and the minute shift)."""
_MINUTES = {f":{minute:02d}": minute for minute in range(60)}
_MINUTE_TEXT = [f":{minute:02d}" for minute in range(60)]
_NO_SHIFT: _Shift = {}


def _shift(first: int) -> _Shift:
    """Minute m of a local hour is UTC minute first + m, in the next UTC hour from 60 - first on."""
    return {text: (minute + first >= 60, _MINUTE_TEXT[(minute + first) % 60]) for text, minute in _MINUTES.items()}


class _Stamps:
    """The hour memo of one timestamp column; ``piece(raw)`` is the reference."""

    def __init__(self, piece: Callable[[str], tuple[str, Piece]], room: int) -> None:
        self._piece = piece
        self.hours: Memo[_Hour] = Memo(self._hour, room)
        self._shifts: dict[int, _Shift] = {}

    def _split(self, local: str) -> tuple[str, str, str]:
        """The reference's piece of ``local`` cut around its UTC clock: (up to and with the UTC
        hour, the UTC clock ``:MM:SS``, after the seconds)."""
        normalized, piece = self._piece(local)
        if piece is None:
            raise ValueError("no piece")
        at = piece.find(normalized[:19])
        if at < 0:
            raise ValueError("the piece does not hold the UTC text")
        return piece[:at + 13], piece[at + 13:at + 19], piece[at + 19:]

    def _hour(self, key: str) -> _Hour:
        """``key``: local ``YYYY-MM-DDTHH`` + fraction and zone."""
        local = key[:13] + ":00:00" + key[13:]
        shape = _STAMP.fullmatch(local)
        if shape is None or not _SAFE_DAYS[0] <= date.fromisoformat(shape.group(1)) <= _SAFE_DAYS[1]:
            raise ValueError("not a shape this shortcut vouches for")
        head, clock, tail = self._split(local)
        last_head, last_clock, last_tail = self._split(key[:13] + ":59:59" + key[13:])
        zone = shape.group(2)
        if zone == "Z" or zone[4:] == "00":
            # Whole hours: minutes and seconds are the local ones (checked at both ends).
            if (clock, last_head, last_clock, last_tail) != (":00:00", head, ":59:59", tail):
                raise ValueError("the piece does not copy the clock")
            return head, tail, True, "", _NO_SHIFT
        # Minutes in the zone: a constant shift of the minute, seconds copied (checked at both ends).
        first = _MINUTES.get(clock[:3], 0)
        if not 0 < first < 60 or (clock, last_clock, last_tail) != (
                _MINUTE_TEXT[first] + ":00", _MINUTE_TEXT[first - 1] + ":59", tail):
            raise ValueError("the piece does not shift the clock by whole minutes")
        if first not in self._shifts:
            self._shifts[first] = _shift(first)
        return head, tail, False, last_head, self._shifts[first]


def timestamp_column(memo: Memo[Piece], piece: Callable[[str], tuple[str, Piece]], room: int) -> ColumnWriter:
    """``piece(raw)``: the reference's (normalized text, written piece), raising on refusal."""
    hours = _Stamps(piece, room).hours
    fallback = memo_column(memo)

    def write(column: Column) -> Sequence[Piece]:
        try:
            # The key is the value without its clock (":MM:SS"), whose shape is checked below for
            # the whole column at once; a key is only remembered once vouched for, so a value is
            # written here only if its date, hour, fraction and zone were accepted. A zone with
            # minutes takes its UTC hour and minute from the shift (KeyError: not a minute).
            pieces = [hour[0] + value[13:19] + hour[1] if (hour := hours[value[:13] + value[19:]])[2]
                      else (hour[3] if (shift := hour[4][value[13:16]])[0] else hour[0])
                      + shift[1] + value[16:19] + hour[1]
                      for value in column]
        except (Fallback, KeyError):
            return fallback(column)
        if _CLOCKS.fullmatch("".join([value[13:19] for value in column])) is None:
            return fallback(column)
        return pieces

    return write
