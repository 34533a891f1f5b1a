"""What a stored child tuple means to the caller (outcome.py) and which operator steps it offers
(next_actions.py), rule by rule (issue 14).

Both are pure functions of the stored row. Each rule is checked over the whole product of the
five axes, not only the contract's legal tuples: the contract's invariants are a second line of
defence, and each rule must hold on its own (a false "completed" is a false success; a "resume"
offered on an effect not proven absent is an unproved resend)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace

import pytest

from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.state import (
    AcknowledgementState,
    CheckpointState,
    ExecutionState,
    RemoteEffect,
    StateTuple,
    VerificationState,
)
from sink.journal.records import ChildDescriptor, GenerationKey, MutationKind, OperationRow, ScopeRange
from sink.runtime.next_actions import allowed_actions
from sink.runtime.outcome import ChildOutcome, ChildStatus, outcome_of, overall_exit

E, R, V, C = ExecutionState, RemoteEffect, VerificationState, CheckpointState
DIGEST = "sha256:" + "ab" * 32
ROW = OperationRow(
    operation_id="op_1", parent_id="par_1", operation_namespace="ns:t:dev:1",
    descriptor=ChildDescriptor(
        ordinal=3, scope=ScopeRange("2026-09-01T00:00:00Z", "2026-09-08T00:00:00Z"), delivery_key="key-1",
        mutation_intent_digest=DIGEST, payload_ref="payload-1", payload_digest=DIGEST,
        generation=GenerationKey("2026-09-08T00:00:00Z", 0), frontier_order=3, coverage_proof_digest=DIGEST,
        effect_conflict_domain="domain-a", mutation_kind=MutationKind.PARTITION_REPLACE),
    axes=StateTuple(E.PLANNED, R.NONE_PROVEN, AcknowledgementState.NOT_ACCEPTED, V.NOT_RUN, C.BLOCKED),
    revision=4, attempt_count=1, observation_count=0,
)
UNRESOLVED = (R.UNKNOWN, R.PARTIALLY_APPLIED)


def _every_tuple() -> Iterator[StateTuple]:
    for e, r, a, v, c in itertools.product(E, R, AcknowledgementState, V, C):
        yield StateTuple(e, r, a, v, c)


def _row(axes: StateTuple) -> OperationRow:
    return replace(ROW, axes=axes)


def _tuple(e: ExecutionState, r: RemoteEffect, v: VerificationState = V.NOT_RUN, c: CheckpointState = C.BLOCKED,
           a: AcknowledgementState = AcknowledgementState.SUCCEEDED) -> StateTuple:
    return StateTuple(e, r, a, v, c)


# --- outcome_of ------------------------------------------------------------------------------------


def test_completed_only_for_a_finalized_full_verified_effect_with_an_open_checkpoint() -> None:
    for axes in _every_tuple():
        done = (axes.execution_state is E.FINALIZED and axes.remote_effect is R.FULLY_APPLIED
                and axes.verification_state is V.PASSED and axes.checkpoint_state in (C.ELIGIBLE, C.PROMOTED))
        outcome = outcome_of(_row(axes))
        assert (outcome.status is ChildStatus.COMPLETED) is done, axes
        if done:
            assert (outcome.error_code, outcome.exit_class) == (None, ExitClass.OK)


@pytest.mark.parametrize("state", [E.ACCEPTED, E.WAITING])
def test_an_accepted_or_waiting_child_is_pending(state: ExecutionState) -> None:
    for effect in R:
        outcome = outcome_of(_row(_tuple(state, effect)))
        assert (outcome.status, outcome.error_code, outcome.exit_class) == (ChildStatus.PENDING, None, ExitClass.OK)


@pytest.mark.parametrize(("effect", "code"), [(R.UNKNOWN, ErrorCode.REMOTE_EFFECT_UNKNOWN),
                                              (R.PARTIALLY_APPLIED, ErrorCode.PARTIALLY_APPLIED)])
@pytest.mark.parametrize("state", [E.VERIFYING, E.FINALIZED])
def test_an_unresolved_effect_blocks_with_exit_4(state: ExecutionState, effect: RemoteEffect, code: ErrorCode) -> None:
    outcome = outcome_of(_row(_tuple(state, effect)))
    assert (outcome.status, outcome.error_code, outcome.exit_class) == (
        ChildStatus.BLOCKED, code, ExitClass.EFFECT_UNKNOWN_OR_MANUAL)
    # The code the last move reported wins over the derived one.
    given = outcome_of(_row(_tuple(state, effect)), ErrorCode.COUNT_MISMATCH)
    assert (given.status, given.error_code, given.exit_class) == (
        ChildStatus.BLOCKED, ErrorCode.COUNT_MISMATCH, ExitClass.EFFECT_UNKNOWN_OR_MANUAL)


@pytest.mark.parametrize("effect", [R.NONE_PROVEN, R.UNDETERMINED, R.FULLY_APPLIED])
def test_verifying_with_a_resolved_or_open_effect_is_not_reached(effect: RemoteEffect) -> None:
    outcome = outcome_of(_row(_tuple(E.VERIFYING, effect)))
    assert (outcome.status, outcome.error_code, outcome.exit_class) == (ChildStatus.NOT_REACHED, None, ExitClass.OK)


@pytest.mark.parametrize("state", [E.PLANNED, E.SEALED, E.SUBMITTING, E.RETRY_WAIT])
def test_before_acceptance_a_child_is_not_reached_whatever_its_effect(state: ExecutionState) -> None:
    for effect in R:
        outcome = outcome_of(_row(_tuple(state, effect, V.PASSED, C.ELIGIBLE)))
        assert (outcome.status, outcome.exit_class) == (ChildStatus.NOT_REACHED, ExitClass.OK), effect


def test_a_finalized_absent_effect_is_a_terminal_receiver_failure() -> None:
    outcome = outcome_of(_row(_tuple(E.FINALIZED, R.NONE_PROVEN, V.FAILED)))
    assert (outcome.status, outcome.error_code, outcome.exit_class) == (
        ChildStatus.BLOCKED, None, ExitClass.TERMINAL_RECEIVER_FAILURE)
    refused = outcome_of(_row(_tuple(E.FINALIZED, R.NONE_PROVEN)), ErrorCode.INTENT_CONFLICT)
    assert (refused.status, refused.error_code, refused.exit_class) == (
        ChildStatus.BLOCKED, ErrorCode.INTENT_CONFLICT, ExitClass.INVALID_INPUT)
    unverified = outcome_of(_row(_tuple(E.FINALIZED, R.FULLY_APPLIED, V.FAILED, C.BLOCKED)))
    assert (unverified.status, unverified.exit_class) == (ChildStatus.BLOCKED, ExitClass.TERMINAL_RECEIVER_FAILURE)


def test_the_outcome_document_names_every_field() -> None:
    axes = _tuple(E.FINALIZED, R.UNKNOWN)
    assert outcome_of(_row(axes)).as_dict() == {
        "operation_id": "op_1", "ordinal": 3, "status": "blocked", "axes": axes.as_dict(),
        "error_code": ErrorCode.REMOTE_EFFECT_UNKNOWN.value, "exit_class": 4,
        "scope": {"start": "2026-09-01T00:00:00Z", "end": "2026-09-08T00:00:00Z"},
    }
    assert outcome_of(_row(_tuple(E.WAITING, R.UNDETERMINED))).as_dict()["error_code"] is None


def _with_exit(exit_class: ExitClass) -> ChildOutcome:
    return replace(outcome_of(ROW), exit_class=exit_class)


@pytest.mark.parametrize(("classes", "expected"), [
    ([], ExitClass.OK),
    ([ExitClass.OK, ExitClass.INVALID_INPUT], ExitClass.INVALID_INPUT),
    ([ExitClass.INVALID_INPUT, ExitClass.TERMINAL_RECEIVER_FAILURE], ExitClass.TERMINAL_RECEIVER_FAILURE),
    ([ExitClass.TERMINAL_RECEIVER_FAILURE, ExitClass.UNAVAILABLE], ExitClass.UNAVAILABLE),
    ([ExitClass.UNAVAILABLE, ExitClass.EFFECT_UNKNOWN_OR_MANUAL, ExitClass.OK], ExitClass.EFFECT_UNKNOWN_OR_MANUAL),
    ([ExitClass.EFFECT_UNKNOWN_OR_MANUAL, ExitClass.TERMINAL_RECEIVER_FAILURE], ExitClass.EFFECT_UNKNOWN_OR_MANUAL),
])
def test_the_most_serious_child_decides_the_exit(classes: list[ExitClass], expected: ExitClass) -> None:
    assert overall_exit([_with_exit(c) for c in classes]) is expected
    assert overall_exit([_with_exit(c) for c in reversed(classes)]) is expected


# --- allowed_actions -------------------------------------------------------------------------------


def test_resume_before_acceptance_only_when_the_effect_is_proven_absent() -> None:
    for axes in _every_tuple():
        if axes.execution_state in (E.SEALED, E.RETRY_WAIT):
            expected = ("inspect", "resume") if axes.remote_effect is R.NONE_PROVEN else ("inspect",)
            assert allowed_actions(_row(axes), has_receipt=True) == expected, axes
        if axes.execution_state is E.PLANNED:
            assert allowed_actions(_row(axes), has_receipt=True) == ("inspect",), axes


@pytest.mark.parametrize("state", [E.ACCEPTED, E.WAITING, E.SUBMITTING])
def test_observation_and_a_lost_submit_resume_read_only(state: ExecutionState) -> None:
    for effect in R:
        assert allowed_actions(_row(_tuple(state, effect)), has_receipt=False) == ("inspect", "resume")


def test_verifying_resumes_unless_a_reconciliation_is_open() -> None:
    for effect in R:
        expected = "reconcile" if effect in UNRESOLVED else "resume"
        assert allowed_actions(_row(_tuple(E.VERIFYING, effect)), has_receipt=True) == ("inspect", expected)


@pytest.mark.parametrize("effect", UNRESOLVED)
def test_a_finalized_unresolved_effect_offers_reconciliation(effect: RemoteEffect) -> None:
    axes = _tuple(E.FINALIZED, effect)
    assert allowed_actions(_row(axes), has_receipt=False) == ("inspect", "reconcile")
    assert allowed_actions(_row(axes), has_receipt=True) == ("inspect", "reconcile", "reconcile --query-receipt")


def test_a_finalized_child_resumes_only_to_promote_an_eligible_checkpoint() -> None:
    for checkpoint in C:
        for effect in (R.NONE_PROVEN, R.FULLY_APPLIED):
            expected = ("inspect", "resume") if checkpoint is C.ELIGIBLE else ("inspect",)
            assert allowed_actions(_row(_tuple(E.FINALIZED, effect, V.PASSED, checkpoint)), True) == expected


def test_each_status_has_its_documented_name() -> None:
    cases = {
        "completed": _tuple(E.FINALIZED, R.FULLY_APPLIED, V.PASSED, C.PROMOTED),
        "pending": _tuple(E.WAITING, R.UNDETERMINED),
        "blocked": _tuple(E.FINALIZED, R.UNKNOWN),
        "not_reached": _tuple(E.SEALED, R.NONE_PROVEN),
    }
    assert {name: outcome_of(_row(axes)).as_dict()["status"] for name, axes in cases.items()} == {
        name: name for name in cases}
