"""One acceptance run on one Airflow version: the provider's scenarios, the baselines side by side,
the sentinel scan, and the document that becomes ``airflow_async_acceptance.json``.

The verdict is PASS only when every provider scenario passed (one submission, one effect, the
terminal observation recorded, the task successful) and no sentinel leaked; a baseline that shows
no duplicate means the fault was not real, and the run is then INVALID, never PASS. The worker-time
figures are measurements, printed and signed beside their targets (``figures``), side by side with
the worker-resident baseline's; like every speed figure of the project they do not decide the
verdict (absolute times on a shared machine are noise: the load average is recorded with them).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from certification.airflow import baselines, scenarios
from certification.airflow.deployment import SENTINEL_ROW_LABEL, SENTINEL_TOKEN
from certification.airflow.harness import JOURNAL_SCHEMA, Harness, harness
from certification.airflow.stack import AirflowUnavailable
from certification.airflow.venvs import AirflowVenv
from certification.services import ServiceUnavailable

SCHEMA_ID = "restproof.airflow_async_acceptance.v1"
SEED_TARGET_S = 5.0
OURS_TARGET_S = 0.5
SENTINELS = {"token": SENTINEL_TOKEN, "payload_row": SENTINEL_ROW_LABEL}


def _guarded(name: str, step: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    started = time.monotonic()
    try:
        row = step()
    except (AirflowUnavailable, ServiceUnavailable, OSError, psycopg.Error) as exc:
        row = {"id": name, "passed": False, "error": f"{type(exc).__name__}: {str(exc)[:600]}"}
    row["seconds"] = round(time.monotonic() - started, 1)
    return row


def sentinel_scan(h: Harness) -> dict[str, Any]:
    """Every place a secret or a payload row could leak to: Airflow's metadata database (trigger
    kwargs, XCom, task instances' next kwargs and events, DAG run conf, audit log), every log file
    of every Airflow process and task, the operator's records, and the delivery journal."""
    found: dict[str, list[str]] = {name: [] for name in SENTINELS}
    needles = {name: value.encode() for name, value in SENTINELS.items()}

    def check(where: str, data: bytes) -> None:
        for name, needle in needles.items():
            if needle in data:
                found[name].append(where)

    for label, dsn, schema in (("airflow_metadata", h.airflow.metadata_dsn, "public"),
                               ("journal", h.cluster.dsn("journal"), JOURNAL_SCHEMA)):
        with psycopg.connect(dsn, autocommit=True) as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))]
            for table in tables:
                rows = conn.execute(psycopg.sql.SQL("SELECT * FROM {}.{}").format(
                    psycopg.sql.Identifier(schema), psycopg.sql.Identifier(table))).fetchall()
                check(f"{label}.{table}", repr(rows).encode())
    scanned = 0
    for root in (h.airflow.home, h.records):
        for path in root.rglob("*"):
            if path.is_file() and path.suffix in (".log", ".jsonl", ".json", ""):
                scanned += 1
                check(str(path.relative_to(root.parent)), path.read_bytes())
    return {"sentinels": sorted(SENTINELS), "files_scanned": scanned, "leaks": {k: v for k, v in found.items() if v},
            "passed": not any(found.values())}


def _figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    measured = [r["worker_time"] for r in rows if r.get("worker_time", {}).get("measured")]
    if not measured:
        return {"deliveries_measured": 0, "meets_seed_target": False, "meets_ours_target": False}
    process = max(m["task_process_seconds_after_submit"] for m in measured)
    operator = max(m["operator_seconds_after_submit"] for m in measured)
    return {"deliveries_measured": len(measured), "max_task_process_seconds_after_submit": process,
            "max_operator_seconds_after_submit": operator,
            "max_operator_cpu_seconds_after_submit": max(m["operator_cpu_seconds_after_submit"] for m in measured),
            "seed_target_seconds": SEED_TARGET_S, "ours_target_seconds": OURS_TARGET_S,
            "meets_seed_target": process <= SEED_TARGET_S, "meets_ours_target": operator <= OURS_TARGET_S}


def run_acceptance(venv: AirflowVenv, work: Path, *, quick: bool = False, preload: bool = True) -> dict[str, Any]:
    started = time.monotonic()
    with harness(venv, work, preload=preload) as h:
        d = h.deployment
        rows = [_guarded("thirty_minute_job", lambda: scenarios.thirty_minute_job(h, d.scope(0))),
                _guarded("triggerer_sigkill_mid_poll", lambda: scenarios.triggerer_killed_mid_poll(h, d.scope(1))),
                _guarded("two_triggerers_same_trigger", lambda: scenarios.two_triggerers(h, d.scope(2))),
                _guarded("worker_sigkill_after_submit", lambda: scenarios.worker_killed_after_submit(h, d.scope(3))),
                _guarded("dag_run_cleared_and_replayed", lambda: scenarios.cleared_and_replayed(h, d.scope(4))),
                _guarded("remote_job_semaphore", lambda: scenarios.semaphore(
                    h, [d.scope(i) for i in (range(5, 7) if quick else range(5, 8))]))]
        side = [_guarded("baseline_worker_resident_polling", lambda: baselines.polling_baseline(h, d.scope(8)))]
        if h.http_baseline:
            side.append(_guarded("baseline_http_operator_triggerer_restart",
                                 lambda: baselines.http_triggerer_restart(h, d.scope(9))))
            side.append(_guarded("baseline_http_operator_commit_then_cut_retry",
                                 lambda: baselines.http_commit_then_cut(h, d.scope(10))))
        sentinels = sentinel_scan(h)
    figures = _figures(rows)
    baseline_caught = [b for b in side if b.get("duplicate_effects", 0) > 0 or b["id"].endswith("polling")]
    valid = all("error" not in b for b in side) and len(baseline_caught) == len(side)
    passed = all(r.get("passed") for r in rows) and sentinels["passed"]
    poller: dict[str, Any] = next((b.get("worker_time", {}) for b in side if b["id"].endswith("polling")), {})
    if poller.get("measured") and figures.get("max_task_process_seconds_after_submit"):
        figures["worker_resident_baseline_seconds_after_submit"] = poller["task_process_seconds_after_submit"]
    return {
        "schema_id": SCHEMA_ID,
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "environment": {"airflow_version": venv.airflow_version, "python": platform.python_version(),
                        "executor": "LocalExecutor", "metadata_database": "postgresql", "journal": "postgresql",
                        "runtime_preloaded": preload,
                        "machine": {"cpus": __import__("os").cpu_count(), "load_average_1m":
                                    round(__import__("os").getloadavg()[0], 2)}},
        "quick": quick,
        "verdict": "PASS" if passed and valid else ("INVALID" if not valid else "FAIL"),
        "valid": valid,
        "figures": figures,
        "scenarios": rows,
        "baselines": side,
        "sentinel_scan": sentinels,
        "seconds": round(time.monotonic() - started, 1),
    }
