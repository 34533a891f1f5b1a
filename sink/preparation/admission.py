"""Admit a sealed topology in one journal transaction, or resume the one already admitted.

Seed: "Execution algorithm" steps 5-7 and "Frozen source boundary": every child identity and
``parent_plan_digest`` are computed from the sealed artifacts, the compiled plan and the
topology are published create-if-absent, a gc root naming the topology is published BEFORE the
journal transaction (so a crash in between leaves orphans, never a referenced artifact without a
root), every payload manifest is re-read (digest verified) and then the parent and ALL children
are admitted by one ``admit_parent`` call. An existing parent is resumed from the journal alone:
the freeze, the planner and the sealer are never called for it again, whatever their version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any

from sink.artifacts.documents import put_document, read_document
from sink.artifacts.gc import root_name
from sink.artifacts.port import ImmutableArtifactPort
from sink.canonical import CanonicalValue
from sink.compiler import delivery_identity
from sink.compiler.semantics import semantic_value
from sink.contracts.plan import PLAN_ARTIFACT_SCHEMA_ID, CompiledPlan
from sink.contracts.planning import ChildWindow
from sink.identity import mutation_intent_digest, parent_plan_digest
from sink.journal.ids import operation_id_for
from sink.journal.port import DeliveryJournalPort
from sink.journal.records import (
    AdmittedParent,
    ChildDescriptor,
    GenerationKey,
    MutationKind,
    ParentAdmission,
    ScopeRange,
)
from sink.payload.body import PAYLOAD_SCHEMA_ID
from sink.planning import child_descriptor
from sink.preparation.sealing import SealedTopology

TOPOLOGY_SCHEMA_ID = "restproof.rest_parent_topology.v1"
Failpoint = Callable[[str], None]


def _quiet(name: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ChildIntent:
    ordinal: int
    descriptor: dict[str, Any]
    """The canonical ordered child descriptor bound by parent_plan_digest."""
    journal: ChildDescriptor


@dataclass(frozen=True, slots=True)
class TopologyIntent:
    parent_id: str
    parent_plan_digest: str
    plan_ref: str
    topology_ref: str
    admission: ParentAdmission
    children: tuple[ChildIntent, ...]


@dataclass(frozen=True, slots=True)
class Prepared:
    parent_id: str
    admitted: AdmittedParent
    resumed: bool
    """True: an existing admission was loaded; nothing was frozen, planned or sealed."""
    topology: TopologyIntent | None


def parent_id_for(plan: CompiledPlan, scope_from: date, scope_to: date, correction_revision: int = 0) -> str:
    identity = delivery_identity(plan, scope_from, scope_to, correction_revision)
    return operation_id_for(identity.operation_namespace, identity.delivery_key)


def _instant(day: date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def _planner_descriptor(window: ChildWindow) -> dict[str, Any]:
    value = child_descriptor(window)
    assert isinstance(value, dict)
    return dict(value)


def _plan_document(plan: CompiledPlan) -> dict[str, Any]:
    return {"schema_id": PLAN_ARTIFACT_SCHEMA_ID, "refs": [], "plan": plan.model_dump(mode="json")}


def build_topology(topology: SealedTopology, store: ImmutableArtifactPort) -> TopologyIntent:
    """Every identity and digest of the sealed topology, and its published plan/topology artifacts."""
    plan = topology.plan
    parent = topology.parent_identity
    plan_ref = put_document(store, _plan_document(plan)).digest
    coverage_digest = topology.coverage.digest
    children: list[ChildIntent] = []
    for window, sealed, identity in zip(topology.windows, topology.children, topology.identities, strict=True):
        rendered_digest = sealed.spec.rendered.semantics_digest(boundary=sealed.boundary,
                                                                sealed_payload_digest=sealed.payload_digest)
        intent = mutation_intent_digest(
            receiver_binding_semantics_digest=plan.digests.receiver_binding_semantics_digest,
            operation_semantics_digest=plan.digests.operation_semantics_digest,
            rendered_request_semantics_digest=rendered_digest,
        )
        descriptor: dict[str, Any] = {
            **_planner_descriptor(window),
            "delivery_key": identity.delivery_key,
            "receiver_mutation_key": identity.receiver_mutation_key,
            "rendered_request_semantics_digest": rendered_digest,
            "mutation_intent_digest": intent,
            "payload_ref": sealed.manifest_ref,
            "payload_digest": sealed.payload_digest,
            "wire_digest": sealed.wire_digest,
            "wire_bytes": sealed.wire_bytes,
            "decoded_bytes": sealed.decoded_bytes,
            "rows": sealed.rows,
        }
        journal_child = ChildDescriptor(
            ordinal=window.ordinal,
            scope=ScopeRange(_instant(window.scope_from), _instant(window.scope_to)),
            delivery_key=identity.delivery_key,
            mutation_intent_digest=intent,
            payload_ref=sealed.manifest_ref,
            payload_digest=sealed.wire_digest,
            generation=GenerationKey(parent.scheduled_interval_end_utc, parent.correction_revision),
            frontier_order=window.ordinal,
            coverage_proof_digest=coverage_digest,
            effect_conflict_domain=plan.digests.effect_conflict_domain,
            mutation_kind=MutationKind(plan.workload.mutation.kind),
        )
        children.append(ChildIntent(window.ordinal, descriptor, journal_child))
    descriptors: list[CanonicalValue] = [child.descriptor for child in children]
    digest = parent_plan_digest(
        frozen_parent_digest=topology.frozen.digest,
        compiled_plan_digest=plan.compiled_plan_digest,
        profile_contract_digest=plan.digests.profile_contract_digest,
        planner_algorithm_version=topology.planner_algorithm_version,
        ordered_child_descriptors=descriptors,
        complete_coverage_proof=topology.coverage.canonical(),
    )
    topology_ref = put_document(store, {
        "schema_id": TOPOLOGY_SCHEMA_ID,
        "refs": [plan_ref, topology.frozen.digest, *(c.descriptor["payload_ref"] for c in children)],
        "parent_delivery_key": parent.delivery_key,
        "parent_plan_digest": digest,
        "frozen_parent_digest": topology.frozen.digest,
        "compiled_plan_digest": plan.compiled_plan_digest,
        "planner_algorithm_version": topology.planner_algorithm_version,
        "coverage_proof": semantic_value(topology.coverage.canonical()),
        "children": descriptors,
        "sealer": topology.sealer_identity,
    }).digest
    admission = ParentAdmission(
        operation_namespace=parent.operation_namespace,
        parent_delivery_key=parent.delivery_key,
        parent_plan_digest=digest,
        plan_ref=plan_ref,
        profile_contract_digest=plan.digests.profile_contract_digest,
        children=tuple(child.journal for child in children),
    )
    return TopologyIntent(admission.parent_id, digest, plan_ref, topology_ref, admission, tuple(children))


def admit(intent: TopologyIntent, store: ImmutableArtifactPort, journal: DeliveryJournalPort, *,
          failpoint: Failpoint = _quiet) -> AdmittedParent:
    store.put_root(root_name(intent.parent_id, intent.topology_ref), intent.topology_ref)
    failpoint("admit.root_published")
    # Digest-verify everything the admission points at before it becomes authority.
    read_document(store, intent.plan_ref, PLAN_ARTIFACT_SCHEMA_ID)
    read_document(store, intent.topology_ref, TOPOLOGY_SCHEMA_ID)
    for child in intent.children:
        manifest = read_document(store, child.journal.payload_ref, PAYLOAD_SCHEMA_ID)
        if manifest["wire"]["digest"] != child.journal.payload_digest:
            raise ValueError(f"payload manifest of child {child.ordinal} does not bind its wire digest")
        if not store.exists(str(manifest["payload"]["digest"])):
            raise ValueError(f"payload of child {child.ordinal} is missing")
    admitted = journal.admit_parent(intent.admission)
    failpoint("admit.committed")
    return admitted
