"""Route execution results of the delivery supervisor (seed: "Durable continuation contract").

``RouteExecutionResult = DeliveryCompleted | DeliveryPending | DeliveryBlocked``, discriminated by
``outcome``, one per parent delivery, each carrying every child's result. They are built from the
journal alone (``sink.runtime.outcome``), so a run, a later resume and an inspection of the same
journal state return the same result; the CLI renders them as JSON or text.

* ``DeliveryCompleted``: every child is fully applied, verified and checkpoint eligible or promoted.
* ``DeliveryPending``: nothing needs an operator; a continuation remains (``poll_receipt``: an
  accepted job is observed, its next check durable in the journal; ``submit``: admitted children
  not sent yet).
* ``DeliveryBlocked``: some child needs something: a later run (exit 3: the journal, the receiver,
  a capacity slot or another worker's lease), an operator (exit 4), a corrected input (exit 2), or
  nothing can be done automatically any more (exit 5). The most serious child decides.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AwareDatetime, Field, model_validator

from sink.contracts._base import ContractModel, contract_error
from sink.contracts.errors import ErrorCode, ExitClass
from sink.contracts.state import (
    AcknowledgementState,
    CheckpointState,
    ExecutionState,
    RemoteEffect,
    StateTuple,
    VerificationState,
)

OperationId = Annotated[str, Field(pattern=r"^op_[A-Za-z0-9_-]{1,128}$")]
Reason = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
Instant = Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")]


class ChildStatus(StrEnum):
    COMPLETED = "completed"
    PENDING = "pending"
    BLOCKED = "blocked"
    NOT_REACHED = "not_reached"


class OperatorAction(StrEnum):
    """What an operator may do next; each one is a ``delivery`` command that exists."""

    INSPECT = "inspect"
    RESUME = "resume"
    RECONCILE = "reconcile"
    ABANDON = "abandon"
    TRANSFER_CAPACITY = "transfer_capacity"
    CREATE_GOVERNED_GENERATION = "create_governed_generation"
    """``delivery run --correction-revision N``: the data again, as an explicit new generation."""
    RETIRE_ORPHAN_MARKER = "retire_orphan_marker"


SEVERITY: dict[ExitClass, int] = {
    ExitClass.OK: 0,
    ExitClass.INVALID_INPUT: 1,
    ExitClass.TERMINAL_RECEIVER_FAILURE: 2,
    ExitClass.UNAVAILABLE: 3,
    ExitClass.EFFECT_UNKNOWN_OR_MANUAL: 4,
}
"""An unknown effect (4) needs an operator before anything else; an unavailable journal or
receiver (3) only needs a later run; a terminal failure (5) or bad input (2) needs a new input."""


class Axes(ContractModel):
    execution_state: ExecutionState
    remote_effect: RemoteEffect
    acknowledgement_state: AcknowledgementState
    verification_state: VerificationState
    checkpoint_state: CheckpointState

    @classmethod
    def of(cls, axes: StateTuple) -> Axes:
        return cls(execution_state=axes.execution_state, remote_effect=axes.remote_effect,
                   acknowledgement_state=axes.acknowledgement_state,
                   verification_state=axes.verification_state, checkpoint_state=axes.checkpoint_state)


class ChildResult(ContractModel):
    operation_id: OperationId
    ordinal: int = Field(ge=0)
    status: ChildStatus
    axes: Axes
    error_code: ErrorCode | None = None
    exit_class: ExitClass
    reason: Reason | None = None
    """Why the child stops where it is (``request_not_started``, ``held_by_other_worker``, ...)."""
    scope_start: Instant
    scope_end: Instant
    receipt_id: str | None = Field(default=None, max_length=256)
    next_check_after: AwareDatetime | None = None
    """When the next automatic step is due (a poll, a retry), from the journal."""
    held_by: str | None = Field(default=None, max_length=256)
    """Another worker holding this child's lease (a live worker: contention, not an unknown effect)."""
    capacity_held_by: tuple[OperationId, ...] = ()
    """Operations of other deliveries holding every remote-job slot this child needs."""
    abandoned: bool = False
    allowed_operator_actions: tuple[OperatorAction, ...] = (OperatorAction.INSPECT,)

    @model_validator(mode="after")
    def _completed_means_verified(self) -> ChildResult:
        axes = self.axes
        verified = (axes.execution_state is ExecutionState.FINALIZED
                    and axes.remote_effect is RemoteEffect.FULLY_APPLIED
                    and axes.verification_state is VerificationState.PASSED
                    and axes.checkpoint_state in (CheckpointState.ELIGIBLE, CheckpointState.PROMOTED))
        if self.status is ChildStatus.COMPLETED and not (verified and self.exit_class is ExitClass.OK):
            raise contract_error("contract.inconsistent_result",
                                 "completed needs a finalized, verified full effect, checkpoint eligible, exit 0")
        return self


class _ParentResult(ContractModel):
    parent_id: OperationId
    children: tuple[ChildResult, ...] = Field(min_length=1)
    frontier_order: int | None = None
    frontier_scope_end: Instant | None = None

    @property
    def exit_class(self) -> ExitClass:
        return max((child.exit_class for child in self.children), key=SEVERITY.__getitem__)


class DeliveryCompleted(_ParentResult):
    """Every child fully applied, verified, checkpoint eligible (or already promoted)."""

    outcome: Literal["completed"] = "completed"

    @model_validator(mode="after")
    def _all_completed(self) -> DeliveryCompleted:
        if any(child.status is not ChildStatus.COMPLETED for child in self.children):
            raise contract_error("contract.inconsistent_result", "a completed delivery has only completed children")
        return self


class DeliveryPending(_ParentResult):
    """Returned only once the child's identity, payload, attempt, receipt and next check are durable."""

    outcome: Literal["pending"] = "pending"
    operation_id: OperationId
    continuation_kind: Literal["poll_receipt", "submit"] = "poll_receipt"
    next_check_after: AwareDatetime | None = None

    @model_validator(mode="after")
    def _nothing_blocks(self) -> DeliveryPending:
        if self.exit_class is not ExitClass.OK:
            raise contract_error("contract.inconsistent_result", "a pending delivery has no blocked child")
        return self


class DeliveryBlocked(_ParentResult):
    outcome: Literal["blocked"] = "blocked"
    operation_id: OperationId
    """The child that decides the exit class (the first most serious one)."""
    remote_effect: RemoteEffect
    error_code: ErrorCode | None = None
    reason: Reason | None = None
    allowed_operator_actions: tuple[OperatorAction, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _something_blocks(self) -> DeliveryBlocked:
        if self.exit_class is ExitClass.OK:
            raise contract_error("contract.inconsistent_result", "a blocked delivery has a child that blocks")
        return self


RouteExecutionResult = Annotated[
    DeliveryCompleted | DeliveryPending | DeliveryBlocked, Field(discriminator="outcome")
]
