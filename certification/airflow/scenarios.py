"""The acceptance's scenarios on a real Airflow. Each returns one row: what was done, what the
judges saw (submissions the receiver logged, effects in its ledger, the journal's observations,
Airflow's task state) and whether every check held.

The provider's scenarios must each end with one submission, one effect, the terminal observation
recorded and the task successful. The baselines are expected to show what users meet today; their
rows record the duplicate (or the worker time), and a baseline that shows none is reported as such.
"""

from __future__ import annotations

import signal
import time
from datetime import date
from pathlib import Path
from typing import Any

from certification.airflow.figures import job_post_times, worker_time
from certification.airflow.harness import Harness
from certification.airflow.stack import AirflowUnavailable, Process

TASK_TIMEOUT_S = 420.0
HOLD_SECONDS = 20.0
"""Wall seconds a job stays running (the trigger polls meanwhile) before the receiver clock moves
the 30 minutes that finish it."""


def _delivery_row(h: Harness, scenario: str, dag_id: str, run_id: str, scope: tuple[date, date],
                  **extra: Any) -> dict[str, Any]:
    state = h.airflow.task_state(dag_id, run_id, "deliver") or {}
    child = h.child(scope)
    observations = [] if child is None else h.observations(child["operation_id"])
    checks = {
        "task_succeeded": state.get("state") == "success",
        "one_submission": len(h.posts(scope)) == 1,
        "one_effect": len(h.effects(scope)) == 1,
        "terminal_observation_recorded": "SUCCEEDED" in observations,
        "checkpoint_promoted": child is not None and child["checkpoint_state"] == "PROMOTED",
    }
    return {"id": scenario, "passed": all(checks.values()), "checks": checks, "run_id": run_id,
            "submissions": len(h.posts(scope)), "effects": len(h.effects(scope)), "observations": observations,
            "try_number": state.get("try_number"), **extra,
            "worker_time": worker_time(h.records_of(dag_id, "deliver", run_id), job_post_times(h.proxy.log()),
                                       triggered_wall=h.triggered[run_id])}


def _until_deferred(h: Harness, dag_id: str, run_id: str) -> None:
    h.airflow.wait_task(dag_id, run_id, "deliver", {"deferred"}, timeout=TASK_TIMEOUT_S)


def _finish(h: Harness, dag_id: str, run_id: str, task_id: str = "deliver") -> None:
    h.finish_jobs()
    h.airflow.wait_task(dag_id, run_id, task_id, {"success"}, timeout=TASK_TIMEOUT_S)


def thirty_minute_job(h: Harness, scope: tuple[date, date]) -> dict[str, Any]:
    run_id = "accept-30-minute-job"
    h.trigger("restproof_delivery", run_id, scope)
    _until_deferred(h, "restproof_delivery", run_id)
    time.sleep(HOLD_SECONDS)
    _finish(h, "restproof_delivery", run_id)
    return _delivery_row(h, "thirty_minute_job", "restproof_delivery", run_id, scope, hold_seconds=HOLD_SECONDS)


def triggerer_killed_mid_poll(h: Harness, scope: tuple[date, date]) -> dict[str, Any]:
    run_id = "accept-triggerer-sigkill"
    h.trigger("restproof_delivery", run_id, scope)
    _until_deferred(h, "restproof_delivery", run_id)
    child = _child(h, scope)
    h.wait_observations(child, 1)
    before = len(h.observations(child))
    for process in h.airflow.triggerers():
        process.signal(signal.SIGKILL)  # mid-poll: the observation lease stays held until it expires
    h.airflow.start_triggerer()
    h.wait_observations(child, before + 1, timeout=TASK_TIMEOUT_S)  # the new triggerer polls again
    _finish(h, "restproof_delivery", run_id)
    return _delivery_row(h, "triggerer_sigkill_mid_poll", "restproof_delivery", run_id, scope,
                         observations_before_kill=before)


def two_triggerers(h: Harness, scope: tuple[date, date]) -> dict[str, Any]:
    """A partition: the triggerer running the trigger freezes (SIGSTOP), the other takes the trigger
    over and runs its own copy; the frozen one then resumes with its copy still running."""
    run_id = "accept-two-triggerers"
    h.airflow.start_triggerer(1)
    h.airflow.wait_triggerers(2)
    h.trigger("restproof_delivery", run_id, scope)
    _until_deferred(h, "restproof_delivery", run_id)
    child = _child(h, scope)
    h.wait_observations(child, 1)
    holder = _observing_triggerer(h, child)
    holder.signal(signal.SIGSTOP)  # the whole triggerer, its trigger runner included: a partition
    try:
        reassigned = h.wait_reassigned(run_id)
        h.finish_jobs()
        h.airflow.wait_task("restproof_delivery", run_id, "deliver", {"success"}, timeout=TASK_TIMEOUT_S)
    finally:
        holder.signal(signal.SIGCONT)
    time.sleep(5.0)  # the resumed copy finds the child moved on and ends without writing
    after = len(h.observations(child))
    time.sleep(3.0)
    row = _delivery_row(h, "two_triggerers_same_trigger", "restproof_delivery", run_id, scope,
                        trigger_reassigned=reassigned)
    row["checks"]["resumed_copy_wrote_nothing"] = len(h.observations(child)) == after
    row["checks"]["trigger_ran_on_both"] = reassigned
    row["passed"] = all(row["checks"].values())
    return row


def worker_killed_after_submit(h: Harness, scope: tuple[date, date]) -> dict[str, Any]:
    run_id = "accept-worker-sigkill"
    h.trigger("restproof_worker_loss", run_id, scope)
    h.airflow.wait_task("restproof_worker_loss", run_id, "deliver", {"deferred"}, timeout=TASK_TIMEOUT_S,
                        fail_on={"failed"})
    _finish(h, "restproof_worker_loss", run_id)
    row = _delivery_row(h, "worker_sigkill_after_submit", "restproof_worker_loss", run_id, scope)
    row["checks"]["task_was_retried"] = (row["try_number"] or 0) >= 2
    row["passed"] = all(row["checks"].values())
    return row


def cleared_and_replayed(h: Harness, scope: tuple[date, date]) -> dict[str, Any]:
    run_id = "accept-replay"
    h.trigger("restproof_replay", run_id, scope)
    _until_deferred(h, "restproof_replay", run_id)
    _finish(h, "restproof_replay", run_id)
    first_try = (h.airflow.task_state("restproof_replay", run_id, "deliver") or {}).get("try_number") or 0
    h.airflow.cli("tasks", "clear", "restproof_replay", "--yes")
    deadline = time.monotonic() + TASK_TIMEOUT_S
    while time.monotonic() < deadline:
        state = h.airflow.task_state("restproof_replay", run_id, "deliver") or {}
        if state.get("state") == "success" and (state.get("try_number") or 0) > first_try:
            break
        time.sleep(0.5)
    row = _delivery_row(h, "dag_run_cleared_and_replayed", "restproof_replay", run_id, scope)
    row["checks"]["task_ran_again"] = (row["try_number"] or 0) > first_try
    row["passed"] = all(row["checks"].values())
    return row


def semaphore(h: Harness, scopes: list[tuple[date, date]], slots: int = 1) -> dict[str, Any]:
    run_ids = [f"accept-semaphore-{index}" for index in range(len(scopes))]
    for run_id, scope in zip(run_ids, scopes, strict=True):
        h.trigger("restproof_delivery", run_id, scope)
    deadline = time.monotonic() + TASK_TIMEOUT_S * 2
    held_max = 0
    while time.monotonic() < deadline:
        held = h.journal("SELECT count(*) AS n FROM capacity_slots WHERE attempt_id IS NOT NULL")[0]["n"]
        held_max = max(held_max, int(held))
        states = [(h.airflow.task_state("restproof_delivery", r, "deliver") or {}).get("state") for r in run_ids]
        if all(state == "success" for state in states):
            break
        if any(state == "failed" for state in states):
            raise AirflowUnavailable(f"a semaphore run failed: {states}")
        if any(j["state"] in ("pending", "running") for scope in scopes for j in h.jobs(scope)):
            time.sleep(3.0)
            h.finish_jobs()
        time.sleep(2.0)
    concurrent = max_concurrent_jobs([j for scope in scopes for j in h.jobs(scope)])
    checks = {
        "all_succeeded": all((h.airflow.task_state("restproof_delivery", r, "deliver") or {}).get("state")
                             == "success" for r in run_ids),
        "receiver_jobs_never_above_slots": concurrent <= slots,
        "journal_slots_never_above_capacity": held_max <= slots,
        "one_effect_each": all(len(h.effects(scope)) == 1 for scope in scopes),
        "one_submission_each": all(len(h.posts(scope)) == 1 for scope in scopes),
    }
    return {"id": "remote_job_semaphore", "passed": all(checks.values()), "checks": checks, "runs": len(scopes),
            "slots": slots, "max_concurrent_receiver_jobs": concurrent, "max_held_journal_slots": held_max}


def max_concurrent_jobs(jobs: list[dict[str, Any]]) -> int:
    """The most jobs running at one instant of the receiver clock (created_at .. terminal_at)."""
    events: list[tuple[float, int]] = []
    for job in jobs:
        events.append((float(job["created_at"]), 1))
        end = job.get("terminal_at")
        events.append((float(end) if end is not None else float("inf"), -1))
    running = peak = 0
    for _, step in sorted(events, key=lambda item: (item[0], item[1])):
        running += step
        peak = max(peak, running)
    return peak


def _observing_triggerer(h: Harness, operation_id: str) -> Process:
    """The triggerer whose trigger holds the child's observation lease: the owner id names the
    process that runs the trigger (``triggerer:HOST:PID:…``), a descendant of that triggerer."""
    lease = h.journal("SELECT owner FROM leases WHERE lease_kind = 'observation' AND subject_id = %s",
                      (operation_id,))
    if not lease:
        raise AirflowUnavailable(f"no observation lease on {operation_id}")
    pid = int(str(lease[0]["owner"]).split(":")[2])
    ours = {process.popen.pid: process for process in h.airflow.triggerers()}
    for _ in range(16):  # up the parent chain (/proc), a few levels at most
        if pid in ours:
            return ours[pid]
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            break
    raise AirflowUnavailable("the observing trigger runs in no triggerer this harness started")


def _child(h: Harness, scope: tuple[date, date]) -> str:
    child = h.child(scope)
    if child is None:
        raise AirflowUnavailable(f"no journal operation for {scope[0]}")
    return str(child["operation_id"])
