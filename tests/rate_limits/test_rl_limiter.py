"""JournalRateLimiter: waits as long as the journal says, never sends past its wait budget, and
always gives its active-request slot back; the supervisor asks it before anything durable."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from rl_fakes import LIMITS, FakeStore, StepClock, bundled_sync_plan

from sink.journal.port import JournalConfigurationError
from sink.journal.rate_policy import BucketSpec, SlotRequest
from sink.runtime.rate_limiter import (
    MAX_SLEEP_STEP_MS,
    SLOT_TTL,
    JournalRateLimiter,
    RateLimitWaitExceeded,
    RequestKind,
    SlotKeeper,
    bucket_specs,
    journal_rate_limiter,
    rate_scope_key,
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


def test_waiting_is_measured_from_the_first_ask_and_may_use_the_whole_budget() -> None:
    store, clock = FakeStore(token_waits=[250, 250]), StepClock(now=1_000_000)
    limiter(store, clock, max_wait_ms=500).take_token(RequestKind.POLL)
    assert clock.slept == [250, 250]


def test_the_scope_key_covers_exactly_the_listed_components() -> None:
    plan = bundled_sync_plan()
    limits = plan.operation.rate_limits
    assert set(limits.scope) == {"endpoint", "principal"}
    base = rate_scope_key(plan)
    other_principal = plan.model_copy(update={"binding": plan.binding.model_copy(
        update={"remote_principal_id": "someone-else"})})
    other_endpoint = plan.model_copy(update={"binding": plan.binding.model_copy(
        update={"authority_origin": "http://127.0.0.1:1"})})
    other_tenant = plan.model_copy(update={"environment": plan.environment.model_copy(
        update={"tenant_id": "other-tenant"})})
    other_profile = plan.model_copy(update={"operation": plan.operation.model_copy(update={"id": "mock.other"})})
    assert rate_scope_key(other_principal) != base and rate_scope_key(other_endpoint) != base
    assert rate_scope_key(other_profile) != base
    assert rate_scope_key(other_tenant) == base  # tenant is not in this profile's scope
    with_tenant = plan.model_copy(update={"operation": plan.operation.model_copy(update={
        "rate_limits": limits.model_copy(update={"scope": ("tenant",)})})})
    tenant_changed = with_tenant.model_copy(update={"environment": other_tenant.environment})
    assert rate_scope_key(with_tenant) != rate_scope_key(tenant_changed)
    environment_changed = with_tenant.model_copy(update={"environment": plan.environment.model_copy(
        update={"environment_id": "other-env"})})
    assert rate_scope_key(environment_changed) == rate_scope_key(with_tenant)


def test_the_composition_builds_the_limiter_from_the_plan_over_a_journal_only() -> None:
    plan = bundled_sync_plan()
    store, clock = FakeStore(), StepClock()
    built = journal_rate_limiter(plan, store, clock)
    with built.admit(RequestKind.SUBMIT):
        pass
    take, slot = store.events[0], store.events[1]
    key = rate_scope_key(plan)
    assert take[1] == BucketSpec(f"submit.{key}", plan.operation.rate_limits.submit_per_minute,
                                 plan.operation.rate_limits.submit_per_minute)
    assert isinstance(slot[1], SlotRequest) and slot[1].scope == f"requests.{key}"
    assert slot[1].limit == plan.operation.rate_limits.max_active_requests
    with pytest.raises(JournalConfigurationError):
        journal_rate_limiter(plan, object(), clock)


def test_a_limiter_past_its_budget_reports_it() -> None:
    store, clock = FakeStore(token_waits=[5_000] * 3_000), StepClock()
    built = journal_rate_limiter(bundled_sync_plan(), store, clock)
    with pytest.raises(RateLimitWaitExceeded):
        built.take_token(RequestKind.SUBMIT)
    assert sum(clock.slept) <= bundled_sync_plan().operation.timeouts.operation_total_ms


def test_a_one_millisecond_wait_is_still_waited() -> None:
    store, clock = FakeStore(token_waits=[1]), StepClock()
    limiter(store, clock).take_token(RequestKind.SUBMIT)
    assert clock.slept == [1] and len(store.events) == 2


def test_the_environment_component_counts_when_listed() -> None:
    plan = bundled_sync_plan()
    scoped = plan.model_copy(update={"operation": plan.operation.model_copy(update={
        "rate_limits": plan.operation.rate_limits.model_copy(update={"scope": ("environment",)})})})
    moved = scoped.model_copy(update={"environment": plan.environment.model_copy(
        update={"environment_id": "other-env"})})
    assert rate_scope_key(moved) != rate_scope_key(scoped)
