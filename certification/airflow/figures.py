"""Worker time after submission, from the task's own process records.

The submission instant comes from the fault proxy's log (when the receiver's answer to the job's
POST reached the worker: the wall clock of this machine, like the records). Each execution of the
operator wrote one record (``sink.airflow.timing``): its entry and exit instants, the operator's
own wall and CPU seconds, and the instant its task process started. After submission counts:

* the rest of the execution that submitted (from the POST's answer to the execution's exit);
* every later execution whole: ``operator_seconds`` (the provider's code) and
  ``task_process_seconds`` (from the task process's start, so Airflow's own start of the task,
  DAG parsing included, counts too: that is the worker time the seed's target speaks of).

A worker-resident poller's record carries its own submission instant; its worker time after
submission is the rest of its one execution.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

JOB_PATH = "/mock/v1/dataset-jobs"


def exchange_end(entry: dict[str, Any]) -> float | None:
    stamps = entry.get("timestamps") or {}
    for key in ("delivered", "response"):
        if key in stamps:
            return float(stamps[key])
    return None


def job_post_times(proxy_log: Sequence[dict[str, Any]]) -> list[float]:
    times = []
    for entry in proxy_log:
        if entry.get("method") == "POST" and str(entry.get("path", "")).split("?")[0] == JOB_PATH:
            end = exchange_end(entry)
            if end is not None:
                times.append(end)
    return sorted(times)


def worker_time(records: Sequence[dict[str, Any]], post_times: Sequence[float], *,
                triggered_wall: float) -> dict[str, Any]:
    executions = sorted(records, key=lambda r: float(r["entered_wall"]))
    if not executions:
        return {"measured": False, "reason": "no execution record"}
    last_exit = max(float(r["exited_wall"]) for r in executions)
    candidates = [t for t in post_times if triggered_wall <= t <= last_exit]
    if not candidates:
        return {"measured": False, "reason": "no submission observed at the proxy"}
    submitted = candidates[0]
    operator_s = process_s = cpu_s = 0.0
    counted = 0
    for record in executions:
        entered, exited = float(record["entered_wall"]), float(record["exited_wall"])
        if exited <= submitted:
            continue
        counted += 1
        if entered <= submitted:  # the execution that submitted: only its tail is after submission
            tail = exited - submitted
            operator_s += tail
            process_s += tail
            continue
        operator_s += float(record["operator_seconds"])
        cpu_s += float(record["operator_cpu_seconds"])
        started = record.get("process_started_wall")
        process_s += exited - (float(started) if started is not None else entered)
    return {"measured": True, "executions_after_submit": counted,
            "operator_seconds_after_submit": round(operator_s, 3),
            "operator_cpu_seconds_after_submit": round(cpu_s, 3),
            "task_process_seconds_after_submit": round(process_s, 3)}


def poller_worker_time(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    if not records:
        return {"measured": False, "reason": "no execution record"}
    record = records[-1]
    seconds = float(record["exited_wall"]) - float(record["submitted_wall"])
    return {"measured": True, "executions_after_submit": 1, "task_process_seconds_after_submit": round(seconds, 3),
            "operator_seconds_after_submit": round(seconds, 3), "polls": record.get("polls")}
