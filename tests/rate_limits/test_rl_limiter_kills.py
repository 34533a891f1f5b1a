"""Kill tests for sink/runtime/rate_limiter.py (issue 14): each pins one documented property of the
limiter that test_rl_limiter.py left open (docs/delivery-runtime.md: a 4 s slot lease, waits in
steps of at most 250 ms, the scope key shared by every process of a journal)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from rl_fakes import LIMITS, FakeStore, StepClock, bundled_sync_plan

from sink.canonical import hash_fields
from sink.journal.rate_policy import SlotRequest
from sink.runtime.rate_limiter import (
    JournalRateLimiter,
    RateLimitWaitExceeded,
    RequestKind,
    SlotKeeper,
    journal_rate_limiter,
    rate_scope_key,
)

KEEPER_THREAD = "restproof-slot-keeper"


def _limiter(store: FakeStore, clock: StepClock, max_wait_ms: int = 10_000,
             keeper: SlotKeeper | None = None) -> JournalRateLimiter:
    return JournalRateLimiter(store, clock, limits=LIMITS, scope_key="k", max_wait_ms=max_wait_ms, keeper=keeper)


def test_a_long_wait_is_slept_in_steps_of_at_most_250_ms() -> None:
    store, clock = FakeStore(token_waits=[1_000, 750, 500, 250]), StepClock()
    _limiter(store, clock).take_token(RequestKind.SUBMIT)
    assert clock.slept == [250, 250, 250, 250]


def test_the_plan_built_limiter_holds_a_four_second_slot_lease() -> None:
    store, clock = FakeStore(), StepClock()
    with journal_rate_limiter(bundled_sync_plan(), store, clock).admit(RequestKind.SUMMARY):
        slot = store.events[0][1]
    assert isinstance(slot, SlotRequest) and slot.ttl == timedelta(seconds=4)


@pytest.mark.parametrize("kind", list(RequestKind))
def test_a_refusal_names_the_kind_of_request_it_refused(kind: RequestKind) -> None:
    store, clock = FakeStore(token_waits=[5_000] * 10, slot_waits=[5_000] * 10), StepClock()
    with pytest.raises(RateLimitWaitExceeded) as caught, _limiter(store, clock, max_wait_ms=100).admit(kind):
        pytest.fail("admitted past the budget")
    assert f"did not admit a {kind.name.lower()} request" in str(caught.value)


def test_a_slot_holder_is_named_after_its_request_kind() -> None:
    store, clock = FakeStore(), StepClock()
    rl = _limiter(store, clock)
    for kind in RequestKind:
        with rl.admit(kind):
            pass
    holders = [e[1].holder for e in store.events if e[0] == "slot" and isinstance(e[1], SlotRequest)]
    assert [h.split(".")[0] for h in holders] == ["submit", "poll", "summary"]


def test_the_scope_key_is_the_documented_digest_of_profile_and_listed_components() -> None:
    # Processes of different versions share buckets only if they derive the same key.
    plan = bundled_sync_plan()
    binding, request = plan.binding, plan.operation.request
    expected = hash_fields("restproof.runtime.rate_scope", {
        "profile": plan.operation.id,
        "endpoint": f"{binding.authority_origin} {request.method} {request.path}",
        "principal": binding.remote_principal_id,
    }).removeprefix("sha256:")[:40]
    assert set(plan.operation.rate_limits.scope) == {"endpoint", "principal"}
    assert rate_scope_key(plan) == expected


def test_a_given_keeper_is_the_one_that_holds_the_slot() -> None:
    store, clock = FakeStore(), StepClock()
    keeper = SlotKeeper(store, "requests.shared", 7, ttl=timedelta(seconds=2))
    with _limiter(store, clock, keeper=keeper).admit(RequestKind.SUMMARY):
        slot = store.events[0][1]
    assert isinstance(slot, SlotRequest)
    assert (slot.scope, slot.limit, slot.ttl) == ("requests.shared", 7, timedelta(seconds=2))


def _keeper_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == KEEPER_THREAD]


def test_the_keeper_is_a_named_daemon_thread_that_never_holds_the_process_alive() -> None:
    # Named so a thread dump shows what renews slots; a daemon, so an exiting process is not kept
    # alive by a renewal loop (its slots then run out with their lease).
    keeper = SlotKeeper(FakeStore(), "requests.k", 3, renew_every_s=0.02)
    keeper.hold("h1")
    threads = _keeper_threads()
    assert threads and all(t.daemon for t in threads)
    keeper.release("h1")
    deadline = time.monotonic() + 5
    while _keeper_threads() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _keeper_threads() == []
