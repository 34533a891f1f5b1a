"""The pure token-bucket and slot rules both journal adapters share (sink.journal.rate_policy)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sink.journal.rate_policy import (
    UNITS_PER_TOKEN,
    BucketLevel,
    BucketSpec,
    SlotRequest,
    decide_slot,
    take_token,
)

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SPEC = BucketSpec("submit.scope", rate_per_minute=60, burst=3)  # one token a second


def ms(n: int) -> timedelta:
    return timedelta(milliseconds=n)


def test_a_new_bucket_starts_full_and_grants_burst_then_waits() -> None:
    level = None
    grants = []
    for _ in range(4):
        decision = take_token(SPEC, level, T0)
        grants.append(decision.granted)
        level = decision.level
    assert grants == [True, True, True, False]
    assert take_token(SPEC, level, T0).wait_ms == 1000


def test_refill_is_exact_and_the_wait_is_rounded_up() -> None:
    empty = BucketLevel(0, T0)
    assert take_token(SPEC, empty, T0 + ms(999)) == take_token(SPEC, empty, T0 + ms(999))
    assert not take_token(SPEC, empty, T0 + ms(999)).granted
    assert take_token(SPEC, empty, T0 + ms(999)).wait_ms == 1
    assert take_token(SPEC, empty, T0 + ms(1000)).granted
    odd = BucketSpec("poll.scope", rate_per_minute=7, burst=1)
    # 60000 units at 7 a ms: 8571.43 ms, never woken early.
    assert take_token(odd, BucketLevel(0, T0), T0).wait_ms == 8572


def test_the_level_never_exceeds_the_burst() -> None:
    long_idle = take_token(SPEC, BucketLevel(0, T0), T0 + timedelta(hours=1))
    assert long_idle.level.units == SPEC.capacity_units - UNITS_PER_TOKEN


def test_a_refused_take_still_records_the_refill() -> None:
    decision = take_token(SPEC, BucketLevel(0, T0), T0 + ms(400))
    assert not decision.granted and decision.level == BucketLevel(400 * 60, T0 + ms(400))
    assert decision.wait_ms == 600


def test_a_clock_that_steps_back_refills_nothing() -> None:
    decision = take_token(SPEC, BucketLevel(0, T0), T0 - timedelta(seconds=30))
    assert not decision.granted and decision.level == BucketLevel(0, T0)


@pytest.mark.parametrize("rate,burst", [(0, 1), (1, 0), (1_000_001, 1), (1, 1_000_001)])
def test_out_of_range_specs_are_refused(rate: int, burst: int) -> None:
    with pytest.raises(ValueError):
        BucketSpec("b", rate, burst)


def test_bucket_names_are_plain_identifiers() -> None:
    with pytest.raises(ValueError, match="rate bucket"):
        BucketSpec("has space", 1, 1)


def test_slots_are_granted_below_the_limit_or_to_a_holder() -> None:
    request = SlotRequest("requests.s", "h", 2, timedelta(seconds=5))
    assert decide_slot(request, [T0 + ms(10)], holds_already=False, now=T0).granted
    full = [T0 + ms(300), T0 + ms(120)]
    refused = decide_slot(request, full, holds_already=False, now=T0)
    assert not refused.granted and refused.wait_ms == 120
    assert decide_slot(request, full, holds_already=True, now=T0).granted
    assert decide_slot(request, [T0, T0], holds_already=False, now=T0).wait_ms == 1


@pytest.mark.parametrize("limit,ttl", [(0, timedelta(seconds=1)), (1, timedelta(0)), (1, timedelta(hours=7))])
def test_out_of_range_slot_requests_are_refused(limit: int, ttl: timedelta) -> None:
    with pytest.raises(ValueError):
        SlotRequest("requests.s", "h", limit, ttl)


def test_a_granted_take_waits_nothing_and_an_equal_clock_keeps_the_stamp() -> None:
    full = take_token(SPEC, None, T0)
    assert full.granted and full.wait_ms == 0 and full.level == BucketLevel(2 * UNITS_PER_TOKEN, T0)
    same = take_token(SPEC, BucketLevel(UNITS_PER_TOKEN, T0), T0)
    assert same.granted and same.level == BucketLevel(0, T0)


@pytest.mark.parametrize("rate,burst", [(1, 1), (1_000_000, 1_000_000)])
def test_the_edges_of_the_spec_ranges_are_accepted(rate: int, burst: int) -> None:
    assert BucketSpec("b", rate, burst).capacity_units == burst * UNITS_PER_TOKEN


@pytest.mark.parametrize("limit,ttl", [(1, timedelta(microseconds=1)), (10_000, timedelta(hours=6))])
def test_the_edges_of_the_slot_ranges_are_accepted(limit: int, ttl: timedelta) -> None:
    assert SlotRequest("requests.s", "h", limit, ttl).limit == limit


def test_the_slot_limit_above_the_maximum_is_refused() -> None:
    with pytest.raises(ValueError):
        SlotRequest("requests.s", "h", 10_001, timedelta(seconds=1))


@pytest.mark.parametrize("scope,holder", [("has space", "h"), ("requests.s", "has space")])
def test_slot_names_are_plain_identifiers(scope: str, holder: str) -> None:
    with pytest.raises(ValueError, match="request-slot scope" if scope == "has space" else "request-slot holder"):
        SlotRequest(scope, holder, 1, timedelta(seconds=1))


def test_a_granted_slot_waits_nothing() -> None:
    request = SlotRequest("requests.s", "h", 1, timedelta(seconds=5))
    assert decide_slot(request, [], holds_already=False, now=T0).wait_ms == 0
