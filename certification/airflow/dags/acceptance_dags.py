"""The acceptance's own DAGs, beside the example DAG (scenarios/airflow/dags/restproof_delivery.py):

* ``restproof_worker_loss``: the provider's operator whose first try dies (SIGKILL, the runtime's
  failpoint) right after the submission was recorded; Airflow retries the task.
* ``restproof_replay``: the provider's operator again, in a DAG the harness clears and replays.
* ``baseline_polling``: what users run today, a worker-resident operator that submits the job and
  polls it from the worker until it ends (its worker time is the job's duration).
* ``baseline_http_deferrable``: apache-airflow-providers-http's ``HttpOperator(deferrable=True)``,
  which sends its POST from inside the trigger (apache/airflow #67945), through the fault proxy.

Configuration comes from the environment the harness gives the Airflow processes.
"""

from __future__ import annotations

import gzip
import json
import os
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

from sink.airflow.operator import RestDeliveryOperator
from sink.airflow.timing import ExecutionClock

try:
    from airflow.sdk import DAG
except ImportError:  # Airflow 2
    from airflow import DAG

try:
    from airflow.providers.standard.operators.python import PythonOperator
except ImportError:  # Airflow 2
    from airflow.operators.python import PythonOperator

ENV = os.environ
WORKER_LOSS_POINT = "journal.record_submit_result.after"


class WorkerLossOperator(RestDeliveryOperator):
    def execute(self, context: Any) -> Any:
        ti = context.get("ti")
        if getattr(ti, "try_number", 1) <= 1:
            os.environ["RESTPROOF_FAILPOINT"] = WORKER_LOSS_POINT  # this process dies after the submit
        else:
            os.environ.pop("RESTPROOF_FAILPOINT", None)
        return super().execute(context)


def _common() -> dict[str, Any]:
    return {"schedule": None, "start_date": datetime(2026, 1, 1), "catchup": False, "max_active_runs": 8}


def _delivery_kwargs() -> dict[str, Any]:
    return {
        "workload": ENV.get("RESTPROOF_AIRFLOW_WORKLOAD", "/nonexistent/workload.yaml"),
        "scope_from": "{{ dag_run.conf['scope_from'] }}",
        "scope_to": "{{ dag_run.conf['scope_to'] }}",
        "journal_locator": json.loads(ENV.get("RESTPROOF_AIRFLOW_LOCATOR", "{}")) or {
            "journal": "sqlite:/nonexistent/journal.sqlite3", "artifacts": "/nonexistent/a",
            "markers": "/nonexistent/m"},
        "timing_records_dir": ENV.get("RESTPROOF_AIRFLOW_RECORDS"),
        "wait_seconds": float(ENV.get("RESTPROOF_AIRFLOW_WAIT_SECONDS", "5")),
        "retries": 1,
        "retry_delay": timedelta(seconds=2),
    }


with DAG(dag_id="restproof_worker_loss", **_common()):
    # One retry more than the example DAG: on a loaded machine Airflow may act on the killed try's
    # executor event late and stop the retry that already runs (it then resumes on the next try).
    WorkerLossOperator(task_id="deliver", **{**_delivery_kwargs(), "retries": 2})

with DAG(dag_id="restproof_replay", **_common()):  # cleared and replayed as a whole
    RestDeliveryOperator(task_id="deliver", **_delivery_kwargs())


def _csv(scope_from: str, scope_to: str) -> bytes:
    day = datetime.strptime(scope_from, "%Y-%m-%d")
    end = datetime.strptime(scope_to, "%Y-%m-%d")
    lines = ["business_date,station_id,reading,label,valid,observed_at,sample_count"]
    while day < end:
        lines.append(f"{day:%Y-%m-%d},00001,1.000,baseline,true,{day:%Y-%m-%d}T08:00:00Z,1")
        day += timedelta(days=1)
    return gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)


def poll_in_the_worker(scope_from: str, scope_to: str, **context: Any) -> dict[str, Any]:
    """Submit one dataset job, then poll it from this worker until it ends."""
    import httpx  # noqa: PLC0415

    clock = ExecutionClock("execute")
    base = ENV["RESTPROOF_BASELINE_URL"]
    key = uuid.uuid4().hex
    with httpx.Client(timeout=30.0, trust_env=False) as client:
        answer = client.post(f"{base}/mock/v1/dataset-jobs",
                             files={"file": (f"{key}.csv.gz", _csv(scope_from, scope_to), "application/gzip")},
                             data={"range_start": scope_from, "range_end": scope_to})
        answer.raise_for_status()
        job_id = answer.json()["job_id"]
        submitted = time.time()
        polls = 0
        for _ in range(3600):  # bounded: two hours of 2 s polls
            polls += 1
            phase = client.get(f"{base}/mock/v1/dataset-jobs/{job_id}").json()["phase"]
            if phase not in ("pending", "running"):
                break
            time.sleep(2.0)
    ti = context.get("ti")
    identity = {"dag_id": getattr(ti, "dag_id", None), "task_id": getattr(ti, "task_id", None),
                "run_id": getattr(ti, "run_id", None), "try_number": getattr(ti, "try_number", None),
                "submitted_wall": submitted, "polls": polls, "phase": phase}
    clock.record(ENV.get("RESTPROOF_AIRFLOW_RECORDS"), identity, step="Complete")
    return {"job_id": job_id, "phase": phase, "polls": polls}


with DAG(dag_id="baseline_polling", **_common()):
    PythonOperator(task_id="submit_and_poll", python_callable=poll_in_the_worker,
                   op_kwargs={"scope_from": "{{ dag_run.conf['scope_from'] }}",
                              "scope_to": "{{ dag_run.conf['scope_to'] }}"})

try:
    from airflow.providers.http.operators.http import HttpOperator
except ImportError:  # the provider is not installed in this environment: the baseline is not run
    HttpOperator = None

if HttpOperator is not None:
    with DAG(dag_id="baseline_http_deferrable", **_common()):
        HttpOperator(
            task_id="post",
            http_conn_id="receiver_proxy",
            method="POST",
            endpoint="/mock/v1/resources/measurements/batches?range_start={{ dag_run.conf['scope_from'] }}"
                     "&range_end={{ dag_run.conf['scope_to'] }}",
            data=json.dumps([{"business_date": "{{ dag_run.conf['scope_from'] }}", "station_id": "00001",
                              "reading": "1.000", "label": "baseline", "valid": True,
                              "observed_at": "{{ dag_run.conf['scope_from'] }}T08:00:00Z", "sample_count": 1}]),
            headers={"Content-Type": "application/json"},
            deferrable=True,
            retries=1,
            retry_delay=timedelta(seconds=2),
        )
