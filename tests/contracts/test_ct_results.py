"""RouteExecutionResult: a closed, discriminated union with poll_receipt as the only continuation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import TypeAdapter, ValidationError

from sink.contracts import (
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


def test_pending_round_trips_through_the_union() -> None:
    pending = DeliveryPending(operation_id="op_v1_abc", next_check_after=datetime(2026, 8, 30, 8, 0, 10, tzinfo=UTC))
    parsed = ADAPTER.validate_json(ADAPTER.dump_json(pending))
    assert parsed == pending
    assert isinstance(parsed, DeliveryPending) and parsed.continuation_kind == "poll_receipt"


def test_only_poll_receipt_continues() -> None:
    with pytest.raises(ValidationError):
        DeliveryPending.model_validate({"operation_id": "op_v1_a", "continuation_kind": "cancel_job",
                                        "next_check_after": "2026-08-30T08:00:10Z"})


def test_next_check_must_be_timezone_aware() -> None:
    with pytest.raises(ValidationError):
        DeliveryPending(operation_id="op_v1_a", next_check_after=datetime(2026, 8, 30, 8, 0, 10))


def test_completed_requires_full_verified_effect() -> None:
    done = DeliveryCompleted(operation_id="op_v1_a", checkpoint_state="ELIGIBLE", receipt_ref="receipt://1")
    assert done.remote_effect is RemoteEffect.FULLY_APPLIED
    with pytest.raises(ValidationError):
        DeliveryCompleted.model_validate({"operation_id": "op_v1_a", "checkpoint_state": "ELIGIBLE",
                                          "remote_effect": "PARTIALLY_APPLIED"})
    with pytest.raises(ValidationError):
        DeliveryCompleted.model_validate({"operation_id": "op_v1_a", "checkpoint_state": "BLOCKED"})


def test_blocked_carries_catalog_metadata() -> None:
    blocked = DeliveryBlocked(
        operation_id="op_v1_a",
        remote_effect=RemoteEffect.UNKNOWN,
        error_code=ErrorCode.REMOTE_EFFECT_UNKNOWN,
        allowed_operator_actions=(OperatorAction.INSPECT, OperatorAction.RECONCILE),
    )
    assert blocked.exit_class is ExitClass.EFFECT_UNKNOWN_OR_MANUAL
    parsed = ADAPTER.validate_python(blocked.model_dump(mode="json"))
    assert parsed == blocked
    with pytest.raises(ValidationError):
        DeliveryBlocked(operation_id="op_v1_a", remote_effect=RemoteEffect.UNKNOWN,
                        error_code=ErrorCode.REMOTE_EFFECT_UNKNOWN, allowed_operator_actions=())
    with pytest.raises(ValidationError):
        DeliveryBlocked.model_validate({**blocked.model_dump(mode="json"), "error_code": "SOMETHING_ELSE"})


@pytest.mark.parametrize("operation_id", ["op_v2_x", "op_v1_", "op_v1_a b", "x"])
def test_operation_ids_are_shaped(operation_id: str) -> None:
    with pytest.raises(ValidationError):
        DeliveryPending(operation_id=operation_id, next_check_after=datetime(2026, 1, 1, tzinfo=UTC))
