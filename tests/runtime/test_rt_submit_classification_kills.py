"""Kill tests for sink/runtime/submit_classification.py (mutation gate, tools/mutation): the
stable action/reason identifiers, and the defaults a caller relies on when it omits a field."""

from __future__ import annotations

from datetime import UTC, datetime

from rt_support import CONTRACT, SYNC_PROFILE, profile, reached_peer, tuple_named

from sink.runtime.submit_classification import SubmitAction, SubmitContext, SubmitReason, classify_submit

# Stable identifiers: they are recorded with the attempt's evidence, so a rename breaks every
# stored record that names one.
PINNED_ACTIONS = {"APPLY_TRANSITION": "apply_transition", "REPLAY_SAME_KEY": "replay_same_key",
                  "DEFER_REPLAY": "defer_replay"}
PINNED_REASONS = {
    "NOT_STARTED_RETRY": "request_not_started",
    "NOT_STARTED_BUDGET_EXHAUSTED": "request_not_started_budget_spent",
    "NOT_STARTED_LOCAL": "request_not_started_local",
    "RETRY_AFTER_EXCEEDS_BUDGET": "retry_after_exceeds_budget",
    "ACCEPTED": "accepted",
    "ACCEPTED_WITHOUT_RECEIPT": "accepted_without_receipt",
    "DUPLICATE_PROVEN": "duplicate_proven",
    "DUPLICATE_UNPROVEN": "duplicate_unproven",
    "BARE_CONFLICT": "bare_conflict",
    "PROVEN_REJECTION": "proven_rejection",
    "RECEIVER_REJECTED": "receiver_rejected",
    "MAY_HAVE_REACHED_PEER": "may_have_reached_peer",
    "FENCED_REPLAY": "fenced_replay",
    "FENCED_REPLAY_DEFERRED": "fenced_replay_deferred",
    "UNCLASSIFIED_STATUS": "unclassified_status",
}


class _TopJitter:
    def draw(self, upper_inclusive: int) -> int:
        return upper_inclusive


def test_actions_and_reasons_are_pinned() -> None:
    assert {a.name: a.value for a in SubmitAction} == PINNED_ACTIONS
    assert {r.name: r.value for r in SubmitReason} == PINNED_REASONS


def test_context_defaults_to_the_live_attempt_and_a_replay_proves_no_rejection() -> None:
    # The worker classifying its own request is the live attempt unless it says otherwise: the
    # default context must permit the certified replay, and that replay claims no proven rejection.
    context = SubmitContext(attempts_used=1, sends_used=1, remaining_budget_ms=600_000,
                            elapsed_since_first_send_ms=0, now=datetime(2026, 12, 1, tzinfo=UTC))
    decision = classify_submit(reached_peer(), profile=profile(SYNC_PROFILE), current=tuple_named("submitting"),
                               context=context, jitter=_TopJitter(), contract=CONTRACT)
    assert decision.action is SubmitAction.REPLAY_SAME_KEY
    assert decision.rejection_proven is False
    assert decision.replay_refused is None
