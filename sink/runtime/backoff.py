"""Delay before an already permitted retry (seed: "Safe retry and remote fencing").

* Full jitter: the delay is drawn in ``[0, min(max_delay, initial_delay * 2**attempt)]`` from an
  injected deterministic :class:`JitterSource`; ``attempt`` is the 0-based retry number, so the
  first retry draws in ``[0, initial_delay]``.
* A valid ``Retry-After`` (RFC 9110 section 10.2.3: delay-seconds, or an HTTP-date in any of the
  three formats of section 5.6.7) is a lower bound on the delay. An invalid value is ignored.
* When the server's full delay exceeds the remaining budget the retry is blocked with
  ``REST_DELIVERY_RETRY_AFTER_EXCEEDS_BUDGET``: the delay is never truncated, so the sink never
  comes back earlier than the server allowed.

Whether a retry is permitted at all is ``retry_guard``'s decision, not this module's.
Pure: the clock (``now``) and the jitter source are parameters.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from sink.contracts.errors import ErrorCode

_MAX_EXPONENT = 62  # 2**62 ms is far beyond any budget; larger exponents only waste integers

_DAY = r"(?P<day>\d{2})"
_TIME = r"(?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2})"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH = r"(?P<month>" + "|".join(_MONTHS) + r")"
_SHORT_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_LONG_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
_IMF_FIXDATE = re.compile(
    r"(?P<weekday>" + "|".join(_SHORT_DAYS) + r"), " + _DAY + " " + _MONTH + r" (?P<year>\d{4}) " + _TIME + " GMT"
)
# obsolete RFC 850 form: Sunday, 06-Nov-94 08:49:37 GMT
_RFC850 = re.compile(
    r"(?P<weekday>" + "|".join(_LONG_DAYS) + r"), " + _DAY + "-" + _MONTH + r"-(?P<year>\d{2}) " + _TIME + " GMT"
)
# obsolete asctime form: Sun Nov  6 08:49:37 1994 (day padded with a space)
_ASCTIME = re.compile(
    r"(?P<weekday>" + "|".join(_SHORT_DAYS) + r") " + _MONTH + r" (?P<day>[ \d]\d) " + _TIME + r" (?P<year>\d{4})"
)
_DELAY_SECONDS = re.compile(r"\d{1,18}")


class JitterSource(Protocol):
    """Uniform integers for full jitter. Injected so that a test, or a recovering worker, draws
    exactly the same delays; the runtime never uses process randomness."""

    def draw(self, upper_inclusive: int) -> int:
        """An integer in ``[0, upper_inclusive]``."""


class DigestJitter:
    """Deterministic jitter from a seed (e.g. the operation id): SHA-256 of the seed and a draw
    counter, reduced modulo the range. The modulo bias of a 256-bit value is negligible here."""

    __slots__ = ("_counter", "_seed")

    def __init__(self, seed: str) -> None:
        self._seed = seed.encode("utf-8")
        self._counter = 0

    def draw(self, upper_inclusive: int) -> int:
        if upper_inclusive < 0:
            raise ValueError("the jitter range must not be negative")
        block = hashlib.sha256(self._seed + b"\x00" + self._counter.to_bytes(8, "big")).digest()
        self._counter += 1
        return int.from_bytes(block, "big") % (upper_inclusive + 1)


def full_jitter_cap_ms(attempt: int, *, initial_delay_ms: int, max_delay_ms: int) -> int:
    """``min(max_delay, initial_delay * 2**attempt)`` for the 0-based retry number ``attempt``."""
    if attempt < 0:
        raise ValueError("attempt is the 0-based retry number")
    growth: int = 2 ** min(attempt, _MAX_EXPONENT)
    return min(max_delay_ms, initial_delay_ms * growth)


def parse_retry_after_ms(value: str | None, *, now: datetime) -> int | None:
    """The server's minimum delay in milliseconds, or None when the header is absent or invalid.

    delay-seconds is ``1*DIGIT``; an HTTP-date is IMF-fixdate or one of the two obsolete forms
    (RFC 9110 section 5.6.7: recipients must accept all three). A date in the past means 0.
    Signs, fractions, offsets other than GMT, impossible dates and anything else are invalid.
    """
    if value is None:
        return None
    text = value.strip(" \t")
    if _DELAY_SECONDS.fullmatch(text):
        return int(text) * 1000
    moment = _parse_http_date(text, now=now)
    if moment is None:
        return None
    delta = moment - now
    if delta.total_seconds() <= 0:
        return 0
    # Round up: coming back a fraction early would be earlier than the server allowed.
    return -(-(delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds) // 1000)


def _parse_http_date(text: str, *, now: datetime) -> datetime | None:
    for pattern in (_IMF_FIXDATE, _RFC850, _ASCTIME):
        match = pattern.fullmatch(text)
        if match is None:
            continue
        year = int(match["year"])
        if pattern is _RFC850:
            year = _rfc850_year(year, now=now)
        try:
            moment = datetime(
                year, _MONTHS.index(match["month"]) + 1, int(match["day"].strip()),
                int(match["hour"]), int(match["minute"]), int(match["second"]), tzinfo=UTC,
            )
        except ValueError:
            return None  # 31 Feb, hour 24, second 61: not a date
        weekday_names = _LONG_DAYS if pattern is _RFC850 else _SHORT_DAYS
        if weekday_names[moment.weekday()] != match["weekday"]:
            return None  # the weekday contradicts the date: the value is not a valid HTTP-date
        return moment
    return None


def _rfc850_year(two_digits: int, *, now: datetime) -> int:
    # RFC 9110 5.6.7: a two-digit year more than 50 years in the future is the most recent past
    # year with the same last two digits.
    year = now.year - now.year % 100 + two_digits
    if year > now.year + 50:
        year -= 100
    return year


@dataclass(frozen=True, slots=True)
class RetryDelay:
    """The retry may happen after ``delay_ms``; ``server_floor_ms`` is the honoured Retry-After."""

    delay_ms: int
    server_floor_ms: int


@dataclass(frozen=True, slots=True)
class RetryBlocked:
    """No retry fits the remaining budget. ``error_code`` is RETRY_AFTER_EXCEEDS_BUDGET when the
    server's delay is the reason, None when the budget was already spent."""

    reason: str
    error_code: ErrorCode | None
    server_floor_ms: int


def next_retry_delay(
    attempt: int,
    *,
    initial_delay_ms: int,
    max_delay_ms: int,
    remaining_budget_ms: int,
    jitter: JitterSource,
    retry_after: str | None = None,
    now: datetime | None = None,
) -> RetryDelay | RetryBlocked:
    """The delay of retry number ``attempt`` (0-based) of an operation with
    ``remaining_budget_ms`` left, honouring a valid ``Retry-After`` as a lower bound.

    The jitter draw is limited to the remaining budget (it still lies inside the full-jitter
    interval); the server's delay is never limited. ``now`` (database clock) is needed only to
    read a Retry-After."""
    parsed = None
    if retry_after is not None:
        if now is None:
            raise ValueError("reading a Retry-After needs the current time")
        parsed = parse_retry_after_ms(retry_after, now=now)
    server_floor_ms = parsed or 0
    if parsed is not None and parsed > remaining_budget_ms:
        return RetryBlocked("retry_after_exceeds_budget", ErrorCode.RETRY_AFTER_EXCEEDS_BUDGET, server_floor_ms)
    if remaining_budget_ms <= 0:
        return RetryBlocked("budget_exhausted", None, server_floor_ms)
    cap = full_jitter_cap_ms(attempt, initial_delay_ms=initial_delay_ms, max_delay_ms=max_delay_ms)
    upper = min(cap, remaining_budget_ms)
    drawn = jitter.draw(upper)
    if not 0 <= drawn <= upper:
        raise ValueError("the jitter source drew outside the full-jitter interval")
    return RetryDelay(delay_ms=max(server_floor_ms, drawn), server_floor_ms=server_floor_ms)
