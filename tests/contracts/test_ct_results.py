"""RouteExecutionResult: a closed, discriminated union of parent results; poll_receipt is the only
automatic continuation; completed, pending and blocked each mean exactly what they say."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from sink.contracts import (
    ChildResult,
    ChildStatus,
    DeliveryBlocked,
    DeliveryCompleted,
    DeliveryPending,
    ErrorCode,
    ExitClass,
    OperatorAction,
    RemoteEffect,
    RouteExecutionResult,
)

ADAPTER: TypeAdapter[DeliveryCompleted | DeliveryPending | DeliveryBlocked] = TypeAdapter(RouteExecutionResult)
WHEN = datetime(2026, 8, 30, 8, 0, 10, tzinfo=UTC)
DONE_AXES = {"execution_state": "FINALIZED", "remote_effect": "FULLY_APPLIED", "acknowledgement_state": "SUCCEEDED",
             "verification_state": "PASSED", "checkpoint_state": "ELIGIBLE"}
WAITING_AXES = {"execution_state": "WAITING", "remote_effect": "UNDETERMINED", "acknowledgement_state": "RUNNING",
                "verification_state": "NOT_RUN", "checkpoint_state": "BLOCKED"}
LOST_AXES = {"execution_state": "FINALIZED", "remote_effect": "UNKNOWN", "acknowledgement_state": "NOT_ACCEPTED",
             "verification_state": "NOT_RUN", "checkpoint_state": "BLOCKED"}


def _child(status: str, axes: dict[str, str], exit_class: int = 0, **extra: Any) -> ChildResult:
    return ChildResult.model_validate({"operation_id": "op_abc", "ordinal": 0, "status": status, "axes": axes,
                                       "exit_class": exit_class, "scope_start": "2026-08-01T00:00:00Z",
                                       "scope_end": "2026-08-02T00:00:00Z", **extra})


def test_pending_round_trips_through_the_union() -> None:
    pending = DeliveryPending(parent_id="op_par", operation_id="op_abc", next_check_after=WHEN,
                              children=(_child("pending", WAITING_AXES, next_check_after=WHEN),))
    parsed = ADAPTER.validate_json(ADAPTER.dump_json(pending))
    assert parsed == pending
    assert isinstance(parsed, DeliveryPending) and parsed.continuation_kind == "poll_receipt"


def test_only_poll_receipt_or_a_first_submit_continue() -> None:
    children = (_child("pending", WAITING_AXES),)
    with pytest.raises(ValidationError):
        DeliveryPending.model_validate({"parent_id": "op_par", "operation_id": "op_abc", "children": children,
                                        "continuation_kind": "cancel_job"})
    with pytest.raises(ValidationError):  # a pending delivery has no child that blocks
        DeliveryPending(parent_id="op_par", operation_id="op_abc",
                        children=(_child("blocked", LOST_AXES, 4, error_code="REST_DELIVERY_REMOTE_EFFECT_UNKNOWN"),))


def test_next_check_must_be_timezone_aware() -> None:
    with pytest.raises(ValidationError):
        _child("pending", WAITING_AXES, next_check_after=datetime(2026, 8, 30, 8, 0, 10))


def test_completed_requires_every_child_verified_full_and_eligible() -> None:
    done = DeliveryCompleted(parent_id="op_par", children=(_child("completed", DONE_AXES),))
    assert done.exit_class is ExitClass.OK
    for axes in ({**DONE_AXES, "remote_effect": "PARTIALLY_APPLIED"}, {**DONE_AXES, "checkpoint_state": "BLOCKED"},
                 {**DONE_AXES, "execution_state": "VERIFYING"}):
        with pytest.raises(ValidationError):
            _child("completed", axes)
    with pytest.raises(ValidationError):
        DeliveryCompleted(parent_id="op_par", children=(_child("pending", WAITING_AXES),))


def test_blocked_carries_the_deciding_child() -> None:
    lost = _child("blocked", LOST_AXES, 4, error_code="REST_DELIVERY_REMOTE_EFFECT_UNKNOWN")
    blocked = DeliveryBlocked(parent_id="op_par", operation_id="op_abc", remote_effect=RemoteEffect.UNKNOWN,
                              error_code=ErrorCode.REMOTE_EFFECT_UNKNOWN, children=(lost,),
                              allowed_operator_actions=(OperatorAction.INSPECT, OperatorAction.RECONCILE))
    assert blocked.exit_class is ExitClass.EFFECT_UNKNOWN_OR_MANUAL
    assert ADAPTER.validate_python(blocked.model_dump(mode="json")) == blocked
    with pytest.raises(ValidationError):
        DeliveryBlocked(parent_id="op_par", operation_id="op_abc", remote_effect=RemoteEffect.UNKNOWN,
                        children=(lost,), allowed_operator_actions=())
    with pytest.raises(ValidationError):
        DeliveryBlocked.model_validate({**blocked.model_dump(mode="json"), "error_code": "SOMETHING_ELSE"})
    with pytest.raises(ValidationError):  # nothing blocks: not a blocked delivery
        DeliveryBlocked(parent_id="op_par", operation_id="op_abc", remote_effect=RemoteEffect.FULLY_APPLIED,
                        children=(_child("completed", DONE_AXES),), allowed_operator_actions=(OperatorAction.INSPECT,))
    assert lost.status is ChildStatus.BLOCKED


@pytest.mark.parametrize("operation_id", ["op_", "op_a b", "x", "op_" + "a" * 129])
def test_operation_ids_are_shaped(operation_id: str) -> None:
    with pytest.raises(ValidationError):
        _child("pending", WAITING_AXES, operation_id=operation_id)
