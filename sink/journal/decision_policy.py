"""Which audited operator decisions a child's stored state permits (seed: "Lease separation":
capacity is retained "until certified expiry plus reconciliation or an audited operator transfer to
incident-reserved capacity"; "final_not_started is terminal only when automatic retry is exhausted,
permanently blocked, or intentionally abandoned").

Pure policy shared by both adapters: the adapter passes the stored row and whether the child
still holds capacity reservations; this module answers or raises a ``JournalRejection``.

* ABANDON: the operator gives up delivering this child under its generation (the data goes out
  again as a new explicit generation). Allowed when nothing of the child can still be running on
  the operator's behalf: never sent (SEALED), proven not started (RETRY_WAIT), or FINALIZED without
  a full effect. A child in flight (SUBMITTING, an accepted job being observed, an open
  verification) is observed or reconciled first; a fully applied child has nothing to abandon.
* TRANSFER_CAPACITY: allowed whenever the child holds a reservation and is not being submitted
  right now (SUBMITTING): its effect axes and its overlap fence are unchanged, only the slot moves
  to the incident reserve so that unrelated intervals can run.
"""

from __future__ import annotations

from sink.contracts.state import ExecutionState, RemoteEffect
from sink.journal.port import JournalRejection, RejectionReason, TransitionRejected
from sink.journal.records import ActorKind, OperationRow, OperatorDecisionKind, OperatorDecisionRequest

ABANDONABLE_STATES = frozenset({ExecutionState.SEALED, ExecutionState.RETRY_WAIT, ExecutionState.FINALIZED})


def check_decision(row: OperationRow, request: OperatorDecisionRequest, *, holds_capacity: bool) -> str:
    """The decision's reconciliation id, once every rule holds; raises otherwise."""
    actor = request.actor
    if actor.kind is not ActorKind.OPERATOR or actor.reconciliation_id is None:
        raise TransitionRejected(RejectionReason.OPERATOR_REQUIRED,
                                 "an operator decision needs an operator actor and a reconciliation id")
    if row.revision != request.expected_revision:
        raise TransitionRejected(RejectionReason.STALE_REVISION,
                                 f"operation {row.operation_id} is at revision {row.revision}, "
                                 f"the decision expected {request.expected_revision}")
    if row.abandoned:
        raise JournalRejection(RejectionReason.DECISION_NOT_PERMITTED, f"operation {row.operation_id} is abandoned")
    state, effect = row.axes.execution_state, row.axes.remote_effect
    if request.kind is OperatorDecisionKind.ABANDON:
        if state not in ABANDONABLE_STATES or effect is RemoteEffect.FULLY_APPLIED:
            raise JournalRejection(
                RejectionReason.DECISION_NOT_PERMITTED,
                f"operation {row.operation_id} ({state.value}/{effect.value}) cannot be abandoned: "
                "observe or reconcile it first",
            )
    elif not holds_capacity or state is ExecutionState.SUBMITTING:
        raise JournalRejection(
            RejectionReason.DECISION_NOT_PERMITTED,
            f"operation {row.operation_id} holds no capacity that can be transferred now",
        )
    return actor.reconciliation_id


def refuse_if_abandoned(row: OperationRow) -> None:
    """Automatic transitions and submits never act on an abandoned child."""
    if row.abandoned:
        raise TransitionRejected(RejectionReason.OPERATION_ABANDONED,
                                 f"operation {row.operation_id} was abandoned by an operator")
