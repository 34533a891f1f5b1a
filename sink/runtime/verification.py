"""Derive the remote effect and the verification state from receiver evidence (seed: "Outcome
model", "Failure and partial-result policy", execution steps 12-13).

Evidence: the result counters of the terminal response (the profile's ``result_policy.counters``
``accepted_rows`` and ``rejected_rows``), an optional read-only summary of what the receiver now
holds in the scope (row count and content digest, e.g. the mock's ``GET .../summary``), the
receiver's own "partially done" word, and the submit classifier's proof that the receiver refused
the content before processing it. They are compared with the sealed payload (its row count, and
its content digest in the receiver's summary scheme when a summary is offered).

Effect and verification are derived independently, then the one contract transition whose
target has exactly those axes is chosen (``verified_*`` from a VERIFYING tuple with an
UNDETERMINED effect, the operator-only ``reconciled_*`` from a reconciliation tuple):

=====================  ===================  ============  =================================
outcome                effect               verification  when
=====================  ===================  ============  =================================
full                   FULLY_APPLIED        PASSED        counters say all accepted (summary,
                                                          if any, matches), or no counters
                                                          and the summary matches
partial                PARTIALLY_APPLIED    FAILED        counters say some accepted
partial_not_provable   PARTIALLY_APPLIED    NOT_PROVABLE  receiver says partial, counts unproven
no_effect              NONE_PROVEN          FAILED        counters say none accepted, or a
                                                          proven pre-processing rejection
contradictory          UNKNOWN              FAILED        evidence disagrees (counters with the
                                                          summary, a success acknowledgement
                                                          with the receiver's content)
not_provable           UNKNOWN              NOT_PROVABLE  counters missing, no evidence, or a
                                                          summary of other content without a
                                                          success acknowledgement
=====================  ===================  ============  =================================

A success acknowledgement never resolves to proven absence (it becomes contradictory), and a
full effect is always checkpoint ELIGIBLE whatever the acknowledgement. Missing counters block
even when a summary matches: a response that should carry them and does not is not trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.profile import ResultPolicy
from sink.contracts.state import (
    AcknowledgementState,
    CheckpointState,
    ExecutionState,
    RemoteEffect,
    StateTuple,
    VerificationState,
)
from sink.contracts.transport import ResponseEvidence
from sink.design.query import DesignContract
from sink.runtime import ContractMove, PolicyContractError, plan_move, scalar_of

ACCEPTED_COUNTER = "accepted_rows"
REJECTED_COUNTER = "rejected_rows"


class Outcome(StrEnum):
    FULL = "full"
    PARTIAL = "partial"
    PARTIAL_NOT_PROVABLE = "partial_not_provable"
    NO_EFFECT = "no_effect"
    CONTRADICTORY = "contradictory"
    NOT_PROVABLE = "not_provable"


_AXES: dict[Outcome, tuple[RemoteEffect, VerificationState]] = {
    Outcome.FULL: (RemoteEffect.FULLY_APPLIED, VerificationState.PASSED),
    Outcome.PARTIAL: (RemoteEffect.PARTIALLY_APPLIED, VerificationState.FAILED),
    Outcome.PARTIAL_NOT_PROVABLE: (RemoteEffect.PARTIALLY_APPLIED, VerificationState.NOT_PROVABLE),
    Outcome.NO_EFFECT: (RemoteEffect.NONE_PROVEN, VerificationState.FAILED),
    Outcome.CONTRADICTORY: (RemoteEffect.UNKNOWN, VerificationState.FAILED),
    Outcome.NOT_PROVABLE: (RemoteEffect.UNKNOWN, VerificationState.NOT_PROVABLE),
}
_CODES: dict[Outcome, ErrorCode | None] = {
    Outcome.FULL: None,
    Outcome.NO_EFFECT: None,
    Outcome.PARTIAL: ErrorCode.PARTIALLY_APPLIED,
    Outcome.PARTIAL_NOT_PROVABLE: ErrorCode.PARTIALLY_APPLIED,
    Outcome.CONTRADICTORY: ErrorCode.COUNT_MISMATCH,
    Outcome.NOT_PROVABLE: ErrorCode.REMOTE_EFFECT_UNKNOWN,
}


_UNKNOWN_OUTCOMES = frozenset({Outcome.CONTRADICTORY, Outcome.NOT_PROVABLE})


class _Counted(StrEnum):
    ALL = "all"
    NONE = "none"
    SOME = "some"
    MISSING = "missing"
    CONTRADICTORY = "contradictory"


@dataclass(frozen=True, slots=True)
class ExpectedDelivery:
    """What the sealed payload holds: its rows, and its content digest in the receiver's summary
    scheme when the receiver offers a summary (None otherwise: a summary cannot then prove it)."""

    rows: int
    content_digest: str | None = None


@dataclass(frozen=True, slots=True)
class Counters:
    accepted: int | None
    rejected: int | None


@dataclass(frozen=True, slots=True)
class ReceiverSummary:
    row_count: int
    content_digest: str


@dataclass(frozen=True, slots=True)
class VerificationEvidence:
    expected: ExpectedDelivery
    counters: Counters | None = None
    """None: no response that carries counters exists (e.g. a duplicate answer with the receipt)."""
    summary: ReceiverSummary | None = None
    receiver_reported_partial: bool = False
    rejection_proven: bool = False
    all_rows_accounted: bool = True
    """The profile's ``result_policy.all_rows_accounted``: accepted + rejected must equal the rows."""


@dataclass(frozen=True, slots=True)
class VerificationDecision:
    outcome: Outcome
    move: ContractMove

    @property
    def remote_effect(self) -> RemoteEffect:
        return self.move.target.remote_effect

    @property
    def verification_state(self) -> VerificationState:
        return self.move.target.verification_state

    @property
    def checkpoint_state(self) -> CheckpointState:
        return self.move.target.checkpoint_state


def extract_counters(response: ResponseEvidence, policy: ResultPolicy) -> Counters | None:
    """The accepted/rejected counters the profile declares (None when it declares neither); a value
    that is absent or not an integer is missing."""
    if ACCEPTED_COUNTER not in policy.counters and REJECTED_COUNTER not in policy.counters:
        return None

    def read(name: str) -> int | None:
        extractor = policy.counters.get(name)
        value = None if extractor is None else scalar_of(response, extractor)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return Counters(read(ACCEPTED_COUNTER), read(REJECTED_COUNTER))


def _count(counters: Counters, expected_rows: int, all_rows_accounted: bool) -> _Counted:
    accepted, rejected = counters.accepted, counters.rejected
    if accepted is None or rejected is None:
        return _Counted.MISSING
    if accepted < 0 or rejected < 0 or accepted + rejected > expected_rows:
        return _Counted.CONTRADICTORY
    if all_rows_accounted and accepted + rejected != expected_rows:
        return _Counted.CONTRADICTORY
    if accepted == expected_rows and rejected == 0:
        return _Counted.ALL
    if accepted > 0:
        return _Counted.SOME
    # Nothing accepted: proof of no effect only when every row is accounted as rejected.
    return _Counted.NONE if accepted + rejected == expected_rows else _Counted.MISSING


def judge(evidence: VerificationEvidence, acknowledgement: AcknowledgementState) -> Outcome:
    """The outcome the evidence supports (pure; see the module table)."""
    succeeded = acknowledgement is AcknowledgementState.SUCCEEDED
    outcome = _judge(evidence, succeeded=succeeded)
    if outcome is Outcome.NO_EFFECT and succeeded:
        return Outcome.CONTRADICTORY  # a success receipt never resolves to proven absence
    return outcome


def _judge(evidence: VerificationEvidence, *, succeeded: bool) -> Outcome:
    expected, summary = evidence.expected, evidence.summary
    matches: bool | None = None
    if summary is not None and expected.content_digest is not None:
        matches = summary.row_count == expected.rows and summary.content_digest == expected.content_digest
    partial = evidence.receiver_reported_partial
    if evidence.counters is None:
        if matches is True:
            return Outcome.CONTRADICTORY if partial or evidence.rejection_proven else Outcome.FULL
        if partial:
            return Outcome.PARTIAL_NOT_PROVABLE
        if evidence.rejection_proven:
            return Outcome.NO_EFFECT
        # A receiver holding other content contradicts only a success acknowledgement; without one
        # it proves nothing either way (an older generation is there, or part of this one).
        return Outcome.CONTRADICTORY if matches is False and succeeded else Outcome.NOT_PROVABLE
    counted = _count(evidence.counters, expected.rows, evidence.all_rows_accounted)
    if counted is _Counted.MISSING:
        return Outcome.PARTIAL_NOT_PROVABLE if partial else Outcome.NOT_PROVABLE
    if counted is _Counted.CONTRADICTORY:
        return Outcome.CONTRADICTORY
    if counted is _Counted.ALL:
        if partial or evidence.rejection_proven or matches is False:
            return Outcome.CONTRADICTORY
        return Outcome.FULL
    if matches is True or (evidence.rejection_proven and counted is _Counted.SOME):
        return Outcome.CONTRADICTORY  # the receiver holds all of it, or refused what it counts as accepted
    if counted is _Counted.SOME:
        return Outcome.PARTIAL
    return Outcome.CONTRADICTORY if partial else Outcome.NO_EFFECT


def verify(
    evidence: VerificationEvidence, *, current: StateTuple, contract: DesignContract
) -> VerificationDecision:
    """The contract transition that records the outcome from a VERIFYING tuple."""
    if current.execution_state is not ExecutionState.VERIFYING:
        raise PolicyContractError(f"verification runs only in VERIFYING, not {current.execution_state}")
    outcome = judge(evidence, current.acknowledgement_state)
    prefix = "verified_" if current.remote_effect is RemoteEffect.UNDETERMINED else "reconciled_"
    exit_class = ExitClass.TERMINAL_RECEIVER_FAILURE if outcome is Outcome.NO_EFFECT else None
    code = _CODES[outcome]
    if current.acknowledgement_state is AcknowledgementState.EXPIRED and outcome in _UNKNOWN_OUTCOMES:
        code = ErrorCode.RECEIPT_EXPIRED  # the effect is unknown because the receipt expired
    move = plan_move(contract, current, prefix + outcome.value, error_code=code, exit_class=exit_class)
    effect, verification = _AXES[outcome]
    if (move.target.remote_effect, move.target.verification_state) != (effect, verification):
        raise PolicyContractError(f"transition {move.transition_id} does not record {effect}/{verification}")
    return VerificationDecision(outcome=outcome, move=move)
