"""What the operator does with each continuation result (no Airflow needed)."""

from __future__ import annotations

import pytest

from sink.airflow.runtime_bridge import (
    DeliveryBlocked,
    DeliveryCompleted,
    DeliveryPending,
    result_of,
    worker_owner,
)
from sink.airflow.steps import Complete, DeferOnReceipt, DeferOnTimer, Fail, next_step


def _child(status: str, exit_class: int = 0, code: str | None = None, op: str = "op_1") -> dict[str, object]:
    return {"operation_id": op, "status": status, "exit_class": exit_class, "error_code": code}


def test_completed_is_a_redacted_summary() -> None:
    step = next_step(DeliveryCompleted("op_p", ("op_1", "op_2"), 1), waits=0, max_waits=3, wait_seconds=5)
    assert step == Complete({"status": "completed", "parent_id": "op_p", "operation_ids": ["op_1", "op_2"],
                             "frontier_order": 1})


def test_pending_defers_on_the_pending_child() -> None:
    assert next_step(DeliveryPending("op_p", "op_2"), waits=0, max_waits=3, wait_seconds=5) == \
        DeferOnReceipt("op_p", "op_2")


def test_unavailable_waits_then_fails_retryable_after_the_bound() -> None:
    blocked = DeliveryBlocked("op_p", "op_1", None, 3)
    assert next_step(blocked, waits=2, max_waits=3, wait_seconds=5) == DeferOnTimer("op_p", 5, 3)
    last = next_step(blocked, waits=3, max_waits=3, wait_seconds=5)
    assert isinstance(last, Fail) and last.retryable


@pytest.mark.parametrize(("exit_class", "code"), [(2, "REST_DELIVERY_INTENT_CONFLICT"),
                                                  (4, "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN"), (5, None)])
def test_blocked_fails_without_retry_with_code_and_exit_class(exit_class: int, code: str | None) -> None:
    step = next_step(DeliveryBlocked("op_p", "op_1", code, exit_class), waits=0, max_waits=3, wait_seconds=5)
    assert isinstance(step, Fail) and not step.retryable
    assert f"exit class {exit_class}" in step.message and (code or "REST_DELIVERY_BLOCKED") in step.message
    assert "op_p" in step.message and "docs/airflow.md" in step.message


def test_result_of_runtime_views() -> None:
    base = {"parent_id": "op_p", "frontier": {"frontier_order": 0}}
    assert result_of({**base, "exit_code": 0, "children": [_child("completed"), _child("pending", op="op_2")]}) == \
        DeliveryPending("op_p", "op_2")
    assert result_of({**base, "exit_code": 0, "children": [_child("completed")]}) == \
        DeliveryCompleted("op_p", ("op_1",), 0)
    assert result_of({**base, "exit_code": 3, "children": [_child("not_reached", 3)]}) == \
        DeliveryBlocked("op_p", "op_1", None, 3)
    assert result_of({**base, "exit_code": 4, "children": [_child("completed"), _child(
        "blocked", 4, "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN", "op_2")]}) == \
        DeliveryBlocked("op_p", "op_2", "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN", 4)
    # Nothing pending, nothing blocked, not all completed: nothing more can be said now -> wait.
    assert result_of({**base, "exit_code": 0, "children": [_child("not_reached")]}).exit_class == 3  # type: ignore[union-attr]
    assert result_of({**base, "exit_code": 0, "children": []}) == DeliveryBlocked("op_p", None, None, 3)


def test_worker_owner_is_a_journal_identifier() -> None:
    owner = worker_owner("airflow", "dag", "task", "manual__2026-01-01T00:00:00+00:00", 2)
    assert owner == "airflow:dag:task:manual__2026-01-01T00:00:00+00:00:2"
    assert worker_owner("airflow", "d a g", "t\u00e9sk", None) == "airflow:d_a_g:t_sk"
    assert len(worker_owner("x" * 500)) == 200
    assert worker_owner("") == "airflow"
