"""What the operator does with each continuation result (no Airflow needed)."""

from __future__ import annotations

from datetime import date

import pytest

from sink.airflow.runtime_bridge import (
    DeliveryBlocked,
    DeliveryCompleted,
    DeliveryPending,
    result_of,
    worker_owner,
)
from sink.airflow.steps import Complete, DeferOnReceipt, DeferOnTimer, Fail, next_step
from sink.contracts import results
from sink.contracts.results import ChildResult
from sink.runtime.service import DeliverySkipped

_AXES = {"execution_state": "FINALIZED", "remote_effect": "FULLY_APPLIED", "acknowledgement_state": "ACCEPTED",
         "verification_state": "PASSED", "checkpoint_state": "ELIGIBLE"}


def _child(status: str, exit_class: int = 0, code: str | None = None, op: str = "op_1",
           effect: str = "FULLY_APPLIED") -> ChildResult:
    axes = {**_AXES, "remote_effect": effect} if status == "completed" else {
        **_AXES, "execution_state": "SUBMITTING", "remote_effect": effect, "verification_state": "NOT_RUN",
        "checkpoint_state": "BLOCKED"}
    return ChildResult.model_validate({"operation_id": op, "ordinal": 0, "status": status, "axes": axes,
                                       "error_code": code, "exit_class": exit_class,
                                       "scope_start": "2026-01-01T00:00:00Z", "scope_end": "2026-01-02T00:00:00Z"})


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


def test_result_of_typed_runtime_results() -> None:
    done = _child("completed")
    assert result_of(results.DeliveryCompleted(parent_id="op_p", children=(done,), frontier_order=0)) == \
        DeliveryCompleted("op_p", ("op_1",), 0)
    pending = results.DeliveryPending(parent_id="op_p", children=(done, _child("pending", op="op_2")),
                                      operation_id="op_2")
    assert result_of(pending) == DeliveryPending("op_p", "op_2")
    # Admitted but not sent yet (a busy slot): not a receipt to wait on; the same call later goes on.
    unsent = results.DeliveryPending(parent_id="op_p", children=(_child("not_reached"),), operation_id="op_1",
                                     continuation_kind="submit")
    assert result_of(unsent) == DeliveryBlocked("op_p", "op_1", None, 3)
    unknown = _child("blocked", 4, "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN", "op_2", effect="UNKNOWN")
    blocked = results.DeliveryBlocked(parent_id="op_p", children=(done, unknown), operation_id="op_2",
                                      remote_effect="UNKNOWN", error_code="REST_DELIVERY_REMOTE_EFFECT_UNKNOWN",
                                      allowed_operator_actions=("reconcile",))
    assert result_of(blocked) == DeliveryBlocked("op_p", "op_2", "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN", 4)
    assert result_of(DeliverySkipped(date(2026, 1, 1), date(2026, 1, 2))) == DeliveryCompleted("", (), None)


def test_worker_owner_is_a_journal_identifier() -> None:
    owner = worker_owner("airflow", "dag", "task", "manual__2026-01-01T00:00:00+00:00", 2)
    assert owner == "airflow:dag:task:manual__2026-01-01T00:00:00+00:00:2"
    assert worker_owner("airflow", "d a g", "t\u00e9sk", None) == "airflow:d_a_g:t_sk"
    assert len(worker_owner("x" * 500)) == 200
    assert worker_owner("") == "airflow"
