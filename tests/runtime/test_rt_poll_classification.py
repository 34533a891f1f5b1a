"""poll_classification: a read-only receipt poll becomes an observation and a listed transition;
expiry and cancellation never imply absence; both poll budgets end in the contract's outcome."""

from __future__ import annotations

from typing import Any

import pytest
from rt_support import ASYNC_PROFILE, CONTRACT, profile, reached_peer, response, tuple_named

from sink.contracts.errors import ErrorCode
from sink.contracts.state import AcknowledgementState, ExecutionState, RemoteEffect
from sink.contracts.transport import TransportOutcome
from sink.runtime import PolicyContractError
from sink.runtime.poll_classification import PollContext, PollDecision, PollReason, classify_poll

ACK = AcknowledgementState
PROFILE = profile(ASYNC_PROFILE)  # running [pending, running], succeeded [complete], partial [incomplete] ...
POLL = PROFILE.acknowledgement.poll
BUDGET = PROFILE.poll_budget  # max_observations 720, max_consecutive_errors 5
assert POLL is not None and BUDGET is not None


def _poll(outcome: TransportOutcome, current: str = "waiting_ack_running", *, polls: int = 3, errors: int = 0,
          deadline: bool = False, **budget: Any) -> PollDecision:
    assert POLL is not None and BUDGET is not None
    return classify_poll(outcome, poll=POLL, budget=BUDGET.model_copy(update=budget),
                         current=tuple_named(current), context=PollContext(polls, errors, deadline),
                         contract=CONTRACT)


def _phase(word: object, status: int = 200) -> TransportOutcome:
    return response(status, {"/phase": word})  # type: ignore[dict-item]


def _assert(decision: PollDecision, transition_id: str | None, target: str | None, observation: ACK | None,
            reason: PollReason, *, code: ErrorCode | None = None, errors: int = 0) -> None:
    assert decision.observation is observation
    assert decision.reason is reason
    assert decision.consecutive_errors == errors
    if transition_id is None:
        assert decision.move is None
        return
    assert decision.move is not None
    assert decision.move.transition_id == transition_id
    assert decision.move.target == tuple_named(target or "")
    assert decision.move.error_code is code
    assert CONTRACT.transition_by_id(transition_id, decision.move.source) == decision.move.transition


@pytest.mark.parametrize("current", ["waiting_ack_accepted", "waiting_ack_running"])
@pytest.mark.parametrize(("word", "ack", "target", "code"), [
    ("complete", ACK.SUCCEEDED, "verifying_succeeded", None),
    ("error", ACK.FAILED, "verifying_failed", None),
    ("cancelled", ACK.CANCELLED, "verifying_cancelled", None),
    ("expired", ACK.EXPIRED, "verifying_expired", ErrorCode.RECEIPT_EXPIRED),
])
def test_terminal_words(current: str, word: str, ack: ACK, target: str, code: ErrorCode | None) -> None:
    decision = _poll(_phase(word), current, errors=2)
    reason = PollReason.RECEIPT_EXPIRED if ack is ACK.EXPIRED else PollReason.OBSERVED
    _assert(decision, f"poll_observed_{ack.value.lower()}", target, ack, reason, code=code)
    assert decision.receiver_reported_partial is False
    # The effect stays UNDETERMINED: only the verifier derives it.
    assert decision.move is not None and decision.move.target.remote_effect is RemoteEffect.UNDETERMINED


def test_partial_word_is_success_reported_partial() -> None:
    decision = _poll(_phase("incomplete"))
    _assert(decision, "poll_observed_succeeded", "verifying_succeeded", ACK.SUCCEEDED,
            PollReason.RECEIVER_REPORTED_PARTIAL)
    assert decision.receiver_reported_partial is True


def test_external_cancel_is_only_observed() -> None:
    decision = _poll(_phase("cancelled"))
    assert decision.move is not None
    assert decision.move.target.execution_state is ExecutionState.VERIFYING
    assert decision.move.target.remote_effect is RemoteEffect.UNDETERMINED
    assert decision.move.transition.cas_preconditions.count("observation_lease_held") == 1


@pytest.mark.parametrize("word", ["pending", "running"])
def test_running_from_accepted_moves_to_running(word: str) -> None:
    _assert(_poll(_phase(word), "waiting_ack_accepted", errors=4), "poll_observed_running", "waiting_ack_running",
            ACK.RUNNING, PollReason.OBSERVED)


@pytest.mark.parametrize("status", [200, 202, 299])
def test_every_2xx_carries_a_state_word(status: int) -> None:
    _assert(_poll(_phase("complete", status=status)), "poll_observed_succeeded", "verifying_succeeded",
            ACK.SUCCEEDED, PollReason.OBSERVED)


def test_running_while_running_records_without_transition() -> None:
    _assert(_poll(_phase("running"), errors=4), None, None, ACK.RUNNING, PollReason.OBSERVED)


@pytest.mark.parametrize("status", [410])
def test_receipt_expiry_status_is_expired_never_absence(status: int) -> None:
    decision = _poll(response(status), "waiting_ack_accepted")
    _assert(decision, "poll_observed_expired", "verifying_expired", ACK.EXPIRED, PollReason.RECEIPT_EXPIRED,
            code=ErrorCode.RECEIPT_EXPIRED)
    assert decision.move is not None and decision.move.target.remote_effect is not RemoteEffect.NONE_PROVEN


def test_404_is_expiry_only_when_the_profile_lists_it() -> None:
    _assert(_poll(response(404)), "poll_observed_protocol_unknown", "verifying_protocol_unknown",
            ACK.PROTOCOL_UNKNOWN, PollReason.UNRECOGNISED_ANSWER, code=ErrorCode.PROTOCOL_UNKNOWN)
    listed = profile(ASYNC_PROFILE, acknowledgement={"poll": {"expired_statuses": [404, 410]}})
    poll = listed.acknowledgement.poll
    assert poll is not None and BUDGET is not None
    decision = classify_poll(response(404), poll=poll, budget=BUDGET, current=tuple_named("waiting_ack_running"),
                             context=PollContext(0, 0, False), contract=CONTRACT)
    assert decision.observation is ACK.EXPIRED


@pytest.mark.parametrize("outcome", [
    _phase("exploded"), _phase(None), _phase(7), _phase(True), response(200),
    response(200, {"/phase": "complete"}, parse_problem="too_deep"),
    _phase("complete", status=301), _phase("complete", status=400), _phase("complete", status=100),
    _phase("complete", status=422), _phase("complete", status=300), _phase("complete", status=600),
], ids=["unknown_word", "null", "int", "bool", "missing", "parse_problem", "3xx", "400", "1xx", "422", "300",
        "600"])
def test_unrecognised_answers_are_protocol_unknown(outcome: TransportOutcome) -> None:
    _assert(_poll(outcome), "poll_observed_protocol_unknown", "verifying_protocol_unknown", ACK.PROTOCOL_UNKNOWN,
            PollReason.UNRECOGNISED_ANSWER, code=ErrorCode.PROTOCOL_UNKNOWN)


@pytest.mark.parametrize("outcome", [reached_peer(), response(500), response(503), response(599), response(429),
                                     response(408), response(401), response(403)],
                         ids=["lost", "500", "503", "599", "429", "408", "401", "403"])
def test_transient_errors_observe_nothing_and_count(outcome: TransportOutcome) -> None:
    _assert(_poll(outcome, errors=1), None, None, None, PollReason.TRANSIENT_ERROR, errors=2)


def test_error_budget_exhaustion_pauses_and_never_expires_the_receipt() -> None:
    """Five 500s in a row say the receiver is failing, not that the receipt expired."""
    _assert(_poll(response(503), errors=3), None, None, None, PollReason.TRANSIENT_ERROR, errors=4)
    for state in ("waiting_ack_accepted", "waiting_ack_running"):
        decision = _poll(response(503), state, errors=4)
        _assert(decision, None, None, None, PollReason.ERROR_BUDGET_EXHAUSTED, errors=5)
    # A deadline that has passed meanwhile still decides the receipt (the budget is a pause only).
    _assert(_poll(response(500), "waiting_ack_running", errors=4, deadline=True), "poll_observed_expired",
            "verifying_expired", ACK.EXPIRED, PollReason.DEADLINE_PASSED, code=ErrorCode.RECEIPT_EXPIRED, errors=5)


def test_observation_budget_exhaustion_expires_the_receipt() -> None:
    _assert(_poll(_phase("running"), polls=718), None, None, ACK.RUNNING, PollReason.OBSERVED)
    _assert(_poll(_phase("running"), polls=719), "poll_observed_expired", "verifying_expired", ACK.EXPIRED,
            PollReason.OBSERVATION_BUDGET_EXHAUSTED, code=ErrorCode.RECEIPT_EXPIRED)
    _assert(_poll(response(503), polls=719, errors=1), "poll_observed_expired", "verifying_expired", ACK.EXPIRED,
            PollReason.OBSERVATION_BUDGET_EXHAUSTED, code=ErrorCode.RECEIPT_EXPIRED, errors=2)


def test_terminal_answer_is_taken_on_the_last_allowed_poll_and_after_the_deadline() -> None:
    _assert(_poll(_phase("complete"), polls=719, errors=4, deadline=True), "poll_observed_succeeded",
            "verifying_succeeded", ACK.SUCCEEDED, PollReason.OBSERVED)


def test_deadline_from_accepted_finalizes_unknown() -> None:
    decision = _poll(_phase("pending"), "waiting_ack_accepted", deadline=True)
    _assert(decision, "observation_deadline_exceeded", "finalized_accepted_unknown_not_provable", None,
            PollReason.DEADLINE_PASSED, code=ErrorCode.REMOTE_EFFECT_UNKNOWN)


def test_deadline_from_running_expires_because_running_never_finalizes() -> None:
    decision = _poll(reached_peer(), "waiting_ack_running", deadline=True, errors=1)
    _assert(decision, "poll_observed_expired", "verifying_expired", ACK.EXPIRED, PollReason.DEADLINE_PASSED,
            code=ErrorCode.RECEIPT_EXPIRED, errors=2)


def test_polls_only_while_waiting() -> None:
    for name in ("submitting", "accepted_ack_accepted", "verifying_succeeded"):
        with pytest.raises(PolicyContractError, match="WAITING"):
            _poll(_phase("running"), name)


def test_every_poll_decision_is_a_listed_transition() -> None:
    outcomes = [_phase(w) for w in ("pending", "running", "complete", "incomplete", "error", "cancelled", "expired",
                                    "weird")] + [response(s) for s in (200, 301, 404, 410, 429, 500)] + [reached_peer()]
    seen: set[str] = set()
    for current in ("waiting_ack_accepted", "waiting_ack_running"):
        for outcome in outcomes:
            for polls, errors, deadline in ((0, 0, False), (719, 0, False), (0, 4, False), (0, 0, True)):
                decision = _poll(outcome, current, polls=polls, errors=errors, deadline=deadline)
                if decision.move is not None:
                    assert CONTRACT.transition_by_id(decision.move.transition_id, tuple_named(current)) == \
                        decision.move.transition
                    seen.add(decision.move.transition_id)
    from_waiting = {t.id for name in ("waiting_ack_accepted", "waiting_ack_running")
                    for t in CONTRACT.transitions_from(tuple_named(name))}
    assert seen == from_waiting
