"""The critical submit transaction: gate, lease, ordinal, marker, generation fence, capacity - all or nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import JournalEnv
from jn_builders import (
    CAPACITY,
    admission,
    apply_fully,
    child,
    day,
    digest,
    instant,
    publish_marker,
    seal,
    step,
    submit,
    week_parent,
)

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.contracts.state import ExecutionState
from sink.journal.port import CapacityExhausted, JournalRejection, RejectionReason, TransitionRejected
from sink.journal.records import (
    Actor,
    ActorKind,
    GateState,
    GenerationKey,
    LeaseKind,
    LeaseRequest,
    MutationKind,
    OperationRow,
    SubmitRequest,
)

pytestmark = pytest.mark.timeout(60)

GEN1 = GenerationKey("2026-09-01T00:00:00Z", 1)
GEN2 = GenerationKey("2026-09-01T00:00:00Z", 2)
OPERATOR = Actor(ActorKind.OPERATOR, "platform-security")


def _sealed(env: JournalEnv, parent_key: str, **kwargs: object) -> list[OperationRow]:
    admitted = env.journal.admit_parent(week_parent(parent_key, **kwargs))  # type: ignore[arg-type]
    return [seal(env.journal, c) for c in admitted.children]


def _assert_untouched(env: JournalEnv, op: OperationRow, held_before: tuple[str, ...]) -> None:
    assert env.journal.get_operation(op.operation_id) == op
    assert env.journal.list_attempts(op.operation_id) == ()
    assert env.journal.capacity_status(CAPACITY).held_by_attempts == held_before


def test_submit_appends_attempt_reserves_capacity_and_cas_to_submitting(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 2)
    op = _sealed(env, "route-1")[0]
    grant = submit(env.journal, env.markers, op)

    assert grant.operation.axes.execution_state is ExecutionState.SUBMITTING
    assert grant.operation.revision == op.revision + 1
    assert grant.operation.attempt_count == 1
    attempt = grant.attempt
    assert (attempt.attempt_ordinal, attempt.expected_revision, attempt.journal_epoch) == (1, op.revision, 1)
    stored_marker = env.markers.get(op.operation_namespace, op.operation_id, 1)
    assert stored_marker is not None and attempt.marker_digest == stored_marker.digest
    assert env.journal.list_attempts(op.operation_id) == (attempt,)
    assert env.journal.capacity_status(CAPACITY).held_by_attempts == (attempt.attempt_id,)


def test_stale_generation_is_refused_with_nothing_written(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    low = _sealed(env, "gen-1", generation=GEN1)[1]
    env.journal.admit_parent(admission("gen-2", [child(0, day(10), day(12), key="gen-2.c0", generation=GEN2)]))
    with pytest.raises(DeliveryError) as caught:
        submit(env.journal, env.markers, low)
    assert caught.value.code is ErrorCode.STALE_GENERATION
    _assert_untouched(env, low, ())


def test_overlapping_lower_generation_in_flight_blocks_the_higher(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    low = _sealed(env, "gen-1", generation=GEN1)[0]
    low_submitting = submit(env.journal, env.markers, low).operation
    high = seal(env.journal, env.journal.admit_parent(
        admission("gen-2", [child(0, day(3), day(5), key="gen-2.c0", generation=GEN2)])).children[0])
    held = env.journal.capacity_status(CAPACITY).held_by_attempts

    for unresolved in ("SUBMITTING", "UNKNOWN"):
        with pytest.raises(DeliveryError) as caught:
            submit(env.journal, env.markers, high)
        assert caught.value.code is ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT, unresolved
        _assert_untouched(env, high, held)
        if unresolved == "SUBMITTING":
            low_submitting = step(env.journal, low_submitting, "request_outcome_unknown")

    # Once the lower one is resolved (here: reconciled as no effect), the higher may submit.
    opened = step(env.journal, low_submitting, "reconciliation_opened",
                  actor=Actor(ActorKind.OPERATOR, "oncall", reconciliation_id="r-1"))
    second_actor = Actor(ActorKind.OPERATOR, "oncall", reconciliation_id="r-2")
    step(env.journal, opened, "reconciled_no_effect", actor=second_actor)
    assert submit(env.journal, env.markers, high).operation.axes.execution_state is ExecutionState.SUBMITTING


def test_fence_overlap_is_half_open_and_per_domain(journal_env: JournalEnv) -> None:
    """Touching scopes and other domains never block; a one-hour overlap does."""
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    low = _sealed(env, "low", generation=GEN1)[0]  # [day 1, day 8)
    submit(env.journal, env.markers, low)  # in flight from here on
    touching, other_domain, overlapping = (
        seal(env.journal, env.journal.admit_parent(admission(f"high-{i}", [c])).children[0])
        for i, c in enumerate([
            child(0, day(8), day(15), key="high.touching", generation=GEN2),
            child(0, day(1), day(8), key="high.other-domain", generation=GEN2, domain="domain-b"),
            # [day 8 - 1 h, day 8): overlaps `low` by one hour, only touches `touching`.
            child(0, instant(24 * 7 - 1), day(8), key="high.overlap", generation=GEN2),
        ])
    )
    assert submit(env.journal, env.markers, touching).operation.axes.execution_state is ExecutionState.SUBMITTING
    assert submit(env.journal, env.markers, other_domain).operation.axes.execution_state is ExecutionState.SUBMITTING
    held = env.journal.capacity_status(CAPACITY).held_by_attempts
    with pytest.raises(DeliveryError) as caught:
        submit(env.journal, env.markers, overlapping)
    assert caught.value.code is ErrorCode.OVERLAPPING_EFFECT_IN_FLIGHT
    assert low.operation_id in str(caught.value)
    _assert_untouched(env, overlapping, held)


def test_append_over_an_applied_append_scope_is_refused(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 8)
    first = _sealed(env, "append-1", kind=MutationKind.INCREMENTAL_APPEND)[0]
    apply_fully(env.journal, env.markers, first)
    again = seal(env.journal, env.journal.admit_parent(admission("append-2", [
        child(0, day(1), day(8), key="append-2.c0", kind=MutationKind.INCREMENTAL_APPEND)])).children[0])
    with pytest.raises(DeliveryError) as caught:
        submit(env.journal, env.markers, again)
    assert caught.value.code is ErrorCode.APPEND_SCOPE_ALREADY_APPLIED
    _assert_untouched(env, again, ())


def test_capacity_exhausted_then_released_by_retry_wait_but_kept_by_unknown(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 1)
    a, b, c = _sealed(env, "route-1")
    a_sub = submit(env.journal, env.markers, a).operation
    with pytest.raises(CapacityExhausted) as caught:
        submit(env.journal, env.markers, b)
    assert caught.value.reason is RejectionReason.CAPACITY_EXHAUSTED
    held = env.journal.capacity_status(CAPACITY).held_by_attempts
    _assert_untouched(env, b, held)

    waiting = step(env.journal, a_sub, "request_not_started_retry")  # durable RETRY_WAIT releases the slot
    assert env.journal.capacity_status(CAPACITY).held_by_attempts == ()
    assert env.journal.list_attempts(a.operation_id)[0].capacity_released is True
    b_sub = submit(env.journal, env.markers, b).operation
    step(env.journal, b_sub, "request_outcome_unknown")  # UNKNOWN keeps its slot
    assert len(env.journal.capacity_status(CAPACITY).held_by_attempts) == 1
    with pytest.raises(CapacityExhausted):
        submit(env.journal, env.markers, c)
    with pytest.raises(CapacityExhausted):  # the retry of `a` needs a slot too
        submit(env.journal, env.markers, waiting)


def test_retry_after_not_started_uses_the_next_attempt_ordinal(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 1)
    op = _sealed(env, "route-1")[0]
    waiting = step(env.journal, submit(env.journal, env.markers, op).operation, "request_not_started_retry")
    env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "worker-1", timedelta(seconds=30)))
    with pytest.raises(TransitionRejected) as caught:  # reusing ordinal 1 is refused
        env.journal.reserve_and_mark_submitting(SubmitRequest(
            op.operation_id, waiting.revision, 1, env.journal.list_attempts(op.operation_id)[0].marker_digest,
            "worker-1", CAPACITY))
    assert caught.value.reason is RejectionReason.ATTEMPT_ORDINAL_NOT_NEXT
    grant = submit(env.journal, env.markers, waiting)
    assert grant.attempt.attempt_ordinal == 2
    assert [a.attempt_ordinal for a in env.journal.list_attempts(op.operation_id)] == [1, 2]


def test_missing_or_foreign_marker_is_refused(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    op, other = _sealed(env, "route-1")[:2]
    env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "worker-1", timedelta(seconds=30)))
    request = SubmitRequest(op.operation_id, op.revision, 1, digest("never-published"), "worker-1", CAPACITY)
    with pytest.raises(TransitionRejected) as caught:
        env.journal.reserve_and_mark_submitting(request)
    assert caught.value.reason is RejectionReason.MARKER_MISSING
    publish_marker(env.journal, env.markers, op)
    foreign = publish_marker(env.journal, env.markers, other)  # a real marker, but of another operation
    with pytest.raises(TransitionRejected) as caught:
        env.journal.reserve_and_mark_submitting(SubmitRequest(
            op.operation_id, op.revision, 1, foreign, "worker-1", CAPACITY))
    assert caught.value.reason is RejectionReason.MARKER_MISMATCH
    _assert_untouched(env, op, ())


def test_submit_needs_an_unexpired_mutation_lease(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    op = _sealed(env, "route-1")[0]
    with pytest.raises(JournalRejection) as caught:
        submit(env.journal, env.markers, op, take_lease=False)
    assert caught.value.reason is RejectionReason.LEASE_NOT_HELD
    env.journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, "worker-1", timedelta(seconds=1)))
    env.advance(timedelta(seconds=1.5))
    with pytest.raises(JournalRejection) as caught:
        submit(env.journal, env.markers, op, take_lease=False)
    assert caught.value.reason is RejectionReason.LEASE_NOT_HELD
    _assert_untouched(env, op, ())


def test_blocked_gate_refuses_submit_but_keeps_observation_and_inspection(journal_env: JournalEnv) -> None:
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 4)
    first, second, third = _sealed(env, "route-1")
    accepted = step(env.journal, submit(env.journal, env.markers, first).operation, "receipt_accepted")
    blocked = env.journal.block_mutations(reason="restored from backup without zero-RPO proof", actor=OPERATOR)
    assert blocked.state is GateState.BLOCKED

    with pytest.raises(DeliveryError) as caught:
        submit(env.journal, env.markers, second)
    assert caught.value.code is ErrorCode.JOURNAL_EPOCH_BLOCKED
    _assert_untouched(env, second, env.journal.capacity_status(CAPACITY).held_by_attempts)

    # Read-only work goes on while the gate is closed.
    env.journal.acquire_lease(LeaseRequest(LeaseKind.OBSERVATION, first.operation_id, "poller", timedelta(seconds=30)))
    env.journal.record_observation(first.operation_id, observation_ordinal=1,
                                   acknowledgement_state=accepted.axes.acknowledgement_state,
                                   evidence_digest=digest("poll-1"), lease_owner="poller")
    assert step(env.journal, accepted, "continuation_pending").axes.execution_state is ExecutionState.WAITING
    assert env.journal.get_operation(second.operation_id) == second

    with pytest.raises(JournalRejection) as refused:
        env.journal.attest_epoch(new_epoch=2, actor=Actor(ActorKind.AUTOMATIC, "supervisor"),
                                 attestation_digest=digest("attestation"))
    assert refused.value.reason is RejectionReason.OPERATOR_REQUIRED
    with pytest.raises(JournalRejection) as refused:
        env.journal.attest_epoch(new_epoch=1, actor=OPERATOR, attestation_digest=digest("attestation"))
    assert refused.value.reason is RejectionReason.EPOCH_NOT_INCREASING

    opened = env.journal.attest_epoch(new_epoch=2, actor=OPERATOR, attestation_digest=digest("attestation"))
    assert (opened.state, opened.journal_epoch) == (GateState.OPEN, 2)
    grant = submit(env.journal, env.markers, third)  # its marker binds the new epoch
    assert grant.attempt.journal_epoch == 2
    # The marker `second` published under epoch 1 before the refusal stays reconciliation work:
    # it is reported, and it can never be re-bound to the new epoch.
    orphans = env.journal.find_orphan_markers()
    assert [(o.operation_id, o.attempt_ordinal) for o in orphans] == [(second.operation_id, 1)]
    with pytest.raises(JournalRejection) as conflict:
        submit(env.journal, env.markers, second)
    assert conflict.value.reason is RejectionReason.MARKER_MISMATCH


def test_no_unconfirmed_critical_commit_without_zero_rpo(journal_env: JournalEnv) -> None:
    """Without a zero-RPO policy every commit is local and final: critical commits and an
    operator's gate block record nothing for replication reconciliation (SQLite: never)."""
    env = journal_env
    env.journal.configure_capacity(CAPACITY, 2)
    assert env.journal.list_unconfirmed_critical_commits() == ()
    op = _sealed(env, "route-1")[0]
    submit(env.journal, env.markers, op)
    env.journal.block_mutations(reason="restore drill", actor=OPERATOR)
    assert env.journal.gate_status().state is GateState.BLOCKED
    assert env.journal.list_unconfirmed_critical_commits() == ()


def test_unconfigured_capacity_scope_is_refused(journal_env: JournalEnv) -> None:
    env = journal_env
    op = _sealed(env, "route-1")[0]
    with pytest.raises(JournalRejection) as caught:
        submit(env.journal, env.markers, op, scope="no-such-scope")
    assert caught.value.reason is RejectionReason.CAPACITY_NOT_CONFIGURED
    assert env.journal.get_operation(op.operation_id) == op
    assert env.journal.list_attempts(op.operation_id) == ()
