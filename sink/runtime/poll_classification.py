"""Classify one read-only receipt poll (seed: "Durable continuation contract", execution step 11,
"Edge cases": receipt expiry, cancellation).

The operation is WAITING (``waiting_ack_accepted`` or ``waiting_ack_running``) under the
observation lease. One poll answer becomes, in order:

* a terminal observation (SUCCEEDED, FAILED, CANCELLED, EXPIRED, PROTOCOL_UNKNOWN) and its
  ``poll_observed_*`` transition to VERIFYING. The effect stays UNDETERMINED: only the verifier
  derives it, so a receipt that expired (the profile's ``expired_statuses``, e.g. 404/410) or a
  job cancelled by someone else never reads as "nothing happened". A cancelled job is observed,
  never acted on: no decision of this module sends anything to the receiver.
* RUNNING: ``poll_observed_running`` from ACCEPTED, no transition from RUNNING (the observation
  is still recorded);
* a transient error (no response, 401/403/408/429/5xx): nothing observed.

A non-terminal answer then meets the budget: the certified deadline
(``observation_deadline_exceeded`` from ACCEPTED; from RUNNING, which never finalizes directly,
``poll_observed_expired``) or the observation budget (``poll_budget.max_observations`` polls),
``poll_observed_expired``. The error budget (``max_consecutive_errors`` transient errors in a row)
is not the receiver saying the receipt expired: it pauses observation (no transition; the child
stays WAITING and the next run or resume polls again), ``reason`` ERROR_BUDGET_EXHAUSTED.
A terminal answer is always taken, even on the last poll allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sink.contracts.errors import ErrorCode
from sink.contracts.profile_ack import PollSpec
from sink.contracts.profile_policy import PollBudget
from sink.contracts.state import AcknowledgementState, ExecutionState, StateTuple
from sink.contracts.transport import ResponseEvidence, TransportOutcome
from sink.design.query import DesignContract
from sink.runtime import ContractMove, PolicyContractError, plan_move, scalar_of

_ACK = AcknowledgementState
TRANSIENT_POLL_STATUSES = frozenset({401, 403, 408, 429})
_TERMINAL_CODES = {_ACK.EXPIRED: ErrorCode.RECEIPT_EXPIRED, _ACK.PROTOCOL_UNKNOWN: ErrorCode.PROTOCOL_UNKNOWN}


class PollReason(StrEnum):
    OBSERVED = "observed"
    RECEIVER_REPORTED_PARTIAL = "receiver_reported_partial"
    RECEIPT_EXPIRED = "receipt_expired"
    UNRECOGNISED_ANSWER = "unrecognised_answer"
    TRANSIENT_ERROR = "transient_error"
    DEADLINE_PASSED = "deadline_passed"
    OBSERVATION_BUDGET_EXHAUSTED = "observation_budget_exhausted"
    ERROR_BUDGET_EXHAUSTED = "error_budget_exhausted"


@dataclass(frozen=True, slots=True)
class PollContext:
    polls_made: int
    """Poll requests made for this receipt before this one, whatever their outcome."""
    consecutive_errors: int
    """Transient errors in a row immediately before this poll."""
    deadline_passed: bool
    """The certified receipt TTL or the operation deadline has passed (database clock)."""


@dataclass(frozen=True, slots=True)
class PollDecision:
    observation: AcknowledgementState | None
    """The acknowledgement to record with ``record_observation``; None: nothing was observed."""
    move: ContractMove | None
    """The transition to apply; None when the tuple stays as it is."""
    reason: PollReason
    consecutive_errors: int
    """The error streak after this poll (reset by any answer that is not a transient error)."""
    receiver_reported_partial: bool = False
    """The receiver's own state word said "partially done" (for the verifier)."""


def classify_poll(
    outcome: TransportOutcome,
    *,
    poll: PollSpec,
    budget: PollBudget,
    current: StateTuple,
    context: PollContext,
    contract: DesignContract,
) -> PollDecision:
    if current.execution_state is not ExecutionState.WAITING:
        raise PolicyContractError(f"receipt polls are classified only while WAITING, not {current.execution_state}")
    observed, reason = _observe(outcome.response, poll)
    partial = reason is PollReason.RECEIVER_REPORTED_PARTIAL
    if observed is not None and observed is not _ACK.RUNNING:
        code = _TERMINAL_CODES.get(observed)
        move = plan_move(contract, current, f"poll_observed_{observed.value.lower()}", error_code=code)
        return PollDecision(observed, move, reason, 0, receiver_reported_partial=partial)
    errors = context.consecutive_errors + 1 if observed is None else 0
    if context.deadline_passed:
        if current.acknowledgement_state is _ACK.ACCEPTED:
            move = plan_move(contract, current, "observation_deadline_exceeded",
                             error_code=ErrorCode.REMOTE_EFFECT_UNKNOWN)
            return PollDecision(None, move, PollReason.DEADLINE_PASSED, errors)
        return _expired(contract, current, PollReason.DEADLINE_PASSED, errors)
    if context.polls_made + 1 >= budget.max_observations:
        return _expired(contract, current, PollReason.OBSERVATION_BUDGET_EXHAUSTED, errors)
    if errors >= budget.max_consecutive_errors:
        # Five 500s in a row say the receiver is failing now, not that the receipt is gone.
        return PollDecision(None, None, PollReason.ERROR_BUDGET_EXHAUSTED, errors)
    if observed is None:
        return PollDecision(None, None, PollReason.TRANSIENT_ERROR, errors)
    running = (plan_move(contract, current, "poll_observed_running")
               if current.acknowledgement_state is _ACK.ACCEPTED else None)
    return PollDecision(_ACK.RUNNING, running, PollReason.OBSERVED, 0)


def _expired(contract: DesignContract, current: StateTuple, reason: PollReason, errors: int) -> PollDecision:
    # The receipt can no longer be observed within its certified bounds: acknowledgement EXPIRED,
    # effect still UNDETERMINED until the verifier (never NONE_PROVEN from silence).
    move = plan_move(contract, current, "poll_observed_expired", error_code=ErrorCode.RECEIPT_EXPIRED)
    return PollDecision(_ACK.EXPIRED, move, reason, errors)


def _observe(response: ResponseEvidence | None, poll: PollSpec) -> tuple[AcknowledgementState | None, PollReason]:
    """What one answer says: an acknowledgement, or None for a transient error."""
    if response is None:
        return None, PollReason.TRANSIENT_ERROR
    status = response.status
    if status in poll.expired_statuses:
        return _ACK.EXPIRED, PollReason.RECEIPT_EXPIRED
    if status in TRANSIENT_POLL_STATUSES or 500 <= status <= 599:
        return None, PollReason.TRANSIENT_ERROR
    if not 200 <= status <= 299 or response.parse_problem is not None:
        return _ACK.PROTOCOL_UNKNOWN, PollReason.UNRECOGNISED_ANSWER
    word = scalar_of(response, poll.state)
    vocabularies = (
        (poll.running, _ACK.RUNNING, PollReason.OBSERVED),
        (poll.succeeded, _ACK.SUCCEEDED, PollReason.OBSERVED),
        (poll.partial, _ACK.SUCCEEDED, PollReason.RECEIVER_REPORTED_PARTIAL),
        (poll.failed, _ACK.FAILED, PollReason.OBSERVED),
        (poll.cancelled, _ACK.CANCELLED, PollReason.OBSERVED),
        (poll.expired, _ACK.EXPIRED, PollReason.RECEIPT_EXPIRED),
    )
    if isinstance(word, str):
        for words, acknowledgement, reason in vocabularies:
            if word in words:
                return acknowledgement, reason
    return _ACK.PROTOCOL_UNKNOWN, PollReason.UNRECOGNISED_ANSWER
