"""Application services behind ``delivery run / resume / inspect`` (seed: "CLI and recovery").

``run`` compiles nothing itself: it takes a compiled plan, prepares (or resumes) the admitted
parent, then hands it to the supervisor. ``resume`` and ``inspect`` take an operation id and use
only the journal and the pinned artifacts — the plan is read back from the artifact the admission
published, never from a current authoring manifest. Every service returns typed results built from
the journal (``sink.runtime.outcome``); the CLI renders them. Every view is redacted: identifiers,
digests, axes and counts only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from sink.artifacts.documents import read_document
from sink.artifacts.port import ImmutableArtifactPort
from sink.contracts.plan import PLAN_ARTIFACT_SCHEMA_ID, CompiledPlan
from sink.journal.port import DeliveryJournalPort, JournalRejection
from sink.journal.records import AdmittedParent, Attempt, OperatorDecisionRecord, OrphanMarker, ParentRecord
from sink.runtime.composition import (
    Inspection,
    Locations,
    RunSettings,
    capacity_scope,
    capacity_slots,
    open_delivery,
    open_inspection,
)
from sink.runtime.intent_guard import require_admitted_intent
from sink.runtime.outcome import RouteResult, read_result

if TYPE_CHECKING:
    # Freezing, sealing and admission (with the source, planner and compiler under them) belong to
    # ``run`` only: ``resume`` and ``inspect`` read the pinned artifacts (start-up cost).
    from sink.preparation.sealing import Progress

__all__ = [
    "ChildDetail", "DeliverySkipped", "InspectionResult", "RunSettings", "UnknownOperation", "ensure_capacity",
    "inspect_operation", "parent_of", "pinned_plan", "resume_delivery", "run_delivery",
]


class UnknownOperation(LookupError):
    """No parent or child with this id in the journal (exit 2: the operator named something absent)."""


@dataclass(frozen=True, slots=True)
class DeliverySkipped:
    """An empty interval: nothing was admitted or sent, the checkpoint does not move (exit 0)."""

    scope_from: date
    scope_to: date
    reason: str = "empty_interval"


def ensure_capacity(journal: DeliveryJournalPort, plan: CompiledPlan) -> None:
    """Create or resize the plan's remote-job capacity scope before a delivery needs it."""
    scope, slots = capacity_scope(plan), capacity_slots(plan)
    try:
        configured: int | None = journal.capacity_status(scope).slots
    except JournalRejection:
        configured = None  # first use of this scope
    if configured != slots:
        journal.configure_capacity(scope, slots)


def run_delivery(plan: CompiledPlan, scope_from: date, scope_to: date, *, workload_dir: Path, locations: Locations,
                 settings: RunSettings, correction_revision: int = 0,
                 progress: Progress | None = None) -> RouteResult | DeliverySkipped:
    from sink.preparation import EmptyBoundary, prepare  # noqa: PLC0415 - see the TYPE_CHECKING block
    from sink.source import source_port  # noqa: PLC0415

    if plan.workload.source is None:
        raise ValueError("the workload names no source")
    source = source_port(plan.workload.source, workload_dir)
    with open_delivery(plan, locations, settings) as runtime:
        try:
            prepared = prepare(plan, scope_from, scope_to, source=source, store=runtime.store,
                               journal=runtime.journal, correction_revision=correction_revision,
                               failpoint=runtime.failpoints.hit, progress=progress)
        except EmptyBoundary:
            return DeliverySkipped(scope_from, scope_to)
        if prepared.resumed:
            require_admitted_intent(plan, prepared.admitted, runtime.store)
        ensure_capacity(runtime.journal, plan)
        return runtime.supervisor.run_parent(prepared.parent_id)


def parent_of(journal: DeliveryJournalPort, operation_id: str) -> AdmittedParent:
    if journal.get_parent(operation_id) is not None:
        return journal.load_parent(operation_id)
    child = journal.get_operation(operation_id)
    if child is None:
        raise UnknownOperation(f"no operation {operation_id} in this journal")
    return journal.load_parent(child.parent_id)


def plan_of(store: ImmutableArtifactPort, parent: ParentRecord) -> CompiledPlan:
    """The compiled plan the admission pinned, read from the artifact store (never a manifest)."""
    document = read_document(store, parent.plan_ref, PLAN_ARTIFACT_SCHEMA_ID)
    return CompiledPlan.model_validate(document["plan"])


def pinned_plan(locations: Locations, operation_id: str) -> tuple[CompiledPlan, str]:
    with open_inspection(locations) as view:
        parent = parent_of(view.journal, operation_id).parent
        return plan_of(view.store, parent), parent.parent_id


def resume_delivery(operation_id: str, *, locations: Locations, settings: RunSettings) -> RouteResult:
    plan, parent_id = pinned_plan(locations, operation_id)
    with open_delivery(plan, locations, settings) as runtime:
        ensure_capacity(runtime.journal, plan)
        return runtime.supervisor.run_parent(parent_id)


@dataclass(frozen=True, slots=True)
class ChildDetail:
    """What ``inspect`` shows of one child beyond its result (identifiers, digests, times only)."""

    operation_id: str
    delivery_key: str
    frontier_order: int
    revision: int
    payload_ref: str
    payload_digest: str
    mutation_intent_digest: str
    attempts: tuple[Attempt, ...]
    receipt_digest: str | None
    receipt_age_seconds: int | None
    """Since the receipt was accepted (its attempt's creation, database clock)."""
    receipt_ttl_horizon: datetime | None
    """Until when the receiver certifiably keeps the receipt (profile retention from acceptance)."""
    last_observation_age_seconds: int | None
    operator_decisions: tuple[OperatorDecisionRecord, ...]


@dataclass(frozen=True, slots=True)
class InspectionResult:
    result: RouteResult
    parent: ParentRecord
    gate_state: str
    details: tuple[ChildDetail, ...]
    orphan_markers: tuple[OrphanMarker, ...]


def inspect_operation(operation_id: str, *, locations: Locations) -> InspectionResult:
    with open_inspection(locations) as view:
        admitted = parent_of(view.journal, operation_id)
        plan = plan_of(view.store, admitted.parent)
        result = read_result(view.journal, admitted.parent.parent_id, capacity_scope=capacity_scope(plan))
        ids = {child.operation_id for child in admitted.children}
        orphans = tuple(o for o in view.journal.find_orphan_markers(admitted.parent.operation_namespace)
                        if o.operation_id in ids)
        details = tuple(_detail(view, plan, row.operation_id) for row in
                        sorted(admitted.children, key=lambda child: child.descriptor.ordinal))
        return InspectionResult(result, admitted.parent, view.journal.gate_status().state.value, details, orphans)


def _detail(view: Inspection, plan: CompiledPlan, operation_id: str) -> ChildDetail:
    journal = view.journal
    row = journal.get_operation(operation_id)
    assert row is not None
    receipt = journal.get_receipt(operation_id)
    attempts = journal.list_attempts(operation_id)
    observations = journal.list_observations(operation_id)
    now = journal.now()
    accepted_at = attempts[-1].created_at if receipt is not None and attempts else None
    retention = plan.operation.retention.receipt_retention_seconds
    return ChildDetail(
        operation_id=operation_id, delivery_key=row.delivery_key, frontier_order=row.descriptor.frontier_order,
        revision=row.revision, payload_ref=row.descriptor.payload_ref, payload_digest=row.descriptor.payload_digest,
        mutation_intent_digest=row.descriptor.mutation_intent_digest, attempts=attempts,
        receipt_digest=None if receipt is None else receipt.receipt_digest,
        receipt_age_seconds=None if accepted_at is None else int((now - accepted_at).total_seconds()),
        receipt_ttl_horizon=None if accepted_at is None else accepted_at + timedelta(seconds=retention),
        last_observation_age_seconds=None if not observations else
        int((now - observations[-1].observed_at).total_seconds()),
        operator_decisions=journal.list_operator_decisions(operation_id),
    )
