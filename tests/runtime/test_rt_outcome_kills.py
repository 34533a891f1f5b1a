"""What a stored child means to the caller (outcome.py), rule by rule: the result is a function of
the journal row (axes, what its last move decided) and the live facts the journal holds about it.

Each rule is checked over the whole product of the five axes, not only the contract's legal tuples:
the contract's invariants are a second line of defence, and each rule must hold on its own (a false
"completed" is a false success; a "resume" offered on an effect not proven absent is an unproved
resend; contention reported as an unknown effect sends an operator after nothing)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.results import ChildStatus, DeliveryBlocked, DeliveryCompleted, DeliveryPending, OperatorAction
from sink.contracts.state import (
    AcknowledgementState,
    CheckpointState,
    ExecutionState,
    RemoteEffect,
    StateTuple,
    VerificationState,
)
from sink.journal.records import (
    ChildDescriptor,
    Decision,
    GenerationKey,
    MutationKind,
    OperationRow,
    ParentRecord,
    ScopeRange,
)
from sink.runtime.outcome import LiveFacts, child_result, parent_result

E, R, V, C = ExecutionState, RemoteEffect, VerificationState, CheckpointState
A = OperatorAction
DIGEST = "sha256:" + "ab" * 32
ROW = OperationRow(
    operation_id="op_1", parent_id="op_par", operation_namespace="ns:t:dev:1",
    descriptor=ChildDescriptor(
        ordinal=3, scope=ScopeRange("2026-09-01T00:00:00Z", "2026-09-08T00:00:00Z"), delivery_key="key-1",
        mutation_intent_digest=DIGEST, payload_ref="payload-1", payload_digest=DIGEST,
        generation=GenerationKey("2026-09-08T00:00:00Z", 0), frontier_order=3, coverage_proof_digest=DIGEST,
        effect_conflict_domain="domain-a", mutation_kind=MutationKind.PARTITION_REPLACE),
    axes=StateTuple(E.PLANNED, R.NONE_PROVEN, AcknowledgementState.NOT_ACCEPTED, V.NOT_RUN, C.BLOCKED),
    revision=4, attempt_count=1, observation_count=0,
)
PARENT = ParentRecord("op_par", "ns:t:dev:1", "parent-key", DIGEST, "plan-ref", DIGEST, 2, None, None)
UNRESOLVED = (R.UNKNOWN, R.PARTIALLY_APPLIED)
WHEN = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def _every_tuple() -> Iterator[StateTuple]:
    for e, r, a, v, c in itertools.product(E, R, AcknowledgementState, V, C):
        yield StateTuple(e, r, a, v, c)


def _row(axes: StateTuple, **changes: object) -> OperationRow:
    return replace(ROW, axes=axes, **changes)  # type: ignore[arg-type]


def _tuple(e: ExecutionState, r: RemoteEffect, v: VerificationState = V.NOT_RUN, c: CheckpointState = C.BLOCKED,
           a: AcknowledgementState = AcknowledgementState.SUCCEEDED) -> StateTuple:
    return StateTuple(e, r, a, v, c)


def _verified(axes: StateTuple) -> bool:
    return (axes.execution_state is E.FINALIZED and axes.remote_effect is R.FULLY_APPLIED
            and axes.verification_state is V.PASSED and axes.checkpoint_state in (C.ELIGIBLE, C.PROMOTED))


def test_completed_only_for_a_finalized_full_verified_effect_with_an_open_checkpoint() -> None:
    for axes in _every_tuple():
        result = child_result(_row(axes))
        assert (result.status is ChildStatus.COMPLETED) is _verified(axes), axes
        if _verified(axes):
            assert (result.error_code, result.exit_class, result.reason) == (None, ExitClass.OK, None)
            # Even a stale decision or another worker's lease cannot un-complete a verified child.
            noisy = child_result(_row(axes, decision=Decision(ErrorCode.REMOTE_EFFECT_UNKNOWN, 4, "x")),
                                 LiveFacts(lease_holder="worker-2"))
            assert noisy.status is ChildStatus.COMPLETED


def test_another_live_worker_is_contention_never_an_unknown_effect() -> None:
    for axes in _every_tuple():
        if _verified(axes) or axes.execution_state is E.FINALIZED:
            continue
        result = child_result(_row(axes), LiveFacts(lease_holder="worker-2"))
        assert (result.status, result.exit_class, result.reason, result.held_by) == (
            ChildStatus.PENDING, ExitClass.UNAVAILABLE, "held_by_other_worker", "worker-2"), axes
        assert result.error_code is None
    finalized = child_result(_row(_tuple(E.FINALIZED, R.UNKNOWN)), LiveFacts(lease_holder="worker-2"))
    assert finalized.exit_class is ExitClass.EFFECT_UNKNOWN_OR_MANUAL  # a finalized child's lease is not work


@pytest.mark.parametrize("state", [E.ACCEPTED, E.WAITING])
def test_an_accepted_or_waiting_child_is_pending_with_its_next_check(state: ExecutionState) -> None:
    for effect in R:
        result = child_result(_row(_tuple(state, effect), next_check_at=WHEN))
        assert (result.status, result.error_code, result.exit_class) == (ChildStatus.PENDING, None, ExitClass.OK)
        assert result.next_check_after == WHEN and A.RESUME in result.allowed_operator_actions
    paused = child_result(_row(_tuple(state, R.UNDETERMINED), decision=Decision(None, 3, "receiver_unavailable")))
    assert (paused.status, paused.exit_class, paused.reason) == (
        ChildStatus.PENDING, ExitClass.UNAVAILABLE, "receiver_unavailable")


@pytest.mark.parametrize(("effect", "code"), [(R.UNKNOWN, ErrorCode.REMOTE_EFFECT_UNKNOWN),
                                              (R.PARTIALLY_APPLIED, ErrorCode.PARTIALLY_APPLIED)])
@pytest.mark.parametrize("state", [E.VERIFYING, E.FINALIZED])
def test_an_unresolved_effect_blocks_with_exit_4_and_offers_reconciliation(
        state: ExecutionState, effect: RemoteEffect, code: ErrorCode) -> None:
    result = child_result(_row(_tuple(state, effect)))
    assert (result.status, result.error_code, result.exit_class) == (
        ChildStatus.BLOCKED, code, ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    assert A.RECONCILE in result.allowed_operator_actions and A.RESUME not in result.allowed_operator_actions
    # The code the last move decided wins over the derived one (journal, not memory).
    given = child_result(_row(_tuple(state, effect), decision=Decision(ErrorCode.RECEIPT_EXPIRED, None, None)))
    assert (given.status, given.error_code, given.exit_class) == (
        ChildStatus.BLOCKED, ErrorCode.RECEIPT_EXPIRED, ExitClass.EFFECT_UNKNOWN_OR_MANUAL)


@pytest.mark.parametrize("effect", [R.NONE_PROVEN, R.UNDETERMINED, R.FULLY_APPLIED])
def test_verifying_with_a_resolved_or_open_effect_is_pending_verification(effect: RemoteEffect) -> None:
    result = child_result(_row(_tuple(E.VERIFYING, effect)))
    assert (result.status, result.error_code, result.exit_class, result.reason) == (
        ChildStatus.PENDING, None, ExitClass.OK, "verification_due")


def test_a_submitting_child_without_a_live_worker_is_due_for_takeover() -> None:
    result = child_result(_row(_tuple(E.SUBMITTING, R.UNDETERMINED)))
    assert (result.status, result.exit_class, result.reason) == (ChildStatus.PENDING, ExitClass.UNAVAILABLE,
                                                                 "takeover_due")
    assert A.RESUME in result.allowed_operator_actions


def test_a_child_not_sent_yet_is_not_reached_or_blocked_by_what_stopped_it() -> None:
    sealed = _tuple(E.SEALED, R.NONE_PROVEN, a=AcknowledgementState.NOT_ACCEPTED)
    assert (child_result(_row(sealed)).status, child_result(_row(sealed)).exit_class) == (
        ChildStatus.NOT_REACHED, ExitClass.OK)
    full = child_result(_row(sealed), LiveFacts(capacity_holders=("op_other",)))
    assert (full.status, full.exit_class, full.reason, full.capacity_held_by) == (
        ChildStatus.BLOCKED, ExitClass.UNAVAILABLE, "capacity_held", ("op_other",))
    overlap = child_result(_row(sealed, decision=Decision(ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT, None, "overlap")))
    assert (overlap.status, overlap.error_code, overlap.exit_class) == (
        ChildStatus.BLOCKED, ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT, ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    waiting = _tuple(E.RETRY_WAIT, R.NONE_PROVEN, a=AcknowledgementState.NOT_ACCEPTED)
    plain = child_result(_row(waiting, next_check_at=WHEN))
    assert (plain.status, plain.exit_class, plain.reason, plain.next_check_after) == (
        ChildStatus.BLOCKED, ExitClass.UNAVAILABLE, "request_not_started", WHEN)
    assert plain.allowed_operator_actions == (A.INSPECT, A.RESUME, A.ABANDON)
    refused = child_result(_row(waiting, decision=Decision(None, 2, "authority_refused")))
    assert (refused.exit_class, refused.reason) == (ExitClass.INVALID_INPUT, "authority_refused")
    planned = child_result(_row(_tuple(E.PLANNED, R.NONE_PROVEN)), LiveFacts(capacity_holders=("op_other",)))
    assert (planned.status, planned.exit_class, planned.capacity_held_by) == (ChildStatus.NOT_REACHED, ExitClass.OK,
                                                                             ())


def test_a_finalized_child_reports_what_its_last_move_decided() -> None:
    absent = child_result(_row(_tuple(E.FINALIZED, R.NONE_PROVEN, V.FAILED)))
    assert (absent.status, absent.error_code, absent.exit_class) == (
        ChildStatus.BLOCKED, None, ExitClass.TERMINAL_RECEIVER_FAILURE)
    stale = child_result(_row(_tuple(E.FINALIZED, R.NONE_PROVEN), decision=Decision(ErrorCode.STALE_GENERATION, None,
                                                                                      "stale_generation")))
    assert (stale.error_code, stale.exit_class) == (ErrorCode.STALE_GENERATION, ExitClass.INVALID_INPUT)
    decided = child_result(_row(_tuple(E.FINALIZED, R.NONE_PROVEN), decision=Decision(None, 3, "request_not_started")))
    assert decided.exit_class is ExitClass.UNAVAILABLE
    unverified = child_result(_row(_tuple(E.FINALIZED, R.FULLY_APPLIED, V.FAILED, C.BLOCKED)))
    assert (unverified.status, unverified.exit_class) == (ChildStatus.BLOCKED, ExitClass.TERMINAL_RECEIVER_FAILURE)
    lost = _row(_tuple(E.FINALIZED, R.UNKNOWN, a=AcknowledgementState.NOT_ACCEPTED))
    assert A.TRANSFER_CAPACITY not in child_result(lost).allowed_operator_actions
    holding = child_result(lost, LiveFacts(holds_capacity=True))
    assert holding.allowed_operator_actions == (A.INSPECT, A.RECONCILE, A.TRANSFER_CAPACITY, A.ABANDON,
                                                A.CREATE_GOVERNED_GENERATION)
    assert A.RECONCILE not in absent.allowed_operator_actions


def test_an_abandoned_child_is_terminal_and_offers_a_new_generation() -> None:
    for axes in _every_tuple():
        if _verified(axes):
            continue
        result = child_result(_row(axes, abandoned=True), LiveFacts(lease_holder="worker-2"))
        assert (result.status, result.exit_class, result.reason, result.abandoned) == (
            ChildStatus.BLOCKED, ExitClass.TERMINAL_RECEIVER_FAILURE, "abandoned", True), axes
        assert result.allowed_operator_actions == (A.INSPECT, A.CREATE_GOVERNED_GENERATION)


def _child(exit_class: ExitClass, status: ChildStatus, ordinal: int, **extra: object) -> object:
    axes = _tuple(E.FINALIZED, R.FULLY_APPLIED, V.PASSED, C.ELIGIBLE) if status is ChildStatus.COMPLETED else (
        _tuple(E.WAITING, R.UNDETERMINED, a=AcknowledgementState.RUNNING) if status is ChildStatus.PENDING else
        _tuple(E.FINALIZED, R.UNKNOWN, a=AcknowledgementState.NOT_ACCEPTED) if exit_class is
        ExitClass.EFFECT_UNKNOWN_OR_MANUAL else _tuple(E.SEALED, R.NONE_PROVEN, a=AcknowledgementState.NOT_ACCEPTED))
    row = _row(axes, descriptor=replace(ROW.descriptor, ordinal=ordinal), operation_id=f"op_{ordinal}", **extra)
    return child_result(row)


def test_the_most_serious_child_decides_the_parent() -> None:
    completed = _child(ExitClass.OK, ChildStatus.COMPLETED, 0)
    pending = _child(ExitClass.OK, ChildStatus.PENDING, 1, next_check_at=WHEN)
    unknown = _child(ExitClass.EFFECT_UNKNOWN_OR_MANUAL, ChildStatus.BLOCKED, 2)
    retry = child_result(_row(_tuple(E.RETRY_WAIT, R.NONE_PROVEN, a=AcknowledgementState.NOT_ACCEPTED),
                              descriptor=replace(ROW.descriptor, ordinal=3), operation_id="op_3"))
    done = parent_result(PARENT, [completed])  # type: ignore[list-item]
    assert isinstance(done, DeliveryCompleted) and done.exit_class is ExitClass.OK
    waiting = parent_result(PARENT, [pending, completed])  # type: ignore[list-item]
    assert isinstance(waiting, DeliveryPending)
    assert (waiting.operation_id, waiting.continuation_kind, waiting.next_check_after) == ("op_1", "poll_receipt", WHEN)
    assert [c.ordinal for c in waiting.children] == [0, 1]
    blocked = parent_result(PARENT, [retry, completed, unknown, pending])  # type: ignore[list-item]
    assert isinstance(blocked, DeliveryBlocked)
    assert (blocked.operation_id, blocked.exit_class, blocked.error_code) == (
        "op_2", ExitClass.EFFECT_UNKNOWN_OR_MANUAL, ErrorCode.REMOTE_EFFECT_UNKNOWN)
    unavailable = parent_result(PARENT, [completed, retry])  # type: ignore[list-item]
    assert isinstance(unavailable, DeliveryBlocked) and unavailable.exit_class is ExitClass.UNAVAILABLE
    assert unavailable.reason == "request_not_started"
    not_sent = _child(ExitClass.OK, ChildStatus.NOT_REACHED, 4)
    fresh = parent_result(PARENT, [not_sent])  # type: ignore[list-item]
    assert isinstance(fresh, DeliveryPending) and fresh.continuation_kind == "submit"


@pytest.mark.parametrize(("classes", "expected"), [
    ([ExitClass.INVALID_INPUT, ExitClass.TERMINAL_RECEIVER_FAILURE], ExitClass.TERMINAL_RECEIVER_FAILURE),
    ([ExitClass.TERMINAL_RECEIVER_FAILURE, ExitClass.UNAVAILABLE], ExitClass.UNAVAILABLE),
    ([ExitClass.UNAVAILABLE, ExitClass.EFFECT_UNKNOWN_OR_MANUAL], ExitClass.EFFECT_UNKNOWN_OR_MANUAL),
    ([ExitClass.OK, ExitClass.INVALID_INPUT], ExitClass.INVALID_INPUT),
])
def test_exit_severity_order(classes: list[ExitClass], expected: ExitClass) -> None:
    reasons = {ExitClass.INVALID_INPUT: 2, ExitClass.UNAVAILABLE: 3, ExitClass.TERMINAL_RECEIVER_FAILURE: 5,
               ExitClass.EFFECT_UNKNOWN_OR_MANUAL: 4}
    sealed = _tuple(E.RETRY_WAIT, R.NONE_PROVEN, a=AcknowledgementState.NOT_ACCEPTED)
    children = []
    for ordinal, exit_class in enumerate(classes):
        if exit_class is ExitClass.OK:
            children.append(_child(ExitClass.OK, ChildStatus.COMPLETED, ordinal))
            continue
        children.append(child_result(_row(sealed, decision=Decision(None, reasons[exit_class], "why"),
                                          descriptor=replace(ROW.descriptor, ordinal=ordinal),
                                          operation_id=f"op_{ordinal}")))
    for ordered in (children, list(reversed(children))):
        assert parent_result(PARENT, ordered).exit_class is expected  # type: ignore[arg-type]
