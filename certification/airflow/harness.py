"""Everything one acceptance run holds: a throwaway PostgreSQL cluster (Airflow's metadata database
and the delivery journal), the mock receiver behind the fault proxy, a private deployment, and a
real Airflow. The judges are independent of the provider: the receiver's ledger (requests, effects,
jobs), the proxy's log, the journal's rows read with SQL, Airflow's metadata database, and the
operator's own worker-time records.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

from certification.airflow.deployment import REPO, SENTINEL_TOKEN, Deployment, make_deployment
from certification.airflow.stack import AirflowStack, AirflowUnavailable
from certification.airflow.venvs import AirflowVenv
from certification.services import Proxy, Receiver, proxy_process, receiver_process
from sink.journal.postgres.cluster import Cluster, start_primary

BEHAVIOUR = REPO / "scenarios" / "airflow" / "receiver-30-minute-jobs.yaml"
DAG_FILES = (REPO / "scenarios" / "airflow" / "dags" / "restproof_delivery.py",
             REPO / "certification" / "airflow" / "dags" / "acceptance_dags.py")
DAG_IDS = ["restproof_delivery", "restproof_worker_loss", "restproof_replay", "baseline_polling"]
JOURNAL_SCHEMA = "restproof_journal"
JOB_SECONDS = 1800


@dataclass
class Harness:
    cluster: Cluster
    receiver: Receiver
    proxy: Proxy
    deployment: Deployment
    airflow: AirflowStack
    records: Path
    http_baseline: bool
    triggered: dict[str, float] = field(default_factory=dict)
    """Wall instant each DAG run was triggered (bounds the submission a worker-time figure uses)."""

    # ----- the judges --------------------------------------------------------------------------
    def journal(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with psycopg.connect(self.cluster.dsn("journal"), autocommit=True,
                             options=f"-c search_path={JOURNAL_SCHEMA}") as conn, \
                conn.cursor(row_factory=dict_row) as cur:
            cur.execute(sql.encode(), params)
            return list(cur.fetchall())

    def child(self, scope: tuple[date, date]) -> dict[str, Any] | None:
        rows = self.journal("SELECT operation_id, execution_state, remote_effect, acknowledgement_state, "
                            "checkpoint_state, observation_count, revision FROM operations "
                            "WHERE lower(scope_range) >= %s AND lower(scope_range) < %s ORDER BY operation_id",
                            (scope[0], scope[1]))
        return rows[0] if rows else None

    def observations(self, operation_id: str) -> list[str]:
        return [r["acknowledgement_state"] for r in self.journal(
            "SELECT acknowledgement_state FROM observations WHERE operation_id = %s ORDER BY observation_ordinal",
            (operation_id,))]

    def posts(self, scope: tuple[date, date]) -> list[dict[str, Any]]:
        return [r for r in self.receiver.requests()
                if r.get("method") == "POST" and r.get("scope_start") == scope[0].isoformat()]

    def effects(self, scope: tuple[date, date]) -> list[dict[str, Any]]:
        return [e for e in self.receiver.effects() if e.get("scope_start") == scope[0].isoformat()]

    def jobs(self, scope: tuple[date, date]) -> list[dict[str, Any]]:
        return [j for j in self.receiver.jobs() if j.get("scope_start") == scope[0].isoformat()]

    def records_of(self, dag_id: str, task_id: str, run_id: str) -> list[dict[str, Any]]:
        path = self.records / f"{dag_id}.{task_id}.jsonl"
        if not path.exists():
            return []
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [line for line in lines if line.get("run_id") == run_id]

    # ----- acting ------------------------------------------------------------------------------
    def trigger(self, dag_id: str, run_id: str, scope: tuple[date, date]) -> None:
        self.triggered[run_id] = time.time()
        self.airflow.trigger(dag_id, run_id, {"scope_from": scope[0].isoformat(), "scope_to": scope[1].isoformat()})

    def wait_job(self, scope: tuple[date, date], timeout: float = 300.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.jobs(scope)
            if found:
                return found[0]
            self.airflow.check_alive()
            time.sleep(0.5)
        raise AirflowUnavailable(f"no receiver job for {scope[0]} within {timeout:.0f} s")

    def wait_observations(self, operation_id: str, at_least: int, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.observations(operation_id)) >= at_least:
                return
            time.sleep(0.5)
        raise AirflowUnavailable(f"fewer than {at_least} observation(s) of {operation_id} in {timeout:.0f} s")

    def wait_reassigned(self, run_id: str, timeout: float = 180.0) -> bool:
        """Until the run's trigger is assigned to another triggerer than the one running it now."""
        rows = self.airflow.query("SELECT t.id, t.triggerer_id FROM trigger t JOIN task_instance ti "
                                  "ON ti.trigger_id = t.id WHERE ti.run_id = %s", (run_id,))
        if not rows:
            return False
        first = rows[0]["triggerer_id"]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = self.airflow.query("SELECT triggerer_id FROM trigger WHERE id = %s", (rows[0]["id"],))
            if now and now[0]["triggerer_id"] not in (None, first):
                return True
            time.sleep(1.0)
        return False

    def finish_jobs(self) -> None:
        """Thirty minutes pass on the receiver clock: every submitted job completes."""
        self.receiver.advance_clock(JOB_SECONDS)


@contextmanager
def harness(venv: AirflowVenv, work: Path, *, triggerers: int = 1, preload: bool = True) -> Iterator[Harness]:
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    os.environ["MOCK_RECEIVER_TOKEN"] = SENTINEL_TOKEN  # the receiver and this process; never written
    with ExitStack() as stack:
        cluster = start_primary({"fsync": "on", "max_connections": 300}, name="airflow")
        stack.callback(cluster.destroy)
        with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE airflow_meta")
            conn.execute("CREATE DATABASE journal")
        receiver = stack.enter_context(receiver_process(BEHAVIOUR, work / "receiver"))
        proxy = stack.enter_context(proxy_process(receiver.data_url, work / "proxy", 0))
        deployment = make_deployment(work / "deployment", proxy_url=proxy.url,
                                     journal=f"postgresql://postgres@127.0.0.1:{cluster.port}/journal?connect_timeout=10",
                                     pg_schema=JOURNAL_SCHEMA)
        dags = work / "dags"
        dags.mkdir()
        for source in DAG_FILES:
            shutil.copy(source, dags / source.name)
        records = work / "records"
        airflow = AirflowStack.configure(venv.path, work / "airflow-home", pg_host="127.0.0.1", pg_port=cluster.port,
                                         database="airflow_meta", dags_folder=dags, version=venv.minor, extra_env={
                                             "RESTPROOF_AIRFLOW_WORKLOAD": str(deployment.workload),
                                             "RESTPROOF_AIRFLOW_LOCATOR": json.dumps(deployment.locator.as_kwargs()),
                                             "RESTPROOF_AIRFLOW_RECORDS": str(records),
                                             "RESTPROOF_AIRFLOW_WAIT_SECONDS": "5",
                                             "MOCK_RECEIVER_TOKEN": SENTINEL_TOKEN,
                                             "RESTPROOF_BASELINE_URL": proxy.url,
                                             "AIRFLOW_CONN_RECEIVER_PROXY": proxy.url,
                                             "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "60",
                                         }, preload=preload)
        stack.enter_context(airflow)
        airflow.start_all(triggerers=triggerers)
        http_baseline = (venv.path / "lib").exists() and any(
            (venv.path / "lib").glob("python3*/site-packages/airflow/providers/http/operators/http.py"))
        airflow.wait_ready(DAG_IDS + (["baseline_http_deferrable"] if http_baseline else []))
        yield Harness(cluster, receiver, proxy, deployment, airflow, records, http_baseline)
