"""Example DAG: one governed REST delivery per daily interval, deferring while the receiver works.

Configuration comes from the environment of the Airflow processes (docs/airflow.md):
RESTPROOF_AIRFLOW_WORKLOAD (the workload manifest), RESTPROOF_AIRFLOW_LOCATOR (the journal locator
as JSON: journal, artifacts, markers, pg_schema; no secret), and optionally
RESTPROOF_AIRFLOW_RECORDS (a directory for worker-time records). A run's conf may name another
interval: {"scope_from": "2026-01-01", "scope_to": "2026-01-04"} (the end is exclusive).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta

from sink.airflow.operator import RestDeliveryOperator

try:
    from airflow.sdk import DAG
except ImportError:  # Airflow 2
    from airflow import DAG

with DAG(
    dag_id="restproof_delivery",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=8,
    tags=["restproof"],
) as dag:
    RestDeliveryOperator(
        task_id="deliver",
        workload=os.environ.get("RESTPROOF_AIRFLOW_WORKLOAD", "/opt/restproof/workloads/measurements-async.yaml"),
        scope_from="{{ dag_run.conf.get('scope_from') or data_interval_start.strftime('%Y-%m-%d') }}",
        scope_to="{{ dag_run.conf.get('scope_to') or data_interval_end.strftime('%Y-%m-%d') }}",
        journal_locator=json.loads(os.environ.get("RESTPROOF_AIRFLOW_LOCATOR", "{}")) or {
            "journal": "sqlite:/opt/restproof/state/journal.sqlite3",
            "artifacts": "/opt/restproof/state/artifacts",
            "markers": "/opt/restproof/state/markers",
        },
        timing_records_dir=os.environ.get("RESTPROOF_AIRFLOW_RECORDS"),
        wait_seconds=float(os.environ.get("RESTPROOF_AIRFLOW_WAIT_SECONDS", "30")),
        retries=1,
        retry_delay=timedelta(seconds=2),
    )
