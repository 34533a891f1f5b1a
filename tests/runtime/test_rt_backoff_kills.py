"""Kill tests for sink/runtime/backoff.py (mutation gate, tools/mutation): every month and weekday
name in each of the three HTTP-date forms RFC 9110 5.6.7 requires, and the exponent cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sink.runtime.backoff import full_jitter_cap_ms, parse_retry_after_ms

NOW = datetime(2026, 12, 1, tzinfo=UTC)
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
# The first of every month of 2027, and seven days in a row: every month name and every weekday.
MOMENTS = [datetime(2027, m, 1, 8, 49, 37, tzinfo=UTC) for m in range(1, 13)] + [
    datetime(2027, 3, 10, 8, 49, 37, tzinfo=UTC) + timedelta(days=i) for i in range(7)]


def _forms(moment: datetime) -> dict[str, str]:
    day, month = DAYS[moment.weekday()], MONTHS[moment.month - 1]
    clock = moment.strftime("%H:%M:%S")
    return {
        "imf": f"{day[:3]}, {moment.day:02d} {month} {moment.year} {clock} GMT",
        "rfc850": f"{day}, {moment.day:02d}-{month}-{moment.year % 100:02d} {clock} GMT",
        "asctime": f"{day[:3]} {month} {moment.day:2d} {clock} {moment.year}",
    }


@pytest.mark.parametrize("moment", MOMENTS, ids=[m.date().isoformat() for m in MOMENTS])
@pytest.mark.parametrize("form", ["imf", "rfc850", "asctime"])
def test_every_month_and_weekday_in_every_form(moment: datetime, form: str) -> None:
    expected_ms = int((moment - NOW).total_seconds()) * 1000
    assert parse_retry_after_ms(_forms(moment)[form], now=NOW) == expected_ms


def test_growth_stops_at_two_to_the_62() -> None:
    assert full_jitter_cap_ms(62, initial_delay_ms=1, max_delay_ms=2**70) == 2**62
    assert full_jitter_cap_ms(100, initial_delay_ms=1, max_delay_ms=2**70) == 2**62
