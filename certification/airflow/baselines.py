"""What users run today, on the same Airflow, receiver and proxy, side by side with the provider.

* A worker-resident polling operator: its worker time after submission is the job's duration.
* apache-airflow-providers-http's ``HttpOperator(deferrable=True)``: the POST is sent from inside
  the trigger (apache/airflow #67945), so (a) a triggerer killed while the POST is held at the proxy
  re-creates the trigger, which sends the POST again, and the held one still arrives when released;
  (b) an answer cut after the receiver committed fails the task, and Airflow's retry sends it again.
  The receiver's ledger shows the duplicate (its sync batch endpoint has no fence: every POST that
  arrives is an effect).
"""

from __future__ import annotations

import signal
import time
from datetime import date
from typing import Any

from certification.airflow.figures import poller_worker_time
from certification.airflow.harness import Harness
from certification.airflow.scenarios import HOLD_SECONDS, TASK_TIMEOUT_S
from certification.airflow.stack import AirflowUnavailable

BATCH_PATH = "/mock/v1/resources/measurements/batches"
SETTLED = {"success", "failed"}


def polling_baseline(h: Harness, scope: tuple[date, date]) -> dict[str, Any]:
    run_id = "baseline-polling"
    h.trigger("baseline_polling", run_id, scope)
    h.wait_job(scope, timeout=TASK_TIMEOUT_S)
    time.sleep(HOLD_SECONDS)
    h.finish_jobs()
    state = h.airflow.wait_task("baseline_polling", run_id, "submit_and_poll", {"success"}, timeout=TASK_TIMEOUT_S)
    return {"id": "baseline_worker_resident_polling", "task_state": state["state"], "hold_seconds": HOLD_SECONDS,
            "effects": len(h.effects(scope)),
            "worker_time": poller_worker_time(h.records_of("baseline_polling", "submit_and_poll", run_id))}


def _http_posts(h: Harness) -> list[dict[str, Any]]:
    return [e for e in h.proxy.log() if e.get("method") == "POST" and str(e.get("path", "")).startswith(BATCH_PATH)]


def _wait(condition: Any, what: str, timeout: float = TASK_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AirflowUnavailable(f"{what} within {timeout:.0f} s")


def http_triggerer_restart(h: Harness, scope: tuple[date, date]) -> dict[str, Any]:
    run_id = "baseline-http-triggerer-restart"
    posts_before = len(_http_posts(h))
    h.proxy.add_rule({"id": "hold-http-post", "match": {"method": "POST", "path": BATCH_PATH}, "fire": "once",
                      "fault": {"action": "hold", "phase": "request", "timeout_seconds": 600, "on_timeout": "cut"}})
    h.trigger("baseline_http_deferrable", run_id, scope)
    _wait(lambda: bool(h.proxy.held()), "the HttpTrigger's POST was not held at the proxy")
    held = h.proxy.held()[0]
    for process in h.airflow.triggerers():
        process.signal(signal.SIGKILL)  # the POST is in flight, held before the receiver
    h.airflow.start_triggerer()
    _wait(lambda: len(_http_posts(h)) >= posts_before + 2, "the restarted triggerer did not send again")
    h.proxy.release(str(held["hold_id"]))
    state = h.airflow.wait_task("baseline_http_deferrable", run_id, "post", SETTLED, timeout=TASK_TIMEOUT_S,
                                fail_on=set())
    _wait(lambda: len(h.effects(scope)) >= 2, "the released POST did not reach the receiver", timeout=60)
    effects = len(h.effects(scope))
    return {"id": "baseline_http_operator_triggerer_restart", "task_state": state["state"],
            "posts_at_proxy": len(_http_posts(h)) - posts_before, "effects": effects,
            "duplicate_effects": max(0, effects - 1)}


def http_commit_then_cut(h: Harness, scope: tuple[date, date]) -> dict[str, Any]:
    run_id = "baseline-http-commit-cut"
    posts_before = len(_http_posts(h))
    h.proxy.add_rule({"id": "cut-http-answer", "match": {"method": "POST", "path": BATCH_PATH}, "fire": "once",
                      "fault": {"action": "close", "phase": "response"}})
    h.trigger("baseline_http_deferrable", run_id, scope)
    state = h.airflow.wait_task("baseline_http_deferrable", run_id, "post", SETTLED, timeout=TASK_TIMEOUT_S * 2,
                                fail_on=set())
    effects = len(h.effects(scope))
    return {"id": "baseline_http_operator_commit_then_cut_retry", "task_state": state["state"],
            "try_number": state.get("try_number"), "posts_at_proxy": len(_http_posts(h)) - posts_before,
            "effects": effects, "duplicate_effects": max(0, effects - 1)}
