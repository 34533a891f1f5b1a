"""The machine-readable list of what an operator may do next with one child (``delivery inspect``).

Derived from the stored tuple only, so it never offers a step the design contract forbids: a
resend is never listed once the effect is not proven absent.
"""

from __future__ import annotations

from sink.contracts.state import CheckpointState, ExecutionState, RemoteEffect
from sink.journal.records import OperationRow


def allowed_actions(row: OperationRow, has_receipt: bool) -> tuple[str, ...]:
    axes = row.axes
    state, effect = axes.execution_state, axes.remote_effect
    actions = ["inspect"]
    if state in (ExecutionState.SEALED, ExecutionState.RETRY_WAIT) and effect is RemoteEffect.NONE_PROVEN:
        actions.append("resume")  # a first or proven-not-started attempt: the guard permits a submit
    elif state is ExecutionState.VERIFYING and effect in (RemoteEffect.UNKNOWN, RemoteEffect.PARTIALLY_APPLIED):
        actions.append("reconcile")  # an operator reconciliation is open: finish it
    elif state in (ExecutionState.ACCEPTED, ExecutionState.WAITING, ExecutionState.VERIFYING):
        actions.append("resume")  # read-only observation and verification continue
    elif state is ExecutionState.SUBMITTING:
        actions.append("resume")  # after the lease: records the outcome as lost, never resends
    elif state is ExecutionState.FINALIZED:
        if effect in (RemoteEffect.UNKNOWN, RemoteEffect.PARTIALLY_APPLIED):
            actions.append("reconcile")
            if has_receipt:
                actions.append("reconcile --query-receipt")
        if axes.checkpoint_state is CheckpointState.ELIGIBLE:
            actions.append("resume")  # promote the contiguous frontier
    return tuple(actions)
