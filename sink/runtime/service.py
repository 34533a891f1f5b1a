"""Application services behind ``delivery run / resume / inspect`` (seed: "CLI and recovery").

``run`` compiles nothing itself: it takes a compiled plan, prepares (or resumes) the admitted
parent, then hands it to the supervisor. ``resume`` and ``inspect`` take an operation id and use
only the journal and the pinned artifacts — the plan is read back from the artifact the admission
published, never from a current authoring manifest. Every view is redacted: identifiers, digests,
axes and counts only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from sink.artifacts.documents import read_document
from sink.artifacts.local import LocalArtifactStore
from sink.contracts.errors import ExitClass
from sink.contracts.plan import CompiledPlan
from sink.journal.markers import FileMarkerStore
from sink.journal.port import DeliveryJournalPort
from sink.journal.records import AdmittedParent, OperationRow
from sink.preparation import PLAN_ARTIFACT_SCHEMA_ID, prepare
from sink.preparation.sealing import Progress
from sink.runtime.composition import Locations, Runtime, open_journal
from sink.runtime.intent_guard import require_admitted_intent
from sink.runtime.next_actions import allowed_actions
from sink.runtime.outcome import ChildOutcome, outcome_of, overall_exit
from sink.runtime.supervisor import ParentOutcome
from sink.source import source_port

RESULT_SCHEMA = "restproof.delivery_result.v1"
INSPECT_SCHEMA = "restproof.delivery_inspection.v1"


class UnknownOperation(LookupError):
    """No parent or child with this id in the journal (exit 2: the operator named something absent)."""


@dataclass(frozen=True, slots=True)
class RunSettings:
    worker_id: str
    wait_for_async: bool = True
    lease_ttl: timedelta = timedelta(seconds=30)


def result_view(outcome: ParentOutcome, *, resumed: bool) -> tuple[dict[str, Any], ExitClass]:
    children = list(outcome.children)
    exit_class = overall_exit(children)
    frontier = outcome.frontier
    view = {
        "schema_id": RESULT_SCHEMA,
        "parent_id": outcome.parent_id,
        "resumed": resumed,
        "exit_code": int(exit_class),
        "children": [child.as_dict() for child in children],
        "frontier": None if frontier is None else {
            "frontier_order": frontier.frontier_order, "frontier_scope_end": frontier.frontier_scope_end,
        },
    }
    return view, exit_class


def run_delivery(plan: CompiledPlan, scope_from: date, scope_to: date, *, workload_dir: Path, locations: Locations,
                 settings: RunSettings, correction_revision: int = 0,
                 progress: Progress | None = None) -> tuple[dict[str, Any], ExitClass]:
    with Runtime(plan, locations, worker_id=settings.worker_id, wait_for_async=settings.wait_for_async,
                 lease_ttl=settings.lease_ttl) as runtime:
        source = None if plan.workload.source is None else source_port(plan.workload.source, workload_dir)
        if source is None:
            raise ValueError("the workload names no source")
        prepared = prepare(plan, scope_from, scope_to, source=source, store=runtime.store, journal=runtime.journal,
                           correction_revision=correction_revision, failpoint=runtime.failpoints.hit,
                           progress=progress)
        if prepared.resumed:
            require_admitted_intent(plan, prepared.admitted, runtime.store)
        outcome = runtime.supervisor.run_parent(prepared.parent_id)
        return result_view(outcome, resumed=prepared.resumed)


def _parent_of(journal: DeliveryJournalPort, operation_id: str) -> AdmittedParent:
    if journal.get_parent(operation_id) is not None:
        return journal.load_parent(operation_id)
    child = journal.get_operation(operation_id)
    if child is None:
        raise UnknownOperation(f"no operation {operation_id} in this journal")
    return journal.load_parent(child.parent_id)


def pinned_plan(locations: Locations, operation_id: str) -> tuple[CompiledPlan, str]:
    """The compiled plan the admission pinned, read from the artifact store (never a manifest)."""
    markers = FileMarkerStore(locations.markers)
    journal = open_journal(locations, markers)
    try:
        parent = _parent_of(journal, operation_id)
    finally:
        journal.close()
    store = LocalArtifactStore(locations.artifacts)
    document = read_document(store, parent.parent.plan_ref, PLAN_ARTIFACT_SCHEMA_ID)
    return CompiledPlan.model_validate(document["plan"]), parent.parent.parent_id


def resume_delivery(operation_id: str, *, locations: Locations,
                    settings: RunSettings) -> tuple[dict[str, Any], ExitClass]:
    plan, parent_id = pinned_plan(locations, operation_id)
    with Runtime(plan, locations, worker_id=settings.worker_id, wait_for_async=settings.wait_for_async,
                 lease_ttl=settings.lease_ttl) as runtime:
        return result_view(runtime.supervisor.run_parent(parent_id), resumed=True)


def _child_view(journal: DeliveryJournalPort, row: OperationRow) -> dict[str, Any]:
    outcome: ChildOutcome = outcome_of(row)
    receipt = journal.get_receipt(row.operation_id)
    attempts = journal.list_attempts(row.operation_id)
    observations = journal.list_observations(row.operation_id)
    now = journal.now()
    return {
        **outcome.as_dict(),
        "delivery_key": row.delivery_key,
        "scope": {"start": row.descriptor.scope.start, "end": row.descriptor.scope.end},
        "frontier_order": row.descriptor.frontier_order,
        "revision": row.revision,
        "payload_ref": row.descriptor.payload_ref,
        "payload_digest": row.descriptor.payload_digest,
        "mutation_intent_digest": row.descriptor.mutation_intent_digest,
        "attempts": [{"ordinal": a.attempt_ordinal, "attempt_id": a.attempt_id, "created_at": a.created_at.isoformat(),
                      "capacity_released": a.capacity_released} for a in attempts],
        "receipt": None if receipt is None else {"receipt_id": receipt.receipt_id, "digest": receipt.receipt_digest},
        "last_observation_age_seconds": None if not observations else
        int((now - observations[-1].observed_at).total_seconds()),
        "allowed_next_actions": list(allowed_actions(row, receipt is not None)),
    }


def inspect_operation(operation_id: str, *, locations: Locations) -> dict[str, Any]:
    markers = FileMarkerStore(locations.markers)
    journal = open_journal(locations, markers)
    try:
        admitted = _parent_of(journal, operation_id)
        parent = admitted.parent
        children = sorted(admitted.children, key=lambda child: child.descriptor.ordinal)
        fresh = [journal.get_operation(child.operation_id) or child for child in children]
        orphans = [o for o in journal.find_orphan_markers(parent.operation_namespace)
                   if o.operation_id in {c.operation_id for c in fresh}]
        return {
            "schema_id": INSPECT_SCHEMA,
            "parent_id": parent.parent_id,
            "parent_plan_digest": parent.parent_plan_digest,
            "plan_ref": parent.plan_ref,
            "profile_contract_digest": parent.profile_contract_digest,
            "frontier": {"frontier_order": parent.frontier_order, "frontier_scope_end": parent.frontier_scope_end},
            "gate": journal.gate_status().state.value,
            "children": [_child_view(journal, row) for row in fresh],
            "orphan_markers": [{"operation_id": o.operation_id, "attempt_ordinal": o.attempt_ordinal,
                                "reason": o.reason} for o in orphans],
            "exit_code": int(overall_exit([outcome_of(row) for row in fresh])),
        }
    finally:
        journal.close()
