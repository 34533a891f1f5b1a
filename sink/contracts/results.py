"""Route execution results of the delivery supervisor (seed: "Durable continuation contract").

``RouteExecutionResult = DeliveryCompleted | DeliveryPending | DeliveryBlocked``, discriminated by
``outcome``. Only ``poll_receipt`` is an automatic continuation in V1.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AwareDatetime, Field

from sink.contracts._base import ContractModel
from sink.contracts.errors import ERROR_CATALOG, ErrorCode, ExitClass, Retryability
from sink.contracts.state import CheckpointState, RemoteEffect, VerificationState

OperationId = Annotated[str, Field(pattern=r"^op_v1_[A-Za-z0-9_-]{1,128}$")]
EvidenceRef = Annotated[str, Field(min_length=1, max_length=300, pattern=r"^[\x21-\x7e]+$")]


class OperatorAction(StrEnum):
    INSPECT = "inspect"
    RECONCILE = "reconcile"
    RESUME = "resume"
    COMPENSATE = "compensate"
    EXTEND_BUDGET = "extend_budget"
    WAIT_FOR_SERVER_WINDOW = "wait_for_server_window"
    CREATE_GOVERNED_GENERATION = "create_governed_generation"


class DeliveryCompleted(ContractModel):
    """Terminal success: effect fully applied, verified, checkpoint eligible (or already promoted)."""

    outcome: Literal["completed"] = "completed"
    operation_id: OperationId
    receipt_ref: EvidenceRef | None = None
    remote_effect: Literal[RemoteEffect.FULLY_APPLIED] = RemoteEffect.FULLY_APPLIED
    verification_state: Literal[VerificationState.PASSED] = VerificationState.PASSED
    checkpoint_state: Literal[CheckpointState.ELIGIBLE, CheckpointState.PROMOTED]


class DeliveryPending(ContractModel):
    """Returned only once identity, payload ref, submit attempt, accepted receipt and the next-check
    bound are durable."""

    outcome: Literal["pending"] = "pending"
    operation_id: OperationId
    continuation_kind: Literal["poll_receipt"] = "poll_receipt"
    next_check_after: AwareDatetime


class DeliveryBlocked(ContractModel):
    outcome: Literal["blocked"] = "blocked"
    operation_id: OperationId
    remote_effect: RemoteEffect  # effect certainty at the time of blocking
    error_code: ErrorCode
    evidence_refs: tuple[EvidenceRef, ...] = ()
    allowed_operator_actions: tuple[OperatorAction, ...] = Field(min_length=1)

    @property
    def exit_class(self) -> ExitClass:
        return ERROR_CATALOG[self.error_code].exit_class

    @property
    def retryability(self) -> Retryability:
        return ERROR_CATALOG[self.error_code].retryability


RouteExecutionResult = Annotated[
    DeliveryCompleted | DeliveryPending | DeliveryBlocked, Field(discriminator="outcome")
]
