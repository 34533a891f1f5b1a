"""Kill tests for sink/runtime/poll_classification.py (mutation gate, tools/mutation): the stable
reason identifiers, and that only the receiver's own "partial" word sets receiver_reported_partial."""

from __future__ import annotations

import pytest
from rt_support import ASYNC_PROFILE, CONTRACT, profile, reached_peer, response, tuple_named

from sink.contracts.transport import TransportOutcome
from sink.runtime.poll_classification import PollContext, PollReason, classify_poll

PROFILE = profile(ASYNC_PROFILE)

# Stable identifiers, recorded with each observation: a rename breaks the stored evidence.
PINNED_REASONS = {
    "OBSERVED": "observed",
    "RECEIVER_REPORTED_PARTIAL": "receiver_reported_partial",
    "RECEIPT_EXPIRED": "receipt_expired",
    "UNRECOGNISED_ANSWER": "unrecognised_answer",
    "TRANSIENT_ERROR": "transient_error",
    "DEADLINE_PASSED": "deadline_passed",
    "OBSERVATION_BUDGET_EXHAUSTED": "observation_budget_exhausted",
    "ERROR_BUDGET_EXHAUSTED": "error_budget_exhausted",
}


def test_poll_reasons_are_pinned() -> None:
    assert {r.name: r.value for r in PollReason} == PINNED_REASONS


@pytest.mark.parametrize(("outcome", "context"), [
    (response(200, {"/phase": "running"}), PollContext(3, 0, False)),  # still running
    (reached_peer(), PollContext(3, 0, False)),  # a transient error
    (reached_peer(), PollContext(3, 4, False)),  # the error budget ends in EXPIRED
    (response(200, {"/phase": "running"}), PollContext(3, 0, True)),  # the deadline passed
], ids=["running", "transient", "error_budget", "deadline"])
def test_no_partial_claim_without_the_receivers_partial_word(outcome: TransportOutcome, context: PollContext) -> None:
    assert PROFILE.acknowledgement.poll is not None and PROFILE.poll_budget is not None
    decision = classify_poll(outcome, poll=PROFILE.acknowledgement.poll, budget=PROFILE.poll_budget,
                             current=tuple_named("waiting_ack_running"), context=context, contract=CONTRACT)
    assert decision.reason is not PollReason.RECEIVER_REPORTED_PARTIAL
    assert decision.receiver_reported_partial is False
