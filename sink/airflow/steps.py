"""What the operator does with a continuation result (no Airflow import: unit-tested alone).

* ``DeliveryCompleted``: complete; the task's return value (XCom) is a small redacted summary.
* ``DeliveryPending``: defer on the receipt trigger for the pending child (one async child in
  flight, seed ``max_in_flight_children: 1``; after it, the next child is submitted and the task
  defers again).
* ``DeliveryBlocked`` with exit class 3 (unavailable: a held remote-job slot, a live worker's
  lease, a journal that is down; nothing more was sent): wait on a timer trigger and continue from
  the journal, at most ``max_waits`` times.
* any other ``DeliveryBlocked``: fail with the stable code and exit class. Exit 2 (invalid input),
  4 (effect unknown or partial: an operator decides) and 5 (proven terminal receiver failure) are
  not fixed by running again, so Airflow's own retries are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sink.airflow.runtime_bridge import DeliveryBlocked, DeliveryCompleted, DeliveryPending, DeliveryResult

RUNBOOK = "docs/airflow.md#when-a-task-ends-blocked"


@dataclass(frozen=True, slots=True)
class Complete:
    summary: dict[str, Any]


@dataclass(frozen=True, slots=True)
class DeferOnReceipt:
    parent_id: str
    operation_id: str


@dataclass(frozen=True, slots=True)
class DeferOnTimer:
    parent_id: str | None
    seconds: float
    waits: int


@dataclass(frozen=True, slots=True)
class Fail:
    message: str
    retryable: bool


Step = Complete | DeferOnReceipt | DeferOnTimer | Fail


def blocked_message(blocked: DeliveryBlocked) -> str:
    code = blocked.error_code or "REST_DELIVERY_BLOCKED"
    where = "" if blocked.parent_id is None else f" parent {blocked.parent_id}"
    child = "" if blocked.operation_id is None else f" child {blocked.operation_id}"
    return (f"error[{code}] delivery blocked (exit class {blocked.exit_class}){where}{child}; "
            f"see `delivery inspect --operation-id ...` and {RUNBOOK}")


def next_step(result: DeliveryResult, *, waits: int, max_waits: int, wait_seconds: float) -> Step:
    if isinstance(result, DeliveryCompleted):
        return Complete({"status": "completed", "parent_id": result.parent_id,
                         "operation_ids": list(result.operation_ids), "frontier_order": result.frontier_order})
    if isinstance(result, DeliveryPending):
        return DeferOnReceipt(result.parent_id, result.operation_id)
    if result.waits and waits < max_waits:
        return DeferOnTimer(result.parent_id, wait_seconds, waits + 1)
    return Fail(blocked_message(result), retryable=result.waits)
