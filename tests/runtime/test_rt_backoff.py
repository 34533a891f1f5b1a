"""backoff: full jitter bounds, Retry-After parsing (RFC 9110) as a lower bound, never truncated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sink.contracts.errors import ErrorCode
from sink.runtime.backoff import (
    DigestJitter,
    JitterSource,
    RetryBlocked,
    RetryDelay,
    full_jitter_cap_ms,
    next_retry_delay,
    parse_retry_after_ms,
)

NOW = datetime(2026, 12, 1, 8, 0, 0, tzinfo=UTC)


class FixedJitter:
    """Returns ``value`` clamped to the range and records every upper bound it was asked for."""

    def __init__(self, value: int | None = None) -> None:
        self.value = value
        self.uppers: list[int] = []

    def draw(self, upper_inclusive: int) -> int:
        self.uppers.append(upper_inclusive)
        return upper_inclusive if self.value is None else min(self.value, upper_inclusive)


def _delay(attempt: int = 0, *, remaining: int = 60_000, jitter: JitterSource | None = None,
           retry_after: str | None = None, initial: int = 500, maximum: int = 10_000) -> RetryDelay | RetryBlocked:
    return next_retry_delay(
        attempt, initial_delay_ms=initial, max_delay_ms=maximum, remaining_budget_ms=remaining,
        jitter=jitter if jitter is not None else FixedJitter(), retry_after=retry_after, now=NOW,
    )


@pytest.mark.parametrize(("attempt", "cap"), [(0, 500), (1, 1000), (2, 2000), (4, 8000), (5, 10_000), (500, 10_000)])
def test_full_jitter_cap_doubles_per_retry_up_to_max(attempt: int, cap: int) -> None:
    assert full_jitter_cap_ms(attempt, initial_delay_ms=500, max_delay_ms=10_000) == cap


def test_full_jitter_cap_refuses_negative_attempt() -> None:
    with pytest.raises(ValueError, match=r"^attempt is the 0-based retry number$"):
        full_jitter_cap_ms(-1, initial_delay_ms=500, max_delay_ms=10_000)


def test_delay_draws_in_the_full_jitter_interval() -> None:
    jitter = FixedJitter()
    result = _delay(2, jitter=jitter)
    assert jitter.uppers == [2000]
    assert result == RetryDelay(delay_ms=2000, server_floor_ms=0)
    low = _delay(2, jitter=FixedJitter(0))
    assert low == RetryDelay(delay_ms=0, server_floor_ms=0)


def test_jitter_draw_is_limited_by_the_remaining_budget() -> None:
    jitter = FixedJitter()
    result = _delay(5, remaining=700, jitter=jitter)
    assert jitter.uppers == [700]
    assert result == RetryDelay(delay_ms=700, server_floor_ms=0)


def test_jitter_outside_interval_is_refused() -> None:
    class Rogue:
        def draw(self, upper_inclusive: int) -> int:
            return upper_inclusive + 1

    with pytest.raises(ValueError, match=r"^the jitter source drew outside the full-jitter interval$"):
        _delay(0, jitter=Rogue())

    class Negative:
        def draw(self, upper_inclusive: int) -> int:
            return -1

    with pytest.raises(ValueError, match=r"^the jitter source drew outside the full-jitter interval$"):
        _delay(0, jitter=Negative())


def test_retry_after_is_a_lower_bound() -> None:
    assert _delay(0, jitter=FixedJitter(100), retry_after="3") == RetryDelay(delay_ms=3000, server_floor_ms=3000)
    # A jitter draw above the floor wins: the floor is a bound, not the delay.
    assert _delay(0, jitter=FixedJitter(), retry_after="0", initial=500) == RetryDelay(500, 0)


def test_retry_after_equal_to_budget_fits() -> None:
    assert _delay(0, remaining=5000, jitter=FixedJitter(0), retry_after="5") == RetryDelay(5000, 5000)


def test_retry_after_beyond_budget_blocks_and_is_never_truncated() -> None:
    result = _delay(0, remaining=4999, retry_after="5")
    assert result == RetryBlocked("retry_after_exceeds_budget", ErrorCode.RETRY_AFTER_EXCEEDS_BUDGET, 5000)


def test_spent_budget_blocks_without_server_code() -> None:
    assert _delay(0, remaining=0) == RetryBlocked("budget_exhausted", None, 0)
    assert _delay(0, remaining=-5) == RetryBlocked("budget_exhausted", None, 0)


def test_invalid_retry_after_is_ignored() -> None:
    assert _delay(0, jitter=FixedJitter(7), retry_after="soon") == RetryDelay(7, 0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0),
        ("120", 120_000),
        (" 7\t", 7000),
        ("000000000000000001", 1000),
        ("Tue, 01 Dec 2026 08:00:10 GMT", 10_000),  # IMF-fixdate
        ("Tuesday, 01-Dec-26 08:01:00 GMT", 60_000),  # RFC 850
        ("Tue Dec  1 08:00:02 2026", 2000),  # asctime, space-padded day
        ("Tue, 01 Dec 2026 07:59:00 GMT", 0),  # in the past
        ("Tue, 01 Dec 2026 08:00:00 GMT", 0),  # exactly now
    ],
)
def test_valid_retry_after(value: str, expected: int) -> None:
    assert parse_retry_after_ms(value, now=NOW) == expected


@pytest.mark.parametrize(
    "value",
    [
        "", "-1", "+5", "1.5", "1e3", "5 s", "0x10", "1234567890123456789",  # delay-seconds
        "Wed, 01 Dec 2026 08:00:10 GMT",  # weekday contradicts the date
        "Tue, 01 Dec 2026 08:00:10 UTC",  # only GMT
        "Tue, 01 Dec 2026 08:00:10 +0000",
        "Tue, 1 Dec 2026 08:00:10 GMT",  # day is two digits
        "Tue, 31 Feb 2026 08:00:10 GMT",  # no such day
        "Tue, 01 Dec 2026 24:00:10 GMT",
        "tue, 01 dec 2026 08:00:10 gmt",  # case-sensitive tokens
        "Tue, 01 Dec 2026 08:00 GMT",
        "Tue, 01-Dec-26 08:01:00 GMT",  # RFC 850 needs the long weekday
        "Tue Dec 01 08:00:02 2026 GMT",
        "2026-12-01T08:00:10Z",
        "5\n", "X5", "\x0b5",
        None,
    ],
)
def test_invalid_retry_after(value: str | None) -> None:
    assert parse_retry_after_ms(value, now=NOW) is None


def test_fractional_now_rounds_the_date_delay_up() -> None:
    now = NOW + timedelta(microseconds=1)
    assert parse_retry_after_ms("Tue, 01 Dec 2026 08:00:10 GMT", now=now) == 10_000
    now = NOW + timedelta(microseconds=1500)
    assert parse_retry_after_ms("Tue, 01 Dec 2026 08:00:10 GMT", now=now) == 9999


def test_rfc850_two_digit_year_more_than_50_years_ahead_is_in_the_past() -> None:
    # now is 2026: "76" would be 2076 (exactly 50 ahead, kept); "77" is 2077 -> 1977 (past: 0 delay).
    assert parse_retry_after_ms("Tuesday, 01-Dec-76 08:00:00 GMT", now=NOW) is not None
    assert parse_retry_after_ms("Tuesday, 01-Dec-76 08:00:00 GMT", now=NOW) > 0  # type: ignore[operator]
    assert parse_retry_after_ms("Thursday, 01-Dec-77 08:00:00 GMT", now=NOW) == 0
    # "26" -> 2026 (same century)
    assert parse_retry_after_ms("Tuesday, 01-Dec-26 08:00:05 GMT", now=NOW) == 5000


def test_digest_jitter_is_deterministic_and_in_range() -> None:
    first = [DigestJitter("op_1").draw(1000) for _ in range(3)]
    again = [DigestJitter("op_1").draw(1000) for _ in range(3)]
    assert first == again
    source = DigestJitter("op_1")
    draws = [source.draw(1000) for _ in range(50)]
    assert len(set(draws)) > 10, "successive draws must differ"
    assert draws[:1] == first[:1]
    assert all(0 <= d <= 1000 for d in draws)
    assert DigestJitter("op_2").draw(10**9) != DigestJitter("op_1").draw(10**9)
    assert DigestJitter("x").draw(0) == 0


def test_digest_jitter_refuses_negative_range() -> None:
    with pytest.raises(ValueError, match=r"^the jitter range must not be negative$"):
        DigestJitter("x").draw(-1)


@given(
    attempt=st.integers(0, 80), remaining=st.integers(1, 10**8), seed=st.text(max_size=8),
    retry_after=st.one_of(st.none(), st.integers(0, 10**5).map(str)),
)
def test_delay_never_below_server_floor_nor_above_interval(attempt: int, remaining: int, seed: str,
                                                           retry_after: str | None) -> None:
    result = _delay(attempt, remaining=remaining, jitter=DigestJitter(seed), retry_after=retry_after)
    floor = int(retry_after) * 1000 if retry_after is not None else 0
    if floor > remaining:
        assert isinstance(result, RetryBlocked)
        assert result.error_code is ErrorCode.RETRY_AFTER_EXCEEDS_BUDGET
    else:
        assert isinstance(result, RetryDelay)
        cap = full_jitter_cap_ms(attempt, initial_delay_ms=500, max_delay_ms=10_000)
        assert floor <= result.delay_ms <= max(floor, min(cap, remaining))


def test_sub_second_and_multi_day_dates_are_exact() -> None:
    half = NOW + timedelta(milliseconds=500)
    assert parse_retry_after_ms("Tue, 01 Dec 2026 08:00:01 GMT", now=half) == 500
    assert parse_retry_after_ms("Thu, 03 Dec 2026 08:00:00 GMT", now=NOW) == 2 * 86_400_000


def test_reading_a_retry_after_needs_the_clock() -> None:
    with pytest.raises(ValueError, match=r"^reading a Retry-After needs the current time$"):
        next_retry_delay(0, initial_delay_ms=1, max_delay_ms=1, remaining_budget_ms=10, jitter=FixedJitter(),
                         retry_after="1")
    assert next_retry_delay(0, initial_delay_ms=1, max_delay_ms=1, remaining_budget_ms=10,
                            jitter=FixedJitter()) == RetryDelay(1, 0)


def test_digest_jitter_follows_its_documented_formula() -> None:
    import hashlib

    def expected(seed: str, counter: int, upper: int) -> int:
        block = hashlib.sha256(seed.encode("utf-8") + b"\x00" + counter.to_bytes(8, "big")).digest()
        return int.from_bytes(block, "big") % (upper + 1)

    source = DigestJitter("op_\u00e9")
    assert [source.draw(10**12) for _ in range(3)] == [expected("op_\u00e9", n, 10**12) for n in range(3)]
