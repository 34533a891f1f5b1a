"""Audited operator decisions on one child (seed: "Lease separation": capacity is retained "until
certified expiry plus reconciliation or an audited operator transfer to incident-reserved
capacity"; "final_not_started is terminal only when automatic retry is exhausted, permanently
blocked, or intentionally abandoned").

``delivery abandon --operation-id CHILD --apply``: the child will not be delivered under its
generation; nothing automatic acts on it again, its capacity is released, and an overlapping newer
generation (``delivery run --correction-revision N``) no longer waits for it.
``delivery transfer-capacity --operation-id CHILD --apply``: its remote-job slot moves to the
incident reserve so unrelated intervals can run; its effect and its fence stay as they are.

Each decision is one journal write with the operator's id, a fresh reconciliation id and an
evidence digest; without ``--apply`` nothing is written and the report says what would happen.
Nothing is sent to the receiver.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sink.journal.records import Actor, ActorKind, OperatorDecisionKind, OperatorDecisionRequest
from sink.runtime.composition import Locations, capacity_scope, open_inspection
from sink.runtime.journal_moves import facts_digest
from sink.runtime.outcome import RouteResult, read_result
from sink.runtime.service import UnknownOperation, plan_of


@dataclass(frozen=True, slots=True)
class DecisionReport:
    operation_id: str
    parent_id: str
    kind: OperatorDecisionKind
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
