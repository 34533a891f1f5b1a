"""Operator retirement of an orphan MAY_ATTEMPT marker that blocks an operation's next submit.

The orphan is made the way it happens in production: the worker published the marker of attempt
1 under epoch 1, the critical transaction was refused (gate closed after a restore), and the
epoch was then attested to 2, so that marker can never bind an attempt again.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from conftest import JournalEnv
from jn_builders import CAPACITY, NAMESPACE, digest, publish_marker, seal, step, submit, take_lease, week_parent

from sink.contracts.errors import DeliveryError, ErrorCode
from sink.journal.port import JournalRejection, RejectionReason
from sink.journal.records import (
    Actor,
    ActorKind,
    LeaseKind,
    MarkerRetirement,
    OperationRow,
    SubmitRequest,
)

pytestmark = pytest.mark.timeout(60)

OPERATOR = Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="recon-orphan-1")
EVIDENCE = digest("receiver job list: no job for attempt 1")


def _blocked_by_orphan(env: JournalEnv) -> tuple[OperationRow, str]:
    env.journal.configure_capacity(CAPACITY, 4)
    op = seal(env.journal, env.journal.admit_parent(week_parent("orphaned")).children[0])
    take_lease(env.journal, LeaseKind.MUTATION, op.operation_id)
    marker_digest = publish_marker(env.journal, env.markers, op)
    env.journal.block_mutations(reason="restored without zero-RPO proof", actor=OPERATOR)
    with pytest.raises(DeliveryError) as refused:
        env.journal.reserve_and_mark_submitting(SubmitRequest(
            op.operation_id, op.revision, 1, marker_digest, "worker-1", CAPACITY))
    assert refused.value.code is ErrorCode.JOURNAL_EPOCH_BLOCKED
    env.journal.attest_epoch(new_epoch=2, actor=OPERATOR, attestation_digest=digest("attestation"))
    with pytest.raises(JournalRejection) as blocked:  # the ordinal's marker binds the old epoch
        submit(env.journal, env.markers, op)
    assert blocked.value.reason is RejectionReason.MARKER_MISMATCH
    assert [(o.operation_id, o.attempt_ordinal) for o in env.journal.find_orphan_markers()] == [(op.operation_id, 1)]
    return op, marker_digest


def _retire(env: JournalEnv, op: OperationRow, marker_digest: str, *, ordinal: int = 1,
            actor: Actor = OPERATOR) -> OperationRow:
    return env.journal.retire_orphan_marker(MarkerRetirement(op.operation_id, ordinal, marker_digest, EVIDENCE, actor))


def _refused(env: JournalEnv, op: OperationRow, marker_digest: str, reason: RejectionReason, **kwargs: object) -> None:
    orphans = env.journal.find_orphan_markers()
    with pytest.raises(JournalRejection) as caught:
        _retire(env, op, marker_digest, **kwargs)  # type: ignore[arg-type]
    assert caught.value.reason is reason
    assert env.journal.get_operation(op.operation_id) == op
    assert env.journal.find_orphan_markers() == orphans
    assert env.journal.list_retired_markers() == ()


def test_retired_orphan_frees_the_next_ordinal_and_stays_listed(journal_env: JournalEnv) -> None:
    env = journal_env
    op, marker_digest = _blocked_by_orphan(env)
    before = env.journal.now()
    retired = _retire(env, op, marker_digest)
    # The ordinal is consumed; no state axis and no CAS revision moved.
    assert (retired.attempt_count, retired.revision, retired.axes) == (op.attempt_count + 1, op.revision, op.axes)
    assert env.journal.find_orphan_markers() == ()
    (record,) = env.journal.list_retired_markers(NAMESPACE)
    assert (record.operation_id, record.attempt_ordinal, record.marker_digest) == (op.operation_id, 1, marker_digest)
    assert (record.reconciliation_id, record.evidence_digest, record.actor_id) == (
        "recon-orphan-1", EVIDENCE, "oncall-1")
    assert before - timedelta(seconds=5) <= record.retired_at <= env.journal.now() + timedelta(seconds=5)
    assert env.journal.list_retired_markers("ns:some-other-namespace") == ()

    grant = submit(env.journal, env.markers, retired)
    assert (grant.attempt.attempt_ordinal, grant.attempt.journal_epoch) == (2, 2)
    assert [a.attempt_ordinal for a in env.journal.list_attempts(op.operation_id)] == [2]
    assert env.journal.find_orphan_markers() == ()
    moved = step(env.journal, grant.operation, "sync_response_succeeded")
    assert moved.revision == grant.operation.revision + 1


@pytest.mark.parametrize("actor", [
    Actor(ActorKind.AUTOMATIC, "supervisor", reconciliation_id="recon-auto"),
    Actor(ActorKind.OPERATOR, "oncall-1"),
], ids=["automatic-actor", "no-reconciliation-id"])
def test_only_an_operator_with_a_reconciliation_id_retires(journal_env: JournalEnv, actor: Actor) -> None:
    op, marker_digest = _blocked_by_orphan(journal_env)
    _refused(journal_env, op, marker_digest, RejectionReason.OPERATOR_REQUIRED, actor=actor)


def test_retirement_names_exactly_the_blocking_orphan(journal_env: JournalEnv) -> None:
    env = journal_env
    op, marker_digest = _blocked_by_orphan(env)
    _refused(env, op, digest("some other marker"), RejectionReason.MARKER_MISMATCH)
    _refused(env, op, marker_digest, RejectionReason.ATTEMPT_ORDINAL_NOT_NEXT, ordinal=2)
    # A marker whose attempt is in the journal is no orphan, and a reconciliation id already used
    # on the operation (here by the first retirement) is never accepted again.
    retired = _retire(env, op, marker_digest)
    grant = submit(env.journal, env.markers, retired)
    attempted = env.journal.get_operation(op.operation_id)
    assert attempted == grant.operation
    with pytest.raises(JournalRejection) as caught:
        _retire(env, attempted, grant.attempt.marker_digest, ordinal=2,
                actor=Actor(ActorKind.OPERATOR, "oncall-1", reconciliation_id="recon-orphan-2"))
    assert caught.value.reason is RejectionReason.MARKER_NOT_ORPHAN
    with pytest.raises(JournalRejection) as reused:
        _retire(env, attempted, grant.attempt.marker_digest, ordinal=2)
    assert reused.value.reason is RejectionReason.INVALID_REQUEST
    assert env.journal.get_operation(op.operation_id) == attempted
    assert len(env.journal.list_retired_markers()) == 1
