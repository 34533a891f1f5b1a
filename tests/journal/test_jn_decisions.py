"""What a move decided is stored with it, and audited operator decisions (abandon, capacity
transfer), over both adapters: the journal is the only authority a run's result is read from."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import JournalEnv
from jn_builders import (
    CAPACITY,
    WORKER,
    admission,
    apply_fully,
    child,
    day,
    digest,
    seal,
    step,
    submit,
)

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.state import AcknowledgementState, ExecutionState, RemoteEffect
from sink.journal.port import JournalRejection, RejectionReason, TransitionRejected
from sink.journal.records import (
    Actor,
    ActorKind,
    Decision,
    GenerationKey,
    LeaseKind,
    LeaseRequest,
    OperationRow,
    OperatorDecisionKind,
    OperatorDecisionRequest,
    ResultFacts,
)

pytestmark = pytest.mark.timeout(120)

GEN0 = GenerationKey("2026-09-01T00:00:00Z", 0)
GEN1 = GenerationKey("2026-09-01T00:00:00Z", 1)


def _operator(reconciliation: str) -> Actor:
    return Actor(ActorKind.OPERATOR, "alice", reconciliation)


def _decide(env: JournalEnv, op: OperationRow, kind: OperatorDecisionKind, reconciliation: str = "rc-1",
            actor: Actor | None = None) -> OperationRow:
    return env.journal.record_operator_decision(OperatorDecisionRequest(
        op.operation_id, kind, op.revision, actor or _operator(reconciliation), digest(f"evidence:{reconciliation}")))


def _lost(env: JournalEnv, key: str = "p.c0", generation: GenerationKey = GEN0) -> OperationRow:
    """A child whose request may have reached the receiver: FINALIZED, effect UNKNOWN, slot held."""
    admitted = env.journal.admit_parent(admission(f"parent-{generation.correction_revision}", [
        child(0, day(1), day(8), key=key, generation=generation)]))
    op = submit(env.journal, env.markers, seal(env.journal, admitted.children[0])).operation
    return step(env.journal, op, "request_outcome_unknown",
                decision=Decision(ErrorCode.REMOTE_EFFECT_UNKNOWN, 4, "may_have_reached_peer"))


def test_a_transition_stores_its_decision_and_the_next_one_replaces_it(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    admitted = env.journal.admit_parent(admission("p", [child(0, day(1), day(8), key="p.c0")]))
    op = submit(env.journal, env.markers, seal(env.journal, admitted.children[0])).operation
    before = env.journal.now()
    waiting = step(env.journal, op, "request_not_started_retry",
                   decision=Decision(None, 3, "request_not_started"), next_check_after=timedelta(seconds=90))
    stored = env.journal.get_operation(op.operation_id)
    assert stored is not None and stored == waiting
    assert stored.decision == Decision(None, 3, "request_not_started")
    assert stored.next_check_at is not None
    assert timedelta(seconds=89) <= stored.next_check_at - before <= timedelta(seconds=120)
    # The next move decides nothing: the stored decision and the next-check bound are cleared.
    resent = submit(env.journal, env.markers, stored).operation
    assert resent.decision == Decision() and resent.next_check_at is None
    fresh = env.journal.get_operation(op.operation_id)
    assert fresh is not None and fresh.decision == Decision() and fresh.next_check_at is None


def test_result_facts_are_kept_until_a_new_attempt_voids_them(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    admitted = env.journal.admit_parent(admission("p", [child(0, day(1), day(8), key="p.c0")]))
    op = submit(env.journal, env.markers, seal(env.journal, admitted.children[0])).operation
    facts = ResultFacts(accepted_rows=7, rejected_rows=3, receiver_reported_partial=True)
    verifying = step(env.journal, op, "sync_response_succeeded", facts=facts)
    assert verifying.facts == facts
    # A transition that names no facts keeps the stored ones (a later process verifies from them).
    done = step(env.journal, verifying, "verified_partial",
                decision=Decision(ErrorCode.PARTIALLY_APPLIED, None, None), lease_owner=None)
    stored = env.journal.get_operation(op.operation_id)
    assert stored is not None and stored.facts == facts == done.facts
    assert stored.decision.error_code is ErrorCode.PARTIALLY_APPLIED


def test_decision_values_are_bounded() -> None:
    with pytest.raises(ValueError, match="exit class"):
        Decision(None, 1, None)
    with pytest.raises(ValueError, match="reason"):
        Decision(None, 3, "Not A Word")
    with pytest.raises(ValueError):
        Decision("REST_DELIVERY_NOT_A_CODE", None, None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="accepted_rows"):
        ResultFacts(accepted_rows=-1)
    with pytest.raises(ValueError, match="rejected_rows"):
        ResultFacts(rejected_rows=2**60)


def test_abandon_releases_capacity_and_unblocks_a_newer_overlapping_generation(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 1)
    lost = _lost(env)
    assert env.journal.capacity_status(CAPACITY).free == 0  # an UNKNOWN effect keeps its slot
    correction = env.journal.admit_parent(admission("p-1", [child(0, day(1), day(8), key="p.c0.r1",
                                                                   generation=GEN1)]))
    newer = seal(env.journal, correction.children[0])
    with pytest.raises(DeliveryError) as refused:
        submit(env.journal, env.markers, newer)
    assert refused.value.code is ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT
    abandoned = _decide(env, lost, OperatorDecisionKind.ABANDON)
    assert abandoned.abandoned and abandoned.axes == lost.axes and abandoned.revision == lost.revision
    assert env.journal.capacity_status(CAPACITY).free == 1
    [record] = env.journal.list_operator_decisions(lost.operation_id)
    assert (record.kind, record.actor_id, record.reconciliation_id) == (OperatorDecisionKind.ABANDON, "alice", "rc-1")
    assert len(record.released_attempts) == 1
    fresh = env.journal.get_operation(newer.operation_id)
    assert fresh is not None
    granted = submit(env.journal, env.markers, fresh)
    assert granted.operation.axes.execution_state is ExecutionState.SUBMITTING


def test_an_abandoned_child_is_never_moved_automatically_nor_submitted(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    admitted = env.journal.admit_parent(admission("p", [child(0, day(1), day(8), key="p.c0")]))
    with pytest.raises(JournalRejection, match="cannot be abandoned"):  # PLANNED: not admitted for submit yet
        _decide(env, admitted.children[0], OperatorDecisionKind.ABANDON)
    abandoned = _decide(env, seal(env.journal, admitted.children[0]), OperatorDecisionKind.ABANDON)
    with pytest.raises(TransitionRejected) as refused:
        submit(env.journal, env.markers, abandoned)
    assert refused.value.reason is RejectionReason.OPERATION_ABANDONED
    with pytest.raises(TransitionRejected) as moved:
        step(env.journal, abandoned, "admission_refused", lease_owner=None)
    assert moved.value.reason is RejectionReason.OPERATION_ABANDONED
    with pytest.raises(JournalRejection, match="is abandoned"):
        _decide(env, abandoned, OperatorDecisionKind.ABANDON, "rc-2")
    stored = env.journal.get_operation(abandoned.operation_id)
    assert stored is not None and stored.abandoned and stored.revision == abandoned.revision


def test_operator_decisions_are_refused_where_they_do_not_apply(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    admitted = env.journal.admit_parent(admission("p", [child(0, day(1), day(8), key="p.c0"),
                                                       child(1, day(8), day(15), key="p.c1")]))
    submitting = submit(env.journal, env.markers, seal(env.journal, admitted.children[0])).operation
    for kind in OperatorDecisionKind:  # a request may be on the wire: observe or reconcile first
        with pytest.raises(JournalRejection) as refused:
            _decide(env, submitting, kind)
        assert refused.value.reason is RejectionReason.DECISION_NOT_PERMITTED
    full = apply_fully(env.journal, env.markers, admitted.children[1])
    with pytest.raises(JournalRejection, match="cannot be abandoned"):
        _decide(env, full, OperatorDecisionKind.ABANDON)
    with pytest.raises(JournalRejection, match="no capacity"):
        _decide(env, full, OperatorDecisionKind.TRANSFER_CAPACITY)  # released when it finalized
    lost = step(env.journal, submitting, "request_outcome_unknown")
    # An operator decision needs both an operator and a reconciliation id.
    for actor in (Actor(ActorKind.AUTOMATIC, WORKER, None), Actor(ActorKind.AUTOMATIC, WORKER, "rc-7"),
                  Actor(ActorKind.OPERATOR, "alice", None)):
        with pytest.raises(TransitionRejected) as not_operator:
            _decide(env, lost, OperatorDecisionKind.ABANDON, actor=actor)
        assert not_operator.value.reason is RejectionReason.OPERATOR_REQUIRED
    with pytest.raises(TransitionRejected) as stale:
        env.journal.record_operator_decision(OperatorDecisionRequest(
            lost.operation_id, OperatorDecisionKind.ABANDON, lost.revision - 1, _operator("rc-9"), digest("e")))
    assert stale.value.reason is RejectionReason.STALE_REVISION
    assert env.journal.list_operator_decisions(lost.operation_id) == ()


def test_a_child_waiting_to_retry_may_be_abandoned(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    admitted = env.journal.admit_parent(admission("p", [child(0, day(1), day(8), key="p.c0")]))
    op = submit(env.journal, env.markers, seal(env.journal, admitted.children[0])).operation
    waiting = step(env.journal, op, "request_not_started_retry")
    assert waiting.axes.execution_state is ExecutionState.RETRY_WAIT
    assert _decide(env, waiting, OperatorDecisionKind.ABANDON).abandoned


def test_capacity_transfer_frees_the_slot_but_keeps_the_fence(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 1)
    lost = _lost(env)
    transferred = _decide(env, lost, OperatorDecisionKind.TRANSFER_CAPACITY)
    assert not transferred.abandoned and transferred.axes.remote_effect is RemoteEffect.UNKNOWN
    assert env.journal.capacity_status(CAPACITY).free == 1
    assert all(a.capacity_released for a in env.journal.list_attempts(lost.operation_id))
    # The same reconciliation id is never used twice on one operation.
    with pytest.raises(TransitionRejected, match="never reused"):
        _decide(env, transferred, OperatorDecisionKind.ABANDON, "rc-1")
    # The unknown effect still fences an overlapping newer generation: only abandon lifts that.
    correction = env.journal.admit_parent(admission("p-1", [child(0, day(1), day(8), key="p.c0.r1",
                                                                   generation=GEN1)]))
    with pytest.raises(DeliveryError) as refused:
        submit(env.journal, env.markers, seal(env.journal, correction.children[0]))
    assert refused.value.code is ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT
    # An unrelated interval now gets the freed slot.
    other = env.journal.admit_parent(admission("q", [child(0, day(20), day(27), key="q.c0")]))
    assert submit(env.journal, env.markers, seal(env.journal, other.children[0])).operation.axes.execution_state \
        is ExecutionState.SUBMITTING


def test_a_pause_note_and_an_observation_set_the_next_check_under_the_lease(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    admitted = env.journal.admit_parent(admission("p", [child(0, day(1), day(8), key="p.c0")]))
    op = submit(env.journal, env.markers, seal(env.journal, admitted.children[0])).operation
    waiting = step(env.journal, step(env.journal, op, "receipt_accepted"), "continuation_pending", lease_owner=None)
    with pytest.raises(JournalRejection) as unleased:  # a pause is written only under the caller's lease
        env.journal.record_pause(op.operation_id, lease_kind=LeaseKind.OBSERVATION, lease_owner=WORKER,
                                 decision=Decision(None, 3, "receiver_unavailable"))
    assert unleased.value.reason is RejectionReason.LEASE_NOT_HELD
    env.journal.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, op.operation_id, WORKER, timedelta(seconds=60)))
    before = env.journal.now()
    paused = env.journal.record_pause(op.operation_id, lease_kind=LeaseKind.OBSERVATION, lease_owner=WORKER,
                                      decision=Decision(None, 3, "receiver_unavailable"),
                                      next_check_after=timedelta(seconds=20))
    assert paused.decision == Decision(None, 3, "receiver_unavailable")
    assert (paused.axes, paused.revision) == (waiting.axes, waiting.revision), "a pause is no transition"
    assert paused.next_check_at is not None and timedelta(seconds=19) <= paused.next_check_at - before
    env.journal.record_observation(op.operation_id, observation_ordinal=1,
                                   acknowledgement_state=AcknowledgementState.RUNNING,
                                   evidence_digest=digest("poll-1"), lease_owner=WORKER,
                                   next_check_after=timedelta(seconds=5))
    answered = env.journal.get_operation(op.operation_id)
    assert answered is not None and answered.decision == Decision(), "an answer ends the pause"
    assert answered.next_check_at is not None
    assert timedelta(seconds=4) <= answered.next_check_at - before <= timedelta(seconds=60)
