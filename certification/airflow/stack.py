"""A real Airflow, started and stopped by the acceptance: metadata database on a throwaway
PostgreSQL cluster, the scheduler with its LocalExecutor, the API server (Airflow 3; the webserver
with its REST API on Airflow 2), the DAG processor (Airflow 3) and one or more triggerers, every
one a process of the version's own virtual environment, on 127.0.0.1, with a temporary
AIRFLOW_HOME. Every process starts in a session of its own so that stopping it (by its id) also
stops the task and trigger processes it forked; ``AirflowStack`` stops all of them on exit, in
every outcome.

The harness reads states from the metadata database (the tables every supported version shares:
``dag_run``, ``task_instance``, ``trigger``) and acts through the version's own CLI.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.rows import dict_row

START_TIMEOUT_S = 240.0


class AirflowUnavailable(RuntimeError):
    """An Airflow process did not start, or a wait for a state ran out of time."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, signum: int) -> None:
        """Signal the process's whole session (it and the processes it forked), by its id."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signum)

    def stop(self, timeout: float = 20.0) -> None:
        self.signal(signal.SIGTERM)
        try:
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.popen.wait(timeout=30)
        # Children that outlived their parent (a forked task) still carry the session id.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)


LOCAL_SETTINGS = """from sink.airflow.preload import preload_runtime

preload_runtime()
"""
"""``$AIRFLOW_HOME/config/airflow_local_settings.py``: Airflow imports it in every process."""


@dataclass
class AirflowStack:
    venv: Path
    home: Path
    metadata_dsn: str
    """psycopg DSN of the metadata database (the harness reads it directly)."""
    version: tuple[int, int]
    env: dict[str, str]
    api_port: int
    processes: list[Process] = field(default_factory=list)

    @classmethod
    def configure(cls, venv: Path, home: Path, *, pg_host: str, pg_port: int, database: str,
                  dags_folder: Path, version: tuple[int, int], extra_env: Mapping[str, str],
                  preload: bool = True) -> AirflowStack:
        home.mkdir(parents=True, exist_ok=True)
        if preload:  # the deployment docs/airflow.md recommends: the runtime loaded before tasks fork
            (home / "config").mkdir(exist_ok=True)
            (home / "config" / "airflow_local_settings.py").write_text(LOCAL_SETTINGS, encoding="utf-8")
        api_port = free_port()
        conn = f"postgresql+psycopg2://postgres@{pg_host}:{pg_port}/{database}"
        env = {key: value for key, value in os.environ.items() if not key.startswith("AIRFLOW")}
        env.update({
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": "8",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__FERNET_KEY": "",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": conn,
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            "AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL": "5",
            "AIRFLOW__SCHEDULER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "10",
            "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "10",
            "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "2",
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "5",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{api_port}/execution/",
            "AIRFLOW__API__BASE_URL": f"http://127.0.0.1:{api_port}",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(api_port),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__WEBSERVER__WEB_SERVER_HOST": "127.0.0.1",
            "AIRFLOW__WEBSERVER__WEB_SERVER_PORT": str(api_port),
            "AIRFLOW__WEBSERVER__SECRET_KEY": secrets.token_hex(16),
            "AIRFLOW__API__AUTH_BACKENDS": "airflow.api.auth.backend.default",
            "NO_PROXY": "*", "no_proxy": "*",
            **extra_env,
        })
        if version == (3, 0):
            # Airflow 3.0 passes no issuer unless one is configured, and the PyJWT releases it
            # resolves to today refuse a None issuer ("Issuer (iss) must be a string").
            env["AIRFLOW__API_AUTH__JWT_ISSUER"] = "restproof-acceptance"
        metadata = f"host={pg_host} port={pg_port} user=postgres dbname={database} connect_timeout=10"
        return cls(venv, home, metadata, version, env, api_port)

    # ----- processes ---------------------------------------------------------------------------
    def _bin(self) -> str:
        return str(self.venv / "bin" / "airflow")

    def cli(self, *args: str, timeout: float = 300.0) -> str:
        done = subprocess.run([self._bin(), *args], env=self.env, capture_output=True, text=True, timeout=timeout,
                              check=False, cwd=self.home)
        if done.returncode != 0:
            raise AirflowUnavailable(f"airflow {' '.join(args[:3])} exited {done.returncode}: {done.stderr[-800:]}")
        return done.stdout

    def start(self, name: str, *args: str) -> Process:
        log = self.home / f"{name}.log"
        handle = log.open("ab")
        popen = subprocess.Popen([self._bin(), *args], env=self.env, stdout=handle, stderr=subprocess.STDOUT,
                                 cwd=self.home, start_new_session=True)
        handle.close()
        process = Process(name, popen, log)
        self.processes.append(process)
        return process

    def start_all(self, triggerers: int = 1) -> None:
        self.cli("db", "migrate", timeout=600)
        if self.version >= (3, 0):
            self.start("api-server", "api-server", "--host", "127.0.0.1", "--port", str(self.api_port))
            self.start("dag-processor", "dag-processor")
        else:
            self.start("webserver", "webserver", "--hostname", "127.0.0.1", "--port", str(self.api_port))
        self.start("scheduler", "scheduler")
        for index in range(triggerers):
            self.start_triggerer(index)

    def start_triggerer(self, index: int = 0) -> Process:
        return self.start(f"triggerer-{index}-{len(self.processes)}", "triggerer")

    def triggerers(self) -> list[Process]:
        return [p for p in self.processes if p.name.startswith("triggerer") and p.alive()]

    def stop_all(self) -> None:
        for process in reversed(self.processes):
            process.stop()

    def __enter__(self) -> AirflowStack:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop_all()

    # ----- metadata database -------------------------------------------------------------------
    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with psycopg.connect(self.metadata_dsn, autocommit=True) as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(sql.encode(), params)
            return list(cur.fetchall()) if cur.description else []

    def task_state(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any] | None:
        rows = self.query("SELECT state, try_number, next_method, trigger_id FROM task_instance "
                          "WHERE dag_id = %s AND run_id = %s AND task_id = %s", (dag_id, run_id, task_id))
        return rows[0] if rows else None

    def wait_task(self, dag_id: str, run_id: str, task_id: str, states: Collection[str], *, timeout: float,
                  fail_on: Collection[str] = frozenset({"failed", "upstream_failed"})) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            last = self.task_state(dag_id, run_id, task_id)
            if last is not None and last["state"] in states:
                return last
            if last is not None and last["state"] in fail_on:
                raise AirflowUnavailable(f"{dag_id}/{run_id}/{task_id} ended {last['state']}")
            self.check_alive()
            time.sleep(0.5)
        raise AirflowUnavailable(f"{dag_id}/{run_id}/{task_id} did not reach {sorted(states)} in {timeout:.0f} s "
                                 f"(last: {None if last is None else last['state']})")

    def check_alive(self) -> None:
        for process in self.processes:
            if not process.alive() and not process.name.startswith("triggerer") and process.popen.returncode not in (
                    0, -signal.SIGTERM, -signal.SIGKILL):
                tail = process.log.read_text(errors="replace")[-1500:] if process.log.exists() else ""
                raise AirflowUnavailable(f"airflow {process.name} exited {process.popen.returncode}: {tail}")

    def wait_ready(self, dag_ids: list[str], timeout: float = START_TIMEOUT_S) -> None:
        """Until the DAGs are parsed into the metadata database and a triggerer heartbeats."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                found = {r["dag_id"] for r in self.query("SELECT dag_id FROM dag WHERE dag_id = ANY(%s)",
                                                         (dag_ids,))}
                jobs = self.query("SELECT count(*) AS n FROM job WHERE job_type = 'TriggererJob' "
                                  "AND state = 'running'")
            except psycopg.Error:
                found, jobs = set(), [{"n": 0}]
            if found == set(dag_ids) and jobs[0]["n"] >= 1 and self._api_answers():
                return
            time.sleep(1.0)
        raise AirflowUnavailable(f"DAGs {sorted(set(dag_ids))} or a triggerer not ready in {timeout:.0f} s")

    def wait_triggerers(self, count: int, timeout: float = 180.0) -> None:
        """Until ``count`` triggerers heartbeat (a killed one's row stays 'running' but goes stale)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.query("SELECT count(*) AS n FROM job WHERE job_type = 'TriggererJob' AND state = 'running' "
                              "AND latest_heartbeat > now() - interval '8 seconds'")
            if rows[0]["n"] >= count:
                return
            self.check_alive()
            time.sleep(1.0)
        raise AirflowUnavailable(f"{count} live triggerer(s) not seen within {timeout:.0f} s")

    def _api_answers(self) -> bool:
        path = "/api/v2/monitor/health" if self.version >= (3, 0) else "/health"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.api_port}{path}", timeout=10) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def trigger(self, dag_id: str, run_id: str, conf: Mapping[str, Any]) -> None:
        import json  # noqa: PLC0415

        self.cli("dags", "trigger", dag_id, "--run-id", run_id, "--conf", json.dumps(dict(conf)))
