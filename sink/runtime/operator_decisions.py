"""Audited operator decisions on one child (seed: "Lease separation": capacity is retained "until
certified expiry plus reconciliation or an audited operator transfer to incident-reserved
capacity"; "final_not_started is terminal only when automatic retry is exhausted, permanently
blocked, or intentionally abandoned").

``delivery abandon --operation-id CHILD --apply``: the child will not be delivered under its
generation; nothing automatic acts on it again, its capacity is released, and an overlapping newer
generation (``delivery run --correction-revision N``) no longer waits for it.
``delivery transfer-capacity --operation-id CHILD --apply``: its remote-job slot moves to the
incident reserve so unrelated intervals can run; its effect and its fence stay as they are.

``delivery retire-marker`` retires an orphan MAY_ATTEMPT marker on the operator's evidence;
``delivery attest-epoch`` opens the mutation gate under a new journal epoch after a restore.

Each decision is one journal write with the operator's id, a fresh reconciliation id and an
evidence digest; without ``--apply`` nothing is written and the report says what would happen.
Nothing is sent to the receiver.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sink.journal.records import Actor, ActorKind, MarkerRetirement, OperatorDecisionKind, OperatorDecisionRequest
from sink.runtime.composition import Locations, capacity_scope, open_inspection
from sink.runtime.journal_moves import facts_digest
from sink.runtime.outcome import RouteResult, read_result
from sink.runtime.service import UnknownOperation, plan_of


@dataclass(frozen=True, slots=True)
class DecisionReport:
    operation_id: str
    parent_id: str
    kind: OperatorDecisionKind | None
    """None for a marker retirement."""
    applied: bool
    reconciliation_id: str | None
    result: RouteResult


def decide(operation_id: str, kind: OperatorDecisionKind, *, locations: Locations, operator_id: str,
           reason: str, apply: bool) -> DecisionReport:
    with open_inspection(locations, writable=apply) as view:
        row = view.journal.get_operation(operation_id)
        if row is None:
            raise UnknownOperation(f"no child operation {operation_id} in this journal (name a child, not a parent)")
        parent = view.journal.load_parent(row.parent_id).parent
        reconciliation_id = None
        if apply:
            reconciliation_id = f"od-{uuid.uuid4().hex[:20]}"
            view.journal.record_operator_decision(OperatorDecisionRequest(
                operation_id, kind, row.revision, Actor(ActorKind.OPERATOR, operator_id, reconciliation_id),
                facts_digest("restproof.operator.decision", {"kind": kind.value, "operator": operator_id,
                                                            "reason": reason, "revision": row.revision}),
            ))
        scope = capacity_scope(plan_of(view.store, parent))
        return DecisionReport(operation_id, parent.parent_id, kind, apply, reconciliation_id,
                              read_result(view.journal, parent.parent_id, capacity_scope=scope))


@dataclass(frozen=True, slots=True)
class GateReport:
    state: str
    journal_epoch: int
    applied: bool


def retire_marker(operation_id: str, attempt_ordinal: int, *, locations: Locations, operator_id: str,
                  evidence: str, apply: bool) -> DecisionReport:
    """Retire an orphan MAY_ATTEMPT marker (``inspect`` lists them) on the operator's evidence that
    its attempt caused no remote effect: its ordinal is consumed, the next submit uses the next one."""
    with open_inspection(locations, writable=apply) as view:
        row = view.journal.get_operation(operation_id)
        if row is None:
            raise UnknownOperation(f"no child operation {operation_id} in this journal")
        stored = view.markers.get(row.operation_namespace, operation_id, attempt_ordinal)
        if stored is None:
            raise UnknownOperation(f"no MAY_ATTEMPT marker for attempt {attempt_ordinal} of {operation_id}")
        parent = view.journal.load_parent(row.parent_id).parent
        reconciliation_id = None
        if apply:
            reconciliation_id = f"rm-{uuid.uuid4().hex[:20]}"
            view.journal.retire_orphan_marker(MarkerRetirement(
                operation_id, attempt_ordinal, stored.digest,
                facts_digest("restproof.operator.retirement", {"operator": operator_id, "evidence": evidence}),
                Actor(ActorKind.OPERATOR, operator_id, reconciliation_id),
            ))
        scope = capacity_scope(plan_of(view.store, parent))
        return DecisionReport(operation_id, parent.parent_id, None, apply, reconciliation_id,
                              read_result(view.journal, parent.parent_id, capacity_scope=scope))


def attest_epoch(new_epoch: int, *, locations: Locations, operator_id: str, attestation: str,
                 apply: bool) -> GateReport:
    """Open the environment mutation gate under a new journal epoch (after a restore was reconciled)."""
    with open_inspection(locations, writable=apply) as view:
        if apply:
            status = view.journal.attest_epoch(
                new_epoch=new_epoch, actor=Actor(ActorKind.OPERATOR, operator_id),
                attestation_digest=facts_digest("restproof.operator.epoch", {"operator": operator_id,
                                                                            "attestation": attestation}))
        else:
            status = view.journal.gate_status()
        return GateReport(status.state.value, status.journal_epoch, apply)
