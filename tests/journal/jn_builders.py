"""Builders shared by the journal contract tests (test data only; no adapter specifics)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

from sink.journal.markers import MarkerStore, MayAttemptMarker
from sink.journal.port import DeliveryJournalPort
from sink.journal.records import (
    ChildDescriptor,
    GenerationKey,
    LeaseKind,
    LeaseRequest,
    MutationKind,
    OperationRow,
    ParentAdmission,
    ScopeRange,
    SubmitGrant,
    SubmitRequest,
    TransitionRequest,
)

NAMESPACE = "ns:tenant-a:dev:1"
CAPACITY = "receiver-jobs"
BASE = datetime(2026, 8, 1, tzinfo=UTC)


WORKER = "worker-1"
"""The owner `submit` takes the mutation lease for, and `step` claims by default."""


def digest(label: str) -> str:
    return "sha256:" + hashlib.sha256(label.encode()).hexdigest()


def instant(hours: int) -> str:
    """A canonical UTC instant ``hours`` after 2026-08-01T00:00:00Z."""
    return (BASE + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def day(n: int) -> str:
    return instant(24 * (n - 1))


def child(
    ordinal: int,
    start: str,
    end: str,
    *,
    key: str,
    domain: str = "domain-a",
    generation: GenerationKey | None = None,
    kind: MutationKind = MutationKind.PARTITION_REPLACE,
    intent: str = "v1",
    frontier_order: int | None = None,
) -> ChildDescriptor:
    return ChildDescriptor(
        ordinal=ordinal,
        scope=ScopeRange(start, end),
        delivery_key=key,
        mutation_intent_digest=digest(f"intent:{key}:{intent}"),
        payload_ref=f"payload/{key}",
        payload_digest=digest(f"payload:{key}:{intent}"),
        generation=generation or GenerationKey("2026-09-01T00:00:00Z", 0),
        frontier_order=ordinal if frontier_order is None else frontier_order,
        coverage_proof_digest=digest(f"coverage:{key}"),
        effect_conflict_domain=domain,
        mutation_kind=kind,
    )


def admission(parent_key: str, children: list[ChildDescriptor], *, plan: str = "plan-1") -> ParentAdmission:
    return ParentAdmission(
        operation_namespace=NAMESPACE,
        parent_delivery_key=parent_key,
        parent_plan_digest=digest(f"plan:{parent_key}:{plan}"),
        plan_ref=f"plans/{parent_key}",
        profile_contract_digest=digest("profile"),
        children=tuple(children),
    )


def week_parent(parent_key: str, *, domain: str = "domain-a", generation: GenerationKey | None = None,
                kind: MutationKind = MutationKind.PARTITION_REPLACE, weeks: int = 3) -> ParentAdmission:
    """Children 01-07, 08-14, 15-21 ... of August as [start, end) scopes."""
    return admission(parent_key, [
        child(i, day(1 + 7 * i), day(8 + 7 * i), key=f"{parent_key}.c{i}", domain=domain,
              generation=generation, kind=kind)
        for i in range(weeks)
    ])


def seal(journal: DeliveryJournalPort, op: OperationRow) -> OperationRow:
    return journal.transition(TransitionRequest(op.operation_id, op.revision, "plan_sealed"))


def publish_marker(journal: DeliveryJournalPort, markers: MarkerStore, op: OperationRow,
                   ordinal: int | None = None) -> str:
    marker = MayAttemptMarker(
        operation_namespace=op.operation_namespace,
        operation_id=op.operation_id,
        parent_id=op.parent_id,
        delivery_key=op.delivery_key,
        attempt_ordinal=op.attempt_count + 1 if ordinal is None else ordinal,
        generation=op.descriptor.generation,
        expected_revision=op.revision,
        journal_epoch=journal.gate_status().journal_epoch,
        mutation_intent_digest=op.descriptor.mutation_intent_digest,
        created_at_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    return markers.create_if_absent(marker).digest


def submit(journal: DeliveryJournalPort, markers: MarkerStore, op: OperationRow, *, owner: str = WORKER,
           scope: str = CAPACITY, take_lease: bool = True) -> SubmitGrant:
    """The supervisor's pre-submit sequence: lease, MAY_ATTEMPT marker, critical transaction."""
    if take_lease:
        journal.acquire_lease(LeaseRequest(LeaseKind.MUTATION, op.operation_id, owner, timedelta(seconds=60)))
    marker_digest = publish_marker(journal, markers, op)
    return journal.reserve_and_mark_submitting(SubmitRequest(
        operation_id=op.operation_id, expected_revision=op.revision, attempt_ordinal=op.attempt_count + 1,
        marker_digest=marker_digest, lease_owner=owner, capacity_scope=scope,
    ))


def step(journal: DeliveryJournalPort, op: OperationRow, transition_id: str, **kwargs: object) -> OperationRow:
    """One CAS transition, claiming WORKER's lease unless ``lease_owner`` is given (None: no claim).
    The journal checks the claim only when the transition's cas_preconditions list a lease."""
    kwargs.setdefault("lease_owner", WORKER)
    return journal.transition(TransitionRequest(op.operation_id, op.revision, transition_id, **kwargs))  # type: ignore[arg-type]


def take_lease(journal: DeliveryJournalPort, kind: LeaseKind, subject_id: str, *, owner: str = WORKER,
               ttl: timedelta = timedelta(seconds=60)) -> None:
    journal.acquire_lease(LeaseRequest(kind, subject_id, owner, ttl))


def apply_fully(journal: DeliveryJournalPort, markers: MarkerStore, op: OperationRow) -> OperationRow:
    """Seal, submit and verify one child as FULLY_APPLIED + PASSED (checkpoint ELIGIBLE)."""
    if op.axes.execution_state.value == "PLANNED":
        op = seal(journal, op)
    op = submit(journal, markers, op).operation
    op = step(journal, op, "sync_response_succeeded")
    return step(journal, op, "verified_full")


def fail_no_effect(journal: DeliveryJournalPort, markers: MarkerStore, op: OperationRow) -> OperationRow:
    if op.axes.execution_state.value == "PLANNED":
        op = seal(journal, op)
    op = submit(journal, markers, op).operation
    op = step(journal, op, "sync_response_failed")
    return step(journal, op, "verified_no_effect")
