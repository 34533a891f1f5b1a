"""The MAY_ATTEMPT marker must bind the exact attempt, field by field (issue 14).

The critical submit compares the published marker with the journal row and the request on every
bound field; each test below publishes a marker that differs in ONE field only (through the
marker store every adapter reads) and expects MARKER_MISMATCH with nothing written, on both
adapters. A marker that binds every field is accepted (the control case).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from conftest import JournalEnv
from jn_builders import CAPACITY, WORKER, digest, seal, take_lease, week_parent

from sink.contracts.state import ExecutionState
from sink.journal.markers import MayAttemptMarker
from sink.journal.port import JournalRejection, RejectionReason
from sink.journal.records import GenerationKey, LeaseKind, OperationRow, SubmitRequest

pytestmark = pytest.mark.timeout(60)


def _sealed(env: JournalEnv) -> OperationRow:
    env.journal.configure_capacity(CAPACITY, 4)
    op = seal(env.journal, env.journal.admit_parent(week_parent("bound")).children[0])
    take_lease(env.journal, LeaseKind.MUTATION, op.operation_id)
    return op


def _marker(env: JournalEnv, op: OperationRow) -> MayAttemptMarker:
    return MayAttemptMarker(
        operation_namespace=op.operation_namespace, operation_id=op.operation_id, parent_id=op.parent_id,
        delivery_key=op.delivery_key, attempt_ordinal=1, generation=op.descriptor.generation,
        expected_revision=op.revision, journal_epoch=env.journal.gate_status().journal_epoch,
        mutation_intent_digest=op.descriptor.mutation_intent_digest,
        created_at_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def _reserve(env: JournalEnv, op: OperationRow, marker_digest: str) -> Any:
    return env.journal.reserve_and_mark_submitting(SubmitRequest(
        op.operation_id, op.revision, 1, marker_digest, WORKER, CAPACITY))


def test_a_marker_binding_every_field_is_accepted(journal_env: JournalEnv) -> None:
    env = journal_env
    op = _sealed(env)
    stored = env.markers.create_if_absent(_marker(env, op))
    assert _reserve(env, op, stored.digest).operation.axes.execution_state is ExecutionState.SUBMITTING


@pytest.mark.parametrize(("field", "value"), [
    ("parent_id", "par_" + "0" * 40),
    ("delivery_key", "other-delivery-key"),
    ("generation", GenerationKey("2026-09-02T00:00:00Z", 0)),
    ("mutation_intent_digest", digest("another intent")),
    ("expected_revision", 99),
    ("journal_epoch", 7),
])
def test_a_marker_differing_in_one_bound_field_is_refused(journal_env: JournalEnv, field: str, value: Any) -> None:
    env = journal_env
    op = _sealed(env)
    stored = env.markers.create_if_absent(replace(_marker(env, op), **{field: value}))
    with pytest.raises(JournalRejection) as caught:
        _reserve(env, op, stored.digest)
    assert caught.value.reason is RejectionReason.MARKER_MISMATCH
    assert env.journal.get_operation(op.operation_id) == op
    assert env.journal.list_attempts(op.operation_id) == ()
    assert env.journal.capacity_status(CAPACITY).held_by_attempts == ()


def test_the_request_must_name_the_published_marker_digest(journal_env: JournalEnv) -> None:
    env = journal_env
    op = _sealed(env)
    env.markers.create_if_absent(_marker(env, op))
    with pytest.raises(JournalRejection) as caught:
        _reserve(env, op, digest("a digest nobody published"))
    assert caught.value.reason is RejectionReason.MARKER_MISMATCH
    assert env.journal.list_attempts(op.operation_id) == ()
