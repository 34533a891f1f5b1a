"""Kill tests for sink/runtime/retry_guard.py (mutation gate, tools/mutation): the stable reason
strings and the fence's own type as a separate condition of a certified replay."""

from __future__ import annotations

from sink.contracts.profile import MutationFence
from sink.runtime.retry_guard import GuardReason, ReplayDeferred, RetryBudgetExhausted, fence_permits_replay

# The reasons are stable identifiers: they are written into evidence and shown by
# `delivery inspect`, so renaming one breaks every stored record that names it.
PINNED_REASONS = {
    "FIRST_SUBMIT": "first_submit",
    "REQUEST_NOT_STARTED_PROVEN": "request_not_started_proven",
    "CERTIFIED_FENCE_REPLAY": "certified_fence_replay",
    "BUDGET_EXHAUSTED": "budget_exhausted",
    "EFFECT_NOT_PROVEN_ABSENT": "effect_not_proven_absent",
    "NOT_A_SUBMIT_STATE": "not_a_submit_state",
    "LEASE_EXPIRED_AFTER_SUBMITTING": "lease_expired_after_submitting",
    "FENCE_NOT_CERTIFIED": "fence_not_certified",
    "FENCE_RETENTION_EXCEEDED": "fence_retention_exceeded",
    "TAKEOVER_FENCED_REPLAY": "takeover_fenced_replay",
    "REPLAY_DEFERRED": "fenced_replay_deferred",
}


def test_guard_reasons_are_pinned() -> None:
    assert {reason.name: reason.value for reason in GuardReason} == PINNED_REASONS


def test_a_none_fence_never_permits_replay_whatever_else_it_carries() -> None:
    # The model validator refuses a 'none' fence with details; the guard must not rely on that
    # (an object built with model_copy skips validation): type 'none' alone refuses the replay.
    certified = MutationFence.model_validate({
        "type": "receiver_duplicate_key", "location": "payload_filename", "value_from": "receiver_mutation_key",
        "key_payload_binding": "required", "certification_ref": "cert-1"})
    assert fence_permits_replay(certified) is True
    assert fence_permits_replay(certified.model_copy(update={"type": "none"})) is False


def test_a_deferred_replay_says_what_happened_and_is_a_spent_budget() -> None:
    deferred = ReplayDeferred("op-1")
    assert isinstance(deferred, RetryBudgetExhausted) and deferred.operation_id == "op-1"
    assert str(deferred) == "operation op-1: same-key replay deferred to the next run or resume (budget spent)"
    assert str(RetryBudgetExhausted("op-2")) == "operation op-2: submit retry budget exhausted"
