"""CAS transitions: only contract-listed moves, exact revision, operator-only guarded, monotonic fields."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import JournalEnv
from jn_builders import CAPACITY, digest, seal, step, submit, take_lease, week_parent

from sink.contracts.state import AcknowledgementState, ExecutionState, RemoteEffect
from sink.journal.port import RejectionReason, TransitionRejected
from sink.journal.records import (
    Actor,
    ActorKind,
    LeaseKind,
    LeaseRequest,
    Receipt,
    SubmitRequest,
    TransitionRequest,
)

pytestmark = pytest.mark.timeout(60)

OPERATOR = Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="recon-1")


def _first_child(env: JournalEnv):  # type: ignore[no-untyped-def]
    env.journal.configure_capacity(CAPACITY, 8)
    return env.journal.admit_parent(week_parent("route-1")).children[0]


def test_legal_transition_advances_revision_by_one(journal_env: JournalEnv) -> None:
    op = _first_child(journal_env)
    sealed = seal(journal_env.journal, op)
    assert sealed.axes.execution_state is ExecutionState.SEALED
    assert sealed.revision == op.revision + 1
    assert journal_env.journal.get_operation(op.operation_id) == sealed


def test_stale_revision_is_refused_and_changes_nothing(journal_env: JournalEnv) -> None:
    op = _first_child(journal_env)
    seal(journal_env.journal, op)
    before = journal_env.journal.get_operation(op.operation_id)
    with pytest.raises(TransitionRejected) as caught:
        journal_env.journal.transition(TransitionRequest(op.operation_id, op.revision, "plan_rejected"))
    assert caught.value.reason is RejectionReason.STALE_REVISION
    assert journal_env.journal.get_operation(op.operation_id) == before


@pytest.mark.parametrize("transition_id", ["verified_full", "checkpoint_promoted", "no_such_transition"])
def test_transition_not_listed_from_the_current_tuple_is_illegal(journal_env: JournalEnv, transition_id: str) -> None:
    op = _first_child(journal_env)
    with pytest.raises(TransitionRejected) as caught:
        journal_env.journal.transition(TransitionRequest(op.operation_id, op.revision, transition_id))
    assert caught.value.reason is RejectionReason.ILLEGAL_TRANSITION
    assert journal_env.journal.get_operation(op.operation_id) == op


def test_submitting_is_reachable_only_through_the_critical_transaction(journal_env: JournalEnv) -> None:
    op = seal(journal_env.journal, _first_child(journal_env))
    with pytest.raises(TransitionRejected) as caught:
        journal_env.journal.transition(TransitionRequest(op.operation_id, op.revision, "submit_started"))
    assert caught.value.reason is RejectionReason.SUBMIT_ONLY_VIA_CRITICAL_PATH
    assert journal_env.journal.list_attempts(op.operation_id) == ()


def test_unknown_operation_is_reported(journal_env: JournalEnv) -> None:
    with pytest.raises(TransitionRejected) as caught:
        journal_env.journal.transition(TransitionRequest("op_missing", 0, "plan_sealed"))
    assert caught.value.reason is RejectionReason.UNKNOWN_OPERATION


def _outcome_lost(env: JournalEnv):  # type: ignore[no-untyped-def]
    op = seal(env.journal, _first_child(env))
    op = submit(env.journal, env.markers, op).operation
    return step(env.journal, op, "request_outcome_unknown")


def test_operator_only_transition_needs_operator_and_reconciliation_id(journal_env: JournalEnv) -> None:
    lost = _outcome_lost(journal_env)
    assert lost.axes.remote_effect is RemoteEffect.UNKNOWN
    for actor in (Actor(ActorKind.AUTOMATIC, "supervisor"), Actor(ActorKind.OPERATOR, "oncall-1")):
        with pytest.raises(TransitionRejected) as caught:
            step(journal_env.journal, lost, "reconciliation_opened", actor=actor)
        assert caught.value.reason is RejectionReason.OPERATOR_REQUIRED
    assert journal_env.journal.get_operation(lost.operation_id) == lost

    opened = step(journal_env.journal, lost, "reconciliation_opened", actor=OPERATOR,
                  evidence_digest=digest("evidence-1"))
    assert opened.last_reconciliation_id == "recon-1"
    assert opened.axes.execution_state is ExecutionState.VERIFYING


def test_reconciliation_id_is_never_reused(journal_env: JournalEnv) -> None:
    opened = step(journal_env.journal, _outcome_lost(journal_env), "reconciliation_opened", actor=OPERATOR)
    with pytest.raises(TransitionRejected) as caught:
        step(journal_env.journal, opened, "reconciled_contradictory", actor=OPERATOR)
    assert caught.value.reason is RejectionReason.INVALID_REQUEST
    fresh = Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="recon-2")
    assert step(journal_env.journal, opened, "reconciled_contradictory", actor=fresh).revision == opened.revision + 1


def test_no_second_submit_from_submitting_or_unknown_even_after_lease_expiry(journal_env: JournalEnv) -> None:
    env = journal_env
    op = seal(env.journal, _first_child(env))
    env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "worker-1", timedelta(seconds=1)))
    submitting = submit(env.journal, env.markers, op, take_lease=False).operation
    env.advance(timedelta(seconds=1.5))
    # The lease expired: another worker may take it, but only to observe or reconcile.
    env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "worker-2", timedelta(seconds=30)))
    for unknown in (False, True):
        current = step(env.journal, submitting, "request_outcome_unknown") if unknown else submitting
        with pytest.raises(TransitionRejected) as caught:
            env.journal.reserve_and_mark_submitting(SubmitRequest(
                current.operation_id, current.revision, current.attempt_count + 1, digest("m"), "worker-2", CAPACITY,
            ))
        assert caught.value.reason is RejectionReason.SUBMIT_NOT_PERMITTED_FROM_STATE
    assert len(env.journal.list_attempts(op.operation_id)) == 1


def test_receipt_is_stored_with_its_transition_and_never_replaced(journal_env: JournalEnv) -> None:
    env = journal_env
    submitting = submit(env.journal, env.markers, seal(env.journal, _first_child(env))).operation
    receipt = Receipt("job-123", digest("receipt-123"))
    accepted = step(env.journal, submitting, "receipt_accepted", receipt=receipt)
    assert accepted.axes.acknowledgement_state is AcknowledgementState.ACCEPTED
    assert accepted.axes.remote_effect is RemoteEffect.UNDETERMINED
    assert env.journal.get_receipt(accepted.operation_id) == receipt

    pending = step(env.journal, accepted, "continuation_pending")
    take_lease(env.journal, LeaseKind.OBSERVATION, pending.operation_id)
    with pytest.raises(TransitionRejected) as caught:
        step(env.journal, pending, "poll_observed_running", receipt=Receipt("job-999", digest("other")))
    assert caught.value.reason is RejectionReason.RECEIPT_CONFLICT
    assert env.journal.get_operation(pending.operation_id) == pending
    assert env.journal.get_receipt(pending.operation_id) == receipt


def test_revision_is_strictly_monotonic_over_a_whole_lifecycle(journal_env: JournalEnv) -> None:
    env = journal_env
    op = _first_child(env)
    revisions = [op.revision]
    op = seal(env.journal, op)
    revisions.append(op.revision)
    op = submit(env.journal, env.markers, op).operation
    revisions.append(op.revision)
    for transition_id in ("sync_response_succeeded", "verified_full"):
        op = step(env.journal, op, transition_id)
        revisions.append(op.revision)
    assert revisions == list(range(revisions[0], revisions[0] + 5))
    # An old revision can never be replayed against the final row.
    with pytest.raises(TransitionRejected):
        env.journal.transition(TransitionRequest(op.operation_id, revisions[2], "sync_response_succeeded"))
