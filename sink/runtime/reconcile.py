"""Operator reconciliation of unknown or partial effects (seed: "Outcome model": UNKNOWN is refined
only by an operator reconciliation with new immutable evidence and CAS).

``delivery reconcile --operation-id ID --apply``, for one child or for a parent (every unresolved
child of it in one command): an operator actor opens a reconciliation (``reconciliation_opened``,
a fresh reconciliation id; earlier evidence stays append-only), the child's certified read-only
summary query is sent (a GET, never a mutation), and:

* where it proves exact absence for a request that was never accepted (``absence.proves_absence``)
  the child re-enters RETRY_WAIT (``reconciled_absence_proven``, NONE_PROVEN, its capacity
  released): the next run or resume retries it under the retry guard, never before a server's
  Retry-After window ends;
* otherwise the verifier records the refined effect through the operator-only ``reconciled_*``
  transition; a receiver holding other content is "not provable", never "contradictory" unless
  the receiver had acknowledged success.

Without a summary the effect stays UNKNOWN (``reconciled_not_provable``): the operator then needs
evidence from outside, or abandons the child and delivers a new generation. Expected digests are
operator guards: a mismatch refuses before anything is written.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from sink.contracts.results import Axes
from sink.contracts.state import AcknowledgementState, ExecutionState, RemoteEffect
from sink.journal.records import Actor, ActorKind, Decision, OperationRow, TransitionRequest
from sink.runtime import plan_move
from sink.runtime.absence import proves_absence
from sink.runtime.composition import DeliveryRuntime, Locations, RunSettings, open_delivery
from sink.runtime.journal_moves import decision_of, facts_digest
from sink.runtime.outcome import UNRESOLVED_EFFECTS, RouteResult
from sink.runtime.service import parent_of, pinned_plan
from sink.runtime.verification import VerificationEvidence, verify

ABSENCE_PROVEN = "absence_proven"


class ReconcileRefused(ValueError):
    """The operator's guard or the child's state does not permit this reconciliation (exit 2)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


@dataclass(frozen=True, slots=True)
class Guards:
    expected_profile_contract_digest: str | None = None
    expected_mutation_intent_digest: str | None = None


@dataclass(frozen=True, slots=True)
class ChildReconciliation:
    operation_id: str
    before: Axes
    proof: str
    """``summary_query`` when the profile certifies one, else ``none``."""
    applied: bool
    after: Axes | None = None
    outcome: str | None = None
    """``absence_proven`` or the verifier's outcome (full, partial, not_provable, ...)."""
    reconciliation_id: str | None = None


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    parent_id: str
    children: tuple[ChildReconciliation, ...]
    result: RouteResult
    applied: bool


def needs_reconciliation(row: OperationRow) -> bool:
    state = row.axes.execution_state
    return (not row.abandoned and state in (ExecutionState.FINALIZED, ExecutionState.VERIFYING)
            and row.axes.remote_effect in UNRESOLVED_EFFECTS)


def reconcile(operation_id: str, *, locations: Locations, settings: RunSettings, operator_id: str, guards: Guards,
              apply: bool) -> ReconcileReport:
    plan, parent_id = pinned_plan(locations, operation_id)
    if guards.expected_profile_contract_digest not in (None, plan.digests.profile_contract_digest):
        raise ReconcileRefused("reconcile.guard_mismatch", "the pinned profile contract digest differs")
    with open_delivery(plan, locations, settings) as runtime:
        admitted = parent_of(runtime.journal, operation_id)
        named_child = operation_id != parent_id
        rows = [row for row in sorted(admitted.children, key=lambda child: child.descriptor.ordinal)
                if row.operation_id == operation_id or not named_child]
        if named_child and not needs_reconciliation(rows[0]):
            raise ReconcileRefused("reconcile.not_needed", "only a finalized unknown or partial effect is reconciled")
        targets = [row for row in rows if needs_reconciliation(row)]
        for row in targets:
            if guards.expected_mutation_intent_digest not in (None, row.descriptor.mutation_intent_digest):
                raise ReconcileRefused("reconcile.guard_mismatch", "the child's mutation intent digest differs")
        done = tuple(_one(runtime, row, operator_id, apply) for row in targets)
        if apply:
            runtime.supervisor.promote_if_eligible(parent_id)
        return ReconcileReport(parent_id, done, runtime.supervisor.result(parent_id), apply)


def _one(runtime: DeliveryRuntime, row: OperationRow, operator_id: str, apply: bool) -> ChildReconciliation:
    requests, journal, contract = runtime.ports.requests, runtime.journal, runtime.ports.contract
    proof = "summary_query" if requests.summary_request(row) is not None else "none"
    if not apply:
        return ChildReconciliation(row.operation_id, Axes.of(row.axes), proof, applied=False)
    # Every operator transition carries its own reconciliation id (the journal never reuses one).
    campaign = uuid.uuid4().hex[:20]
    actor = Actor(ActorKind.OPERATOR, operator_id, f"rc-{campaign}-proof")
    window = row.next_check_at  # a server's Retry-After window, kept across the reconciliation
    opened = row if row.axes.execution_state is ExecutionState.VERIFYING else journal.transition(TransitionRequest(
        row.operation_id, row.revision, plan_move(contract, row.axes, "reconciliation_opened").transition_id,
        actor=Actor(ActorKind.OPERATOR, operator_id, f"rc-{campaign}-open"),
        evidence_digest=facts_digest("restproof.reconcile.opened", {"operator": operator_id}),
    ))
    summary = runtime.supervisor.read_summary(opened)
    expected = requests.expected(opened)
    evidence = facts_digest("restproof.reconcile.proof", {
        "summary_rows": None if summary is None else summary.row_count,
        "summary_digest": None if summary is None else summary.content_digest,
    })
    attempts = journal.list_attempts(row.operation_id)
    now = journal.now()
    age_ms = None if not attempts else int((now - attempts[-1].created_at).total_seconds() * 1000)
    never_accepted = (opened.axes.remote_effect is RemoteEffect.UNKNOWN
                      and opened.axes.acknowledgement_state is AcknowledgementState.NOT_ACCEPTED)
    if never_accepted and proves_absence(summary, expected, profile=runtime.plan.operation, last_attempt_age_ms=age_ms):
        move = plan_move(contract, opened.axes, "reconciled_absence_proven")
        wait = timedelta(0) if window is None or window <= now else window - now
        final = journal.transition(TransitionRequest(
            row.operation_id, opened.revision, move.transition_id, actor=actor, evidence_digest=evidence,
            decision=Decision(None, None, ABSENCE_PROVEN), next_check_after=wait,
        ))
        outcome = ABSENCE_PROVEN
    else:
        decision = verify(VerificationEvidence(expected=expected, summary=summary), current=opened.axes,
                          contract=contract)
        final = journal.transition(TransitionRequest(
            row.operation_id, opened.revision, decision.move.transition_id, actor=actor, evidence_digest=evidence,
            decision=decision_of(decision.move, decision.outcome.value),
        ))
        outcome = decision.outcome.value
    return ChildReconciliation(row.operation_id, Axes.of(row.axes), proof, applied=True, after=Axes.of(final.axes),
                               outcome=outcome, reconciliation_id=actor.reconciliation_id)
