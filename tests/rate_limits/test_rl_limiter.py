"""JournalRateLimiter: waits as long as the journal says, never sends past its wait budget, and
always gives its active-request slot back; the supervisor asks it before anything durable."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from rl_fakes import LIMITS, FakeStore, StepClock

from sink.journal.rate_policy import BucketSpec, SlotRequest
from sink.runtime.rate_limiter import (
    MAX_SLEEP_STEP_MS,
    SLOT_TTL,
    JournalRateLimiter,
    RateLimitWaitExceeded,
    RequestKind,
    SlotKeeper,
    bucket_specs,
)


def limiter(store: FakeStore, clock: StepClock, max_wait_ms: int = 10_000) -> JournalRateLimiter:
    return JournalRateLimiter(store, clock, limits=LIMITS, scope_key="k", max_wait_ms=max_wait_ms)


def test_a_submit_takes_a_submit_token_then_a_slot_and_releases_it() -> None:
    store, clock = FakeStore(), StepClock()
    with limiter(store, clock).admit(RequestKind.SUBMIT):
        assert [e[0] for e in store.events] == ["take:submit.k", "slot"]
        slot = store.events[1][1]
        assert isinstance(slot, SlotRequest) and slot.limit == LIMITS.max_active_requests
        assert slot.ttl == SLOT_TTL and slot.scope == "requests.k"
    assert store.events[-1] == ("release", slot.holder)


def test_a_poll_takes_a_poll_token_and_a_summary_none() -> None:
    store, clock = FakeStore(), StepClock()
    with limiter(store, clock).admit(RequestKind.POLL):
        pass
    with limiter(store, clock).admit(RequestKind.SUMMARY):
        pass
    assert [e[0] for e in store.events] == ["take:poll.k", "slot", "release", "slot", "release"]


def test_each_admission_holds_its_own_slot() -> None:
    store, clock = FakeStore(), StepClock()
    rl = limiter(store, clock)
    with rl.admit(RequestKind.SUMMARY), rl.admit(RequestKind.SUMMARY):
        holders = [e[1].holder for e in store.events if e[0] == "slot" and isinstance(e[1], SlotRequest)]
    assert len(set(holders)) == 2


def test_the_slot_is_released_when_the_request_fails() -> None:
    store, clock = FakeStore(), StepClock()
    with pytest.raises(RuntimeError), limiter(store, clock).admit(RequestKind.SUBMIT):
        raise RuntimeError("transport blew up")
    assert store.events[-1][0] == "release"


def test_it_sleeps_until_the_journal_grants_in_bounded_steps() -> None:
    store, clock = FakeStore(token_waits=[700, 100]), StepClock()
    limiter(store, clock).take_token(RequestKind.SUBMIT)
    assert clock.slept == [MAX_SLEEP_STEP_MS, 100]
    assert [e[0] for e in store.events] == ["take:submit.k"] * 3


def test_past_the_wait_budget_nothing_is_admitted() -> None:
    store, clock = FakeStore(token_waits=[5_000] * 100), StepClock()
    with pytest.raises(RateLimitWaitExceeded), limiter(store, clock, max_wait_ms=1_000).admit(RequestKind.SUBMIT):
        pytest.fail("admitted past the budget")
    assert sum(clock.slept) <= 1_000
    assert not any(e[0] == "slot" for e in store.events)


def test_a_slot_wait_past_the_budget_is_refused_too() -> None:
    store, clock = FakeStore(slot_waits=[400] * 100), StepClock()
    with pytest.raises(RateLimitWaitExceeded), limiter(store, clock, max_wait_ms=900).admit(RequestKind.SUMMARY):
        pytest.fail("admitted past the budget")
    assert not any(e[0] == "release" for e in store.events)


def test_buckets_take_rate_and_burst_from_the_profile() -> None:
    specs = bucket_specs(LIMITS, "k")
    assert specs[RequestKind.SUBMIT] == BucketSpec("submit.k", LIMITS.submit_per_minute, LIMITS.submit_per_minute)
    assert specs[RequestKind.POLL] == BucketSpec("poll.k", LIMITS.poll_per_minute, LIMITS.poll_per_minute)
    assert RequestKind.SUMMARY not in specs


def test_the_keeper_renews_a_held_slot_until_it_is_released_and_never_after() -> None:
    store = FakeStore()
    keeper = SlotKeeper(store, "requests.k", 3, ttl=timedelta(seconds=1), renew_every_s=0.05)
    keeper.hold("h1")
    deadline = time.monotonic() + 5
    while sum(1 for e in store.events if e[0] == "slot") < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    renewals = [e[1] for e in store.events if e[0] == "slot"]
    assert len(renewals) >= 3
    assert all(isinstance(r, SlotRequest) and r.holder == "h1" and r.ttl == timedelta(seconds=1) for r in renewals)
    keeper.release("h1")
    released_at = len(store.events)
    assert store.events[-1] == ("release", "h1")
    time.sleep(0.25)  # several renewal periods: the keeper stopped and renewed nothing more
    assert store.events[released_at:] == []
