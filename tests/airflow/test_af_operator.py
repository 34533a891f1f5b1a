"""The operator and the triggers as Airflow sees them (a stand-in for Airflow's base classes):
what is deferred on, with which JSON kwargs, what reaches XCom and the task log, how a blocked
delivery fails; and the real runtime underneath (receiver, proxy, SQLite journal)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Any

import pytest
from af_fake_airflow import AirflowException, AirflowFailException, TaskDeferred, install
from af_support import Stack

from certification.airflow.deployment import SENTINEL_ROW_LABEL, SENTINEL_TOKEN

install()

from sink.airflow.locator import LocatorError  # noqa: E402
from sink.airflow.operator import RestDeliveryOperator  # noqa: E402
from sink.airflow.runtime_bridge import DeliveryBlocked  # noqa: E402
from sink.airflow.trigger import DeliveryReceiptTrigger, DeliveryWaitTrigger  # noqa: E402


class _Ti:
    dag_id, task_id, run_id, map_index, try_number = "dag", "deliver", "manual__1", -1, 1


def _operator(stack: Stack, tmp: Any, index: int = 0) -> RestDeliveryOperator:
    start, end = stack.deployment.scope(index)
    return RestDeliveryOperator(task_id="deliver", workload=str(stack.deployment.workload),
                                scope_from=start.isoformat(), scope_to=end.isoformat(),
                                journal_locator=stack.deployment.locator.as_kwargs(),
                                timing_records_dir=str(tmp / "records"), wait_seconds=1, max_waits=2)


def _leaks(text: str) -> list[str]:
    return [s for s in (SENTINEL_TOKEN, SENTINEL_ROW_LABEL) if s in text]


def test_execute_defers_then_completes_with_a_redacted_summary(stack: Stack, tmp_path: Any) -> None:
    operator = _operator(stack, tmp_path)
    context = {"ti": _Ti()}
    with pytest.raises(TaskDeferred) as deferred:
        operator.execute(context)
    trigger = deferred.value.trigger
    assert isinstance(trigger, DeliveryReceiptTrigger) and deferred.value.method_name == "execute_complete"
    classpath, kwargs = trigger.serialize()
    assert classpath == "sink.airflow.trigger.DeliveryReceiptTrigger"
    assert set(kwargs) == {"operation_id", "journal_locator"}
    stored = json.dumps([kwargs, deferred.value.kwargs])  # what Airflow stores: JSON, no secret
    assert _leaks(stored) == []
    rebuilt = DeliveryReceiptTrigger(**json.loads(json.dumps(kwargs)))  # a triggerer restart re-creates it
    assert rebuilt.serialize() == (classpath, kwargs)

    async def observe() -> Any:
        async for event in rebuilt.run():
            return event
        return None

    stack.receiver.advance_clock(1800)  # the 30-minute job is over: the first poll sees it terminal
    event = asyncio.run(observe())
    assert set(event.payload) == {"operation_id", "observed_revision"}
    # The event is a hint: a forged revision changes nothing, the journal decides.
    summary = operator.execute_complete(context, event={"operation_id": kwargs["operation_id"],
                                                        "observed_revision": 999}, **deferred.value.kwargs)
    assert summary["status"] == "completed" and summary["operation_ids"] == [kwargs["operation_id"]]
    assert _leaks(json.dumps(summary) + "\n".join(operator.log.lines)) == []
    records = (tmp_path / "records" / "dag.deliver.jsonl").read_text()
    assert [json.loads(line)["step"] for line in records.splitlines()] == ["DeferOnReceipt", "Complete"]
    assert _leaks(records) == []
    journal = stack.deployment.locator.journal.removeprefix("sqlite:")
    with sqlite3.connect(journal) as conn:
        dump = "\n".join(conn.iterdump())
    assert _leaks(dump) == []
    assert len(stack.posts()) == 1 and len(stack.receiver.effects()) == 1


def test_a_held_slot_waits_on_a_timer_and_then_fails_retryable(stack: Stack, tmp_path: Any) -> None:
    context = {"ti": _Ti()}
    with pytest.raises(TaskDeferred):
        _operator(stack, tmp_path, 0).execute(context)  # takes the only remote-job slot
    second = _operator(stack, tmp_path, 1)
    with pytest.raises(TaskDeferred) as waiting:
        second.execute(context)
    assert isinstance(waiting.value.trigger, DeliveryWaitTrigger)
    assert waiting.value.method_name == "execute_resume" and waiting.value.kwargs["waits"] == 1
    with pytest.raises(TaskDeferred) as again:
        second.execute_resume(context, event={"waited_seconds": 1}, **waiting.value.kwargs)
    assert again.value.kwargs["waits"] == 2
    with pytest.raises(AirflowException) as failed:
        second.execute_resume(context, event=None, **again.value.kwargs)
    assert not isinstance(failed.value, AirflowFailException) and "exit class 3" in str(failed.value)
    assert len(stack.posts()) == 1  # the waiting delivery sent nothing


def test_a_blocked_delivery_fails_without_retry(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    from sink.airflow import runtime_bridge

    monkeypatch.setattr(runtime_bridge, "resume", lambda *a, **k: DeliveryBlocked(
        "op_p", "op_c", "REST_DELIVERY_REMOTE_EFFECT_UNKNOWN", 4))
    operator = RestDeliveryOperator(task_id="deliver", workload="/w.yaml", scope_from="2026-01-01",
                                    scope_to="2026-01-04", journal_locator={
                                        "journal": "sqlite:/j.sqlite3", "artifacts": "/a", "markers": "/m"})
    with pytest.raises(AirflowFailException) as failed:
        operator.execute_complete({"ti": _Ti()}, event=None, parent_id="op_p")
    assert "error[REST_DELIVERY_REMOTE_EFFECT_UNKNOWN]" in str(failed.value) and "exit class 4" in str(failed.value)


@pytest.mark.parametrize("kwargs", [
    {"operation_id": "op_1; rm -rf", "journal_locator": {"journal": "sqlite:/j", "artifacts": "/a", "markers": "/m"}},
    {"operation_id": "op_1", "journal_locator": {"journal": "postgresql://u:pw@h/db", "artifacts": "/a",
                                                 "markers": "/m"}},
    {"operation_id": "op_1", "journal_locator": {"journal": "sqlite:/j", "artifacts": "/a", "markers": "/m",
                                                 "token": "x"}},
])
def test_trigger_refuses_kwargs_it_must_never_hold(kwargs: dict[str, Any]) -> None:
    with pytest.raises(LocatorError):
        DeliveryReceiptTrigger(**kwargs)


@pytest.mark.parametrize("seconds", [0, -1, 7200, True, "5"])
def test_wait_trigger_bounds(seconds: Any) -> None:
    with pytest.raises(LocatorError):
        DeliveryWaitTrigger(seconds)
