"""Operator reconciliation of an unknown or partial effect (seed: "Outcome model": UNKNOWN is
refined only by an operator reconciliation with new immutable evidence and CAS).

``delivery reconcile --operation-id CHILD --apply``: an operator actor opens a reconciliation
(``reconciliation_opened``, a fresh reconciliation id; earlier evidence stays append-only), the
child's certified read-only summary query is sent (a GET, never a mutation), and the verifier
records the refined effect through the operator-only ``reconciled_*`` transition. Without a
summary the effect stays UNKNOWN (``reconciled_not_provable``): the operator then needs evidence
from outside (the receiver's console), which this command does not invent. Expected digests are
operator guards: a mismatch refuses before anything is written.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sink.contracts.errors import ExitClass
from sink.contracts.state import ExecutionState, RemoteEffect
from sink.journal.records import Actor, ActorKind, TransitionRequest
from sink.runtime import plan_move
from sink.runtime.composition import Locations, Runtime
from sink.runtime.journal_moves import facts_digest
from sink.runtime.outcome import outcome_of
from sink.runtime.service import RunSettings, UnknownOperation, pinned_plan
from sink.runtime.verification import VerificationEvidence, verify

RECONCILE_SCHEMA = "restproof.delivery_reconciliation.v1"


class ReconcileRefused(ValueError):
    """The operator's guard or the child's state does not permit this reconciliation (exit 2)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


@dataclass(frozen=True, slots=True)
class Guards:
    expected_profile_contract_digest: str | None = None
    expected_mutation_intent_digest: str | None = None


def reconcile_child(operation_id: str, *, locations: Locations, settings: RunSettings, operator_id: str,
                    guards: Guards, apply: bool) -> tuple[dict[str, Any], ExitClass]:
    plan, _ = pinned_plan(locations, operation_id)
    if guards.expected_profile_contract_digest not in (None, plan.digests.profile_contract_digest):
        raise ReconcileRefused("reconcile.guard_mismatch", "the pinned profile contract digest differs")
    with Runtime(plan, locations, worker_id=settings.worker_id, lease_ttl=settings.lease_ttl) as runtime:
        row = runtime.journal.get_operation(operation_id)
        if row is None:
            raise UnknownOperation(f"{operation_id} is not a child operation of this journal")
        if guards.expected_mutation_intent_digest not in (None, row.descriptor.mutation_intent_digest):
            raise ReconcileRefused("reconcile.guard_mismatch", "the child's mutation intent digest differs")
        reopened = row.axes.execution_state is ExecutionState.VERIFYING
        if row.axes.execution_state not in (ExecutionState.FINALIZED, ExecutionState.VERIFYING) or \
                row.axes.remote_effect not in (RemoteEffect.UNKNOWN, RemoteEffect.PARTIALLY_APPLIED):
            raise ReconcileRefused("reconcile.not_needed", "only a finalized unknown or partial effect is reconciled")
        plan_only = {"schema_id": RECONCILE_SCHEMA, "operation_id": operation_id, "applied": False,
                     "before": row.axes.as_dict(),
                     "proof": "summary_query" if runtime.ports.requests.summary_request(row) else "none"}
        if not apply:
            return plan_only, ExitClass.OK
        # Every operator transition carries its own reconciliation id (the journal never reuses one).
        campaign = uuid.uuid4().hex[:20]
        actor = Actor(ActorKind.OPERATOR, operator_id, f"rc-{campaign}-proof")
        contract = runtime.ports.contract
        opened = row if reopened else runtime.journal.transition(TransitionRequest(
            operation_id, row.revision, plan_move(contract, row.axes, "reconciliation_opened").transition_id,
            actor=Actor(ActorKind.OPERATOR, operator_id, f"rc-{campaign}-open"),
            evidence_digest=facts_digest("restproof.reconcile.opened", {"operator": operator_id}),
        ))
        summary = runtime.supervisor.read_summary(opened)
        expected = runtime.ports.requests.expected(opened)
        decision = verify(VerificationEvidence(expected=expected, summary=summary), current=opened.axes,
                          contract=contract)
        final = runtime.journal.transition(TransitionRequest(
            operation_id, opened.revision, decision.move.transition_id, actor=actor,
            evidence_digest=facts_digest("restproof.reconcile.proof", {
                "outcome": decision.outcome.value, "summary_rows": None if summary is None else summary.row_count,
                "summary_digest": None if summary is None else summary.content_digest,
            }),
        ))
        frontier = runtime.supervisor.promote_if_eligible(final.parent_id)
        final = runtime.journal.get_operation(operation_id) or final
        child = outcome_of(final, decision.move.error_code)
        return {**plan_only, "applied": True, "reconciliation_id": actor.reconciliation_id,
                "after": final.axes.as_dict(), "outcome": decision.outcome.value,
                "frontier_order": None if frontier is None else frontier.frontier_order}, child.exit_class
