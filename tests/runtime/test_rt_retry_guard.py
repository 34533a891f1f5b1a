"""retry_guard: a mutation is (re)sent only with proven absence and budget, or a certified fence in
the live attempt; never after UNKNOWN, never by a worker that finds SUBMITTING after lease expiry."""

from __future__ import annotations

import pytest
from rt_support import ASYNC_PROFILE, CONTRACT, SYNC_PROFILE, no_fence, profile, tuple_named

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.profile import MutationFence
from sink.contracts.state import ExecutionState, RemoteEffect
from sink.runtime.retry_guard import (
    GuardReason,
    GuardVerdict,
    RetryBudgetExhausted,
    assert_mutation_permitted,
    fence_permits_replay,
    fence_retention_ms,
    may_replay_same_key,
    may_start_attempt,
    may_take_over,
)

FENCED = profile(SYNC_PROFILE)  # idempotency_key_header, 86400 s, max_attempts 3


def _replay(current_name: str = "submitting", *, prof: object = FENCED, sends: int = 1, live: bool = True,
            elapsed: int = 0, delay: int = 0) -> GuardVerdict:
    return may_replay_same_key(tuple_named(current_name), profile=prof,  # type: ignore[arg-type]
                               sends_used=sends, live_attempt=live, elapsed_since_first_send_ms=elapsed,
                               delay_ms=delay)


def test_first_submit_from_sealed_is_permitted() -> None:
    verdict = may_start_attempt(tuple_named("sealed"), attempts_used=0, max_attempts=3)
    assert verdict == GuardVerdict(True, GuardReason.FIRST_SUBMIT, None)


def test_retry_wait_is_durable_not_started_proof() -> None:
    verdict = may_start_attempt(tuple_named("retry_wait"), attempts_used=2, max_attempts=3)
    assert verdict == GuardVerdict(True, GuardReason.REQUEST_NOT_STARTED_PROVEN, None)


def test_new_attempt_needs_budget() -> None:
    verdict = may_start_attempt(tuple_named("retry_wait"), attempts_used=3, max_attempts=3)
    assert verdict == GuardVerdict(False, GuardReason.BUDGET_EXHAUSTED, None)
    assert may_start_attempt(tuple_named("sealed"), attempts_used=3, max_attempts=3).permitted is False


# Sorted: legal_tuples is a set, and xdist workers must collect the same ids in the same order.
@pytest.mark.parametrize("name", sorted(t for t in (CONTRACT.name_of(s) for s in CONTRACT.legal_tuples)
                                        if t is not None and t not in ("sealed", "retry_wait")))
def test_no_new_attempt_from_any_other_tuple(name: str | None) -> None:
    assert name is not None
    current = tuple_named(name)
    verdict = may_start_attempt(current, attempts_used=0, max_attempts=3)
    assert verdict.permitted is False
    assert verdict.error_code is ErrorCode.UNSAFE_RETRY
    expected = (GuardReason.NOT_A_SUBMIT_STATE if current.remote_effect is RemoteEffect.NONE_PROVEN
                else GuardReason.EFFECT_NOT_PROVEN_ABSENT)
    assert verdict.reason is expected


def test_every_permitted_new_attempt_has_a_contract_transition_into_submitting() -> None:
    for state in CONTRACT.legal_tuples:
        if may_start_attempt(state, attempts_used=0, max_attempts=3).permitted:
            targets = {t.target.execution_state for t in CONTRACT.transitions_from(state)}
            assert ExecutionState.SUBMITTING in targets


def test_fenced_replay_in_live_attempt_is_permitted() -> None:
    assert _replay() == GuardVerdict(True, GuardReason.CERTIFIED_FENCE_REPLAY, None)


def test_replay_refused_after_lease_expiry_even_with_fence() -> None:
    assert _replay(live=False) == GuardVerdict(False, GuardReason.LEASE_EXPIRED_AFTER_SUBMITTING,
                                               ErrorCode.UNSAFE_RETRY)


@pytest.mark.parametrize("name", ["finalized_not_accepted_outcome_lost", "reconciling_unknown_not_accepted",
                                  "reconciling_partial_succeeded", "finalized_failed_unknown_failed"])
def test_replay_never_after_unknown_or_partial(name: str) -> None:
    assert _replay(name) == GuardVerdict(False, GuardReason.EFFECT_NOT_PROVEN_ABSENT, ErrorCode.UNSAFE_RETRY)


@pytest.mark.parametrize("name", ["sealed", "retry_wait", "accepted_ack_accepted", "waiting_ack_running",
                                  "verifying_succeeded"])
def test_replay_only_from_submitting(name: str) -> None:
    assert _replay(name) == GuardVerdict(False, GuardReason.NOT_A_SUBMIT_STATE, ErrorCode.UNSAFE_RETRY)


def test_replay_refused_without_fence() -> None:
    assert _replay(prof=no_fence()) == GuardVerdict(False, GuardReason.FENCE_NOT_CERTIFIED, ErrorCode.UNSAFE_RETRY)


def test_replay_counts_against_the_submit_budget() -> None:
    assert _replay(sends=2).permitted is True
    assert _replay(sends=3) == GuardVerdict(False, GuardReason.BUDGET_EXHAUSTED, None)


def test_replay_must_land_inside_the_fence_retention() -> None:
    ttl = 86_400_000
    assert _replay(elapsed=ttl - 1001, delay=1000).permitted is True
    assert _replay(elapsed=ttl - 1000, delay=1000) == GuardVerdict(
        False, GuardReason.FENCE_RETENTION_EXCEEDED, ErrorCode.UNSAFE_RETRY)
    assert _replay(elapsed=ttl - 500, delay=0).permitted is True
    assert _replay(elapsed=0, delay=ttl).permitted is False


def _takeover(current_name: str = "submitting", *, prof: object = FENCED, age: int = 0) -> GuardVerdict:
    return may_take_over(tuple_named(current_name), profile=prof, attempt_age_ms=age)  # type: ignore[arg-type]


def test_takeover_of_a_gone_workers_submitting_attempt_under_a_certified_fence() -> None:
    assert _takeover() == GuardVerdict(True, GuardReason.TAKEOVER_FENCED_REPLAY, None)
    assert _takeover(age=86_400_000 - 1).permitted is True


@pytest.mark.parametrize("name", ["finalized_not_accepted_outcome_lost", "reconciling_unknown_not_accepted",
                                  "reconciling_partial_succeeded", "finalized_failed_unknown_failed"])
def test_takeover_never_after_unknown_or_partial(name: str) -> None:
    assert _takeover(name) == GuardVerdict(False, GuardReason.EFFECT_NOT_PROVEN_ABSENT, ErrorCode.UNSAFE_RETRY)


@pytest.mark.parametrize("name", ["sealed", "retry_wait", "accepted_ack_accepted", "waiting_ack_running"])
def test_takeover_only_from_submitting(name: str) -> None:
    assert _takeover(name) == GuardVerdict(False, GuardReason.NOT_A_SUBMIT_STATE, ErrorCode.UNSAFE_RETRY)


def test_takeover_refused_without_a_certified_fence() -> None:
    assert _takeover(prof=no_fence()) == GuardVerdict(False, GuardReason.FENCE_NOT_CERTIFIED,
                                                      ErrorCode.UNSAFE_RETRY)


def test_takeover_must_land_strictly_inside_the_retention_from_the_attempt_row() -> None:
    exceeded = GuardVerdict(False, GuardReason.FENCE_RETENTION_EXCEEDED, ErrorCode.UNSAFE_RETRY)
    assert _takeover(age=86_400_000) == exceeded
    assert _takeover(age=86_400_001) == exceeded
    # A negative age (the attempt row "from the future") proves nothing about the send time.
    assert _takeover(age=-1) == exceeded
    assert _takeover(age=0).permitted is True
    assert _takeover(age=1).permitted is True


def test_fence_retention_falls_back_to_receipt_retention() -> None:
    assert fence_retention_ms(FENCED) == 86_400 * 1000
    short = profile(SYNC_PROFILE, mutation_fence={"retention_ttl_seconds": 60})
    assert fence_retention_ms(short) == 60_000
    async_profile = profile(ASYNC_PROFILE)  # receiver_duplicate_key without its own TTL
    assert async_profile.mutation_fence.retention_ttl_seconds is None
    assert fence_retention_ms(async_profile) == 172_800 * 1000


def _fence(**changes: object) -> MutationFence:
    base = {"type": "idempotency_key_header", "location": "header", "header_name": "Idempotency-Key",
            "value_from": "receiver_mutation_key", "key_payload_binding": "required",
            "certification_ref": "cert-1", "retention_ttl_seconds": 60}
    return MutationFence.model_validate({**base, **changes})


def test_fence_replay_rules() -> None:
    assert fence_permits_replay(_fence()) is True
    assert fence_permits_replay(_fence(type="receiver_duplicate_key")) is True
    assert fence_permits_replay(_fence(type="fingerprint_ledger")) is True
    # A key not bound to the payload could let a replay apply other content.
    assert fence_permits_replay(_fence(key_payload_binding="not_bound")) is False
    # The remote fence is receiver_mutation_key, nothing else.
    assert fence_permits_replay(_fence(value_from="delivery_key")) is False
    assert fence_permits_replay(MutationFence(type="none")) is False


def test_fence_without_certification_ref_is_not_certified() -> None:
    uncertified = _fence().model_copy(update={"certification_ref": None})
    assert fence_permits_replay(uncertified) is False


def test_assert_mutation_permitted() -> None:
    assert_mutation_permitted(GuardVerdict(True, GuardReason.FIRST_SUBMIT, None), "op_1")
    with pytest.raises(DeliveryError) as raised:
        assert_mutation_permitted(GuardVerdict(False, GuardReason.LEASE_EXPIRED_AFTER_SUBMITTING,
                                               ErrorCode.UNSAFE_RETRY), "op_1")
    assert raised.value.code is ErrorCode.UNSAFE_RETRY
    assert "lease_expired_after_submitting" in str(raised.value)
    with pytest.raises(RetryBudgetExhausted) as exhausted:
        assert_mutation_permitted(GuardVerdict(False, GuardReason.BUDGET_EXHAUSTED, None), "op_2")
    assert exhausted.value.operation_id == "op_2"
    assert str(exhausted.value) == "operation op_2: submit retry budget exhausted"
