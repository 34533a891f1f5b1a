"""What one child's stored tuple means for the caller: completed, pending or blocked, with the
stable code and exit class of the seed's table ("CLI and recovery")."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sink.contracts.errors import ERROR_CATALOG, ErrorCode, ExitClass
from sink.contracts.state import CheckpointState, ExecutionState, RemoteEffect, StateTuple, VerificationState
from sink.journal.records import OperationRow


class ChildStatus(StrEnum):
    COMPLETED = "completed"
    PENDING = "pending"
    BLOCKED = "blocked"
    NOT_REACHED = "not_reached"


@dataclass(frozen=True, slots=True)
class ChildOutcome:
    operation_id: str
    ordinal: int
    status: ChildStatus
    axes: StateTuple
    error_code: ErrorCode | None
    exit_class: ExitClass
    scope: tuple[str, str]
    """The child's half-open effect scope [start, end) as stored."""

    def as_dict(self) -> dict[str, object]:
        return {
            "operation_id": self.operation_id,
            "ordinal": self.ordinal,
            "status": self.status.value,
            "axes": self.axes.as_dict(),
            "error_code": None if self.error_code is None else self.error_code.value,
            "exit_class": int(self.exit_class),
            "scope": {"start": self.scope[0], "end": self.scope[1]},
        }


def outcome_of(row: OperationRow, error_code: ErrorCode | None = None) -> ChildOutcome:
    """Classify a stored row. ``error_code`` is the code the last move reported, when known in this
    process; otherwise it is derived from the axes (a recovering process knows only the journal)."""
    axes = row.axes
    state = axes.execution_state
    if state is ExecutionState.FINALIZED and axes.remote_effect is RemoteEffect.FULLY_APPLIED \
            and axes.verification_state is VerificationState.PASSED \
            and axes.checkpoint_state in (CheckpointState.ELIGIBLE, CheckpointState.PROMOTED):
        return _make(row, ChildStatus.COMPLETED, None, ExitClass.OK)
    if state in (ExecutionState.ACCEPTED, ExecutionState.WAITING):
        return _make(row, ChildStatus.PENDING, None, ExitClass.OK)
    if state is ExecutionState.VERIFYING and axes.remote_effect in (RemoteEffect.UNKNOWN,
                                                                    RemoteEffect.PARTIALLY_APPLIED):
        # An open operator reconciliation: operator territory, no automatic step remains.
        code = error_code or _derived_code(axes)
        assert code is not None
        return _make(row, ChildStatus.BLOCKED, code, ERROR_CATALOG[code].exit_class)
    if state is not ExecutionState.FINALIZED:
        return _make(row, ChildStatus.NOT_REACHED, None, ExitClass.OK)
    code = error_code or _derived_code(axes)
    if code is not None:
        return _make(row, ChildStatus.BLOCKED, code, ERROR_CATALOG[code].exit_class)
    # Finalized with the effect proven absent: a terminal receiver failure (or a refusal) with no
    # safe automatic action left.
    return _make(row, ChildStatus.BLOCKED, None, ExitClass.TERMINAL_RECEIVER_FAILURE)


def _derived_code(axes: StateTuple) -> ErrorCode | None:
    if axes.remote_effect is RemoteEffect.UNKNOWN:
        return ErrorCode.REMOTE_EFFECT_UNKNOWN
    if axes.remote_effect is RemoteEffect.PARTIALLY_APPLIED:
        return ErrorCode.PARTIALLY_APPLIED
    return None


def _make(row: OperationRow, status: ChildStatus, code: ErrorCode | None, exit_class: ExitClass) -> ChildOutcome:
    scope = (row.descriptor.scope.start, row.descriptor.scope.end)
    return ChildOutcome(row.operation_id, row.descriptor.ordinal, status, row.axes, code, exit_class, scope)


_SEVERITY = {
    ExitClass.OK: 0,
    ExitClass.INVALID_INPUT: 1,
    ExitClass.TERMINAL_RECEIVER_FAILURE: 2,
    ExitClass.UNAVAILABLE: 3,
    ExitClass.EFFECT_UNKNOWN_OR_MANUAL: 4,
}


def overall_exit(outcomes: list[ChildOutcome]) -> ExitClass:
    """The most serious child decides: an unknown effect (4) needs an operator before anything else."""
    return max((outcome.exit_class for outcome in outcomes), key=_SEVERITY.__getitem__, default=ExitClass.OK)
