"""The result of a delivery, as a function of the journal (seed: "Durable continuation contract",
"CLI and recovery": exit codes).

``child_result`` classifies one stored child (its five axes, what its last move decided, and the
live facts the journal holds about it: a receipt, another worker's unexpired lease, the capacity
slots); ``parent_result`` folds the children into ``DeliveryCompleted | DeliveryPending |
DeliveryBlocked``; ``read_result`` reads those facts and calls both. The supervisor, ``resume`` and
``inspect`` all end here, so the same journal state always gives the same code and exit class,
whichever process asks and whatever it remembers.

Exit classes: 0 completed or pending (a continuation remains), 2 corrected input needed, 3 a later
run can continue (journal, receiver, credential or capacity unavailable, another live worker holds
the child), 4 an operator must decide (unknown or partial effect), 5 nothing can be done
automatically (a proven terminal failure, an abandoned child).
"""

from __future__ import annotations

from dataclasses import dataclass

from sink.contracts.errors import ERROR_CATALOG, ErrorCode, ExitClass
from sink.contracts.results import (
    SEVERITY,
    Axes,
    ChildResult,
    ChildStatus,
    DeliveryBlocked,
    DeliveryCompleted,
    DeliveryPending,
    OperatorAction,
)
from sink.contracts.state import CheckpointState, ExecutionState, RemoteEffect, StateTuple, VerificationState
from sink.journal.port import DeliveryJournalPort, JournalRejection
from sink.journal.records import LeaseKind, OperationRow, ParentRecord

RouteResult = DeliveryCompleted | DeliveryPending | DeliveryBlocked
_A = OperatorAction
UNRESOLVED_EFFECTS = frozenset({RemoteEffect.UNKNOWN, RemoteEffect.PARTIALLY_APPLIED})
NOT_SENT_STATES = frozenset({ExecutionState.PLANNED, ExecutionState.SEALED, ExecutionState.RETRY_WAIT})


@dataclass(frozen=True, slots=True)
class LiveFacts:
    """What the journal holds about a child beside its row."""

    receipt_id: str | None = None
    lease_holder: str | None = None
    """Another owner of the child's unexpired mutation or observation lease."""
    capacity_holders: tuple[str, ...] = ()
    """Operations of other parents holding every slot of the capacity scope (empty: a slot is free)."""
    holds_capacity: bool = False


NO_FACTS = LiveFacts()


def is_completed(axes: StateTuple) -> bool:
    return (axes.execution_state is ExecutionState.FINALIZED and axes.remote_effect is RemoteEffect.FULLY_APPLIED
            and axes.verification_state is VerificationState.PASSED
            and axes.checkpoint_state in (CheckpointState.ELIGIBLE, CheckpointState.PROMOTED))


def derived_code(axes: StateTuple) -> ErrorCode | None:
    """The code an unresolved effect carries when no move recorded one (journals of older code)."""
    if axes.remote_effect is RemoteEffect.UNKNOWN:
        return ErrorCode.REMOTE_EFFECT_UNKNOWN
    if axes.remote_effect is RemoteEffect.PARTIALLY_APPLIED:
        return ErrorCode.PARTIALLY_APPLIED
    return None


@dataclass(frozen=True, slots=True)
class _Child:
    row: OperationRow
    live: LiveFacts

    def make(self, status: ChildStatus, exit_class: ExitClass, *actions: OperatorAction,
             code: ErrorCode | None = None, reason: str | None = None, **extra: object) -> ChildResult:
        row = self.row
        return ChildResult.model_validate({
            "operation_id": row.operation_id, "ordinal": row.descriptor.ordinal, "status": status,
            "axes": Axes.of(row.axes), "error_code": code, "exit_class": exit_class, "reason": reason,
            "scope_start": row.descriptor.scope.start, "scope_end": row.descriptor.scope.end,
            "receipt_id": self.live.receipt_id, "abandoned": row.abandoned,
            "allowed_operator_actions": (_A.INSPECT, *actions), **extra,
        })


def child_result(row: OperationRow, live: LiveFacts = NO_FACTS) -> ChildResult:
    child = _Child(row, live)
    axes, decided = row.axes, row.decision
    state, effect = axes.execution_state, axes.remote_effect
    if is_completed(axes):
        return child.make(ChildStatus.COMPLETED, ExitClass.OK)
    code = decided.error_code or derived_code(axes)
    if row.abandoned:
        return child.make(ChildStatus.BLOCKED, ExitClass.TERMINAL_RECEIVER_FAILURE, _A.CREATE_GOVERNED_GENERATION,
                          code=code, reason="abandoned")
    if live.lease_holder is not None and state is not ExecutionState.FINALIZED:
        # Another live worker is on this child: contention, never an unknown effect.
        return child.make(ChildStatus.PENDING, ExitClass.UNAVAILABLE, reason="held_by_other_worker",
                          held_by=live.lease_holder, next_check_after=row.next_check_at)
    if state in (ExecutionState.ACCEPTED, ExecutionState.WAITING):
        if decided.exit_class is not None:  # a paused observation (the receiver answered only errors)
            return child.make(ChildStatus.PENDING, ExitClass(decided.exit_class), _A.RESUME, reason=decided.reason,
                              next_check_after=row.next_check_at)
        return child.make(ChildStatus.PENDING, ExitClass.OK, _A.RESUME, next_check_after=row.next_check_at)
    if state is ExecutionState.VERIFYING:
        if effect in UNRESOLVED_EFFECTS:  # an open operator reconciliation
            assert code is not None
            return child.make(ChildStatus.BLOCKED, _exit_of(decided.exit_class, code), _A.RECONCILE, code=code,
                              reason="reconciliation_open")
        return child.make(ChildStatus.PENDING, ExitClass.OK, _A.RESUME, reason="verification_due")
    if state is ExecutionState.SUBMITTING:
        # Its worker is gone or deferred a fenced replay (no live lease): the next run or resume
        # takes the attempt over. A pause says why (``fenced_replay_due``, a rate limit).
        return child.make(ChildStatus.PENDING, ExitClass.UNAVAILABLE, _A.RESUME,
                          reason=decided.reason or "takeover_due")
    if state in NOT_SENT_STATES:
        return _not_sent(child)
    return _finalized(child, code)


def _not_sent(child: _Child) -> ChildResult:
    row, live = child.row, child.live
    state, decided = row.axes.execution_state, row.decision
    held = live.capacity_holders if state is not ExecutionState.PLANNED else ()
    if decided.exit_class is not None or decided.error_code is not None:
        # What stopped the last attempt here: a proven not-started request, a capacity or rate
        # limit, an overlapping older generation in flight.
        actions: tuple[OperatorAction, ...] = (_A.RESUME, _A.ABANDON) if state is not ExecutionState.PLANNED \
            else (_A.RESUME,)
        if decided.reason == "orphan_marker":
            actions = (_A.RETIRE_ORPHAN_MARKER, _A.ABANDON)
        return child.make(ChildStatus.BLOCKED, _exit_of(decided.exit_class, decided.error_code), *actions,
                          code=decided.error_code, reason=decided.reason, next_check_after=row.next_check_at,
                          capacity_held_by=held)
    if live.capacity_holders and state is not ExecutionState.PLANNED:
        return child.make(ChildStatus.BLOCKED, ExitClass.UNAVAILABLE, _A.RESUME, reason="capacity_held",
                          capacity_held_by=held)
    if state is ExecutionState.RETRY_WAIT:  # proven not started, or absence proven by a reconciliation
        return child.make(ChildStatus.BLOCKED, ExitClass.UNAVAILABLE, _A.RESUME, _A.ABANDON,
                          reason=decided.reason or "request_not_started", next_check_after=row.next_check_at)
    return child.make(ChildStatus.NOT_REACHED, ExitClass.OK, _A.RESUME)


def _finalized(child: _Child, code: ErrorCode | None) -> ChildResult:
    row = child.row
    actions: list[OperatorAction] = []
    if row.axes.remote_effect in UNRESOLVED_EFFECTS:
        actions.append(_A.RECONCILE)
    if child.live.holds_capacity:
        actions.append(_A.TRANSFER_CAPACITY)
    actions += [_A.ABANDON, _A.CREATE_GOVERNED_GENERATION]
    return child.make(ChildStatus.BLOCKED, _exit_of(row.decision.exit_class, code), *actions, code=code,
                      reason=row.decision.reason)


def _exit_of(decided: int | None, code: ErrorCode | None) -> ExitClass:
    if decided is not None:
        return ExitClass(decided)
    if code is not None:
        return ERROR_CATALOG[code].exit_class
    # Finalized with the effect proven absent: a terminal receiver failure, no safe automatic action.
    return ExitClass.TERMINAL_RECEIVER_FAILURE


def parent_result(parent: ParentRecord, children: list[ChildResult]) -> RouteResult:
    ordered = tuple(sorted(children, key=lambda child: child.ordinal))
    common: dict[str, object] = {"parent_id": parent.parent_id, "children": ordered,
                                 "frontier_order": parent.frontier_order,
                                 "frontier_scope_end": parent.frontier_scope_end}
    worst = max(ordered, key=lambda child: SEVERITY[child.exit_class])
    if worst.exit_class is not ExitClass.OK:
        return DeliveryBlocked.model_validate({
            **common, "operation_id": worst.operation_id, "remote_effect": worst.axes.remote_effect,
            "error_code": worst.error_code, "reason": worst.reason,
            "allowed_operator_actions": worst.allowed_operator_actions,
        })
    if all(child.status is ChildStatus.COMPLETED for child in ordered):
        return DeliveryCompleted.model_validate(common)
    waiting = [child for child in ordered if child.status is ChildStatus.PENDING]
    if waiting:
        first = waiting[0]
        kind = "poll_receipt" if first.axes.execution_state in (ExecutionState.ACCEPTED, ExecutionState.WAITING) \
            else "submit"
        return DeliveryPending.model_validate({**common, "operation_id": first.operation_id,
                                               "continuation_kind": kind,
                                               "next_check_after": first.next_check_after})
    first = next(child for child in ordered if child.status is not ChildStatus.COMPLETED)
    return DeliveryPending.model_validate({**common, "operation_id": first.operation_id,
                                           "continuation_kind": "submit"})


def live_facts(journal: DeliveryJournalPort, row: OperationRow, *, siblings: frozenset[str],
               capacity_scope: str | None, viewer: str | None) -> LiveFacts:
    receipt = journal.get_receipt(row.operation_id)
    now = journal.now()
    holder = None
    for kind in (LeaseKind.MUTATION, LeaseKind.OBSERVATION):
        lease = journal.get_lease(kind, row.operation_id)
        if lease is not None and lease.expires_at > now and lease.owner != viewer:
            holder = lease.owner
    holders: tuple[str, ...] = ()
    holds = False
    if capacity_scope is not None:
        try:
            status = journal.capacity_status(capacity_scope)
        except JournalRejection:
            status = None  # not configured yet: nothing holds it
        if status is not None:
            holds = row.operation_id in status.held_by_operations
            others = tuple(op for op in status.held_by_operations if op not in siblings)
            if status.free <= 0 and others:
                holders = others
    return LiveFacts(None if receipt is None else receipt.receipt_id, holder, holders, holds)


def read_result(journal: DeliveryJournalPort, parent_id: str, *, capacity_scope: str | None,
                viewer: str | None = None) -> RouteResult:
    """The delivery's result from the journal. ``viewer``: the worker asking (its own leases are
    not contention); ``capacity_scope``: the plan's remote-job scope (None: not known)."""
    admitted = journal.load_parent(parent_id)
    siblings = frozenset(child.operation_id for child in admitted.children)
    results = [child_result(row, live_facts(journal, row, siblings=siblings, capacity_scope=capacity_scope,
                                            viewer=viewer))
               for row in admitted.children]
    fresh = journal.get_parent(parent_id) or admitted.parent
    return parent_result(fresh, results)
